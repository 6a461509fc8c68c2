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
   a point whose cost rose, and keeps the position of lowest cost;
4. keeps the result inside the map's bounding box enlarged on every side by
   ``MAP_MARGIN`` times the map's largest extent.

A point's optimum can lie far outside the map, or at infinity: where its p is
split between clusters far apart in the map, a heavy-tailed q that is nearly
uniform over all reference points (far away) can match p better than any place
in the map; and NeRV gives a point far from the training data an output width
as wide as its input neighbourhood, wider than the whole map (such points
landed tens of map radii out). The box bounds that. ``transform`` also warns
about points far outside the training data: those whose nearest training point
is farther than any training point's ``REACH_NEIGHBORS``-th nearest neighbour
(over up to ``REACH_SAMPLE`` training points).

The points are independent of each other: the result for a point does not
depend on which others are placed with it, nor on the number of threads.
Cost: O(m n d) per iteration for m new points against n reference points
(the repulsion is exact over all reference points), plus the neighbour search.
Against a two-dimensional map of at least ``GRID_PLACEMENT_MIN_REFERENCE``
points with a heavy-tailed kernel (HSSNE, alpha > 0) the repulsion is read off
a grid computed once per map (:class:`~nbembed.objectives.placement.ReferenceField`):
O(m k) per iteration.
"""

from __future__ import annotations

import copy
import math
import warnings

import numpy as np
import scipy.sparse as sp

from .. import _config
from .._distances import pairwise_distances
from .._nearest_reference import ReferenceRows
from .._kernels.rows import cross_squared_distances
from .._validation import check_column_names, check_cosine_rows, check_data, \
    check_nonnegative, check_number, check_sparse_metric
from ..affinity.fixed_width import fixed_width_rows
from ..affinity.perplexity import calibrate
from ..objectives.placement import GridPlacementObjective, PlacementObjective, ReferenceField

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
#: A placed point stays inside the bounding box of the fitted map enlarged on
#: every side by this fraction of the map's largest extent. Of 1397 held-out
#: digits placed against 400 fitted ones, none landed more than 0.4 of the
#: extent outside the plain box (SNE; HSSNE, NeRV, SNeRV and Mbed 0.1 to 0.26).
MAP_MARGIN = 0.5
#: A new point whose nearest training point is farther than every training
#: point's REACH_NEIGHBORS-th nearest neighbour is far outside the training data.
REACH_NEIGHBORS = 15
#: Training points (evenly spaced) whose neighbours set that reach; all of them
#: up to this number. The search costs as much as placing as many new points.
REACH_SAMPLE = 500
#: Fewest reference points for which ``placement="auto"`` reads the repulsion off a
#: grid (where the map allows it: two dimensions, alpha > 0, tradeoff 1). Measured
#: (benchmarks/bench_placement_scale.py grid, 50-D mixture): the grid places rows
#: 5x to 25x faster from 10^3 to 10^5 reference points, and building it takes 0.2 to
#: 0.7 s, which at 10^4 points is paid back after about 800 rows.
GRID_PLACEMENT_MIN_REFERENCE = 10_000
PLACEMENTS = ("auto", "exact", "grid")


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
    reach : float, optional
        The distance beyond which a new point is far outside the training
        data (see :func:`training_reach`). Computed from ``data`` when first
        needed; give it where ``data`` is None (:func:`precomputed_reach`),
        or new points far outside go without a warning.
    placement : {"auto", "exact", "grid"}
        How the repulsion of the reference points is summed: over all of them,
        or read off a grid (two dimensions, alpha > 0, tradeoff 1 and no input
        precision only). "auto" takes the grid from
        ``GRID_PLACEMENT_MIN_REFERENCE`` reference points where it can.
    """

    def __init__(self, data, embedding, *, n_neighbors, perplexity=None, sigma=None,
                 metric="euclidean", distances=None, alpha=0.0, tradeoff=1.0,
                 input_precision=False, reach=None, placement="auto"):
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
        self.reach = reach
        if placement not in PLACEMENTS:
            raise ValueError(f"placement must be one of {', '.join(PLACEMENTS)}; got "
                             f"{placement!r}.")
        if placement == "grid" and not self._grid_possible():
            raise ValueError("placement='grid' needs a two-dimensional map with alpha > 0, "
                             "tradeoff 1 and no input precision; use 'exact'.")
        self.placement = placement

    #: Built on first use and left out of a pickle: the copies of the training
    #: data that the neighbour search uses (they would double a saved estimator
    #: or more), and the grid of the map's repulsion.
    CACHES = ("_data_t", "_rows", "_field")

    def __getstate__(self):
        state = self.__dict__.copy()
        for name in self.CACHES:
            state.pop(name, None)
        return state

    def __copy__(self):
        # A shallow copy (with_perplexity's) shares that copy instead of building another.
        placer = type(self).__new__(type(self))
        placer.__dict__.update(self.__dict__)
        return placer

    def with_perplexity(self, perplexity):
        """A copy whose new points' neighbourhoods are calibrated to ``perplexity``:
        over 3 * perplexity neighbours, or over all reference points where this
        one uses all of them (NeRV)."""
        placer = copy.copy(self)
        placer.reach = self.training_reach()
        placer.perplexity = float(perplexity)
        if self.n_neighbors < self.n_reference:
            placer.n_neighbors = int(min(math.ceil(3 * perplexity), self.n_reference))
        return placer

    # -- input neighbourhoods ------------------------------------------------------------
    def neighbours(self, X):
        """Distances and indices (m, k) of each new point's nearest reference points.

        Exact: the dissimilarities to all reference points, a block of new points at
        a time (about ``NEIGHBOUR_BLOCK`` entries), then the k smallest of each row.
        Dense Euclidean rows are proposed by a float32 product first and only the
        candidates measured exactly (:mod:`nbembed._nearest_reference`).
        """
        k, n = self.n_neighbors, self.n_reference
        rows = _block_rows(n)
        if k < n and self._squared and not (sp.issparse(X) or sp.issparse(self.data)):
            dist, idx = self._reference_rows().nearest(X, k, rows)
            return np.sqrt(np.maximum(dist, 0.0), out=dist), idx
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
        if self._squared:
            np.sqrt(np.maximum(dist, 0.0), out=dist)
        return dist, idx

    @property
    def _squared(self):
        """Whether :meth:`_dissimilarities` gives squared distances."""
        return self.metric == "euclidean" and self.distances is None

    def training_reach(self):
        """The distance beyond which a new point is far outside the training data.

        See :func:`training_reach`; computed on first use from the training
        data, or None where there are none (dissimilarities given without
        ``reach``).
        """
        if self.reach is None and self.data is not None:
            self.reach = training_reach(lambda chosen: self._input_distances(self.data[chosen]),
                                        self.n_reference)
        return self.reach

    def _input_distances(self, X):
        """Distances (not squared) of the rows of ``X`` to all training points in the
        input space :meth:`training_reach` measures: the metric's, or Euclidean
        ones where the distances are learned (SNeRV's learning metric is nearly
        zero inside class regions and far from all data)."""
        if self.distances is not None:
            return np.sqrt(self._squared_euclidean(X))
        D = self._dissimilarities(X)
        return np.sqrt(np.maximum(D, 0.0)) if self._squared else D

    def _nearest_distances(self, X, dist):
        """Each new point's distance to its nearest training point in that space,
        from its neighbours' distances ``dist`` where they are in it."""
        if self.distances is None:
            return dist.min(axis=1)
        rows = _block_rows(self.n_reference)
        return np.concatenate([self._input_distances(X[start:start + rows]).min(axis=1)
                               for start in range(0, X.shape[0], rows)])

    def bounds(self):
        """Lower and upper corner (d,) of the box new points are kept in: the map's
        bounding box enlarged on every side by ``MAP_MARGIN`` times its largest
        extent."""
        low, high = self.embedding.min(axis=0), self.embedding.max(axis=0)
        margin = MAP_MARGIN * float(np.max(high - low))
        return low - margin, high + margin

    def _dissimilarities(self, X):
        """Rows of new points against all reference points (squared if Euclidean)."""
        if self.distances is not None:
            return self.distances.pairwise_distances(X, self.data)
        if self.metric == "precomputed":
            return X
        if self.metric == "euclidean":
            return self._squared_euclidean(X)
        return pairwise_distances(X, self.data, metric=self.metric)

    def _reference_rows(self):
        """The training data prepared for the dense Euclidean neighbour search, built
        on first use."""
        if getattr(self, "_rows", None) is None:
            self._rows = ReferenceRows(self.data)
        return self._rows

    def _squared_euclidean(self, X):
        """Squared Euclidean distances of the rows of ``X`` to the training data."""
        if sp.issparse(X) or sp.issparse(self.data):
            # ||x||^2 + ||r||^2 - 2 x.r over the stored entries; each entry is
            # summed in the same order whatever the other rows.
            return np.maximum(pairwise_distances(X, self.data, squared=True), 0.0)
        if getattr(self, "_data_t", None) is None:
            self._data_t = np.ascontiguousarray(self.data.T, dtype=np.float64)
        out = np.empty((X.shape[0], self._data_t.shape[1]))
        with _config.KERNEL_LOCK:
            cross_squared_distances(np.ascontiguousarray(X, dtype=np.float64), self._data_t, out)
        return out

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
        return self._affinities(*self.neighbours(X))

    def _affinities(self, dist, idx):
        """:meth:`affinities` from the neighbours' distances and indices (m, k)."""
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
        return self._objective(*self.affinities(X))

    def _objective(self, idx, P, precision):
        if self.uses_grid:
            return GridPlacementObjective(self.embedding, idx, P, alpha=self.alpha,
                                          field=self.reference_field())
        return PlacementObjective(self.embedding, idx, P, precision, alpha=self.alpha,
                                  tradeoff=self.tradeoff)

    def _grid_possible(self):
        return (self.alpha > 0.0 and self.embedding.shape[1] == 2 and self.tradeoff == 1.0
                and not self.input_precision)

    @property
    def uses_grid(self):
        """Whether the repulsion is read off :meth:`reference_field` (bool)."""
        # Placers saved before the choice existed sum exactly.
        placement = getattr(self, "placement", "exact")
        if placement == "auto":
            return self._grid_possible() and self.n_reference >= GRID_PLACEMENT_MIN_REFERENCE
        return placement == "grid"

    def reference_field(self):
        """The :class:`~nbembed.objectives.placement.ReferenceField` of the map over
        :meth:`bounds`, built on first use."""
        if getattr(self, "_field", None) is None:
            self._field = ReferenceField(self.embedding, self.alpha, *self.bounds())
        return self._field

    def transform(self, X):
        """Positions of the new points ``X`` (validated by the caller), shape (m, d),
        as :meth:`place` finds them.

        Warns
        -----
        UserWarning
            When some new points are far outside the training data (their
            nearest training point farther than :meth:`training_reach`),
            saying how many.
        """
        Y, n_far = self.place(X)
        if n_far:
            k = min(REACH_NEIGHBORS, self.n_reference - 1)
            warnings.warn(
                f"{n_far} of the {X.shape[0]} new points lie far outside the training data: "
                f"each is farther from every training point than any training point is from "
                f"the farthest of its {k} nearest neighbours ({self.training_reach():.3g}). "
                f"Their positions say little; "
                f"they are kept inside the map's bounding box enlarged by {MAP_MARGIN:g} "
                f"of its extent on each side. Check those points (scale, units, features), "
                f"or fit on data that covers them.", UserWarning, stacklevel=4)
        return Y

    def place(self, X):
        """Positions of the new points ``X`` (validated by the caller), and how
        many of them are far outside the training data (see :meth:`transform`).

        The points are placed a block at a time (k n_new of at most about
        ``NEIGHBOUR_BLOCK`` affinities), which bounds the memory and, the points
        being independent, changes no result. Each lands inside :meth:`bounds`.

        Returns
        -------
        Y : ndarray (m, d)
        n_far : int
        """
        tol = TOLERANCE * float(np.sqrt(np.mean(np.var(self.embedding, axis=0)))) or TOLERANCE
        Y = np.empty((X.shape[0], self.embedding.shape[1]))
        rows = max(1, NEIGHBOUR_BLOCK // self.n_neighbors)
        reach = self.training_reach()
        n_far = 0
        for start in range(0, X.shape[0], rows):
            dist, idx = self.neighbours(X[start:start + rows])
            if reach is not None:
                nearest = self._nearest_distances(X[start:start + rows], dist)
                n_far += int(np.count_nonzero(nearest > reach))
            objective = self._objective(*self._affinities(dist, idx))
            Y[start:start + rows] = place(objective, objective.start(), tol=tol).T
        np.clip(Y, *self.bounds(), out=Y)
        return Y, n_far


def _block_rows(n):
    """Rows of an (rows, n) block of dissimilarities: about ``NEIGHBOUR_BLOCK``
    entries, and never more than ``MAX_DENSE_BYTES`` allows (at least one row)."""
    return max(1, min(NEIGHBOUR_BLOCK, _config.MAX_DENSE_BYTES // 8) // n)


def _reach_sample(n):
    """Evenly spaced indices of at most ``REACH_SAMPLE`` of n training points."""
    return np.unique(np.linspace(0, n - 1, min(n, REACH_SAMPLE)).round().astype(np.int64))


def training_reach(rows, n):
    """The largest distance from a training point to its ``REACH_NEIGHBORS``-th
    nearest other training point, over ``REACH_SAMPLE`` evenly spaced ones at most.

    A new point whose nearest training point is farther than that is farther
    from the training data than their neighbourhoods reach.

    Parameters
    ----------
    rows : callable
        ``rows(indices)``: the distances (not squared) of those training points
        to all n of them, shape (len(indices), n).
    n : int
        Number of training points (at least 2).

    Returns
    -------
    float
    """
    k = min(REACH_NEIGHBORS, n - 1)
    sample = _reach_sample(n)
    block = _block_rows(n)
    reach = 0.0
    for start in range(0, sample.size, block):
        chosen = sample[start:start + block]
        D = np.array(rows(chosen), dtype=np.float64)
        D[np.arange(chosen.size), chosen] = np.inf
        kth = np.partition(D, k - 1, axis=1)[:, k - 1]
        reach = max(reach, float(kth.max()))
    return reach


def precomputed_reach(D):
    """:func:`training_reach` of a square matrix of dissimilarities (dense or sparse,
    validated), for :class:`NewPoints` without training data."""
    def rows(chosen):
        block = D[chosen]
        return block.toarray() if sp.issparse(block) else block
    return training_reach(rows, D.shape[0])


def place(objective, Yt, *, max_iter=MAX_ITER, momentum=MOMENTUM, tol=TOLERANCE):
    """Minimize every point's term of ``objective`` from ``Yt`` (d, m), in place.

    Each point takes fixed-point steps -grad_i / (2 scale_i) with heavy-ball
    momentum; its velocity is dropped when its cost rose (O'Donoghue &
    Candes' function restart), and it stops once its step is shorter than
    ``tol``. Each point ends at the position of lowest cost on its path: where
    its attraction is weak (between clusters) a step can overshoot far. A
    point's path depends on nothing but its own term.

    Returns
    -------
    Yt : ndarray (d, m)
    """
    m = Yt.shape[1]
    grad = np.zeros_like(Yt)
    velocity = np.zeros_like(Yt)
    previous = np.full(m, np.inf)
    best = Yt.copy()
    best_cost = np.full(m, np.inf)
    active = np.ones(m, dtype=bool)
    for _ in range(max_iter):
        costs, scales = objective.point_costs(Yt, grad, active)
        better = active & (costs < best_cost)
        best[:, better] = Yt[:, better]
        best_cost[better] = costs[better]
        rose = active & (costs > previous)
        velocity[:, rose] = 0.0
        previous = np.where(active, costs, previous)
        step = -grad[:, active] / (2.0 * np.maximum(scales[active], 1e-300))
        velocity[:, active] = momentum * velocity[:, active] + step
        Yt[:, active] += velocity[:, active]
        objective.project(Yt)
        active &= np.sqrt(np.sum(velocity * velocity, axis=0)) >= tol
        if not active.any():
            break
    costs, _ = objective.point_costs(Yt, grad)
    worse = ~(costs <= best_cost)
    Yt[:, worse] = best[:, worse]
    return Yt


def check_new_points(estimator, X):
    """``X`` as float64 (a sparse X as CSR, where the estimator takes sparse data)
    with the fitted number of features, or a clear error."""
    metric = getattr(estimator, "metric", None)
    check_column_names(estimator, X)
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
    if metric == "precomputed":
        check_nonnegative(X, name="X (dissimilarities of the new points to the training "
                                  "points)",
                          fix="fit refuses them too: pass distances computed by a metric "
                              "(for example sklearn.metrics.pairwise_distances(X_new, X_train)), "
                              "or clip rounding errors below zero with np.maximum(X, 0).")
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
                     metric=metric, alpha=alpha,
                     reach=precomputed_reach(X) if metric == "precomputed" else None)
