"""Placing new points against a fitted map: what ``transform`` of the
neighbour-embedding estimators shares.

A fitted estimator keeps a :class:`NewPoints`: the training data (or nothing
but their number, for precomputed dissimilarities), the embedding and the
calibration of the fit. For every new point it

1. finds its k nearest training points and calibrates p_{j|new} over them:
   to a perplexity (HSSNE and SNE: the smaller of ``NEW_POINT_PERPLEXITY``
   and the fitted one; NeRV: the fitted one) or with Mbed's fixed width sigma;
2. starts at the p-weighted mean of their positions;
3. minimizes the point's own cost against the fixed map
   (:class:`~nbembed.objectives.placement.PlacementObjective`) by the
   fixed-point step -grad / (2 sum_j p_j g_j) with momentum, restarted for
   a point whose cost rose.

The points are independent of each other: the result for a point does not
depend on which others are placed with it, nor on the number of threads.
Cost: O(m n d) per iteration for m new points against n reference points
(the repulsion is exact over all reference points), plus the neighbour search.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import scipy.sparse as sp

from .. import _config
from .._distances import pairwise_distances
from .._kernels.rows import cross_squared_distances
from .._validation import check_cosine_rows, check_data, check_number, check_sparse_metric
from ..affinity.fixed_width import fixed_width_rows
from ..affinity.perplexity import calibrate
from ..objectives.placement import PlacementObjective

#: Largest perplexity of a new point's neighbourhood for HSSNE and SNE. A new point
#: belongs with its closest training points; calibrated to a fit's perplexity of 30, a
#: point between two clusters is pulled to their mean. Chosen on inner 80/20 splits of
#: training data only (docs/arrange.md, "New points"); openTSNE's transform uses 5 too.
NEW_POINT_PERPLEXITY = 5.0
#: Most iterations of the placement (openTSNE's transform takes 250 gradient steps;
#: the fixed-point step needs fewer).
MAX_ITER = 100
#: Momentum of the fixed-point step.
MOMENTUM = 0.5
#: Entries of the block of dissimilarities the neighbour search holds at once.
NEIGHBOUR_BLOCK = 2**22
#: A point stops once its step is shorter than this times the spread of the map.
TOLERANCE = 1e-5


class NewPoints:
    """What a fitted estimator keeps to place new points against its map.

    Parameters
    ----------
    data : ndarray or scipy.sparse.csr_matrix (n, n_features), or None
        The training data; None when new points come as dissimilarities to the
        training points (``metric="precomputed"``, or ``distances`` given).
    embedding : ndarray (n, d)
        The fitted positions.
    n_neighbors : int
        Reference neighbours of each new point's p (at most n: all of them).
    perplexity : float, optional
        Calibrate each p to this perplexity (SNE family, NeRV).
    sigma : float, optional
        Or give it the fixed width exp(-d^2 / sigma^2) (Mbed).
    metric : str
        Input metric, or "precomputed".
    distances : object, optional
        With a ``pairwise_distances(X, Y)`` method: dissimilarities of new to
        training points in a learned metric (SNeRV's ``LearningMetric``); then
        ``data`` are the training data it is called with.
    alpha : float
        Output kernel H(tau) = (1 + alpha tau)^(-1/alpha), 0 the Gaussian.
    tradeoff : float
        NeRV's tradeoff (1 for the KL(P || Q) methods).
    input_precision : bool
        Use each new point's calibrated input precision in the output kernel
        (NeRV) instead of 1.
    """

    def __init__(self, data, embedding, *, n_neighbors, perplexity=None, sigma=None,
                 metric="euclidean", distances=None, alpha=0.0, tradeoff=1.0,
                 input_precision=False):
        self.data = data
        self.embedding = np.ascontiguousarray(embedding, dtype=np.float64)
        self.n_reference = self.embedding.shape[0]
        self.n_neighbors = int(min(n_neighbors, self.n_reference))
        self.perplexity = perplexity
        self.sigma = sigma
        self.metric = metric
        self.distances = distances
        self.alpha = float(alpha)
        self.tradeoff = float(tradeoff)
        self.input_precision = input_precision

    def with_perplexity(self, perplexity):
        """A copy whose new points' neighbourhoods are calibrated to ``perplexity``:
        over 3 * perplexity neighbours, or over all reference points where this
        one uses all of them (NeRV)."""
        placer = copy.copy(self)
        placer.perplexity = float(perplexity)
        if self.n_neighbors < self.n_reference:
            placer.n_neighbors = int(min(math.ceil(3 * perplexity), self.n_reference))
        return placer

    # -- input neighbourhoods ------------------------------------------------------------
    def neighbours(self, X):
        """Distances and indices (m, k) of each new point's nearest reference points.

        Exact: the dissimilarities to all reference points, a block of new points at
        a time (about ``NEIGHBOUR_BLOCK`` entries), then the k smallest of each row.
        """
        k, n = self.n_neighbors, self.n_reference
        rows = max(1, NEIGHBOUR_BLOCK // n)
        dist = np.empty((X.shape[0], k))
        idx = np.empty((X.shape[0], k), dtype=np.int64)
        for start in range(0, X.shape[0], rows):
            block = slice(start, start + rows)
            D = self._dissimilarities(X[block])
            if k < n:
                chosen = np.argpartition(D, k - 1, axis=1)[:, :k]
                D = np.take_along_axis(D, chosen, axis=1)
            else:
                chosen = np.broadcast_to(np.arange(n), D.shape)
            dist[block], idx[block] = D, chosen
        if self.metric == "euclidean" and self.distances is None:
            np.sqrt(np.maximum(dist, 0.0), out=dist)
        return dist, idx

    def _dissimilarities(self, X):
        """Rows of new points against all reference points (squared if Euclidean)."""
        if self.distances is not None:
            return self.distances.pairwise_distances(X, self.data)
        if self.metric == "precomputed":
            return X
        if self.metric == "euclidean" and (sp.issparse(X) or sp.issparse(self.data)):
            # ||x||^2 + ||r||^2 - 2 x.r over the stored entries; each entry is
            # summed in the same order whatever the other rows.
            return np.maximum(pairwise_distances(X, self.data, squared=True), 0.0)
        if self.metric == "euclidean":
            if getattr(self, "_data_t", None) is None:
                self._data_t = np.ascontiguousarray(self.data.T, dtype=np.float64)
            out = np.empty((X.shape[0], self._data_t.shape[1]))
            with _config.KERNEL_LOCK:
                cross_squared_distances(np.ascontiguousarray(X, dtype=np.float64), self._data_t,
                                        out)
            return out
        return pairwise_distances(X, self.data, metric=self.metric)

    def affinities(self, X):
        """p_{j|new} over each new point's reference neighbours.

        Returns
        -------
        indices : ndarray of int (m, k)
        P : ndarray (m, k)
            Rows summing to one.
        precision : ndarray (m,)
            The output kernel's b_i.
        """
        dist, idx = self.neighbours(X)
        if self.sigma is not None:
            P = fixed_width_rows(dist, self.sigma)
            beta = np.ones(P.shape[0])
        else:
            sq = np.ascontiguousarray(np.square(dist, dtype=np.float64))
            P, beta = calibrate(sq, self.perplexity, skip_diagonal=False)
        precision = beta if self.input_precision else np.ones(P.shape[0])
        return idx, P, precision

    # -- placement --------------------------------------------------------------------------
    def objective(self, X):
        """The :class:`~nbembed.objectives.placement.PlacementObjective` of new points ``X``."""
        idx, P, precision = self.affinities(X)
        return PlacementObjective(self.embedding, idx, P, precision, alpha=self.alpha,
                                  tradeoff=self.tradeoff)

    def transform(self, X):
        """Positions of the new points ``X`` (validated by the caller), shape (m, d).

        The points are placed a block at a time (k n_new of at most about
        ``NEIGHBOUR_BLOCK`` affinities), which bounds the memory and, the points
        being independent, changes no result.
        """
        tol = TOLERANCE * float(np.sqrt(np.mean(np.var(self.embedding, axis=0)))) or TOLERANCE
        Y = np.empty((X.shape[0], self.embedding.shape[1]))
        rows = max(1, NEIGHBOUR_BLOCK // self.n_neighbors)
        for start in range(0, X.shape[0], rows):
            objective = self.objective(X[start:start + rows])
            Y[start:start + rows] = place(objective, objective.start(), tol=tol).T
        return Y


def place(objective, Yt, *, max_iter=MAX_ITER, momentum=MOMENTUM, tol=TOLERANCE):
    """Minimize every point's term of ``objective`` from ``Yt`` (d, m), in place.

    Each point takes fixed-point steps -grad_i / (2 scale_i) with heavy-ball
    momentum; its velocity is dropped when its cost rose (O'Donoghue &
    Candes' function restart), and it stops once its step is shorter than
    ``tol``. A point's path depends on nothing but its own term.

    Returns
    -------
    Yt : ndarray (d, m)
    """
    m = Yt.shape[1]
    grad = np.zeros_like(Yt)
    velocity = np.zeros_like(Yt)
    previous = np.full(m, np.inf)
    active = np.ones(m, dtype=bool)
    for _ in range(max_iter):
        costs, scales = objective.point_costs(Yt, grad, active)
        rose = active & (costs > previous)
        velocity[:, rose] = 0.0
        previous = np.where(active, costs, previous)
        step = -grad[:, active] / (2.0 * np.maximum(scales[active], 1e-300))
        velocity[:, active] = momentum * velocity[:, active] + step
        Yt[:, active] += velocity[:, active]
        active &= np.sqrt(np.sum(velocity * velocity, axis=0)) >= tol
        if not active.any():
            break
    return Yt


def check_new_points(estimator, X):
    """``X`` as float64 (a sparse X as CSR, where the estimator takes sparse data)
    with the fitted number of features, or a clear error."""
    metric = getattr(estimator, "metric", None)
    sparse = sp.issparse(X)
    if not sparse and np.ndim(X) == 1:
        raise ValueError("Expected a 2-D array X (n_new, n_features), got a 1-D array. Reshape "
                         "your data: X.reshape(1, -1) for a single point.")
    # Dissimilarities to the training points (metric="precomputed") come dense.
    sparse_rows = estimator.accepts_sparse and metric != "precomputed"
    if sparse and sparse_rows:
        check_sparse_metric(X, metric)
    X = check_data(X, name="X", allow_sparse=sparse_rows)
    expected = estimator.n_features_in_
    if X.shape[1] != expected:
        what = (" (the dissimilarities to the training points)" if metric == "precomputed"
                else "")
        raise ValueError(f"X has {X.shape[1]} features, but {type(estimator).__name__} is "
                         f"expecting {expected} features as input{what}.")
    if metric == "cosine":
        check_cosine_rows(X)
    return X


def check_placement_perplexity(new_points, perplexity, estimator):
    """``new_points`` calibrated to a perplexity the caller gave, or a clear error."""
    if perplexity is None:
        return new_points
    name = type(estimator).__name__
    if new_points.perplexity is None:
        raise ValueError(f"{name} places new points with its fixed width sigma, not a "
                         f"perplexity; call transform(X) without perplexity.")
    perplexity = check_number(perplexity, "perplexity", low=1.0)
    if perplexity >= new_points.n_reference:
        raise ValueError(f"perplexity = {perplexity:g} is too large for the "
                         f"{new_points.n_reference} training points: it must be less than the "
                         f"number of training points. Use a smaller perplexity (5 to 50).")
    return new_points.with_perplexity(perplexity)


def perplexity_new_points(estimator, X, *, alpha):
    """:class:`NewPoints` of an SNE-family fit: p calibrated to the smaller of
    ``NEW_POINT_PERPLEXITY`` and the estimator's perplexity over 3 * perplexity
    neighbours, output kernel of tail ``alpha``."""
    from ._base import validate_input

    metric = estimator.metric
    X = validate_input(X, min_samples=4, metric=metric, sparse_rows=True)
    perplexity = min(NEW_POINT_PERPLEXITY, float(estimator.perplexity))
    return NewPoints(None if metric == "precomputed" else X, estimator.embedding_,
                     n_neighbors=math.ceil(3 * perplexity), perplexity=perplexity,
                     metric=metric, alpha=alpha)
