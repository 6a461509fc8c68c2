"""Distances between data rows: Euclidean ones on dense rows here, every other
metric (and sparse rows) through scikit-learn, imported only then."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

#: Entries of one block of the distance matrix when neighbours are searched a
#: block of rows at a time (128 MiB of float64).
BLOCK_ENTRIES = 2**24


def _dense_euclidean(X, metric):
    return metric == "euclidean" and not sp.issparse(X)


def squared_euclidean(X, Y=None):
    """Squared Euclidean distances between the rows of dense X and Y (default X).

    As ||x||^2 - 2 x.y + ||y||^2, clipped at zero; zero on the diagonal when Y
    is X, where rounding would leave a point a tiny distance from itself.

    Returns
    -------
    ndarray (n_X, n_Y), float64
    """
    X = np.asarray(X, dtype=np.float64)
    same = Y is None
    Y = X if same else np.asarray(Y, dtype=np.float64)
    D = np.einsum("ij,ij->i", X, X)[:, None] - 2.0 * (X @ Y.T)
    D += np.einsum("ij,ij->i", Y, Y)[None, :]
    np.maximum(D, 0.0, out=D)
    if same:
        np.fill_diagonal(D, 0.0)
    return D


def pairwise_distances(X, Y=None, *, metric="euclidean", squared=False):
    """Distances between the rows of X and Y (default X) under ``metric``.

    Parameters
    ----------
    X, Y : ndarray or scipy.sparse matrix
    metric : str or callable
        A metric of :func:`sklearn.metrics.pairwise_distances`.
    squared : bool
        Return squared distances.

    Returns
    -------
    ndarray (n_X, n_Y)
    """
    if _dense_euclidean(X, metric) and (Y is None or not sp.issparse(Y)):
        D = squared_euclidean(X, Y)
        return D if squared else np.sqrt(D, out=D)
    from sklearn.metrics import pairwise_distances as sklearn_distances
    if metric == "euclidean":
        return sklearn_distances(X, Y, metric="euclidean", squared=squared)
    D = sklearn_distances(X, Y, metric=metric)
    return D * D if squared else D


def nearest_neighbors(X, k, *, metric="euclidean"):
    """The k nearest rows of every row of X, itself among them (exact).

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix (n, d), or (n, n) dissimilarities with
        ``metric="precomputed"``
    k : int
    metric : str or callable

    Returns
    -------
    dist, idx : ndarray (n, k)
        Distances and indices, nearest first; equal distances in index order.
    """
    if not _dense_euclidean(X, metric):
        from sklearn.neighbors import NearestNeighbors
        search = NearestNeighbors(n_neighbors=k, metric=metric).fit(X)
        return search.kneighbors(X)
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    norms = np.einsum("ij,ij->i", X, X)
    dist = np.empty((n, k))
    idx = np.empty((n, k), dtype=np.intp)
    block = max(1, BLOCK_ENTRIES // n)
    for start in range(0, n, block):
        rows = np.arange(start, min(n, start + block))
        D = norms[rows, None] - 2.0 * (X[rows] @ X.T) + norms[None, :]
        np.maximum(D, 0.0, out=D)
        D[np.arange(len(rows)), rows] = 0.0
        nearest = np.argpartition(D, k - 1, axis=1)[:, :k] if k < n else \
            np.broadcast_to(np.arange(n), D.shape)
        near_d = np.take_along_axis(D, nearest, axis=1)
        order = np.lexsort((nearest, near_d), axis=1)
        idx[rows] = np.take_along_axis(nearest, order, axis=1)
        dist[rows] = np.sqrt(np.take_along_axis(near_d, order, axis=1))
    return dist, idx
