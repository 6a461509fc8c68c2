// Move mode: drag a point, or the selection, to a new place. While dragging
// the points are drawn shifted locally; on the drop one message tells Python
// where they went (it pins them there and the run settles around them).
import { pointsToScreen, screenToPoints } from "./lasso.js";

/** The point nearest to pixel (px, py) within `radius` pixels, or -1. */
export function pointAt(xy, transform, px, py, radius) {
  const screen = pointsToScreen(xy, transform);
  let best = -1;
  let bestDistance = radius * radius;
  for (let i = 0; i < screen.length >> 1; i++) {
    const dx = screen[2 * i] - px;
    const dy = screen[2 * i + 1] - py;
    const d = dx * dx + dy * dy;
    if (d <= bestDistance) {
      best = i;
      bestDistance = d;
    }
  }
  return best;
}

/** What a drag that starts on point `hit` moves: the selection if `hit` is in it, else `hit` alone. */
export function draggedPoints(hit, selection) {
  return selection.includes(hit) ? Uint32Array.from(selection) : Uint32Array.of(hit);
}

/** A copy of `xy` (interleaved) with the points `indices` moved by (dx, dy). */
export function shifted(xy, indices, dx, dy) {
  const out = Float32Array.from(xy);
  for (const i of indices) {
    if (2 * i + 1 >= out.length) continue;
    out[2 * i] += dx;
    out[2 * i + 1] += dy;
  }
  return out;
}

/** The `drop` message for points `indices` of `xy` moved by (dx, dy), drawn from frame `frame`. */
export function dropMessage(xy, indices, dx, dy, frame) {
  const positions = Array.from(indices, (i) => [xy[2 * i] + dx, xy[2 * i + 1] + dy]);
  return { type: "drop", indices: Array.from(indices), positions, frame };
}

/**
 * Let the user drag points on `surface` (the plot element).
 *
 * A drag starts when `shouldStart(event)` and `pick(px, py)` returns the
 * points to move (null: not on a point, the drag is left to pan the plot).
 * `transform()` maps pixels to point coordinates; `onDrag(dx, dy)` gets the
 * offset so far, `onDrop(dx, dy)` the final one (only when the points moved),
 * `onCancel()` a drag that ends without a drop.
 *
 * @returns a function that removes every listener.
 */
export function attachMove(surface, { shouldStart, pick, transform, onDrag, onDrop, onCancel }) {
  let start = null;
  let pointerId = null;
  let offset = [0, 0];
  let endedAt = -Infinity;

  const at = (event) => {
    const box = surface.getBoundingClientRect();
    const pixel = [event.clientX - box.left, event.clientY - box.top];
    return { pixel, point: screenToPoints(pixel, transform()) };
  };
  const stop = (event) => {
    event.preventDefault();
    event.stopPropagation();
  };
  const finish = (event) => {
    start = null;
    endedAt = performance.now();
    try {
      surface.releasePointerCapture?.(event.pointerId);
    } catch {
      // the capture was already gone
    }
  };

  const handlers = {
    pointerdown(event) {
      if (event.button !== 0 || !shouldStart(event)) return;
      const here = at(event);
      if (!pick(here.pixel[0], here.pixel[1])) return;
      stop(event);
      start = here.point;
      offset = [0, 0];
      pointerId = event.pointerId;
      try {
        surface.setPointerCapture?.(event.pointerId);
      } catch {
        // synthetic events may not be capturable
      }
    },
    pointermove(event) {
      if (start === null || event.pointerId !== pointerId) return;
      stop(event);
      const { point } = at(event);
      offset = [point[0] - start[0], point[1] - start[1]];
      onDrag(offset[0], offset[1]);
    },
    pointerup(event) {
      if (start === null || event.pointerId !== pointerId) return;
      stop(event);
      const { point } = at(event);
      offset = [point[0] - start[0], point[1] - start[1]];
      finish(event);
      if (offset[0] !== 0 || offset[1] !== 0) onDrop(offset[0], offset[1]);
      else onCancel();
    },
    pointercancel(event) {
      if (start === null || event.pointerId !== pointerId) return;
      finish(event);
      onCancel();
    },
    click(event) {
      // The click after a drag would select the point under it.
      if (performance.now() - endedAt < 400) {
        stop(event);
        endedAt = -Infinity;
      }
    },
  };
  for (const [type, handler] of Object.entries(handlers)) surface.addEventListener(type, handler, true);
  return () => {
    for (const [type, handler] of Object.entries(handlers)) surface.removeEventListener(type, handler, true);
  };
}
