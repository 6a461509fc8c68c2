#!/usr/bin/env python
"""Reproduce the Mbed paper's numbers (Zien & Quinonero Candela, ICML 2005).

* g50c, semi-supervised (Table 2): the 10 official splits of Chapelle & Zien's
  benchmark (50 labelled points, the other 500 are the test set); mean test
  error, paper 5.32%. Needs ``../shared/data/g50c/data.npz`` next to the
  repository (or ``--data``).
* g50c, unsupervised (Table 1): inconsistently grouped pairs, paper 9.68%
  (k-means 9.02%). The paper trained "with 10 re-initializations"; we give the
  mean over ``--seeds`` runs and the run with the largest margin criterion
  (Mbed's own model selection), and k-means with ``n_init=10``.
* Digits 2, 4 and 8 from scikit-learn (the paper's Figures 2-3 use USPS):
  unsupervised pairs and the test error with 50 random labels, against
  k-means whose clusters are named by the majority of the same 50 labels.
* USPS, 10 classes, semi-supervised (``--usps``; Table 2, paper 30.57%): the
  2007 test digits of ``usps_full/data.npz`` (``is_train`` false), ``--splits``
  random draws of 50 labelled points with every class labelled at least once;
  the test error on the other 1957 points, per split and the mean, with the
  width sigma each split chose by cross-validation on its labelled points
  (``--sigma quantile`` for the paper's 1/K quantile).

Every Mbed run uses the defaults (Algorithm 1: 500 CG iterations, 20 steps; with
more than two classes and labels the start from spread labels and sigma by
cross-validation, see docs/mbed.md).

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/mbed_reproduce.py            # all, a few minutes
    PYTHONPATH=. python benchmarks/mbed_reproduce.py --seeds 3  # quicker
    PYTHONPATH=. python benchmarks/mbed_reproduce.py --usps --splits 10  # USPS only
    PYTHONPATH=. python benchmarks/mbed_reproduce.py --usps --sigma quantile  # the paper's sigma
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from sklearn.cluster import KMeans
from sklearn.datasets import load_digits
from sklearn.semi_supervised import LabelSpreading
from sklearn.metrics.cluster import pair_confusion_matrix

from nbembed.methods.mbed import Mbed

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def inconsistent_pairs(a, b):
    """Fraction of pairs grouped together by one labelling and apart by the other."""
    C = pair_confusion_matrix(a, b)
    return (C[0, 1] + C[1, 0]) / C.sum()


def named_by_labels(clusters, y, labelled, n_classes):
    """Cluster ids turned into classes by the majority of the labelled points in each."""
    names = np.arange(n_classes)
    for c in range(n_classes):
        inside = y[labelled][clusters[labelled] == c]
        if inside.size:
            names[c] = np.bincount(inside, minlength=n_classes).argmax()
    return names[clusters]


def semi_supervised(X, y, splits, n_classes, seeds=None):
    """Test errors of ``labels_`` and of the map alone (argmax of ``membership_``)."""
    errors, map_errors = [], []
    for seed, (lab, unl) in zip(range(10 ** 6) if seeds is None else seeds, splits):
        partial = np.full(len(y), -1)
        partial[lab] = y[lab]
        model = Mbed(n_classes, random_state=seed).fit(X, partial)
        errors.append(np.mean(model.labels_[unl] != y[unl]))
        map_errors.append(np.mean(model.membership_.argmax(axis=1)[unl] != y[unl]))
    return np.array(errors), np.array(map_errors)


def unsupervised(X, y, n_classes, seeds):
    pairs, criteria = [], []
    for seed in range(seeds):
        model = Mbed(n_classes, random_state=seed).fit(X)
        pairs.append(inconsistent_pairs(y, model.labels_))
        criteria.append(model.criterion_path_[model.selected_step_])
    pairs = np.array(pairs)
    kmeans = KMeans(n_classes, n_init=10, random_state=0).fit(X).labels_
    return pairs, pairs[int(np.argmax(criteria))], inconsistent_pairs(y, kmeans)


def usps_splits(y, n_splits, n_labelled=50):
    """Random labelled sets of ``n_labelled`` points holding every class; the rest is the test set."""
    n_classes = int(y.max()) + 1
    splits = []
    for seed in range(n_splits):
        rng = np.random.default_rng(seed)
        while True:
            lab = np.sort(rng.choice(len(y), n_labelled, replace=False))
            if np.unique(y[lab]).size == n_classes:
                break
        splits.append((lab, np.setdiff1d(np.arange(len(y)), lab)))
    return splits


def usps(path, n_splits, sigma="auto"):
    """Semi-supervised test error on the 2007 USPS test digits, one line per split."""
    data = np.load(path)
    test = ~data["is_train"]
    X, y = data["X"][test], data["y"][test]
    errors, map_errors, baseline = [], [], []
    for seed, (lab, unl) in enumerate(usps_splits(y, n_splits)):
        started = time.perf_counter()
        partial = np.full(len(y), -1)
        partial[lab] = y[lab]
        model = Mbed(10, sigma=sigma, random_state=seed).fit(X, partial)
        errors.append(np.mean(model.labels_[unl] != y[unl]))
        map_errors.append(np.mean(model.membership_.argmax(axis=1)[unl] != y[unl]))
        cv = ("" if model.sigma_cv_errors_ is None else
              ", cross-validation errors " + " ".join(f"{e:.2f}" for e in model.sigma_cv_errors_))
        spreading = LabelSpreading(kernel="knn").fit(X, partial).transduction_
        baseline.append(np.mean(spreading[unl] != y[unl]))
        print(f"# USPS split {seed}: test error {100 * errors[-1]:.2f}% (labels from the "
              f"{model.labels_source_}; the map's {100 * map_errors[-1]:.2f}%), "
              f"sigma {model.sigma_:.3f}"
              f"{cv}, the start spread over {model.spread_neighbors_} neighbours, the "
              f"spread labels over the {model.spread_graph_} {model.spread_labels_neighbors_}"
              f"-neighbour graph "
              f"({time.perf_counter() - started:.0f} s); LabelSpreading {100 * baseline[-1]:.2f}%",
              flush=True)
    errors = np.array(errors)
    row(f"USPS (10 classes), 50 labels ({n_splits} splits)", f"{100 * errors.mean():.2f}%",
        "30.57%", f"per split {100 * errors.min():.1f}-{100 * errors.max():.1f}%, "
        f"sd {100 * errors.std(ddof=1 if n_splits > 1 else 0):.1f}")
    row("  the map alone (argmax of membership_)", f"{100 * np.mean(map_errors):.2f}%", "30.57%")
    row("  scikit-learn LabelSpreading (kNN kernel)", f"{100 * np.mean(baseline):.2f}%", "")


def row(name, ours, paper, note=""):
    print(f"| {name:<44} | {ours:>16} | {paper:>15} | {note}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=DATA, help="folder with g50c/ and usps_full/data.npz")
    p.add_argument("--seeds", type=int, default=10,
                   help="unsupervised restarts and digit label draws (default 10)")
    p.add_argument("--usps", action="store_true",
                   help="only the USPS 10-class semi-supervised experiment")
    p.add_argument("--splits", type=int, default=10, help="USPS label draws (default 10)")
    p.add_argument("--sigma", default="auto",
                   help='USPS input width: "auto" (default), "quantile" (the paper\'s), "cv" '
                        'or a number')
    args = p.parse_args(argv)
    started = time.perf_counter()
    print(f"| {'experiment':<44} | {'ours':>16} | {'paper':>15} | notes")
    print(f"|{'-' * 46}|{'-' * 18}|{'-' * 17}|------")
    if args.usps:
        sigma = args.sigma if args.sigma in ("auto", "quantile", "cv") else float(args.sigma)
        usps(args.data / "usps_full" / "data.npz", args.splits, sigma)
        print(f"# {time.perf_counter() - started:.0f} s")
        return

    path = args.data / "g50c" / "data.npz"
    if path.exists():
        data = np.load(path)
        X, y = data["X"], data["y"]
        errors, map_errors = semi_supervised(
            X, y, zip(data["idx_labeled"], data["idx_unlabeled"]), 2)
        row("g50c, 50 labels, test error (10 splits)", f"{100 * errors.mean():.2f}%", "5.32%",
            f"per split {100 * errors.min():.1f}-{100 * errors.max():.1f}%")
        row("  the map alone (Algorithm 1)", f"{100 * map_errors.mean():.2f}%", "5.32%",
            f"per split {100 * map_errors.min():.1f}-{100 * map_errors.max():.1f}%")
        pairs, best, kmeans = unsupervised(X, y, 2, args.seeds)
        row(f"g50c unsupervised, pairs (mean of {args.seeds})", f"{100 * pairs.mean():.2f}%",
            "9.68%", f"range {100 * pairs.min():.1f}-{100 * pairs.max():.1f}%")
        row("g50c unsupervised, pairs (best criterion)", f"{100 * best:.2f}%", "9.68%", "")
        row("g50c k-means (n_init=10), pairs", f"{100 * kmeans:.2f}%", "9.02%", "")
    else:
        print(f"# {path} not found: g50c skipped")

    digits, labels = load_digits(return_X_y=True)
    keep = np.isin(labels, [2, 4, 8])
    X, y = digits[keep], np.searchsorted([2, 4, 8], labels[keep])
    pairs, best, kmeans_pairs = unsupervised(X, y, 3, args.seeds)
    row(f"digits 2/4/8 unsupervised, pairs (mean of {args.seeds})", f"{100 * pairs.mean():.2f}%",
        "-", f"k-means {100 * kmeans_pairs:.2f}%")
    row("digits 2/4/8 unsupervised, pairs (best crit.)", f"{100 * best:.2f}%", "-", "")
    draws = [np.random.default_rng(s).choice(len(y), 50, replace=False) for s in range(args.seeds)]
    splits = [(lab, np.setdiff1d(np.arange(len(y)), lab)) for lab in draws]
    errors, map_errors = semi_supervised(X, y, splits, 3)
    kmeans = KMeans(3, n_init=10, random_state=0).fit(X).labels_
    kmeans_errors = [np.mean(named_by_labels(kmeans, y, lab, 3)[unl] != y[unl])
                     for lab, unl in splits]
    row("digits 2/4/8, 50 labels, test error", f"{100 * np.mean(errors):.2f}%", "-",
        f"k-means named by the labels {100 * np.mean(kmeans_errors):.2f}%")
    row("  the map alone", f"{100 * np.mean(map_errors):.2f}%", "-", "")
    print(f"# {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
