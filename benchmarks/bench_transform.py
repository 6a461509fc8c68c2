#!/usr/bin/env python
"""Placing new points: nbembed's ``HSSNE.transform`` beside openTSNE's ``transform``.

For each data set (scikit-learn's digits; USPS from
``../shared/data/usps_full/data.npz`` when it exists, a random subset of
``--usps-points``; ``image-like``, the digits upsampled to 28 x 28 with noise
from ``data_shapes.py``, ``--image-points`` of them), ``--splits`` stratified random 80/20 splits (default 5),
the same for both libraries; accuracies are reported as mean ± standard error
with the paired difference, times as medians. Each library, in its own
subprocess, fits its default t-SNE on the 80% (nbembed: ``HSSNE()``, alpha = 1,
perplexity 30; openTSNE: ``TSNE()``), then places the 20% with its own
``transform`` at its defaults (openTSNE: perplexity 5 over 25 neighbours,
median start, 250 steps; nbembed: perplexity 5 over 15 neighbours, the
smaller of 5 and the fitted perplexity, weighted-mean start, at most 100
fixed-point steps).

Reported per library: the 10-NN accuracy of the held-out points classified by
the training points' labels in the map, the time to fit, and the time per 1000
new points of ``transform`` (wall clock, after a warm-up transform of a few
points, so Numba's compilation is not counted). The 10-NN accuracy in the input
space is given for reference.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/bench_transform.py --datasets digits
    PYTHONPATH=. python benchmarks/bench_transform.py --datasets image-like --splits 3
    PYTHONPATH=. python benchmarks/bench_transform.py --markdown transform.md
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
USPS = REPO.parent / "shared" / "data" / "usps_full" / "data.npz"
LIBRARIES = ("nbembed", "openTSNE")
WARM_UP_POINTS = 5


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", nargs="+", default=["digits", "usps"],
                   choices=["digits", "usps", "image-like"])
    p.add_argument("--image-points", type=int, default=10000,
                   help="points of the image-like set (784 features; default 10000)")
    p.add_argument("--usps-points", type=int, default=5000,
                   help="random USPS points to split (default 5000)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0, help="seed of the first split")
    p.add_argument("--splits", type=int, default=5,
                   help="random 80/20 splits, seeds seed, seed + 1, ... (default 5)")
    p.add_argument("--markdown", type=pathlib.Path, help="also write the table here")
    p.add_argument("--child", choices=LIBRARIES, help=argparse.SUPPRESS)
    p.add_argument("--data", type=pathlib.Path, help=argparse.SUPPRESS)
    p.add_argument("--out", type=pathlib.Path, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def load(name, args, rng):
    """(X, y) of a data set, or None when it is not available."""
    if name == "image-like":
        import data_shapes
        return data_shapes.image_like(args.image_points)
    if name == "digits":
        from sklearn.datasets import load_digits
        return load_digits(return_X_y=True)
    if not USPS.exists():
        print(f"skipping USPS: {USPS} not found", file=sys.stderr)
        return None
    data = np.load(USPS, allow_pickle=False)
    X, y = data["X"].astype(np.float64), data["y"]
    chosen = rng.choice(len(X), size=min(args.usps_points, len(X)), replace=False)
    return X[chosen], y[chosen]


def knn_accuracy(Y_train, y_train, Y_test, y_test):
    from sklearn.neighbors import KNeighborsClassifier
    return float(KNeighborsClassifier(n_neighbors=10).fit(Y_train, y_train)
                 .score(Y_test, y_test))


# -- one library in its own process -----------------------------------------------------------
def fit_and_transform(library, X_train, X_test, seed, threads):
    """(training embedding, embedded test points, fit seconds, transform seconds)."""
    if library == "nbembed":
        from nbembed import HSSNE
        start = time.perf_counter()
        model = HSSNE(random_state=seed).fit(X_train)
        fitted = time.perf_counter()
        model.transform(X_test[:WARM_UP_POINTS])
        placed_start = time.perf_counter()
        Y_test = model.transform(X_test)
        return model.embedding_, Y_test, fitted - start, time.perf_counter() - placed_start
    from openTSNE import TSNE
    start = time.perf_counter()
    embedding = TSNE(random_state=seed, n_jobs=threads).fit(X_train)
    fitted = time.perf_counter()
    embedding.transform(X_test[:WARM_UP_POINTS])
    placed_start = time.perf_counter()
    Y_test = embedding.transform(X_test)
    return (np.asarray(embedding), np.asarray(Y_test), fitted - start,
            time.perf_counter() - placed_start)


def child(args):
    data = np.load(args.data)
    Y_train, Y_test, fit_s, transform_s = fit_and_transform(
        args.child, data["X_train"], data["X_test"], args.seed, args.threads)
    result = dict(accuracy=knn_accuracy(Y_train, data["y_train"], Y_test, data["y_test"]),
                  fit_seconds=fit_s, transform_seconds=transform_s,
                  seconds_per_1000=1000.0 * transform_s / len(data["X_test"]))
    args.out.write_text(json.dumps(result))


def run_child(library, split_path, args, seed):
    env = dict(os.environ, NUMBA_NUM_THREADS=str(args.threads),
               OMP_NUM_THREADS=str(args.threads), OMP_WAIT_POLICY="passive",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO),
                                                        os.environ.get("PYTHONPATH")])))
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "result.json"
        subprocess.run([sys.executable, __file__, "--child", library, "--data", str(split_path),
                        "--out", str(out), "--seed", str(seed),
                        "--threads", str(args.threads)], env=env, check=True)
        return json.loads(out.read_text())


def main(argv=None):
    args = parse_args(argv)
    if args.child:
        child(args)
        return
    from sklearn.model_selection import train_test_split
    lines = ["| data | n train / new | method | 10-NN accuracy of new points, mean ± s.e. | "
             "fit (s, median) | transform (s per 1000 new points, median) |",
             "|---|---|---|---|---|---|"]
    notes = []
    for name in args.datasets:
        results = {library: [] for library in ("input space", *LIBRARIES)}
        size = None
        for split in range(args.splits):
            seed = args.seed + split
            loaded = load(name, args, np.random.default_rng(seed))
            if loaded is None:
                break
            X, y = loaded
            X_train, X_test, y_train, y_test = train_test_split(
                X, y, test_size=0.2, random_state=seed, stratify=y)
            size = f"{len(X_train)} / {len(X_test)}"
            results["input space"].append(dict(accuracy=knn_accuracy(X_train, y_train, X_test,
                                                                     y_test)))
            with tempfile.TemporaryDirectory() as tmp:
                split_path = pathlib.Path(tmp) / "split.npz"
                np.savez(split_path, X_train=X_train, X_test=X_test, y_train=y_train,
                         y_test=y_test)
                for library in LIBRARIES:
                    results[library].append(run_child(library, split_path, args, seed))
                    print(f"{name} split {split} {library}: {results[library][-1]}",
                          file=sys.stderr, flush=True)
        if size is None:
            continue
        for library, rows in results.items():
            accuracy = np.array([r["accuracy"] for r in rows])
            spread = accuracy.std(ddof=1) / np.sqrt(len(rows)) if len(rows) > 1 else np.nan
            label = {"nbembed": "nbembed HSSNE(alpha=1)", "openTSNE": "openTSNE TSNE()"}.get(
                library, library)
            times = ("| | |" if library == "input space" else
                     f"| {np.median([r['fit_seconds'] for r in rows]):.2f} | "
                     f"{np.median([r['seconds_per_1000'] for r in rows]):.2f} |")
            lines.append(f"| {name} | {size} | {label} | {accuracy.mean():.4f} ± {spread:.4f} "
                         f"{times}")
        diff = np.array([a["accuracy"] - b["accuracy"]
                         for a, b in zip(results["nbembed"], results["openTSNE"])])
        diff_se = diff.std(ddof=1) / np.sqrt(len(diff)) if len(diff) > 1 else np.nan
        notes.append(f"{name}: nbembed - openTSNE accuracy over {len(diff)} paired splits: "
                     f"{diff.mean():+.4f} ± {diff_se:.4f} (mean ± s.e.)")
    table = "\n".join(lines + [""] + notes)
    print(table)
    if args.markdown:
        args.markdown.write_text(table + "\n")


if __name__ == "__main__":
    main()
