import { describe, expect, it } from "vitest";
import {
  MAX_TRANSITION_MS,
  MIN_ANIMATION_FPS,
  MIN_TRANSITION_MS,
  TRANSITION_SHARE,
  animationTooSlow,
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
