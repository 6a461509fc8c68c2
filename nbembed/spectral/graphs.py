"""Sparse graphs for the spectral framework: neighbourhoods and label graphs.

Every graph is a symmetric ``scipy.sparse.csr_matrix`` of shape (n, n) with a
zero diagonal. Neighbourhood graphs connect each point with its k nearest
neighbours (the union of the k-NN relations, so a pair is an edge when either
point is among the other's k nearest). Label graphs connect labelled points
only; unlabelled points (label -1) have empty rows.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.neighbors import NearestNeighbors

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


def _symmetric_union(rows, cols, values, n):
    """Symmetric CSR graph with entry ``values`` on each pair, given once or twice.

    Values must be a symmetric function of the pair (it is: the same weight
    computed from either end), so taking the maximum over both directions
    keeps the weight and makes the union of the relations.
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
    return _symmetric_union(rows, cols, values, n), t


def hadamard_power(W, r):
    """Element-wise power W^(o r) of a sparse non-negative graph.

    For r > 1 strong links gain relative to weak ones.
    """
    if r == 1.0:
        return W
    out = W.copy()
    out.data = out.data ** r
    return out


def labelled_classes(y):
    """Global indices of the labelled points of each class, in class order."""
    classes = np.unique(y[y >= 0])
    return [np.flatnonzero(y == c) for c in classes]


#: Labelled points per block when searching label neighbours (bounds memory
#: to this many rows of labelled-to-labelled distances).
LABEL_BLOCK = 1024


def class_neighbour_pairs(X, y, k, same):
    """Pairs (i, j) of labelled points with j among i's k nearest labelled points
    of the same class (``same=True``) or of other classes (``same=False``).

    Where fewer than k such points exist, all of them are taken.
    """
    labelled = np.flatnonzero(y >= 0)
    XL, yl = X[labelled], y[labelled]
    sq = np.sum(XL * XL, axis=1)
    pairs = []
    for start in range(0, labelled.size, LABEL_BLOCK):
        rows = np.arange(start, min(start + LABEL_BLOCK, labelled.size))
        d2 = sq[rows, None] + sq[None, :] - 2.0 * XL[rows] @ XL.T
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
    return _symmetric_union(pairs[:, 0], pairs[:, 1], values, n)


def lfda_within_class_weights(X, y, sigma):
    """LFDA's local within-class weights W^w_ij = a_ij / n_c on labelled pairs.

    a_ij = exp(-||x_i - x_j||^2 / (sigma_i sigma_j)) is the local-scaling
    affinity with sigma_i the distance to x_i's 7th nearest neighbour among
    all points, labelled or not (:func:`local_scales`). Every same-class pair
    gets a weight (dense within each class); different classes and unlabelled
    points none. With few labels the scales still come from the dense
    neighbourhoods of all points, so same-class points far apart (in another
    cluster) get a small weight: LFDA stays local.
    """
    n = X.shape[0]
    rows, cols, values = [], [], []
    for members in labelled_classes(y):
        nc = members.size
        if nc < 2:
            continue
        Xc = X[members]
        sq = np.sum(Xc * Xc, axis=1)
        d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * Xc @ Xc.T, 0.0)
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
