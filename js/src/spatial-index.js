// The spatial index that the plot's hover and click search, built off the
// page's main thread. regl-scatterplot indexes every new set of positions
// itself unless it is handed an index: on the main thread below 10^6 points,
// and from 10^6 by copying the points, one small array each, into a worker
// (about a quarter of a second of the main thread a frame at 10^6 points);
// either way a draw is not done until its index is. Handed an index, it takes
// it as it is.

/** Points in a leaf of the tree (regl-scatterplot's own choice). */
export const INDEX_NODE_SIZE = 16;

/**
 * A k-d tree of the points (x[i], y[i]), as an ArrayBuffer in the layout that
 * regl-scatterplot reads (that of kdbush 4): an 8-byte header (0xdb, format
 * version and coordinate type, leaf size, number of points), the point ids in
 * tree order, then their coordinates as float32 pairs in the same order.
 *
 * The tree order: the points of a range [left, right] longer than a leaf
 * have, at its middle m = (left + right) >> 1, the median along the range's
 * axis, no larger coordinates before it and no smaller after it; the two halves
 * are ranges of the other axis; the whole set is a range of the x axis. The
 * function uses nothing outside itself, so that a worker can run it from its
 * source text.
 *
 * @param {Float32Array} x
 * @param {Float32Array} y
 * @param {number} nodeSize points in a leaf
 * @returns {ArrayBuffer}
 */
export function buildSpatialIndex(x, y, nodeSize) {
  const n = x.length;
  const Ids = n < 65536 ? Uint16Array : Uint32Array;
  const idsBytes = n * Ids.BYTES_PER_ELEMENT;
  const coordsAt = 8 + idsBytes + ((8 - (idsBytes % 8)) % 8);
  const data = new ArrayBuffer(coordsAt + 8 * n);
  const header = new Uint8Array(data, 0, 2);
  header[0] = 0xdb;
  header[1] = (1 << 4) + 7; // version 1; 7: coordinates are a Float32Array
  new Uint16Array(data, 2, 1)[0] = nodeSize;
  new Uint32Array(data, 4, 1)[0] = n;
  const ids = new Ids(data, 8, n);
  const xy = new Float32Array(data, coordsAt, 2 * n);
  for (let i = 0; i < n; i++) {
    ids[i] = i;
    xy[2 * i] = x[i];
    xy[2 * i + 1] = y[i];
  }
  const swap = (i, j) => {
    const id = ids[i];
    ids[i] = ids[j];
    ids[j] = id;
    const a = xy[2 * i];
    const b = xy[2 * i + 1];
    xy[2 * i] = xy[2 * j];
    xy[2 * i + 1] = xy[2 * j + 1];
    xy[2 * j] = a;
    xy[2 * j + 1] = b;
  };
  // Puts the point with the k-th smallest coordinate along `axis` at k, no
  // larger ones before it and no smaller ones after (quickselect, the pivot
  // the median of the range's first, middle and last point).
  const select = (k, left, right, axis) => {
    while (right > left) {
      const a = xy[2 * left + axis];
      const b = xy[2 * ((left + right) >> 1) + axis];
      const c = xy[2 * right + axis];
      const pivot = a < b ? (b < c ? b : a < c ? c : a) : a < c ? a : b < c ? c : b;
      let i = left;
      let j = right;
      while (i <= j) {
        while (xy[2 * i + axis] < pivot) i++;
        while (xy[2 * j + axis] > pivot) j--;
        if (i <= j) {
          swap(i, j);
          i++;
          j--;
        }
      }
      // Now [left, j] <= pivot, [i, right] >= pivot and what lies between equals it.
      if (k <= j) right = j;
      else if (k >= i) left = i;
      else return;
    }
  };
  const ranges = [0, n - 1, 0];
  while (ranges.length) {
    const axis = ranges.pop();
    const right = ranges.pop();
    const left = ranges.pop();
    if (right - left <= nodeSize) continue;
    const m = (left + right) >> 1;
    select(m, left, right, axis);
    ranges.push(left, m - 1, 1 - axis, m + 1, right, 1 - axis);
  }
  return data;
}

/**
 * A worker that indexes the positions it is given, one set at a time: a set
 * given while it works waits, and a newer one replaces it. `onIndex(columns,
 * data)` receives each index (an ArrayBuffer from buildSpatialIndex) with the
 * columns ({x, y}, left untouched) it was built for. `onFail()` is called once
 * if the worker cannot run (a page that forbids workers from blob URLs).
 * Returns null where the page has no workers.
 */
export function createIndexer(onIndex, onFail) {
  if (typeof Worker !== "function" || typeof Blob !== "function" || !globalThis.URL?.createObjectURL) {
    return null;
  }
  const source = `const buildSpatialIndex = ${buildSpatialIndex.toString()};
onmessage = (event) => {
  const { x, y, nodeSize } = event.data;
  const data = buildSpatialIndex(x, y, nodeSize);
  postMessage(data, [data]);
};`;
  let worker;
  try {
    const url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
    worker = new Worker(url, { name: "nbembed-spatial-index" });
    URL.revokeObjectURL(url);
  } catch {
    return null;
  }
  let working = null; // the columns being indexed
  let waiting = null; // the newest columns given since
  let failed = false;
  const start = (columns) => {
    working = columns;
    const x = columns.x.slice();
    const y = columns.y.slice();
    worker.postMessage({ x, y, nodeSize: INDEX_NODE_SIZE }, [x.buffer, y.buffer]);
  };
  worker.onmessage = (event) => {
    const columns = working;
    working = null;
    onIndex(columns, event.data);
    if (waiting) {
      const next = waiting;
      waiting = null;
      start(next);
    }
  };
  worker.onerror = (event) => {
    event.preventDefault?.();
    if (failed) return;
    failed = true;
    worker.terminate();
    onFail?.();
  };
  return {
    /** Index these columns ({x, y} Float32Arrays) as soon as the worker is free. */
    index(columns) {
      if (failed) return;
      if (working) waiting = columns;
      else start(columns);
    },
    destroy() {
      failed = true;
      worker.terminate();
    },
  };
}
