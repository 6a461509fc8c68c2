import { describe, expect, it } from "vitest";
import {
  MAX_TRANSITION_MS,
  MIN_TRANSITION_MS,
  TRANSITION_SHARE,
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
