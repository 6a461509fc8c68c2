#!/usr/bin/env python
"""Mbed and HSSNE on sparse tf-idf rows against the same rows made dense.

The data are :func:`nbembed.datasets.make_tfidf_documents`: seeded synthetic
text, two classes of documents (50-200 words each) over a vocabulary of
``--terms`` terms with Zipf-like frequencies, sublinear tf-idf weighted and
L2-normalised; the class is the known binary split. Both methods use
``metric="cosine"`` (``--metric`` to change it) and are run twice, on the CSR
matrix and on ``X.toarray()``, with the same seed:

The topic share (``--topic-share``, 0.05) sets how hard the split is.

* **Mbed(2)**, semi-supervised with ``--labels`` labelled documents per class,
  its defaults otherwise (exact affinities over all pairs at this size);
  reported: its transductive error on the unlabelled documents.
* **HSSNE()** (t-SNE) with its defaults; reported: the leave-one-out 1-NN
  error of the embedding with all labels.

Measured for each: the wall time of the affinity step (``prepare``: distances,
neighbourhoods, start) and of the whole ``fit`` (which includes it), the
tracemalloc peak of ``prepare`` in a separate call (NumPy and SciPy
allocations; Numba's are not seen), max |P_sparse - P_dense| (Mbed: its
symmetrised P + P^T), and the sparse / dense ratio of the times. Numba
compilation is excluded by a warm-up on 120 documents.

A second table times the nearest-neighbour affinities (``affinity="knn"``,
what ``"auto"`` uses above 5000 points) on ``--knn-documents`` documents, sparse
and dense, for both metrics, with exact neighbours (a block of rows at a time).

The two paths give the same P to float64 rounding; the descents then amplify
those last-bit differences (as they amplify a relative perturbation of 1e-15 of
the dense X), so the two embeddings are equally good but not identical.
Wall-clock numbers are only indicative on a shared machine.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/bench_sparse.py            # 2000 documents, ~3 min
    PYTHONPATH=. python benchmarks/bench_sparse.py --quick    # smoke run, seconds
"""

from __future__ import annotations

import argparse
import functools
import time
import tracemalloc

from bench_mbed import configure_threads  # stdlib only: safe before NumPy is imported

MB = 2.0 ** 20


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--documents", type=int, default=2000)
    p.add_argument("--terms", type=int, default=5000)
    p.add_argument("--labels", type=int, default=5, help="labelled documents per class")
    p.add_argument("--topic-share", type=float, default=0.05,
                   help="share of a document's words from its class's topic (default 0.05: "
                        "0.04 left Mbed at 33%% error, 0.07 at 1.4%%)")
    p.add_argument("--metric", default="cosine", choices=("cosine", "euclidean"))
    p.add_argument("--knn-documents", type=int, default=6000,
                   help="documents of the nearest-neighbour affinity table (default 6000)")
    p.add_argument("--threads", type=int, default=2, help="Numba/BLAS threads (default 2)")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 300 documents, 1000 terms (numbers not meaningful)")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def prepare_peak_mb(make, X, y):
    tracemalloc.start()
    make().prepare(X, y)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / MB


def affinities(run):
    """The P a prepared run descends on, dense (Mbed's symmetrised P + P^T)."""
    import scipy.sparse as sp

    P = run.objective.M if hasattr(run.objective, "M") else run.objective.P
    return P.toarray() if sp.issparse(P) else P


def measure(name, make, X, y_fit, score):
    """Prepare, fit and score one method on the sparse X and on its dense copy."""
    import numpy as np

    rows, P = {}, {}
    for path, data in (("sparse", X), ("dense", X.toarray())):
        rows[path] = {"peak_mb": prepare_peak_mb(make, data, y_fit)}
        run, rows[path]["prepare_s"] = timed(lambda: make().prepare(data, y_fit))
        P[path] = affinities(run)
        del run
        model, rows[path]["fit_s"] = timed(lambda: make().fit(data, y_fit))
        rows[path]["error"] = score(model)
    gap = float(np.max(np.abs(P["sparse"] - P["dense"])))
    return name, rows, gap


def knn_table(n, terms, share, seed):
    """Time the kNN joint P of the sparse X and of its dense copy, for both metrics."""
    import numpy as np

    from nbembed.affinity.perplexity import joint_probabilities
    from nbembed.datasets import make_tfidf_documents

    X, _ = make_tfidf_documents(n, terms, topic_share=share, random_state=seed)
    dense = X.toarray()
    print()
    print(f"kNN affinities (perplexity 30, 90 exact neighbours), {n} documents:")
    print()
    print("| metric | sparse (s) | dense (s) | sparse / dense | max abs P gap |")
    print("|---|---|---|---|---|")
    for metric in ("euclidean", "cosine"):
        def knn(data, metric=metric):
            return joint_probabilities(data, 30.0, method="knn", metric=metric,
                                       neighbors="exact")
        P_sparse, t_sparse = timed(lambda: knn(X))
        P_dense, t_dense = timed(lambda: knn(dense))
        gap = float(np.max(np.abs((P_sparse - P_dense).data), initial=0.0))
        print(f"| {metric} | {t_sparse:.2f} | {t_dense:.2f} | {t_sparse / t_dense:.2f} | "
              f"{gap:.1e} |")


def main(argv=None):
    args = parse_args(argv)
    configure_threads(args.threads)
    import numpy as np

    from nbembed import HSSNE, Mbed
    from nbembed.datasets import make_tfidf_documents
    from nbembed.metrics import knn_error

    n, terms = (300, 1000) if args.quick else (args.documents, args.terms)
    X, y = make_tfidf_documents(n, terms, topic_share=args.topic_share,
                                random_state=args.seed)
    rng = np.random.default_rng(args.seed)
    labelled = np.zeros(n, dtype=bool)
    for c in (0, 1):
        labelled[rng.choice(np.flatnonzero(y == c), args.labels, replace=False)] = True
    partial = np.where(labelled, y, -1)
    sparse_mb = (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) / MB
    print(f"{n} documents, {terms} terms, {X.nnz / n:.1f} stored entries per row "
          f"({100 * X.nnz / (n * terms):.2f}% dense), topic share {args.topic_share}, "
          f"metric={args.metric}, {labelled.sum()} labels, {args.threads} threads; "
          f"X takes {sparse_mb:.1f} MB sparse, {8 * n * terms / MB:.0f} MB dense")

    common = dict(metric=args.metric, random_state=args.seed)
    if args.quick:
        common["max_iter"] = 120
    make_mbed = functools.partial(Mbed, 2, **common)
    make_hssne = functools.partial(HSSNE, **common)
    warm_X, warm_y = make_tfidf_documents(120, 300, topic_terms=50, random_state=args.seed)
    for make in (make_mbed, make_hssne):  # Numba compilation, dense and sparse paths
        for data in (warm_X, warm_X.toarray()):
            make().set_params(max_iter=40).fit(data, np.where(np.arange(120) < 6, warm_y, -1))

    results = [
        measure("Mbed (transductive error)", make_mbed, X, partial,
                lambda m: float(np.mean(m.labels_[~labelled] != y[~labelled]))),
        measure("HSSNE (1-NN error)", make_hssne, X, None,
                lambda m: float(knn_error(m.embedding_, y))),
    ]
    header = ("| method | input | prepare (s) | fit (s) | prepare peak (MB) | error | "
              "max abs P gap |")
    print()
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for name, rows, gap in results:
        for path in ("sparse", "dense"):
            r = rows[path]
            print(f"| {name} | {path} | {r['prepare_s']:.2f} | {r['fit_s']:.1f} | "
                  f"{r['peak_mb']:.0f} | {100 * r['error']:.1f}% | "
                  f"{f'{gap:.1e}' if path == 'sparse' else ''} |")
        s, d = rows["sparse"], rows["dense"]
        print(f"| {name} | sparse / dense | {s['prepare_s'] / d['prepare_s']:.2f} | "
              f"{s['fit_s'] / d['fit_s']:.2f} | {s['peak_mb'] / d['peak_mb']:.2f} | | |")
    knn_table(600 if args.quick else args.knn_documents, terms, args.topic_share, args.seed)


if __name__ == "__main__":
    main()
