#!/usr/bin/env python
"""HSSNE at scale: nbembed's approximate repulsion against openTSNE (FFT and BH).

One size per invocation (``--n``), so each can be run on an idle machine:

* ``synthetic``: the seeded Gaussian mixture of ``bench_hssne.py`` (10 classes,
  ``--dim`` dimensions, default 50), any n;
* ``usps``: a USPS-like set of any n built from ``../shared/data/usps_full``
  (9298 digits): the originals plus copies shifted by one pixel with a little
  noise (skipped when the file is absent).

Protocol (same objective, same start, same schedule, as in ``bench_hssne.py``):

* The neighbourhood step is timed on its own (after a warm-up, so without the
  tens of seconds that pynndescent compiles on first use in a process):
  nbembed's kNN P (perplexity 30, k = 90, exact or approximate neighbours as
  ``neighbors="auto"`` picks) and,
  with ``--opentsne-affinity``, openTSNE's own ``PerplexityBasedNN`` for
  comparison. Both optimizers then run on nbembed's P.
* One start: nbembed's PCA initialization (std 1e-4), given to both.
* ``--max-iter`` iterations (default 750), the first ``--ee-iter`` (250) with early
  exaggeration 12; otherwise each library's defaults (nbembed:
  ``repulsion="auto"``, the optimizer "auto" picks from alpha; openTSNE:
  ``dof = 1 / alpha``, its learning rates, 3 interpolation points per box).
* One yardstick: snapshots every ``--trace-every`` iterations (copied inside the
  timed loop, evaluated afterwards off the clock) scored by KL(P || Q_alpha)
  on the same P, exact over all pairs up to ``--exact-kl-max-n`` points and
  above that with a fine interpolation grid (node spacing 0.1, relative error
  of Z below 1e-5 in our tests).
* Time to equal KL: the first snapshot at which nbembed's KL is at or below
  openTSNE FFT's final KL, against openTSNE FFT's whole run (the goal at 70k:
  ratio <= 1.0).
* Memory: the process's peak resident set (ru_maxrss) after the neighbourhood
  step and after nbembed's runs (nbembed runs first, so this is its peak with
  the data loaded), and tracemalloc peaks of the P step (Python/NumPy only).

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/bench_scale.py --n 3000 --alphas 1 --max-iter 200
    PYTHONPATH=. python benchmarks/bench_scale.py --n 20000 --data synthetic,usps
    PYTHONPATH=. python benchmarks/bench_scale.py --n 70000 --data synthetic,usps --markdown 70k.md
    PYTHONPATH=. python benchmarks/bench_scale.py --n 1000000 --alphas 1 --methods nbembed
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from bench_hssne import (USPS_PATH, MemoryMonitor, Report, first_reaching,  # noqa: E402
                         fmt, gaussian_mixture, git_state, markdown_table, max_rss,
                         p_log_p, run_opentsne)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, required=True, help="number of points")
    p.add_argument("--data", default="synthetic", help="comma list of synthetic, usps")
    p.add_argument("--dim", type=int, default=50, help="dimension of the synthetic data")
    p.add_argument("--alphas", default="0.5,1,2", help="comma list of alphas")
    p.add_argument("--methods", default="nbembed,opentsne-fft,opentsne-bh",
                   help="comma list of nbembed, opentsne-fft, opentsne-bh")
    p.add_argument("--max-iter", type=int, default=750)
    p.add_argument("--ee-iter", type=int, default=250)
    p.add_argument("--trace-every", type=int, default=25,
                   help="iterations between snapshots scored for the time-to-KL columns")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--nbembed-repulsion", default="auto",
                   choices=("auto", "exact", "barnes-hut", "fft"))
    p.add_argument("--nbembed-optimizer", default="auto",
                   choices=("auto", "gradient", "fixed-point"))
    p.add_argument("--bh-max-n", type=int, default=200_000,
                   help="skip openTSNE BH above this many points (default 200000)")
    p.add_argument("--exact-kl-max-n", type=int, default=100_000,
                   help="score KL exactly (O(n^2)) up to this n, with a fine grid above")
    p.add_argument("--opentsne-affinity", action="store_true",
                   help="also time openTSNE's own kNN affinities (not used for the runs)")
    p.add_argument("--markdown", metavar="FILE", help="also write the tables as markdown")
    args = p.parse_args(argv)
    args.data = [d.strip() for d in args.data.split(",") if d.strip()]
    for d in args.data:
        if d not in ("synthetic", "usps"):
            p.error(f"unknown data set {d!r}")
    args.alphas = [float(a) for a in args.alphas.split(",") if a.strip()]
    args.methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    for m in args.methods:
        if m not in ("nbembed", "opentsne-fft", "opentsne-bh"):
            p.error(f"unknown method {m!r}")
    if not 0 <= args.ee_iter < args.max_iter:
        p.error("--ee-iter must be in [0, max-iter)")
    return args


# ----------------------------------------------------------------------------- data

def usps_like(n, seed=0):
    """USPS digits, then copies shifted by one pixel (any of the 8 directions) with
    Gaussian noise of std 0.05, clipped to [0, 1], until there are n."""
    with np.load(USPS_PATH) as data:
        X0 = np.asarray(data["X"], dtype=np.float64)
        y0 = np.asarray(data["y"])
    rng = np.random.default_rng(seed)
    m = X0.shape[0]
    pick = np.concatenate([np.arange(min(n, m)), rng.integers(0, m, max(0, n - m))])
    images = X0[pick].reshape(-1, 16, 16).copy()
    extra = np.arange(len(pick)) >= m
    moves = [(dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1) if dy or dx]
    which = rng.integers(0, len(moves), len(pick))
    for k, (dy, dx) in enumerate(moves):
        sel = extra & (which == k)
        shifted = np.roll(images[sel], (dy, dx), axis=(1, 2))
        if dy:
            shifted[:, 0 if dy > 0 else -1, :] = 0.0
        if dx:
            shifted[:, :, 0 if dx > 0 else -1] = 0.0
        images[sel] = shifted
    X = images.reshape(len(pick), 256)
    X[extra] = np.clip(X[extra] + 0.05 * rng.standard_normal((int(extra.sum()), 256)), 0, 1)
    return X, y0[pick]


def load(name, args):
    if name == "synthetic":
        X, y = gaussian_mixture(args.n, dim=args.dim)
        return f"synthetic {args.dim}-D", X, y
    if not USPS_PATH.exists():
        return "usps-like", None, f"skipped: {USPS_PATH} not found"
    X, y = usps_like(args.n)
    return "usps-like", X, y


# ----------------------------------------------------------------------------- scoring

def kl_scorer(P, alpha, exact):
    """KL(P || Q_alpha) of an (n, 2) embedding: exact, or with Z from a fine grid."""
    from nbembed._kernels import hssne as K
    from nbembed._kernels.barnes_hut import barnes_hut_repulsion

    plogp = p_log_p(P)

    def score(Y):
        Yt = np.ascontiguousarray(np.asarray(Y, dtype=np.float64).T)
        if not np.all(np.isfinite(Yt)):
            return math.inf
        if exact:
            z = K.hssne_z(Yt, float(alpha))
        else:
            z = barnes_hut_repulsion(Yt, alpha, theta=0.2)
        plogh = K.sparse_p_log_h(Yt, P.indptr, P.indices, P.data, float(alpha))
        return plogp - plogh + math.log(z)

    return score


# ----------------------------------------------------------------------------- runners

def run_nbembed(P, Y0, alpha, args):
    """nbembed on the precomputed P; snapshots every trace_every iterations."""
    from nbembed import HSSNE

    # The whole schedule (tol=0): the comparison is over a fixed number of iterations.
    est = HSSNE(alpha=alpha, affinity="precomputed", max_iter=args.max_iter,
                early_exaggeration_iter=args.ee_iter, repulsion=args.nbembed_repulsion,
                optimizer=args.nbembed_optimizer, tol=0, random_state=0)
    run = est.prepare(P, init=Y0)
    snaps = [(0, 0.0, 0.0, run.embedding)]
    wall = cpu = 0.0
    while run.iteration < args.max_iter:
        todo = min(args.trace_every, args.max_iter - run.iteration)
        t0, c0 = time.perf_counter(), time.process_time()
        run.step(todo)
        Y = run.embedding
        wall += time.perf_counter() - t0
        cpu += time.process_time() - c0
        snaps.append((run.iteration, wall, cpu, Y))
    return dict(time=wall, cpu=cpu, snaps=snaps, Y=run.embedding, repulsion=run.objective.repulsion,
                optimizer=run.optimizer, recoveries=run.recoveries)


def neighbourhoods(X, args):
    """nbembed's kNN P, timed, with its memory."""
    from nbembed.affinity import joint_probabilities
    from nbembed.affinity.perplexity import _resolve_neighbors, exact_search_work

    kind = _resolve_neighbors("auto", exact_search_work(X), "euclidean")
    with MemoryMonitor() as mem:
        t0 = time.perf_counter()
        P = joint_probabilities(X, 30.0, method="knn", random_state=0)
        seconds = time.perf_counter() - t0
    return P, kind, seconds, mem


def opentsne_affinity_time(X, args):
    from openTSNE.affinity import PerplexityBasedNN

    t0 = time.perf_counter()
    PerplexityBasedNN(X, perplexity=30.0, n_jobs=args.threads, random_state=0)
    return time.perf_counter() - t0


def pca_init(X):
    """nbembed's PCA start (first coordinate with std 1e-4)."""
    from nbembed.methods._base import initial_embedding

    return initial_embedding(X, "pca", 2, 0)


def warm_up(args):
    """Compile (or load from Numba's cache) every kernel the runs will use, and start
    openTSNE's thread pools, before anything is timed."""
    from nbembed import HSSNE
    from nbembed.affinity import joint_probabilities

    X, _ = gaussian_mixture(300, dim=10, seed=1)
    P = joint_probabilities(X, 30.0, method="knn")
    try:  # nearest-neighbour descent compiles for tens of seconds on first use
        joint_probabilities(X, 30.0, method="knn", neighbors="approximate")
    except ImportError:
        pass
    Y0 = pca_init(X)
    for alpha in args.alphas:
        for repulsion in ("exact", "barnes-hut", "fft"):
            HSSNE(alpha=alpha, affinity="precomputed", max_iter=30, early_exaggeration_iter=10,
                  repulsion=repulsion, optimizer=args.nbembed_optimizer,
                  random_state=0).fit(P, init=Y0)
        for method in ("fft", "bh"):
            if f"opentsne-{method}" in args.methods:
                run_opentsne(P, Y0, alpha, method, 30, 10, args.threads, 0)
        kl_scorer(P, alpha, True)(Y0)
        kl_scorer(P, alpha, False)(Y0)


# ----------------------------------------------------------------------------- main

def bench(name, X, y, args, report, rows, memory_rows, nn_rows):
    from nbembed.metrics import homogeneity

    n = X.shape[0]
    print(f"\n{name}: n={n}, d={X.shape[1]}", flush=True)
    P, kind, t_nn, mem = neighbourhoods(X, args)
    rss_after_p = max_rss() / 2**30
    nn_row = [name, n, X.shape[1], kind, P.nnz, fmt(t_nn, ".1f"), fmt(mem.py_peak, ".0f"),
              fmt(rss_after_p, ".2f")]
    if args.opentsne_affinity:
        nn_row.append(fmt(opentsne_affinity_time(X, args), ".1f"))
    nn_rows.append(nn_row)
    print(f"  P: {kind} neighbours, {P.nnz} nonzeros, {t_nn:.1f} s", flush=True)
    Y0 = pca_init(X)
    del X
    gc.collect()
    exact = n <= args.exact_kl_max_n
    for alpha in args.alphas:
        score = kl_scorer(P, alpha, exact)
        results = {}
        if "nbembed" in args.methods:
            results["nbembed"] = run_nbembed(P, Y0, alpha, args)
            memory_rows.append([name, n, f"{alpha:g}", fmt(max_rss() / 2**30, ".2f")])
        for method in ("fft", "bh"):
            key = f"opentsne-{method}"
            if key not in args.methods or (method == "bh" and n > args.bh_max_n):
                continue
            res = run_opentsne(P, Y0, alpha, method, args.max_iter, args.ee_iter, args.threads,
                               args.trace_every)
            results[key] = res
        for key, res in results.items():
            res["traj"] = [(it, wall, cpu, score(Ys)) for it, wall, cpu, Ys in res.pop("snaps")]
            res["kl"] = score(res["Y"])
            print(f"  alpha={alpha:g} {key}: {res['time']:.1f} s, KL {res['kl']:.4f}",
                  flush=True)
        target = results.get("opentsne-fft", {}).get("kl")
        for key, res in results.items():
            t_eq, c_eq, it_eq = first_reaching(res["traj"], target)
            label = key if key != "nbembed" else \
                f"nbembed ({res['repulsion']}, {res['optimizer']})"
            ratio = "-"
            if key == "nbembed" and target is not None:
                fft = results["opentsne-fft"]
                ratio = (f"{t_eq / fft['time']:.2f}" if math.isfinite(t_eq) else
                         f"not reached (KL {res['kl']:.4f})")
            rows.append([name, n, f"{alpha:g}", label, fmt(res["time"], ".1f"),
                         fmt(res["cpu"], ".1f"), fmt(res["kl"], ".4f"),
                         f"{t_eq:.1f} ({it_eq})" if it_eq is not None else "-", ratio,
                         fmt(homogeneity(res["Y"], y), ".3f")])
        del results
        gc.collect()


def main(argv=None):
    args = parse_args(argv)
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    import numba
    from threadpoolctl import threadpool_limits

    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    threadpool_limits(limits=args.threads)
    load0 = os.getloadavg()[0]
    warm_up(args)
    started = time.perf_counter()
    report = Report()
    rows, memory_rows, nn_rows = [], [], []
    notes = []
    for name in args.data:
        label, X, y = load(name, args)
        if X is None:
            notes.append(f"{label}: {y}")
            continue
        bench(label, X, y, args, report, rows, memory_rows, nn_rows)
    import openTSNE

    report.section("Environment", (
        f"Repository {git_state()}. numba {numba.__version__} ({numba.get_num_threads()} "
        f"threads), numpy {np.__version__}, openTSNE {openTSNE.__version__}, Python "
        f"{platform.python_version()}; {os.cpu_count()} CPUs; load average {load0:.2f} at "
        f"start, {os.getloadavg()[0]:.2f} at the end; {time.perf_counter() - started:.0f} s "
        f"in all. {args.max_iter} iterations ({args.ee_iter} exaggerated), perplexity 30, "
        f"{args.threads} threads for every library. KL: "
        f"{'exact' if args.n <= args.exact_kl_max_n else 'fine interpolation grid'}."))
    nn_header = ["data", "n", "d", "neighbours", "nnz(P)", "P (s)", "tracemalloc peak (MB)",
                 "peak RSS after P (GiB)"]
    if args.opentsne_affinity:
        nn_header.append("openTSNE affinities (s)")
    report.section("Neighbourhood step", markdown_table(nn_header, nn_rows))
    report.section("Optimization", markdown_table(
        ["data", "n", "alpha", "method", "time (s)", "CPU (s)", "final KL",
         "t to openTSNE FFT's KL (s) (iter)", "nbembed t / openTSNE FFT t", "homogeneity"],
        rows) + "\n\nTimes exclude the neighbourhood step. The ratio divides nbembed's time "
        "to reach openTSNE FFT's final KL by openTSNE FFT's whole run (goal at 70k: <= 1.0).")
    if memory_rows:
        report.section("Memory", markdown_table(
            ["data", "n", "alpha", "peak RSS of the process after nbembed (GiB)"],
            memory_rows))
    if notes:
        report.section("Notes", "\n".join(f"- {line}" for line in notes))
    if args.markdown:
        Path(args.markdown).write_text("# HSSNE at scale\n\n" + report.markdown())
        print(f"markdown written to {args.markdown}")


if __name__ == "__main__":
    main()
