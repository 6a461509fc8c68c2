"""Approximate k nearest neighbours of dense rows in Euclidean distance, by
nearest-neighbour descent from a random projection forest
(:mod:`nbembed._kernels.descent`)."""

from __future__ import annotations

import numba
import numpy as np

from . import _config
from ._kernels import descent

#: Random projection trees whose leaves start the search.
N_TREES = 48
#: Points per leaf at most: three times the neighbours sought, within these bounds.
LEAF_MIN = 64
LEAF_MAX = 256
#: Candidates per point and round (new and old each), as in Dong et al.'s sampling.
MAX_CANDIDATES = 30
#: Rounds of descent at most.
N_ROUNDS = 8
#: Stop when a round replaces fewer than this share of the n k heap entries.
DELTA = 0.005
#: Points whose proposals are gathered before they are applied.
BLOCK = 1024
#: Proposals are applied in groups of 2^ROWS_SHIFT target rows, a group per thread.
ROWS_SHIFT = 10


def descent_neighbors(X, k, seed, *, n_trees=N_TREES, max_candidates=MAX_CANDIDATES,
                      n_rounds=N_ROUNDS, delta=DELTA, leaf_size=None):
    """The approximate k nearest neighbours of every row of ``X``, itself excluded.

    Parameters
    ----------
    X : ndarray (n, d)
        Dense rows, n > k.
    k : int
    seed : int
        Seed of the trees' hyperplanes and of the candidates' sampling; the
        result depends on it and on ``X`` only, not on the number of threads.

    Returns
    -------
    dist : ndarray (n, k) float64
        Euclidean distances, measured in float64, nearest first.
    idx : ndarray (n, k) int64
        The neighbours' rows; equal distances in the order of rows.
    """
    X32 = np.ascontiguousarray(X, dtype=np.float32)
    n = X32.shape[0]
    if n <= k:
        raise ValueError(f"{k} neighbours need more than {k} points; got {n}.")
    seed = int(seed) & 0x7FFFFFFFFFFFFFFF
    leaf_size = min(LEAF_MAX, max(LEAF_MIN, 3 * (k + 1))) if leaf_size is None else leaf_size
    dist = np.full((n, k), np.inf, dtype=np.float32)
    idx = np.full((n, k), -1, dtype=np.int32)
    flag = np.zeros((n, k), dtype=np.uint8)
    batch = max(1, min(n_trees, numba.get_num_threads()))
    orders = np.empty((batch, n), dtype=np.int32)
    starts = np.empty((batch, n + 1), dtype=np.int64)
    n_leaves = np.empty(batch, dtype=np.int64)
    with _config.KERNEL_LOCK:
        for first in range(0, n_trees, batch):
            count = min(batch, n_trees - first)
            descent.grow_forest(X32, seed, first, leaf_size, orders[:count], starts[:count],
                                n_leaves[:count])
            for t in range(count):
                descent.join_leaves(X32, orders[t], starts[t], n_leaves[t], dist, idx, flag)
        del orders, starts
        descent.fill_random(X32, dist, idx, flag, seed)
        # each pair of a point's candidates may push into both heaps
        size = BLOCK * 2 * (max_candidates * (max_candidates - 1) // 2 + max_candidates ** 2)
        buffers = [np.empty(size, dtype=t) for t in (np.int32, np.int32, np.float32) * 2]
        counts = np.empty(BLOCK, dtype=np.int64)
        for round_ in range(n_rounds):
            changed = descent.descent_round(
                X32, dist, idx, flag, seed, round_, max_candidates, BLOCK, ROWS_SHIFT,
                *buffers[:3], counts, *buffers[3:])
            if changed <= delta * n * k:
                break
        del buffers
        del dist
        out = np.empty((n, k), dtype=np.float64)
        descent.measured(X32 if X.dtype == np.float32 else np.ascontiguousarray(X, np.float64),
                         idx, out)
        descent.sorted_rows(out, idx)
    return out, idx.astype(np.int64)
