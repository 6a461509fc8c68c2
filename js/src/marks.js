// Constraint marks over the plot: labelled points are outlined, each must-link
// group is linked to its centre, each cannot-link is a dashed line between the
// centres of its two selections. Python sends them as one uint32 buffer whose
// layout is described in nbembed/widget/marks.py: labels and groups per point,
// then the cannot-links' selections, never a list of pairs.
import { pointsToScreen } from "./lasso.js";

/** Colours of must-link groups (dark, so they read over the class colours). */
export const GROUP_COLORS = ["#37474f", "#6a1b9a", "#1b5e20", "#bf360c", "#0d47a1", "#4e342e"];
export const CANNOT_COLOR = "#c62828";
export const OUTLINE_COLOR = "#111111";

/**
 * The marks of `n` points from the uint32 buffer, or null when it is empty.
 * Throws a RangeError for a buffer that does not fit the layout.
 */
export function decodeMarks(u32, n) {
  if (!u32.length) return null;
  const head = 2 * n + 1;
  if (u32.length < head) throw new RangeError(`marks of ${u32.length} numbers for ${n} points`);
  const count = u32[2 * n];
  const offsets = u32.subarray(head, head + 2 * count + 1);
  const members = u32.subarray(head + 2 * count + 1);
  if (offsets.length !== 2 * count + 1 || offsets[0] !== 0 || offsets[2 * count] !== members.length) {
    throw new RangeError(`marks with ${count} cannot-link(s) do not fit their offsets`);
  }
  const cannotOf = new Map();
  for (let s = 0; s < 2 * count; s++) {
    if (offsets[s + 1] < offsets[s]) throw new RangeError("cannot-link offsets decrease");
    for (let k = offsets[s]; k < offsets[s + 1]; k++) {
      const i = members[k];
      if (i >= n) throw new RangeError(`cannot-link point ${i} is outside [0, ${n})`);
      if (!cannotOf.has(i)) cannotOf.set(i, []);
      cannotOf.get(i).push(s);
    }
  }
  const labels = u32.subarray(0, n);
  const groups = u32.subarray(n, 2 * n);
  let nGroups = 0;
  let nLabelled = 0;
  for (let i = 0; i < n; i++) {
    if (groups[i] > nGroups) nGroups = groups[i];
    if (labels[i]) nLabelled += 1;
  }
  // Members of each group, group by group (a counting sort), so that drawing
  // costs the number of grouped points, not points times groups.
  const groupStart = new Uint32Array(nGroups + 2);
  for (let i = 0; i < n; i++) if (groups[i]) groupStart[groups[i] + 1] += 1;
  for (let g = 1; g <= nGroups + 1; g++) groupStart[g] += groupStart[g - 1];
  const groupMembers = new Uint32Array(groupStart[nGroups + 1]);
  const fill = groupStart.slice();
  for (let i = 0; i < n; i++) if (groups[i]) groupMembers[fill[groups[i]]++] = i;
  return { n, labels, groups, nGroups, groupStart, groupMembers, nLabelled, count, offsets, members, cannotOf };
}

/** What point `i` is in: "label zero · must-link group 2 · cannot-link 1 (A)", or "". */
export function describeMarks(marks, i, classNames = []) {
  if (!marks || i < 0 || i >= marks.n) return "";
  const parts = [];
  const label = marks.labels[i];
  if (label) parts.push(`label ${classNames[label - 1] ?? `class ${label - 1}`}`);
  if (marks.groups[i]) parts.push(`must-link group ${marks.groups[i]}`);
  for (const s of marks.cannotOf.get(i) ?? []) {
    parts.push(`cannot-link ${(s >> 1) + 1} (${s & 1 ? "B" : "A"})`);
  }
  return parts.join(" · ");
}

/**
 * Centres (screen pixels) of the must-link groups, `2 * (nGroups + 1)` numbers
 * with group g at [2g, 2g + 1], and of the cannot-links' selections, `4 * count`
 * numbers with selection s at [2s, 2s + 1].
 */
export function markCentres(marks, screen) {
  const groups = new Float64Array(2 * (marks.nGroups + 1));
  const sizes = new Float64Array(marks.nGroups + 1);
  for (let i = 0; i < marks.n; i++) {
    const g = marks.groups[i];
    if (!g) continue;
    groups[2 * g] += screen[2 * i];
    groups[2 * g + 1] += screen[2 * i + 1];
    sizes[g] += 1;
  }
  for (let g = 1; g <= marks.nGroups; g++) {
    if (sizes[g]) {
      groups[2 * g] /= sizes[g];
      groups[2 * g + 1] /= sizes[g];
    }
  }
  const sides = new Float64Array(4 * marks.count);
  for (let s = 0; s < 2 * marks.count; s++) {
    const [start, end] = [marks.offsets[s], marks.offsets[s + 1]];
    for (let k = start; k < end; k++) {
      sides[2 * s] += screen[2 * marks.members[k]];
      sides[2 * s + 1] += screen[2 * marks.members[k] + 1];
    }
    if (end > start) {
      sides[2 * s] /= end - start;
      sides[2 * s + 1] /= end - start;
    }
  }
  return { groups, sides, sizes };
}

/**
 * Opacity of the outlines of `nLabelled` labelled points: fainter as there are
 * more, so that where many are labelled the points' own colours still show.
 */
export function outlineAlpha(nLabelled) {
  return Math.min(0.6, Math.max(0.15, 8 / Math.sqrt(Math.max(nLabelled, 1))));
}

/**
 * Draw the marks of the points `xy` (as the scatter shows them through
 * `transform`) into the 2-D context `ctx`; return how many marks were drawn.
 * `outlineLabels` false leaves labelled points without an outline (when the
 * points are coloured by their label, the colour already says it).
 */
export function drawMarks(ctx, marks, xy, transform, { radius = 4, outlineLabels = true } = {}) {
  if (!marks || xy.length !== 2 * marks.n) return 0;
  // Nothing to draw: no need for the screen positions of every point.
  if (!marks.nGroups && !marks.count && !(outlineLabels && marks.nLabelled)) return 0;
  const screen = pointsToScreen(xy, transform);
  const { groups, sides, sizes } = markCentres(marks, screen);
  let drawn = 0;
  ctx.save();
  ctx.lineWidth = 1;
  for (let g = 1; g <= marks.nGroups; g++) {
    // Big groups get fainter links, so that their points stay visible.
    ctx.globalAlpha = Math.min(0.45, Math.max(0.05, 6 / Math.sqrt(sizes[g] || 1)));
    ctx.strokeStyle = GROUP_COLORS[(g - 1) % GROUP_COLORS.length];
    ctx.beginPath();
    for (let k = marks.groupStart[g]; k < marks.groupStart[g + 1]; k++) {
      const i = marks.groupMembers[k];
      ctx.moveTo(screen[2 * i], screen[2 * i + 1]);
      ctx.lineTo(groups[2 * g], groups[2 * g + 1]);
    }
    ctx.stroke();
    drawn += 1;
  }
  if (outlineLabels && marks.nLabelled) {
    ctx.globalAlpha = outlineAlpha(marks.nLabelled);
    ctx.strokeStyle = OUTLINE_COLOR;
    ctx.beginPath();
    for (let i = 0; i < marks.n; i++) {
      if (!marks.labels[i]) continue;
      ctx.moveTo(screen[2 * i] + radius, screen[2 * i + 1]);
      ctx.arc(screen[2 * i], screen[2 * i + 1], radius, 0, 2 * Math.PI);
    }
    ctx.stroke();
    drawn += marks.nLabelled;
  }
  ctx.globalAlpha = 1;
  ctx.font = "bold 11px sans-serif";
  for (let g = 1; g <= marks.nGroups; g++) {
    ctx.fillStyle = GROUP_COLORS[(g - 1) % GROUP_COLORS.length];
    ctx.beginPath();
    ctx.arc(groups[2 * g], groups[2 * g + 1], 3, 0, 2 * Math.PI);
    ctx.fill();
    ctx.fillText(String(g), groups[2 * g] + 5, groups[2 * g + 1] - 5);
  }
  ctx.strokeStyle = CANNOT_COLOR;
  ctx.fillStyle = CANNOT_COLOR;
  ctx.lineWidth = 2;
  for (let c = 0; c < marks.count; c++) {
    const [ax, ay, bx, by] = sides.subarray(4 * c, 4 * c + 4);
    ctx.setLineDash([6, 4]);
    ctx.beginPath();
    ctx.moveTo(ax, ay);
    ctx.lineTo(bx, by);
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.fillText(`${c + 1}A`, ax + 5, ay + 12);
    ctx.fillText(`${c + 1}B`, bx + 5, by + 12);
    drawn += 1;
  }
  ctx.restore();
  return drawn;
}

export const PIN_COLOR = "#e65100";

/**
 * Draw a diamond around each pinned point (`pinned`: indices) of `xy` as the
 * scatter shows them through `transform`; return how many were drawn.
 */
export function drawPins(ctx, pinned, xy, transform, { radius = 4 } = {}) {
  const n = xy.length >> 1;
  const at = [];
  for (const i of pinned) if (i < n) at.push(xy[2 * i], xy[2 * i + 1]);
  if (!at.length) return 0;
  const screen = pointsToScreen(at, transform);
  const r = radius + 2;
  ctx.save();
  ctx.strokeStyle = PIN_COLOR;
  ctx.lineWidth = 2;
  ctx.beginPath();
  for (let k = 0; k < screen.length; k += 2) {
    const [x, y] = [screen[k], screen[k + 1]];
    ctx.moveTo(x, y - r);
    ctx.lineTo(x + r, y);
    ctx.lineTo(x, y + r);
    ctx.lineTo(x - r, y);
    ctx.closePath();
  }
  ctx.stroke();
  ctx.restore();
  return at.length / 2;
}
