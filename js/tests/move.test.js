// @vitest-environment jsdom
import { describe, expect, it, vi } from "vitest";
import { pointsToScreen } from "../src/lasso.js";
import { attachMove, draggedPoints, dropMessage, pointAt, shifted } from "../src/move.js";

const identity = Float32Array.of(1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1);
const transform = { view: identity, width: 200, height: 200 };

describe("drag maths", () => {
  const xy = Float32Array.of(-0.5, 0.5, 0.5, 0.5, 0.52, 0.5);

  it("picks the nearest point within the radius, or none", () => {
    const [x, y] = pointsToScreen([0.5, 0.5], transform);
    expect(pointAt(xy, transform, x, y, 5)).toBe(1);
    expect(pointAt(xy, transform, x + 1.6, y, 5)).toBe(2); // 0.52 is 2 px right of 0.5
    expect(pointAt(xy, transform, x, y + 6, 5)).toBe(-1);
    expect(pointAt(xy, transform, 0, 0, 5)).toBe(-1);
  });

  it("drags the selection when the point is in it, else the point alone", () => {
    expect(Array.from(draggedPoints(2, Uint32Array.of(0, 2)))).toEqual([0, 2]);
    expect(Array.from(draggedPoints(1, Uint32Array.of(0, 2)))).toEqual([1]);
    expect(Array.from(draggedPoints(1, new Uint32Array(0)))).toEqual([1]);
  });

  it("shifts only the dragged points, in a copy", () => {
    const out = shifted(xy, [0, 2], 0.25, -0.5);
    expect(Array.from(out)).toEqual([-0.25, 0, 0.5, 0.5, 0.77, 0].map(Math.fround));
    expect(xy[0]).toBe(Math.fround(-0.5));
  });

  it("sends the final positions of the dropped points with the frame", () => {
    const message = dropMessage(xy, Uint32Array.of(1, 2), 0.25, -0.5, 12);
    expect(message.type).toBe("drop");
    expect(message.indices).toEqual([1, 2]);
    expect(message.frame).toBe(12);
    expect(message.positions[0][0]).toBeCloseTo(0.75, 6);
    expect(message.positions[1][1]).toBeCloseTo(0, 6);
  });
});

function pointer(type, x, y, extra = {}) {
  const event = new MouseEvent(type, { clientX: x, clientY: y, bubbles: true, cancelable: true, button: 0, ...extra });
  Object.defineProperty(event, "pointerId", { value: 1 });
  return event;
}

describe("attachMove", () => {
  function setup(picked) {
    const surface = document.createElement("div");
    const inner = document.createElement("canvas");
    surface.append(inner);
    document.body.append(surface);
    const calls = { onDrag: vi.fn(), onDrop: vi.fn(), onCancel: vi.fn() };
    const detach = attachMove(surface, {
      shouldStart: (event) => !event.shiftKey,
      pick: () => picked,
      transform: () => transform,
      ...calls,
    });
    return { inner, detach, ...calls };
  }

  it("turns a drag into offsets in point coordinates and keeps it from the scatter", () => {
    const { inner, detach, onDrag, onDrop } = setup(Uint32Array.of(3));
    const canvasDown = vi.fn();
    inner.addEventListener("pointerdown", canvasDown);
    const down = pointer("pointerdown", 100, 100);
    inner.dispatchEvent(down);
    expect(down.defaultPrevented).toBe(true);
    expect(canvasDown).not.toHaveBeenCalled();
    inner.dispatchEvent(pointer("pointermove", 150, 100));
    expect(onDrag.mock.calls[0][0]).toBeCloseTo(0.5, 6); // 50 px of 200 = 0.5 of [-1, 1]
    expect(onDrag.mock.calls[0][1]).toBeCloseTo(0, 6);
    inner.dispatchEvent(pointer("pointerup", 150, 50));
    expect(onDrop).toHaveBeenCalledOnce();
    expect(onDrop.mock.calls[0][0]).toBeCloseTo(0.5, 6);
    expect(onDrop.mock.calls[0][1]).toBeCloseTo(0.5, 6); // up on screen is up in the plot
    detach();
  });

  it("leaves a press off the points to the scatter, and a click is no drop", () => {
    const off = setup(null);
    const down = pointer("pointerdown", 10, 10);
    off.inner.dispatchEvent(down);
    expect(down.defaultPrevented).toBe(false);
    off.inner.dispatchEvent(pointer("pointerup", 30, 30));
    expect(off.onDrop).not.toHaveBeenCalled();
    off.detach();

    const on = setup(Uint32Array.of(0));
    on.inner.dispatchEvent(pointer("pointerdown", 10, 10));
    on.inner.dispatchEvent(pointer("pointerup", 10, 10));
    expect(on.onDrop).not.toHaveBeenCalled();
    expect(on.onCancel).toHaveBeenCalledOnce();
    on.detach();
    const after = pointer("pointerdown", 10, 10);
    on.inner.dispatchEvent(after);
    expect(after.defaultPrevented).toBe(false); // detached
  });
});
