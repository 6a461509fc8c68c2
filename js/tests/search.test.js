import { describe, expect, it } from "vitest";
import { searchPoints } from "../src/search.js";

describe("search", () => {
  it("finds indices, ignoring those out of range and repeats", () => {
    expect(Array.from(searchPoints(" 3, 1 3 99", 5))).toEqual([1, 3]);
  });

  it("finds hover text without regard to case", () => {
    expect(Array.from(searchPoints("an", 4, ["Ant", "bee", "BANANA", "cat"]))).toEqual([0, 2]);
    expect(Array.from(searchPoints("zebra", 4, ["Ant"]))).toEqual([]);
  });

  it("finds nothing for an empty query", () => {
    expect(searchPoints("   ", 4, ["a"]).length).toBe(0);
  });
});
