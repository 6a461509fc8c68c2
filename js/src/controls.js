// Toolbar, status line, parameter sliders, colouring and legend.
import { h } from "./dom.js";

export const BUTTONS = [
  ["pause", "Pause", "Stop optimizing"],
  ["resume", "Resume", "Continue optimizing"],
  ["restart", "Restart", "Start again from a new initial embedding"],
  ["fit", "Fit", "Reset pan and zoom to show all points"],
  ["lasso", "Lasso", "Drag on the plot to select points (or hold Shift while dragging)"],
  ["move", "Move", "Drag a point, or the selection, to a new place: it stays pinned there"],
  ["pin", "Pin", "Pin the selected points where they are (unpin them if all are pinned)"],
  ["unpin-all", "Unpin all", "Let every pinned point move again"],
  ["clear-selection", "Clear selection", "Deselect all points"],
  ["export", "Export", "Download the annotations as a JSON file"],
  ["import", "Import", "Add the annotations of a JSON file (Undo reverts it)"],
  ["png", "PNG", "Save the plot as a PNG image"],
  ["place_rest", "Place rest", "Place the rows the sample left out on the current map (drawn lighter, under the points)"],
];
export const VIEWS = ["first-two", "pca", "class-plane"];
const EXAGGERATION = "early exaggeration";

/** A parameter value for display: "auto" for null, three significant digits. */
export function formatValue(value) {
  if (value === null || value === undefined) return "auto";
  return String(Number(Number(value).toPrecision(3)));
}

export function formatCost(cost) {
  return cost === null || cost === undefined ? "–" : Number(cost).toPrecision(5);
}

/** The status line's word on placed rows: progress, how many are placed, or how many wait. */
export function placedText(placing, placedCount, restCount) {
  if (placing) return placing;
  if (placedCount > 0) return `${placedCount.toLocaleString("en")} rows placed`;
  if (restCount > 0) return `sample: ${restCount.toLocaleString("en")} rows not placed`;
  return "";
}

/** Buttons; `onAction(name)` is called on click. */
export function createToolbar(disposer, onAction) {
  const buttons = {};
  const element = h("div", { className: "nbembed-toolbar" });
  for (const [action, label, title] of BUTTONS) {
    const button = h("button", { type: "button", "data-action": action, title, text: label });
    if (action === "lasso" || action === "move") button.setAttribute("aria-pressed", "false");
    disposer.listen(button, "click", () => onAction(action));
    buttons[action] = button;
    element.append(button);
  }
  return { element, buttons };
}

/** Method, status, iteration and cost; also mirrored on the root's data attributes. */
export function createStatus(model, disposer, root) {
  const method = h("span", { "data-role": "method" });
  const status = h("span", { "data-role": "status" });
  const iteration = h("span", { "data-role": "iteration" });
  const cost = h("span", { "data-role": "cost" });
  const phase = h("span", { "data-role": "phase", title: "The attraction is multiplied in this phase of the schedule" });
  const placed = h("span", { "data-role": "placed" });
  const element = h("div", { className: "nbembed-status" }, [
    method, status, phase, h("span", { text: "iteration" }), iteration, h("span", { text: "cost" }), cost, placed,
  ]);
  const update = () => {
    method.textContent = model.get("method_name") ?? "";
    status.textContent = model.get("status") ?? "";
    iteration.textContent = String(model.get("iteration") ?? 0);
    cost.textContent = formatCost(model.get("cost"));
    // Only early exaggeration is named: it changes what the picture means.
    phase.textContent = model.get("phase") === EXAGGERATION ? `(${EXAGGERATION})` : "";
    placed.textContent = placedText(model.get("placing"), model.get("placed_count"), model.get("rest_count"));
    root.dataset.status = model.get("status") ?? "";
    root.dataset.iteration = String(model.get("iteration") ?? 0);
  };
  for (const name of ["method_name", "status", "iteration", "cost", "phase", "placing", "placed_count", "rest_count"]) {
    disposer.onModel(model, `change:${name}`, update);
  }
  update();
  return element;
}

/**
 * Whether `value` lies in a parameter's accepted interval: `spec.low`/`spec.high`
 * (null: unbounded), each end excluded when `spec.low_open`/`spec.high_open`.
 */
export function inBounds(spec, value) {
  if (!Number.isFinite(value)) return false;
  if (spec.low !== null && spec.low !== undefined) {
    if (spec.low_open ? value <= spec.low : value < spec.low) return false;
  }
  if (spec.high !== null && spec.high !== undefined) {
    if (spec.high_open ? value >= spec.high : value > spec.high) return false;
  }
  return true;
}

/** One slider per live parameter, rebuilt when the run changes. */
export function createParameters(model, disposer) {
  const element = h("fieldset", { className: "nbembed-params" }, [h("legend", { text: "Parameters" })]);
  const body = h("div");
  element.append(body);
  let rows = {};
  let rowDisposers = [];

  const send = (spec, value) => {
    // Python checks again; this only spares a round trip for a value it would refuse.
    if (value !== null && !inBounds(spec, value)) return;
    model.set("params", { ...(model.get("params") ?? {}), [spec.name]: value });
    model.save_changes();
  };

  /** The value a parameter has now; an "auto" one's as the method currently sets it. */
  const inEffect = (name) => {
    const params = model.get("params") ?? {};
    return params[name] ?? (model.get("param_values") ?? {})[name] ?? null;
  };

  const showValues = () => {
    const params = model.get("params") ?? {};
    const idle = model.get("idle_params") ?? {};
    for (const [name, row] of Object.entries(rows)) {
      // A parameter that changes nothing now stays usable, dimmed, with the reason.
      row.element.classList.toggle("nbembed-inactive", name in idle);
      row.element.title = idle[name] ?? "";
      if (!(name in params)) continue;
      const value = params[name];
      const current = inEffect(name);
      row.label.textContent =
        value === null && current !== null ? `auto: ${formatValue(current)}` : formatValue(value);
      if (row.auto) {
        row.auto.checked = value === null;
        row.range.disabled = value === null;
      }
      if (current !== null) row.range.value = String(current);
    }
  };

  const build = () => {
    for (const undo of rowDisposers) undo();
    rowDisposers = [];
    rows = {};
    body.replaceChildren();
    const specs = model.get("param_specs") ?? [];
    element.hidden = specs.length === 0;
    for (const spec of specs) {
      const range = h("input", {
        type: "range",
        "data-param": spec.name,
        min: spec.min,
        max: spec.max,
        step: spec.step,
        title: spec.description,
        "aria-label": spec.label,
      });
      const label = h("span", { "data-param-value": spec.name });
      const name = h("label", { text: spec.label, title: spec.description });
      const row = h("div", { className: "nbembed-param" }, [name, range, label]);
      const onInput = () => {
        label.textContent = formatValue(range.value);
      };
      const onChange = () => send(spec, Number(range.value));
      range.addEventListener("input", onInput);
      range.addEventListener("change", onChange);
      rowDisposers.push(() => {
        range.removeEventListener("input", onInput);
        range.removeEventListener("change", onChange);
      });
      let auto = null;
      if (spec.allows_auto) {
        auto = h("input", { type: "checkbox", "data-param-auto": spec.name, title: "Let the method choose" });
        // Manual continues from the value the method uses now, not from the slider's
        // position, which may be clamped to its range.
        const onAuto = () => send(spec, auto.checked ? null : inEffect(spec.name) ?? Number(range.value));
        auto.addEventListener("change", onAuto);
        rowDisposers.push(() => auto.removeEventListener("change", onAuto));
        row.append(h("label", { className: "nbembed-row" }, [auto, "auto"]));
      }
      rows[spec.name] = { element: row, range, label, auto };
      body.append(row);
    }
    showValues();
  };

  disposer.onModel(model, "change:param_specs", build);
  disposer.onModel(model, "change:params", showValues);
  disposer.onModel(model, "change:param_values", showValues);
  disposer.onModel(model, "change:idle_params", showValues);
  disposer.add(() => rowDisposers.forEach((undo) => undo()));
  build();
  return element;
}

/** A colour bar for the codes `low..high` of `colors`, with its end values. */
export function colorBar(colors, low, high) {
  const stops = colors.slice(low.code, high.code + 1);
  return h("div", { className: "nbembed-colorbar-row", "data-role": "colorbar" }, [
    low.name,
    h("span", { className: "nbembed-colorbar", style: { background: `linear-gradient(to right, ${stops.join(", ")})` } }),
    high.name,
  ]);
}

/** Colour-by and view selects, and the legend (a colour bar for continuous values). */
export function createLegend(model, disposer) {
  const colorBy = h("select", { "data-role": "color-by", title: "Colour points by" });
  const view = h("select", { "data-role": "view", title: "2-D view of the embedding" });
  for (const v of VIEWS) view.append(h("option", { value: v, text: v }));
  const viewRow = h("div", { className: "nbembed-row" }, ["view", view]);
  const note = h("div", { className: "nbembed-notice", "data-role": "view-note" });
  const entries = h("div", { "data-role": "legend" });
  const element = h("fieldset", { className: "nbembed-legend" }, [
    h("legend", { text: "Colour" }),
    h("div", { className: "nbembed-row" }, ["by", colorBy]),
    viewRow,
    note,
    entries,
  ]);

  const update = () => {
    const options = model.get("color_options") ?? ["label"];
    colorBy.replaceChildren(...options.map((o) => h("option", { value: o, text: o })));
    colorBy.value = model.get("color_by");
    view.value = model.get("view");
    viewRow.hidden = (model.get("n_components") ?? 2) <= 2;
    note.textContent = model.get("view_note") ?? "";
    const colors = model.get("palette") ?? [];
    const legend = model.get("legend") ?? [];
    if (model.get("legend_continuous") && legend.length === 2) {
      entries.replaceChildren(colorBar(colors, legend[0], legend[1]));
      return;
    }
    entries.replaceChildren(
      ...legend.map((entry) =>
        h("div", { className: "nbembed-legend-entry" }, [
          h("span", { className: "nbembed-swatch", style: { background: colors[entry.code] ?? "#999" } }),
          entry.count >= 0 ? `${entry.name} (${entry.count})` : entry.name,
        ]),
      ),
    );
  };
  disposer.listen(colorBy, "change", () => {
    model.set("color_by", colorBy.value);
    model.save_changes();
  });
  disposer.listen(view, "change", () => {
    model.set("view", view.value);
    model.save_changes();
  });
  for (const name of ["color_options", "color_by", "view", "n_components", "view_note", "legend", "legend_continuous", "palette"]) {
    disposer.onModel(model, `change:${name}`, update);
  }
  update();
  return element;
}
