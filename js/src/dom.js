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

/** Run `fn` before the next paint (a timer where there is no animation frame). */
export const nextFrame = (fn) =>
  globalThis.requestAnimationFrame ? globalThis.requestAnimationFrame(fn) : setTimeout(fn, 16);
export const cancelFrame = (id) =>
  globalThis.cancelAnimationFrame ? globalThis.cancelAnimationFrame(id) : clearTimeout(id);
