// Teaching mode: the quality read-outs with their sparklines, and the Step control.
import { h } from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";
/** The read-outs, in the order shown: [key of the quality trait, label, title]. */
export const READOUTS = [
  ["cost", "cost", "The run's last recorded cost"],
  ["trustworthiness", "trustworthiness", "Embedded neighbours that are neighbours in the input (k = 10, on a sample)"],
  ["continuity", "continuity", "Input neighbours that stay neighbours in the embedding (k = 10, on a sample)"],
  ["knn_accuracy", "kNN accuracy", "Leave-one-out 1-NN accuracy of the labelled sample points"],
];
const SPARK = [80, 18];
/** Most iterations one Step may ask for (as Python's teaching.MAX_STEPS). */
export const MAX_STEPS = 100000;

/** A read-out value for display: "–" when there is none. */
export function formatReadout(value) {
  return value === null || value === undefined || !Number.isFinite(Number(value))
    ? "–"
    : Number(Number(value).toPrecision(4)).toString();
}

/**
 * The `points` attribute of a sparkline of `values` in a `width` x `height` box;
 * missing values are skipped, a constant series is drawn in the middle.
 */
export function sparklinePoints(values, width, height) {
  const kept = [];
  (values ?? []).forEach((v, i) => {
    if (v !== null && v !== undefined && Number.isFinite(Number(v))) kept.push([i, Number(v)]);
  });
  if (!kept.length) return "";
  const n = Math.max(values.length - 1, 1);
  const ys = kept.map(([, v]) => v);
  const [lo, hi] = [Math.min(...ys), Math.max(...ys)];
  return kept
    .map(([i, v]) => {
      const x = (i / n) * width;
      const y = hi > lo ? height - ((v - lo) / (hi - lo)) * height : height / 2;
      return `${x.toFixed(1)},${y.toFixed(1)}`;
    })
    .join(" ");
}

/** The read-outs panel, following the `quality` trait. */
export function createReadouts(model, disposer, root) {
  const rows = {};
  const element = h("fieldset", { className: "nbembed-readouts", "data-role": "readouts" }, [
    h("legend", { text: "Read-outs" }),
  ]);
  for (const [key, label, title] of READOUTS) {
    const value = h("span", { className: "nbembed-readout-value", "data-readout": key });
    const svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("width", String(SPARK[0]));
    svg.setAttribute("height", String(SPARK[1]));
    svg.setAttribute("data-sparkline", key);
    const line = document.createElementNS(SVG, "polyline");
    line.setAttribute("fill", "none");
    line.setAttribute("stroke", "currentColor");
    svg.append(line);
    rows[key] = { value, line };
    element.append(h("div", { className: "nbembed-readout", title }, [h("span", { text: label }), value, svg]));
  }
  const note = h("div", { className: "nbembed-readout-note" });
  element.append(note);
  const update = () => {
    const quality = model.get("quality") ?? {};
    for (const [key] of READOUTS) {
      rows[key].value.textContent = formatReadout(quality[key]);
      rows[key].line.setAttribute("points", sparklinePoints(quality.history?.[key], SPARK[0], SPARK[1]));
    }
    note.textContent = quality.sample_size ? `on ${quality.sample_size} point(s), iteration ${quality.iteration}` : "";
    root.dataset.qualityIteration = String(quality.iteration ?? "");
  };
  disposer.onModel(model, "change:quality", update);
  update();
  return element;
}

/** The Step button and its iteration count, usable while paused. */
export function createStepper(model, disposer, say) {
  const count = h("input", {
    type: "number", min: "1", max: String(MAX_STEPS), step: "1", value: "1",
    "data-role": "step-count", title: "Iterations one Step does", "aria-label": "Iterations per step",
  });
  const button = h("button", {
    type: "button", "data-action": "step", text: "Step", title: "While paused, do this many iterations",
  });
  disposer.listen(button, "click", () => {
    const n = Number(count.value);
    if (!Number.isInteger(n) || n < 1 || n > MAX_STEPS) {
      say(`Step needs a whole number of iterations from 1 to ${MAX_STEPS}; got "${count.value}".`);
      return;
    }
    model.send({ type: "step", n });
  });
  const update = () => {
    const paused = ["paused", "done"].includes(model.get("status"));
    button.disabled = !paused;
    count.disabled = !paused;
  };
  disposer.onModel(model, "change:status", update);
  update();
  return h("span", { className: "nbembed-stepper" }, [button, count]);
}
