// The WebGL scatter: regl-scatterplot draws the points, anchors and the
// selection and handles pan and zoom; its own lasso is switched off (the
// widget's lasso lives in lasso.js).
import createScatterplot from "regl-scatterplot";

/** Point size in pixels that keeps 10^2..10^6 points readable. */
export function pointSizeFor(n) {
  return Math.max(1, Math.min(8, 24 / Math.pow(Math.max(n, 1), 0.2)));
}

/** A darker shade of a "#rrggbb" colour, for selected points. */
export function darken(color, amount = 0.45) {
  const rgb = [1, 3, 5].map((i) => parseInt(color.slice(i, i + 2), 16));
  if (rgb.some(Number.isNaN)) return color;
  return `#${rgb.map((c) => Math.round(c * (1 - amount)).toString(16).padStart(2, "0")).join("")}`;
}

/**
 * The camera view (column-major 4x4) that shows all of [-1, 1]^2 on a
 * `width` x `height` canvas: regl-scatterplot shows x in [-aspect, aspect] and
 * y in [-1, 1] at scale 1, so a canvas taller than wide must zoom out.
 */
export function fittedView(width, height) {
  const s = Math.min(width / height, 1) || 1;
  return Float32Array.of(s, 0, 0, 0, 0, s, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1);
}

/** Anchors are drawn this many times larger than points. */
export const ANCHOR_SCALE = 3;
/** Above this many points, opacity follows the local density. */
export const DENSITY_OPACITY_FROM = 50000;

/**
 * Column-oriented points for regl-scatterplot: points first, then anchors.
 * valueA is the colour code, valueB is 1 for anchors.
 */
export function toColumns(xy, anchors, codes) {
  const n = xy.length / 2;
  const m = anchors ? anchors.length / 2 : 0;
  const x = new Float32Array(n + m);
  const y = new Float32Array(n + m);
  const valueA = new Float32Array(n + m);
  const valueB = new Float32Array(n + m);
  for (let i = 0; i < n; i++) {
    x[i] = xy[2 * i];
    y[i] = xy[2 * i + 1];
  }
  for (let k = 0; k < m; k++) {
    x[n + k] = anchors[2 * k];
    y[n + k] = anchors[2 * k + 1];
    valueB[n + k] = 1;
  }
  if (codes) valueA.set(codes.subarray(0, Math.min(codes.length, n + m)));
  return { x, y, valueA, valueB };
}

/**
 * Create the scatter on `canvas`.
 *
 * Draw calls are serialized (regl-scatterplot refuses a draw while one is
 * running): while one draw is in flight only the latest data waits.
 */
export function createScatter(canvas, { width, height, onDraw, onSelect, onHover, onView }) {
  const plot = createScatterplot({
    canvas,
    width,
    height,
    pointSize: 4,
    pointSizeSelected: 2,
    pointOutlineWidth: 2,
    actionKeyMap: {},
    lassoOnLongPress: false,
    lassoInitiator: false,
    showReticle: false,
    deselectOnDblClick: true,
    deselectOnEscape: false,
    colorBy: "valueA",
    sizeBy: "valueB",
    backgroundColor: [1, 1, 1, 1],
  });
  let nPoints = 0;
  let drawing = false;
  let pending = null;
  let selected = [];
  let destroyed = false;
  let positions = new Float32Array(0);
  // Whether the camera shows the whole plot: a resize then keeps it so. Panning
  // or zooming ends it, Fit starts it again.
  let fitted = true;
  const fitView = () => {
    plot.view(fittedView(plot.get("width"), plot.get("height")), { preventEvent: true });
    fitted = true;
    onView?.();
  };

  const subscriptions = [
    plot.subscribe("select", ({ points }) => onSelect?.(points.filter((i) => i < nPoints))),
    plot.subscribe("deselect", () => onSelect?.([])),
    plot.subscribe("pointover", (i) => onHover?.(i < nPoints ? i : -1)),
    plot.subscribe("pointout", () => onHover?.(-1)),
    plot.subscribe("view", () => {
      fitted = false; // only the user's pan and zoom are announced
      onView?.();
    }),
  ];

  const pump = () => {
    if (drawing || !pending || destroyed) return;
    const data = pending;
    pending = null;
    drawing = true;
    const size = pointSizeFor(data.n);
    plot.set({
      pointSize: [size, size * ANCHOR_SCALE],
      pointSizeSelected: size + 1,
      opacityBy: data.n > DENSITY_OPACITY_FROM ? "density" : null,
    });
    plot
      .draw(data.columns, {
        zDataType: "categorical",
        wDataType: "categorical",
        preventFilterReset: true,
        select: selected,
      })
      .then(() => onDraw?.())
      .catch((err) => {
        if (!destroyed) console.warn("nbembed: draw failed", err);
      })
      .finally(() => {
        drawing = false;
        pump();
      });
  };

  fitView();
  return {
    plot,
    /** Draw points (interleaved xy in [-1, 1]), anchors and colour codes. */
    setData(xy, anchors, codes) {
      nPoints = xy.length / 2;
      positions = xy;
      pending = { n: nPoints, columns: toColumns(xy, anchors, codes) };
      pump();
    },
    /** The positions last handed to setData (interleaved xy). */
    positions: () => positions,
    setPalette(colors) {
      // Same-length active and hover palettes keep each class's colour; a
      // selected point is drawn darker, with a ring.
      if (colors.length) {
        plot.set({ pointColor: colors, pointColorActive: colors.map((c) => darken(c)), pointColorHover: colors });
      }
    },
    select(indices) {
      selected = Array.from(indices);
      if (selected.length) plot.select(selected, { preventEvent: true });
      else plot.deselect({ preventEvent: true });
    },
    /** The plot as an ImageData (or a promise of one), as regl-scatterplot renders it. */
    exportImage() {
      return plot.export();
    },
    /** Reset pan and zoom so that all points are in view. */
    fit: fitView,
    /** Whether the view shows all points (no pan or zoom since the last fit). */
    isFitted: () => fitted,
    /** Take a new canvas size; a fitted view stays fitted. */
    resize(w, h) {
      const keep = fitted;
      plot.set({ width: w, height: h });
      if (keep) fitView();
    },
    /** What lasso.js needs to map screen pixels to point coordinates. */
    transform() {
      return {
        view: plot.get("cameraView"),
        width: plot.get("width"),
        height: plot.get("height"),
      };
    },
    screenPosition(i) {
      return plot.getScreenPosition(i);
    },
    destroy() {
      destroyed = true;
      for (const s of subscriptions) plot.unsubscribe(s);
      plot.destroy();
    },
  };
}
