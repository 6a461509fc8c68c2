"""Gaussian neighbourhoods with a target perplexity (SNE, t-SNE, HSSNE).

p_{j|i} = exp(-d_ij^2 / 2 sigma_i^2) / sum_{k != i} exp(-d_ik^2 / 2 sigma_i^2),
with sigma_i chosen by bisection so that 2^H(P_i) equals the perplexity. The
joint P_ij = (p_{j|i} + p_{i|j}) / 2n is symmetric and sums to one.

Two ways to build it, chosen by ``method``:

* ``"exact"``: every pair, a dense n x n array.
* ``"knn"``: only the k = min(n - 1, 3 * perplexity) nearest neighbours of each
  point (exact neighbours from scikit-learn's trees), a sparse CSR matrix.
* ``"auto"``: exact up to ``DENSE_AFFINITY_MAX_N`` points (see ``_config``),
  kNN above.

With ``metric="precomputed"`` the input is a square matrix of dissimilarities
d_ij (non-negative, zero diagonal, not necessarily a metric); they are squared
in the Gaussian exactly like Euclidean distances.
"""

import numpy as np
import scipy.sparse as sp
from sklearn.metrics import pairwise_distances
from sklearn.neighbors import NearestNeighbors

from .. import _config
from .._kernels.perplexity import conditional_probabilities as _calibrate
from .._validation import check_dense_allowed, check_number, check_option

METHODS = ("auto", "exact", "knn")


def _resolve_method(method, n):
    check_option(method, "method", METHODS)
    if method == "auto":
        return "exact" if n <= _config.DENSE_AFFINITY_MAX_N else "knn"
    return method


def _check_perplexity(perplexity, n):
    perplexity = check_number(perplexity, "perplexity", low=0, low_open=True)
    if perplexity >= n - 1:
        raise ValueError(
            f"perplexity = {perplexity:g} is too large for n_samples = {n}: it must be less "
            f"than n_samples - 1 = {n - 1} (a perplexity is an effective number of "
            f"neighbours). Use a smaller perplexity, e.g. {max(1.0, (n - 1) / 3):.0f}.")
    return perplexity


def conditional_probabilities(X, perplexity=30.0, *, method="auto", metric="euclidean",
                              n_neighbors=None):
    """Row-stochastic p_{j|i} with a common perplexity.

    Parameters
    ----------
    X : ndarray (n_samples, n_features) or (n_samples, n_samples)
        Data, or dissimilarities when ``metric="precomputed"`` (validated by the
        caller).
    perplexity : float
        Effective number of neighbours, 1 < perplexity < n_samples - 1.
    method : {"auto", "exact", "knn"}
        Dense over all pairs, or sparse over nearest neighbours.
    metric : str
        Any metric of ``sklearn.metrics.pairwise_distances``, or "precomputed".
    n_neighbors : int, optional
        Neighbours per point for ``method="knn"``; default min(n - 1, 3 * perplexity).

    Returns
    -------
    P : ndarray or scipy.sparse.csr_matrix (n_samples, n_samples)
        Rows sum to one, zero diagonal.
    beta : ndarray (n_samples,)
        Gaussian precisions 1 / (2 sigma_i^2).
    """
    n = X.shape[0]
    perplexity = _check_perplexity(perplexity, n)
    method = _resolve_method(method, n)
    log_perplexity = float(np.log(perplexity))
    if method == "exact":
        check_dense_allowed(n, what="Exact affinities",
                            alternative='Use method="knn" for sparse neighbourhoods')
        if metric == "precomputed":
            D = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
            sq = D * D
        elif metric == "euclidean":
            sq = pairwise_distances(X, metric="euclidean", squared=True)
        else:
            sq = pairwise_distances(X, metric=metric) ** 2
        with _config.KERNEL_LOCK:
            P, beta = _calibrate(np.ascontiguousarray(sq), log_perplexity, True)
        return P, beta
    k = n_neighbors if n_neighbors is not None else int(min(n - 1, np.ceil(3 * perplexity)))
    k = check_number(k, "n_neighbors", low=1, high=n - 1, integer=True)
    if k < perplexity:
        raise ValueError(f"n_neighbors = {k} must be at least the perplexity ({perplexity:g}).")
    dist, idx = _nearest_neighbors(X, k, metric)
    with _config.KERNEL_LOCK:
        P_knn, beta = _calibrate(np.ascontiguousarray(dist * dist), log_perplexity, False)
    indptr = np.arange(0, n * k + 1, k)
    P = sp.csr_matrix((P_knn.ravel(), idx.ravel(), indptr), shape=(n, n))
    return P, beta


def _nearest_neighbors(X, k, metric):
    """Exact k nearest neighbours of every point, excluding itself."""
    if metric == "precomputed":
        D = X.toarray() if sp.issparse(X) else X
        # Ties and duplicate points can put i outside its own neighbour list;
        # asking for k + 1 and dropping i (or the farthest) handles both.
        nn = NearestNeighbors(n_neighbors=k + 1, metric="precomputed").fit(D)
        dist, idx = nn.kneighbors(D)
    else:
        nn = NearestNeighbors(n_neighbors=k + 1, metric=metric).fit(X)
        dist, idx = nn.kneighbors(X)
    n = X.shape[0]
    keep = idx != np.arange(n)[:, None]
    # Rows where i was not among its k + 1 neighbours keep k + 1 others: drop the last.
    no_self = keep.all(axis=1)
    keep[no_self, -1] = False
    return dist[keep].reshape(n, k), idx[keep].reshape(n, k)


def joint_probabilities(X, perplexity=30.0, *, method="auto", metric="euclidean",
                        n_neighbors=None):
    """Symmetric joint P_ij = (p_{j|i} + p_{i|j}) / 2n summing to one.

    Parameters are those of :func:`conditional_probabilities`.

    Returns
    -------
    P : ndarray or scipy.sparse.csr_matrix (n_samples, n_samples)
        Dense for ``method="exact"``, CSR (sorted indices, no explicit zeros)
        for ``method="knn"``.
    """
    P, _ = conditional_probabilities(X, perplexity, method=method, metric=metric,
                                     n_neighbors=n_neighbors)
    return symmetrize(P)


def symmetrize(P):
    """(P + P^T) / sum, keeping the format (dense or CSR)."""
    S = P + P.T
    if sp.issparse(S):
        S = sp.csr_matrix(S)
        S.eliminate_zeros()
        S.sort_indices()
        S.data /= S.data.sum()
        return S
    S /= S.sum()
    return S


def normalize_affinities(A):
    """A given affinity matrix as a joint P: symmetric, zero diagonal, summing to one.

    Parameters
    ----------
    A : ndarray or scipy sparse matrix (n_samples, n_samples)
        Non-negative (validated by the caller).

    Returns
    -------
    ndarray or scipy.sparse.csr_matrix

    Raises
    ------
    ValueError
        If no off-diagonal entry is positive.
    """
    if sp.issparse(A):
        P = sp.csr_matrix(A, dtype=np.float64, copy=True)
        P.setdiag(0)
        P.eliminate_zeros()
    else:
        P = np.array(A, dtype=np.float64)
        np.fill_diagonal(P, 0.0)
    if not P.sum() > 0:
        raise ValueError("The precomputed affinities have no positive off-diagonal entry.")
    return symmetrize(P)
