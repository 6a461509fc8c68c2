#!/usr/bin/env python
"""One HSSNE run as a user makes it: ``HSSNE(alpha=...).fit_transform(X)``, whole.

``bench_scale.py`` compares optimizers on one shared P; this script answers the
user's question instead — how long does ``fit_transform`` take on n points, and
how much memory does the process need — with every default left alone
(nearest neighbours, perplexity calibration, the automatic repulsion) except
the number of iterations: 750 by default as in ``bench_scale.py`` and openTSNE
(250 of them with early exaggeration); ``--max-iter 1000`` is HSSNE's own default.

It times the two parts of ``fit``: ``prepare`` (the neighbourhood step and the
start) and the iterations, and reports the process's peak resident memory
(ru_maxrss, which includes the data). Numba kernels and nearest-neighbour
descent are compiled (or loaded from the cache) on a small problem first, so
compilation is not timed.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/bench_end_to_end.py --n 1000000
    PYTHONPATH=. python benchmarks/bench_end_to_end.py --n 70000 --data usps
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_hssne import gaussian_mixture, git_state, markdown_table, max_rss  # noqa: E402
from bench_scale import usps_like  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, required=True, help="number of points")
    p.add_argument("--data", default="synthetic", choices=("synthetic", "usps"))
    p.add_argument("--alpha", type=float, default=1.0)
    p.add_argument("--max-iter", type=int, default=750)
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def warm_up(alpha):
    """Compile what the timed run uses, on 300 points."""
    from nbembed import HSSNE

    X, _ = gaussian_mixture(300, dim=10, seed=1)
    for repulsion in ("barnes-hut", "fft"):
        HSSNE(alpha=alpha, affinity="knn", neighbors="approximate", repulsion=repulsion,
              max_iter=30, early_exaggeration_iter=10, random_state=0).fit(X)


def main(argv=None):
    args = parse_args(argv)
    from nbembed import HSSNE
    from nbembed.metrics import homogeneity

    warm_up(args.alpha)
    X, y = (gaussian_mixture(args.n, dim=50) if args.data == "synthetic" else
            usps_like(args.n))
    rss_data = max_rss() / 2**30
    # --max-iter iterations, all of them (tol=0), as the docs report them.
    est = HSSNE(alpha=args.alpha, max_iter=args.max_iter, tol=0, random_state=args.seed)
    t0 = time.perf_counter()
    run = est.prepare(X)
    t_prepare = time.perf_counter() - t0
    rss_prepare = max_rss() / 2**30
    run.step(est.max_iter)
    t_iter = time.perf_counter() - t0 - t_prepare
    Y = run.embedding
    rows = [[args.data, args.n, X.shape[1], f"{args.alpha:g}", f"{t_prepare:.1f}",
             f"{t_iter:.1f}", f"{t_prepare + t_iter:.1f}", f"{rss_data:.2f}",
             f"{rss_prepare:.2f}", f"{max_rss() / 2**30:.2f}",
             f"{run.history[-1]['cost']:.4f}", f"{homogeneity(Y, y):.3f}", run.objective.repulsion]]
    header = ["data", "n", "d", "alpha", "prepare (s)", "iterations (s)", "total (s)",
              "peak RSS with data (GiB)", "after prepare", "at the end", "final KL",
              "homogeneity", "repulsion"]
    import numba

    print(f"nbembed {git_state()}; numba {numba.__version__} ({numba.get_num_threads()} "
          f"threads), numpy {np.__version__}, Python {platform.python_version()}; "
          f"{est.max_iter} iterations")
    print(markdown_table(header, rows))


if __name__ == "__main__":
    main()
