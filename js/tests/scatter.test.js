import { describe, expect, it } from "vitest";
import {
  MAX_TRANSITION_MS,
  MIN_ANIMATION_FPS,
  MIN_TRANSITION_MS,
  TRANSITION_SHARE,
  animationTooSlow,
  samePlaces,
  toColumns,
  toRows,
  transitionMs,
} from "../src/scatter.js";

describe("the animation between two frames", () => {
  it("takes most of the time between frames, so that it ends as the next one comes", () => {
    expect(transitionMs(100, true)).toBeCloseTo(TRANSITION_SHARE * 100);
    expect(transitionMs(100, true)).toBeLessThan(100);
  });

  it("lasts at most MAX_TRANSITION_MS when frames are far apart", () => {
    expect(transitionMs(1000, true)).toBe(MAX_TRANSITION_MS);
    expect(transitionMs(60_000, true)).toBe(MAX_TRANSITION_MS);
  });

  it("is left out when frames come fast, the points changed in number, or for reduced motion", () => {
    expect(transitionMs(MIN_TRANSITION_MS / TRANSITION_SHARE - 1, true)).toBe(0);
    expect(transitionMs(100, false)).toBe(0);
    expect(transitionMs(100, true, true)).toBe(0);
    expect(transitionMs(null, true)).toBe(0);
    expect(transitionMs(Number.NaN, true)).toBe(0);
  });
});

describe("giving up animations the page renders too slowly", () => {
  it("keeps an animation rendered at the screen's rate and drops one below MIN_ANIMATION_FPS", () => {
    expect(animationTooSlow(18, 300)).toBe(false); // 60 pictures a second
    expect(animationTooSlow(3, 300)).toBe(true); // 10 a second: software WebGL at 10^5 points
    expect(animationTooSlow((MIN_ANIMATION_FPS * 300) / 1000 - 1, 300)).toBe(true);
    expect(animationTooSlow(0, 0)).toBe(false);
  });
});

describe("keeping the spatial index when only the colours change", () => {
  const xy = Float32Array.from([0, 0, 0.5, -0.5, 1, 1]);
  it("says the same places for the same positions with other colours", () => {
    const before = toColumns(xy, null, Uint16Array.from([0, 1, 2]));
    const after = toColumns(Float32Array.from(xy), null, Uint16Array.from([2, 2, 0]));
    expect(samePlaces(before, after)).toBe(true);
  });

  it("says other places when a point moved, one was added, or nothing was indexed yet", () => {
    const before = toColumns(xy, null, null);
    const moved = Float32Array.from(xy);
    moved[3] = -0.25;
    expect(samePlaces(before, toColumns(moved, null, null))).toBe(false);
    expect(samePlaces(before, toColumns(xy, Float32Array.from([0.2, 0.2]), null))).toBe(false);
    expect(samePlaces(null, before)).toBe(false);
  });
});

describe("the points as the plot keeps them", () => {
  const xy = Float32Array.from([0, 0, 0.5, -0.5, 1, 1]);
  it("holds a point's x, y, colour code and kind in a row, anchors after the points", () => {
    const columns = toColumns(xy, Float32Array.from([0.25, 0.75]), Uint16Array.from([3, 1, 2, 4]));
    expect(toRows(columns)).toEqual([
      [0, 0, 3, 0],
      [0.5, -0.5, 1, 0],
      [1, 1, 2, 0],
      [0.25, 0.75, 4, 1],
    ]);
  });

  it("rewrites the rows it is given when they are as many, else makes new ones", () => {
    const rows = toRows(toColumns(xy, null, null));
    const first = rows[0];
    const moved = Float32Array.from(xy);
    moved[0] = -1;
    const again = toRows(toColumns(moved, null, Uint16Array.from([5, 5, 5])), rows);
    expect(again).toBe(rows);
    expect(again[0]).toBe(first);
    expect(again[0]).toEqual([-1, 0, 5, 0]);
    const more = toRows(toColumns(moved, Float32Array.from([0.1, 0.2]), null), rows);
    expect(more).not.toBe(rows);
    expect(more).toHaveLength(4);
  });
});
