// Force arrows: for the hovered or selected points, one arrow per term of the
// gradient (Python's `forces` trait, from run.forces()), on a canvas over the
// plot, with a legend of the terms and the phase of the run. On the same
// canvas, lines from the hovered point to its input neighbours (largest P)
// and output neighbours (nearest in the embedding): the `neighbours` trait.
import { h, layerRedraw } from "./dom.js";
import { pointsToScreen } from "./lasso.js";

/** Colours of the terms, in the order the run lists them. */
export const TERM_COLORS = ["#d32f2f", "#1565c0", "#2e7d32", "#ef6c00", "#6a1b9a", "#00838f"];
/**
 * Colours, dash patterns and end rings of the neighbour lines. Inside a tight
 * cluster a neighbour lies a pixel or two from the hovered point, where a line
 * alone is lost among the points: each neighbour also gets a ring (input the
 * wider, so a point that is both shows two), and lines and rings are drawn over
 * a white halo that sets them off from the points beneath.
 */
export const NEIGHBOUR_STYLES = {
  input: { color: "#00897b", dash: [], ring: 5, label: "input neighbours (largest P)" },
  output: { color: "#8e24aa", dash: [4, 3], ring: 3, label: "output neighbours (nearest here)" },
};
/** Width in pixels of the neighbour lines and rings, and of the white halo each side. */
export const LINE_PX = 1.5;
export const HALO_PX = 2;
/** Length in pixels of the longest arrow drawn. */
export const LONGEST_PX = 60;

/**
 * The arrows to draw, in screen pixels: [{term, x0, y0, x1, y1}], all scaled by
 * one factor so that the longest is `longest` px (lengths keep their ratios).
 * Points outside `xy` and zero vectors are left out.
 */
export function arrowSegments(forces, xy, transform, longest = LONGEST_PX) {
  const points = forces?.points ?? [];
  const terms = forces?.terms ?? [];
  const n = xy.length / 2;
  // The screen map is affine: its linear part turns plane vectors into pixels.
  const [o, ex, ey] = [0, 1, 2].map((k) => pointsToScreen([k === 1 ? 1 : 0, k === 2 ? 1 : 0], transform));
  const [a, b, c, d] = [ex[0] - o[0], ex[1] - o[1], ey[0] - o[0], ey[1] - o[1]];
  const raw = [];
  let max = 0;
  points.forEach((i, p) => {
    if (!(i >= 0 && i < n)) return;
    const [sx, sy] = pointsToScreen([xy[2 * i], xy[2 * i + 1]], transform);
    terms.forEach((term, t) => {
      const v = term.vectors?.[p];
      if (!v) return;
      const [dx, dy] = [a * v[0] + c * v[1], b * v[0] + d * v[1]];
      const length = Math.hypot(dx, dy);
      if (!(length > 0) || !Number.isFinite(length)) return;
      max = Math.max(max, length);
      raw.push({ term: t, sx, sy, dx, dy });
    });
  });
  const scale = max > 0 ? longest / max : 0;
  return raw.map(({ term, sx, sy, dx, dy }) => ({ term, x0: sx, y0: sy, x1: sx + dx * scale, y1: sy + dy * scale }));
}

/** Lines in screen pixels from the hovered point to its neighbours: [{kind, x0, y0, x1, y1}]. */
export function neighbourLines(neighbours, xy, transform) {
  const n = xy.length / 2;
  const i = neighbours?.point;
  if (!(i >= 0 && i < n)) return [];
  const [x0, y0] = pointsToScreen([xy[2 * i], xy[2 * i + 1]], transform);
  const lines = [];
  for (const kind of ["input", "output"]) {
    for (const j of neighbours[kind] ?? []) {
      if (!(j >= 0 && j < n)) continue;
      const [x1, y1] = pointsToScreen([xy[2 * j], xy[2 * j + 1]], transform);
      lines.push({ kind, x0, y0, x1, y1 });
    }
  }
  return lines;
}

/**
 * The neighbours: a line from the hovered point to each (unless its ring
 * covers it) and a ring around each. Every halo is drawn first, so that none
 * covers another neighbour's colour; then lines (dashed by kind) and solid
 * rings, the input neighbours' last.
 */
export function drawNeighbours(ctx, lines) {
  const shapes = lines.map((line) => {
    const { ring } = NEIGHBOUR_STYLES[line.kind];
    return { ...line, ring, withLine: Math.hypot(line.x1 - line.x0, line.y1 - line.y0) > ring };
  });
  const strokePaths = (color, width, dash, items, { lines: withLines, rings }) => {
    if (!items.length) return;
    ctx.strokeStyle = color;
    ctx.lineWidth = width;
    ctx.setLineDash(dash);
    ctx.beginPath();
    for (const { x0, y0, x1, y1, ring, withLine } of items) {
      if (withLines && withLine) {
        ctx.moveTo(x0, y0);
        ctx.lineTo(x1, y1);
      }
      if (rings) {
        ctx.moveTo(x1 + ring, y1);
        ctx.arc(x1, y1, ring, 0, 2 * Math.PI);
      }
    }
    ctx.stroke();
  };
  strokePaths("#ffffff", LINE_PX + 2 * HALO_PX, [], shapes, { lines: true, rings: true });
  for (const kind of ["output", "input"]) {
    const style = NEIGHBOUR_STYLES[kind];
    const ofKind = shapes.filter((shape) => shape.kind === kind);
    strokePaths(style.color, LINE_PX, style.dash, ofKind.filter((shape) => shape.withLine), { lines: true });
    strokePaths(style.color, LINE_PX, [], ofKind, { rings: true });
  }
  ctx.setLineDash([]);
}

function drawArrow(ctx, { x0, y0, x1, y1 }, color) {
  const angle = Math.atan2(y1 - y0, x1 - x0);
  const head = Math.min(7, Math.hypot(x1 - x0, y1 - y0) / 2);
  ctx.strokeStyle = ctx.fillStyle = color;
  ctx.lineWidth = 2;
  ctx.beginPath();
  ctx.moveTo(x0, y0);
  ctx.lineTo(x1, y1);
  ctx.stroke();
  ctx.beginPath();
  ctx.moveTo(x1, y1);
  ctx.lineTo(x1 - head * Math.cos(angle - 0.45), y1 - head * Math.sin(angle - 0.45));
  ctx.lineTo(x1 - head * Math.cos(angle + 0.45), y1 - head * Math.sin(angle + 0.45));
  ctx.closePath();
  ctx.fill();
}

/**
 * The arrows layer, its "forces" and "neighbours" checkboxes (the `show_forces`
 * and `show_neighbours` traits) and its legend.
 * @returns {canvas, toggles, legend, attach(scatter), hover(i), redraw()}
 */
export function createArrowsLayer(model, disposer, root) {
  const canvas = h("canvas", { className: "nbembed-arrows", "data-role": "arrows" });
  const checkbox = h("input", { type: "checkbox", "data-role": "show-forces" });
  const neighboursBox = h("input", { type: "checkbox", "data-role": "show-neighbours" });
  const toggles = [
    h("label", { className: "nbembed-row", title: "Draw what pushes the hovered or selected points: one arrow per term of the gradient" }, [
      checkbox,
      "forces",
    ]),
    h("label", { className: "nbembed-row", title: "Link the hovered point to its input neighbours (largest P) and its nearest points in the embedding" }, [
      neighboursBox,
      "neighbours",
    ]),
  ];
  const legend = h("div", { className: "nbembed-forces-legend", "data-role": "forces-legend" });
  let scatter = null;
  let hovered = -1;

  const redraw = layerRedraw(canvas, disposer, (area) => {
    let [segments, lines] = [[], []];
    if (area && scatter) {
      const transform = { ...scatter.transform(), width: area.width, height: area.height };
      if (neighboursBox.checked) lines = neighbourLines(model.get("neighbours"), scatter.positions(), transform);
      drawNeighbours(area.ctx, lines);
      if (checkbox.checked) segments = arrowSegments(model.get("forces"), scatter.positions(), transform);
      for (const segment of segments) drawArrow(area.ctx, segment, TERM_COLORS[segment.term % TERM_COLORS.length]);
    }
    root.dataset.arrowsDrawn = String(segments.length);
    root.dataset.neighboursDrawn = String(lines.length);
  });
  const showLegend = () => {
    const forces = model.get("forces") ?? {};
    const entry = (key, color, label) =>
      h("span", { className: "nbembed-legend-entry", "data-term": key }, [
        h("span", { className: "nbembed-swatch", style: { background: color } }),
        label,
      ]);
    legend.replaceChildren(
      ...(forces.terms ?? []).map((term, t) => entry(term.name, TERM_COLORS[t % TERM_COLORS.length], term.label ?? term.name)),
    );
    if (forces.phase) legend.append(h("span", { text: `(${forces.phase})` }));
    const neighbours = model.get("neighbours") ?? {};
    for (const kind of ["input", "output"]) {
      if (neighbours[kind]?.length) legend.append(entry(kind, NEIGHBOUR_STYLES[kind].color, NEIGHBOUR_STYLES[kind].label));
    }
    legend.hidden = !legend.childElementCount;
    redraw();
  };
  const sync = () => {
    checkbox.checked = Boolean(model.get("show_forces"));
    neighboursBox.checked = Boolean(model.get("show_neighbours"));
    redraw();
  };
  for (const [box, name] of [[checkbox, "show_forces"], [neighboursBox, "show_neighbours"]]) {
    disposer.listen(box, "change", () => {
      model.set(name, box.checked);
      model.save_changes();
      redraw();
    });
    disposer.onModel(model, `change:${name}`, sync);
  }
  disposer.onModel(model, "change:forces", showLegend);
  disposer.onModel(model, "change:neighbours", showLegend);
  sync();
  showLegend();
  return {
    canvas,
    toggles,
    legend,
    attach(s) {
      scatter = s;
      redraw();
    },
    /** The pointer is over point i (-1: none): Python computes its forces and neighbours. */
    hover(i) {
      if (!(checkbox.checked || neighboursBox.checked) || i === hovered) return;
      hovered = i;
      model.set("hovered", i);
      model.save_changes();
    },
    redraw,
  };
}
