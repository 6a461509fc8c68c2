"""Live quality read-outs of a running embedding (``Explorer.quality``).

The scores are computed in the worker thread between two step calls, on a
fixed random sample of at most :data:`SAMPLE_SIZE` points, so that their cost
does not grow with the number of points:

* trustworthiness and continuity (:func:`nbembed.metrics.trustworthiness`,
  :func:`nbembed.metrics.continuity`, ``k =`` :data:`K`) *within the sample*:
  the sample is treated as the whole data set, so neighbours and ranks are
  taken among sample points only, in the input space and in the embedding;
* the leave-one-out 1-NN accuracy of the labelled sample points in the
  embedding (``1 -`` :func:`nbembed.metrics.knn_error`);
* the run's last recorded cost.

The input-space distances and neighbours of the sample are computed once, at
the first update. When all points fit in the sample the scores equal those of
:mod:`nbembed.metrics` on the whole embedding.
"""

from __future__ import annotations

import math
import time

import numpy as np
import scipy.sparse as sp

from .._distances import pairwise_distances
from .._validation import check_data
from .._kernels.ranks import distance_rank_penalty, embedding_rank_penalty
from ..metrics import _neighbours, _trust_from_penalty, knn_error
from .arguments import take_rows

#: Most points the scores are computed on.
SAMPLE_SIZE = 2000
#: Neighbourhood size of trustworthiness and continuity.
K = 10
#: Shortest time between two updates while the run is stepping, in seconds.
MIN_INTERVAL = 0.5
#: The time between two updates is at least this many times the last update's
#: duration, so the read-outs take at most 1 / (1 + BUDGET_FACTOR) of the worker's time.
BUDGET_FACTOR = 4.0
#: Values kept per score for the sparklines.
HISTORY = 120
#: The scores, in the order they are shown.
SCORES = ("cost", "trustworthiness", "continuity", "knn_accuracy")


class QualityMonitor:
    """Computes the read-outs of one data set on a fixed sample of its points.

    Parameters
    ----------
    X : array-like or sparse matrix (n_samples, n_features), or (n_samples, n_samples)
        The input data (distances when ``metric="precomputed"``).
    metric : str, default "euclidean"
        The input-space metric.
    sample_size : int, default SAMPLE_SIZE
    seed : int, default 0
        Seed of the sample.

    Attributes
    ----------
    sample : ndarray of int64
        The sorted indices of the sample points.
    values : dict
        The last read-outs ({} before the first update).
    """

    def __init__(self, X, metric="euclidean", sample_size=SAMPLE_SIZE, seed=0):
        n = X.shape[0] if hasattr(X, "shape") else len(X)
        self._X = X
        self.metric = metric if isinstance(metric, str) else "euclidean"
        if n <= sample_size:
            self.sample = np.arange(n, dtype=np.int64)
        else:
            rng = np.random.default_rng(seed)
            self.sample = np.sort(rng.choice(n, sample_size, replace=False)).astype(np.int64)
        self._input = None  # (distances, neighbours) of the sample, once computed
        self._duration = 0.0
        self.reset()

    def reset(self):
        """Forget the history (a new run starts); the sample and its input
        neighbours are kept."""
        self._history = {name: [] for name in (*SCORES, "iteration")}
        self._last_time = -math.inf
        self._last_state = None
        self.values = {}

    @property
    def k(self):
        """The neighbourhood size, or None when the sample is too small (k < m / 2)."""
        return K if K < len(self.sample) / 2 else None

    def _input_space(self):
        if self._input is None:
            sample = self.sample
            if self.metric == "precomputed":
                rows = take_rows(self._X, sample)
                rows = rows.toarray() if sp.issparse(rows) else np.asarray(rows)
                D = check_data(rows[:, sample], name="X")
                nbrs = _neighbours(D, self.k, "precomputed") if self.k else None
            else:
                Xs = check_data(take_rows(self._X, sample), name="X", allow_sparse=True)
                D = pairwise_distances(Xs, metric=self.metric)
                nbrs = _neighbours(Xs, self.k, self.metric) if self.k else None
            nbrs = None if nbrs is None else np.ascontiguousarray(nbrs, dtype=np.int64)
            self._input = (np.ascontiguousarray(D, dtype=np.float64), nbrs)
        return self._input

    def scores(self, Y, labels=None, cost=None):
        """The read-outs of embedding ``Y`` (all points) and ``labels`` (-1: none).

        Returns
        -------
        dict
            ``cost``, ``trustworthiness``, ``continuity`` and ``knn_accuracy``;
            None for a score that cannot be computed (no labels, too few points).
        """
        Ys = np.asarray(Y, dtype=np.float64)[self.sample]
        out = dict.fromkeys(SCORES)
        out["cost"] = None if cost is None or not math.isfinite(cost) else float(cost)
        k = self.k
        if k is not None and np.all(np.isfinite(Ys)):
            D, in_nbrs = self._input_space()
            m = len(self.sample)
            out_nbrs = np.ascontiguousarray(_neighbours(Ys, k), dtype=np.int64)
            out["trustworthiness"] = _trust_from_penalty(
                distance_rank_penalty(D, out_nbrs, k), m, k)
            out["continuity"] = _trust_from_penalty(
                embedding_rank_penalty(np.ascontiguousarray(Ys.T), in_nbrs, k), m, k)
        if labels is not None and np.all(np.isfinite(Ys)):
            ls = np.asarray(labels)[self.sample]
            if np.count_nonzero(ls != -1) >= 2:
                out["knn_accuracy"] = 1.0 - knn_error(Ys, ls, k=1)
        return out

    def due(self, iteration, now=None, *, idle=False, state=None):
        """Whether an update at ``iteration`` is due: the iteration or ``state``
        changed and (unless the worker is ``idle``) the time since the last one is
        long enough.

        ``state`` is anything comparable that says the embedding may have changed
        without an iteration (a spectral run solved again for a new parameter).
        """
        if (iteration, state) == self._last_state:
            return False
        now = time.monotonic() if now is None else now
        return idle or now - self._last_time >= max(MIN_INTERVAL, BUDGET_FACTOR * self._duration)

    def update(self, Y, iteration, labels=None, cost=None, state=None):
        """Compute the scores, add them to the history and return the read-outs
        (the scores, ``iteration``, ``k``, ``sample_size`` and ``history``),
        also kept as ``values``; ``state`` as in :meth:`due`."""
        start = time.monotonic()
        scores = self.scores(Y, labels, cost)
        self._duration = time.monotonic() - start
        self._last_time, self._last_state = start, (iteration, state)
        for name, value in {**scores, "iteration": iteration}.items():
            self._history[name] = (self._history[name] + [value])[-HISTORY:]
        self.values = {**scores, "iteration": int(iteration), "k": self.k,
                       "sample_size": len(self.sample),
                       "history": {name: list(v) for name, v in self._history.items()}}
        return self.values
