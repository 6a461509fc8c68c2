#!/usr/bin/env python
"""The exact k-nearest-neighbour search of a kNN affinity, against its floor and its peers.

For each data set (names of ``data_shapes.load``, e.g. ``mixture-70000``) and
each of these, in its own fresh Python process, warmed up on the first 2000
rows (compilation, thread pools), then timed on the whole set, every one on all
cores:

* ``nbembed``: ``nbembed.affinity.perplexity.nearest_neighbors(X, k,
  neighbors="exact")``, what ``HSSNE().fit`` runs between 5000 and about
  200 000 points in 50 dimensions (float32 products propose, float64 sums decide);
* ``sklearn``: scikit-learn's ``NearestNeighbors(n_jobs=-1)``, which nbembed
  used before (float64);
* ``product``: the float32 product of the centred rows with themselves, a
  block at a time, nothing kept: the floor of any search that computes every
  pair by a matrix product;
* ``descent``: ``nearest_neighbors(X, k, neighbors="approximate")``, nbembed's
  own nearest-neighbour descent (what ``HSSNE().fit`` runs above the exact
  search's sizes on dense rows);
* ``pynndescent``: pynndescent's descent with the settings nbembed gives it
  for sparse rows and other metrics.

The approximate searches' recall of the exact neighbours is measured on
``RECALL_ROWS`` rows drawn at random (their exact neighbours by nbembed's
exact search of those rows alone).

k = 91 (perplexity 30, 3 * 30 neighbours and the point itself). Prints a
Markdown table with each time's ratio to nbembed's.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/bench_neighbors.py --data mixture-20000 image_like-10000
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import numpy as np

K = 91
WARM_ROWS = 2000
METHODS = ("nbembed", "sklearn", "product", "descent", "pynndescent")
RECALL_ROWS = 1000


def _search(method, X):
    if method == "nbembed":
        from nbembed.affinity.perplexity import nearest_neighbors

        return nearest_neighbors(X, K, neighbors="exact")[1]
    if method == "sklearn":
        from sklearn.neighbors import NearestNeighbors

        return NearestNeighbors(n_neighbors=K + 1, n_jobs=-1).fit(X).kneighbors(X)[1][:, 1:]
    if method == "product":
        centred = (X - X.mean(axis=0)).astype(np.float32)
        rows = max(16, 2 ** 24 // len(X))
        for start in range(0, len(X), rows):
            centred[start:start + rows] @ centred.T
        return None
    if method == "descent":
        from nbembed.affinity.perplexity import nearest_neighbors

        return nearest_neighbors(X, K, neighbors="approximate", random_state=0)[1]
    if method == "pynndescent":
        from nbembed.affinity.perplexity import pynndescent_neighbors

        return pynndescent_neighbors(X, K, "euclidean", 0)[1]
    raise ValueError(method)


def recall(X, idx):
    """Share of the exact K nearest found, on RECALL_ROWS rows drawn at random."""
    from nbembed._nearest_reference import ReferenceRows

    rows = np.random.default_rng(0).choice(len(X), min(RECALL_ROWS, len(X)), replace=False)
    exact = ReferenceRows(X).nearest(X[rows], K + 1)[1]
    found = [np.intersect1d(idx[r], e[e != r][:K]).size for r, e in zip(rows, exact)]
    return float(np.mean(found)) / K


def worker(method, data):
    sys.path.insert(0, "benchmarks")
    import data_shapes

    X = np.ascontiguousarray(data_shapes.load(data)[0], dtype=np.float64)
    _search(method, X[:WARM_ROWS])
    start = time.perf_counter()
    idx = _search(method, X)
    seconds = time.perf_counter() - start
    record = {"method": method, "data": data, "seconds": seconds}
    if method in ("descent", "pynndescent"):
        record["recall"] = recall(X, idx)
    print(json.dumps(record))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", nargs=2, metavar=("METHOD", "DATA"), help=argparse.SUPPRESS)
    parser.add_argument("--data", nargs="+", default=["image_like-10000", "mixture-20000",
                                                      "mixture-70000", "manifold-70000"])
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker)
        return
    print("| data | method | seconds | / nbembed | recall |")
    print("|---|---|---|---|---|")
    for data in args.data:
        records = []
        for method in args.methods:
            out = subprocess.run([sys.executable, __file__, "--worker", method, data],
                                 capture_output=True, text=True, check=True)
            records.append(json.loads(out.stdout.strip().splitlines()[-1]))
        base = next((r["seconds"] for r in records if r["method"] == "nbembed"), None)
        for r in records:
            ratio = f"{r['seconds'] / base:.2f}×" if base else "–"
            recall = f"{r['recall']:.4f}" if "recall" in r else "1 (exact)" \
                if r["method"] in ("nbembed", "sklearn") else "–"
            print(f"| {data} | {r['method']} | {r['seconds']:.2f} | {ratio} | {recall} |",
                  flush=True)


if __name__ == "__main__":
    main()
