#!/usr/bin/env python
"""prec(h) of Parametric Embedding against SNE, t-SNE, MDS and Isomap on the same posteriors.

The comparison of Iwata et al. (Neural Computation 19, 2007, Section 5.2 and
Fig. 2), on scikit-learn's digits of classes 0-4 (901 objects; the paper used
web pages): posteriors from the soft nearest-neighbour classifier built from
``--labels`` labelled digits per class (a new random choice per seed), then
each method embeds the 901 objects in 2-D from those posteriors only:

* **PE**: ``ParametricEmbedding()`` at its defaults; classes at its phi_k.
* **SNE**: ``nbembed.SNE`` on sqrt KL(p_i || p_j) (``metric="precomputed"``,
  squared again inside the Gaussian), as the paper's SNE input.
* **t-SNE**: ``HSSNE(alpha=1)`` on the same dissimilarities, random start.
* **MDS**: classical MDS on the squared Euclidean distances between posteriors
  (the paper's MDS2): the top two eigenvectors of -1/2 H D H.
* **Isomap**: scikit-learn's ``Isomap`` with 10 neighbours on KL(p_i || p_j)
  (the paper's Isomap2; shortest paths make it symmetric).

Methods without class positions place class k at its most confident object
(the paper's rule). prec(h) is :func:`nbembed._metrics_parametric.posterior_precision`.
The table gives mean and standard deviation over ``--seeds`` draws of the
labelled digits (each method's own seed follows the draw).

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/pe_precision.py                   # 10 and 100 labels, 5 seeds
    PYTHONPATH=. python benchmarks/pe_precision.py --labels 10 --seeds 2
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.manifold import Isomap

from nbembed import HSSNE, SNE
from nbembed._metrics_parametric import posterior_precision
from nbembed.methods.parametric import ParametricEmbedding
from nbembed.posteriors import posterior_divergences, soft_nearest_neighbor_posteriors

H = (10, 50, 100)
METHODS = ("PE", "SNE", "t-SNE", "MDS", "Isomap")


def digits_0_to_4():
    X, y = load_digits(return_X_y=True)
    keep = y < 5
    return X[keep], y[keep]


def draw_labels(y, per_class, seed):
    """``per_class`` labelled points of every class, the others -1."""
    rng = np.random.default_rng(seed)
    labels = np.full(y.size, -1)
    for c in np.unique(y):
        labels[rng.choice(np.flatnonzero(y == c), per_class, replace=False)] = c
    return labels


def classical_mds(P, n_components=2):
    """Classical (Torgerson) MDS of the rows of P under squared Euclidean distances."""
    sq = np.sum(P ** 2, axis=1)
    D = sq[:, None] + sq[None, :] - 2.0 * P @ P.T
    n = P.shape[0]
    H = np.eye(n) - 1.0 / n
    B = -0.5 * H @ D @ H
    values, vectors = np.linalg.eigh(B)
    top = np.argsort(values)[::-1][:n_components]
    return vectors[:, top] * np.sqrt(np.maximum(values[top], 0.0))


def embed(method, P, seed):
    """Object positions and class positions (None: the most confident objects)."""
    if method == "PE":
        pe = ParametricEmbedding(random_state=seed).fit(P)
        return pe.embedding_, pe.class_embedding_
    if method == "MDS":
        return classical_mds(P), None
    divergences = posterior_divergences(P)
    if method == "Isomap":
        return Isomap(n_neighbors=10, metric="precomputed").fit_transform(divergences), None
    dissimilarities = np.sqrt(divergences)
    if method == "SNE":
        return SNE(metric="precomputed", init="random", random_state=seed).fit_transform(
            dissimilarities), None
    return HSSNE(metric="precomputed", init="random", random_state=seed).fit_transform(
        dissimilarities), None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labels", type=int, nargs="+", default=[10, 100],
                        help="labelled digits per class (default 10 100)")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    args = parser.parse_args(argv)

    X, y = digits_0_to_4()
    print("| labels per class | method | " + " | ".join(f"prec({h})" for h in H) + " |")
    print("|---|---|" + "---|" * len(H))
    for per_class in args.labels:
        scores = {m: [] for m in args.methods}
        accuracy = []
        for seed in range(args.seeds):
            P = soft_nearest_neighbor_posteriors(X, draw_labels(y, per_class, seed))
            accuracy.append(np.mean(P.argmax(axis=1) == y))
            for method in args.methods:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # Isomap's disconnected-graph notice
                    Y, phi = embed(method, P, seed)
                scores[method].append(posterior_precision(P, Y, phi, h=list(H)))
        for method in args.methods:
            s = np.array(scores[method])
            cells = " | ".join(f"{m:.3f} ± {sd:.3f}" for m, sd in zip(s.mean(0), s.std(0)))
            print(f"| {per_class} | {method} | {cells} |", flush=True)
        print(f"(classifier accuracy on all 901 digits with {per_class} labels per class: "
              f"{np.mean(accuracy):.3f} ± {np.std(accuracy):.3f})")


if __name__ == "__main__":
    main()
