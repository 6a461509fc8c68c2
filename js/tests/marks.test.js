import { describe, expect, it } from "vitest";
import { pointsToScreen, screenToPoints } from "../src/lasso.js";
import { decodeMarks, describeMarks, drawMarks, markCentres, outlineAlpha } from "../src/marks.js";

// 6 points: 0 labelled "a", 1 labelled "b"; group 1 = {2, 3}; cannot-link 1 = {0} vs {4, 5}.
const N = 6;
const BUFFER = Uint32Array.of(1, 2, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 1, 3, 0, 4, 5);

/** A 2-D context that records the segments and arcs it is asked for. */
function recordingContext() {
  const calls = { moveTo: 0, lineTo: 0, arc: 0, stroke: 0, text: [], dashes: [] };
  return {
    calls,
    save() {},
    restore() {},
    beginPath() {},
    moveTo() {
      calls.moveTo += 1;
    },
    lineTo() {
      calls.lineTo += 1;
    },
    arc() {
      calls.arc += 1;
    },
    stroke() {
      calls.stroke += 1;
    },
    fill() {},
    fillText(text) {
      calls.text.push(text);
    },
    setLineDash(d) {
      calls.dashes.push(d.length);
    },
  };
}

describe("constraint marks", () => {
  it("decode labels, groups and the cannot-links' selections", () => {
    const marks = decodeMarks(BUFFER, N);
    expect(Array.from(marks.labels)).toEqual([1, 2, 0, 0, 0, 0]);
    expect(Array.from(marks.groups)).toEqual([0, 0, 1, 1, 0, 0]);
    expect([marks.nGroups, marks.nLabelled, marks.count]).toEqual([1, 2, 1]);
    expect(marks.cannotOf.get(0)).toEqual([0]);
    expect(marks.cannotOf.get(5)).toEqual([1]);
    expect(Array.from(marks.groupMembers.subarray(marks.groupStart[1], marks.groupStart[2]))).toEqual([2, 3]);
    expect(decodeMarks(new Uint32Array(0), N)).toBe(null);
  });

  it("refuse a buffer that does not fit its layout", () => {
    expect(() => decodeMarks(BUFFER.subarray(0, 10), N)).toThrow(RangeError);
    const bad = BUFFER.slice();
    bad[17] = 9; // a point outside [0, 6)
    expect(() => decodeMarks(bad, N)).toThrow(/outside/);
    expect(() => decodeMarks(BUFFER.subarray(0, 18), N)).toThrow(/offsets/);
  });

  it("say which constraints a point is in", () => {
    const marks = decodeMarks(BUFFER, N);
    expect(describeMarks(marks, 0, ["a", "b"])).toBe("label a · cannot-link 1 (A)");
    expect(describeMarks(marks, 1, ["a"])).toBe("label class 1");
    expect(describeMarks(marks, 3, [])).toBe("must-link group 1");
    expect(describeMarks(marks, 4, [])).toBe("cannot-link 1 (B)");
    expect(describeMarks(null, 0, [])).toBe("");
  });

  it("place group and selection centres at the mean of their points", () => {
    const marks = decodeMarks(BUFFER, N);
    const screen = Float64Array.of(0, 0, 9, 9, 10, 20, 30, 40, 100, 0, 200, 10);
    const { groups, sides } = markCentres(marks, screen);
    expect(Array.from(groups.subarray(2, 4))).toEqual([20, 30]);
    expect(Array.from(sides)).toEqual([0, 0, 150, 5]);
  });

  it("draw one link per group member, an outline per label and a dashed line per cannot-link", () => {
    const marks = decodeMarks(BUFFER, N);
    const ctx = recordingContext();
    const xy = Float32Array.of(0, 0, 0.1, 0.1, -0.5, 0.5, 0.5, 0.5, 0.2, -0.2, 0.3, -0.3);
    const view = Float32Array.of(1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1);
    const drawn = drawMarks(ctx, marks, xy, { view, width: 200, height: 100 });
    expect(drawn).toBe(1 + 2 + 1);
    expect(ctx.calls.arc).toBe(2 + 1); // two outlines, one group centre
    expect(ctx.calls.lineTo).toBe(2 + 1); // two group links, one cannot-link
    expect(ctx.calls.dashes).toEqual([2, 0]);
    expect(ctx.calls.text).toEqual(["1", "1A", "1B"]);
    expect(drawMarks(ctx, marks, xy.subarray(0, 4), { view, width: 200, height: 100 })).toBe(0);
  });

  it("leave labelled points without outlines when asked, and fade outlines as labels grow", () => {
    const marks = decodeMarks(BUFFER, N);
    const ctx = recordingContext();
    const xy = Float32Array.of(0, 0, 0.1, 0.1, -0.5, 0.5, 0.5, 0.5, 0.2, -0.2, 0.3, -0.3);
    const view = Float32Array.of(1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1);
    const drawn = drawMarks(ctx, marks, xy, { view, width: 200, height: 100 }, { outlineLabels: false });
    expect(drawn).toBe(1 + 1);
    expect(ctx.calls.arc).toBe(1); // the group centre only
    expect(outlineAlpha(2)).toBe(0.6);
    expect(outlineAlpha(10000)).toBe(0.15);
    expect(outlineAlpha(400)).toBeCloseTo(0.4, 12);
  });
});

describe("points to screen", () => {
  it("is the inverse of screenToPoints under a zoomed, panned camera", () => {
    const view = Float32Array.of(2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 1, 0, 0.3, -0.2, 0, 1);
    const transform = { view, width: 300, height: 200 };
    const xy = Float64Array.of(0.1, 0.2, -0.7, 0.5, 0.9, -0.9);
    const back = screenToPoints(pointsToScreen(xy, transform), transform);
    back.forEach((v, k) => expect(v).toBeCloseTo(xy[k], 12));
  });

  it("puts the origin in the middle of an unzoomed plot and +y up", () => {
    const view = Float32Array.of(1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1);
    const screen = pointsToScreen(Float64Array.of(0, 0, 0, 1), { view, width: 300, height: 200 });
    expect(Array.from(screen)).toEqual([150, 100, 150, 0]);
  });
});
