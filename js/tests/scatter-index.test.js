// @vitest-environment jsdom
// Which spatial index each draw hands the plot, with the plotting library and
// the page's workers replaced by recording fakes.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

const fake = vi.hoisted(() => ({ draws: [], workers: [] }));

vi.mock("regl-scatterplot", () => ({
  default: () => {
    let spatialIndex = null;
    return {
      set() {},
      get: (key) => (key === "spatialIndex" ? spatialIndex : key === "width" || key === "height" ? 100 : null),
      draw(points, options) {
        spatialIndex = options.spatialIndex ?? `own index of draw ${fake.draws.length}`;
        fake.draws.push({ points, options });
        return Promise.resolve();
      },
      subscribe: () => ({}),
      unsubscribe() {},
      view() {},
      select() {},
      deselect() {},
      destroy() {},
    };
  },
}));

const { INDEX_IN_WORKER_FROM, INDEX_QUIET_MS, createScatter } = await import("../src/scatter.js");

class FakeWorker {
  constructor() {
    this.messages = [];
    fake.workers.push(this);
  }
  postMessage(message) {
    this.messages.push(message);
  }
  terminate() {}
  /** Answer the oldest request with an index named after its first x. */
  answer() {
    const { x } = this.messages.shift();
    this.onmessage({ data: `index of x0 = ${x[0]}` });
  }
}

/** Interleaved positions of n points, all at (shift, 0) but the first at (shift, 0.5). */
function frame(n, shift) {
  const xy = new Float32Array(2 * n).fill(0);
  for (let i = 0; i < n; i++) xy[2 * i] = shift;
  xy[1] = 0.5;
  return xy;
}

const settle = () => vi.advanceTimersByTimeAsync(0);

describe("the spatial index each draw hands the plot", () => {
  let canvas;
  let scatter;
  let drawn;
  const n = INDEX_IN_WORKER_FROM;

  beforeEach(() => {
    vi.useFakeTimers();
    fake.draws.length = 0;
    fake.workers.length = 0;
    globalThis.Worker = FakeWorker;
    URL.createObjectURL = () => "blob:worker";
    URL.revokeObjectURL = () => {};
    canvas = document.createElement("canvas");
    drawn = 0;
    scatter = createScatter(canvas, { width: 100, height: 100, onDraw: () => (drawn += 1) });
  });

  afterEach(() => {
    scatter.destroy();
    delete globalThis.Worker;
    delete URL.createObjectURL;
    delete URL.revokeObjectURL;
    vi.useRealTimers();
  });

  it("leaves small maps to the plot: no worker", async () => {
    scatter.setData(frame(n - 1, 0), null, null);
    await settle();
    scatter.setData(frame(n - 1, 0.1), null, null);
    await settle();
    expect(fake.workers).toHaveLength(0);
    expect(fake.draws.map((d) => d.options.spatialIndex)).toEqual([undefined, undefined]);
    expect(canvas.dataset.indexWorker).toBe("unused");
  });

  it("draws new places with the worker's newest index, then catches up once they stay put", async () => {
    scatter.setData(frame(n, 0), null, null);
    await settle();
    // The first map: the plot indexes it; the worker is asked to as well.
    expect(fake.draws[0].options.spatialIndex).toBeUndefined();
    const [worker] = fake.workers;
    worker.answer();
    expect(canvas.dataset.indexWorker).toBe("running");

    scatter.setData(frame(n, 0.25), null, null, { animate: true });
    await settle();
    expect(fake.draws[1].options.spatialIndex).toBe("index of x0 = 0"); // a frame behind
    expect(canvas.dataset.index).toBe("behind");
    expect(worker.messages.map((m) => m.x[0])).toEqual([0.25]);
    worker.answer();
    await vi.advanceTimersByTimeAsync(INDEX_QUIET_MS - 10);
    expect(fake.draws).toHaveLength(2); // not before the points stayed put
    await vi.advanceTimersByTimeAsync(20);
    expect(fake.draws).toHaveLength(3);
    expect(fake.draws[2].options.spatialIndex).toBe("index of x0 = 0.25");
    expect(fake.draws[2].points).toBe(fake.draws[1].points);
    expect(canvas.dataset.index).toBe("current");
    expect(drawn).toBe(2); // the catch-up is not a new frame
  });

  it("does not catch up while frames stream in, nor when only colours change", async () => {
    scatter.setData(frame(n, 0), null, null);
    await settle();
    const [worker] = fake.workers;
    worker.answer();
    scatter.setData(frame(n, 0.25), null, null, { animate: true });
    await settle();
    worker.answer();
    await vi.advanceTimersByTimeAsync(INDEX_QUIET_MS / 2);
    scatter.setData(frame(n, 0.5), null, null, { animate: true });
    await settle();
    expect(fake.draws[2].options.spatialIndex).toBe("index of x0 = 0.25");
    await vi.advanceTimersByTimeAsync(INDEX_QUIET_MS);
    expect(fake.draws).toHaveLength(3); // its own index is not built yet
    worker.answer();
    await vi.advanceTimersByTimeAsync(INDEX_QUIET_MS);
    expect(fake.draws).toHaveLength(4);
    expect(canvas.dataset.index).toBe("current");
    // Other colours, same places: the plot's index serves, nothing more to build.
    scatter.setData(frame(n, 0.5), null, new Uint16Array(n).fill(3));
    await settle();
    expect(fake.draws[4].options.spatialIndex).toBe("index of x0 = 0.5");
    expect(worker.messages).toHaveLength(0);
    expect(canvas.dataset.index).toBe("current");
  });

  it("falls back to the plot's own index when the worker fails", async () => {
    scatter.setData(frame(n, 0), null, null);
    await settle();
    fake.workers[0].onerror({ preventDefault() {} });
    expect(canvas.dataset.indexWorker).toBe("failed");
    scatter.setData(frame(n, 0.25), null, null, { animate: true });
    await settle();
    expect(fake.draws[1].options.spatialIndex).toBeUndefined();
    expect(fake.workers).toHaveLength(1);
  });
});
