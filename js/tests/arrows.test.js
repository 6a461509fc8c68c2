import { describe, expect, it } from "vitest";
import { arrowSegments, drawNeighbours, HALO_PX, LINE_PX, LONGEST_PX, NEIGHBOUR_STYLES, neighbourLines } from "../src/arrows.js";

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

/** A canvas context that records each stroke: its style, width, dash, and the path's parts. */
function recordingContext() {
  const strokes = [];
  let parts = [];
  const ctx = {
    strokeStyle: "",
    lineWidth: 1,
    dash: [],
    setLineDash(d) { this.dash = d; },
    beginPath() { parts = []; },
    moveTo(x, y) { parts.push(["moveTo", x, y]); },
    lineTo(x, y) { parts.push(["lineTo", x, y]); },
    arc(x, y, r) { parts.push(["arc", x, y, r]); },
    stroke() { strokes.push({ color: this.strokeStyle, width: this.lineWidth, dash: this.dash, parts }); },
  };
  return { ctx, strokes };
}

describe("drawNeighbours", () => {
  const far = { kind: "input", x0: 100, y0: 100, x1: 150, y1: 100 };
  const near = { kind: "output", x0: 100, y0: 100, x1: 101, y1: 100 };

  it("draws every halo first, wider and white, so no halo covers a neighbour's colour", () => {
    const { ctx, strokes } = recordingContext();
    drawNeighbours(ctx, [far, near]);
    expect(strokes[0].color).toBe("#ffffff");
    expect(strokes[0].width).toBe(LINE_PX + 2 * HALO_PX);
    expect(strokes[0].parts).toContainEqual(["lineTo", 150, 100]);
    expect(strokes[0].parts).toContainEqual(["arc", 150, 100, NEIGHBOUR_STYLES.input.ring]);
    expect(strokes[0].parts).toContainEqual(["arc", 101, 100, NEIGHBOUR_STYLES.output.ring]);
    expect(strokes.slice(1).every((s) => s.color !== "#ffffff" && s.width === LINE_PX)).toBe(true);
    expect(ctx.dash).toEqual([]);
  });

  it("links and rings a far neighbour in its colour, the rings solid", () => {
    const { ctx, strokes } = recordingContext();
    drawNeighbours(ctx, [far]);
    const [, line, ring] = strokes;
    expect(line).toMatchObject({ color: NEIGHBOUR_STYLES.input.color, dash: NEIGHBOUR_STYLES.input.dash });
    expect(line.parts).toContainEqual(["lineTo", 150, 100]);
    expect(ring).toMatchObject({ color: NEIGHBOUR_STYLES.input.color, dash: [] });
    expect(ring.parts).toContainEqual(["arc", 150, 100, NEIGHBOUR_STYLES.input.ring]);
  });

  it("still shows a neighbour a pixel away, inside a tight cluster, by its ring alone", () => {
    const { ctx, strokes } = recordingContext();
    drawNeighbours(ctx, [near]);
    expect(strokes.some((s) => s.parts.some(([op]) => op === "lineTo"))).toBe(false);
    expect(strokes.at(-1)).toMatchObject({ color: NEIGHBOUR_STYLES.output.color });
    expect(strokes.at(-1).parts).toContainEqual(["arc", 101, 100, NEIGHBOUR_STYLES.output.ring]);
  });

  it("draws the input neighbours last, in the wider ring, so a point that is both shows two", () => {
    const { ctx, strokes } = recordingContext();
    drawNeighbours(ctx, [far, { ...far, kind: "output" }]);
    expect(strokes.at(-1).color).toBe(NEIGHBOUR_STYLES.input.color);
    expect(NEIGHBOUR_STYLES.input.ring).toBeGreaterThan(NEIGHBOUR_STYLES.output.ring);
  });

  it("draws nothing without neighbours", () => {
    const { ctx, strokes } = recordingContext();
    drawNeighbours(ctx, []);
    expect(strokes).toEqual([]);
  });
});
