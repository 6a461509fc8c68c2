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

Usage (from the repository root; needs the built widget bundle)::

    PYTHONPATH=. python benchmarks/bench_lasso.py                  # 10^6 points, 10^5 lassoed
    PYTHONPATH=. python benchmarks/bench_lasso.py --n 100000 --selected 10000
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


def main(argv=None):
    args = parse_args(argv)
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
