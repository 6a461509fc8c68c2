import { describe, expect, it } from "vitest";
import { placedText } from "../src/controls.js";
import { lighten, placedLayer } from "../src/placed.js";
import { toColumns } from "../src/scatter.js";

describe("placed layer", () => {
  it("draws each row at its live point plus its offset times the frame's scale", () => {
    const xy = Float32Array.of(0, 0, 0.5, -0.5);
    const refs = Uint32Array.of(1, 0, 1);
    const offsets = Float32Array.of(1, 2, -1, 0, 0, 0);
    const layer = placedLayer(refs, offsets, 0.1, xy, Uint16Array.of(3, 4), 5);
    expect(Array.from(layer.xy)).toEqual(Array.from(Float32Array.of(0.6, -0.3, -0.1, 0, 0.5, -0.5)));
    // the lighter copy of the live point's colour comes after the palette's colours
    expect(Array.from(layer.codes)).toEqual([4 + 5, 3 + 5, 4 + 5]);
  });

  it("draws nothing for an empty, inconsistent or outdated layer", () => {
    const xy = Float32Array.of(0, 0, 1, 1);
    expect(placedLayer(null, null, 1, xy, null, 2)).toBeNull();
    expect(placedLayer(new Uint32Array(0), new Float32Array(0), 1, xy, null, 2)).toBeNull();
    expect(placedLayer(Uint32Array.of(0), Float32Array.of(1), 1, xy, null, 2)).toBeNull();
    expect(placedLayer(Uint32Array.of(2), Float32Array.of(0, 0), 1, xy, null, 2)).toBeNull();
    expect(placedLayer(Uint32Array.of(1), Float32Array.of(0, 0), 0, xy, null, 2)).toBeNull();
    expect(Array.from(placedLayer(Uint32Array.of(1), Float32Array.of(0, 0), 1, xy, null, 2).codes)).toEqual([2]);
  });

  it("puts the placed rows first in the scatter's columns, the points after them", () => {
    const cols = toColumns(Float32Array.of(1, 2), Float32Array.of(3, 4), Uint16Array.of(1, 0),
      { xy: Float32Array.of(5, 6, 7, 8), codes: Float32Array.of(3, 2) });
    expect(Array.from(cols.x)).toEqual([5, 7, 1, 3]);
    expect(Array.from(cols.y)).toEqual([6, 8, 2, 4]);
    expect(Array.from(cols.valueA)).toEqual([3, 2, 1, 0]);
    expect(Array.from(cols.valueB)).toEqual([2, 2, 0, 1]);
  });

  it("lightens colours towards white and leaves other notations alone", () => {
    expect(lighten("#000000", 0.5)).toBe("#808080");
    expect(lighten("#ff0000", 1)).toBe("#ffffff");
    expect(lighten("#123456", 0)).toBe("#123456");
    expect(lighten("red")).toBe("red");
  });

  it("says how far placing is, how many rows are placed, or how many wait", () => {
    expect(placedText("Placing rows: 20,000 of 90,000 (3 s)", 0, 90000)).toMatch(/^Placing rows/);
    expect(placedText("", 90000, 90000)).toBe("90,000 rows placed");
    expect(placedText("", 0, 90000)).toBe("sample: 90,000 rows not placed");
    expect(placedText("", 0, 0)).toBe("");
  });
});
