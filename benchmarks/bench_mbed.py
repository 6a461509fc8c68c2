#!/usr/bin/env python
"""Benchmark Mbed's Algorithm 1 and compare it with HSSNE at the same n.

For every n in ``--sizes`` (default 550, 2000, 5000) the data are a seeded
g50c-like mixture: two Gaussians in 50 dimensions, half the points each, with
means chosen for a Bayes error of 5%. Measured:

* **Algorithm 1**: ``Mbed(2).fit`` with its defaults (500 CG iterations:
  10 of SNE, then 19 annealing steps), wall clock and process CPU time, after
  the O(n^2) preparation (distances, neighbourhoods), which is timed apart.
* **Per iteration**: Algorithm 1's time per CG iteration (one line search),
  the objective evaluations per iteration, and the time of one objective
  evaluation (cost and gradient), against one exact HSSNE gradient
  (``affinity="exact"``, exact repulsion, ``step`` of 50 iterations / 50).
* **One default HSSNE fit** (``HSSNE()``: 1000 iterations, its affinities
  included) and the ratio (preparation + Algorithm 1) / HSSNE fit (goal: at
  most 10 at n = 2000).
* **Peak memory** of ``prepare`` plus 30 iterations, in a separate run: the
  tracemalloc peak of Python/NumPy allocations (Numba's per-task row buffers
  are not seen by it; they are n doubles per task) and the sampled resident
  set above its value at the start.

Numba compilation is excluded by warm-up fits on 120 points. Threads: Numba
and the BLAS/OpenMP pools use ``--threads`` (default 2), with
``OMP_WAIT_POLICY=passive``. Wall-clock numbers are only meaningful on an idle
machine; the CPU times are printed beside them.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/bench_mbed.py --quick      # smoke run, seconds
    PYTHONPATH=. python benchmarks/bench_mbed.py              # n = 550, 2000, 5000
    PYTHONPATH=. python benchmarks/bench_mbed.py --sizes 2000 --threads 1
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import tracemalloc

MB = 2.0 ** 20


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="550,2000,5000",
                   help="comma-separated numbers of points (default: 550,2000,5000)")
    p.add_argument("--threads", type=int, default=2, help="Numba/BLAS threads (default 2)")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: n = 150, 300 and short schedules (numbers not meaningful)")
    p.add_argument("--skip-hssne-fit", action="store_true",
                   help="do not time the full default HSSNE fits")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def configure_threads(threads):
    """Set the thread pools before NumPy and Numba are imported."""
    for var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")


def g50c_like(n, seed):
    """Two Gaussians in 50-D whose Bayes error is 5% (as Chapelle & Zien's g50c)."""
    import numpy as np
    from scipy.stats import norm

    rng = np.random.default_rng(seed)
    dim = 50
    # Equal classes, unit covariance: Bayes error = Phi(-|mu_1 - mu_2| / 2).
    half_gap = -norm.ppf(0.05)
    mean = np.zeros(dim)
    mean[0] = half_gap
    y = np.arange(n) % 2
    X = rng.standard_normal((n, dim)) + np.where(y[:, None] == 0, mean, -mean)
    return X, y


class RSSSampler:
    """Peak resident set size above the start, sampled every few milliseconds."""

    def __init__(self, every=0.005):
        self.every = every
        self.start = self._rss()
        self.peak = self.start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    @staticmethod
    def _rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    def _loop(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self._rss())
            time.sleep(self.every)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss())

    @property
    def above_start_mb(self):
        return (self.peak - self.start) / MB


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def measure(n, args, mbed_params, hssne_params):
    import numpy as np

    from nbembed import HSSNE
    from nbembed.methods.mbed import Mbed

    X, _ = g50c_like(n, args.seed)
    row = {"n": n, "dense_mb": 8 * n * n / MB}

    # Memory first, while nothing else of this size is alive.
    tracemalloc.start()
    with RSSSampler() as rss:
        Mbed(2, random_state=args.seed, **mbed_params).prepare(X).step(30)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    row["tracemalloc_mb"] = peak / MB
    row["rss_mb"] = rss.above_start_mb

    model = Mbed(2, random_state=args.seed, **mbed_params)
    run, row["prepare_s"], _ = timed(lambda: model.prepare(X))
    _, row["alg1_s"], row["alg1_cpu_s"] = timed(run.run)
    row["iterations"] = run.iteration
    row["ms_per_iter"] = 1e3 * row["alg1_s"] / run.iteration
    row["evals_per_iter"] = run.history[-1]["evaluations"] / run.iteration
    repeats = 5
    # The objective itself: the run caches the cost of its current embedding.
    Yt = np.ascontiguousarray(run.embedding.T)
    grad = np.empty_like(Yt)
    _, wall, _ = timed(lambda: [run.objective.value_and_gradient(Yt, grad)
                                for _ in range(repeats)])
    row["ms_per_eval"] = 1e3 * wall / repeats

    hssne = HSSNE(affinity="exact", random_state=args.seed)
    if "repulsion" in hssne.get_params():
        hssne.set_params(repulsion="exact")
    hrun = hssne.prepare(X)
    hrun.step(1)
    steps = 50 if n <= 5000 else 20
    _, wall, _ = timed(lambda: hrun.step(steps))
    row["hssne_ms_per_grad"] = 1e3 * wall / steps
    row["iter_ratio"] = row["ms_per_iter"] / row["hssne_ms_per_grad"]

    if args.skip_hssne_fit:
        row["hssne_fit_s"] = float("nan")
    else:
        _, row["hssne_fit_s"], _ = timed(
            lambda: HSSNE(random_state=args.seed, **hssne_params).fit(X))
    row["fit_ratio"] = (row["prepare_s"] + row["alg1_s"]) / row["hssne_fit_s"]

    return row


COLUMNS = [
    ("n", "n", "{:d}"),
    ("prepare_s", "prepare s", "{:.2f}"),
    ("alg1_s", "Alg.1 s", "{:.2f}"),
    ("alg1_cpu_s", "Alg.1 CPU s", "{:.2f}"),
    ("ms_per_iter", "ms/CG iter", "{:.2f}"),
    ("evals_per_iter", "evals/iter", "{:.2f}"),
    ("ms_per_eval", "ms/eval", "{:.2f}"),
    ("hssne_ms_per_grad", "HSSNE ms/grad", "{:.2f}"),
    ("iter_ratio", "iter/grad", "{:.1f}x"),
    ("hssne_fit_s", "HSSNE fit s", "{:.2f}"),
    ("fit_ratio", "(prep+Alg.1)/HSSNE fit", "{:.1f}x"),
    ("tracemalloc_mb", "peak MB (tracemalloc)", "{:.0f}"),
    ("rss_mb", "peak RSS MB", "{:.0f}"),
    ("dense_mb", "one n x n MB", "{:.0f}"),
]


def print_table(rows):
    header = [title for _, title, _ in COLUMNS]
    cells = [[fmt.format(row[key]) if row[key] == row[key] else "-" for key, _, fmt in COLUMNS]
             for row in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(header)]
    print("| " + " | ".join(h.rjust(w) for h, w in zip(header, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for c in cells:
        print("| " + " | ".join(v.rjust(w) for v, w in zip(c, widths)) + " |")


def main(argv=None):
    args = parse_args(argv)
    configure_threads(args.threads)
    from nbembed import HSSNE
    from nbembed.methods.mbed import Mbed

    if args.quick:
        sizes = [150, 300]
        mbed_params = dict(max_iter=60, n_anneal=6, n_iter_init=5)
        hssne_params = dict(max_iter=100, early_exaggeration_iter=50, perplexity=10.0)
    else:
        sizes = [int(s) for s in args.sizes.split(",")]
        mbed_params, hssne_params = {}, {}
    load = os.getloadavg()
    print(f"# Mbed benchmark: python {sys.version.split()[0]}, {args.threads} thread(s), "
          f"load average {load[0]:.2f} at the start")

    X, _ = g50c_like(120, 0)
    Mbed(2, max_iter=12, n_anneal=3, n_iter_init=2, random_state=0).fit(X)
    HSSNE(max_iter=20, early_exaggeration_iter=5, perplexity=10.0).fit(X)

    rows = []
    for n in sizes:
        rows.append(measure(n, args, mbed_params, hssne_params))
        print(f"# n = {n} done", flush=True)
    print_table(rows)
    print(f"# load average {os.getloadavg()[0]:.2f} at the end")
    if args.quick:
        print("# --quick: short schedules; the ratios are not those of the defaults.")


if __name__ == "__main__":
    main()
