#!/usr/bin/env python
"""The perplexity of new points in ``transform``, chosen on training data only.

For each data set and each of ``--splits`` outer stratified 80/20 splits (the
splits of ``bench_transform.py``), only the outer *training* 80% is used: it
is split again 80/20, HSSNE (defaults, ``--alpha``) is fitted on the inner
80%, and the inner 20% is placed with each perplexity of ``--perplexities``
(over 3 * perplexity neighbours). Printed: the 10-NN accuracy of the placed
points, classified by the inner training points' labels in the map, as mean
± standard error over the splits. The outer test points are never looked at,
so the chosen value can then be measured on them (``bench_transform.py``).

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/choose_placement_perplexity.py --data digits
    PYTHONPATH=. python benchmarks/choose_placement_perplexity.py \\
        --data ../shared/data/vehicle/data.npz --splits 5

``--data`` takes "digits" (scikit-learn's) or any npz with arrays X and y.
"""

from __future__ import annotations

import argparse
import math
import pathlib

import numpy as np


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", nargs="+", default=["digits"],
                   help='"digits" or paths of npz files with X and y')
    p.add_argument("--max-points", type=int, default=5000,
                   help="a random subset of larger sets (default 5000)")
    p.add_argument("--splits", type=int, default=5)
    p.add_argument("--alpha", type=float, default=1.0)
    p.add_argument("--perplexities", type=float, nargs="+", default=[30, 15, 10, 5, 3])
    return p.parse_args(argv)


def load(name, max_points):
    if name == "digits":
        from sklearn.datasets import load_digits
        X, y = load_digits(return_X_y=True)
    else:
        data = np.load(pathlib.Path(name), allow_pickle=False)
        X, y = data["X"], data["y"]
    X = np.asarray(X, dtype=np.float64)
    if len(X) > max_points:
        chosen = np.random.default_rng(0).choice(len(X), max_points, replace=False)
        X, y = X[chosen], y[chosen]
    return X, y


def inner_accuracies(X, y, seed, alpha, perplexities):
    """10-NN accuracy of inner held-out points per placement perplexity."""
    from sklearn.model_selection import train_test_split
    from sklearn.neighbors import KNeighborsClassifier

    from nbembed import HSSNE

    X_train, _, y_train, _ = train_test_split(X, y, test_size=0.2, random_state=seed,
                                              stratify=y)
    X_fit, X_held, y_fit, y_held = train_test_split(
        X_train, y_train, test_size=0.2, random_state=100 + seed, stratify=y_train)
    model = HSSNE(alpha=alpha, random_state=seed).fit(X_fit)
    classifier = KNeighborsClassifier(n_neighbors=10).fit(model.embedding_, y_fit)
    return [classifier.score(model.transform(X_held, perplexity=p), y_held)
            for p in perplexities]


def main(argv=None):
    args = parse_args(argv)
    print("| data | " + " | ".join(f"perplexity {p:g}" for p in args.perplexities) + " |")
    print("|---|" + "---|" * len(args.perplexities))
    for name in args.data:
        X, y = load(name, args.max_points)
        scores = np.array([inner_accuracies(X, y, seed, args.alpha, args.perplexities)
                           for seed in range(args.splits)])
        spread = scores.std(axis=0, ddof=1) / math.sqrt(len(scores))
        cells = " | ".join(f"{m:.4f} ± {s:.4f}" for m, s in zip(scores.mean(axis=0), spread))
        print(f"| {pathlib.Path(name).parent.name or name} | {cells} |", flush=True)


if __name__ == "__main__":
    main()
