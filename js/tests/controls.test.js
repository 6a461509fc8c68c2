import { describe, expect, it } from "vitest";
import { inBounds } from "../src/controls.js";

describe("inBounds", () => {
  it("excludes an open end and keeps a closed one", () => {
    const lambda = { low: 0, high: null, low_open: true, high_open: true };
    expect(inBounds(lambda, 0)).toBe(false);
    expect(inBounds(lambda, 0.01)).toBe(true);
    const rho = { low: 0, high: 1, low_open: false, high_open: false };
    expect(inBounds(rho, 0)).toBe(true);
    expect(inBounds(rho, 1)).toBe(true);
    expect(inBounds(rho, 1.01)).toBe(false);
  });

  it("refuses non-numbers", () => {
    expect(inBounds({ low: null, high: null }, Number.NaN)).toBe(false);
    expect(inBounds({ low: null, high: null }, Infinity)).toBe(false);
  });
});
