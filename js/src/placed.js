// The placed layer (nbembed/widget/placing.py): rows put on the map by the
// method's transform, drawn smaller and lighter under the live points. Python
// sends, for each drawn row, its nearest live point (uint32) and its offset
// from it (float32 x, y in the embedding's units); the row is drawn at that
// point's position plus the offset times the frame's scale, so the layer
// follows the map while the run goes on.

/** How far towards white a placed row's colour is from its nearest live point's. */
export const PLACED_LIGHTEN = 0.65;

/** A lighter shade of a "#rrggbb" colour (others are returned as they are). */
export function lighten(color, amount = PLACED_LIGHTEN) {
  const rgb = [1, 3, 5].map((i) => parseInt(String(color).slice(i, i + 2), 16));
  if (String(color).length !== 7 || rgb.some(Number.isNaN)) return color;
  const mixed = rgb.map((c) => Math.round(c + (255 - c) * amount));
  return `#${mixed.map((c) => c.toString(16).padStart(2, "0")).join("")}`;
}

/**
 * Positions (interleaved xy) and colour codes of the placed rows.
 *
 * `refs` (Uint32Array) and `offsets` (Float32Array, interleaved) come from
 * Python; `xy` are the live points' positions on the page, `codes` their
 * colour codes (or null) and `paletteSize` the number of colours, to which a
 * placed row's code is added (its colour is the lightened copy of its live
 * point's). Null when there is nothing to draw, or when a reference names a
 * point the map does not have (the layer belongs to an earlier set of points).
 */
export function placedLayer(refs, offsets, scale, xy, codes, paletteSize) {
  const m = refs ? refs.length : 0;
  const n = xy.length / 2;
  if (!m || offsets.length !== 2 * m || !(scale > 0)) return null;
  const positions = new Float32Array(2 * m);
  const placedCodes = new Float32Array(m);
  for (let k = 0; k < m; k += 1) {
    const r = refs[k];
    if (r >= n) return null;
    positions[2 * k] = xy[2 * r] + offsets[2 * k] * scale;
    positions[2 * k + 1] = xy[2 * r + 1] + offsets[2 * k + 1] * scale;
    placedCodes[k] = (codes && r < codes.length ? codes[r] : 0) + paletteSize;
  }
  return { xy: positions, codes: placedCodes };
}
