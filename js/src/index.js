// Entry of the Explorer widget (anywidget): render() builds the view and
// returns the function that tears it down.
import { createAnnotationPanel } from "./annotate.js";
import { createArrowsLayer } from "./arrows.js";
import { decodeFloat32, decodePositions, decodeSelection, decodeUint16, decodeUint32, encodeSelection } from "./codecs.js";
import { createLegend, createParameters, createStatus, createToolbar } from "./controls.js";
import { Disposer, cancelFrame, h, nextFrame } from "./dom.js";
import { attachLasso, pointsInPolygon, screenToPoints } from "./lasso.js";
import { attachMove, draggedPoints, dropMessage, pointAt, shifted } from "./move.js";
import { createMarksLayer } from "./overlay.js";
import { createFileActions } from "./files.js";
import { createScatter, pointSizeFor } from "./scatter.js";
import { placedLayer } from "./placed.js";
import { createSearch } from "./search.js";
import { CSS } from "./styles.js";
import { createReadouts, createStepper } from "./teaching.js";
import { createTooltip } from "./tooltip.js";

const SVG = "http://www.w3.org/2000/svg";
const DEFAULT_SIZE = [640, 480];
/** Below this width (px) of the widget, the side panel goes under the plot. */
const NARROW_BELOW = 760;

function render({ model, el }) {
  const disposer = new Disposer();
  const root = h("div", { className: "nbembed-explorer" });
  root.append(h("style", { text: CSS }));
  let selection = new Uint32Array(0);
  let lassoMode = false;
  let moveMode = false;
  let frames = 0;
  let animated = 0; // frames drawn with an animation
  let versions = 0;
  let drops = 0;
  let codes = null;
  // The last positions from Python, and the points being dragged (drawn
  // shifted by dx, dy until the first frame after their drop).
  let shown = null;
  let drag = null;
  // The placed layer (placed.js): each drawn row's nearest live point and offset.
  let placed = { refs: null, offsets: null };

  const notice = h("div", { className: "nbembed-notice", "data-role": "notice", "aria-live": "polite" });
  const say = (text) => {
    notice.textContent = text;
  };
  const error = h("div", { className: "nbembed-error", role: "alert" });

  // --- the plot -------------------------------------------------------------
  const canvas = h("canvas", { className: "nbembed-canvas" });
  const svg = document.createElementNS(SVG, "svg");
  const polyline = document.createElementNS(SVG, "polyline");
  svg.append(polyline);
  const tooltip = createTooltip(model);
  const marksLayer = createMarksLayer(model, disposer, root, say);
  const arrowsLayer = createArrowsLayer(model, disposer, root);
  const plotEl = h("div", { className: "nbembed-plot" }, [canvas, marksLayer.canvas, arrowsLayer.canvas, svg, tooltip.element]);
  // Keep drags on the plot from reaching the notebook (a cell drag in JupyterLab).
  for (const type of ["pointerdown", "pointermove", "pointerup", "mousedown", "touchstart"]) {
    disposer.listen(plotEl, type, (event) => event.stopPropagation());
  }

  const [width, height] = [plotEl.clientWidth || DEFAULT_SIZE[0], plotEl.clientHeight || DEFAULT_SIZE[1]];
  const scatter = createScatter(canvas, {
    width,
    height,
    onDraw: (ms) => {
      frames += 1;
      root.dataset.frame = String(frames);
      // When the first map was drawn (epoch ms), for measuring the time to it.
      if (frames === 1) root.dataset.firstDrawAt = String(Math.round(performance.timeOrigin + performance.now()));
      root.dataset.transition = String(Math.round(ms));
      if (ms > 0) animated += 1;
      root.dataset.animated = String(animated);
      marksLayer.redraw();
      arrowsLayer.redraw();
    },
    onView: () => {
      marksLayer.redraw();
      arrowsLayer.redraw();
    },
    onSelect: (indices) => setSelection(Uint32Array.from(indices), true),
    onHover: (i) => {
      const at = i >= 0 ? scatter.screenPosition(i) : null;
      tooltip.show(at ? i : -1, at?.[0] ?? 0, at?.[1] ?? 0, codes, marksLayer.describe(i));
      arrowsLayer.hover(at ? i : -1);
    },
  });
  disposer.add(() => scatter.destroy());
  marksLayer.attach(scatter);
  arrowsLayer.attach(scatter);

  function setSelection(indices, send) {
    selection = indices;
    root.dataset.selected = String(indices.length);
    scatter.select(indices);
    if (send) {
      model.set("_selection", encodeSelection(indices, model.get("n_points") ?? 0));
      model.save_changes();
    }
  }

  disposer.add(
    attachMove(plotEl, {
      shouldStart: (event) => moveMode && !event.shiftKey,
      pick: (px, py) => {
        if (!shown) return null;
        const radius = pointSizeFor(shown.xy.length / 2) / 2 + 4;
        const i = pointAt(shown.xy, scatter.transform(), px, py, radius);
        if (i < 0) return null;
        drag = { indices: draggedPoints(i, selection), dx: 0, dy: 0, dropped: false };
        return drag.indices;
      },
      transform: () => scatter.transform(),
      onDrag: (dx, dy) => {
        Object.assign(drag, { dx, dy });
        draw();
      },
      onDrop: (dx, dy) => {
        Object.assign(drag, { dx, dy, dropped: true });
        model.send(dropMessage(shown.xy, drag.indices, dx, dy, model.get("frame_id") ?? 0));
        drops += 1;
        root.dataset.drops = String(drops);
        say(`Moved ${drag.indices.length} point(s); they stay pinned there.`);
        draw();
      },
      onCancel: () => {
        drag = null;
        draw();
      },
    }),
  );
  disposer.add(
    attachLasso(plotEl, polyline, {
      shouldStart: (event) => lassoMode || event.shiftKey,
      onEnd: (pixels) => {
        const polygon = screenToPoints(pixels, scatter.transform());
        setSelection(pointsInPolygon(scatter.positions(), polygon), true);
        say(`${selection.length} point(s) selected.`);
      },
    }),
  );

  // The side panel goes under the plot when the widget is narrow; the plot
  // takes the size it gets and keeps all points in view unless panned or zoomed.
  const layout = (width) => {
    const narrow = width < NARROW_BELOW;
    root.classList.toggle("nbembed-narrow", narrow);
    root.dataset.layout = narrow ? "narrow" : "wide";
  };
  if (globalThis.ResizeObserver) {
    const observer = new ResizeObserver((entries) => {
      for (const entry of entries) {
        const { width: w, height: hgt } = entry.contentRect;
        if (entry.target === root) layout(w);
        else if (w > 0 && hgt > 0) scatter.resize(Math.round(w), Math.round(hgt));
      }
      marksLayer.redraw();
      arrowsLayer.redraw();
    });
    observer.observe(plotEl);
    observer.observe(root);
    disposer.add(() => observer.disconnect());
  }

  // --- positions from Python ---------------------------------------------------
  let scheduled = null;
  let moved = false; // new positions since the last redraw: a frame to animate to
  // Python sends a frame only while this page has at most a couple it has not
  // reported drawn (nbembed/widget/pacing.py): a slow page gets the newest.
  let reported = 0;
  const reportDrawn = () => {
    const frame = model.get("frame_id") ?? 0;
    if (frame > reported) {
      reported = frame;
      model.send({ type: "drawn", frame });
    }
  };
  const redraw = () => {
    scheduled = null;
    const animate = moved;
    moved = false;
    try {
      const xy = decodePositions(model.get("_positions"));
      if (!xy.length) return;
      const anchors = decodeFloat32(model.get("_anchors"));
      codes = decodeUint16(model.get("_codes"));
      scatter.setPalette(model.get("palette") ?? []);
      shown = { xy, anchors: anchors.length ? anchors : null };
      root.dataset.frameId = String(model.get("frame_id") ?? 0);
      draw(animate);
      reportDrawn();
    } catch (err) {
      say(`Ignored a malformed update from Python: ${err.message}`);
    }
  };
  // A new frame of the run moves the points there over most of the time between
  // frames (scatter.js, transitionMs); a drag and a change of colours draw at once.
  function draw(animate = false) {
    if (!shown) return;
    const xy = drag ? shifted(shown.xy, drag.indices, drag.dx, drag.dy) : shown.xy;
    const layer = placedLayer(placed.refs, placed.offsets, model.get("frame_scale"), xy, codes,
      (model.get("palette") ?? []).length);
    root.dataset.placedShown = String(layer ? layer.codes.length : 0);
    scatter.setData(xy, shown.anchors, codes, { animate: animate && !drag, placed: layer });
  }
  const schedule = () => {
    if (scheduled === null) scheduled = nextFrame(redraw);
  };
  disposer.add(() => scheduled !== null && cancelFrame(scheduled));
  disposer.onModel(model, "change:_positions", () => {
    if (drag?.dropped) drag = null; // Python has placed the dropped points
    versions += 1;
    root.dataset.version = String(versions);
    moved = true;
    schedule();
  });
  for (const name of ["_codes", "_anchors", "palette"]) disposer.onModel(model, `change:${name}`, schedule);
  const readPlaced = () => {
    try {
      placed = { refs: decodeUint32(model.get("_placed_refs")), offsets: decodeFloat32(model.get("_placed_offsets")) };
    } catch (err) {
      placed = { refs: null, offsets: null };
      say(`Ignored a malformed placed layer: ${err.message}`);
    }
  };
  readPlaced();
  for (const name of ["_placed_refs", "_placed_offsets"]) {
    disposer.onModel(model, `change:${name}`, () => {
      readPlaced();
      schedule();
    });
  }
  // A frame with the same positions changes only frame_id: it is shown already.
  disposer.onModel(model, "change:frame_id", () => {
    if (scheduled !== null) return;
    root.dataset.frameId = String(model.get("frame_id") ?? 0);
    reportDrawn();
  });
  disposer.onModel(model, "change:_images", () => tooltip.reset());
  disposer.onModel(model, "change:_selection", () => {
    try {
      setSelection(decodeSelection(model.get("_selection")), false);
    } catch (err) {
      say(`Ignored a malformed selection: ${err.message}`);
    }
  });

  // --- controls ------------------------------------------------------------------
  const files = createFileActions(model, disposer, { say, getScatter: () => scatter, marksCanvas: marksLayer.canvas });
  const toolbar = createToolbar(disposer, (action) => {
    if (files.handle(action)) return;
    if (action === "fit") scatter.fit();
    else if (action === "lasso" || action === "move") {
      lassoMode = action === "lasso" && !lassoMode;
      moveMode = action === "move" && !moveMode;
      toolbar.buttons.lasso.setAttribute("aria-pressed", String(lassoMode));
      toolbar.buttons.move.setAttribute("aria-pressed", String(moveMode));
      root.dataset.mode = moveMode ? "move" : lassoMode ? "lasso" : "pan";
    } else if (action === "clear-selection") setSelection(new Uint32Array(0), true);
    // The selection shown travels with the message: a host may handle messages
    // before the trait updates queued with them (marimo does when its kernel is busy).
    else if (action === "pin") model.send({ type: "toggle_pins" }, undefined, [encodeSelection(selection, model.get("n_points") ?? 0)]);
    else if (action === "unpin-all") model.send({ type: "unpin_all" });
    else model.send({ type: action });
  });
  const search = createSearch(model, disposer, (found, query) => {
    setSelection(found, true);
    say(`${found.length} point(s) match "${query}" and are selected.`);
  });
  toolbar.element.append(createStepper(model, disposer, say), search, marksLayer.toggle, ...arrowsLayer.toggles, files.input);
  // "Place rest" only where a sample left rows out (Explorer(X, sample=...)).
  const showPlaceRest = () => {
    toolbar.buttons.place_rest.hidden = !((model.get("rest_count") ?? 0) > 0);
  };
  disposer.onModel(model, "change:rest_count", showPlaceRest);
  showPlaceRest();
  const side = h("div", { className: "nbembed-side" }, [
    createParameters(model, disposer),
    createAnnotationPanel(model, disposer, root, { getSelection: () => selection, say }),
    createLegend(model, disposer),
    createReadouts(model, disposer, root),
  ]);
  root.append(
    toolbar.element,
    createStatus(model, disposer, root),
    error,
    plotEl,
    side,
    // Below the plot, not over it: a legend on the plot hides the points under it.
    h("div", { className: "nbembed-status" }, [arrowsLayer.legend, notice]),
  );

  const showText = () => {
    error.textContent = model.get("error") ?? "";
    root.dataset.n = String(model.get("n_points") ?? 0);
    if (model.get("notice")) say(model.get("notice"));
  };
  for (const name of ["error", "notice", "n_points"]) disposer.onModel(model, `change:${name}`, showText);
  showText();
  root.dataset.frame = "0";
  root.dataset.version = "0";
  root.dataset.selected = "0";
  root.dataset.layout = "wide";
  root.dataset.mode = "pan";
  root.dataset.drops = "0";

  el.append(root);
  redraw();
  try {
    setSelection(decodeSelection(model.get("_selection")), false);
  } catch {
    // an invalid initial selection is ignored
  }

  return () => {
    disposer.dispose();
    root.remove();
  };
}

export default { render };
