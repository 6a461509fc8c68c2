// @vitest-environment jsdom
import { describe, expect, it, vi } from "vitest";
import { attachLasso, pointInPolygon, pointsInPolygon, screenToPoints } from "../src/lasso.js";

const square = [0, 0, 2, 0, 2, 2, 0, 2];
// A "U": the notch between x = 1 and x = 2 above y = 1 is outside.
const u = [0, 0, 3, 0, 3, 3, 2, 3, 2, 1, 1, 1, 1, 3, 0, 3];

describe("point in polygon", () => {
  it("separates inside from outside for a square", () => {
    expect(pointInPolygon(1, 1, square)).toBe(true);
    expect(pointInPolygon(3, 1, square)).toBe(false);
    expect(pointInPolygon(-0.1, 1, square)).toBe(false);
    expect(pointInPolygon(1, 2.5, square)).toBe(false);
  });

  it("handles a concave polygon", () => {
    expect(pointInPolygon(0.5, 2, u)).toBe(true);
    expect(pointInPolygon(2.5, 2, u)).toBe(true);
    expect(pointInPolygon(1.5, 2, u)).toBe(false); // in the notch
    expect(pointInPolygon(1.5, 0.5, u)).toBe(true);
  });

  it("handles a self-intersecting lasso by the even-odd rule", () => {
    const bowtie = [0, 0, 2, 2, 2, 0, 0, 2];
    expect(pointInPolygon(0.2, 1, bowtie)).toBe(true);
    expect(pointInPolygon(1, 0.2, bowtie)).toBe(false);
  });

  it("returns ascending indices of the points inside", () => {
    const xy = Float32Array.of(1.5, 2, 0.5, 2, 2.5, 2, 9, 9, 1.5, 0.5);
    expect(Array.from(pointsInPolygon(xy, u))).toEqual([1, 2, 4]);
    expect(pointsInPolygon(xy, [0, 0, 1, 1]).length).toBe(0); // not a polygon
  });
});

describe("screen to point coordinates", () => {
  const identity = Float32Array.of(1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1);

  it("maps the canvas centre and corners for the initial view", () => {
    const out = screenToPoints([200, 100, 0, 0, 400, 200], { view: identity, width: 400, height: 200 });
    expect(Array.from(out).map((v) => Math.round(v * 1e6) / 1e6)).toEqual([0, 0, -2, 1, 2, -1]);
  });

  it("inverts a zoomed and panned camera", () => {
    const s = 2;
    const [tx, ty] = [0.3, -0.2];
    const view = Float32Array.of(s, 0, 0, 0, 0, s, 0, 0, 0, 0, 1, 0, tx, ty, 0, 1);
    const [width, height] = [300, 300];
    const point = [0.1, 0.4];
    // forward: clip = view * point (aspect 1), then pixels
    const clip = [s * point[0] + tx, s * point[1] + ty];
    const px = [((clip[0] + 1) / 2) * width, ((1 - clip[1]) / 2) * height];
    const out = screenToPoints(px, { view, width, height });
    expect(out[0]).toBeCloseTo(point[0], 6);
    expect(out[1]).toBeCloseTo(point[1], 6);
  });
});

function pointer(type, x, y, extra = {}) {
  const event = new MouseEvent(type, { clientX: x, clientY: y, bubbles: true, cancelable: true, button: 0, ...extra });
  Object.defineProperty(event, "pointerId", { value: 1 });
  return event;
}

describe("attachLasso", () => {
  function setup(shouldStart) {
    const surface = document.createElement("div");
    const inner = document.createElement("canvas");
    surface.append(inner);
    document.body.append(surface);
    const polyline = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
    const onEnd = vi.fn();
    const detach = attachLasso(surface, polyline, { shouldStart, onEnd });
    return { surface, inner, polyline, onEnd, detach };
  }

  it("collects the path of a drag and cancels the events", () => {
    const { inner, onEnd, polyline, detach } = setup(() => true);
    const canvasDown = vi.fn();
    inner.addEventListener("pointerdown", canvasDown);
    const down = pointer("pointerdown", 10, 10);
    inner.dispatchEvent(down);
    expect(down.defaultPrevented).toBe(true);
    expect(canvasDown).not.toHaveBeenCalled(); // the scatter never sees a lasso drag
    inner.dispatchEvent(pointer("pointermove", 50, 10));
    expect(polyline.getAttribute("points")).toBe("10,10 50,10");
    inner.dispatchEvent(pointer("pointermove", 50, 50));
    inner.dispatchEvent(pointer("pointerup", 10, 50));
    expect(onEnd).toHaveBeenCalledOnce();
    expect(Array.from(onEnd.mock.calls[0][0])).toEqual([10, 10, 50, 10, 50, 50, 10, 50]);
    expect(polyline.getAttribute("points")).toBe("");
    detach();
  });

  it("leaves drags alone when not in lasso mode", () => {
    const { inner, onEnd, detach } = setup((event) => event.shiftKey);
    const down = pointer("pointerdown", 10, 10);
    inner.dispatchEvent(down);
    expect(down.defaultPrevented).toBe(false);
    inner.dispatchEvent(pointer("pointerup", 20, 20));
    expect(onEnd).not.toHaveBeenCalled();
    inner.dispatchEvent(pointer("pointerdown", 10, 10, { shiftKey: true }));
    inner.dispatchEvent(pointer("pointermove", 30, 10));
    inner.dispatchEvent(pointer("pointerup", 30, 30));
    expect(onEnd).toHaveBeenCalledOnce();
    detach();
  });

  it("removes its listeners when detached", () => {
    const { inner, onEnd, detach } = setup(() => true);
    detach();
    const down = pointer("pointerdown", 10, 10);
    inner.dispatchEvent(down);
    inner.dispatchEvent(pointer("pointermove", 30, 10));
    inner.dispatchEvent(pointer("pointerup", 30, 30));
    expect(down.defaultPrevented).toBe(false);
    expect(onEnd).not.toHaveBeenCalled();
  });
});
