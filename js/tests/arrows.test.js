import { describe, expect, it } from "vitest";
import { arrowSegments, LONGEST_PX, neighbourLines } from "../src/arrows.js";

// An identity camera on a 200 x 200 plot: plot [-1, 1] fills the canvas, y up.
const TRANSFORM = { view: [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1], width: 200, height: 200 };

describe("arrowSegments", () => {
  it("starts at the point, keeps length ratios and scales the longest to LONGEST_PX", () => {
    const xy = [0, 0, 0.5, 0.5];
    const forces = {
      points: [1],
      terms: [
        { name: "attraction", vectors: [[2, 0]] },
        { name: "repulsion", vectors: [[0, 1]] },
      ],
    };
    const [a, r] = arrowSegments(forces, xy, TRANSFORM);
    expect([a.x0, a.y0]).toEqual([150, 50]);
    expect(a.term).toBe(0);
    expect(a.x1 - a.x0).toBeCloseTo(LONGEST_PX);
    expect(a.y1 - a.y0).toBeCloseTo(0);
    // plot y goes up, screen y down; half as long
    expect(r.y1 - r.y0).toBeCloseTo(-LONGEST_PX / 2);
    expect(r.x1 - r.x0).toBeCloseTo(0);
  });

  it("leaves out points outside the data, zero vectors and no forces", () => {
    const forces = { points: [0, 9], terms: [{ name: "t", vectors: [[0, 0], [1, 1]] }] };
    expect(arrowSegments(forces, [0, 0], TRANSFORM)).toEqual([]);
    expect(arrowSegments({}, [0, 0], TRANSFORM)).toEqual([]);
  });
});

describe("neighbourLines", () => {
  it("links the hovered point to each input and output neighbour", () => {
    const xy = [0, 0, 0.5, 0, 0, 0.5];
    const lines = linesOfPointZero(xy);
    expect(lines.map((l) => l.kind)).toEqual(["input", "output", "output"]);
    expect([lines[0].x0, lines[0].y0, lines[0].x1, lines[0].y1]).toEqual([100, 100, 150, 100]);
    expect([lines[2].x1, lines[2].y1]).toEqual([100, 50]);
    expect(neighbourLines({ point: 7, input: [0] }, xy, TRANSFORM)).toEqual([]);
    expect(neighbourLines({}, xy, TRANSFORM)).toEqual([]);
  });
});

function linesOfPointZero(xy) {
  return neighbourLines({ point: 0, input: [1, 99], output: [1, 2] }, xy, TRANSFORM);
}
