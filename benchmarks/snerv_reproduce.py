#!/usr/bin/env python
"""SNeRV's evaluation protocol (Peltonen, Aidos & Kaski, ICASSP 2009) on shared data sets.

Per data set: a random subset of at most 1500 points, 10-fold stratified
cross-validation. In each fold the test points' labels are hidden (-1), every
point is embedded in 2-D, and each test point is classified by the 5 nearest
training points in the embedding. Methods:

* SNeRV with tradeoff 0.1 and 0.3, defaults: the learning metric is fitted once
  per fold with its default validation of the number of Gaussians and their
  width (3 internal folds of the labelled points), and ``euclidean_weight="auto"``
  keeps its distances unless it classified those held-out labelled points worse
  than 5 nearest neighbours in the input did (then the input's distances, an
  unsupervised NeRV; each fold prints which); the tradeoff 0.3 embedding is
  NeRV on the same learning-metric distances with the same start and
  effective number of neighbours, which is what ``SNeRV(tradeoff=0.3)``
  computes when it fits the same metric.
* "SNeRV 0.1 +E" (only when asked for): the same, at tradeoff 0.1, on the
  metric's distances with a Euclidean term of weight ``--euclidean-weight``
  (``SNeRV(euclidean_weight=...)``).
* Unsupervised NeRV (tradeoff 0.1 and 0.3, 20 effective neighbours).
* t-SNE: ``nbembed.HSSNE(alpha=1)``, perplexity 30.

The table gives mean and standard deviation of the test error over the folds
and, like the paper's Table 1, a paired t-test of the better SNeRV (0.1 or 0.3)
against each other method; its last line is the test error of the metric's own
classifier (``LearningMetric.predict``), which bounds what SNeRV's map can do.
Features are scaled to [-1, 1] per feature on every point (as in LIBSVM's
vehicle.scale), except USPS pixels, used as they are.

The paper's data sets (Letter, Landsat, Phoneme, TIMIT) are not in
../shared/data, so its numbers are not reproduced one to one: the paper shows
SNeRV ahead of MRE, colored MVU and supervised Isomap there, and clearly ahead
of unsupervised NeRV on Letter.

Usage (from the repository root; data from ../shared/data)::

    PYTHONPATH=. python benchmarks/snerv_reproduce.py                  # 10 folds, both sets
    PYTHONPATH=. python benchmarks/snerv_reproduce.py --folds 2 --datasets vehicle
    PYTHONPATH=. python benchmarks/snerv_reproduce.py --datasets ionosphere,wine \
        --methods "SNeRV 0.1 +E,NeRV 0.1,t-SNE"                         # other shared sets
    PYTHONPATH=. python benchmarks/snerv_reproduce.py --datasets usps --pca 50   # PCA first
    PYTHONPATH=. python benchmarks/snerv_reproduce.py --datasets my.npz         # any X, y file
    PYTHONPATH=. python benchmarks/snerv_reproduce.py --decisions --datasets wine,iris
        # only the metric per fold: what "auto" decides, and the test errors of the
        # metric's classifier and of 5-NN in the input beside it (no embedding)

On 2 idle cores a vehicle fold takes about 10 s and a USPS fold 35-45 s
(the metric's validation is most of it); several times that on a busy machine.
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
from nbembed.methods.nerv_run import SupervisedDistances
from nbembed.metrics import knn_error

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
METHODS = ("SNeRV 0.1", "SNeRV 0.3", "SNeRV 0.1 +E", "NeRV 0.1", "NeRV 0.3", "t-SNE")
#: Shared data sets used as they are; every other one is scaled to [-1, 1] per feature.
PIXELS = ("usps",)


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
    p.add_argument("--euclidean-weight", type=float, default=0.1,
                   help="euclidean_weight of the 'SNeRV 0.1 +E' embedding")
    p.add_argument("--decisions", action="store_true",
                   help="fit only the learning metric per fold and print what "
                        "euclidean_weight='auto' decides, with test errors beside it")
    p.add_argument("--methods", default="SNeRV 0.3,NeRV 0.1,NeRV 0.3,t-SNE",
                   help="comma-separated subset of: " + ", ".join(METHODS)
                        + " (SNeRV 0.1 always runs)")
    return p.parse_args(argv)


def load(name, n_max, seed, n_pca=0):
    if name.endswith(".npz"):
        data = np.load(name)
    else:
        data = np.load(DATA / {"usps": "usps_full"}.get(name, name) / "data.npz")
    X, y = data["X"].astype(np.float64), data["y"]
    if len(y) > n_max:
        idx = np.random.default_rng(seed).choice(len(y), n_max, replace=False)
        X, y = X[idx], y[idx]
    if name not in PIXELS:
        # Unsupervised, on every point: features in units as different as vehicle's
        # would otherwise let the largest decide every Euclidean distance.
        X = MinMaxScaler((-1, 1)).fit_transform(X)
    if 0 < n_pca < X.shape[1]:
        # Unsupervised and fitted on every point: every method embeds all of them anyway.
        X = PCA(n_pca, random_state=seed).fit_transform(X)
    return X, y


def one_fold(X, y, train, test, seed, methods, euclidean_weight):
    errors, notes = {}, {}
    partial = y.copy()
    partial[test] = -1

    def error(Y):
        return knn_error(Y, y, k=5, train=train, test=test)

    run = SNeRV(tradeoff=0.1, random_state=seed).prepare(X, partial)
    run.run()
    errors["SNeRV 0.1"] = error(run.embedding)
    metric = run.learning_metric
    notes.update(K=metric.n_components_, sigma=metric.sigma_, neighbours=run.n_neighbors,
                 metric_error=float(np.mean(metric.predict(X[test]) != y[test])),
                 distances="input" if np.isinf(run.euclidean_weight) else "metric")
    # The other SNeRV embeddings: NeRV on distances of the same metric, with the
    # same start and effective number of neighbours, which is what SNeRV with these
    # settings computes when it fits the same metric.
    variants = {"SNeRV 0.3": (0.3, run.euclidean_weight),
                "SNeRV 0.1 +E": (0.1, euclidean_weight)}
    for m, (tradeoff, weight) in variants.items():
        if m in methods:
            D = SupervisedDistances.fit_distances(metric, X, weight)[1]
            Y = NeRV(tradeoff=tradeoff, n_neighbors=run.n_neighbors, metric="precomputed",
                     random_state=seed).fit_transform(D)
            errors[m] = error(Y)
    for tradeoff in (0.1, 0.3):
        if f"NeRV {tradeoff}" in methods:
            errors[f"NeRV {tradeoff}"] = error(
                NeRV(tradeoff=tradeoff, random_state=seed).fit_transform(X))
    if "t-SNE" in methods:
        errors["t-SNE"] = error(HSSNE(alpha=1.0, random_state=seed).fit_transform(X))
    return errors, notes


def decisions(X, y, folds, seed):
    """Per fold: the metric's and 5-NN's validation errors on the labelled points (what
    ``euclidean_weight="auto"`` compares), its decision, and both test errors."""
    from sklearn.neighbors import KNeighborsClassifier

    from nbembed.affinity.learning_metric import LearningMetric
    from nbembed.methods.nerv_run import choose_euclidean_weight

    print("| fold | validation: metric | 5-NN in X | only metric / only 5-NN missed | distances "
          "| test: metric | 5-NN in X |")
    print("|---|---|---|---|---|---|---|")
    tests = []
    for f, (train, test) in enumerate(folds):
        partial = y.copy()
        partial[test] = -1
        metric = LearningMetric(random_state=seed).fit(X, partial)
        choice = "input" if np.isinf(choose_euclidean_weight("auto", metric)) else "metric"
        metric_test = float(np.mean(metric.predict(X[test]) != y[test]))
        knn_test = float(np.mean(
            KNeighborsClassifier(5).fit(X[train], y[train]).predict(X[test]) != y[test]))
        tests.append((metric_test, knn_test, choice))
        only_metric, only_knn = metric.validation_disagreements_
        print(f"| {f} | {metric.validation_error_:.3f} | {metric.knn_validation_error_:.3f} | "
              f"{only_metric:.0f} / {only_knn:.0f} | {choice} | {metric_test:.3f} | "
              f"{knn_test:.3f} |", flush=True)
    m, k, _ = zip(*tests)
    print(f"| mean | | | | {sum(c == 'input' for *_, c in tests)} of {len(tests)} input | "
          f"{np.mean(m):.3f} | {np.mean(k):.3f} |")


def main(argv=None):
    args = parse_args(argv)
    methods = [m for m in METHODS if m in args.methods.split(",") or m == "SNeRV 0.1"]
    for name in args.datasets.split(","):
        X, y = load(name, args.n_max, args.seed, args.pca)
        folds = list(StratifiedKFold(10, shuffle=True, random_state=args.seed).split(X, y))
        results = {m: [] for m in methods}
        metric_errors = []
        print(f"\n## {name}: n = {len(y)}, d = {X.shape[1]}, {len(np.unique(y))} classes")
        if args.decisions:
            decisions(X, y, folds[:args.folds], args.seed)
            continue
        for f, (train, test) in enumerate(folds[:args.folds]):
            start = time.perf_counter()
            errors, notes = one_fold(X, y, train, test, args.seed, methods,
                                     args.euclidean_weight)
            for m in methods:
                results[m].append(errors[m])
            metric_errors.append(notes["metric_error"])
            print(f"fold {f}: " + ", ".join(f"{m} {errors[m]:.3f}" for m in methods)
                  + f" | metric K = {notes['K']}, sigma = {notes['sigma']:.3g}, "
                  f"test error {notes['metric_error']:.3f}, "
                  f"SNeRV on the {notes['distances']}'s distances, "
                  f"neighbours = {notes['neighbours']:.1f} | "
                  f"{time.perf_counter() - start:.0f} s", flush=True)
        snerv = [m for m in ("SNeRV 0.1", "SNeRV 0.3") if m in methods]
        best = min(snerv, key=lambda m: np.mean(results[m]))
        print(f"\n| method | 5-NN test error, mean | std | paired t-test vs {best} |")
        print("|---|---|---|---|")
        for m in methods:
            p = "" if m in snerv or len(results[m]) < 2 else \
                f"{ttest_rel(results[best], results[m]).pvalue:.2g}"
            print(f"| {m} | {np.mean(results[m]):.3f} | {np.std(results[m]):.3f} | {p} |")
        print(f"| (the metric's own classifier) | {np.mean(metric_errors):.3f} | "
              f"{np.std(metric_errors):.3f} | |")


if __name__ == "__main__":
    main()
