// The marks layer: a 2-D canvas over the WebGL plot where marks.js draws the
// annotations, redrawn when the points, the camera, the marks or the size
// change, and a checkbox that shows or hides it.
import { decodeUint32 } from "./codecs.js";
import { cancelFrame, h, nextFrame } from "./dom.js";
import { decodeMarks, describeMarks, drawMarks } from "./marks.js";
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
  let scheduled = null;

  const draw = () => {
    scheduled = null;
    const width = canvas.clientWidth;
    const height = canvas.clientHeight;
    const ctx = width > 0 && height > 0 ? canvas.getContext("2d") : null;
    let drawn = 0;
    if (ctx) {
      const ratio = globalThis.devicePixelRatio || 1;
      if (canvas.width !== Math.round(width * ratio)) canvas.width = Math.round(width * ratio);
      if (canvas.height !== Math.round(height * ratio)) canvas.height = Math.round(height * ratio);
      ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
      ctx.clearRect(0, 0, width, height);
      if (checkbox.checked && scatter && marks) {
        const transform = { ...scatter.transform(), width, height };
        const radius = pointSizeFor(marks.n) / 2 + 2;
        drawn = drawMarks(ctx, marks, scatter.positions(), transform, { radius });
      }
    }
    root.dataset.marksDrawn = String(drawn);
  };
  const redraw = () => {
    if (scheduled === null) scheduled = nextFrame(draw);
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

  disposer.add(() => scheduled !== null && cancelFrame(scheduled));
  disposer.listen(checkbox, "change", redraw);
  disposer.onModel(model, "change:_marks", readMarks);
  readMarks();
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
