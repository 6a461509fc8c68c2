"""Distances between data rows: Euclidean ones on dense rows here, every other
metric (and sparse rows) through scikit-learn, imported only then."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


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

