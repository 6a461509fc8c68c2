// Positions laid out as Python's encode_positions sends them, for tests: four
// float64 bounds (x_min, y_min, x_max, y_max), then one uint16 code per
// coordinate, in a DataView `offset` bytes into a larger buffer (as ipywidgets
// delivers binary values).
import { BOUNDS_BYTES, POSITION_STEPS } from "../src/codecs.js";

export function positionsView(xy, offset = 16) {
  const n = xy.length / 2;
  const low = [0, 1].map((a) => Math.min(...xy.filter((_, k) => k % 2 === a)));
  const high = [0, 1].map((a) => Math.max(...xy.filter((_, k) => k % 2 === a)));
  const buffer = new ArrayBuffer(offset + BOUNDS_BYTES + 4 * n + 3);
  const view = new DataView(buffer, offset, BOUNDS_BYTES + 4 * n);
  [...low, ...high].forEach((v, k) => view.setFloat64(8 * k, v, true));
  for (let k = 0; k < xy.length; k++) {
    const a = k % 2;
    const step = (high[a] - low[a]) / POSITION_STEPS;
    const q = step > 0 ? Math.round((xy[k] - low[a]) / step) : 0;
    view.setUint16(BOUNDS_BYTES + 2 * k, Math.min(POSITION_STEPS, Math.max(0, q)), true);
  }
  return view;
}
