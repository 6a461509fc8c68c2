#!/usr/bin/env python
"""Whole ``fit_transform`` as a user runs it: nbembed against openTSNE, scikit-learn and UMAP.

What the harness does:

* Every measurement runs in its own fresh Python process (``--worker`` mode
  of this script), so no library shares a process, a thread pool or an
  environment variable with another. Nothing is set in the environment.
* **Every library gets all cores** (``--peer-threads all``, the default):
  nbembed uses them by default, openTSNE and scikit-learn's TSNE get
  ``n_jobs=-1``, UMAP ``n_jobs=-1`` without a seed (with ``random_state`` it
  runs serially). ``--peer-threads one`` gives the single-thread view
  instead, labelled as such: openTSNE's default ``n_jobs=1``, scikit-learn's
  default, UMAP with a seed, and nbembed on one Numba thread.
* **warm**: the process imports the library, fits once on the first 200 points
  (compilation, caches, thread pools), then times ``fit_transform`` on the
  whole data set: wall time, CPU time of the process (all threads) and peak
  resident memory. Where the whole set takes other code than 200 points, a
  second warm-up takes it too (``warm_up_large_path``): for nbembed a short
  fit of the whole set (10 iterations), because 200 points run other kernels
  (double precision, dense P, exact repulsion) than a large set, and with an
  empty Numba disk cache their compilation would otherwise fall into the timed
  fit (13 s of "early exaggeration" on the digits, 22 s at 70 000 points); for
  UMAP from 4096 points its approximate neighbour search (pynndescent compiles
  at its first call in a process, tens of seconds, not cached on disk). That
  first call is in the fresh column.
* **fresh**: another process times everything from before the import to the
  end of the fit (import + Numba's compilation or cache load + fit), as the
  first call of a new notebook kernel. Once per library and data set.
* Methods are interleaved within each repeat (all libraries once, then all
  again), so a machine that slows down touches them alike; the table gives
  medians over ``--repeats``.
* Quality of each embedding: 10-NN accuracy (5-fold cross-validation of a
  10-nearest-neighbour classifier in the embedding) and trustworthiness
  (k = 10) on a fixed sample of up to 3000 points, the same sample for all.
* **Where the time goes**: a second table per data set splits the warm fits
  of nbembed and openTSNE into phases (neighbour search, calibration of P,
  initialization, early exaggeration, main iterations, ms per main
  iteration), medians over the repeats. nbembed's come from the fitted
  ``timings_`` (``time.perf_counter``); openTSNE's from its own timers, which it
  prints with ``verbose=True`` (``time.time``, to 0.01 s; they leave out its
  setup and the KL divergence it evaluates after each optimization phase).
  With ``verbose=True`` openTSNE also evaluates its KL divergence every 50
  iterations, so its phases come from one extra warm fit per data set (seed 0),
  its output captured, which the main table leaves out: the timed fits run
  as a user runs them, quietly. scikit-learn and UMAP report no phases.
* Defaults everywhere: ``HSSNE(alpha=a)``, ``openTSNE.TSNE()`` (FFT),
  ``openTSNE.TSNE(negative_gradient_method="bh")``, ``sklearn.manifold.TSNE()``,
  ``umap.UMAP()``; a seed where the library takes one without changing its
  speed. For HSSNE at alpha != 1, openTSNE with ``dof = 1 / alpha`` minimizes
  the same objective (its heavy-tailed kernel (1 + d^2 / dof)^-dof is HSSNE's
  (1 + alpha d^2)^(-1 / alpha)): libraries ``opentsne-dof2`` and
  ``opentsne-dof0.5``, to compare quality on the same objective (only when
  named in ``--libraries``: at dof != 1 openTSNE takes 2-3x its default's time).

Data: scikit-learn's digits (1797 x 64), the shared USPS set (9298 x 256,
``../shared/data/usps_full/data.npz``), USPS-like sets of 20 000 and 70 000
points (USPS plus shifted, noisy copies; ``bench_scale.usps_like``), and the
shapes of ``data_shapes`` at any size, named ``kind-n``: ``image_like-10000``
(784-D images), ``mixture-70000`` (50-D clusters of unequal sizes and widths),
``manifold-70000`` (a Swiss roll in 50-D).
scikit-learn's TSNE is skipped above ``--sklearn-max-n`` points (default
20 000: it takes tens of minutes at 70 000).

Timings mean something only on an otherwise idle machine; the script prints
the load average before and after.

Usage (from the repository root; needs openTSNE and umap-learn, the "bench" extra)::

    PYTHONPATH=. python benchmarks/bench_user.py                       # everything
    PYTHONPATH=. python benchmarks/bench_user.py --data digits --repeats 3
    PYTHONPATH=. python benchmarks/bench_user.py --data image_like-10000 mixture-70000 \
        manifold-70000 --libraries nbembed-1 opentsne umap
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import pathlib
import re
import statistics
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
SAMPLE = 3000
WARM_UP_POINTS = 200
LIBRARIES = ("nbembed-0.5", "nbembed-1", "nbembed-2", "opentsne", "opentsne-bh", "sklearn",
             "umap", "opentsne-dof2", "opentsne-dof0.5")
#: What runs without --libraries: openTSNE at dof != 1 is asked for by name.
DEFAULT_LIBRARIES = LIBRARIES[:7]
REFERENCE = "opentsne"
DATASETS = ("digits", "usps", "20000", "70000")
#: Points in the data sets not named ``kind-n``.
SIZES = {"digits": 1797, "usps": 9298, "20000": 20_000, "70000": 70_000}
LABELS = {"nbembed-0.5": "nbembed HSSNE α=0.5", "nbembed-1": "nbembed HSSNE α=1",
          "nbembed-2": "nbembed HSSNE α=2", "opentsne": "openTSNE (default, FFT)",
          "opentsne-bh": "openTSNE BH", "sklearn": "scikit-learn TSNE", "umap": "UMAP",
          "opentsne-dof2": "openTSNE dof=2 (HSSNE α=0.5's kernel)",
          "opentsne-dof0.5": "openTSNE dof=0.5 (HSSNE α=2's kernel)"}


# ------------------------------------------------------------------ in the worker process

def load_data(name):
    """(X, y) of a data set named as in DATASETS."""
    import numpy as np
    if name == "digits":
        from sklearn.datasets import load_digits
        return load_digits(return_X_y=True)
    sys.path.insert(0, str(HERE))
    if name not in SIZES:
        from data_shapes import load
        return load(name)
    from bench_scale import USPS_PATH, usps_like
    if name == "usps":
        with np.load(USPS_PATH) as data:
            return np.asarray(data["X"], dtype=np.float64), np.asarray(data["y"])
    return usps_like(int(name))


def make_fit(library, seed, all_cores=True, verbose=False):
    """A function X -> embedding, the library's defaults; peers on all cores unless
    ``all_cores`` is False (each library's own default then)."""
    import numpy as np
    if library.startswith("nbembed-"):
        from nbembed import HSSNE
        if not all_cores:
            import numba
            numba.set_num_threads(1)
        alpha = float(library.split("-", 1)[1])

        def fit(X):
            fit.estimator = HSSNE(alpha=alpha, random_state=seed)  # for its timings_
            return fit.estimator.fit_transform(X)
        return fit
    if library.startswith("opentsne"):
        from openTSNE import TSNE
        extra = {"negative_gradient_method": "bh"} if library == "opentsne-bh" else {}
        if library.startswith("opentsne-dof"):
            # openTSNE's kernel (1 + d^2 / dof)^-dof is HSSNE's with alpha = 1 / dof.
            extra = {"dof": float(library[len("opentsne-dof"):])}
        if all_cores:
            extra["n_jobs"] = -1
        # verbose: openTSNE prints the time of each phase (see opentsne_phases).
        return lambda X: np.asarray(TSNE(random_state=seed, verbose=verbose, **extra).fit(X))
    if library == "sklearn":
        from sklearn.manifold import TSNE
        cores = {"n_jobs": -1} if all_cores else {}
        return lambda X: TSNE(random_state=seed, **cores).fit_transform(X)
    if library == "umap":
        from umap import UMAP
        settings = {"n_jobs": -1} if all_cores else {"random_state": seed}
        return lambda X: UMAP(**settings).fit_transform(X)
    raise ValueError(f"unknown library {library!r}")


#: From this many points UMAP searches neighbours approximately (pynndescent).
UMAP_APPROXIMATE_MIN_N = 4096


#: openTSNE's verbose messages (after "===> ") and the phase each one times, the
#: first match counting; the two optimizations are early exaggeration and main,
#: in the order ``TSNE.fit`` runs them.
OPENTSNE_STEPS = ((re.compile(r"Finding \d+ nearest neighbors"), "neighbors"),
                  (re.compile(r"Calculating affinity matrix"), "calibration"),
                  (re.compile(r"Calculating .*initialization"), "initialization"),
                  (re.compile(r"Running optimization .* for (\d+) iterations"), "optimization"))
OPENTSNE_ELAPSED = re.compile(r"--> Time elapsed: ([0-9.]+) seconds")
ITERATION_COUNTS = {"early_exaggeration": "n_iter_early", "main": "n_iter_main"}


def opentsne_phases(output):
    """Seconds per phase (and iterations) from openTSNE's verbose output, where each
    "===> what" line is followed by "--> Time elapsed: s seconds"."""
    phases, phase, optimizations = {}, None, 0
    for line in output.splitlines():
        line = line.strip()
        if line.startswith("===>"):
            phase, iterations = _opentsne_step(line.removeprefix("===>").strip(), optimizations)
            if iterations is not None:
                phases[ITERATION_COUNTS[phase]] = iterations
                optimizations += 1
        elif phase and (elapsed := OPENTSNE_ELAPSED.search(line)):
            phases[phase] = phases.get(phase, 0.0) + float(elapsed.group(1))
            phase = None
    if phases.get("n_iter_main") and "main" in phases:
        phases["ms_per_iteration_main"] = 1000.0 * phases["main"] / phases["n_iter_main"]
    return phases


def _opentsne_step(message, optimizations):
    """The phase an openTSNE timer's message names (None if none), and the iterations
    of an optimization (else None); ``optimizations`` ran before it."""
    for pattern, phase in OPENTSNE_STEPS:
        match = pattern.match(message)
        if match and phase == "optimization":
            return ("early_exaggeration", "main")[min(optimizations, 1)], int(match.group(1))
        if match:
            return phase, None
    return None, None


def fit_phases(library, fit, output):
    """Seconds per phase of the fit just timed, where the library reports them
    (``output``: what it printed), else None."""
    if library.startswith("nbembed-"):
        return fit.estimator.timings_.as_dict()
    if library.startswith("opentsne"):
        return opentsne_phases(output)
    return None


def warm_up_large_path(library, X_full, X_small, seed):
    """Compile what a fit of ``X_full`` uses and a fit of ``X_small`` does not.

    nbembed: a short fit of the whole data set (10 iterations, 5 exaggerated),
    with the default settings, so that the timed fit takes only kernels that are
    compiled in this process: the 200 points run double-precision kernels on a
    dense P, the whole set single-precision ones on a kNN P with approximate
    repulsion, and an empty disk cache would put their compilation into the timed
    fit. UMAP: its approximate neighbour search, forced on the small set.
    """
    if library.startswith("nbembed-"):
        from nbembed import HSSNE
        HSSNE(alpha=float(library.split("-", 1)[1]), random_state=seed, max_iter=10,
              early_exaggeration_iter=5).fit_transform(X_full)
    elif library == "umap" and len(X_full) >= UMAP_APPROXIMATE_MIN_N:
        from umap import UMAP
        UMAP(force_approximation_algorithm=True).fit_transform(X_small)


def quality(X, y, Y):
    """10-NN accuracy (5-fold) and trustworthiness (k = 10) on a fixed sample."""
    import numpy as np
    from sklearn.manifold import trustworthiness
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.neighbors import KNeighborsClassifier
    folds = StratifiedKFold(5, shuffle=True, random_state=0)
    accuracy = cross_val_score(KNeighborsClassifier(10), Y, y, cv=folds).mean()
    rows = np.random.default_rng(0).permutation(len(X))[:SAMPLE]
    return float(accuracy), float(trustworthiness(X[rows], Y[rows], n_neighbors=10))


def worker(library, data, seed, fresh, all_cores=True, phases_run=False):
    """Time one fit in this process and print a JSON record as the last line.

    ``phases_run``: a warm fit with the library's own phase timers printing
    (openTSNE's ``verbose=True``), for the phase table only."""
    import resource
    start = time.perf_counter()
    fit = make_fit(library, seed, all_cores, verbose=phases_run)   # imports the library
    imported = time.perf_counter() - start
    X, y = load_data(data)
    if not fresh:
        with contextlib.redirect_stdout(io.StringIO()):  # openTSNE's verbose lines
            fit(X[:WARM_UP_POINTS])
            warm_up_large_path(library, X, X[:WARM_UP_POINTS], seed)
    # What the library prints goes here, not to stdout, whose last line is the record.
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        cpu0 = os.times()
        t0 = time.perf_counter()
        Y = fit(X)
        wall = time.perf_counter() - t0
        cpu1 = os.times()
    cpu = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
    record = dict(library=library, data=data, seed=seed, fresh=fresh, wall=wall, cpu=cpu,
                  rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  phases=fit_phases(library, fit, output.getvalue()), phases_run=phases_run)
    if fresh:
        # Everything but reading the data: import, compilation or cache load, fit.
        record["fresh_total"] = imported + wall
    else:
        record["accuracy"], record["trustworthiness"] = quality(X, y, Y)
    print(json.dumps(record))


# ------------------------------------------------------------------ in the driver

def run_worker(library, data, seed, fresh, timeout, peer_threads="all", phases_run=False):
    cmd = [sys.executable, str(pathlib.Path(__file__).resolve()), "--worker", library, data,
           str(seed), "--peer-threads", peer_threads] + (["--fresh"] if fresh else []) + (
           ["--phases-run"] if phases_run else [])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent)] + [
        p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if out.returncode:
        raise RuntimeError(f"{library} on {data} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(records, data):
    """Markdown table of one data set's medians, with ratios to openTSNE's default."""
    warm = [r for r in records
            if r["data"] == data and not r["fresh"] and not r.get("phases_run")]
    fresh = {r["library"]: r["fresh_total"] for r in records if r["data"] == data and r["fresh"]}
    libraries = [lib for lib in LIBRARIES if any(r["library"] == lib for r in warm)]

    def median(lib, key):
        return statistics.median(r[key] for r in warm if r["library"] == lib)
    ref = median(REFERENCE, "wall") if REFERENCE in libraries else None
    lines = [f"#### {data}", "",
             "| library | wall s | openTSNE / it | CPU s | peak RSS MB | fresh process s "
             "| 10-NN acc. | trustworthiness |",
             "|---|---|---|---|---|---|---|---|"]
    for lib in libraries:
        wall = median(lib, "wall")
        ratio = f"{ref / wall:.2f}×" if ref else "–"
        first = f"{fresh[lib]:.2f}" if lib in fresh else "–"
        lines.append(f"| {LABELS[lib]} | {wall:.2f} | {ratio} | {median(lib, 'cpu'):.2f} | "
                     f"{median(lib, 'rss_mb'):.0f} | {first} | "
                     f"{median(lib, 'accuracy'):.3f} | {median(lib, 'trustworthiness'):.3f} |")
    return "\n".join(lines)


#: Columns of the phase table: (key in a record's phases, header).
PHASE_COLUMNS = (("neighbors", "neighbours s"), ("calibration", "calibration s"),
                 ("initialization", "initialization s"),
                 ("early_exaggeration", "early exaggeration s"), ("main", "main s"),
                 ("ms_per_iteration_main", "ms / main iteration"))


def phase_table(records, data):
    """Markdown table of one data set's median seconds per phase of the warm fits,
    for the libraries that report phases; "" when none does."""
    warm = [r for r in records
            if r["data"] == data and not r["fresh"] and r.get("phases")]
    libraries = [lib for lib in LIBRARIES if any(r["library"] == lib for r in warm)]
    if not libraries:
        return ""

    def median(lib, key):
        values = [r["phases"][key] for r in warm
                  if r["library"] == lib and math.isfinite(r["phases"].get(key, math.nan))]
        return statistics.median(values) if values else None

    headers = [header for _, header in PHASE_COLUMNS] + ["iterations (early + main)"]
    lines = [f"#### {data}: where the time goes", "",
             "| library | " + " | ".join(headers) + " |",
             "|---" * (len(headers) + 1) + "|"]
    for lib in libraries:
        cells = [("–" if value is None else f"{value:.2f}")
                 for value in (median(lib, key) for key, _ in PHASE_COLUMNS)]
        early, main_ = median(lib, "n_iter_early"), median(lib, "n_iter_main")
        cells.append("–" if early is None or main_ is None else f"{early:g} + {main_:g}")
        lines.append(f"| {LABELS[lib]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", nargs=3, metavar=("LIBRARY", "DATA", "SEED"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--fresh", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--phases-run", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--data", nargs="+", default=list(DATASETS),
                        help=f"any of {DATASETS} or kind-n, kind in data_shapes.KINDS")
    parser.add_argument("--peer-threads", choices=("all", "one"), default="all",
                        help="all: every library on all cores; one: the peers' "
                             "single-thread defaults")
    parser.add_argument("--libraries", nargs="+", default=list(DEFAULT_LIBRARIES), choices=LIBRARIES)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-fresh", action="store_true", help="skip the fresh-process column")
    parser.add_argument("--no-peer-phases", action="store_true",
                        help="skip openTSNE's extra verbose fit (its phase columns), which "
                             "doubles its time; nbembed's phases stay")
    parser.add_argument("--sklearn-max-n", type=int, default=20_000)
    parser.add_argument("--timeout", type=float, default=3600.0, help="per process, seconds")
    parser.add_argument("--json", type=pathlib.Path, help="also write all records here")
    args = parser.parse_args(argv)
    if args.worker:
        library, data, seed = args.worker
        worker(library, data, int(seed), args.fresh, args.peer_threads == "all",
               args.phases_run)
        return

    sys.path.insert(0, str(HERE))
    from data_shapes import KINDS
    sizes = dict(SIZES)
    for data in args.data:
        kind, _, n = data.rpartition("-")
        if data not in SIZES and (kind not in KINDS or not n.isdigit()):
            parser.error(f"--data {data!r}: expected one of {DATASETS} or kind-n with kind "
                         f"in {KINDS}")
        sizes.setdefault(data, int(n) if n.isdigit() else 0)
    print(f"load average before: {os.getloadavg()}", file=sys.stderr)
    records = []
    for data in args.data:
        libraries = [lib for lib in args.libraries
                     if lib != "sklearn" or sizes[data] <= args.sklearn_max_n]
        for repeat in range(args.repeats):
            for lib in libraries:
                records.append(run_worker(lib, data, repeat, False, args.timeout,
                                          args.peer_threads))
                print(f"{data} {lib} seed {repeat}: {records[-1]['wall']:.2f} s",
                      file=sys.stderr)
        if not args.no_fresh:
            for lib in libraries:
                records.append(run_worker(lib, data, 0, True, args.timeout,
                                          args.peer_threads))
        for lib in [] if args.no_peer_phases else libraries:
            if lib.startswith("opentsne"):
                records.append(run_worker(lib, data, 0, False, args.timeout,
                                          args.peer_threads, phases_run=True))
        print(table(records, data) + "\n", flush=True)
        phases = phase_table(records, data)
        if phases:
            print(phases + "\n", flush=True)
    print(f"load average after: {os.getloadavg()}", file=sys.stderr)
    view = ("every library on all cores" if args.peer_threads == "all" else
            "the single-thread view: the peers' defaults, nbembed on one thread")
    print(f"Medians of {args.repeats} repeats; {os.cpu_count()} cores; {view}.")
    print("Phases: nbembed's timings_ of the timed fits; openTSNE's own timers from one "
          "extra fit with verbose=True (to 0.01 s, "
          "without its setup and final KL evaluations).")
    if args.json:
        args.json.write_text(json.dumps(records, indent=1))


if __name__ == "__main__":
    main()
