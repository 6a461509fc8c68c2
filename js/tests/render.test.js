// @vitest-environment jsdom
import { beforeEach, describe, expect, it, vi } from "vitest";

const fakeScatter = vi.hoisted(() => ({ instances: [] }));

vi.mock("../src/scatter.js", () => ({
  pointSizeFor: () => 4,
  createScatter: vi.fn((canvas, options) => {
    let positions = new Float32Array(0);
    const instance = {
      options,
      data: [],
      selected: [],
      destroyed: false,
      setData(xy, anchors, codes, { animate = false } = {}) {
        positions = xy;
        this.data.push({ xy: Array.from(xy), anchors, codes: Array.from(codes), animate });
        options.onDraw?.(animate ? 100 : 0);
      },
      positions: () => positions,
      setPalette() {},
      select(indices) {
        this.selected = Array.from(indices);
      },
      fit: vi.fn(),
      resize() {},
      transform: () => ({
        view: Float32Array.of(1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1),
        width: 200,
        height: 200,
      }),
      screenPosition: () => [0, 0],
      destroy() {
        this.destroyed = true;
      },
    };
    fakeScatter.instances.push(instance);
    return instance;
  }),
}));

const { default: widget } = await import("../src/index.js");
const { encodeUint32, decodeUint32, decodePositions } = await import("../src/codecs.js");
const { positionsView } = await import("./positions.js");

/** A model with anywidget's surface that records what the view does to it. */
function fakeModel(state) {
  const handlers = new Map();
  return {
    state,
    sent: [],
    saves: 0,
    get: (key) => state[key],
    set(key, value) {
      state[key] = value;
    },
    save_changes() {
      this.saves += 1;
    },
    on(event, fn) {
      if (!handlers.has(event)) handlers.set(event, new Set());
      handlers.get(event).add(fn);
    },
    off(event, fn) {
      handlers.get(event)?.delete(fn);
    },
    send(content, callbacks, buffers) {
      this.sent.push({ content, buffers });
    },
    emit(event, ...args) {
      for (const fn of handlers.get(event) ?? []) fn(...args);
    },
    listeners: () => [...handlers.values()].reduce((n, set) => n + set.size, 0),
  };
}

function initialState() {
  return {
    _positions: positionsView([-0.5, -0.5, 0.5, 0.5, 0.9, -0.9]),
    _anchors: new DataView(new ArrayBuffer(0)),
    _codes: new DataView(Uint16Array.of(0, 1, 1).buffer),
    _selection: new DataView(new ArrayBuffer(0)),
    _images: new DataView(new ArrayBuffer(0)),
    image_shape: [],
    hover_text: [],
    n_points: 3,
    n_components: 2,
    palette: ["#ff0000", "#00ff00"],
    legend: [{ name: "a", code: 0, count: 1 }],
    color_options: ["label"],
    color_by: "label",
    view: "first-two",
    view_note: "",
    method_name: "HSSNE",
    param_specs: [
      { name: "alpha", label: "α", min: 0, max: 3, step: 0.05, description: "tails", allows_auto: false },
      { name: "lambda_", label: "λ", min: 0, max: 1, step: 0.05, description: "mix", allows_auto: true },
    ],
    params: { alpha: 1, lambda_: 0.5 },
    annotation_kinds: ["labels"],
    iteration: 7,
    cost: 1.25,
    status: "running",
    error: "",
    notice: "",
    class_names: ["zero", "one"],
    annotation_count: 0,
    annotation_summary: "",
    pending_a: 0,
    frame_rate: 25,
  };
}

describe("render", () => {
  let model;
  let el;
  beforeEach(() => {
    fakeScatter.instances.length = 0;
    model = fakeModel(initialState());
    el = document.createElement("div");
    document.body.append(el);
  });

  it("builds the contract's DOM and draws the decoded positions", () => {
    widget.render({ model, el });
    const root = el.querySelector(".nbembed-explorer");
    expect(root.dataset.n).toBe("3");
    expect(root.dataset.status).toBe("running");
    expect(root.dataset.iteration).toBe("7");
    expect(root.querySelector('input[type=range][data-param="alpha"]')).not.toBeNull();
    expect(root.querySelector('[data-param-value="alpha"]').textContent).toBe("1");
    expect(root.querySelector('input[data-param-auto="lambda_"]')).not.toBeNull();
    for (const action of ["pause", "resume", "restart", "fit", "lasso", "clear-selection", "undo", "apply"]) {
      expect(root.querySelector(`button[data-action="${action}"]`), action).not.toBeNull();
    }
    const modes = [...root.querySelectorAll('select[data-role="mode"] option')].map((o) => o.value);
    expect(modes).toEqual(["soft_label", "must_link", "cannot_link"]);
    const classes = [...root.querySelectorAll('select[data-role="class"] option')].map((o) => o.value);
    expect(classes).toEqual(["0", "1", "__new__"]);
    const outside = vi.fn();
    el.addEventListener("pointerdown", outside);
    el.addEventListener("mousedown", outside);
    root.querySelector(".nbembed-plot canvas").dispatchEvent(new MouseEvent("mousedown", { bubbles: true }));
    root.querySelector(".nbembed-plot canvas").dispatchEvent(new MouseEvent("pointerdown", { bubbles: true }));
    expect(outside).not.toHaveBeenCalled(); // drags on the plot never reach the notebook
    const scatter = fakeScatter.instances[0];
    // Drawn exactly as decoded, within half a 16-bit step of what Python had.
    const decoded = Array.from(decodePositions(model.state._positions));
    expect(scatter.data.at(-1).xy).toEqual(decoded);
    const halfStep = 1.4 / 65535 / 2 + 2 ** -24; // and float32 rounding
    [-0.5, -0.5, 0.5, 0.5, 0.9, -0.9].forEach((v, k) => expect(Math.abs(decoded[k] - v)).toBeLessThanOrEqual(halfStep));
    expect(scatter.data.at(-1).codes).toEqual([0, 1, 1]);
    expect(root.dataset.frame).toBe("1");
    expect(Math.abs(Number(root.dataset.firstDrawAt) - Date.now())).toBeLessThan(60_000);
  });

  it("counts position updates and ignores malformed ones", async () => {
    widget.render({ model, el });
    const root = el.querySelector(".nbembed-explorer");
    model.state._positions = positionsView([0, 0, 0.1, 0.1, 0.2, 0.2]);
    model.emit("change:_positions");
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(root.dataset.version).toBe("1");
    expect(fakeScatter.instances[0].data.at(-1).xy.map((v) => Math.round(v * 10) / 10)).toEqual([0, 0, 0.1, 0.1, 0.2, 0.2]);
    model.state._positions = new DataView(new ArrayBuffer(7));
    model.emit("change:_positions");
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(root.querySelector('[data-role="notice"]').textContent).toMatch(/malformed/);
    expect(root.dataset.version).toBe("2");
  });

  it("animates to a new frame, and draws a change of colours at once", async () => {
    widget.render({ model, el });
    const root = el.querySelector(".nbembed-explorer");
    const scatter = fakeScatter.instances[0];
    expect(scatter.data.at(-1).animate).toBe(false); // the first drawing
    model.state._positions = positionsView([0, 0, 0.1, 0.1, 0.2, 0.2]);
    model.emit("change:_positions");
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(scatter.data.at(-1).animate).toBe(true);
    expect(root.dataset.transition).toBe("100");
    expect(root.dataset.animated).toBe("1");
    model.state._codes = new DataView(Uint16Array.of(1, 1, 0).buffer);
    model.emit("change:_codes");
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(scatter.data.at(-1)).toMatchObject({ animate: false, codes: [1, 1, 0] });
    expect(root.dataset.transition).toBe("0");
  });

  it("reports each frame it has drawn once, so that Python paces the frames", async () => {
    model.state.frame_id = 4;
    widget.render({ model, el });
    const drawn = () => model.sent.filter((m) => m.content.type === "drawn").map((m) => m.content);
    expect(drawn()).toEqual([{ type: "drawn", frame: 4 }]); // the first map
    model.state.frame_id = 5;
    model.state._positions = positionsView([0, 0, 0.1, 0.1, 0.2, 0.2]);
    model.emit("change:_positions");
    model.emit("change:frame_id");
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(drawn().map((m) => m.frame)).toEqual([4, 5]); // reported when drawn, not on arrival
    model.state.frame_id = 6; // a frame with the same positions: shown already
    model.emit("change:frame_id");
    model.emit("change:palette"); // a redraw of frame 6 reports nothing new
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(drawn().map((m) => m.frame)).toEqual([4, 5, 6]);
  });

  it("sends slider changes, selections and annotation commands", () => {
    widget.render({ model, el });
    const root = el.querySelector(".nbembed-explorer");
    const slider = root.querySelector('input[data-param="alpha"]');
    slider.value = "2";
    slider.dispatchEvent(new Event("change"));
    expect(model.state.params).toEqual({ alpha: 2, lambda_: 0.5 });
    const auto = root.querySelector('input[data-param-auto="lambda_"]');
    auto.checked = true;
    auto.dispatchEvent(new Event("change"));
    expect(model.state.params.lambda_).toBeNull();

    // A selection arrives from Python, then Apply sends it with the class.
    model.state._selection = encodeUint32([0, 2]);
    model.emit("change:_selection");
    expect(root.dataset.selected).toBe("2");
    root.querySelector('select[data-role="class"]').value = "1";
    root.querySelector('input[data-role="confidence"]').value = "0.8";
    root.querySelector('button[data-action="apply"]').click();
    const message = model.sent.at(-1);
    expect(message.content).toEqual({ type: "apply", mode: "soft_label", label: 1, confidence: 0.8 });
    expect(Array.from(decodeUint32(message.buffers[0]))).toEqual([0, 2]);

    root.querySelector('button[data-action="undo"]').click();
    expect(model.sent.at(-1).content).toEqual({ type: "undo" });
    root.querySelector('button[data-action="pause"]').click();
    expect(model.sent.at(-1).content).toEqual({ type: "pause" });

    root.querySelector('button[data-action="clear-selection"]').click();
    expect(root.dataset.selected).toBe("0");
    expect(decodeUint32(model.state._selection).length).toBe(0);

    const lasso = root.querySelector('button[data-action="lasso"]');
    lasso.click();
    expect(lasso.getAttribute("aria-pressed")).toBe("true");

    // Move mode replaces lasso mode; pins are Python's business.
    const move = root.querySelector('button[data-action="move"]');
    move.click();
    expect(move.getAttribute("aria-pressed")).toBe("true");
    expect(lasso.getAttribute("aria-pressed")).toBe("false");
    expect(root.dataset.mode).toBe("move");
    move.click();
    expect(root.dataset.mode).toBe("pan");
    // Pin carries the selection shown, as Apply does.
    model.state._selection = encodeUint32([3, 5]);
    model.emit("change:_selection");
    root.querySelector('button[data-action="pin"]').click();
    expect(model.sent.at(-1).content).toEqual({ type: "toggle_pins" });
    expect(Array.from(decodeUint32(model.sent.at(-1).buffers[0]))).toEqual([3, 5]);
    root.querySelector('button[data-action="unpin-all"]').click();
    expect(model.sent.at(-1).content).toEqual({ type: "unpin_all" });
  });

  it("creates a new class from its name, and stores cannot-link selection A from Python", () => {
    widget.render({ model, el });
    const root = el.querySelector(".nbembed-explorer");
    model.state._selection = encodeUint32([1]);
    model.emit("change:_selection");
    const name = root.querySelector('input[data-role="new-class"]');
    name.value = "sevens";
    name.dispatchEvent(new Event("input"));
    expect(root.querySelector('select[data-role="class"]').value).toBe("__new__");
    root.querySelector('button[data-action="apply"]').click();
    expect(model.sent.at(-1).content).toEqual({
      type: "apply", mode: "soft_label", label: "__new__", new_class: "sevens", confidence: 1,
    });
    model.state.class_names = ["zero", "one", "sevens"];
    model.emit("change:class_names");
    expect(root.querySelector('select[data-role="class"]').value).toBe("2");
    model.state.pending_a = 12;
    model.emit("change:pending_a");
    expect(root.dataset.pendingA).toBe("12");
    expect(root.getAttribute("data-pending-a")).toBe("12");
    const mode = root.querySelector('select[data-role="mode"]');
    mode.value = "cannot_link";
    mode.dispatchEvent(new Event("change"));
    mode.value = "must_link";
    mode.dispatchEvent(new Event("change"));
    expect(model.sent.at(-1).content).toEqual({ type: "cancel_pending" });
  });

  it("does not send an Apply without a selection", () => {
    widget.render({ model, el });
    el.querySelector('button[data-action="apply"]').click();
    expect(model.sent).toEqual([]);
    expect(el.querySelector('[data-role="notice"]').textContent).toMatch(/Select points first/);
  });

  it("shows the worker's error", () => {
    widget.render({ model, el });
    model.state.error = "FloatingPointError: boom";
    model.emit("change:error");
    expect(el.querySelector(".nbembed-error").textContent).toBe("FloatingPointError: boom");
  });

  it("shows what the annotations hold and how many steps can be undone", () => {
    widget.render({ model, el });
    const summary = el.querySelector('[data-role="annotation-summary"]');
    expect(summary.textContent).toBe("no annotations");
    model.state.annotation_summary = "470 labelled · 1 must-link group";
    model.emit("change:annotation_summary");
    expect(summary.textContent).toBe("470 labelled · 1 must-link group");
    expect(el.querySelector('[data-role="annotation-count"]').textContent).toBe("0");
  });

  it("cleans up: model listeners, DOM listeners and the scatter", () => {
    const added = [];
    const removed = [];
    const originalAdd = EventTarget.prototype.addEventListener;
    const originalRemove = EventTarget.prototype.removeEventListener;
    EventTarget.prototype.addEventListener = function (type, fn, opts) {
      added.push([this, type, fn]);
      return originalAdd.call(this, type, fn, opts);
    };
    EventTarget.prototype.removeEventListener = function (type, fn, opts) {
      removed.push([this, type, fn]);
      return originalRemove.call(this, type, fn, opts);
    };
    try {
      const cleanup = widget.render({ model, el });
      expect(model.listeners()).toBeGreaterThan(10);
      expect(typeof cleanup).toBe("function");
      cleanup();
      expect(model.listeners()).toBe(0);
      expect(fakeScatter.instances[0].destroyed).toBe(true);
      expect(el.children.length).toBe(0);
      expect(added.length).toBeGreaterThan(10);
      for (const [target, type, fn] of added) {
        const gone = removed.some(([t, ty, f]) => t === target && ty === type && f === fn);
        expect(gone, `${type} listener left behind`).toBe(true);
      }
    } finally {
      EventTarget.prototype.addEventListener = originalAdd;
      EventTarget.prototype.removeEventListener = originalRemove;
    }
  });

  it("exports, imports and searches from the toolbar", async () => {
    model.state.hover_text = ["apple", "Banana", "pineapple"];
    widget.render({ model, el });
    const root = el.querySelector(".nbembed-explorer");

    root.querySelector('button[data-action="export"]').click();
    expect(model.sent.at(-1).content).toEqual({ type: "export_annotations" });
    const downloads = [];
    URL.createObjectURL = vi.fn(() => "blob:annotations");
    URL.revokeObjectURL = vi.fn();
    const click = vi.spyOn(HTMLAnchorElement.prototype, "click").mockImplementation(function () {
      downloads.push(this.getAttribute("download"));
    });
    model.emit("msg:custom", { type: "annotations_json", text: "{}", filename: "annotations.json" });
    model.emit("msg:custom", { type: "something else" });
    expect(downloads).toEqual(["annotations.json"]);
    expect(URL.revokeObjectURL).toHaveBeenCalledWith("blob:annotations");
    click.mockRestore();

    const input = root.querySelector('input[data-role="import-file"]');
    const file = new File(['{"format": "x"}'], "saved.json", { type: "application/json" });
    Object.defineProperty(input, "files", { value: [file], configurable: true });
    input.dispatchEvent(new Event("change"));
    await vi.waitFor(() => expect(model.sent.at(-1).content.type).toBe("import_annotations"));
    expect(model.sent.at(-1).content).toEqual({ type: "import_annotations", text: '{"format": "x"}' });

    const search = root.querySelector('input[data-role="search"]');
    search.value = "APPLE";
    search.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    expect(root.dataset.selected).toBe("2");
    expect(Array.from(decodeUint32(model.state._selection))).toEqual([0, 2]);
    search.value = "1, 9";
    search.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    expect(Array.from(decodeUint32(model.state._selection))).toEqual([1]);
    expect(root.querySelector('[data-role="notice"]').textContent).toMatch(/1 point\(s\) match/);
  });

  it("shows a colour bar for continuous values", () => {
    model.state.palette = ["#000000", "#777777", "#ffffff", "#c8c8c8"];
    model.state.legend = [{ name: "0.1", code: 0, count: -1 }, { name: "9", code: 2, count: -1 }];
    model.state.legend_continuous = true;
    widget.render({ model, el });
    const bar = el.querySelector('[data-role="colorbar"]');
    expect(bar.textContent).toBe("0.19");
    expect(bar.querySelector(".nbembed-colorbar").style.background).toContain("linear-gradient");
    expect(el.querySelectorAll(".nbembed-legend-entry").length).toBe(0);
  });
});

