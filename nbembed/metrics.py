"""Quality measures for embeddings.

Label-based measures (need class labels ``y``, ``-1`` for unlabelled points):

- :func:`homogeneity` -- fraction of points whose nearest embedded neighbour has
  the same class (Yang et al., 2009).
- :func:`knn_error` -- k-nearest-neighbour classification error in the embedding,
  leave-one-out or on a train/test split.

Neighbourhood-based measures (compare the input ``X`` with the embedding ``Y``):

- :func:`trustworthiness` -- are the embedded neighbours also input neighbours?
  (Venna & Kaski, 2001).
- :func:`continuity` -- are the input neighbours also embedded neighbours?
- :func:`neighbourhood_preservation` -- mean fraction of the k input neighbours
  kept among the k embedded neighbours.

Retrieval measures (NeRV's readout for the precision-recall tradeoff):
:func:`smoothed_precision` and :func:`smoothed_recall` (Venna et al., 2010) and
:func:`retrieval_precision_recall`, k-neighbour retrieval curves.

Parametric Embedding: :func:`posterior_precision` -- prec(h), do the h objects
nearest a class position agree with the h objects of highest posterior for it?

Objective: :func:`kl_divergence` -- KL(P || Q) of an embedding under the HSSNE
power-family kernel, for any given P.

The neighbour-based measures find neighbours with :class:`sklearn.neighbors.NearestNeighbors` and
never build an n x n matrix: trustworthiness and continuity compute ranks a chunk
of rows at a time, so their memory is O(chunk_size * n). Distances in the embedding
are Euclidean; the input space may use any metric that
:func:`sklearn.metrics.pairwise_distances` knows, or ``metric="precomputed"``.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from . import _config
from ._kernels import hssne as kernels
from ._metrics_parametric import posterior_precision
from ._metrics_retrieval import retrieval_precision_recall, smoothed_precision, smoothed_recall
from ._validation import check_data, check_labels, check_number, check_square_nonnegative

__all__ = ["homogeneity", "knn_error", "trustworthiness", "continuity",
           "neighbourhood_preservation", "kl_divergence", "posterior_precision",
           "smoothed_precision", "smoothed_recall", "retrieval_precision_recall"]

#: Number of float64 entries (64 MiB) a chunk of distance rows may hold when
#: ``chunk_size=None``.
_CHUNK_ENTRIES = 2**23


# --------------------------------------------------------------------------- helpers

def _check_pair(X, Y, metric):
    """Validate input ``X`` (data or precomputed distances) and embedding ``Y``."""
    if not isinstance(metric, str):
        raise TypeError(f"metric must be a string such as 'euclidean' or 'precomputed'; "
                        f"got {metric!r}.")
    X = check_data(X, name="X")
    if metric == "precomputed":
        check_square_nonnegative(X, name="X (metric='precomputed')", zero_diagonal=False)
    Y = check_data(Y, name="Y")
    if X.shape[0] != Y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} samples but Y has {Y.shape[0]}; they must "
                         f"describe the same points in the same order.")
    return X, Y


def _check_k(k, n, *, limit, why):
    """Check 1 <= k and k < limit (or k <= limit - 1 for integers)."""
    k = check_number(k, "k", low=1, integer=True)
    if k >= limit:
        raise ValueError(f"k = {k} is too large for n_samples = {n}: {why}; choose a "
                         f"smaller k.")
    return k


def _neighbours(Z, k, metric="euclidean"):
    """Indices (n, k) of each point's k nearest neighbours, the point itself excluded.

    ``kneighbors()`` without a query excludes each point by its index, so exact
    duplicates still count as neighbours of each other.
    """
    from sklearn.neighbors import NearestNeighbors
    return NearestNeighbors(n_neighbors=k, metric=metric).fit(Z).kneighbors(
        return_distance=False)


def _rank_penalty(R, metric, nbrs, k, chunk_size):
    """Sum over i and j in ``nbrs[i]`` of max(r(i, j) - k, 0), ranks taken in ``R``.

    r(i, j) = 1 + #{l != i : d(i, l) < d(i, j)}, so points at tied distances share
    the best rank. Rows are processed ``chunk_size`` at a time.
    """
    from sklearn.metrics import pairwise_distances
    n = R.shape[0]
    total = 0
    for start in range(0, n, chunk_size):
        rows = np.arange(start, min(start + chunk_size, n))
        if metric == "precomputed":
            D = R[rows]  # fancy indexing copies, so R is not modified
        else:
            D = pairwise_distances(R[rows], R, metric=metric)
        D[np.arange(rows.size), rows] = np.inf  # the point itself is no neighbour
        d_nbr = np.take_along_axis(D, nbrs[rows], axis=1)
        for m in range(k):
            rank = 1 + np.count_nonzero(D < d_nbr[:, m:m + 1], axis=1)
            total += int(np.sum(np.maximum(rank - k, 0)))
    return total


def _chunk_rows(chunk_size, n):
    if chunk_size is None:
        return max(1, min(n, _CHUNK_ENTRIES // n))
    return check_number(chunk_size, "chunk_size", low=1, integer=True)


def _trust(R, R_metric, N, N_metric, k, chunk_size, name):
    """Shared body of trustworthiness (R = input) and continuity (R = embedding)."""
    n = R.shape[0]
    k = _check_k(k, n, limit=n / 2, why=f"{name} needs k < n_samples / 2 = {n / 2:g}")
    return _trust_from_neighbours(R, R_metric, _neighbours(N, k, N_metric), k,
                                  _chunk_rows(chunk_size, n))


def _trust_from_neighbours(R, R_metric, nbrs, k, chunk_size):
    """Trustworthiness-type score from the k neighbours ``nbrs`` (n, k) found in
    one space and the ranks of those neighbours in the other space ``R``."""
    return _trust_from_penalty(_rank_penalty(R, R_metric, nbrs, k, chunk_size), R.shape[0], k)


def _trust_from_penalty(penalty, n, k):
    """The score 1 - 2 / (n k (2n - 3k - 1)) * penalty of a rank penalty over n points."""
    return 1.0 - 2.0 / (n * k * (2.0 * n - 3.0 * k - 1.0)) * penalty


def _as_mask(index, n, name):
    """Turn an integer index array or a boolean mask into a boolean mask."""
    index = np.asarray(index)
    if index.dtype.kind == "b":
        if index.shape != (n,):
            raise ValueError(f"{name} as a boolean mask must have shape ({n},), one entry "
                             f"per sample; got shape {index.shape}.")
        return index.copy()
    if index.ndim != 1 or (index.size and index.dtype.kind not in "iu"):
        raise ValueError(f"{name} must be a 1-D array of integer sample indices or a "
                         f"boolean mask of length {n}; got dtype {index.dtype} and shape "
                         f"{index.shape}.")
    if index.size and (index.min() < 0 or index.max() >= n):
        raise ValueError(f"{name} has indices outside [0, {n}) (e.g. "
                         f"{int(index[(index < 0) | (index >= n)][0])}); indices refer to "
                         f"rows of Y.")
    mask = np.zeros(n, dtype=bool)
    mask[index.astype(np.intp)] = True
    return mask


def _vote(labels):
    """Majority label per row of ``labels`` (m, k), neighbours sorted nearest first.

    A tie between classes goes to the class whose nearest member comes first: the
    argmax below returns the first position with the largest count.
    """
    counts = np.empty(labels.shape, dtype=np.int64)
    for j in range(labels.shape[1]):
        counts[:, j] = np.count_nonzero(labels == labels[:, j:j + 1], axis=1)
    winner = np.argmax(counts, axis=1)
    return labels[np.arange(labels.shape[0]), winner]


# --------------------------------------------------------------------------- public

def homogeneity(Y, y, *, ignore_unlabelled=True):
    """Fraction of points whose nearest embedded neighbour has the same class.

    This is gamma / n of Yang et al. (eq. 23), with gamma the number of points
    whose nearest neighbour in ``Y`` (the point itself excluded) shares its label.
    Only labelled points (``y != -1``) are queries and ``n`` counts only them.
    With ``ignore_unlabelled=True`` unlabelled points are also removed from the
    candidate neighbours, so the result equals ``1 - knn_error(Y, y, k=1)``; with
    ``False`` they remain candidates, and a point whose nearest neighbour is
    unlabelled counts as a miss. Ties in distance are resolved as
    :class:`sklearn.neighbors.NearestNeighbors` returns them (exact duplicates of a
    point are valid neighbours of it).

    Parameters
    ----------
    Y : array-like of shape (n_samples, n_components)
        The embedding.
    y : array-like of int, shape (n_samples,)
        Class labels, ``-1`` for unlabelled points.
    ignore_unlabelled : bool, default True
        Drop unlabelled points from the candidate neighbours too.

    Returns
    -------
    float
        Homogeneity in [0, 1]; higher is better.

    Raises
    ------
    ValueError
        If ``Y`` is not a finite 2-D array, ``y`` does not match it, or fewer than
        two points are labelled.

    References
    ----------
    Z. Yang, I. King, Z. Xu, E. Oja. Heavy-tailed symmetric stochastic neighbor
    embedding. NIPS 2009.

    Examples
    --------
    >>> homogeneity([[0.0], [1.0], [10.0], [12.0]], [0, 0, 1, 0])
    0.5
    """
    Y = check_data(Y, name="Y")
    y = check_labels(y, Y.shape[0])
    labelled = y != -1
    if np.count_nonzero(labelled) < 2:
        raise ValueError(f"homogeneity needs at least 2 labelled points (y != -1); got "
                         f"{np.count_nonzero(labelled)}.")
    if ignore_unlabelled:
        Y, y = Y[labelled], y[labelled]
        labelled = np.ones(y.shape[0], dtype=bool)
    nearest = _neighbours(Y, 1)[:, 0]
    same = (y[nearest] == y) & labelled
    return float(np.count_nonzero(same) / np.count_nonzero(labelled))


def knn_error(Y, y, *, k=1, train=None, test=None):
    """k-nearest-neighbour classification error in the embedding.

    Each test point gets the majority label of its ``k`` nearest training points
    in ``Y`` (Euclidean). A tie between classes goes to the class whose nearest
    member among the ``k`` neighbours is closest; ties in distance are resolved
    as :class:`sklearn.neighbors.NearestNeighbors` returns them.

    Without ``train`` and ``test`` this is the leave-one-out error over the
    labelled points: each one is classified from all other labelled points, and
    unlabelled points (``y == -1``) play no part. Given only one of them, the other
    defaults to the remaining labelled points. Indices are treated as sets, so
    repeats count once.

    Parameters
    ----------
    Y : array-like of shape (n_samples, n_components)
        The embedding.
    y : array-like of int, shape (n_samples,)
        Class labels, ``-1`` for unlabelled points.
    k : int, default 1
        Number of neighbours that vote.
    train, test : array-like of int or bool, optional
        Row indices (or boolean masks) of the training and the test points. Both
        must be labelled and must not overlap.

    Returns
    -------
    float
        Fraction of misclassified test points, in [0, 1]; lower is better.

    Raises
    ------
    ValueError
        For invalid ``Y`` or ``y``, indices out of range, unlabelled, empty or
        overlapping ``train``/``test``, or ``k`` larger than the number of
        training points available to a query.

    References
    ----------
    L. van der Maaten, G. Hinton. Visualizing data using t-SNE. JMLR 9, 2008
    (1-NN error as an embedding score).

    Examples
    --------
    >>> knn_error([[0.0], [1.0], [10.0], [12.0]], [0, 0, 1, 0])
    0.5
    >>> knn_error([[0.0], [1.0], [10.0], [12.0]], [0, 0, 1, 1], train=[0, 2], test=[1, 3])
    0.0
    """
    Y = check_data(Y, name="Y")
    n = Y.shape[0]
    y = check_labels(y, n)
    labelled = y != -1

    if train is None and test is None:
        n_lab = int(np.count_nonzero(labelled))
        if n_lab < 2:
            raise ValueError(f"leave-one-out k-NN error needs at least 2 labelled points "
                             f"(y != -1); got {n_lab}.")
        k = _check_k(k, n_lab, limit=n_lab,
                     why=f"leave-one-out has only {n_lab - 1} other labelled points")
        Yl, yl = Y[labelled], y[labelled]
        predicted = _vote(yl[_neighbours(Yl, k)])
        return float(np.mean(predicted != yl))

    train_mask = None if train is None else _as_mask(train, n, "train")
    test_mask = None if test is None else _as_mask(test, n, "test")
    if train_mask is None:
        train_mask = labelled & ~test_mask
    if test_mask is None:
        test_mask = labelled & ~train_mask
    for name, mask in (("train", train_mask), ("test", test_mask)):
        if not mask.any():
            raise ValueError(f"{name} selects no points; give at least one sample index.")
        if not labelled[mask].all():
            bad = int(np.flatnonzero(mask & ~labelled)[0])
            raise ValueError(f"{name} contains unlabelled points (y == -1, e.g. index "
                             f"{bad}); the error needs a known label for every train and "
                             f"test point.")
    if np.any(train_mask & test_mask):
        bad = int(np.flatnonzero(train_mask & test_mask)[0])
        raise ValueError(f"train and test overlap (e.g. index {bad}); a test point would "
                         f"find itself. Use disjoint index sets.")
    n_train = int(np.count_nonzero(train_mask))
    k = _check_k(k, n_train, limit=n_train + 1,
                 why=f"there are only {n_train} training points")
    from sklearn.neighbors import NearestNeighbors
    nn = NearestNeighbors(n_neighbors=k).fit(Y[train_mask])
    nbrs = nn.kneighbors(Y[test_mask], return_distance=False)
    predicted = _vote(y[train_mask][nbrs])
    return float(np.mean(predicted != y[test_mask]))


def trustworthiness(X, Y, k=12, *, metric="euclidean", chunk_size=None):
    """Trustworthiness of the embedding (Venna & Kaski).

    .. math::

        T(k) = 1 - \\frac{2}{n k (2n - 3k - 1)} \\sum_i \\sum_{j \\in U_k(i)} (r(i, j) - k)

    where :math:`U_k(i)` are the points among the k nearest neighbours of i in
    the embedding but not in the input space and :math:`r(i, j)` is the rank of
    j in the input-space ordering of i (nearest = 1). It penalises embedded
    neighbours that are far apart in the input. Input ranks are computed
    ``chunk_size`` rows at a time, so memory is O(chunk_size * n). A point at a
    distance tied with others gets the best of the tied ranks, and the sum runs
    over max(r(i, j) - k, 0) for all k embedded neighbours j, so a neighbour tied
    with the k-th input neighbour costs nothing. Without ties this equals
    :func:`sklearn.manifold.trustworthiness`.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features) or (n_samples, n_samples)
        Input data, or input distances when ``metric="precomputed"``.
    Y : array-like of shape (n_samples, n_components)
        The embedding (Euclidean distances).
    k : int, default 12
        Neighbourhood size; needs 1 <= k < n_samples / 2.
    metric : str, default "euclidean"
        Input-space metric for :func:`sklearn.metrics.pairwise_distances`, or
        ``"precomputed"``.
    chunk_size : int or None, default None
        Rows of input distances held at once; ``None`` picks about 64 MiB worth.

    Returns
    -------
    float
        Trustworthiness, at most 1 (perfect); higher is better.

    Raises
    ------
    ValueError
        If ``X`` or ``Y`` contain NaN or infinity, their numbers of samples differ,
        a precomputed ``X`` is not square and non-negative, or ``k`` is out of range.

    References
    ----------
    J. Venna, S. Kaski. Neighborhood preservation in nonlinear projection methods:
    an experimental study. ICANN 2001, pp. 485-491.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(50, 5))
    >>> trustworthiness(X, X, k=5)
    1.0
    """
    X, Y = _check_pair(X, Y, metric)
    return _trust(X, metric, Y, "euclidean", k, chunk_size, "trustworthiness")


def continuity(X, Y, k=12, *, metric="euclidean", chunk_size=None):
    """Continuity of the embedding (Venna & Kaski).

    Trustworthiness with the roles of the spaces swapped: it penalises input
    neighbours that are far apart in the embedding,

    .. math::

        C(k) = 1 - \\frac{2}{n k (2n - 3k - 1)} \\sum_i \\sum_{j \\in V_k(i)} (\\hat r(i, j) - k)

    with :math:`V_k(i)` the input-space k nearest neighbours of i that are not
    among its embedded ones and :math:`\\hat r(i, j)` the rank of j in the
    embedding ordering of i. For Euclidean ``X``, ``continuity(X, Y, k)`` equals
    ``trustworthiness(Y, X, k)``. Ties and memory are handled as in
    :func:`trustworthiness`.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features) or (n_samples, n_samples)
        Input data, or input distances when ``metric="precomputed"``.
    Y : array-like of shape (n_samples, n_components)
        The embedding (Euclidean distances).
    k : int, default 12
        Neighbourhood size; needs 1 <= k < n_samples / 2.
    metric : str, default "euclidean"
        Input-space metric, or ``"precomputed"``.
    chunk_size : int or None, default None
        Rows of embedding distances held at once; ``None`` picks about 64 MiB worth.

    Returns
    -------
    float
        Continuity, at most 1 (perfect); higher is better.

    Raises
    ------
    ValueError
        As for :func:`trustworthiness`.

    References
    ----------
    J. Venna, S. Kaski. Neighborhood preservation in nonlinear projection methods:
    an experimental study. ICANN 2001, pp. 485-491.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(50, 5))
    >>> continuity(X, X, k=5)
    1.0
    """
    X, Y = _check_pair(X, Y, metric)
    return _trust(Y, "euclidean", X, metric, k, chunk_size, "continuity")


def neighbourhood_preservation(X, Y, k=10, *, metric="euclidean"):
    """Mean fraction of each point's k input neighbours kept in the embedding.

    For every point, ``|N_k^X(i) & N_k^Y(i)| / k`` with :math:`N_k` the k nearest
    neighbours (the point itself excluded), averaged over all points. Cheap
    (two k-NN searches) and easy to read, e.g. for a live readout.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features) or (n_samples, n_samples)
        Input data, or input distances when ``metric="precomputed"``.
    Y : array-like of shape (n_samples, n_components)
        The embedding (Euclidean distances).
    k : int, default 10
        Neighbourhood size; needs 1 <= k < n_samples.
    metric : str, default "euclidean"
        Input-space metric, or ``"precomputed"``.

    Returns
    -------
    float
        Preservation in [0, 1]; 1 means every neighbourhood is kept.

    Raises
    ------
    ValueError
        As for :func:`trustworthiness`, with ``k`` needing only k < n_samples.

    References
    ----------
    J. A. Lee, M. Verleysen. Quality assessment of dimensionality reduction:
    rank-based criteria. Neurocomputing 72, 2009 (the K-ary neighbourhood
    agreement).

    Examples
    --------
    >>> neighbourhood_preservation([[0.0], [1.0], [3.0]], [[0.0], [2.0], [3.0]], k=1)
    0.6666666666666666
    """
    X, Y = _check_pair(X, Y, metric)
    n = X.shape[0]
    k = _check_k(k, n, limit=n, why=f"each point has only {n - 1} other points")
    both = np.sort(np.hstack([_neighbours(X, k, metric), _neighbours(Y, k)]), axis=1)
    shared = np.count_nonzero(both[:, 1:] == both[:, :-1])
    return float(shared / (n * k))


def kl_divergence(P, Y, alpha=1.0):
    """KL(P || Q) of an embedding under the HSSNE power-family kernel.

    Q_ij = H_ij / sum_{a != b} H_ab with H(tau) = (1 + alpha tau)^(-1/alpha)
    (exp(-tau) at alpha = 0; t-SNE at alpha = 1).

    Parameters
    ----------
    P : ndarray or scipy sparse matrix (n_samples, n_samples)
        Joint input probabilities: non-negative, zero diagonal; normalized to
        sum to one here.
    Y : array-like (n_samples, n_components)
    alpha : float, default=1.0

    Returns
    -------
    float

    Raises
    ------
    ValueError
        When shapes disagree, P has negative entries or no mass, or alpha < 0.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0, .25, .25], [.25, 0, 0], [.25, 0, 0]])
    >>> round(kl_divergence(P, np.array([[0., 0], [1, 0], [-1, 0]])), 4)
    0.1823
    """
    Y = check_data(Y, name="Y")
    alpha = check_number(alpha, "alpha", low=0)
    n = Y.shape[0]
    if P.shape != (n, n):
        raise ValueError(f"P must have shape (n_samples, n_samples) = {(n, n)} to match Y; got "
                         f"{P.shape}.")
    check_square_nonnegative(P, name="P")
    Yt = np.ascontiguousarray(Y.T)
    if sp.issparse(P):
        P = sp.csr_matrix(P, dtype=np.float64)
        P.eliminate_zeros()
        values = P.data
    else:
        P = np.ascontiguousarray(P, dtype=np.float64)
        values = P[P > 0]
    if not np.all(np.isfinite(values)):
        raise ValueError("P must be finite.")
    total = values.sum()
    if not total > 0:
        raise ValueError("P has no positive entry.")
    P = P / total
    values = values / total
    with _config.KERNEL_LOCK:
        if sp.issparse(P):
            p_log_h = kernels.sparse_p_log_h(Yt, P.indptr, P.indices, P.data, alpha)
        else:
            p_log_h = kernels.dense_p_log_h(Yt, P, alpha)
        z = kernels.hssne_z(Yt, alpha)
    return float(np.sum(values * np.log(values)) - p_log_h + math.log(z))
