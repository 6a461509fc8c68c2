#!/usr/bin/env python
"""Colour, search, hover, zoom and pan on a large finished map, in a real browser.

Starts a JupyterLab server and a headless Chromium (the harness of
``tests/e2e/conftest.py``), and for each size opens a notebook showing a
finished map of ``n`` points, ``Explorer(Y, method="precomputed", ...)``
(20 Gaussian clusters in 2-D, a class and a hover text for every point, a
numeric column): no run, so what is timed is the page and the widget's own
messages. The page records, with ``performance.now()`` on the machine's
epoch clock, every animation frame it gets (``requestAnimationFrame``), every
map it draws (``data-frame``), every change of the selection's size and of
the tooltip. Each action is timed from the moment it is made to its effect,
and the **longest stall** is the longest time between two animation frames
from the action until half a second after its effect: how long the page
stopped answering (a page that keeps up has about 17 ms).

* **colour by a column** / **back to the labels**: the colour menu set to the
  numeric column, then back to the classes; ends at the first map drawn after
  it (the kernel sends one colour code a point);
* **search, 1 hit** / **search, many hits**: a query typed in the search box
  and Enter ("item {n - 1}", "item 1"); ends when the page's selection has
  that many points (the map draws them at its next frame);
* **hover**: the mouse moved onto points (the cluster centres); ends when the
  tooltip shows. The median over the points reached;
* **zoom** / **pan**: 20 wheel steps, or a drag of 20 moves, over the map;
  the animation frames per second while it lasts (each draws the map in its
  new view) and the longest stall.

Also: the seconds from the cell that shows the Explorer to its first map
drawn, the kernel's peak RSS and the page's JavaScript heap (WebGL buffers
are not in it).

Usage (from the repository root; needs /usr/bin/chromium, jupyterlab,
playwright and the built widget bundle)::

    PYTHONPATH=. python benchmarks/bench_page_actions.py                 # 10^5 and 10^6
    PYTHONPATH=. python benchmarks/bench_page_actions.py --sizes 20000

Timings are only meaningful on an otherwise idle machine. Without a GPU,
Chromium draws with software WebGL, so the cost of a map grows with the
points and the window's area.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import tempfile
import time

ROOT_DIR = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT_DIR / "tests"))
sys.path.insert(0, str(ROOT_DIR / "benchmarks"))

from bench_hssne import git_state, markdown_table  # noqa: E402
from bench_widget import KERNEL_PEAK_RSS, _progress, page_heap_mb  # noqa: E402
from e2e.conftest import (  # noqa: E402  (the harness lives with the tests)
    JupyterLab, LabServer, chromium_context, missing_browser_reason)

EXPLORER = ".nbembed-explorer"
TIMEOUT_S = 600.0
#: After an action's effect, how long its stall is still looked for, ms.
AFTER_MS = 500.0

SETUP = """
import time
import numpy as np
from nbembed.widget import Explorer

rng = np.random.default_rng(0)
n = {n}
centres = rng.uniform(-40, 40, size=(20, 2))
y = rng.integers(0, 20, n)
Y = centres[y] + rng.normal(size=(n, 2))
texts = [f"item {{i}}" for i in range(n)]
"""
SHOW = """
shown_at = time.time() * 1000
ex = Explorer(Y, method="precomputed", colors=y, hover_text=texts,
              data={"height": Y[:, 1].copy()}, class_names=[f"c{k}" for k in range(20)])
ex
"""

# In the page: animation frames, maps drawn, the selection's size and the
# tooltip's visibility, each with its epoch time.
INSTRUMENT = """(scope) => {
  const root = document.querySelector(scope + ' .nbembed-explorer');
  const tooltip = root.querySelector('.nbembed-tooltip');
  const now = () => performance.timeOrigin + performance.now();
  const rec = {rafs: [], draws: [], selected: [], tooltips: [], running: true};
  let frame = Number(root.dataset.frame), selected = root.dataset.selected;
  new MutationObserver(() => {
    const t = now();
    if (Number(root.dataset.frame) !== frame) { frame = Number(root.dataset.frame); rec.draws.push(t); }
    if (root.dataset.selected !== selected) {
      selected = root.dataset.selected; rec.selected.push([t, Number(selected)]);
    }
  }).observe(root, {attributes: true, attributeFilter: ['data-frame', 'data-selected']});
  new MutationObserver(() => { if (!tooltip.hidden) rec.tooltips.push(now()); })
    .observe(tooltip, {attributes: true, attributeFilter: ['hidden', 'style']});
  const tick = () => { rec.rafs.push(now()); if (rec.running) requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
  window.benchRecord = rec;
}"""

NOW = "() => performance.timeOrigin + performance.now()"

STALL = """([t0, t1]) => {
  const times = [t0, ...window.benchRecord.rafs.filter((t) => t > t0 && t < t1), t1];
  return Math.max(...times.slice(1).map((t, k) => t - times[k]));
}"""

SET_COLOR_BY = """([scope, value]) => {
  const select = document.querySelector(scope + ' select[data-role="color-by"]');
  const t = performance.timeOrigin + performance.now();
  select.value = value;
  select.dispatchEvent(new Event('change', {bubbles: true}));
  return t;
}"""

SEARCH = """([scope, query]) => {
  const input = document.querySelector(scope + ' input[data-role="search"]');
  input.value = query;
  const t = performance.timeOrigin + performance.now();
  input.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true}));
  return t;
}"""


def _first_after(nb, key, t0, what, predicate="() => true"):
    """Epoch ms of the first record in ``benchRecord[key]`` after ``t0`` that
    satisfies the JavaScript ``predicate`` (waiting for it)."""
    return nb.wait_js(f"""([t0]) => {{
      const hit = window.benchRecord.{key}.find((r) => (Array.isArray(r) ? r[0] : r) > t0
                                               && ({predicate})(r));
      return hit === undefined ? false : (Array.isArray(hit) ? hit[0] : hit);
    }}""", [t0], what=what, timeout=TIMEOUT_S)


def _stall(nb, t0, t_effect):
    """The longest gap between animation frames from ``t0`` to half a second after
    ``t_effect``, ms (waiting until that time has passed)."""
    end = t_effect + AFTER_MS
    wait = end - nb.page.evaluate(NOW)
    if wait > 0:
        nb.page.wait_for_timeout(wait + 50)
    return nb.page.evaluate(STALL, [t0, end])


def colour_by(nb, value):
    t0 = nb.page.evaluate(SET_COLOR_BY, [nb.scope, value])
    drawn = _first_after(nb, "draws", t0, f"a map drawn after colouring by {value}")
    return drawn - t0, _stall(nb, t0, drawn)


def search(nb, query, hits):
    t0 = nb.page.evaluate(SEARCH, [nb.scope, query])
    found = _first_after(nb, "selected", t0, f"{hits} points selected by {query!r}",
                         f"(r) => r[1] === {hits}")
    return found - t0, _stall(nb, t0, found)


def hover(nb, box, points):
    """Latencies (ms) of the tooltip at the screen ``points`` that show one, and the
    longest stall over all of them."""
    page = nb.page
    latencies, t_first = [], page.evaluate(NOW)
    for x, y in points:
        page.mouse.move(box["x"] + 2, box["y"] + 2)  # off the points first
        page.wait_for_timeout(200)
        t0 = page.evaluate(NOW)
        page.mouse.move(x, y)
        try:
            shown = nb.wait_js("""([t0]) => window.benchRecord.tooltips.find((t) => t > t0)
                                  ?? false""", [t0], what="the tooltip", timeout=3.0)
        except AssertionError:
            continue  # no point under the mouse there
        latencies.append(shown - t0)
    stall = _stall(nb, t_first, page.evaluate(NOW))
    page.mouse.move(box["x"] + 2, box["y"] + 2)
    return latencies, stall


def gesture(nb, box, kind):
    """Animation frames per second and the longest stall during 20 wheel steps or
    drag moves (the map is drawn in the animation frames that follow a change of
    the view, so a slow draw shows as fewer of them)."""
    page = nb.page
    cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(cx, cy)
    t0 = page.evaluate(NOW)
    if kind == "zoom":
        for k in range(20):
            page.mouse.wheel(0, -60 if k < 10 else 60)
            page.wait_for_timeout(30)
    else:
        page.mouse.down()
        for k in range(20):
            page.mouse.move(cx + 8 * (k + 1), cy + 4 * (k + 1))
            page.wait_for_timeout(30)
        page.mouse.up()
    t1 = page.evaluate(NOW)
    page.wait_for_timeout(AFTER_MS)
    frames = page.evaluate("([t0, t1]) => window.benchRecord.rafs.filter("
                           "(t) => t > t0 && t <= t1).length", [t0, t1])
    return frames / ((t1 - t0) / 1000), _stall(nb, t0, t1)


def measure(lab, n):
    say = _progress(n, time.perf_counter())
    with lab.notebook(f"actions-{n}", [SETUP.format(n=n), SHOW]) as nb:
        nb.wait_attr(EXPLORER, "data-frame", "(v) => Number(v) >= 1", timeout=TIMEOUT_S)
        first_map = (float(nb.attr(EXPLORER, "data-first-draw-at")) - nb.py_value("shown_at"))
        say("first map drawn")
        nb.page.evaluate(INSTRUMENT, nb.scope)
        plot = nb.locator(".nbembed-plot")
        plot.scroll_into_view_if_needed()
        box = plot.bounding_box()
        result = {"n": n, "first_map": first_map / 1000}
        shown = nb.locator('select[data-role="color-by"]').input_value()
        result["colour"] = colour_by(nb, "height")
        result["colour_back"] = colour_by(nb, shown)
        say("coloured")
        # "item {n - 1}" names one point; "item 1" every point whose index starts with 1.
        result["search_one"] = search(nb, f"item {n - 1}", 1)
        result["search_hits"] = hits = sum(1 for i in range(n) if str(i).startswith("1"))
        result["search_many"] = search(nb, "item 1", hits)
        search(nb, "", 0)
        say("searched")
        # The cluster centres on the screen: the map's bounds fill the plot's box
        # (the page keeps the aspect, so some may fall off: those show no tooltip).
        Y_bounds = nb.py_value("[float(Y[:, 0].min()), float(Y[:, 0].max()), "
                               "float(Y[:, 1].min()), float(Y[:, 1].max())]")
        centres = nb.py_value("centres.tolist()")
        x0, x1, y0, y1 = Y_bounds
        points = [(box["x"] + box["width"] * (0.05 + 0.9 * (cx - x0) / (x1 - x0)),
                   box["y"] + box["height"] * (0.95 - 0.9 * (cy - y0) / (y1 - y0)))
                  for cx, cy in centres]
        result["hover"] = hover(nb, box, points)
        say(f"hovered ({len(result['hover'][0])} of {len(points)} tooltips)")
        result["zoom"] = gesture(nb, box, "zoom")
        result["pan"] = gesture(nb, box, "pan")
        say("zoomed and panned")
        result["kernel_rss"] = nb.py_value(KERNEL_PEAK_RSS)
        result["page_heap"] = page_heap_mb(nb.page)
        nb.page.evaluate("() => { window.benchRecord.running = false; }")
        return result


def table(rows):
    def ms(pair):
        return f"{pair[0]:.0f} ({pair[1]:.0f})"

    header = ["points", "first map (s)", "colour by a column", "back to labels",
              "search, 1 hit", "search, many hits", "hover (tooltips)", "zoom: frames/s (stall)",
              "pan: frames/s (stall)", "kernel RSS (MB)", "page heap (MB)"]
    body = []
    for r in rows:
        latencies, stall = r["hover"]
        hover = (f"{statistics.median(latencies):.0f} ({stall:.0f}), {len(latencies)} shown"
                 if latencies else f"none shown ({stall:.0f})")
        body.append([r["n"], f"{r['first_map']:.1f}", ms(r["colour"]), ms(r["colour_back"]),
                     ms(r["search_one"]), f"{ms(r['search_many'])}, {r['search_hits']} hits",
                     hover, f"{r['zoom'][0]:.1f} ({r['zoom'][1]:.0f})",
                     f"{r['pan'][0]:.1f} ({r['pan'][1]:.0f})", f"{r['kernel_rss']:.0f}",
                     f"{r['page_heap']:.0f}"])
    return markdown_table(header, body)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--viewport", default="1400x1000",
                        help="browser window WIDTHxHEIGHT in pixels (default 1400x1000)")
    parser.add_argument("--json", type=pathlib.Path, help="also write the results here")
    args = parser.parse_args(argv)
    reason = missing_browser_reason()
    if reason:
        sys.exit(f"cannot run: {reason}")
    width, height = (int(v) for v in args.viewport.lower().split("x"))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        with LabServer(tmp / "notebooks", tmp / "state") as server, \
                chromium_context(tmp / "profile", {"width": width, "height": height}) as context:
            context.set_default_timeout(TIMEOUT_S * 1000)
            lab = JupyterLab(context, server)
            for n in args.sizes:
                rows.append(measure(lab, n))
    print(f"nbembed {git_state()}; browser window {width} x {height}")
    print("Milliseconds from the action to its effect (the longest stall of the page "
          "meanwhile, ms):\n")
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
