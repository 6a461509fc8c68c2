#!/usr/bin/env python
"""Do labels help? Each semi-supervised method beside its unsupervised twin and simple baselines.

For every data set and label draw (``--per-class`` labels in every class, at most
half of the class; ``--draws`` draws, seeds 0, 1, ...) the error on the
unlabelled points of:

* ``1-NN on X``: the nearest labelled point in the raw data;
* ``LabelSpreading``: scikit-learn's, kNN kernel, its defaults (transductive);
* ``Mbed``: ``Mbed(K).fit(X, labels).labels_`` with the defaults (transductive);
* ``HSSNE``, ``HSSNE + labels``, ``HSSNE + labels at rho 0.5``: the 2-D map without
  labels, with the labels as must-links at the defaults (``rho="auto"``: the weight
  chosen on the labelled points) and at the fixed weight 0.5; the nearest labelled
  point in the map;
* ``LPP``, ``SELF``, ``SS-LFDA``, ``SS-DNE``: the linear maps at their defaults with
  ``n_components`` = min(10, D), fitted on all points with the labels they use;
  the nearest labelled point in the map.

The goals it checks (a labelled map must not be worse than its twin or the
simple baselines): HSSNE + labels <= HSSNE (and the same at rho 0.5); Mbed <= LabelSpreading + 1 point;
SS-LFDA and SS-DNE <= min(LPP, SELF) + 1 point (the better of the two on the
set). A goal is "met" when the mean over the draws is; "within noise" when the
mean excess, paired over the draws, is below twice its standard error.

Data: the shared sets with labels (``../shared/data``; vehicle, wine and
balance_scale standardized, USPS its 2007 test digits) and generated ones
(``benchmarks/data_shapes.py``: ``rotated_objects`` 1440 x 1024 with 20 classes,
``image_like`` 2000 x 784, the digits shifted and with noise). Nothing is tuned on
these numbers.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/labels_help.py --sets iris,wine --draws 2   # a minute
    PYTHONPATH=. python benchmarks/labels_help.py                              # all, about an hour
    PYTHONPATH=. python benchmarks/labels_help.py --methods "1-NN on X,LabelSpreading,Mbed"
"""

from __future__ import annotations

import argparse
import warnings
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import StandardScaler
from sklearn.semi_supervised import LabelSpreading

sys.path.insert(0, str(Path(__file__).resolve().parent))
import data_shapes  # noqa: E402

from nbembed import HSSNE, LPP, SELF, SSDNE, SSLFDA, Mbed  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
STANDARDIZED = ("vehicle", "wine", "balance_scale")
SETS = ("iris", "wine", "vehicle", "balance_scale", "ionosphere", "g50c", "ssl_bci", "usps",
        "yaleb_extended", "rotated_objects", "image_like")


def load(name):
    """(X, y) of a set, y as 0 .. K-1."""
    if name == "rotated_objects":
        return data_shapes.rotated_objects(1440)
    if name == "image_like":
        return data_shapes.image_like(2000, seed=1)
    data = np.load(DATA / ("usps_full" if name == "usps" else name) / "data.npz")
    X, y = np.asarray(data["X"], dtype=np.float64), data["y"]
    if name == "usps":
        X, y = X[~data["is_train"]], y[~data["is_train"]]
    if name in STANDARDIZED:
        X = StandardScaler().fit_transform(X)
    return X, np.unique(y, return_inverse=True)[1]


def draw_labels(y, per_class, seed):
    """-1 for unlabelled points; ``per_class`` labels in every class (at most half of it)."""
    rng = np.random.default_rng(seed)
    partial = np.full(len(y), -1)
    for k in np.unique(y):
        members = np.flatnonzero(y == k)
        chosen = rng.choice(members, min(per_class, members.size // 2), replace=False)
        partial[chosen] = k
    return partial


def nearest_labelled_error(E, y, partial):
    """Error of the nearest labelled point's class, over the unlabelled points of E."""
    known = partial >= 0
    predicted = KNeighborsClassifier(1).fit(E[known], y[known]).predict(E[~known])
    return float(np.mean(predicted != y[~known]))


def transductive_error(labels, y, partial):
    return float(np.mean(labels[partial < 0] != y[partial < 0]))


def linear_map(estimator):
    def run(X, y, partial, seed):
        components = min(10, X.shape[1])
        model = estimator(n_components=components).fit(X, partial)
        return nearest_labelled_error(model.transform(X), y, partial)
    return run


METHODS = {
    "1-NN on X": lambda X, y, partial, seed: nearest_labelled_error(X, y, partial),
    "LabelSpreading": lambda X, y, partial, seed: transductive_error(
        LabelSpreading(kernel="knn").fit(X, partial).transduction_, y, partial),
    "Mbed": lambda X, y, partial, seed: transductive_error(
        Mbed(int(y.max()) + 1, random_state=seed).fit(X, partial).labels_, y, partial),
    "HSSNE": lambda X, y, partial, seed: nearest_labelled_error(
        HSSNE(random_state=seed).fit_transform(X), y, partial),
    "HSSNE + labels": lambda X, y, partial, seed: nearest_labelled_error(
        HSSNE(random_state=seed).fit_transform(X, partial), y, partial),
    "HSSNE + labels at rho 0.5": lambda X, y, partial, seed: nearest_labelled_error(
        HSSNE(rho=0.5, random_state=seed).fit_transform(X, partial), y, partial),
    "LPP": linear_map(LPP),
    "SELF": linear_map(SELF),
    "SS-LFDA": linear_map(SSLFDA),
    "SS-DNE": linear_map(SSDNE),
}

#: (method, reference methods, slack): the method's mean error must be at most the
#: smallest of the references' plus the slack.
GOALS = (("HSSNE + labels", ("HSSNE",), 0.0),
         ("HSSNE + labels at rho 0.5", ("HSSNE",), 0.0),
         ("Mbed", ("LabelSpreading",), 0.01),
         ("SS-LFDA", ("LPP", "SELF"), 0.01),
         ("SS-DNE", ("LPP", "SELF"), 0.01))


def evaluate(name, methods, per_class, draws):
    X, y = load(name)
    errors = {m: [] for m in methods}
    seconds = {m: 0.0 for m in methods}
    for seed in range(draws):
        partial = draw_labels(y, per_class, seed)
        for m in methods:
            started = time.perf_counter()
            errors[m].append(METHODS[m](X, y, partial, seed))
            seconds[m] += time.perf_counter() - started
    K = int(y.max()) + 1
    print(f"\n### {name}: {X.shape[0]} x {X.shape[1]}, {K} classes, "
          f"{min(per_class, np.bincount(y).min() // 2)} labels per class, {draws} draws\n")
    print("| method | error on unlabelled points (mean ± sd) | seconds per draw |")
    print("|---|---|---|")
    for m in methods:
        e = 100 * np.array(errors[m])
        print(f"| {m} | {e.mean():.1f}% ± {e.std(ddof=1) if draws > 1 else 0.0:.1f} "
              f"| {seconds[m] / draws:.1f} |")
    for method, references, slack in GOALS:
        if method not in errors or not all(r in errors for r in references):
            continue
        best = min(references, key=lambda r: np.mean(errors[r]))
        # paired over the draws: the same labels for the method and its reference
        gap = 100 * (np.array(errors[method]) - np.array(errors[best]) - slack)
        noise = 2 * gap.std(ddof=1) / np.sqrt(draws) if draws > 1 else 0.0
        verdict = ("met" if gap.mean() <= 1e-9 else
                   "within noise" if gap.mean() <= noise else "NOT met")
        print(f"\ngoal {method} <= {best} + {100 * slack:.0f} point: {verdict} "
              f"(excess {gap.mean():+.1f} points, twice its standard error {noise:.1f})")
    sys.stdout.flush()


def say_each_warning_once():
    """Show each warning's text once in the whole run.

    With ``warnings.simplefilter("once")`` alone iris's duplicate-rows warning
    came back with every fit (a change of the filters anywhere, such as a
    library's ``catch_warnings`` block, can reset the registries "once" relies
    on); here the texts already shown are kept by the run itself.
    """
    shown = set()
    show = warnings.showwarning

    def show_new(message, category, *args, **kwargs):
        if (str(message), category) not in shown:
            shown.add((str(message), category))
            show(message, category, *args, **kwargs)

    warnings.simplefilter("always")
    warnings.showwarning = show_new


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sets", default=",".join(SETS), help="comma-separated (default: all)")
    p.add_argument("--methods", default=",".join(METHODS),
                   help="comma-separated (default: all)")
    p.add_argument("--per-class", type=int, default=10, help="labels per class (default 10)")
    p.add_argument("--draws", type=int, default=5, help="label draws (default 5)")
    args = p.parse_args(argv)
    say_each_warning_once()  # e.g. iris's duplicate rows: said once, not per fit
    methods = [m.strip() for m in args.methods.split(",")]
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        p.error(f"unknown methods {unknown}; choose from {list(METHODS)}")
    for name in args.sets.split(","):
        evaluate(name.strip(), methods, args.per_class, args.draws)


if __name__ == "__main__":
    main()
