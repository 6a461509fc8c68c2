"""Graphs on labelled points for the spectral framework's label costs.

Every graph is a symmetric ``scipy.sparse.csr_matrix`` of shape (n, n) with a
zero diagonal that connects labelled points only: same-class and other-class
neighbours, must- and cannot-link pairs, and LFDA's local within-class
weights. Unlabelled points (label -1) have empty rows.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .knn_graphs import symmetric_union


def labelled_classes(y):
    """Global indices of the labelled points of each class, in class order."""
    classes = np.unique(y[y >= 0])
    return [np.flatnonzero(y == c) for c in classes]


def _squared_norms(X):
    """Squared norms of the rows of a dense array or a sparse matrix."""
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1)).ravel()
    return np.sum(X * X, axis=1)


def _inner_products(A, B):
    """A @ B.T as a dense array, for rows dense or sparse (only the result is dense)."""
    products = A @ B.T
    return products.toarray() if sp.issparse(products) else products


#: Labelled points per block when searching label neighbours (bounds memory
#: to this many rows of labelled-to-labelled distances).
LABEL_BLOCK = 1024


def class_neighbour_pairs(X, y, k, same):
    """Pairs (i, j) of labelled points with j among i's k nearest labelled points
    of the same class (``same=True``) or of other classes (``same=False``).

    Where fewer than k such points exist, all of them are taken. ``X`` may be
    a sparse matrix of rows.
    """
    labelled = np.flatnonzero(y >= 0)
    XL, yl = X[labelled], y[labelled]
    sq = _squared_norms(XL)
    pairs = []
    for start in range(0, labelled.size, LABEL_BLOCK):
        rows = np.arange(start, min(start + LABEL_BLOCK, labelled.size))
        d2 = sq[rows, None] + sq[None, :] - 2.0 * _inner_products(XL[rows], XL)
        match = yl[rows, None] == yl[None, :]
        d2[~match if same else match] = np.inf
        d2[np.arange(rows.size), rows] = np.inf  # never a point's own neighbour
        kk = min(k, labelled.size - 1)
        if kk < 1:
            break
        nearest = np.argpartition(d2, kk - 1, axis=1)[:, :kk]
        found = np.isfinite(np.take_along_axis(d2, nearest, axis=1))
        i = np.broadcast_to(rows[:, None], nearest.shape)[found]
        pairs.append(np.column_stack([labelled[i], labelled[nearest[found]]]))
    return _stack(pairs)


def _stack(pairs):
    return np.concatenate(pairs) if pairs else np.empty((0, 2), dtype=np.int64)


def pair_graph(pairs, n, weight=1.0):
    """Symmetric graph with ``weight`` (> 0) on every listed pair (either order)."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    values = np.full(len(pairs), float(weight))
    return symmetric_union(pairs[:, 0], pairs[:, 1], values, n)


def lfda_within_class_weights(X, y, sigma):
    """LFDA's local within-class weights W^w_ij = a_ij / n_c on labelled pairs.

    a_ij = exp(-||x_i - x_j||^2 / (sigma_i sigma_j)) is the local-scaling
    affinity with sigma_i the distance to x_i's 7th nearest neighbour among
    all points, labelled or not
    (:func:`~nbembed.affinity.knn_graphs.local_scales`). Every same-class pair
    gets a weight (dense within each class); different classes and unlabelled
    points none. With few labels the scales still come from the dense
    neighbourhoods of all points, so same-class points far apart (in another
    cluster) get a small weight: LFDA stays local. ``X`` may be a sparse
    matrix of rows.
    """
    n = X.shape[0]
    rows, cols, values = [], [], []
    for members in labelled_classes(y):
        nc = members.size
        if nc < 2:
            continue
        Xc = X[members]
        sq = _squared_norms(Xc)
        d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * _inner_products(Xc, Xc), 0.0)
        a = np.exp(-d2 / np.outer(sigma[members], sigma[members])) / nc
        np.fill_diagonal(a, 0.0)
        r, c = np.nonzero(a)
        rows.append(members[r])
        cols.append(members[c])
        values.append(a[r, c])
    if not rows:
        return sp.csr_matrix((n, n))
    return sp.csr_matrix((np.concatenate(values), (np.concatenate(rows), np.concatenate(cols))),
                         shape=(n, n))
