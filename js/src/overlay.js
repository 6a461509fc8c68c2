// The marks layer: a 2-D canvas over the WebGL plot where marks.js draws the
// annotations, redrawn when the points, the camera, the marks or the size
// change, and a checkbox that shows or hides them. Pinned points are marked
// on it too, whatever the checkbox says.
import { decodeUint32 } from "./codecs.js";
import { h, layerRedraw } from "./dom.js";
import { decodeMarks, describeMarks, drawMarks, drawPins } from "./marks.js";
import { pointSizeFor } from "./scatter.js";

/**
 * @param say (text) => void shows a notice
 * @returns {canvas, toggle, attach(scatter), describe(i), redraw()}
 */
export function createMarksLayer(model, disposer, root, say) {
  const canvas = h("canvas", { className: "nbembed-marks", "data-role": "marks" });
  const checkbox = h("input", { type: "checkbox", "data-role": "show-marks", checked: true });
  const toggle = h("label", { className: "nbembed-row", title: "Outline labelled points and draw must-links and cannot-links" }, [
    checkbox,
    "constraints",
  ]);
  let scatter = null;
  let marks = null;
  let pinned = new Uint32Array(0);

  const redraw = layerRedraw(canvas, disposer, (area) => {
    let drawn = 0;
    let pins = 0;
    if (area && scatter) {
      const transform = { ...scatter.transform(), width: area.width, height: area.height };
      const xy = scatter.positions();
      const radius = pointSizeFor(xy.length / 2) / 2 + 2;
      const outlineLabels = model.get("color_by") !== "label";
      if (checkbox.checked && marks) drawn = drawMarks(area.ctx, marks, xy, transform, { radius, outlineLabels });
      pins = drawPins(area.ctx, pinned, xy, transform, { radius });
    }
    root.dataset.marksDrawn = String(drawn);
    root.dataset.pinsDrawn = String(pins);
  });
  const readPins = () => {
    try {
      pinned = decodeUint32(model.get("_pinned"));
    } catch (err) {
      pinned = new Uint32Array(0);
      say(`Ignored malformed pins from Python: ${err.message}`);
    }
    redraw();
  };
  const readMarks = () => {
    try {
      marks = decodeMarks(decodeUint32(model.get("_marks")), model.get("n_points") ?? 0);
    } catch (err) {
      marks = null;
      say(`Ignored malformed constraint marks from Python: ${err.message}`);
    }
    redraw();
  };

  disposer.listen(checkbox, "change", redraw);
  disposer.onModel(model, "change:_marks", readMarks);
  disposer.onModel(model, "change:_pinned", readPins);
  disposer.onModel(model, "change:color_by", redraw);
  readMarks();
  readPins();
  return {
    canvas,
    toggle,
    attach(s) {
      scatter = s;
      redraw();
    },
    /** The hover line of point i ("" when it is in no annotation). */
    describe: (i) => describeMarks(marks, i, model.get("class_names") ?? []),
    redraw,
  };
}
