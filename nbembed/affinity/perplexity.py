"""Gaussian neighbourhoods with a target perplexity (SNE, t-SNE, HSSNE).

p_{j|i} = exp(-d_ij^2 / 2 sigma_i^2) / sum_{k != i} exp(-d_ik^2 / 2 sigma_i^2),
with sigma_i chosen by bisection so that 2^H(P_i) equals the perplexity. The
joint P_ij = (p_{j|i} + p_{i|j}) / 2n is symmetric and sums to one.

Two ways to build it, chosen by ``method``:

* ``"exact"``: every pair, a dense n x n array.
* ``"knn"``: only the k = min(n - 1, 3 * perplexity) nearest neighbours of each
  point, a sparse CSR matrix: memory O(n k), the bandwidths calibrated on the
  neighbour distances alone.
* ``"auto"``: exact up to ``DENSE_AFFINITY_MAX_N`` points (see ``_config``),
  kNN above.

The neighbours of the kNN P are exact or approximate (nearest-neighbour
descent), chosen by ``neighbors``. For dense Euclidean rows both searches are
nbembed's own: the exact one in :mod:`nbembed._nearest_reference` (float32
products propose, float64 sums decide, and leaves of nearby rows let the
products skip far rows), the descent in :mod:`nbembed._nearest_descent`.
Other metrics and sparse rows are searched exactly by scikit-learn's
``NearestNeighbors`` and approximately by the optional package pynndescent.
``"auto"`` is exact while the search compares at most
``EXACT_NEIGHBORS_MAX_WORK`` coordinates (n^2 d, with d the stored entries per
row of sparse data), and for dense Euclidean rows also while they hold at most
``EXACT_EUCLIDEAN_MAX_ENTRIES`` entries (n d) in at most
``EXACT_EUCLIDEAN_MAX_ROWS`` rows. Exact search costs O(n^2 d) and
nearest-neighbour descent roughly O(n log n) distances, but pynndescent
compiles for 20 s or more at its first call in every process (Numba, not
cached on disk; nbembed's own descent is compiled once and cached like every
kernel). The first budget, 4e11, is where scikit-learn's exact search
cost a few seconds more than a warm descent and far less than a first one:
about 89 000 points in 50 dimensions, 22 000 in 784. nbembed's own search
costs about 1.8e-11 s per compared coordinate on two cores whatever the
shape, while a warm descent's cost per point grows slowly with the features,
so the two meet near a fixed n d: on two cores, 91 neighbours
(benchmarks/bench_neighbors.py), 10^5 x 50 took 10-15 s exactly against 16-30
s by a warm descent, 2 * 10^5 x 50 34-36 s against 36-50 s (recall 0.966 on
the mixture), and 40 000 x 784 23 s against 15 s. The second budget, 10^7
entries, keeps the exact search up to about 2 * 10^5 points in 50 dimensions.
In few dimensions a compared pair costs about as much as in 50 (the work
around each product, not the product, dominates: 6.6e-10 s a pair at 150 000
x 2, 8.6e-10 s at 150 000 x 10), so the entries alone would search 10^6
points of 10 features exactly for some 12 minutes; a descent took 14 s and
25 s at 150 000 x 2 and x 10 (exact: 15 s and 19 s). Hence the third bound,
2 * 10^5 rows whatever the features.

Data rows may be a scipy.sparse CSR matrix with ``metric="euclidean"`` or
``"cosine"``: scikit-learn computes the distances from the stored entries
(||x||^2 + ||y||^2 - 2 x.y, clipped at 0; 1 - x.y / (||x|| ||y||)), the exact
neighbour search a block of rows at a time, and pynndescent searches sparse
rows itself, so X is never densified.

With ``metric="precomputed"`` the input is a square matrix of dissimilarities
d_ij (non-negative, zero diagonal, not necessarily a metric); they are squared
in the Gaussian exactly like Euclidean distances.

A point with at least ``perplexity`` exact copies (more generally: as many
neighbours tied at its nearest distance) cannot reach the perplexity at any
bandwidth: bisection would shrink sigma_i towards 0, and NeRV, whose output
neighbourhoods share the input widths, would then shrink the whole embedding
to nothing. Its bandwidth is floored at the distance to its nearest distinct
neighbour (:func:`calibrate`).
"""

import math
import os

import numpy as np
import scipy.sparse as sp

from .. import _config
from .._distances import pairwise_distances
from .._kernels.csr import is_symmetric_csr, mirror_positions, symmetric_sum, \
    transposed_entries
from .._kernels.perplexity import TIE_RTOL
from .._kernels.perplexity import conditional_probabilities as _calibrate_rows
from .._nearest_descent import descent_neighbors
from .._nearest_reference import ReferenceRows
from .._validation import check_dense_allowed, check_number, check_option, \
    check_random_state, check_repeated_rows
from ..optim.timings import timed

METHODS = ("auto", "exact", "knn")
NEIGHBORS = ("auto", "exact", "approximate")

#: Up to this many compared coordinates (n^2 times the features, or the stored
#: entries per row of sparse data) ``neighbors="auto"`` finds exact nearest
#: neighbours in any metric; above it, approximate ones when pynndescent is
#: installed, unless the next budget allows an exact search.
#: Overridable with the environment variable ``NBEMBED_EXACT_NEIGHBORS_MAX_WORK``.
EXACT_NEIGHBORS_MAX_WORK = float(os.environ.get("NBEMBED_EXACT_NEIGHBORS_MAX_WORK", 4e11))

#: Dense rows in Euclidean distance, which nbembed's own search serves, are
#: also searched exactly while they hold at most this many entries (n times
#: the features): about 200 000 points in 50 dimensions, 12 800 in 784 (where
#: the budget above, 22 000, is the larger). Overridable with the environment
#: variable ``NBEMBED_EXACT_EUCLIDEAN_MAX_ENTRIES``.
EXACT_EUCLIDEAN_MAX_ENTRIES = float(os.environ.get("NBEMBED_EXACT_EUCLIDEAN_MAX_ENTRIES", 1e7))

#: ... and at most this many rows, whatever the features: in few dimensions
#: the search costs per compared pair about what it costs in 50. Overridable
#: with the environment variable ``NBEMBED_EXACT_EUCLIDEAN_MAX_ROWS``.
EXACT_EUCLIDEAN_MAX_ROWS = int(os.environ.get("NBEMBED_EXACT_EUCLIDEAN_MAX_ROWS", 200_000))


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


def exact_search_work(X):
    """Coordinates an exact search of every row's neighbours compares: n^2 times
    the features (the stored entries per row for sparse ``X``)."""
    n = X.shape[0]
    per_row = X.nnz / max(n, 1) if sp.issparse(X) else X.shape[1]
    return float(n) * float(n) * max(per_row, 1.0)


def _own_search(X, metric):
    """Whether the exact search is nbembed's own (dense rows, Euclidean distance)."""
    return metric == "euclidean" and not sp.issparse(X)


def _exact_is_cheap(X, metric):
    """Whether ``neighbors="auto"`` searches ``X`` exactly (see the budgets above)."""
    if metric == "precomputed" or exact_search_work(X) <= EXACT_NEIGHBORS_MAX_WORK:
        return True
    n, d = X.shape
    return _own_search(X, metric) and n <= EXACT_EUCLIDEAN_MAX_ROWS and \
        float(n) * d <= EXACT_EUCLIDEAN_MAX_ENTRIES


def _resolve_neighbors(neighbors, X, metric):
    """"exact" or "approximate" for ``neighbors`` on the rows ``X``."""
    check_option(neighbors, "neighbors", NEIGHBORS)
    if neighbors == "auto":
        if _exact_is_cheap(X, metric):
            return "exact"
        if _own_search(X, metric):
            return "approximate"
        try:
            import pynndescent  # noqa: F401
        except ImportError:
            return "exact"
        return "approximate"
    if neighbors == "approximate" and metric == "precomputed":
        raise ValueError('neighbors="approximate" needs data vectors, not metric="precomputed"; '
                         'use neighbors="exact".')
    return neighbors


def conditional_probabilities(X, perplexity=30.0, *, method="auto", metric="euclidean",
                              n_neighbors=None, neighbors="auto", random_state=None,
                              timings=None):
    """Row-stochastic p_{j|i} with a common perplexity.

    Parameters
    ----------
    X : ndarray or scipy.sparse.csr_matrix, (n_samples, n_features) or (n_samples, n_samples)
        Data (sparse with "euclidean" or "cosine"), or dissimilarities when
        ``metric="precomputed"`` (validated by the caller).
    perplexity : float
        Effective number of neighbours, 1 < perplexity < n_samples - 1.
    method : {"auto", "exact", "knn"}
        Dense over all pairs, or sparse over nearest neighbours.
    metric : str
        Any metric of ``sklearn.metrics.pairwise_distances``, or "precomputed".
    n_neighbors : int, optional
        Neighbours per point for ``method="knn"``; default min(n - 1, 3 * perplexity).
    neighbors : {"auto", "exact", "approximate"}
        How ``method="knn"`` finds them: exactly, or by nearest-neighbour
        descent (nbembed's own for dense Euclidean rows, the optional
        pynndescent for sparse rows and other metrics). "auto": exact up to
        ``EXACT_NEIGHBORS_MAX_WORK`` compared coordinates (about 89 000 points
        in 50 dimensions), for dense Euclidean rows also up to
        ``EXACT_EUCLIDEAN_MAX_ENTRIES`` entries in at most
        ``EXACT_EUCLIDEAN_MAX_ROWS`` rows (about 200 000 points in 50
        dimensions or fewer), or when the descent would need pynndescent and
        it is missing.
    random_state : int, RandomState or None
        Seed of the approximate neighbour search.
    timings : dict, optional
        Wall-clock seconds are added to its entries "neighbors" (the
        neighbour search, or the pairwise distances with ``method="exact"``)
        and "calibration" (the bandwidths and building P); see
        :func:`nbembed.optim.timings.timed`.

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
    if method == "exact":
        check_dense_allowed(n, what="Exact affinities",
                            alternative='Use sparse nearest-neighbour affinities (affinity="knn" in '
                                        'the estimators, method="knn" here)')
        with timed(timings, "neighbors"):
            if metric == "precomputed":
                D = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
                sq = D * D
            else:
                sq = pairwise_distances(X, metric=metric, squared=True)
        with timed(timings, "calibration"):
            return calibrate(np.ascontiguousarray(sq), perplexity, skip_diagonal=True)
    k = n_neighbors if n_neighbors is not None else int(min(n - 1, np.ceil(3 * perplexity)))
    k = check_number(k, "n_neighbors", low=1, high=n - 1, integer=True)
    if k < perplexity:
        raise ValueError(f"n_neighbors = {k} must be at least the perplexity ({perplexity:g}).")
    with timed(timings, "neighbors"):
        dist, idx = nearest_neighbors(X, k, metric=metric, neighbors=neighbors,
                                      random_state=random_state)
    with timed(timings, "calibration"):
        sq = np.square(dist, dtype=np.float64)
        del dist
        P_knn, beta = calibrate(sq, perplexity, skip_diagonal=False)
        del sq
        indptr = np.arange(0, n * k + 1, k, dtype=np.int64 if n * k >= 2**31 else np.int32)
        index_dtype = np.int64 if n >= 2**31 else np.int32
        P = sp.csr_matrix((P_knn.ravel(), idx.ravel().astype(index_dtype, copy=False), indptr),
                          shape=(n, n))
    return P, beta




def calibrate(sq_distances, perplexity, *, skip_diagonal):
    """Per-row Gaussian neighbourhoods of a given perplexity, with floored bandwidths.

    Parameters
    ----------
    sq_distances : ndarray (n, m), C-contiguous float64
        Squared distances from each point to its m candidate neighbours.
    perplexity : float
    skip_diagonal : bool
        Row i's column i is the point itself (a full n x n matrix).

    Returns
    -------
    P : ndarray (n, m)
        Rows sum to one.
    beta : ndarray (n,)
        Precisions b_i of exp(-b_i d^2). A row whose nearest distance is shared
        by at least ``perplexity`` neighbours (exact copies, say; to rounding,
        ``TIE_RTOL`` of the kernel) cannot reach the perplexity; its b_i is
        1 / (squared distance to its nearest farther neighbour), or the median
        of the other rows' where it has none, and its P_i follows.
    """
    with _config.KERNEL_LOCK:
        P, beta, ties = _calibrate_rows(sq_distances, float(np.log(perplexity)), skip_diagonal)
    degenerate = np.flatnonzero(ties >= perplexity)
    if degenerate.size == 0:
        return P, beta
    floors = []
    for r in degenerate:
        shifted = np.array(sq_distances[r], dtype=np.float64)
        if skip_diagonal:
            shifted[r] = np.inf
        shifted -= shifted.min()
        finite = np.isfinite(shifted)
        tied = shifted <= TIE_RTOL * (shifted[finite].max() if finite.any() else 0.0)
        farther = shifted[finite & ~tied]
        if farther.size:
            b = 1.0 / farther.min()
            weights = np.exp(-b * shifted)
        else:  # every candidate is a copy: any bandwidth gives the same P_i
            b = math.nan
            weights = tied.astype(np.float64)
        P[r] = weights / weights.sum()
        floors.append(b)
    beta[degenerate] = floors
    regular = np.ones(beta.shape[0], dtype=bool)
    regular[degenerate] = False
    fallback = float(np.median(beta[regular])) if regular.any() else 1.0
    beta[np.isnan(beta)] = fallback
    return P, beta


def nearest_neighbors(X, k, *, metric="euclidean", neighbors="auto", random_state=None):
    """The k nearest neighbours of every point, itself excluded.

    Parameters
    ----------
    X : ndarray (n, d), or (n, n) with ``metric="precomputed"``
    k : int
    metric : str
    neighbors : {"auto", "exact", "approximate"}
        See :func:`conditional_probabilities`.
    random_state : int, RandomState or None
        Seed of the approximate search.

    Returns
    -------
    dist, idx : ndarray (n, k)
        Distances and indices, nearest first.
    """
    if _resolve_neighbors(neighbors, X, metric) == "approximate":
        return _approximate_neighbors(X, k, metric, random_state)
    return _nearest_neighbors(X, k, metric)


def _approximate_neighbors(X, k, metric, random_state):
    """Approximate k nearest neighbours by nearest-neighbour descent, excluding itself:
    nbembed's own for dense rows in Euclidean distance, pynndescent's otherwise."""
    seed = check_random_state(random_state).randint(np.iinfo(np.int32).max)
    if _own_search(X, metric):
        # Compiled once and cached like every kernel (pynndescent compiles for
        # 20-25 s in every new process), and the same result on any number of
        # threads. At 10^6 points of the 50-D mixture, 91 neighbours, two cores,
        # warm: 133 s and a recall of 0.885 against the exact search
        # (pynndescent with the settings below: 119 s, 0.880); at 10^5 points
        # 10.4 s, 0.987 (10.6 s, 0.991); 30 000 x 784 6.1 s against 4.8 s
        # (benchmarks/bench_neighbors.py).
        return descent_neighbors(X, k, seed)
    return pynndescent_neighbors(X, k, metric, seed)


def pynndescent_neighbors(X, k, metric, seed):
    """Approximate k nearest neighbours by pynndescent's descent, excluding itself."""
    try:
        from pynndescent import NNDescent
    except ImportError as err:
        raise ImportError('neighbors="approximate" with sparse rows or another metric than '
                          '"euclidean" needs the optional package pynndescent (the "large" '
                          'extra of nbembed); install it or use neighbors="exact".') from err
    # pynndescent searches sparse rows itself (euclidean and cosine among its
    # sparse metrics), so a sparse X stays sparse.
    data = X
    # max_candidates: pynndescent's default (60 here) preallocates about 3 GB of update
    # buffers whatever n; 30 takes 0.8 GB and kept 99.6% of the exact neighbours on
    # 20 000 points in 50 dimensions (99.9% with 60).
    # n_trees, n_iters: a large random-projection forest to start from and at most
    # 4 rounds of descent. At 10^6 points of the 50-D mixture of the benchmarks, 92
    # neighbours, two cores: a tree takes about 0.3 s and a round 25-27 s, and the
    # forest buys more recall per second than the rounds do (recall on 500 rows
    # against the exact search): 24 trees and 6 rounds 168 s, recall 0.889; 24 and 4
    # 138 s, 0.829; 12 and 5 148 s, 0.818; 48 and 4 150 s, 0.895; 64 and 3 143 s,
    # 0.886. (pynndescent's defaults stopped after 11 rounds, 220 s, 0.887.) At 10^5
    # points, 24 trees and 6 rounds against 48 and 4: the mixture 18.1 -> 14.4 s,
    # recall 0.989 -> 0.993; the image-like set of 256 dimensions 23.5 -> 23.4 s,
    # recall 0.9995 -> 0.9996.
    index = NNDescent(data, n_neighbors=k + 1, metric=metric, random_state=seed,
                      low_memory=True, compressed=True, max_candidates=30,
                      n_trees=48, n_iters=4)
    idx, dist = index.neighbor_graph
    del index
    return _drop_self(dist, idx, k)


def _drop_self(dist, idx, k):
    """From k + 1 neighbours per row, drop the point itself (or the farthest)."""
    n = idx.shape[0]
    keep = idx != np.arange(n)[:, None]
    # Rows where i was not among its k + 1 neighbours keep k + 1 others: drop the last.
    no_self = keep.all(axis=1)
    keep[no_self, -1] = False
    return dist[keep].reshape(n, k), idx[keep].reshape(n, k)


def _nearest_neighbors(X, k, metric):
    """Exact k nearest neighbours of every point, excluding itself."""
    if metric == "precomputed":
        if sp.issparse(X):
            check_dense_allowed(X.shape[0], what="Sparse precomputed dissimilarities",
                                alternative="Pass data vectors with a metric instead")
        X = X.toarray() if sp.issparse(X) else X
    # Ties and duplicate points can put i outside its own neighbour list;
    # asking for k + 1 and dropping i (or the farthest) handles both.
    if _own_search(X, metric):
        # Proposed by float32 products, measured exactly: at 70 000 x 50 on two
        # cores 5.1-7.6 s against scikit-learn's 16-18 s on the same machine
        # (benchmarks/bench_neighbors.py).
        sq, idx = ReferenceRows(X).nearest_to_themselves(k + 1)
        return _drop_self(np.sqrt(sq, out=sq), idx, k)
    # scikit-learn's compiled search is parallel. Its import (about 0.9 s) falls
    # only on runs that search neighbours in other metrics or sparse rows.
    from sklearn.neighbors import NearestNeighbors
    dist, idx = NearestNeighbors(n_neighbors=k + 1, metric=metric).fit(X).kneighbors(X)
    return _drop_self(dist, idx, k)


def joint_probabilities(X, perplexity=30.0, *, method="auto", metric="euclidean",
                        n_neighbors=None, neighbors="auto", random_state=None, timings=None,
                        dtype=np.float64):
    """Symmetric joint P_ij = (p_{j|i} + p_{i|j}) / 2n summing to one.

    Parameters are those of :func:`conditional_probabilities`; ``timings``
    gets the check for repeated rows under "neighbors" and the symmetrization
    under "calibration" too. ``dtype`` is the precision of a CSR result's
    values (see :func:`symmetrize`).

    Returns
    -------
    P : ndarray or scipy.sparse.csr_matrix (n_samples, n_samples)
        Dense for ``method="exact"``, CSR (sorted indices, no explicit zeros)
        for ``method="knn"``.

    Raises
    ------
    ValueError
        If all points coincide (see :func:`nbembed._validation.check_repeated_rows`).

    Warns
    -----
    UserWarning
        If many rows are exact copies of others, saying how many.
    """
    with timed(timings, "neighbors"):
        # The caller of fit, through HSSNE's prepare and fit (the with block adds
        # no frame).
        check_repeated_rows(X, metric=metric, stacklevel=4)
    P, _ = conditional_probabilities(X, perplexity, method=method, metric=metric,
                                     n_neighbors=n_neighbors, neighbors=neighbors,
                                     random_state=random_state, timings=timings)
    with timed(timings, "calibration"):
        return symmetrize(P, dtype)


def symmetrize(P, dtype=np.float64):
    """(P + P^T) / sum, keeping the format (dense or CSR; CSR with sorted indices).

    A CSR P is put in canonical form in place (indices sorted, duplicates
    summed; other sparse formats are converted first). The sum holds no
    transposed copy of P, only its structure, which is let go before the sum is
    allocated (at 10^6 points with 90 neighbours, about 0.6 GB less at the
    peak of a fit).

    ``dtype`` (CSR only) is the precision of the stored values: with float32,
    each value is computed in P's precision and rounded once (the normalizer
    is twice the sum of P), and values below float32's normal range are
    dropped. Dense results are float64.
    """
    if not sp.issparse(P):
        S = P + P.T
        S /= S.sum()
        return S
    P = sp.csr_matrix(P)
    P.sum_duplicates()
    single = np.dtype(dtype) == np.float32
    with _config.KERNEL_LOCK:
        mirror, lengths = mirror_positions(P.indptr, P.indices,
                                           *transposed_entries(P.indptr, P.indices))
        nnz = int(lengths.sum())
        index_dtype = np.int32 if max(nnz, P.shape[0]) < 2**31 else np.int64
        indptr = np.zeros(P.shape[0] + 1, dtype=index_dtype)
        np.cumsum(lengths, out=indptr[1:])
        del lengths
        indices = np.empty(nnz, dtype=index_dtype)
        data = np.empty(nnz, dtype=np.float32 if single else np.float64)
        # float64: the plain sum, normalized below; float32: scaled before rounding.
        scale, floor = ((0.5 / float(P.data.sum()), float(np.finfo(np.float32).tiny))
                        if single else (1.0, 0.0))
        symmetric_sum(P.indptr, P.indices, P.data, mirror, indptr, indices, data, scale, floor)
    del mirror
    S = sp.csr_matrix((data, indices, indptr), shape=P.shape)
    S.has_sorted_indices = True
    if not single:
        S.data /= S.data.sum()
    # After the division: a conditional probability that is subnormal (a far
    # neighbour of a tight cluster) rounds to zero in it.
    S.eliminate_zeros()
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
        if P.diagonal().any():
            P.setdiag(0)
        P.eliminate_zeros()
        P.sort_indices()
    else:
        P = np.array(A, dtype=np.float64)
        np.fill_diagonal(P, 0.0)
    if not P.sum() > 0:
        raise ValueError("The precomputed affinities have no positive off-diagonal entry.")
    if sp.issparse(P) and is_symmetric_csr(P.indptr, P.indices, P.data):
        # Already symmetric: (P + P^T) / sum would hold three matrices' worth at
        # once (at 10^6 points with 90 neighbours, 6 GB more than P alone).
        P.data /= P.data.sum()
        return P
    return symmetrize(P)
