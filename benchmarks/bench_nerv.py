#!/usr/bin/env python
"""Time NeRV's exact gradient and the learning-metric distances.

Two tables, printed as markdown:

1. Seconds per cost-and-gradient evaluation against n (default 1000, 5000,
   10000) for NeRV's kernel (``nerv_gradient``, one exponential per pair,
   dense P and log P) next to the exact dense HSSNE/t-SNE gradient kernel
   (``hssne_dense`` at alpha = 1, no exponential), on the same synthetic 2-D
   layout and the same dense P. One NeRV iteration is about 1.1 evaluations
   with L-BFGS (see docs/nerv.md).
2. Seconds for ``LearningMetric.pairwise_distances`` at n = 1500 and 5000
   (50 features, 10 classes, 40 Gaussians, T = 10 pieces).

Numba compilation is excluded (a warm-up call on a tiny problem first); each
timing is the fastest of ``--repeats`` calls. Memory: NeRV holds P and log P
(2 n^2 floats, 1.6 GB at n = 10000).

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/bench_nerv.py                 # full run
    PYTHONPATH=. python benchmarks/bench_nerv.py --tiny          # smoke test, seconds
    PYTHONPATH=. NUMBA_NUM_THREADS=2 python benchmarks/bench_nerv.py --sizes 1000,2000
"""

from __future__ import annotations

import argparse
import os
import platform
import time

# Spinning OpenMP/BLAS threads slowed Numba's parallel kernels by up to 50x on a
# shared machine (see bench_hssne.py); set before numpy starts its pools.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import numba  # noqa: E402
import numpy as np  # noqa: E402

from nbembed import _config  # noqa: E402
from nbembed._kernels import hssne, nerv  # noqa: E402
from nbembed.affinity import conditional_probabilities  # noqa: E402
from nbembed.affinity.learning_metric import LearningMetric  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="1000,5000,10000",
                   help="comma-separated n for the gradient table")
    p.add_argument("--metric-sizes", default="1500,5000",
                   help="comma-separated n for the learning-metric table")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--tiny", action="store_true",
                   help="tiny sizes only (checks that the script runs)")
    return p.parse_args(argv)


def fastest(fn, repeats):
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def synthetic(n, d, n_classes, rng):
    centers = rng.normal(scale=4.0, size=(n_classes, d))
    y = rng.integers(0, n_classes, n)
    return centers[y] + rng.normal(size=(n, d)), y


def gradient_problem(n, rng):
    X, _ = synthetic(n, 10, 10, rng)
    P, beta = conditional_probabilities(X, 20.0, method="exact")
    Yt = np.ascontiguousarray(rng.normal(size=(2, n)))
    return P, beta, Yt


def time_gradients(n, repeats, rng):
    P, beta, Yt = gradient_problem(n, rng)
    logP = nerv.floored_log(P)
    joint = (P + P.T) / (2.0 * n)
    grad = np.empty_like(Yt)

    def run_nerv():
        with _config.KERNEL_LOCK:
            nerv.nerv_gradient(Yt, P, logP, beta, 0.3, nerv.GRADIENT_CHUNKS, grad)

    def run_hssne():
        with _config.KERNEL_LOCK:
            hssne.hssne_dense(Yt, joint, 1.0, 1.0, grad)

    return fastest(run_nerv, repeats), fastest(run_hssne, repeats)


def time_metric(n, repeats, rng):
    X, y = synthetic(n, 50, 10, rng)
    # A fit on a subsample: only the distance computation is timed.
    sub = rng.choice(n, min(n, 600), replace=False)
    lm = LearningMetric(n_components=40, sigma=2.0, max_iter=50, random_state=0)
    lm.fit(X[sub], y[sub])
    return fastest(lambda: lm.pairwise_distances(X), repeats)


def main(argv=None):
    args = parse_args(argv)
    sizes = [60, 120] if args.tiny else [int(s) for s in args.sizes.split(",")]
    metric_sizes = [60] if args.tiny else [int(s) for s in args.metric_sizes.split(",")]
    repeats = 1 if args.tiny else args.repeats
    rng = np.random.default_rng(0)

    # Warm-up: compile every kernel on a tiny problem, off the clock.
    time_gradients(40, 1, rng)
    time_metric(40, 1, rng)

    print(f"numba threads: {numba.get_num_threads()}, cpus: {os.cpu_count()}, "
          f"machine: {platform.machine()}, load average: {os.getloadavg()[0]:.2f}\n")
    print("| n | NeRV gradient (ms) | HSSNE alpha=1 gradient (ms) | ratio |")
    print("|---|---|---|---|")
    for n in sizes:
        t_nerv, t_hssne = time_gradients(n, repeats, rng)
        print(f"| {n} | {1e3 * t_nerv:.2f} | {1e3 * t_hssne:.2f} | {t_nerv / t_hssne:.1f} |",
              flush=True)
    print("\n| n | learning-metric distances (s) | pairs per second |")
    print("|---|---|---|")
    for n in metric_sizes:
        t = time_metric(n, repeats, rng)
        print(f"| {n} | {t:.2f} | {n * (n - 1) / 2 / t:.3g} |", flush=True)
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
