"""k-nearest-neighbour graphs of all points: the spectral framework's
neighbourhood cost C^u, with heat-kernel or local-scaling weights.

Every graph is a symmetric ``scipy.sparse.csr_matrix`` of shape (n, n) with a
zero diagonal. A graph connects each point with its k nearest neighbours (the
union of the k-NN relations, so a pair is an edge when either point is among
the other's k nearest). The graphs on labelled points are in
:mod:`nbembed.affinity.label_graphs`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

#: Zelnik-Manor & Perona's (and Sugiyama's) local scale: the distance to the
#: 7th nearest neighbour.
LOCAL_SCALE_NEIGHBOR = 7


def knn_distances(X, n_neighbors):
    """Distances from each point to its ``n_neighbors`` nearest other points.

    Parameters
    ----------
    X : ndarray (n, D)
    n_neighbors : int
        Fewer than n.

    Returns
    -------
    distances : ndarray (n, n_neighbors)
        Sorted ascending in each row.
    indices : ndarray of int (n, n_neighbors)
    """
    from sklearn.neighbors import NearestNeighbors
    nn = NearestNeighbors(n_neighbors=n_neighbors).fit(X)
    return nn.kneighbors()


def local_scales(distances, k):
    """Zelnik-Manor & Perona's local scale: the distance to the k-th neighbour.

    A scale of zero (k or more duplicates of a point) is raised to a tiny
    positive value, so duplicates get affinity 1 and nothing divides by zero.
    """
    sigma = distances[:, min(k, distances.shape[1]) - 1].astype(np.float64)
    floor = 1e-12 * max(float(sigma.max()), 1e-300)
    return np.maximum(sigma, floor)


def symmetric_union(rows, cols, values, n):
    """Symmetric CSR graph with entry ``values`` on each pair, given once or twice.

    Values must be a symmetric function of the pair (the same weight computed
    from either end), so taking the maximum over both directions keeps the
    weight and makes the union of the relations.

    Parameters
    ----------
    rows, cols : ndarray of int (m,)
        The pairs (i, j), in either order; a pair may appear in both.
    values : ndarray (m,)
        Positive weight of each pair.
    n : int
        Number of points.

    Returns
    -------
    csr_matrix (n, n)
        Symmetric, zero diagonal.
    """
    W = sp.csr_matrix((values, (rows, cols)), shape=(n, n))
    W.sum_duplicates()
    W = W.maximum(W.T).tocsr()
    W.setdiag(0)
    W.eliminate_zeros()
    return W


def neighbourhood_affinity(distances, indices, kind, n_neighbors, *, bandwidth=None):
    """The neighbourhood cost C^u on the k-NN graph.

    Parameters
    ----------
    distances, indices : ndarray (n, m)
        From :func:`knn_distances`, with m >= n_neighbors (more columns serve
        the local scale).
    kind : {"local_scaling", "heat"}
        ``"local_scaling"``: exp(-d_ij^2 / (sigma_i sigma_j)) with sigma_i the
        distance to the 7th neighbour (the last column when m < 7);
        ``"heat"``: exp(-d_ij^2 / t).
    n_neighbors : int
        Size of the k-NN graph.
    bandwidth : float or None
        The heat kernel's t; None uses the mean squared k-NN distance.

    Returns
    -------
    W : csr_matrix (n, n)
        Symmetric, non-negative, zero diagonal.
    t : float or None
        The heat kernel's bandwidth actually used (None for local scaling).
    """
    n = distances.shape[0]
    k = n_neighbors
    rows = np.repeat(np.arange(n), k)
    cols = indices[:, :k].ravel()
    d2 = distances[:, :k].ravel() ** 2
    t = None
    if kind == "local_scaling":
        sigma = local_scales(distances, LOCAL_SCALE_NEIGHBOR)
        values = np.exp(-d2 / (sigma[rows] * sigma[cols]))
    else:
        t = float(np.mean(d2)) if bandwidth is None else float(bandwidth)
        if not t > 0:  # every neighbour is a duplicate
            t = 1.0
        values = np.exp(-d2 / t)
    return symmetric_union(rows, cols, values, n), t


def neighbourhood_graph_and_scales(X, kind, n_neighbors, *, bandwidth=None):
    """The neighbourhood cost C^u and the local scales of all points, from one k-NN search.

    Parameters
    ----------
    X : ndarray (n, D)
    kind : {"local_scaling", "heat"} or None
        As in :func:`neighbourhood_affinity`; None builds the scales only
        (LFDA's label cost needs them without a neighbourhood cost).
    n_neighbors : int
        Size of the k-NN graph; fewer than n.
    bandwidth : float or None
        The heat kernel's t; None uses the mean squared k-NN distance.

    Returns
    -------
    W : csr_matrix (n, n) or None
        None when ``kind`` is None.
    scales : ndarray (n,)
        The distance to each point's 7th nearest neighbour
        (:func:`local_scales`).
    """
    k_query = min(max(n_neighbors, LOCAL_SCALE_NEIGHBOR), X.shape[0] - 1)
    distances, indices = knn_distances(X, k_query)
    scales = local_scales(distances, LOCAL_SCALE_NEIGHBOR)
    if kind is None:
        return None, scales
    W, _ = neighbourhood_affinity(distances, indices, kind, n_neighbors, bandwidth=bandwidth)
    return W, scales


def hadamard_power(W, r):
    """Element-wise power W^(o r) of a sparse non-negative graph.

    For r > 1 strong links gain relative to weak ones.
    """
    if r == 1.0:
        return W
    out = W.copy()
    out.data = out.data ** r
    return out
