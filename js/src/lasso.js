// Free-hand lasso: pointer handling on the plot and the geometry that turns a
// screen-space polygon into selected point indices.

/**
 * Whether (x, y) lies inside `polygon` (flat [x0, y0, x1, y1, ...], closed
 * implicitly), by the even-odd rule: a ray to the right crosses the boundary
 * an odd number of times.
 */
export function pointInPolygon(x, y, polygon) {
  const n = polygon.length >> 1;
  let inside = false;
  for (let i = 0, j = n - 1; i < n; j = i++) {
    const xi = polygon[2 * i];
    const yi = polygon[2 * i + 1];
    const xj = polygon[2 * j];
    const yj = polygon[2 * j + 1];
    if (yi > y !== yj > y && x < ((xj - xi) * (y - yi)) / (yj - yi) + xi) {
      inside = !inside;
    }
  }
  return inside;
}

/** Ascending indices of the points (interleaved xy) inside `polygon`. */
export function pointsInPolygon(xy, polygon) {
  if (polygon.length < 6) return new Uint32Array(0);
  let x0 = Infinity;
  let y0 = Infinity;
  let x1 = -Infinity;
  let y1 = -Infinity;
  for (let k = 0; k < polygon.length; k += 2) {
    x0 = Math.min(x0, polygon[k]);
    x1 = Math.max(x1, polygon[k]);
    y0 = Math.min(y0, polygon[k + 1]);
    y1 = Math.max(y1, polygon[k + 1]);
  }
  const hits = [];
  const n = xy.length >> 1;
  for (let i = 0; i < n; i++) {
    const x = xy[2 * i];
    const y = xy[2 * i + 1];
    if (x >= x0 && x <= x1 && y >= y0 && y <= y1 && pointInPolygon(x, y, polygon)) {
      hits.push(i);
    }
  }
  return Uint32Array.from(hits);
}

/**
 * The 2-D affine map of regl-scatterplot from point coordinates to clip space:
 * clip = projection * view * model * point with projection = diag(1/aspect, 1)
 * and model = diag(dataAspectRatio, 1). `view` is the camera's 4x4 matrix
 * (column-major); only its 2-D affine part matters.
 */
function clipMap({ view, width, height, dataAspectRatio = 1 }) {
  const aspect = width / height;
  return {
    a: (view[0] * dataAspectRatio) / aspect,
    c: view[4] / aspect,
    tx: view[12] / aspect,
    b: view[1] * dataAspectRatio,
    d: view[5],
    ty: view[13],
  };
}

/**
 * Map screen pixels (flat [x, y, ...], origin top-left of the canvas) to the
 * coordinates the points were drawn in; the inverse of pointsToScreen.
 */
export function screenToPoints(pixels, transform) {
  const { width, height } = transform;
  const { a, b, c, d, tx, ty } = clipMap(transform);
  const det = a * d - b * c;
  const out = new Float64Array(pixels.length);
  for (let k = 0; k < pixels.length; k += 2) {
    const u = -1 + (2 * pixels[k]) / width - tx;
    const v = 1 - (2 * pixels[k + 1]) / height - ty;
    out[k] = (d * u - c * v) / det;
    out[k + 1] = (a * v - b * u) / det;
  }
  return out;
}

/** Map points (interleaved xy) to screen pixels (origin top-left of the canvas). */
export function pointsToScreen(xy, transform) {
  const { width, height } = transform;
  const { a, b, c, d, tx, ty } = clipMap(transform);
  const out = new Float64Array(xy.length);
  for (let k = 0; k < xy.length; k += 2) {
    out[k] = ((a * xy[k] + c * xy[k + 1] + tx + 1) * width) / 2;
    out[k + 1] = ((1 - (b * xy[k] + d * xy[k + 1] + ty)) * height) / 2;
  }
  return out;
}

/** Points of a pointer event, with the coalesced ones when the browser has them. */
function eventPoints(event) {
  const coalesced = event.getCoalescedEvents?.() ?? [];
  return coalesced.length ? coalesced : [event];
}

/**
 * Let the user draw a lasso on `surface` (the plot element).
 *
 * A drag starts a lasso when `shouldStart(event)` says so (lasso mode, or
 * shift held); the path is drawn into the SVG `polyline`, and
 * `onEnd(pixels)` gets the polygon in pixels relative to `surface`. The
 * pointerdown is cancelled, so the scatter's own mouse handlers (pan) never
 * see a lasso drag, and the click that follows it is swallowed.
 *
 * @returns a function that removes every listener.
 */
export function attachLasso(surface, polyline, { shouldStart, onEnd }) {
  let path = null;
  let pointerId = null;
  let endedAt = -Infinity;

  const local = (event) => {
    const box = surface.getBoundingClientRect();
    return [event.clientX - box.left, event.clientY - box.top];
  };
  const drawPath = () => {
    const pairs = [];
    for (let k = 0; path && k < path.length; k += 2) pairs.push(`${path[k]},${path[k + 1]}`);
    polyline.setAttribute("points", pairs.join(" "));
  };
  const finish = (event, keep) => {
    const done = path;
    path = null;
    try {
      surface.releasePointerCapture?.(event.pointerId);
    } catch {
      // the capture was already gone
    }
    drawPath();
    endedAt = performance.now();
    if (keep && done.length >= 6) onEnd(done);
  };

  const handlers = {
    pointerdown(event) {
      if (event.button !== 0 || !shouldStart(event)) return;
      event.preventDefault();
      event.stopPropagation();
      pointerId = event.pointerId;
      path = local(event);
      try {
        surface.setPointerCapture?.(event.pointerId);
      } catch {
        // synthetic events may not be capturable
      }
      drawPath();
    },
    pointermove(event) {
      if (path === null || event.pointerId !== pointerId) return;
      event.preventDefault();
      event.stopPropagation();
      for (const e of eventPoints(event)) path.push(...local(e));
      drawPath();
    },
    pointerup(event) {
      if (path === null || event.pointerId !== pointerId) return;
      event.preventDefault();
      event.stopPropagation();
      path.push(...local(event));
      finish(event, true);
    },
    pointercancel(event) {
      if (path !== null && event.pointerId === pointerId) finish(event, false);
    },
    click(event) {
      if (performance.now() - endedAt < 400) {
        event.preventDefault();
        event.stopPropagation();
        endedAt = -Infinity;
      }
    },
  };
  for (const [type, handler] of Object.entries(handlers)) {
    surface.addEventListener(type, handler, true);
  }
  return () => {
    for (const [type, handler] of Object.entries(handlers)) {
      surface.removeEventListener(type, handler, true);
    }
  };
}
