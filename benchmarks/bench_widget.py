#!/usr/bin/env python
"""Frame rate and slider latency of the Explorer widget in a real browser.

Starts a JupyterLab server and a headless Chromium (the harness of
``tests/e2e/conftest.py``), and for each size opens a notebook showing
``Explorer(X, method=HSSNE(alpha=1.0))`` on a seeded Gaussian mixture
(10 classes, 10-D). While the optimizer runs, the page records with a
MutationObserver on the widget's root and ``performance.now()``:

* **fps drawn**: increments of ``data-frame`` (frames drawn) per second;
* **updates/s**: increments of ``data-version`` (position updates received);
* **page rAF/s**: animation frames the page managed meanwhile (how
  responsive it stays while drawing);
* **longest gap drawn**: the longest time between two frames drawn in that window;
* **first map drawn** and **iteration 100 drawn**: seconds from the start of the
  cell that shows the Explorer (the kernel's clock) to the first map the page drew
  (its ``data-first-draw-at``) and to the first time the page showed iteration 100
  or later (polled, so up to a tenth of a second late);
* **kernel peak RSS** of the notebook's kernel and the **page JS heap**
  (Chromium's ``JSHeapUsedSize``; WebGL buffers are not in it), after the slider
  changes;
* **slider -> frame**: from setting the alpha slider (input and change
  events) to the first frame drawn *under the new alpha*. The kernel records
  each frame it sends with the run's alpha and iteration; the page records
  each frame it draws with the iteration it shows; both clocks are the
  machine's epoch clock. The latency ends at the first frame drawn after the
  change whose iteration is at least that of the kernel's first frame with
  the new alpha. (When Python updates arrive faster than the page draws, the
  iteration shown can be one update ahead of the drawn positions, so this can
  be early by up to one frame.) ``slider -> any frame`` is the time to the
  first frame drawn after the change, whatever its alpha.

The widget sends at most ``frame_rate`` updates per second (25 by default, 60
at most) and, unless a page paces them, at most 8 MB/s of positions; its worker steps the run in
calls of about 30 ms and sends after a call, so the optimizer's speed bounds
the drawn frame rate too. ``--frame-rate`` (default 60) is set on the widget
before measuring.

Before the browser starts, a first table measures the **kernel alone**: the
same Explorer without a page (HSSNE at alpha 0.5, 1 and 2 at each size, and
with ``--methods`` Mbed and NeRV at ``--other-sizes``), its frames sent per
second, iterations per second, the time from a parameter change (set as a
slider message would set it) to the first frame sent with a new iteration
under the new value, and the longest gap between two frames sent during a
session of ``--session`` seconds (default 60) with a slider move every
``--change-every`` seconds (default 2). With ``--fast-page`` a page is
simulated that reports each frame drawn as soon as it is sent (a page that
keeps up, as one with a graphics processor does): such a page paces the frames
(``nbembed/widget/pacing.py``) and they are not held to the stream's byte limit.
``--kernel-only`` stops there; ``--browser-only`` skips it.
The **render only** column measures the page alone: the widget's module
in the fake-model page of the tests, fed new positions from JavaScript as
soon as the previous ones are drawn (no Python, no network). ``--render-only``
measures only that, with where the page's main thread spends a frame (Chromium's
sampling profiler): busy in all, of which copying the WebGL picture onto the
page (where software WebGL pays for drawing) and the rest (the widget's and the
plot's scripts, garbage collection). The rest is what a page with a graphics
processor pays too.

Goals, kernel side: >= 30 frames sent/s at 10 000 points and >= 8 at 100 000 for
HSSNE at any alpha, >= 10 at 5000 for Mbed and NeRV, <= 100 ms from a change to
its first frame at 10 000 points, <= 250 ms longest gap. In the browser (software
WebGL here): >= 30 fps drawn at 10 000 points, <= 100 ms slider -> frame.

Usage (from the repository root; needs /usr/bin/chromium, jupyterlab,
playwright and the built widget bundle)::

    PYTHONPATH=. python benchmarks/bench_widget.py                 # 10k and 100k
    PYTHONPATH=. python benchmarks/bench_widget.py --sizes 2000 --seconds 2 --changes 3
    PYTHONPATH=. python benchmarks/bench_widget.py --kernel-only \\
        --methods hssne-0.5 hssne-1 hssne-2 mbed nerv
    PYTHONPATH=. python benchmarks/bench_widget.py --render-only --sizes 10000 100000 1000000

Timings are only meaningful on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

ROOT_DIR = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT_DIR / "tests"))

from e2e.conftest import (  # noqa: E402  (the harness lives with the tests)
    JupyterLab, LabServer, WidgetPage, chromium_context, missing_browser_reason)

EXPLORER = ".nbembed-explorer"
KERNEL_METHODS = ("hssne-0.5", "hssne-1", "hssne-2", "mbed", "nerv")
TIMEOUT_S = 600.0

SETUP = """
import time
import numpy as np
from sklearn.datasets import make_blobs
from nbembed import HSSNE
from nbembed.widget import Explorer

X, y = make_blobs(n_samples={n}, n_features=10, centers=10, random_state=0)
"""
SHOW = """
shown_at = time.time() * 1000
ex = Explorer(X, method=HSSNE(alpha=1.0, max_iter=1_000_000, tol=0, random_state=0), colors=y,
              frame_rate={frame_rate})
ex
"""
# Each frame the kernel sends: wall clock, iteration, the run's alpha.
RECORD = """
sent, received = [], []
ex.observe(lambda c: sent.append((time.time() * 1000, c["new"],
                                  float(ex.run.get_params()["alpha"]))), names="iteration")
ex.observe(lambda c: received.append((time.time() * 1000, c["new"].get("alpha"))),
           names="params")
"""

# In the page: every change of the root's data-frame / data-version, with the
# epoch time and the iteration shown, and the page's animation frames.
INSTRUMENT = """(scope) => {
  const root = document.querySelector(scope + ' .nbembed-explorer');
  const rec = {draws: [], updates: [], rafs: 0, running: true};
  const now = () => performance.timeOrigin + performance.now();
  let frame = Number(root.dataset.frame), version = Number(root.dataset.version);
  rec.observer = new MutationObserver(() => {
    const t = now();
    const f = Number(root.dataset.frame), v = Number(root.dataset.version);
    if (f !== frame) rec.draws.push([t, f - frame, Number(root.dataset.iteration)]);
    if (v !== version) rec.updates.push([t, v - version]);
    frame = f; version = v;
  });
  rec.observer.observe(root, {attributes: true,
                              attributeFilter: ['data-frame', 'data-version']});
  const tick = () => { rec.rafs += 1; if (rec.running) requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
  window.benchRecord = rec;
}"""

WINDOW = """([t0, t1]) => {
  const rec = window.benchRecord;
  const inside = (rows) => rows.filter(([t]) => t >= t0 && t <= t1);
  const sum = (rows) => rows.reduce((s, r) => s + r[1], 0);
  const times = [t0, ...inside(rec.draws).map(([t]) => t), t1];
  const gap = Math.max(...times.slice(1).map((t, k) => t - times[k]));
  return {draws: sum(inside(rec.draws)), updates: sum(inside(rec.updates)), gap};
}"""

#: Peak resident memory of the notebook's kernel, MB (Linux reports KiB).
KERNEL_PEAK_RSS = ("__import__('resource').getrusage("
                   "__import__('resource').RUSAGE_SELF).ru_maxrss / 1024")


def page_heap_mb(page):
    """JavaScript heap the page uses, MB (Chromium's own count; WebGL buffers
    live outside it)."""
    session = page.context.new_cdp_session(page)
    try:
        session.send("Performance.enable")
        metrics = session.send("Performance.getMetrics")["metrics"]
        metrics = {m["name"]: m["value"] for m in metrics}
        return metrics.get("JSHeapUsedSize", float("nan")) / 2**20
    finally:
        session.detach()

SET_SLIDER = """([scope, value]) => {
  const slider = document.querySelector(scope + ' input[type=range][data-param="alpha"]');
  const t = performance.timeOrigin + performance.now();
  slider.value = String(value);
  slider.dispatchEvent(new Event('input', {bubbles: true}));
  slider.dispatchEvent(new Event('change', {bubbles: true}));
  return t;
}"""


def _progress(n, start):
    """A function printing, to stderr, what the measurement of ``n`` points has
    reached and the seconds since ``start`` (so that a slow step shows where)."""
    def say(what):
        print(f"  n = {n}, {time.perf_counter() - start:6.1f} s: {what}", file=sys.stderr,
              flush=True)
    return say


def measure_notebook(lab, n, args):
    """fps and slider latency for ``n`` points in JupyterLab."""
    say = _progress(n, time.perf_counter())
    cells = [SETUP.format(n=n), SHOW.format(frame_rate=args.frame_rate)]
    with lab.notebook(f"bench-{n}", cells) as nb:
        say("notebook open, cells run")
        nb.wait_attr(EXPLORER, "data-frame", "(v) => Number(v) >= 1", timeout=TIMEOUT_S)
        say("first map drawn")
        # From the start of the cell that shows the Explorer: the first map drawn, and
        # (polled) the first drawn frame at iteration 100 or later.
        shown_at = nb.py_value("shown_at")
        first_draw = float(nb.attr(EXPLORER, "data-first-draw-at")) - shown_at
        nb.wait_attr(EXPLORER, "data-iteration", "(v) => Number(v) >= 100", timeout=TIMEOUT_S)
        iteration_100 = nb.page.evaluate("() => performance.timeOrigin + performance.now()") \
            - shown_at
        say("iteration 100 drawn")
        nb.py(RECORD)
        page = nb.page
        page.evaluate(INSTRUMENT, nb.scope)
        now = page.evaluate("() => performance.timeOrigin + performance.now()")
        rafs = page.evaluate("() => window.benchRecord.rafs")
        page.wait_for_timeout(args.seconds * 1000)
        later = page.evaluate("() => performance.timeOrigin + performance.now()")
        counts = page.evaluate(WINDOW, [now, later])
        span = (later - now) / 1000
        result = {"n": n, "fps": counts["draws"] / span, "updates": counts["updates"] / span,
                  "raf": (page.evaluate("() => window.benchRecord.rafs") - rafs) / span,
                  "first_draw": first_draw / 1000, "iteration_100": iteration_100 / 1000,
                  "gap": counts["gap"]}
        say(f"frame rate measured: {result['fps']:.1f} drawn/s, {result['updates']:.1f} "
            f"updates/s")

        latencies, any_frame, kernel, arrival = [], [], [], []
        values = [0.8, 1.0] * (args.changes + 1)
        for k, value in enumerate(values[:args.changes + 1]):
            nb.py("sent.clear(); received.clear()")
            t0 = page.evaluate(SET_SLIDER, [nb.scope, value])
            nb.wait_py(f"any(a == {value} for _, _, a in sent)",
                       what=f"a frame sent with alpha = {value}", timeout=TIMEOUT_S)
            sent_at, first = nb.py_value(
                f"next([t, it] for t, it, a in sent if a == {value})")
            received_at = nb.py_value(
                f"next((t for t, a in received if a == {value}), float('nan'))")
            draws = nb.wait_js("""([t0, it]) => {
              const hit = window.benchRecord.draws.find(([t, , i]) => t > t0 && i >= it);
              return hit ? window.benchRecord.draws.filter(([t]) => t > t0) : false;
            }""", [t0, first], what="a frame drawn under the new alpha", timeout=TIMEOUT_S)
            say(f"change {k} to alpha = {value}: drawn")
            if k == 0:
                continue  # the first change compiles the kernel for the new alpha
            latencies.append(next(t for t, _, i in draws if i >= first) - t0)
            any_frame.append(draws[0][0] - t0)
            kernel.append(sent_at - t0)
            arrival.append(received_at - t0)
            page.wait_for_timeout(300)
        result.update(latency=latencies, any_frame=any_frame, kernel=kernel, arrival=arrival,
                      kernel_rss=nb.py_value(KERNEL_PEAK_RSS), page_heap=page_heap_mb(page))
        page.evaluate("() => { window.benchRecord.running = false; "
                      "window.benchRecord.observer.disconnect(); }")
        return result


RENDER_LOOP = """async (seconds) => {
  const root = document.querySelector('.nbembed-explorer');
  const n = Number(root.dataset.n);
  const base = Float32Array.from({length: 2 * n}, () => Math.random() * 1.8 - 0.9);
  // A few frames made beforehand, shown in turn, so that the loop itself costs
  // the page next to nothing. Laid out as Python sends positions: float64
  // bounds (x_min, y_min, x_max, y_max), then one uint16 code per coordinate.
  const made = Array.from({length: 4}, (_, k) => {
    const bytes = new ArrayBuffer(32 + 4 * n);
    new Float64Array(bytes, 0, 4).set([-0.95, -0.95, 0.95, 0.95]);
    const codes = new Uint16Array(bytes, 32);
    const shift = 0.02 * Math.sin(k);
    for (let i = 0; i < codes.length; i++) codes[i] = Math.round((base[i] + shift + 0.95) / 1.9 * 65535);
    return bytes;
  });
  const drawn = (frame) => new Promise((resolve) => {
    const observer = new MutationObserver(() => {
      if (Number(root.dataset.frame) > frame) { observer.disconnect(); resolve(); }
    });
    observer.observe(root, {attributes: true, attributeFilter: ['data-frame']});
  });
  const t0 = performance.now();
  let frames = 0;
  while (performance.now() - t0 < seconds * 1000) {
    const bytes = made[frames % made.length];
    const done = drawn(Number(root.dataset.frame));
    window.harness.fake.fromPython({_positions: new DataView(bytes)});
    await done;
    frames += 1;
  }
  return [frames, (performance.now() - t0) / 1000];
}"""

#: Native calls in which the page's main thread copies the WebGL picture onto
#: the page: with software WebGL, the drawing itself is paid there.
WEBGL_COPY = {"drawImage"}


def main_thread_split(profile):
    """Milliseconds the main thread was busy in a sampled CPU profile, and of
    which in copying the WebGL picture (``WEBGL_COPY``)."""
    names = {node["id"]: node["callFrame"]["functionName"] for node in profile["nodes"]}
    busy = copy = 0.0
    for sample, dt in zip(profile["samples"], profile["timeDeltas"]):
        name = names[sample]
        if name == "(idle)":
            continue
        busy += dt / 1000
        if name in WEBGL_COPY:
            copy += dt / 1000
    return busy, copy


def measure_render_only(context, n, seconds):
    """The page alone drawing ``n`` points as fast as it can: frames per second,
    and the milliseconds of its main thread a frame, busy and of which in
    copying the WebGL picture."""
    import numpy as np

    from nbembed.widget import Explorer

    ex = Explorer(np.random.default_rng(0).normal(size=(n, 2)), method="precomputed",
                  autostart=False)
    try:
        ex.wait(timeout=TIMEOUT_S)
        page = WidgetPage(context)
        page.mount(ex)
        page.wait_attr(EXPLORER, "data-frame", "(v) => Number(v) >= 1", "the first frame")
        profiler = context.new_cdp_session(page.page)
        profiler.send("Profiler.enable")
        profiler.send("Profiler.setSamplingInterval", {"interval": 1000})
        profiler.send("Profiler.start")
        frames, elapsed = page.page.evaluate(RENDER_LOOP, seconds)
        busy, copy = main_thread_split(profiler.send("Profiler.stop")["profile"])
        page.page.close()
        return {"fps": frames / elapsed, "busy_ms": busy / frames, "copy_ms": copy / frames}
    finally:
        ex.close()


#: Kernel-side runs: name -> (method factory, live parameter a slider moves, its values).
def _kernel_methods():
    from nbembed import HSSNE, NeRV, Mbed
    # Runs that go on for the whole measurement: no end of the schedule, and no
    # convergence stop (a settled run sends no frames, by design).
    endless = 1_000_000
    return {
        "hssne-0.5": (lambda: HSSNE(alpha=0.5, max_iter=endless, tol=0, random_state=0), "alpha",
                      (0.3, 0.5)),
        "hssne-1": (lambda: HSSNE(alpha=1.0, max_iter=endless, tol=0, random_state=0), "alpha",
                    (0.8, 1.0)),
        "hssne-2": (lambda: HSSNE(alpha=2.0, max_iter=endless, tol=0, random_state=0), "alpha",
                    (1.8, 2.0)),
        # The paper's width: the cost of an iteration does not depend on it, and the
        # default's cross-validation would only lengthen the start.
        "mbed": (lambda: Mbed(n_classes=10, sigma="quantile", max_iter=endless,
                              random_state=0), "lambda_", (0.5, 1.0)),
        "nerv": (lambda: NeRV(max_iter=endless, random_state=0), "tradeoff", (0.3, 0.7)),
    }


def measure_kernel_only(method, n, args):
    """The Python side alone, no browser, for one method and size: frames sent per
    second, iterations per second, the time from a parameter change (set as a
    slider message sets it) to the first frame sent with a new iteration under
    it, and, over a session of ``args.session`` seconds with a change every
    ``args.change_every`` seconds, the longest gap between two frames sent."""
    import numpy as np
    from sklearn.datasets import make_blobs

    from nbembed.widget import Explorer

    make, name, values = _kernel_methods()[method]
    X, y = make_blobs(n_samples=n, n_features=10, centers=10, random_state=0)
    # Mbed reads labels: one point in 20 labelled.
    labels = np.where(np.arange(n) % 20 == 0, y, -1) if method == "mbed" else None
    ex = Explorer(X, method=make(), colors=y, labels=labels, frame_rate=args.frame_rate)
    try:
        ex.wait(iteration=5, timeout=TIMEOUT_S)
        sent = []

        def record(change):
            value = ex.run.params_in_effect().get(name)
            sent.append((time.perf_counter(), change["new"], value))
        ex.observe(record, names="iteration")
        if args.fast_page:
            ex.observe(lambda change: ex._page_drew(change["new"]), names="frame_id")
            ex._page_drew(ex.frame_id)
        frames, iterations, start = ex.frames_sent, ex.run.iteration, time.perf_counter()
        time.sleep(args.seconds)
        span = time.perf_counter() - start
        result = {"method": method, "n": n, "fast_page": args.fast_page,
                  "fps": (ex.frames_sent - frames) / span,
                  "iterations": (ex.run.iteration - iterations) / span}
        latencies = []
        for k, value in enumerate((list(values) * (args.changes + 1))[:args.changes + 1]):
            sent.clear()
            t0 = time.perf_counter()
            ex.set_trait("params", {name: value})  # what a slider message does
            while not any(v == value for _, _, v in sent):
                if time.perf_counter() - t0 > TIMEOUT_S:
                    raise TimeoutError(f"no frame with {name} = {value}")
                time.sleep(0.001)
            if k:
                latencies.append(1000 * (next(t for t, _, v in sent if v == value) - t0))
            time.sleep(0.3)
        result["latency"] = latencies
        result["gap"] = _longest_gap(ex, sent, name, values, args) if args.session else None
        return result
    finally:
        ex.close()


def _longest_gap(ex, sent, name, values, args):
    """Longest time between two frames sent, ms, in a session with slider moves."""
    sent.clear()
    start = time.perf_counter()
    k = 0
    while time.perf_counter() - start < args.session:
        ex.set_trait("params", {name: values[k % len(values)]})
        k += 1
        time.sleep(args.change_every)
    times = [start] + [t for t, _, _ in sent] + [time.perf_counter()]
    return 1000 * max(b - a for a, b in zip(times, times[1:]))


def kernel_table(rows):
    lines = ["| method | n | frames sent/s | iterations/s | change -> frame sent, ms "
             "(median / max) | longest gap between frames, ms |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        gap = "–" if r["gap"] is None else f"{r['gap']:.0f}"
        lines.append(f"| {r['method']} | {r['n']} | {r['fps']:.1f} | {r['iterations']:.1f} | "
                     f"{statistics.median(r['latency']):.0f} / {max(r['latency']):.0f} | "
                     f"{gap} |")
    return "\n".join(lines)


def render_table(render):
    lines = ["| n | render only, fps | main thread a frame, ms | of which the WebGL copy "
             "| the rest (scripts, GC) |", "|---|---|---|---|---|"]
    for n, r in render.items():
        lines.append(f"| {n} | {r['fps']:.2f} | {r['busy_ms']:.0f} | {r['copy_ms']:.0f} | "
                     f"{r['busy_ms'] - r['copy_ms']:.0f} |")
    return "\n".join(lines)


def table(rows, render):
    def ms(values):
        if not values:
            return "–"
        return f"{statistics.median(values):.0f} / {max(values):.0f}"

    lines = ["| n | first map drawn, s | iteration 100 drawn, s | fps drawn | updates/s "
             "| longest gap drawn, ms | page rAF/s | slider -> frame, ms (median / max) "
             "| of which until received by the kernel | until sent by the kernel "
             "| slider -> any frame | render only, fps | kernel peak RSS, MB "
             "| page JS heap, MB |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['n']} | {r['first_draw']:.1f} | {r['iteration_100']:.1f} | "
                     f"{r['fps']:.1f} | {r['updates']:.1f} | {r['gap']:.0f} | {r['raf']:.0f} | "
                     f"{ms(r['latency'])} | {ms(r['arrival'])} | {ms(r['kernel'])} | "
                     f"{ms(r['any_frame'])} | "
                     f"{render[r['n']]['fps']:.1f} | {r['kernel_rss']:.0f} | "
                     f"{r['page_heap']:.0f} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--seconds", type=float, default=10.0,
                        help="length of the frame-rate window (default 10)")
    parser.add_argument("--changes", type=int, default=10,
                        help="slider changes timed per size (default 10)")
    parser.add_argument("--frame-rate", type=float, default=60.0,
                        help="the widget's frame_rate during the run (default 60, its maximum)")
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help="Numba threads in the kernel (default: all cores)")
    parser.add_argument("--viewport", default="1400x1000",
                        help="browser window WIDTHxHEIGHT in pixels (default 1400x1000, the "
                             "tests'); with software WebGL each frame costs about in "
                             "proportion to the area drawn")
    parser.add_argument("--json", type=pathlib.Path, help="also write the results here")
    parser.add_argument("--kernel-only", action="store_true",
                        help="measure the Python side alone (no browser)")
    parser.add_argument("--render-only", action="store_true",
                        help="measure the page alone drawing (no kernel, no JupyterLab)")
    parser.add_argument("--browser-only", action="store_true",
                        help="skip the kernel-alone table (at 10^6 points each of its runs "
                             "prepares for minutes)")
    parser.add_argument("--methods", nargs="+", default=["hssne-0.5", "hssne-1", "hssne-2"],
                        choices=list(KERNEL_METHODS),
                        help="kernel-side runs (default: HSSNE at alpha 0.5, 1 and 2)")
    parser.add_argument("--other-sizes", type=int, nargs="+", default=[5000],
                        help="sizes for Mbed and NeRV in the kernel-side table (default 5000)")
    parser.add_argument("--session", type=float, default=60.0,
                        help="seconds of the kernel-side session with slider moves "
                             "(default 60; 0 skips it)")
    parser.add_argument("--change-every", type=float, default=2.0,
                        help="seconds between slider moves in that session (default 2)")
    parser.add_argument("--fast-page", action="store_true",
                        help="kernel alone: simulate a page that reports each frame drawn "
                             "as soon as it is sent")
    args = parser.parse_args(argv)
    width, height = (int(v) for v in args.viewport.lower().split("x"))

    os.environ["NUMBA_NUM_THREADS"] = str(args.threads)
    kernel_rows = [] if args.browser_only or args.render_only else [
        measure_kernel_only(method, n, args) for method in args.methods
        for n in (args.sizes if method.startswith("hssne") else args.other_sizes)]
    if kernel_rows:
        print("Kernel alone (no browser):\n")
        print(kernel_table(kernel_rows))
    if args.kernel_only:
        if args.json:
            args.json.write_text(json.dumps({"kernel_only": kernel_rows}, indent=1))
        return
    reason = missing_browser_reason()
    if reason:
        sys.exit(f"cannot run: {reason}")
    rows, render = [], {}
    if args.render_only:
        with tempfile.TemporaryDirectory() as tmp, \
                chromium_context(pathlib.Path(tmp) / "profile",
                                 {"width": width, "height": height}) as context:
            context.set_default_timeout(TIMEOUT_S * 1000)
            for n in args.sizes:
                render[n] = measure_render_only(context, n, args.seconds)
        print(render_table(render))
        print(f"\nBrowser window {width} x {height}.")
        if args.json:
            args.json.write_text(json.dumps({"render_only": render}, indent=1))
        return
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        env = {"NUMBA_NUM_THREADS": str(args.threads)}
        with LabServer(tmp / "notebooks", tmp / "state", env=env) as server, \
                chromium_context(tmp / "profile", {"width": width, "height": height}) as context:
            context.set_default_timeout(TIMEOUT_S * 1000)
            lab = JupyterLab(context, server)
            for n in args.sizes:
                start = time.perf_counter()
                rows.append(measure_notebook(lab, n, args))
                render[n] = measure_render_only(context, n, args.seconds)
                print(f"n = {n}: measured in {time.perf_counter() - start:.0f} s",
                      file=sys.stderr)
    print("\nIn the browser:\n")
    print(table(rows, render))
    print(f"\nBrowser window {width} x {height}. "
          "Goals: >= 30 fps drawn at 10 000 points; <= 100 ms slider -> frame.")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "render_only": render,
                                         "kernel_only": kernel_rows}, indent=1))


if __name__ == "__main__":
    main()
