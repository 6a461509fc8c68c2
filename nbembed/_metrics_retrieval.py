"""Neighbour retrieval quality: how well the display's neighbours match the input's.

A display is read by looking at a point's neighbours on it. Compared with the
input neighbours (the "relevant" points), that retrieval makes two kinds of
mistakes: display neighbours that are not input neighbours (false positives,
which lower precision) and input neighbours that are not display neighbours
(misses, which lower recall). NeRV's ``tradeoff`` chooses between them
(Venna, Peltonen, Nybo, Aidos & Kaski, JMLR 2010).

- ``smoothed_precision`` and ``smoothed_recall`` -- the smoothed
  versions NeRV optimizes: minus the mean KL(Q_i || P_i) and KL(P_i || Q_i)
  between Gaussian input and display neighbourhoods with the same widths.
- ``retrieval_precision_recall`` -- precision and recall of retrieving
  each point's k nearest input neighbours by its r nearest display neighbours,
  for a range of r: the precision-recall curve.
"""

from __future__ import annotations

import numpy as np

from . import _config
from ._kernels import nerv as kernels
from ._validation import check_data, check_dense_allowed, check_number, \
    check_square_nonnegative
from .affinity import conditional_probabilities

__all__ = ["smoothed_precision", "smoothed_recall", "retrieval_precision_recall"]

#: Entries (booleans) a chunk of the hit matrix may hold.
_CHUNK_ENTRIES = 2**24


def _check_input_output(X, Y, metric):
    if not isinstance(metric, str):
        raise TypeError(f"metric must be a string such as 'euclidean' or 'precomputed'; got "
                        f"{metric!r}.")
    X = check_data(X, name="X")
    if metric == "precomputed":
        check_square_nonnegative(X, name="X (metric='precomputed')")
    Y = check_data(Y, name="Y")
    if X.shape[0] != Y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} samples but Y has {Y.shape[0]}; they must "
                         f"describe the same points in the same order.")
    return X, Y


def _mean_divergences(X, Y, n_neighbors, metric):
    """(mean KL(P_i || Q_i), mean KL(Q_i || P_i)) with NeRV's neighbourhoods."""
    X, Y = _check_input_output(X, Y, metric)
    n = X.shape[0]
    n_neighbors = check_number(n_neighbors, "n_neighbors", low=1, low_open=True)
    if n_neighbors >= n - 1:
        raise ValueError(f"n_neighbors = {n_neighbors:g} is too large for n_samples = {n}; "
                         f"it must be less than n_samples - 1 = {n - 1}.")
    check_dense_allowed(n, what="Smoothed precision and recall",
                        alternative="Evaluate a subsample")
    P, beta = conditional_probabilities(X, n_neighbors, method="exact", metric=metric)
    logP = kernels.floored_log(P)
    positive = P[P > 0]
    p_log_p = np.sum(positive * np.log(positive))
    with _config.KERNEL_LOCK:
        cross, kl_qp = kernels.nerv_divergences(np.ascontiguousarray(Y.T), P, logP, beta)
    return float((p_log_p + cross.sum()) / n), float(kl_qp.sum() / n)


def smoothed_precision(X, Y, n_neighbors=20, *, metric="euclidean"):
    """NeRV's smoothed precision: minus the mean KL(Q_i || P_i).

    p_ij = exp(-d_ij^2 / sigma_i^2) / sum_k exp(-d_ik^2 / sigma_i^2) are the
    input neighbourhoods, with sigma_i set so that each has the entropy
    log(n_neighbors), and q_ij the same Gaussians around the display points
    with the same sigma_i. KL(Q_i || P_i) is large when points that are close
    to i on the display are far from it in the input (false neighbours); the
    logarithm of p_ij is floored at 1e-12 as in NeRV.

    The display widths are the input's sigma_i, so the value depends on the
    scale of ``Y``: NeRV's embeddings are on the input's scale, other methods'
    need not be.

    Parameters
    ----------
    X : array-like (n_samples, n_features) or (n_samples, n_samples)
        Input data, or dissimilarities with ``metric="precomputed"``.
    Y : array-like (n_samples, n_components)
        The embedding.
    n_neighbors : float, default=20
        Effective number of neighbours, 1 < n_neighbors < n_samples - 1.
    metric : str, default="euclidean"
        Input metric, or "precomputed".

    Returns
    -------
    float
        <= 0 (up to the floor); higher is better.

    References
    ----------
    J. Venna, J. Peltonen, K. Nybo, H. Aidos, S. Kaski. Information retrieval
    perspective to nonlinear dimensionality reduction for data visualization.
    JMLR 11, 2010.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(50, 2))
    >>> abs(smoothed_precision(X, X, n_neighbors=5)) < 1e-9   # a perfect display
    True
    >>> smoothed_precision(X, X[::-1], n_neighbors=5) < -1   # a scrambled one
    True
    """
    return -_mean_divergences(X, Y, n_neighbors, metric)[1]


def smoothed_recall(X, Y, n_neighbors=20, *, metric="euclidean"):
    """NeRV's smoothed recall: minus the mean KL(P_i || Q_i) (SNE's cost per point).

    Large divergences mean input neighbours of i that are far from it on the
    display (misses). Neighbourhoods as in ``smoothed_precision``.

    Parameters
    ----------
    X : array-like (n_samples, n_features) or (n_samples, n_samples)
    Y : array-like (n_samples, n_components)
    n_neighbors : float, default=20
    metric : str, default="euclidean"

    Returns
    -------
    float
        <= 0; higher is better.

    References
    ----------
    J. Venna et al. JMLR 11, 2010 (see ``smoothed_precision``).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(50, 2))
    >>> abs(smoothed_recall(X, X, n_neighbors=5)) < 1e-9
    True
    """
    return -_mean_divergences(X, Y, n_neighbors, metric)[0]


def retrieval_precision_recall(X, Y, n_relevant=20, n_retrieved=None, *, metric="euclidean"):
    """Mean precision and recall of retrieving input neighbours from the display.

    For each point i the relevant set is its ``n_relevant`` nearest input
    neighbours; retrieving its r nearest display neighbours finds h_i(r) of
    them, and

        precision(r) = mean_i h_i(r) / r,   recall(r) = mean_i h_i(r) / n_relevant.

    Sweeping r traces the precision-recall curve; at r = n_relevant both are
    equal (the neighbourhood preservation). The point itself is never
    retrieved; ties in distance are broken as
    :class:`sklearn.neighbors.NearestNeighbors` returns them.

    Parameters
    ----------
    X : array-like (n_samples, n_features) or (n_samples, n_samples)
        Input data, or dissimilarities with ``metric="precomputed"``.
    Y : array-like (n_samples, n_components)
        The embedding (Euclidean).
    n_relevant : int, default=20
        Input neighbours that count as relevant, 1 <= n_relevant < n_samples.
    n_retrieved : int or array-like of int, optional
        The values of r: an int R means 1, 2, ..., R. Default: up to
        2 * n_relevant (at most n_samples - 1).
    metric : str, default="euclidean"
        Input metric, or "precomputed".

    Returns
    -------
    precision, recall : ndarray (len(r),)
        Means over all points, in the order of ``n_retrieved``.

    Raises
    ------
    ValueError
        If ``n_relevant`` or some r is not in [1, n_samples - 1].

    References
    ----------
    J. Venna et al. JMLR 11, 2010 (see ``smoothed_precision``).

    Examples
    --------
    >>> X = [[0.0], [1.0], [3.0], [10.0]]
    >>> precision, recall = retrieval_precision_recall(X, X, n_relevant=1, n_retrieved=2)
    >>> precision.tolist(), recall.tolist()
    ([1.0, 0.5], [1.0, 1.0])
    """
    X, Y = _check_input_output(X, Y, metric)
    n = X.shape[0]
    n_relevant = check_number(n_relevant, "n_relevant", low=1, high=n - 1, integer=True)
    if n_retrieved is None:
        n_retrieved = min(2 * n_relevant, n - 1)
    r = np.arange(1, check_number(n_retrieved, "n_retrieved", low=1, high=n - 1,
                                  integer=True) + 1) \
        if np.ndim(n_retrieved) == 0 else np.asarray(n_retrieved)
    if r.ndim != 1 or r.size == 0 or r.dtype.kind not in "iu" or r.min() < 1 or \
            r.max() > n - 1:
        raise ValueError(f"n_retrieved must be an integer or integers in [1, {n - 1}] "
                         f"(n_samples - 1); got {n_retrieved!r}.")
    from sklearn.neighbors import NearestNeighbors
    relevant = NearestNeighbors(n_neighbors=n_relevant, metric=metric).fit(X).kneighbors(
        return_distance=False)
    retrieved = NearestNeighbors(n_neighbors=int(r.max())).fit(Y).kneighbors(
        return_distance=False)
    hits = np.zeros((n, retrieved.shape[1]), dtype=np.int64)
    chunk = max(1, _CHUNK_ENTRIES // (retrieved.shape[1] * n_relevant))
    for start in range(0, n, chunk):
        rows = slice(start, start + chunk)
        hits[rows] = (retrieved[rows, :, None] == relevant[rows, None, :]).any(axis=2)
    found = np.cumsum(hits, axis=1)[:, r - 1].mean(axis=0)
    return found / r, found / n_relevant
