// The WebGL scatter: regl-scatterplot draws the points, anchors and the
// selection and handles pan and zoom; its own lasso is switched off (the
// widget's lasso lives in lasso.js).
import createScatterplot from "regl-scatterplot";
import { lighten } from "./placed.js";
import { createIndexer } from "./spatial-index.js";

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

/** Longest animation from one frame to the next, in milliseconds. */
export const MAX_TRANSITION_MS = 300;
/** Shorter animations are not worth it: frames that close together already move smoothly. */
export const MIN_TRANSITION_MS = 25;
/** Share of the time between frames that the animation to the newer one takes. */
export const TRANSITION_SHARE = 0.8;

/**
 * How long to animate the points from the frame shown to the next one, in
 * milliseconds: most of the time frames take to arrive (`intervalMs`, a
 * running estimate), so that each animation ends about when the next frame is
 * there and the motion looks continuous, at most MAX_TRANSITION_MS. 0 (drawn
 * at once) when frames come faster than that is worth, when the number of
 * points changed (nothing to move between) or when the user asked for reduced
 * motion. (The scatter also stops animating a number of points whose last
 * animation it rendered too slowly: animationTooSlow.)
 */
export function transitionMs(intervalMs, sameCount, reducedMotion = false) {
  if (!sameCount || reducedMotion || !(intervalMs > 0)) return 0;
  const ms = Math.min(MAX_TRANSITION_MS, TRANSITION_SHARE * intervalMs);
  return ms < MIN_TRANSITION_MS ? 0 : ms;
}

/** An animation that the page renders at fewer frames a second than this is given up. */
export const MIN_ANIMATION_FPS = 30;

/**
 * Whether an animation that showed `renders` pictures in `elapsedMs` was too
 * slow to be worth it: a page without a graphics processor (software WebGL)
 * draws a large map so slowly that animating only takes time from the kernel
 * and the rest of the page.
 */
export function animationTooSlow(renders, elapsedMs) {
  return elapsedMs > 0 && (1000 * renders) / elapsedMs < MIN_ANIMATION_FPS;
}

/** Weight of the newest interval in the running estimate of the time between frames. */
const INTERVAL_WEIGHT = 0.3;

/** Anchors are drawn this many times larger than points. */
export const ANCHOR_SCALE = 3;
/** Placed rows (placed.js) are drawn this much smaller than points. */
export const PLACED_SCALE = 0.75;
/** Above this many points, opacity follows the local density. */
export const DENSITY_OPACITY_FROM = 50000;
/**
 * From this many points (placed rows and anchors included) a worker builds the
 * spatial index that hover and click search (spatial-index.js), and a draw
 * takes the newest one it has: while frames stream in, it may be a frame
 * behind. Below, the plot indexes each draw itself in a few milliseconds.
 */
export const INDEX_IN_WORKER_FROM = 50000;
/**
 * Once the shown points have stayed put this long (ms) and their own index is
 * built, they are drawn again with it if the plot's is behind.
 */
export const INDEX_QUIET_MS = 1000;

/**
 * Column-oriented points for regl-scatterplot: the placed rows first (drawn
 * under the rest), then the points, then the anchors. valueA is the colour
 * code, valueB is 0 for points, 1 for anchors and 2 for placed rows. Point i
 * is item `placed.codes.length + i` of the columns.
 */
export function toColumns(xy, anchors, codes, placed = null) {
  const p = placed ? placed.codes.length : 0;
  const n = xy.length / 2;
  const m = anchors ? anchors.length / 2 : 0;
  const x = new Float32Array(p + n + m);
  const y = new Float32Array(p + n + m);
  const valueA = new Float32Array(p + n + m);
  const valueB = new Float32Array(p + n + m);
  for (let k = 0; k < p; k++) {
    x[k] = placed.xy[2 * k];
    y[k] = placed.xy[2 * k + 1];
    valueB[k] = 2;
  }
  if (p) valueA.set(placed.codes);
  for (let i = 0; i < n; i++) {
    x[p + i] = xy[2 * i];
    y[p + i] = xy[2 * i + 1];
  }
  for (let k = 0; k < m; k++) {
    x[p + n + k] = anchors[2 * k];
    y[p + n + k] = anchors[2 * k + 1];
    valueB[p + n + k] = 1;
  }
  if (codes) valueA.set(codes.subarray(0, Math.min(codes.length, n + m)), p);
  return { x, y, valueA, valueB };
}

/**
 * The columns (from toColumns) as regl-scatterplot keeps its points, one
 * [x, y, valueA, valueB] array a point, written into `rows` when it has as many
 * (returned as it is) or else into a new array. The plot converts columns
 * into such rows itself, allocating a million small arrays a frame at 10^6
 * points (about 45 ms and their garbage); rewriting the same ones takes a
 * fraction of that. The plot reads them while it draws and when it searches
 * for the point under the pointer, so they must change only between draws.
 */
export function toRows({ x, y, valueA, valueB }, rows = null) {
  const n = x.length;
  // New rows start with fractions, so that they hold doubles from the first.
  const out = rows?.length === n ? rows : Array.from({ length: n }, () => [0.5, 0.5, 0.5, 0.5]);
  for (let i = 0; i < n; i++) {
    const row = out[i];
    row[0] = x[i];
    row[1] = y[i];
    row[2] = valueA[i];
    row[3] = valueB[i];
  }
  return out;
}

/**
 * Whether two sets of columns (from toColumns) put the points at the same
 * places, so that the plot's spatial index of one serves the other. A change
 * of colours only keeps them: at 10^6 points indexing them again took longer
 * than this comparison by two orders of magnitude.
 */
export function samePlaces(a, b) {
  if (!a || !b || a.x.length !== b.x.length) return false;
  for (let i = 0; i < a.x.length; i++) {
    if (a.x[i] !== b.x[i] || a.y[i] !== b.y[i]) return false;
  }
  return true;
}

/**
 * Create the scatter on `canvas`.
 *
 * Draw calls are serialized (regl-scatterplot refuses a draw while one is
 * running, and a draw that animates lasts until its animation ends): while
 * one draw is in flight only the latest data waits. `onDraw(ms)` is called
 * when a draw has ended, with the length of its animation (0: none).
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
  let base = 0; // placed rows drawn before the points: point i is item base + i
  let drawing = false;
  let pending = null;
  let selected = [];
  let destroyed = false;
  let positions = new Float32Array(0);
  let drawnCount = -1; // points of the last draw, anchors included
  let lastFrameAt = null;
  let interval = null; // running estimate of the time between animated frames, ms
  let renders = 0; // pictures the plot has rendered
  let tooSlow = false; // an animation of this many points was rendered too slowly
  let indexed = null; // the columns the plot's spatial index (hover, click) was built for
  let shown = null; // the data of the last draw
  let built = null; // the worker's newest index: { columns, data }
  let indexer; // undefined until the first map that large; null where workers fail
  let rows = null; // the points as the plot keeps them (toRows), rewritten every draw
  canvas.dataset.indexWorker = "unused";
  let quietTimer = null;
  const indexerFor = (count) => {
    if (count < INDEX_IN_WORKER_FROM) return null;
    if (indexer === undefined) {
      indexer = createIndexer(
        (columns, data) => {
          built = { columns, data };
          canvas.dataset.indexWorker = "running";
          catchUp(INDEX_QUIET_MS);
        },
        () => {
          indexer = null;
          built = null;
          canvas.dataset.indexWorker = "failed";
        });
      if (indexer === null) canvas.dataset.indexWorker = "unavailable";
    }
    return indexer;
  };
  const indexBehind = () => shown !== null && indexed !== shown.columns;
  // Draw the shown points again with their own index, once it is built and
  // no newer points came for `waitMs` (so not while frames stream in).
  const catchUp = (waitMs) => {
    clearTimeout(quietTimer);
    quietTimer = null;
    if (destroyed || !indexBehind() || built?.columns !== shown.columns) return;
    if (waitMs > 0) {
      quietTimer = setTimeout(() => catchUp(0), waitMs);
      return;
    }
    if (drawing || pending) return; // a newer draw takes the index
    pending = { ...shown, animate: false, catchUp: true };
    pump();
  };
  const reducedMotion = () =>
    Boolean(globalThis.matchMedia?.("(prefers-reduced-motion: reduce)")?.matches);
  // Whether the camera shows the whole plot: a resize then keeps it so. Panning
  // or zooming ends it, Fit starts it again.
  let fitted = true;
  const fitView = () => {
    plot.view(fittedView(plot.get("width"), plot.get("height")), { preventEvent: true });
    fitted = true;
    onView?.();
  };

  const subscriptions = [
    plot.subscribe("select", ({ points }) =>
      onSelect?.(points.filter((i) => i >= base && i < base + nPoints).map((i) => i - base))),
    plot.subscribe("deselect", () => onSelect?.([])),
    plot.subscribe("pointover", (i) => onHover?.(i >= base && i < base + nPoints ? i - base : -1)),
    plot.subscribe("pointout", () => onHover?.(-1)),
    plot.subscribe("draw", () => {
      renders += 1;
    }),
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
    const count = data.columns.x.length;
    if (count !== drawnCount) tooSlow = false; // another number of points: try again
    const animate = data.animate && !tooSlow;
    const ms = animate ? transitionMs(interval, count === drawnCount, reducedMotion()) : 0;
    drawnCount = count;
    const rendersBefore = renders;
    const startedAt = performance.now();
    base = data.base;
    plot.set({
      pointSize: [size, size * ANCHOR_SCALE, size * PLACED_SCALE],
      pointSizeSelected: size + 1,
      opacityBy: count > DENSITY_OPACITY_FROM ? "density" : null,
    });
    // The index this draw takes: the plot's own if no point moved, else the
    // worker's newest of as many points (maybe a frame behind), else none
    // (the plot builds one).
    let spatialIndex;
    let indexFor = data.columns;
    const worker = indexerFor(count);
    if (samePlaces(indexed, data.columns)) spatialIndex = plot.get("spatialIndex");
    else if (worker) {
      const exact = samePlaces(built?.columns, data.columns);
      if (built && built.columns.x.length === count) {
        spatialIndex = built.data;
        if (!exact) indexFor = built.columns;
      }
      if (!exact) worker.index(data.columns);
    }
    indexed = null; // until this draw has made (or kept) the index
    rows = toRows(data.columns, rows);
    plot
      .draw(rows, {
        zDataType: "categorical",
        wDataType: "categorical",
        preventFilterReset: true,
        select: selected.map((i) => i + base),
        ...(spatialIndex ? { spatialIndex } : {}),
        ...(ms > 0 ? { transition: true, transitionDuration: ms, transitionEasing: (t) => t } : {}),
      })
      .then(() => {
        indexed = indexFor;
        shown = data;
        canvas.dataset.index = indexBehind() ? "behind" : "current";
        if (ms > 0) tooSlow = animationTooSlow(renders - rendersBefore, performance.now() - startedAt);
        if (!data.catchUp) onDraw?.(ms);
        catchUp(INDEX_QUIET_MS);
      })
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
    /**
     * Draw points (interleaved xy in [-1, 1]), anchors and colour codes.
     * `animate`: a new frame of a run, moved to from the points shown (see
     * transitionMs); otherwise (a drag, a colour change) drawn at once.
     * `placed`: the placed layer under the points ({ xy, codes }, placed.js).
     */
    setData(xy, anchors, codes, { animate = false, placed = null } = {}) {
      nPoints = xy.length / 2;
      positions = xy;
      if (animate) {
        const now = performance.now();
        if (lastFrameAt !== null) {
          // A pause's long gap counts as a short one, so that the estimate recovers at once.
          const dt = Math.min(now - lastFrameAt, 2 * MAX_TRANSITION_MS);
          interval = interval === null ? dt : (1 - INTERVAL_WEIGHT) * interval + INTERVAL_WEIGHT * dt;
        }
        lastFrameAt = now;
      }
      pending = {
        n: nPoints,
        base: placed ? placed.codes.length : 0,
        animate,
        columns: toColumns(xy, anchors, codes, placed),
      };
      pump();
    },
    /** The positions last handed to setData (interleaved xy). */
    positions: () => positions,
    setPalette(colors) {
      // Same-length active and hover palettes keep each class's colour; a
      // selected point is drawn darker, with a ring. Placed rows take the
      // lighter copies after them (placed.js).
      if (colors.length) {
        const all = colors.concat(colors.map((c) => lighten(c)));
        plot.set({ pointColor: all, pointColorActive: all.map((c) => darken(c)), pointColorHover: all });
      }
    },
    select(indices) {
      selected = Array.from(indices);
      if (selected.length) plot.select(selected.map((i) => i + base), { preventEvent: true });
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
      return plot.getScreenPosition(i + base);
    },
    destroy() {
      destroyed = true;
      clearTimeout(quietTimer);
      indexer?.destroy();
      for (const s of subscriptions) plot.unsubscribe(s);
      plot.destroy();
    },
  };
}
