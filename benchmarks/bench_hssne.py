#!/usr/bin/env python
"""Benchmark nbembed's HSSNE against openTSNE and scikit-learn's TSNE.

All methods run side by side in one process, for alpha in {0.5, 1, 2}
(openTSNE with ``dof = 1 / alpha``; scikit-learn only at alpha = 1, its only
kernel), on scikit-learn's digits (n=1797), USPS (n=9298, if
``../shared/data/usps_full/data.npz`` exists next to the repository) and a
seeded synthetic Gaussian mixture (20k points, 50-D, 10 classes; alpha = 1
only by default, see ``--synthetic-alphas``). nbembed runs with its default
optimizer unless ``--nbembed-optimizer`` asks for more.

Fairness rules
--------------
* One P per data set and kind: nbembed's own perplexity-30 affinities, dense
  (``affinity="exact"``, what ``"auto"`` gives up to 5000 points) and/or kNN.
  nbembed gets it with ``affinity="precomputed"``, openTSNE through
  ``openTSNE.affinity.PrecomputedAffinities``, so both optimize the same
  objective. scikit-learn cannot take P: it builds its own kNN P from X, and its
  time includes that.
* One initialization: nbembed's PCA start scaled to std 1e-4, given as an
  array to every method.
* One schedule: max_iter iterations in all (default 1000), the first ee_iter
  (default 250) with early exaggeration 12. Everything else is each library's
  default (openTSNE: learning rate n/12 then n, momentum 0.8, max step norm 5;
  scikit-learn and nbembed: learning rate max(n / 48, 50), momentum 0.5 then 0.8).
* One thread count for everyone (``--threads``, default 2), and
  ``OMP_WAIT_POLICY=passive`` by default (see ``--omp-wait``).
* One yardstick: every KL in the tables is KL(P || Q_alpha) evaluated exactly
  (all pairs, nbembed's kernels) on the same P for each final embedding.

Timing: optimization only (P is built once per data set and reported
separately), wall clock and process CPU time, fastest of ``--repeats`` runs
where a run is cheap. Numba compilation is measured separately by tiny warm-up
fits (n=200) before anything is timed. "t to KL x" is the first time a
method's trajectory reaches KL <= x: for nbembed from its own cost history
(exact, every 10 iterations, included in its time, as in ``fit``), for openTSNE
from embeddings saved by a callback (every 10 or 25 iterations) whose KL is
evaluated afterwards, off the clock.

Memory is measured in a separate short run (20 iterations) for nbembed and
openTSNE and inside the timed run for scikit-learn (its minimum is 250
iterations), as three numbers: the tracemalloc peak of Python/NumPy
allocations (not Numba NRT or C++ allocations), the sampled peak resident set
above its value at the start, and the growth of ru_maxrss (the process-wide
high-water mark: only moves when a run exceeds every earlier one).

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/bench_hssne.py --quick
    PYTHONPATH=. python benchmarks/bench_hssne.py --markdown bench.md
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import platform
import resource
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
USPS_PATH = REPO.parent / "shared" / "data" / "usps_full" / "data.npz"
MB = 2.0 ** 20


# ----------------------------------------------------------------------------- options

def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="smoke run (< 1 min): digits only with the kNN P, alphas 1 and 2, 250 "
                        "iterations (100 exaggerated), one repeat, optimizer table at alpha=1 "
                        "only")
    p.add_argument("--datasets", default="digits,usps,synthetic",
                   help="comma list of digits, usps, synthetic (default: all)")
    p.add_argument("--sizes", default="20000",
                   help="comma list of synthetic data set sizes (default: 20000)")
    p.add_argument("--alphas", default=None,
                   help="comma list of alphas (default: 0.5,1,2; quick: 1,2)")
    p.add_argument("--synthetic-alphas", default="1",
                   help="alphas for the synthetic sets, or 'all' for --alphas (default: 1; "
                        "nbembed's exact repulsion costs 0.1-0.3 s per iteration at 20k on "
                        "this machine, so all three alphas would take ~10 extra minutes)")
    p.add_argument("--max-iter", type=int, default=None,
                   help="iterations in all, early exaggeration included (default 1000, "
                        "quick 250)")
    p.add_argument("--ee-iter", type=int, default=None,
                   help="early exaggeration iterations (default 250, quick 100; scikit-learn "
                        "always uses 250)")
    p.add_argument("--perplexity", type=float, default=30.0)
    p.add_argument("--affinity", default=None,
                   help="comma list of auto, exact, knn: how nbembed builds the shared P; each "
                        "data set runs once per distinct kind (default auto,knn: auto is dense "
                        "up to 5000 points, kNN above, so digits runs with both; quick: knn)")
    p.add_argument("--repeats", type=int, default=None,
                   help="timed runs per method, fastest kept (default 3, quick 1); a run is "
                        "repeated only while the previous one took less than --repeat-budget")
    p.add_argument("--repeat-budget", type=float, default=15.0,
                   help="seconds; runs slower than this are not repeated (default 15)")
    p.add_argument("--threads", type=int, default=2,
                   help="threads for every method: Numba, openTSNE n_jobs, scikit-learn n_jobs "
                        "and the OpenMP/BLAS pools (default 2)")
    p.add_argument("--blas-threads", type=int, default=None,
                   help="threads for the BLAS pool (default: --threads). nbembed's fixed-point "
                        "step calls np.vdot; with 2 OpenBLAS threads their spin-waiting slowed "
                        "its Numba kernels 2x on 2 cores (use 1 to see the difference)")
    p.add_argument("--omp-wait", default="passive", choices=("passive", "default"),
                   help="OMP_WAIT_POLICY for the OpenMP runtimes (Numba's omp layer, "
                        "scikit-learn): 'passive' (default here) makes idle threads sleep "
                        "instead of spinning, 'default' leaves the variable as it is. On a "
                        "machine shared with other processes spinning makes Numba's small "
                        "parallel kernels up to ~50x slower")
    p.add_argument("--methods", default="nbembed,opentsne-bh,opentsne-fft,sklearn",
                   help="comma list of methods to run")
    p.add_argument("--nbembed-optimizer", default="auto",
                   help="comma list of nbembed optimizers for the main table: auto (the "
                        "package default), gradient, fixed-point (default: auto); the first "
                        "one is the reference for 'KL_nb'")
    p.add_argument("--nbembed-lr", default="auto",
                   help="nbembed learning_rate: auto, a number, or n/<k> (e.g. n/12, "
                        "openTSNE's early-exaggeration rate) (default: auto)")
    p.add_argument("--sklearn-max-n", type=int, default=10000,
                   help="skip scikit-learn above this many points (default 10000: it takes "
                        "~4 min at 20k here and optimizes its own P anyway)")
    p.add_argument("--bh-max-n", type=int, default=10 ** 9,
                   help="skip openTSNE BH above this many points")
    p.add_argument("--no-optimizer-table", action="store_true",
                   help="skip the optimizer comparison on digits")
    p.add_argument("--fp-momenta", default=None,
                   help="fixed-point momenta for the optimizer table (default 0,0.5,0.8,0.95; "
                        "quick 0,0.95)")
    p.add_argument("--cold-jit", action="store_true",
                   help="use a fresh, empty Numba cache directory, so the warm-up measures "
                        "a cold compile")
    p.add_argument("--markdown", metavar="FILE", help="also write the tables as markdown")
    args = p.parse_args(argv)
    quick = args.quick
    if quick:
        args.datasets = "digits"
    args.max_iter = args.max_iter or (250 if quick else 1000)
    args.alphas = args.alphas or ("1,2" if quick else "0.5,1,2")
    args.ee_iter = args.ee_iter if args.ee_iter is not None else (100 if quick else 250)
    args.repeats = args.repeats or (1 if quick else 3)
    args.affinity = args.affinity or ("knn" if quick else "auto,knn")
    args.fp_momenta = args.fp_momenta or ("0,0.95" if quick else "0,0.5,0.8,0.95")
    if not 0 <= args.ee_iter < args.max_iter:
        p.error("--ee-iter must be in [0, max-iter)")
    args.datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
    for d in args.datasets:
        if d not in ("digits", "usps", "synthetic"):
            p.error(f"unknown data set {d!r}")
    args.affinity = [a.strip() for a in args.affinity.split(",") if a.strip()]
    for a in args.affinity:
        if a not in ("auto", "exact", "knn"):
            p.error(f"unknown affinity {a!r}")
    args.sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    args.alphas = [float(a) for a in args.alphas.split(",") if a.strip()]
    args.synthetic_alphas = (args.alphas if args.synthetic_alphas == "all" else
                             [float(a) for a in args.synthetic_alphas.split(",") if a.strip()])
    args.methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    for m in args.methods:
        if m not in ("nbembed", "opentsne-bh", "opentsne-fft", "sklearn"):
            p.error(f"unknown method {m!r}")
    args.fp_momenta = [float(m) for m in args.fp_momenta.split(",") if m.strip()]
    args.nbembed_optimizer = [o.strip() for o in args.nbembed_optimizer.split(",") if o.strip()]
    for o in args.nbembed_optimizer:
        if o not in ("auto", "gradient", "fixed-point"):
            p.error(f"unknown nbembed optimizer {o!r}")
    lr = args.nbembed_lr.strip()
    if lr != "auto" and not lr.startswith("n/"):
        try:
            float(lr)
        except ValueError:
            p.error(f"--nbembed-lr must be auto, a number or n/<k>; got {lr!r}")
    return args


def git_state():
    """'commit <hash>' plus ' + uncommitted changes' when the work tree differs."""
    import subprocess

    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain",
                                "--untracked-files=no", "--", "nbembed"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "state unknown (no git)"
    return f"at commit {head}" + (" with uncommitted changes in nbembed/" if dirty else "")


def learning_rate(spec, n):
    """'auto', a number, or 'n/<k>' -> what HSSNE(learning_rate=...) takes."""
    if spec == "auto":
        return "auto"
    if spec.startswith("n/"):
        return n / float(spec[2:])
    return float(spec)


# ----------------------------------------------------------------------------- data sets

def load_datasets(args):
    """Yield (name, X, y) or (name, None, reason) for skipped ones."""
    from sklearn.datasets import load_digits

    for name in args.datasets:
        if name == "digits":
            X, y = load_digits(return_X_y=True)
            yield "digits", X.astype(np.float64), y
        elif name == "usps":
            if not USPS_PATH.exists():
                yield "usps", None, f"skipped: {USPS_PATH} not found"
                continue
            with np.load(USPS_PATH) as data:
                yield "usps", np.asarray(data["X"], dtype=np.float64), np.asarray(data["y"])
        elif name == "synthetic":
            for n in args.sizes:
                X, y = gaussian_mixture(n)
                yield f"synthetic-{n // 1000}k" if n % 1000 == 0 else f"synthetic-{n}", X, y


def gaussian_mixture(n, n_classes=10, dim=50, seed=0):
    """Seeded mixture: 10 classes in 50-D, unit-variance centres, class spreads 0.6-1.4."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n_classes, dim))
    spreads = rng.uniform(0.6, 1.4, n_classes)
    y = rng.integers(0, n_classes, n)
    X = centres[y] + spreads[y, None] * rng.standard_normal((n, dim))
    return X, y


# ----------------------------------------------------------------------------- measuring

def current_rss():
    """Resident set size in bytes (Linux /proc), or None."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def max_rss():
    """ru_maxrss in bytes (kilobytes on Linux, bytes on macOS)."""
    value = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return value if sys.platform == "darwin" else value * 1024


class MemoryMonitor:
    """tracemalloc peak, sampled RSS peak above the start, and ru_maxrss growth."""

    def __init__(self, interval=0.005):
        self.interval = interval
        self.py_peak = self.rss_peak = self.maxrss_growth = math.nan

    def _sample(self):
        while not self._stop.wait(self.interval):
            rss = current_rss()
            if rss is not None and rss > self._rss_max:
                self._rss_max = rss

    def __enter__(self):
        gc.collect()
        self._rss0 = current_rss()
        self._rss_max = self._rss0 or 0
        self._maxrss0 = max_rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        tracemalloc.start()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        rss = current_rss()
        if rss is not None:
            self._rss_max = max(self._rss_max, rss)
        self.py_peak = peak / MB
        self.rss_peak = (self._rss_max - self._rss0) / MB if self._rss0 is not None else math.nan
        self.maxrss_growth = (max_rss() - self._maxrss0) / MB
        return False


# ----------------------------------------------------------------------------- exact KL

def p_log_p(P):
    import scipy.sparse as sp

    values = P.data if sp.issparse(P) else P[P > 0]
    return float(np.sum(values * np.log(values)))


def exact_kl(P, Y, alpha, plogp=None):
    """KL(P || Q_alpha) over all pairs, with nbembed's kernels, for an (n, 2) embedding."""
    import scipy.sparse as sp

    from nbembed._kernels import hssne as K

    Yt = np.ascontiguousarray(np.asarray(Y, dtype=np.float64).T)
    if not np.all(np.isfinite(Yt)):
        return math.inf
    z = K.hssne_z(Yt, float(alpha))
    if sp.issparse(P):
        plogh = K.sparse_p_log_h(Yt, P.indptr, P.indices, P.data, float(alpha))
    else:
        plogh = K.dense_p_log_h(Yt, P, float(alpha))
    return (p_log_p(P) if plogp is None else plogp) - plogh + math.log(z)


def first_reaching(traj, target):
    """(wall seconds, CPU seconds, iteration) of the first trajectory point with
    KL <= target, or (nan, nan, None)."""
    if target is None or not math.isfinite(target):
        return math.nan, math.nan, None
    for it, wall, cpu, kl in traj:
        if kl <= target:
            return wall, cpu, it
    return math.nan, math.nan, None


# ----------------------------------------------------------------------------- runners

def run_nbembed(P, Y0, alpha, n_iter, ee_iter, optimizer="auto", momentum=None,
                learning_rate="auto"):
    """One nbembed run on a precomputed P; trajectory from its exact cost history.

    ``momentum=None`` keeps the package's default ``fixed_point_momentum``.
    """
    from nbembed import HSSNE

    # Every schedule runs its whole length (tol=0): the tables compare costs and times
    # over a fixed number of iterations.
    est = HSSNE(alpha=alpha, affinity="precomputed", optimizer=optimizer, max_iter=n_iter,
                early_exaggeration_iter=ee_iter, learning_rate=learning_rate, tol=0,
                random_state=0)
    if momentum is not None:
        est.set_params(fixed_point_momentum=momentum)
    run = est.prepare(P, init=Y0)
    stamps = {}

    def clock(r):
        stamps[r.iteration] = (time.perf_counter() - t0, time.process_time() - c0)

    t0, c0 = time.perf_counter(), time.process_time()
    stamps[0] = (0.0, 0.0)
    run.step(n_iter, callbacks=clock)
    total, cpu = time.perf_counter() - t0, time.process_time() - c0
    traj = [(h["iteration"], *stamps.get(h["iteration"], (math.nan, math.nan)), h["cost"])
            for h in run.history]
    used = run.optimizer
    if used == "fixed-point":
        used += f" m={est.get_params()['fixed_point_momentum']:g}"
    return dict(time=total, cpu=cpu, traj=traj, Y=run.embedding,
                final_cost=run.history[-1]["cost"], recoveries=getattr(run, "recoveries", 0),
                optimizer=used)


def run_opentsne(P, Y0, alpha, method, n_iter, ee_iter, n_jobs, trace_every):
    """One openTSNE run on the same P; saves embeddings every trace_every iterations."""
    import scipy.sparse as sp
    from openTSNE import TSNE
    from openTSNE.affinity import PrecomputedAffinities

    affinities = PrecomputedAffinities(sp.csr_matrix(P, copy=True), normalize=False)
    snaps = []
    phase = {"offset": 0, "last": 0}

    def callback(iteration, error, embedding):
        if iteration <= phase["last"]:  # the main phase restarts the counter
            phase["offset"] = ee_iter
        phase["last"] = iteration
        snaps.append((phase["offset"] + iteration, time.perf_counter() - t0,
                       time.process_time() - c0, np.array(embedding, dtype=np.float64,
                                                          copy=True)))
        return False

    tsne = TSNE(n_components=2, early_exaggeration=12.0, early_exaggeration_iter=ee_iter,
                n_iter=n_iter - ee_iter, dof=1.0 / alpha, negative_gradient_method=method,
                n_jobs=n_jobs, random_state=0,
                callbacks=callback if trace_every else None,
                callbacks_every_iters=trace_every or 50)
    t0, c0 = time.perf_counter(), time.process_time()
    emb = tsne.fit(affinities=affinities, initialization=np.array(Y0, copy=True))
    total, cpu = time.perf_counter() - t0, time.process_time() - c0
    return dict(time=total, cpu=cpu, snaps=snaps, Y=np.asarray(emb, dtype=np.float64).copy())


def run_sklearn(X, Y0, n_iter, n_jobs, perplexity=30.0):
    """scikit-learn's Barnes-Hut TSNE from X (it builds its own kNN P)."""
    from sklearn.manifold import TSNE

    tsne = TSNE(n_components=2, perplexity=perplexity, early_exaggeration=12.0,
                learning_rate="auto", max_iter=n_iter, init=np.array(Y0, copy=True),
                method="barnes_hut", angle=0.5, n_jobs=n_jobs, random_state=0)
    t0, c0 = time.perf_counter(), time.process_time()
    Y = tsne.fit_transform(X)
    total, cpu = time.perf_counter() - t0, time.process_time() - c0
    return dict(time=total, cpu=cpu, Y=Y, n_iter=tsne.n_iter_, traj=[])


def best_of(repeats, budget, fn):
    """Run fn() up to ``repeats`` times, again only while a run took < budget seconds;
    keep the fastest result and all times."""
    best, times = None, []
    for _ in range(repeats):
        gc.collect()
        res = fn()
        times.append(res["time"])
        if best is None or res["time"] < best["time"]:
            best = res
        if res["time"] >= budget:
            break
    best["times"] = times
    return best


# ----------------------------------------------------------------------------- warm-up

def warm_up(alphas, kinds, n_jobs, methods):
    """First tiny fits (n=200): Numba compile or cache load, then the same again warm."""
    from nbembed import HSSNE
    from nbembed.affinity import joint_probabilities

    X, _ = gaussian_mixture(200, seed=1)
    rows = []
    for kind in kinds:
        t0 = time.perf_counter()
        joint_probabilities(X, 30.0, method=kind)
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        joint_probabilities(X, 30.0, method=kind)
        rows.append(dict(what=f"affinity {kind}", first=first,
                         warm=time.perf_counter() - t0))
    for alpha in alphas:
        for kind in kinds:
            fits = [HSSNE(alpha=alpha, affinity=kind, max_iter=30, early_exaggeration_iter=10,
                          optimizer=opt, random_state=0) for opt in ("gradient", "fixed-point")]
            t0 = time.perf_counter()
            for est in fits:
                est.fit(X)
            first = time.perf_counter() - t0
            t0 = time.perf_counter()
            for est in fits:
                est.fit(X)
            rows.append(dict(what=f"HSSNE alpha={alpha:g} P={kind}", first=first,
                             warm=time.perf_counter() - t0))
    # The other libraries' first calls (imports, thread pools), off the record.
    P = joint_probabilities(X, 30.0, method="knn")
    Y0 = HSSNE(random_state=0, affinity="knn").prepare(X).embedding
    for method in ("bh", "fft"):
        if f"opentsne-{method}" in methods:
            run_opentsne(P, Y0, 1.0, method, 30, 10, n_jobs, 0)
    if "sklearn" in methods:
        run_sklearn(X, Y0, 250, n_jobs)
    return rows


# ----------------------------------------------------------------------------- formatting

def fmt(x, spec=".3f", empty="-"):
    if x is None:
        return empty
    if isinstance(x, str):
        return x
    if isinstance(x, float) and not math.isfinite(x):
        return "inf" if x == math.inf else empty
    return format(x, spec)


def reached(t, it, traj, target):
    """'seconds (iteration)', 'not reached', or '-' when there is nothing to compare."""
    if it is not None:
        return f"{t:.2f} ({it})"
    return "-" if not traj or target is None else "not reached"


def markdown_table(header, rows):
    cells = [[str(c) for c in r] for r in rows]
    widths = [max([len(str(h))] + [len(r[i]) for r in cells]) for i, h in enumerate(header)]

    def line(row):
        return "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |"

    out = [line([str(h) for h in header]), "| " + " | ".join("-" * w for w in widths) + " |"]
    out += [line(r) for r in cells]
    return "\n".join(out)


class Report:
    """Prints sections as they are made; writes them all as markdown at the end."""

    def __init__(self):
        self.sections = []

    def section(self, title, text):
        self.sections.append((title, text))
        print(f"\n## {title}\n\n{text}\n", flush=True)

    def markdown(self):
        return "\n\n".join(f"## {t}\n\n{s}" for t, s in self.sections) + "\n"


LABELS = {"nbembed": "nbembed HSSNE", "opentsne-bh": "openTSNE BH",
          "opentsne-fft": "openTSNE FFT", "sklearn": "sklearn TSNE (own P)"}


# ----------------------------------------------------------------------------- benchmark

def resolve_kinds(n, affinities):
    """Distinct P kinds ('exact' or 'knn') that the --affinity list gives for n points."""
    from nbembed import _config

    kinds = []
    for a in affinities:
        kind = ("exact" if n <= _config.DENSE_AFFINITY_MAX_N else "knn") if a == "auto" else a
        if kind not in kinds:
            kinds.append(kind)
    return kinds


def bench_dataset(name, X, y, kind, alphas, args, out):
    """All methods and alphas on one data set with one shared P; fills ``out``."""
    import scipy.sparse as sp

    from nbembed import HSSNE
    from nbembed.metrics import homogeneity

    n = X.shape[0]
    trace_every = 10 if n <= 10000 else 25
    with MemoryMonitor() as mem:
        t0 = time.perf_counter()
        base = HSSNE(perplexity=args.perplexity, affinity=kind, random_state=0).prepare(X)
        t_aff = time.perf_counter() - t0
    P, Y0 = base.objective.P, base.embedding
    del base
    label = "dense" if not sp.issparse(P) else "knn"
    nnz = P.nnz if sp.issparse(P) else int(np.count_nonzero(P))
    plogp = p_log_p(P)
    out["datasets"].append([name, n, X.shape[1], label, nnz, fmt(t_aff, ".2f"),
                            fmt(mem.py_peak, ".0f"), fmt(mem.rss_peak, ".0f")])
    print(f"\n{name}: n={n}, d={X.shape[1]}, P {label} ({nnz} nonzeros) in {t_aff:.2f} s",
          flush=True)

    for alpha in alphas:
        results, labels = {}, dict(LABELS)
        lr = learning_rate(args.nbembed_lr, n)
        for i, optimizer in enumerate(args.nbembed_optimizer if "nbembed" in args.methods
                                      else []):
            key = "nbembed" if i == 0 else f"nbembed-{optimizer}"
            res = best_of(args.repeats, args.repeat_budget,
                          lambda: run_nbembed(P, Y0, alpha, args.max_iter, args.ee_iter,
                                              optimizer, learning_rate=lr))
            with MemoryMonitor() as mem:
                run_nbembed(P, Y0, alpha, 20, 10, optimizer, learning_rate=lr)
            res["mem"] = mem
            res["kl"] = exact_kl(P, res["Y"], alpha, plogp)
            if abs(res["kl"] - res["final_cost"]) > 1e-6 * max(1.0, abs(res["kl"])):
                out["notes"].append(f"{name} alpha={alpha:g}: nbembed's reported cost "
                                    f"{res['final_cost']:.6f} differs from the exact KL "
                                    f"{res['kl']:.6f}")
            if res["recoveries"]:
                out["notes"].append(f"{name} alpha={alpha:g}: nbembed ({res['optimizer']}) "
                                    f"recovered from divergence {res['recoveries']} time(s)")
            shown = optimizer if optimizer != "auto" else f"auto = {res['optimizer']}"
            if optimizer == "fixed-point":
                shown = res["optimizer"]
            labels[key] = f"nbembed HSSNE ({shown}{'' if lr == 'auto' else f', lr {lr:.0f}'})"
            results[key] = res
        for method in ("bh", "fft"):
            key = f"opentsne-{method}"
            if key not in args.methods:
                continue
            if method == "bh" and n > args.bh_max_n:
                out["notes"].append(f"{name}: openTSNE BH skipped (n > --bh-max-n)")
                continue
            res = best_of(args.repeats, args.repeat_budget,
                          lambda: run_opentsne(P, Y0, alpha, method, args.max_iter, args.ee_iter,
                                               args.threads, trace_every))
            with MemoryMonitor() as mem:
                run_opentsne(P, Y0, alpha, method, 20, 10, args.threads, 0)
            res["mem"] = mem
            res["kl"] = exact_kl(P, res["Y"], alpha, plogp)
            res["traj"] = [(it, wall, cpu, exact_kl(P, Ys, alpha, plogp))
                           for it, wall, cpu, Ys in res.pop("snaps")]
            results[key] = res
        if ("sklearn" in args.methods and alpha == 1.0 and n <= args.sklearn_max_n
                and (name, "sklearn") not in out["done"]):
            # Once per data set: it ignores the shared P.
            out["done"].add((name, "sklearn"))
            with MemoryMonitor() as mem:
                res = run_sklearn(X, Y0, args.max_iter, args.threads, args.perplexity)
            res["mem"] = mem
            res["times"] = [res["time"]]
            res["kl"] = exact_kl(P, res["Y"], alpha, plogp)
            results["sklearn"] = res
            if res["n_iter"] < args.max_iter - 1:
                out["notes"].append(f"{name}: scikit-learn stopped after {res['n_iter']} "
                                    f"iterations")
        for key, res in results.items():
            print(f"  alpha={alpha:g} {labels[key]}: {res['time']:.2f} s, KL {res['kl']:.4f} "
                  f"(runs: {', '.join(f'{t:.2f}' for t in res['times'])} s)", flush=True)

        kl_ref = {key: results[key]["kl"] for key in ("opentsne-fft", "opentsne-bh", "nbembed")
                  if key in results}
        for key, res in results.items():
            traj = res.get("traj", [])
            t_fft, _, it_fft = first_reaching(traj, kl_ref.get("opentsne-fft"))
            t_nb, _, it_nb = first_reaching(traj, kl_ref.get("nbembed"))
            out["main"].append([
                name, n, label, f"{alpha:g}", labels[key], fmt(res["time"], ".2f"),
                fmt(res["cpu"], ".2f"),
                reached(t_fft, it_fft, traj, kl_ref.get("opentsne-fft")),
                reached(t_nb, it_nb, traj, kl_ref.get("nbembed")),
                fmt(res["kl"], ".4f"), fmt(homogeneity(res["Y"], y), ".3f"),
                fmt(res["mem"].py_peak, ".1f"), fmt(res["mem"].rss_peak, ".1f"),
                fmt(res["mem"].maxrss_growth, ".1f")])
        for nb_key in [k for k in results if k.startswith("nbembed")]:
            nb = results[nb_key]
            row = [name, n, label, f"{alpha:g}", labels[nb_key].replace("nbembed HSSNE ", ""),
                   fmt(nb["time"], ".2f")]
            for key in ("opentsne-fft", "opentsne-bh"):
                if key not in results:
                    row += ["-", "-", "-"]
                    continue
                t_ref, c_ref = results[key]["time"], results[key]["cpu"]
                t_nb, c_nb, _ = first_reaching(nb["traj"], kl_ref[key])
                if math.isfinite(t_nb):
                    row += [fmt(t_ref, ".2f"), fmt(t_nb, ".2f"),
                            f"**{t_ref / t_nb:.2f}x** (CPU {c_ref / c_nb:.2f}x)"]
                else:
                    row += [fmt(t_ref, ".2f"), "not reached",
                            f"- (KL {nb['kl']:.4f} vs {kl_ref[key]:.4f})"]
            fft = results.get("opentsne-fft")
            row.append(f"{fft['time'] / nb['time']:.2f}x (CPU {fft['cpu'] / nb['cpu']:.2f}x)"
                       if fft else "-")
            out["ratios"].append(row)
    return P, Y0, plogp


def optimizer_table(name, y, kind, P, Y0, plogp, alphas, args, out):
    """nbembed's optimizers on one P: final KL and when each gets within 1% of the best."""
    from nbembed.metrics import homogeneity

    n = P.shape[0]
    lr_open = n / 12.0
    variants = [("gradient", None, "auto", "gradient (lr auto)"),
                ("gradient", None, lr_open, f"gradient (lr n/12 = {lr_open:.0f})")]
    variants += [("fixed-point", m, "auto", f"fixed-point m={m:g}") for m in args.fp_momenta]
    for alpha in alphas:
        runs = []
        for optimizer, momentum, lr, label in variants:
            res = run_nbembed(P, Y0, alpha, args.max_iter, args.ee_iter, optimizer, momentum, lr)
            res["kl"] = exact_kl(P, res["Y"], alpha, plogp)
            res["min"] = min(c for *_, c in res["traj"])
            runs.append((label, res))
        best = min(r["kl"] for _, r in runs)
        for label, res in runs:
            t1, _, it1 = first_reaching(res["traj"], best * 1.01)
            out["optim"].append([
                name, kind, f"{alpha:g}", label, fmt(res["kl"], ".4f"), fmt(res["min"], ".4f"),
                it1 if it1 is not None else "never", fmt(t1, ".2f"), fmt(res["time"], ".2f"),
                res["recoveries"], fmt(homogeneity(res["Y"], y), ".3f")])
        print(f"  optimizer table alpha={alpha:g} done", flush=True)


# ----------------------------------------------------------------------------- main

def main(argv=None):
    args = parse_args(argv)
    # Environment first: Numba and the OpenMP runtimes read it when they load.
    if args.cold_jit:
        os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="nbembed-bench-numba-")
    if args.omp_wait == "passive":
        os.environ["OMP_WAIT_POLICY"] = "passive"
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    load0 = os.getloadavg()[0]

    import numba
    import openTSNE
    import scipy
    import sklearn
    import sklearn.manifold  # noqa: F401  (loads its OpenMP runtime before the limits)
    from threadpoolctl import threadpool_limits

    import nbembed

    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    # OpenMP (scikit-learn's Barnes-Hut) and BLAS pools get the same number of threads.
    threadpool_limits(limits=args.threads)
    if args.blas_threads is not None:
        threadpool_limits(limits=args.blas_threads, user_api="blas")

    started = time.perf_counter()
    report = Report()

    sizes = {"digits": [1797], "usps": [9298], "synthetic": args.sizes}
    kinds = []
    for d in args.datasets:
        for n in sizes[d]:
            kinds += [k for k in resolve_kinds(n, args.affinity) if k not in kinds]
    warm_alphas = sorted(set(args.alphas) | (set(args.synthetic_alphas)
                                             if "synthetic" in args.datasets else set()))
    warm = warm_up(warm_alphas, kinds, args.threads, args.methods)
    try:
        layer = numba.threading_layer()
    except ValueError:
        layer = "unknown"
    report.section("Environment", (
        f"Repository {git_state()}.\n\n"
        f"nbembed {nbembed.__version__}, openTSNE {openTSNE.__version__}, scikit-learn "
        f"{sklearn.__version__}, numba {numba.__version__} ({numba.get_num_threads()} "
        f"threads, {layer} layer), numpy {np.__version__}, scipy {scipy.__version__}, "
        f"Python {platform.python_version()}; {os.cpu_count()} CPUs; OMP_WAIT_POLICY="
        f"{os.environ.get('OMP_WAIT_POLICY', '(unset)')}; load average at start {load0:.2f} "
        f"(the machine is shared: other processes' load inflates every time).\n\n"
        f"Settings: {args.max_iter} iterations ({args.ee_iter} with early exaggeration 12); "
        f"perplexity {args.perplexity:g}; nbembed's P (affinity {','.join(args.affinity)}) "
        f"shared by nbembed and openTSNE; nbembed's PCA init (std 1e-4) shared by all; "
        f"{args.threads} thread(s) for every library"
        f"{'' if args.blas_threads is None else f' ({args.blas_threads} for BLAS)'}; times are optimization only, fastest "
        f"of up to {args.repeats} run(s) (runs over {args.repeat_budget:g} s are not "
        f"repeated); every KL is exact, on nbembed's P. Numba cache: "
        f"{'fresh (cold compile)' if args.cold_jit else 'default'}."))
    report.section(
        "Numba warm-up (n=200, first call vs the same call again)",
        markdown_table(["what", "first (s)", "again (s)", "compile/load (s)"],
                       [[r["what"], fmt(r["first"], ".2f"), fmt(r["warm"], ".3f"),
                         fmt(r["first"] - r["warm"], ".2f")] for r in warm])
        + "\n\nHSSNE rows: a gradient-optimizer fit plus a fixed-point fit, 30 iterations "
        "each. With the on-disk Numba cache the plain kernels are loaded, but the gradient "
        "kernels specialized on a kernel function are compiled again in every process.")

    out = dict(datasets=[], main=[], ratios=[], optim=[], notes=[], done=set())
    for name, X, y in load_datasets(args):
        if X is None:
            out["notes"].append(f"{name}: {y}")
            print(f"{name}: {y}", flush=True)
            continue
        alphas = args.synthetic_alphas if name.startswith("synthetic") else args.alphas
        for i, kind in enumerate(resolve_kinds(X.shape[0], args.affinity)):
            P, Y0, plogp = bench_dataset(name, X, y, kind, alphas, args, out)
            if name == "digits" and i == 0 and not args.no_optimizer_table:
                # The data behind optimizer="auto": one run per variant.
                optimizer_table(name, y, "dense" if kind == "exact" else kind, P, Y0, plogp,
                                [1.0] if args.quick else alphas, args, out)
            del P

    report.section("Data sets and shared P", markdown_table(
        ["data set", "n", "d", "P", "nonzeros", "P + init (s)", "tracemalloc peak (MB)",
         "RSS peak + (MB)"], out["datasets"]))
    report.section("Results", markdown_table(
        ["data set", "n", "P", "alpha", "method", "time (s)", "CPU (s)",
         "t to KL_fft (s) (iter)",
         "t to KL_nb (s) (iter)", "final KL", "homogeneity", "tracemalloc peak (MB)",
         "RSS peak + (MB)", "ru_maxrss growth (MB)"], out["main"])
        + "\n\ntime: wall clock; CPU: process CPU time, all threads (less sensitive to other "
        "processes on the machine). KL_fft: openTSNE FFT's final KL; KL_nb: nbembed's final KL (both exact on the "
        "same P). In brackets the iteration at which it was first reached (nbembed: its cost "
        "history, every 10 iterations; openTSNE: embeddings saved every 10 iterations, 25 "
        "above 10000 points). scikit-learn optimizes its own kNN P (its time includes "
        "building it) and runs once per data set. Memory: short 20-iteration runs for "
        "nbembed and openTSNE, the timed run for scikit-learn; tracemalloc sees "
        "Python/NumPy allocations only (not Numba NRT arrays or C++ buffers); RSS peak is "
        "sampled every 5 ms above the RSS at the start; ru_maxrss growth is 0 unless a run "
        "raises the process high-water mark.")
    report.section("Speed-up to equal KL", markdown_table(
        ["data set", "n", "P", "alpha", "nbembed optimizer", "nbembed (s)", "openTSNE FFT (s)",
         "nbembed t to KL_fft (s)", "FFT / nbembed", "openTSNE BH (s)",
         "nbembed t to KL_bh (s)", "BH / nbembed", "FFT / nbembed, same iterations"],
        out["ratios"])
        + "\n\nRatio = openTSNE's wall time / nbembed's wall time to reach openTSNE's final "
        "KL (goal: >= 5x for n <= 20k), with the same ratio of CPU times in brackets; '-' "
        f"with both KLs when nbembed never gets there in {args.max_iter} iterations. The last "
        "column compares whole runs (same number of iterations).")
    if out["optim"]:
        report.section("Optimizer comparison on digits (nbembed)", markdown_table(
            ["data set", "P", "alpha", "optimizer", "final KL", "min KL",
             "iter to within 1% of best", "t to within 1% (s)", "total (s)", "recoveries",
             "homogeneity"], out["optim"])
            + f"\n\n{args.max_iter} iterations, the first {args.ee_iter} with early "
            "exaggeration and the gradient optimizer in every variant. Best: the lowest final "
            "KL of the variants at that alpha. lr auto = max(n / 48, 50); n/12 is openTSNE's "
            "early-exaggeration learning rate. One run each (not best of).")
    out["notes"].append(f"load average at end {os.getloadavg()[0]:.2f}; wall time "
                        f"{time.perf_counter() - started:.0f} s")
    report.section("Notes", "\n".join(f"- {line}" for line in out["notes"]))
    if args.markdown:
        Path(args.markdown).write_text("# HSSNE benchmark\n\n" + report.markdown())
        print(f"markdown written to {args.markdown}")


if __name__ == "__main__":
    main()
