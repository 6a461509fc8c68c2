"""Parametric Embedding: time and rounds to converge against the number of objects.

Synthetic posteriors: n rows drawn from a symmetric Dirichlet over K classes
(seeded). For each n the script fits ``ParametricEmbedding`` and reports the
time of the fit, the rounds of the alternation until convergence, the time per
round, the Newton steps per object and round, and the final mean KL divergence.
The log-log slope of time against n is fitted by least squares (the paper
measured 0.75 for PE, 2.2 for SNE); a slope near 1 means O(n K) per round and
rounds that do not grow with n.

Numba compiles (or loads from its cache) before the first timed fit, so no fit
pays for compilation. Timings need an otherwise idle machine.

    PYTHONPATH=. python benchmarks/bench_parametric.py               # 1e3..1e6
    PYTHONPATH=. python benchmarks/bench_parametric.py --quick       # tiny sizes, seconds
    PYTHONPATH=. python benchmarks/bench_parametric.py --sizes 1000,10000 --repeats 3
    PYTHONPATH=. python benchmarks/bench_parametric.py --eta-phi 50  # the paper's fixed weight
"""

from __future__ import annotations

import argparse
import os
import time
import warnings


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,3000,10000,30000,100000,300000,1000000",
                        help="comma-separated numbers of objects")
    parser.add_argument("--classes", type=int, default=10, help="K (default 10)")
    parser.add_argument("--concentration", type=float, default=0.3,
                        help="Dirichlet concentration of the posteriors (default 0.3)")
    parser.add_argument("--eta-phi", default="auto",
                        help='"auto" (0.01 n, default) or a number such as the paper\'s 50')
    parser.add_argument("--tol", type=float, default=1e-6)
    parser.add_argument("--max-iter", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=1,
                        help="fits per size with different seeds (median time reported)")
    parser.add_argument("--threads", type=int, default=None,
                        help="Numba threads (default: all cores)")
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes only, to check that the script runs")
    return parser.parse_args()


def main():
    args = parse_args()
    if args.threads:
        os.environ["NUMBA_NUM_THREADS"] = str(args.threads)
    import numpy as np

    from nbembed.methods.parametric import ParametricEmbedding

    sizes = [200, 400, 800] if args.quick else [int(s) for s in args.sizes.split(",")]
    eta_phi = args.eta_phi if args.eta_phi == "auto" else float(args.eta_phi)
    K = args.classes

    def posteriors(n, seed):
        return np.random.default_rng(seed).dirichlet(np.full(K, args.concentration), size=n)

    # Compile or load the kernels outside the timings.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ParametricEmbedding(max_iter=2, random_state=0).fit(posteriors(50, 0))

    print(f"K = {K}, Dirichlet({args.concentration:g}), eta_phi = {eta_phi}, tol = "
          f"{args.tol:g}, repeats = {args.repeats}")
    header = f"{'n':>9} {'seconds':>9} {'rounds':>7} {'ms/round':>9} {'newton/obj':>10} " \
             f"{'mean KL':>8}"
    print(header)
    print("-" * len(header))
    times, rounds = [], []
    for n in sizes:
        runs = []
        for seed in range(args.repeats):
            P = posteriors(n, seed)
            pe = ParametricEmbedding(eta_phi=eta_phi, tol=args.tol, max_iter=args.max_iter,
                                     random_state=seed)
            start = time.perf_counter()
            pe.fit(P)
            seconds = time.perf_counter() - start
            steps = np.mean([h["newton_steps"] for h in pe.history_[1:]]) if pe.n_iter_ else 0
            runs.append((seconds, pe.n_iter_, steps, pe.kl_divergence_))
        seconds, n_iter, steps, kl = (float(np.median([r[i] for r in runs])) for i in range(4))
        times.append(seconds)
        rounds.append(n_iter)
        print(f"{n:>9d} {seconds:>9.3f} {n_iter:>7.0f} {1e3 * seconds / max(n_iter, 1):>9.2f} "
              f"{steps:>10.2f} {kl:>8.4f}")
    if len(sizes) > 1:
        logn = np.log(sizes)
        slope_time = np.polyfit(logn, np.log(times), 1)[0]
        slope_round = np.polyfit(logn, np.log(np.array(times) / np.maximum(rounds, 1)), 1)[0]
        slope_iter = np.polyfit(logn, np.log(np.maximum(rounds, 1)), 1)[0]
        print(f"\nlog-log slope of time vs n: {slope_time:.2f} (goal <= 1.0; paper: PE 0.75, "
              f"SNE 2.2)")
        print(f"log-log slope of time per round vs n: {slope_round:.2f}")
        print(f"log-log slope of rounds vs n: {slope_iter:.2f}")


if __name__ == "__main__":
    main()
