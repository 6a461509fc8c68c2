#!/usr/bin/env python
"""A lasso of many points in a large map, on the kernel's side: selection in,
annotation applied, marks out.

The Explorer shows a finished embedding of ``--n`` points (``method=
"precomputed"``: no run, so only the widget's own work is timed) and the
page's lasso is played as the page sends it: the selection of ``--selected``
points as a bitmask in a state update. Timed, each the median of ``--repeats``:

* **selection in**: the state update decoded into ``ex.selection``;
* **label**, **must-link**: ``ex.apply`` of a soft label and of a must-link
  (what the Apply button calls), until the marks the page draws are set;
* **undo**: ``ex.undo()`` of the label, marks included;
* **export**, **import**: the annotations as the Export button's JSON, and
  ``import_annotations`` of that text into a fresh Explorer.

The page's side (drawing the marks) is not in these numbers; the browser
tests cover it at 2 * 10^5 points. Also reported: the bytes of the selection
message and of the marks.

``--run`` times the run's side instead: what HSSNE's objective does when a
lasso of ``--selected`` points becomes a must-link group and the gradient
after it (which makes the spatial order's copy of P~ again), on a symmetric
sparse P of ``--n`` rows with about 145 entries a row, the shape of a
perplexity-30 P (a real one at 10^6 points needs minutes of neighbour search
and shows the same costs). ``--lassos`` lassos, one after the other. As in
the Explorer, from ``ANNOTATIONS_ASIDE_MIN_N`` points the links, P~ and its
copy in the spatial order are worked out in a thread of their own while
gradients go on (their number and the longest of them are printed), and the
run stops only to take them up; below it the run stops to link and mix.
The pause is the time the run stops for (no frame goes out): the links when
not aside, taking them up (or mixing P~) and the gradient after; its median
is printed last. Compare the gradient after with the next one: what the
lasso adds to a step is their difference.

Usage (from the repository root; needs the built widget bundle)::

    PYTHONPATH=. python benchmarks/bench_lasso.py                  # 10^6 points, 10^5 lassoed
    PYTHONPATH=. python benchmarks/bench_lasso.py --n 100000 --selected 10000
    PYTHONPATH=. python benchmarks/bench_lasso.py --run            # HSSNE taking the lasso in
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_hssne import git_state, markdown_table, max_rss  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--selected", type=int, default=100_000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--run", action="store_true",
                   help="time HSSNE's objective taking the lasso in as a must-link")
    p.add_argument("--lassos", type=int, default=6,
                   help="with --run: lassos taken in, one after the other")
    return p.parse_args(argv)


def selection_message(state):
    """A comm message carrying a binary state update, as the page sends it."""
    buffers, paths = [], []
    for key, value in list(state.items()):
        if isinstance(value, (bytes, bytearray)):
            paths.append([key])
            buffers.append(memoryview(value))
            state[key] = None
    return {"content": {"data": {"method": "update", "state": state,
                                 "buffer_paths": paths}}, "buffers": buffers}


def timed(call, repeats, before=None):
    """Median seconds of ``call()`` over ``repeats`` runs (``before()`` untimed)."""
    times = []
    for _ in range(repeats):
        if before is not None:
            before()
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def knn_like_affinities(n, rng, k=90, spread=200):
    """A symmetric P of n rows summing to one, float32: each row draws k
    partners among the ``spread`` rows on either side, so about 2k - overlap
    entries a row after symmetrizing, with the memory locality of a P in the
    spatial order."""
    import scipy.sparse as sp

    rows = np.repeat(np.arange(n), k)
    cols = (rows + rng.integers(-spread, spread, size=n * k)) % n
    cols[cols == rows] = (cols[cols == rows] + 1) % n
    W = sp.csr_matrix((rng.random(n * k).astype(np.float32), (rows, cols)), shape=(n, n))
    P = W + W.T
    P = sp.csr_matrix(P / P.sum(), dtype=np.float32)
    P.sort_indices()
    return P


def run_side(args):
    """Seconds of HSSNE's objective taking ``--lassos`` lassos in, one after the
    other, as the Explorer's worker does at that size, and of the gradients
    around them."""
    import threading

    from nbembed import Annotations
    from nbembed.objectives.hssne import HSSNEObjective

    rng = np.random.default_rng(0)
    P = knn_like_affinities(args.n, rng)
    objective = HSSNEObjective(P, None, n_components=2, alpha=1.0, rho=0.5,
                               dtype=np.float32, repulsion="adaptive")
    Yt = (30 * rng.normal(size=(2, args.n))).astype(np.float32)
    grad = np.empty_like(Yt)

    def gradient():
        # A new embedding each time: the objective reuses the repulsion of the last one.
        moved = Yt + rng.normal(scale=1e-3, size=Yt.shape).astype(np.float32)
        start = time.perf_counter()
        objective.gradient(moved, grad)
        return time.perf_counter() - start

    gradient()  # compiled, and the spatial order made
    annotations = Annotations(args.n)
    rows, pauses = [], []
    for lasso in range(1, args.lassos + 1):
        annotations.add_must_link(rng.choice(args.n, args.selected, replace=False))
        snapshot = annotations.copy()
        start = time.perf_counter()
        if objective.annotations_aside:
            # The links worked out in a thread of their own while the run goes on.
            prepared = {}
            aside = threading.Thread(target=lambda: prepared.setdefault(
                "apply", objective.prepare_annotations(snapshot)))
            aside.start()
            meanwhile = []
            while aside.is_alive():
                meanwhile.append(gradient())
            aside.join()
            apply = prepared["apply"]
        else:
            meanwhile = []
            apply = objective.prepare_annotations(snapshot)
        t_aside = time.perf_counter() - start
        start = time.perf_counter()
        if apply is not None:
            apply()
        t_apply = time.perf_counter() - start
        t_after = gradient()
        t_next = gradient()
        pause = t_apply + t_after if objective.annotations_aside else t_aside + t_apply + t_after
        pauses.append(pause)
        rows.append([args.n, P.nnz // args.n, args.selected, lasso, f"{t_aside:.2f}",
                     len(meanwhile), f"{max(meanwhile, default=0):.2f}", f"{t_apply:.2f}",
                     f"{t_after:.2f}", f"{pause:.2f}", f"{t_next:.2f}",
                     f"{max_rss() / 2**30:.2f}"])
    where = ("links, P~ and its copy worked out aside, while the run goes on"
             if objective.annotations_aside else "links worked out in the run")
    header = ["points", "entries a row", "lassoed", "lasso", "worked out (s)",
              "gradients meanwhile", "longest of them (s)", "taken up (s)",
              "gradient after (s)", "pause (s)", "next gradient (s)", "peak RSS (GiB)"]
    print(f"nbembed {git_state()}; HSSNE's objective, one run each; {where}")
    print(markdown_table(header, rows))
    print(f"median pause {statistics.median(pauses):.2f} s over {args.lassos} lassos")


def main(argv=None):
    args = parse_args(argv)
    if args.run:
        return run_side(args)
    from nbembed.widget import Explorer
    from nbembed.widget.traits import encode_selection

    rng = np.random.default_rng(0)
    Y = rng.normal(size=(args.n, 2))
    # The points a lasso catches lie together: the ones in a disc around a point.
    centre = Y[0]
    lassoed = np.sort(np.argsort(np.linalg.norm(Y - centre, axis=1))[:args.selected])
    ex = Explorer(Y, method="precomputed", class_names=["a", "b"])
    ex.wait(timeout=600)
    payload = encode_selection(lassoed, args.n)
    message = selection_message({"_selection": payload})

    def select():
        ex._handle_msg(selection_message({"_selection": payload}))
        assert len(ex.selection) == args.selected

    t_select = timed(select, args.repeats)

    def label():
        ex.apply("soft_label", lassoed, label=0)
        assert ex._marks  # the marks the page draws are set with the annotation

    t_label = timed(label, args.repeats, before=lambda: ex.annotations.clear())
    t_undo = timed(ex.undo, args.repeats,
                   before=lambda: ex.apply("soft_label", lassoed, label=1))
    t_link = timed(lambda: ex.apply("must_link", lassoed), args.repeats,
                   before=lambda: ex.annotations.clear())
    ex.apply("soft_label", lassoed[: args.selected // 2], label=0)
    text = ex.annotations_json()
    t_export = timed(ex.annotations_json, args.repeats)
    other = Explorer(Y, method="precomputed", class_names=["a", "b"])
    other.wait(timeout=600)
    t_import = timed(lambda: other.import_annotations(text), args.repeats,
                     before=lambda: other.annotations.clear())
    rows = [[args.n, args.selected, f"{len(message['buffers'][0]) / 1e3:.0f}",
             f"{1e3 * t_select:.0f}", f"{1e3 * t_label:.0f}", f"{1e3 * t_link:.0f}",
             f"{1e3 * t_undo:.0f}", f"{1e3 * t_export:.0f}", f"{1e3 * t_import:.0f}",
             f"{len(text) / 1e6:.1f}", f"{len(ex._marks) / 1e6:.1f}",
             f"{max_rss() / 2**30:.2f}"]]
    header = ["points", "lassoed", "selection message (kB)", "selection in (ms)",
              "label (ms)", "must-link (ms)", "undo (ms)", "export (ms)", "import (ms)",
              "JSON (MB)", "marks (MB)", "peak RSS (GiB)"]
    print(f"nbembed {git_state()}; median of {args.repeats}")
    print(markdown_table(header, rows))
    ex.stop()
    other.stop()


if __name__ == "__main__":
    main()
