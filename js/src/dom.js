// Small DOM helpers shared by the widget's modules.

/** Create an element with attributes (`dataset`, `style` and `on*` handled) and children. */
export function h(tag, attrs = {}, children = []) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value == null || value === false) continue;
    if (key === "text") el.textContent = value;
    else if (key === "className") el.className = value;
    else if (key === "style") Object.assign(el.style, value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of [].concat(children)) {
    if (child != null) el.append(child);
  }
  return el;
}

/** Collects undo functions (listeners, observers, timers) and runs them once. */
export class Disposer {
  constructor() {
    this.items = [];
  }

  add(fn) {
    this.items.push(fn);
    return fn;
  }

  listen(target, type, handler, options) {
    target.addEventListener(type, handler, options);
    this.add(() => target.removeEventListener(type, handler, options));
  }

  /** Listen to a model event; `model.off` is called on dispose. */
  onModel(model, event, handler) {
    model.on(event, handler);
    this.add(() => model.off(event, handler));
  }

  dispose() {
    while (this.items.length) {
      const fn = this.items.pop();
      try {
        fn();
      } catch (err) {
        console.warn("nbembed: cleanup failed", err);
      }
    }
  }
}

/**
 * Size a canvas laid over the plot to its box (device pixels), clear it and
 * return its 2-D context in CSS pixels with the box size, or null while it has no size.
 */
export function clearedCanvas(canvas) {
  const width = canvas.clientWidth;
  const height = canvas.clientHeight;
  const ctx = width > 0 && height > 0 ? canvas.getContext("2d") : null;
  if (!ctx) return null;
  const ratio = globalThis.devicePixelRatio || 1;
  if (canvas.width !== Math.round(width * ratio)) canvas.width = Math.round(width * ratio);
  if (canvas.height !== Math.round(height * ratio)) canvas.height = Math.round(height * ratio);
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, width, height);
  return { ctx, width, height };
}

/**
 * A layer's redraw: `paint(area)` (the `clearedCanvas` of `canvas`, or null) runs
 * before the next paint, once however often redraw is called; disposed with `disposer`.
 */
export function layerRedraw(canvas, disposer, paint) {
  let scheduled = null;
  disposer.add(() => scheduled !== null && cancelFrame(scheduled));
  const draw = () => {
    scheduled = null;
    paint(clearedCanvas(canvas));
  };
  return () => {
    if (scheduled === null) scheduled = nextFrame(draw);
  };
}

/** Run `fn` before the next paint (a timer where there is no animation frame). */
export const nextFrame = (fn) =>
  globalThis.requestAnimationFrame ? globalThis.requestAnimationFrame(fn) : setTimeout(fn, 16);
export const cancelFrame = (id) =>
  globalThis.cancelAnimationFrame ? globalThis.cancelAnimationFrame(id) : clearTimeout(id);
