#!/usr/bin/env python
"""SNeRV's evaluation protocol (Peltonen, Aidos & Kaski, ICASSP 2009) on vehicle and USPS.

Per data set: a random subset of at most 1500 points, 10-fold stratified
cross-validation. In each fold the test points' labels are hidden (-1), every
point is embedded in 2-D, and each test point is classified by the 5 nearest
training points in the embedding. Methods:

* SNeRV with tradeoff 0.1 and 0.3: the learning metric is fitted once per fold
  with its default validation of the number of Gaussians and their width
  (3 internal folds of the labelled points); the tradeoff 0.3 embedding is
  NeRV on the same learning-metric distances with the same start and
  effective number of neighbours, which is what ``SNeRV(tradeoff=0.3)``
  computes when it fits the same metric.
* Unsupervised NeRV (tradeoff 0.1 and 0.3, 20 effective neighbours).
* t-SNE: ``nbembed.HSSNE(alpha=1)``, perplexity 30.

The table gives mean and standard deviation of the test error over the folds
and, like the paper's Table 1, a paired t-test of the best SNeRV against each
unsupervised method. Vehicle features are scaled to [-1, 1] per feature (as in
LIBSVM's vehicle.scale); USPS pixels are used as they are.

The paper's data sets (Letter, Landsat, Phoneme, TIMIT) are not in
../shared/data, so its numbers are not reproduced one to one: the paper shows
SNeRV ahead of MRE, colored MVU and supervised Isomap there, and clearly ahead
of unsupervised NeRV on Letter.

Usage (from the repository root; data from ../shared/data)::

    PYTHONPATH=. python benchmarks/snerv_reproduce.py                  # 10 folds, both sets
    PYTHONPATH=. python benchmarks/snerv_reproduce.py --folds 2 --datasets vehicle
    PYTHONPATH=. python benchmarks/snerv_reproduce.py --datasets usps --pca 50   # PCA first
    PYTHONPATH=. python benchmarks/snerv_reproduce.py --datasets my.npz         # any X, y file

On 2 shared cores a vehicle fold takes about 10 s and a USPS fold 35-45 s
(the metric's validation is most of it).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from scipy.stats import ttest_rel
from sklearn.decomposition import PCA
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import MinMaxScaler

from nbembed import HSSNE
from nbembed.methods.nerv import NeRV, SNeRV
from nbembed.metrics import knn_error

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
METHODS = ("SNeRV 0.1", "SNeRV 0.3", "NeRV 0.1", "NeRV 0.3", "t-SNE")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", default="vehicle,usps",
                   help="shared data set names, or paths of npz files with X and y")
    p.add_argument("--folds", type=int, default=10, help="folds to run (of 10)")
    p.add_argument("--n-max", type=int, default=1500, help="subset size")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--pca", type=int, default=0,
                   help="first project every point on this many principal components "
                        "(0: none), for every method alike")
    return p.parse_args(argv)


def load(name, n_max, seed, n_pca=0):
    if name.endswith(".npz"):
        data = np.load(name)
    else:
        data = np.load(DATA / {"usps": "usps_full"}.get(name, name) / "data.npz")
    X, y = data["X"], data["y"]
    if len(y) > n_max:
        idx = np.random.default_rng(seed).choice(len(y), n_max, replace=False)
        X, y = X[idx], y[idx]
    if name == "vehicle":
        X = MinMaxScaler((-1, 1)).fit_transform(X)
    if 0 < n_pca < X.shape[1]:
        # Unsupervised and fitted on every point: every method embeds all of them anyway.
        X = PCA(n_pca, random_state=seed).fit_transform(X)
    return X, y


def one_fold(X, y, train, test, seed):
    errors, notes = {}, {}
    partial = y.copy()
    partial[test] = -1

    def error(Y):
        return knn_error(Y, y, k=5, train=train, test=test)

    run = SNeRV(tradeoff=0.1, random_state=seed).prepare(X, partial)
    run.run()
    errors["SNeRV 0.1"] = error(run.embedding)
    metric = run.learning_metric
    notes.update(K=metric.n_components_, sigma=metric.sigma_, neighbours=run.n_neighbors)
    D = metric.pairwise_distances(X)
    Y = NeRV(tradeoff=0.3, n_neighbors=run.n_neighbors, metric="precomputed",
             random_state=seed).fit_transform(D)
    errors["SNeRV 0.3"] = error(Y)
    for tradeoff in (0.1, 0.3):
        errors[f"NeRV {tradeoff}"] = error(
            NeRV(tradeoff=tradeoff, random_state=seed).fit_transform(X))
    errors["t-SNE"] = error(HSSNE(alpha=1.0, random_state=seed).fit_transform(X))
    return errors, notes


def main(argv=None):
    args = parse_args(argv)
    for name in args.datasets.split(","):
        X, y = load(name, args.n_max, args.seed, args.pca)
        folds = list(StratifiedKFold(10, shuffle=True, random_state=args.seed).split(X, y))
        results = {m: [] for m in METHODS}
        print(f"\n## {name}: n = {len(y)}, d = {X.shape[1]}, {len(np.unique(y))} classes")
        for f, (train, test) in enumerate(folds[:args.folds]):
            start = time.perf_counter()
            errors, notes = one_fold(X, y, train, test, args.seed)
            for m in METHODS:
                results[m].append(errors[m])
            print(f"fold {f}: " + ", ".join(f"{m} {errors[m]:.3f}" for m in METHODS)
                  + f" | metric K = {notes['K']}, sigma = {notes['sigma']:.3g}, "
                  f"neighbours = {notes['neighbours']:.1f} | "
                  f"{time.perf_counter() - start:.0f} s", flush=True)
        best = min(("SNeRV 0.1", "SNeRV 0.3"), key=lambda m: np.mean(results[m]))
        print(f"\n| method | 5-NN test error, mean | std | paired t-test vs {best} |")
        print("|---|---|---|---|")
        for m in METHODS:
            p = "" if m.startswith("SNeRV") or len(results[m]) < 2 else \
                f"{ttest_rel(results[best], results[m]).pvalue:.2g}"
            print(f"| {m} | {np.mean(results[m]):.3f} | {np.std(results[m]):.3f} | {p} |")


if __name__ == "__main__":
    main()
