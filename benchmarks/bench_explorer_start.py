#!/usr/bin/env python
"""How soon a new Explorer shows a map: time to its first frame and to iteration 100.

For each size, a fresh Python process makes ``Explorer(X, method=HSSNE(alpha=1.0))``
on the 50-D Gaussian mixture of ``data_shapes`` three times, one after the other,
and records from the call to the first frame sent to the browser (kernel side;
a page draws it within one animation frame, see ``bench_widget.py``), to the
first frame of the run (the same below ``nbembed.widget.preview.PREVIEW_MIN_N``
points; above, the first frame is the principal-component map shown while the
run is prepared) and to the run's iteration 100. The first Explorer of the process also loads every
compiled kernel from Numba's disk cache (run it once before to fill the cache);
the next two are what a user meets when running the cell again.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/bench_explorer_start.py --sizes 20000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPEATS = 3
TARGET_ITERATION = 100
TIMEOUT_S = 600.0


def _measure(n):
    """[(seconds to the first frame, to the run's first frame, to iteration 100)] for
    REPEATS Explorers."""
    sys.path.insert(0, HERE)
    from data_shapes import mixture

    from nbembed import HSSNE, Explorer

    X, _ = mixture(n)
    results = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        ex = Explorer(X, method=HSSNE(alpha=1.0))
        first = first_of_run = None
        before_the_run = False
        while time.perf_counter() - start < TIMEOUT_S:
            if first is None and ex.frames_sent >= 1:
                first = time.perf_counter() - start
                before_the_run = ex.embedding is None  # the preview
            if first_of_run is None and ex.embedding is not None and \
                    ex.frames_sent >= 1 + before_the_run:
                first_of_run = time.perf_counter() - start
            if ex.iteration >= TARGET_ITERATION:
                break
            time.sleep(0.002)
        results.append((first, first_of_run, time.perf_counter() - start))
        ex.stop(timeout=30)
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20000])
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(_measure(args.worker)))
        return
    print("| points (50-D mixture) | Explorer | first frame (s) | first frame of the run (s) "
          "| iteration 100 (s) |")
    print("|---|---|---|---|---|")
    for n in args.sizes:
        done = subprocess.run([sys.executable, __file__, "--worker", str(n)], check=True,
                              capture_output=True, text=True)
        for index, (first, of_run, hundred) in enumerate(
                json.loads(done.stdout.splitlines()[-1])):
            which = "first in the process" if index == 0 else f"again ({index})"
            print(f"| {n} | {which} | {first:.2f} | {of_run:.2f} | {hundred:.2f} |",
                  flush=True)


if __name__ == "__main__":
    main()
