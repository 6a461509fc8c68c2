"""Cost and constraint matrices of the spectral framework.

A cost matrix C (n x n, symmetric, entries may be negative) weighs the squared
embedded distances: sum_ij C_ij ||A x_i - A x_j||^2 = 2 tr(A X^T L_C X A^T)
with L_C = D_C - C its graph Laplacian (here X is n x D, one point per row).
This module turns graphs into the D x D quadratic forms X^T L X, and builds
the label costs with their constraint matrices X^T B X. X is a dense array of
coordinates or sparse rows held as
:class:`~nbembed.spectral.sparse_data.SparseCoordinates`, whose forms are
sparse products.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._validation import check_dense_allowed
from ..affinity import knn_graphs, label_graphs
from .sparse_data import SparseCoordinates, distance_rows

LABEL_COSTS = ("lfda", "dne", "mfa")
NEIGHBOR_COSTS = ("local_scaling", "heat")


def _symmetric(M):
    return 0.5 * (M + M.T)


def laplacian_form(X, W):
    """X^T (D_W - W) X = 1/2 sum_ij W_ij (x_i - x_j)(x_i - x_j)^T for symmetric W."""
    degree = np.asarray(W.sum(axis=1)).ravel()
    if isinstance(X, SparseCoordinates):
        return X.quadratic_form(sp.diags(degree) - W)
    return _symmetric(X.T @ (degree[:, None] * X) - X.T @ np.asarray(W @ X))


def degree_form(X, W):
    """X^T D_W X with D_W the diagonal matrix of W's row sums (LPP's constraint)."""
    degree = np.asarray(W.sum(axis=1)).ravel()
    if isinstance(X, SparseCoordinates):
        return X.quadratic_form(sp.diags(degree))
    return _symmetric(X.T @ (degree[:, None] * X))


def scatter(X, rows=None):
    """Total scatter sum_i (x_i - mu)(x_i - mu)^T over ``rows`` (all by default).

    Equal to the Laplacian form of the complete graph with weights 1/m on m points.
    """
    if isinstance(X, SparseCoordinates):
        return X.scatter(rows)
    Xs = X if rows is None else X[rows]
    Xs = Xs - Xs.mean(axis=0)
    return _symmetric(Xs.T @ Xs)


def weighted_scatter(X, W):
    """1/2 sum_ij abs(W_ij) ||x_i - x_j||^2: how much a cost weighs the input distances.

    The trace of the Laplacian form of abs(W); used to put the label and the
    neighbourhood costs on the same scale.
    """
    return float(np.trace(laplacian_form(X, abs(W))))


@dataclass
class LabelCost:
    """A label cost C^l and the constraint it comes with.

    Attributes
    ----------
    kind : str
    cost : csr_matrix (n, n)
        C^l; rows of unlabelled points are empty.
    constraint : ndarray (D, D) or None
        X^T B X; None means the identity constraint A A^T = I.
    """

    kind: str
    cost: sp.csr_matrix
    constraint: np.ndarray | None


def lfda_between_class_scatter(X, y, Ww):
    """LFDA's X^T L(W^b) X without the dense l x l matrix W^b.

    W^b is 1/l on every labelled pair minus, on same-class pairs,
    1/l - a_ij (1/l - 1/n_c). The first part gives the labelled points'
    total scatter S_m; the constant 1/l on the pairs of class c gives
    (n_c / l) times the class scatter; a_ij (1/l - 1/n_c) = W^w_ij (n_c/l - 1).
    """
    labelled = np.flatnonzero(y >= 0)
    n_labelled = labelled.size
    S_b = scatter(X, labelled)
    factor = np.zeros(X.shape[0])
    for members in label_graphs.labelled_classes(y):
        S_b -= members.size / n_labelled * scatter(X, members)
        factor[members] = members.size / n_labelled - 1.0
    return S_b + laplacian_form(X, sp.diags(factor) @ Ww)


def check_labels_for_cost(y, kind, must_links=None, cannot_links=None):
    """Raise a clear error when the labels cannot define the label cost.

    Every labelled class needs at least two labelled points (the costs are
    built from same-class pairs). LFDA needs two labelled classes; DNE and MFA
    need a same-class pair (or a must-link) and a different-class pair (or a
    cannot-link).
    """
    counts = {int(c): int(np.sum(y == c)) for c in np.unique(y[y >= 0])}
    single = [c for c, m in counts.items() if m == 1]
    if single:
        raise ValueError(
            f"class {single[0]} has a single labelled point, but label_cost={kind!r} is built "
            f"from pairs of labelled points of the same class and needs at least two per class "
            f"(classes with one labelled point: {single}). Label another point of that class "
            f"or mark this one unlabelled (-1).")
    n_links = 0 if must_links is None else len(must_links)
    n_cannot = 0 if cannot_links is None else len(cannot_links)
    if kind == "lfda" and len(counts) < 2:
        raise ValueError(
            f"label_cost='lfda' needs labelled points of at least two classes, each with at "
            f"least two labelled points; got {len(counts)} labelled class(es). Label more "
            f"points, or use label_cost=None (LPP) for unlabelled data.")
    no_same = not counts and not n_links
    no_other = len(counts) < 2 and not n_cannot
    if kind in ("dne", "mfa") and (no_same or no_other):
        raise ValueError(
            f"label_cost={kind!r} needs a pair of same-class points (two labelled points of one "
            f"class, or a must-link) and a pair of different-class points (labelled points of "
            f"two classes, or a cannot-link); got {len(counts)} labelled class(es), {n_links} "
            f"must-link(s) and {n_cannot} cannot-link(s).")


def label_cost(X, y, kind, n_neighbors, must_links=None, cannot_links=None, scales=None):
    """Build the label cost ``kind`` from labels ``y`` (-1 = unlabelled).

    Parameters
    ----------
    X : ndarray (n, D) or SparseCoordinates
        The learner's input coordinates (neighbours are found in this space:
        among the sparse rows of a SparseCoordinates).
    y : ndarray of int (n,)
    kind : {"lfda", "dne", "mfa"}
        - ``"dne"``: C_ij = +1 when i, j share a class and one is among the
          other's ``n_neighbors`` nearest same-class points, -1 when their
          classes differ and one is among the other's nearest other-class
          points; identity constraint.
        - ``"mfa"``: the same-class pairs as the cost (intrinsic graph), the
          other-class pairs as the constraint B = L(penalty graph).
        - ``"lfda"``: W^w_ij = a_ij / n_c on same-class pairs as the cost,
          B = L(W^b) with W^b_ij = a_ij (1/l - 1/n_c) for same-class pairs and
          1/l for different classes (l labelled points in all); see
          :func:`lfda_between_class_scatter`.
    n_neighbors : int
    must_links, cannot_links : ndarray (m, 2), optional
        Extra pairs for ``"dne"`` and ``"mfa"``: must-links join the same-class
        pairs, cannot-links the different-class pairs. LFDA ignores them.
    scales : ndarray (n,), optional
        LFDA's local scales sigma_i (distance to the 7th nearest of all
        points); computed from X when not given.

    Returns
    -------
    LabelCost
    """
    n = X.shape[0]
    check_labels_for_cost(y, kind, must_links, cannot_links)
    rows = distance_rows(X)
    if kind == "lfda":
        largest = max((int(np.sum(y == c)) for c in np.unique(y[y >= 0])), default=0)
        check_dense_allowed(largest, what="LFDA's within-class weights",
                            alternative="Label fewer points, or use label_cost='dne' or 'mfa'")
        if scales is None:
            k = min(knn_graphs.LOCAL_SCALE_NEIGHBOR, n - 1)
            scales = knn_graphs.local_scales(knn_graphs.knn_distances(rows, k)[0], k)
        W = label_graphs.lfda_within_class_weights(rows, y, scales)
        return LabelCost(kind, W, lfda_between_class_scatter(X, y, W))
    same = [label_graphs.class_neighbour_pairs(rows, y, n_neighbors, same=True)]
    other = [label_graphs.class_neighbour_pairs(rows, y, n_neighbors, same=False)]
    if must_links is not None:
        same.append(np.asarray(must_links).reshape(-1, 2))
    if cannot_links is not None:
        other.append(np.asarray(cannot_links).reshape(-1, 2))
    near = label_graphs.pair_graph(np.concatenate(same), n, 1.0)
    apart = label_graphs.pair_graph(np.concatenate(other), n, 1.0)
    if kind == "dne":
        return LabelCost(kind, (near - apart).tocsr(), None)
    return LabelCost(kind, near, laplacian_form(X, apart))
