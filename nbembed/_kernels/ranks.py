"""Rank penalties of trustworthiness and continuity, without the GIL.

For neighbour lists found in one space and distances in the other,

    penalty = sum_i sum_{j in nbrs[i]} max(r(i, j) - k, 0),
    r(i, j) = 1 + #{l != i : d(i, l) < d(i, j)},

so points at tied distances share the best rank (as in
:func:`nbembed.metrics._rank_penalty`, the NumPy reference). The Explorer's
read-outs compute them in a thread beside the optimizer; these kernels hold
no GIL (``nogil``) and run on one thread, so the optimizer's steps neither wait
for the interpreter nor share their worker threads with them.
"""

import math

import numpy as np
from numba import njit

from .._config import JIT
from .rows import row_squared_distances


@njit(inline="always", **JIT)
def _row_penalty(row, neighbours, k):
    """sum over j in ``neighbours`` of max(r - k, 0), ranks among ``row`` (the
    point itself already out of the count: its entry is infinite)."""
    total = 0
    for a in range(neighbours.size):
        threshold = row[neighbours[a]]
        rank = 1
        for entry in row:
            if entry < threshold:
                rank += 1
        if rank > k:
            total += rank - k
    return total


@njit(**JIT)
def distance_rank_penalty(D, nbrs, k):
    """The penalty with ranks taken in a dissimilarity matrix ``D`` (m, m).

    Parameters
    ----------
    D : ndarray (m, m)
    nbrs : ndarray of int (m, k')
        Each point's neighbours in the other space.
    k : int

    Returns
    -------
    int
    """
    m = D.shape[0]
    row = np.empty(m)
    total = 0
    for i in range(m):
        row[:] = D[i]
        row[i] = math.inf
        total += _row_penalty(row, nbrs[i], k)
    return total


@njit(**JIT)
def embedding_rank_penalty(Yt, nbrs, k):
    """The penalty with ranks taken by Euclidean distance between the columns
    of ``Yt`` (d, m) (squared distances: the same order)."""
    m = Yt.shape[1]
    row = np.empty(m)
    total = 0
    for i in range(m):
        row_squared_distances(Yt, i, row, math.inf)
        total += _row_penalty(row, nbrs[i], k)
    return total
