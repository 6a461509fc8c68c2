import KDBush from "kdbush";
import { describe, expect, it } from "vitest";
import { INDEX_NODE_SIZE, buildSpatialIndex } from "../src/spatial-index.js";

/** Deterministic pseudo-random numbers in [0, 1). */
function random(seed) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function points(n, seed, { grid = 0 } = {}) {
  const next = random(seed);
  const x = new Float32Array(n);
  const y = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    // grid > 0 rounds the coordinates onto a few values: many equal keys.
    x[i] = grid ? Math.round(next() * grid) / grid : 2 * next() - 1;
    y[i] = grid ? Math.round(next() * grid) / grid : 2 * next() - 1;
  }
  return { x, y };
}

function inBox({ x, y }, [x0, y0, x1, y1]) {
  const hits = [];
  for (let i = 0; i < x.length; i++) if (x[i] >= x0 && x[i] <= x1 && y[i] >= y0 && y[i] <= y1) hits.push(i);
  return hits;
}

function inCircle({ x, y }, cx, cy, r) {
  const hits = [];
  for (let i = 0; i < x.length; i++) if ((x[i] - cx) ** 2 + (y[i] - cy) ** 2 <= r * r) hits.push(i);
  return hits;
}

const sorted = (a) => Array.from(a).sort((p, q) => p - q);

describe("the spatial index built for the plot", () => {
  const cases = [
    ["a few points", points(10, 1)],
    ["1000 points", points(1000, 2)],
    ["70 000 points (32-bit ids)", points(70_000, 3)],
    ["points on a 5 x 5 grid (ties everywhere)", points(5000, 4, { grid: 4 })],
    ["one place for every point", { x: new Float32Array(300).fill(0.5), y: new Float32Array(300).fill(-0.25) }],
  ];

  it.each(cases)("is read by the plot's index reader and finds what brute force finds: %s", (_, pts) => {
    const index = KDBush.from(buildSpatialIndex(pts.x, pts.y, INDEX_NODE_SIZE));
    expect(index.numItems).toBe(pts.x.length);
    const next = random(7);
    for (let q = 0; q < 50; q++) {
      const [a, b, c, d] = [next(), next(), next(), next()].map((v) => 2.2 * v - 1.1);
      const box = [Math.min(a, b), Math.min(c, d), Math.max(a, b), Math.max(c, d)];
      expect(sorted(index.range(...box))).toEqual(inBox(pts, box));
      const r = 0.3 * next();
      expect(sorted(index.within(a, c, r))).toEqual(inCircle(pts, a, c, r));
    }
    expect(sorted(index.range(0.5, -0.25, 0.5, -0.25))).toEqual(inBox(pts, [0.5, -0.25, 0.5, -0.25]));
  });

  it("holds the same coordinates in tree order, every id once", () => {
    const pts = points(2000, 5);
    const index = KDBush.from(buildSpatialIndex(pts.x, pts.y, INDEX_NODE_SIZE));
    expect(sorted(index.ids)).toEqual(Array.from({ length: 2000 }, (_, i) => i));
    for (let k = 0; k < 2000; k++) {
      expect(index.coords[2 * k]).toBe(pts.x[index.ids[k]]);
      expect(index.coords[2 * k + 1]).toBe(pts.y[index.ids[k]]);
    }
  });

  it("runs from its source text alone, as the worker runs it", () => {
    const fromSource = new Function(`return ${buildSpatialIndex.toString()}`)();
    const pts = points(3000, 6);
    const a = new Uint8Array(buildSpatialIndex(pts.x, pts.y, INDEX_NODE_SIZE));
    const b = new Uint8Array(fromSource(pts.x, pts.y, INDEX_NODE_SIZE));
    expect(b).toEqual(a);
  });

  it("indexes no points", () => {
    const index = KDBush.from(buildSpatialIndex(new Float32Array(0), new Float32Array(0), INDEX_NODE_SIZE));
    expect(index.numItems).toBe(0);
    expect(index.range(-1, -1, 1, 1)).toEqual([]);
  });
});
