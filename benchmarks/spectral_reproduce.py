"""Reproduce the semi-supervised spectral framework's 1-NN experiments.

Chatpatanasiri & Kijsirikul compare SS-LFDA and SS-DNE with PCA, LPP, LPP*,
LFDA, DNE and SELF by the 1-nearest-neighbour accuracy in the reduced space,
averaged over random splits, with few and with more labelled points. This
script does the same on the data in ``../shared/data`` (resolved from the
repository's parent directory):

- ionosphere (351 x 34, 2 classes) and balance_scale (625 x 4, 3 classes):
  seeded random splits with l labelled points (at least two per class), the
  rest unlabelled;
- ssl_bci (400 x 117, 2 classes): the SSL book's 12 official splits with 10
  and 100 labelled points.

Protocol (transductive, as the SSL book's): every learner sees all points,
labelled or not; a 1-NN classifier on the labelled points' coordinates
predicts the unlabelled ones. Every learner runs with its defaults, as a user
gets it: gamma, the Hadamard power r and beta (SELF's, and the shrinkage of
SS-LFDA and SS-DNE toward PCA) are "auto", chosen on each split by
cross-validation on the labelled points only
(:mod:`nbembed.spectral.selection`: a fold's labels are hidden, 1-NN predicts
them; ties go to the setting that leans least on the labels, then to the
larger 1-NN margin, then to the defaults). LPP* is LPP with
``hadamard_power="auto"``. A second table gives the paired differences of
SS-LFDA and SS-DNE against LFDA, LPP, LPP* and SELF over the same splits.

USPS is the 2007 test digits of ``usps_full`` with 100 labelled points (no
kernel rows: the KPCA trick solves 2007 x 2007 problems). ``--data FILE.npz``
runs the same protocol on any file with ``X`` and ``y`` (and optional
``idx_labeled_<l>`` splits).

Usage::

    PYTHONPATH=. python benchmarks/spectral_reproduce.py                  # full table
    PYTHONPATH=. python benchmarks/spectral_reproduce.py --quick          # smoke run
    PYTHONPATH=. python benchmarks/spectral_reproduce.py --markdown out.md --no-kernel
    PYTHONPATH=. python benchmarks/spectral_reproduce.py --data my.npz --labelled 20,100
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time

if __name__ == "__main__":
    # BLAS reads its thread count once, when NumPy loads: set it before that.
    _threads = sys.argv[sys.argv.index("--threads") + 1] if "--threads" in sys.argv[:-1] else "1"
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, _threads)

import numpy as np  # noqa: E402
from scipy.stats import ttest_rel  # noqa: E402
from sklearn.neighbors import KNeighborsClassifier  # noqa: E402

from nbembed.methods.spectral_presets import DNE, LFDA, LPP, PCA, SELF, SSDNE, SSLFDA  # noqa: E402

DATA = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"

#: Target dimension per data set, fixed before looking at results: a handful of
#: axes for ionosphere, the number of classes minus one for balance, the number
#: of classes for BCI and USPS.
DATASETS = {
    "ionosphere": dict(n_components=5, labelled=(10, 50)),
    "balance_scale": dict(n_components=2, labelled=(10, 50)),
    "ssl_bci": dict(n_components=2, labelled=(10, 100)),
    "usps": dict(n_components=10, labelled=(100,), kernel=False),
}

#: The paper's kernel: a polynomial of degree 2.
KERNEL = dict(kernel="poly", kernel_params=dict(degree=2, coef0=1.0))


def methods(kernel_variants=True, auto_k=False):
    """Name -> factory(n_components) -> estimator, every learner with its defaults
    (``auto_k``: also SS-LFDA and SS-DNE choosing their neighbourhood size)."""
    table = {
        "PCA": lambda d: PCA(d),
        "LPP": lambda d: LPP(d, neighbor_cost="local_scaling"),
        "LPP*": lambda d: LPP(d, neighbor_cost="local_scaling", hadamard_power="auto"),
        "LFDA": lambda d: LFDA(d),
        "DNE": lambda d: DNE(d),
        "SELF": lambda d: SELF(d),
        "SS-LFDA": lambda d: SSLFDA(d),
        "SS-DNE": lambda d: SSDNE(d),
        "SS-LFDA, label B only": lambda d: SSLFDA(d, constraint="label"),
        "SS-DNE, label B only": lambda d: SSDNE(d, constraint="label"),
    }
    if auto_k:
        table.update({
            "SS-LFDA, k auto": lambda d: SSLFDA(d, n_neighbors="auto"),
            "SS-DNE, k auto": lambda d: SSDNE(d, n_neighbors="auto"),
        })
    if kernel_variants:
        table.update({
            "KPCA + LPP*": lambda d: LPP(d, neighbor_cost="local_scaling",
                                         hadamard_power="auto", **KERNEL),
            "KPCA + LFDA": lambda d: LFDA(d, **KERNEL),
            "KPCA + SS-LFDA": lambda d: SSLFDA(d, **KERNEL),
            "KPCA + SS-DNE": lambda d: SSDNE(d, **KERNEL),
        })
    return table


def load(name):
    """X, y and any official splits of a shared data set, or of an npz file; None if absent."""
    if name == "usps":
        path = DATA / "usps_full" / "data.npz"
        if not path.exists():
            return None
        data = np.load(path, allow_pickle=False)
        test = ~data["is_train"].astype(bool)
        return dict(X=data["X"][test], y=data["y"][test])
    path = pathlib.Path(name) if name.endswith(".npz") else DATA / name / "data.npz"
    if not path.exists():
        return None
    data = np.load(path, allow_pickle=False)
    return {key: data[key] for key in data.files}


def random_splits(y, n_labelled, n_splits, seed=0):
    """Seeded random labelled sets with at least two points of every class."""
    rng = np.random.default_rng(seed)
    n_classes = int(y.max()) + 1
    out = []
    while len(out) < n_splits:
        idx = np.sort(rng.choice(len(y), n_labelled, replace=False))
        if np.bincount(y[idx], minlength=n_classes).min() >= 2:
            out.append(idx)
    return out


def splits_for(data, n_labelled, n_splits):
    key = f"idx_labeled_{n_labelled}"
    if key in data:
        return list(data[key])[:n_splits]
    return random_splits(data["y"], n_labelled, n_splits)


def one_nn_accuracy(Z, y, train, test):
    return float(KNeighborsClassifier(1).fit(Z[train], y[train]).score(Z[test], y[test]))


def evaluate(data, factory, n_labelled, n_components, n_splits):
    """Accuracy on the unlabelled points per split, and the parameters each split chose."""
    X, y = data["X"], data["y"]
    accuracies, chosen = [], []
    for labelled in splits_for(data, n_labelled, n_splits):
        labelled = np.asarray(labelled)
        partial = np.full_like(y, -1)
        partial[labelled] = y[labelled]
        model = factory(n_components).fit(X, partial)
        unlabelled = np.setdiff1d(np.arange(len(y)), labelled)
        accuracies.append(one_nn_accuracy(model.embedding_, y, labelled, unlabelled))
        chosen.append(model.selected_params_)
    return np.array(accuracies), chosen


def raw_accuracy(data, n_labelled, n_splits):
    X, y = data["X"], data["y"]
    accs = [one_nn_accuracy(X, y, np.asarray(lab), np.setdiff1d(np.arange(len(y)), lab))
            for lab in splits_for(data, n_labelled, n_splits)]
    return float(np.mean(accs)), float(np.std(accs))


#: The paper's claim: each semi-supervised learner is at least as good as its
#: supervised and its unsupervised counterpart (the paper's tables use LPP*).
COMPARISONS = tuple((semi, base) for semi in ("SS-LFDA", "SS-DNE")
                    for base in ("LFDA", "LPP", "LPP*", "SELF")) + (
    ("SS-LFDA, k auto", "SS-LFDA"), ("SS-DNE, k auto", "SS-DNE"))


def paired_comparisons(per_split):
    """Mean paired difference (points), its standard error and the one-sided p-value."""
    out = {}
    for a, b in COMPARISONS:
        if a not in per_split or b not in per_split:
            continue
        diff = 100 * (per_split[a] - per_split[b])
        if diff.size < 2:
            out[(a, b)] = "—"  # one split: no spread to compare with
            continue
        sem = diff.std(ddof=1) / np.sqrt(diff.size)
        p = ttest_rel(per_split[a], per_split[b], alternative="greater").pvalue \
            if sem > 0 else (0.0 if diff.mean() > 0 else 1.0)
        out[(a, b)] = f"{diff.mean():+.1f} ± {sem:.1f} (p {p:.2g})"
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--data", help="an npz file with X and y instead of the shared sets")
    parser.add_argument("--labelled", help="with --data: labelled points per split, e.g. 10,50")
    parser.add_argument("--n-components", type=int,
                        help="with --data: target dimension (default: classes - 1, at least 2)")
    parser.add_argument("--splits", type=int, default=30,
                        help="random splits per setting (default 30); official splits are "
                             "used where a data set has them, at most this many")
    parser.add_argument("--no-kernel", action="store_true", help="skip the KPCA-trick rows")
    parser.add_argument("--quick", action="store_true",
                        help="2 splits, one label setting, no kernel rows: a smoke run")
    parser.add_argument("--methods", nargs="+",
                        help='rows to run (default: all), e.g. LPP SS-LFDA "SS-LFDA, k auto"')
    parser.add_argument("--auto-k", action="store_true",
                        help='add SS-LFDA and SS-DNE with n_neighbors="auto"')
    parser.add_argument("--markdown", help="also write the table to this file")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS threads (default 1; read before NumPy loads)")
    args = parser.parse_args(argv)
    n_splits = 2 if args.quick else args.splits
    if args.data:
        y = np.load(args.data)["y"]
        settings = {args.data: dict(
            n_components=args.n_components or max(2, int(y.max())),
            labelled=tuple(int(v) for v in (args.labelled or "10,50").split(",")))}
    else:
        settings = {n: DATASETS[n] for n in args.datasets.split(",") if n}
    columns, rows, comparisons = [], {"1-NN on X": []}, {}
    means = {}  # method -> the mean accuracy of each column
    started = time.perf_counter()
    for name, setting in settings.items():
        data = load(name)
        if data is None:
            print(f"skipping {name}: its data file was not found", file=sys.stderr)
            continue
        table = methods(setting.get("kernel", True) and not (args.no_kernel or args.quick),
                        auto_k=args.auto_k)
        if args.methods:
            table = {m: f for m, f in table.items() if m in args.methods}
        d = setting["n_components"]
        for n_labelled in setting["labelled"][:1] if args.quick else setting["labelled"]:
            columns.append(f"{pathlib.Path(name).stem} l={n_labelled} d={d}")
            mean, std = raw_accuracy(data, n_labelled, n_splits)
            rows["1-NN on X"].append(f"{100 * mean:.1f} ± {100 * std:.1f}")
            per_split = {}
            for method, factory in table.items():
                per_split[method], chosen = evaluate(data, factory, n_labelled, d, n_splits)
                mean, std = 100 * per_split[method].mean(), 100 * per_split[method].std()
                means.setdefault(method, {})[columns[-1]] = mean
                rows.setdefault(method, [""] * (len(columns) - 1)).append(
                    f"{mean:.1f} ± {std:.1f}")
                print(f"{columns[-1]:32s} {method:22s} {mean:5.1f} ± {std:4.1f}  "
                      f"({time.perf_counter() - started:.0f} s) chosen: {chosen[:3]}...",
                      flush=True)
            for pair, cells in paired_comparisons(per_split).items():
                comparisons.setdefault(pair, []).append(cells)
    for cells in rows.values():
        cells.extend([""] * (len(columns) - len(cells)))
    # Over the columns every learner has (the kernel rows skip some data sets).
    shared = [c for c in columns if all(c in m for m in means.values())]
    average = {m: f"{np.mean([v[c] for c in shared]):.1f}" for m, v in means.items()}
    lines = ["| method | " + " | ".join(columns) + " | mean |",
             "|---|" + "---|" * (len(columns) + 1)]
    lines += [f"| {m} | " + " | ".join(v) + f" | {average.get(m, '')} |"
              for m, v in rows.items()]
    if shared != columns:
        lines += ["", "mean: over " + ", ".join(shared) + " (the columns every row has)."]
    lines += ["", "Paired differences over the same splits, in points (mean ± standard error; "
              "one-sided paired t-test p that the first is not better):", "",
              "| comparison | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    lines += [f"| {a} − {b} | " + " | ".join(v) + " |" for (a, b), v in comparisons.items()]
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        pathlib.Path(args.markdown).write_text(text + "\n")


if __name__ == "__main__":
    main()
