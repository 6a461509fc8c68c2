"""The k nearest reference rows of new rows, exactly, at the speed of a float32 product.

Placing a new row needs its k nearest rows among the n reference (training)
rows, and a k-nearest-neighbour affinity needs every row's nearest rows among
the rows themselves. Summing every squared distance in float64, feature by
feature, costs O(n D) slow operations a row; a float32 matrix product (BLAS,
vectorized) is many times faster but rounds differently with the number of
rows in the batch, and a row's result must not depend on its batch.

So the product only proposes. The rows are centred on the reference mean mu
and scaled by the largest reference norm (centring keeps the norms, and so the
rounding, small; scaling keeps float32 from overflowing). Each row's squared
distances are estimated as ||x||^2 + (||r||^2 - 2 x.r), the bracket in float32,
each with a bound on its error (:func:`error_bound_factors`). Every reference
row whose lower bound is at most the k-th smallest upper bound could be among
the k nearest, and the k nearest are all among them; one pass over the row
finds them (:func:`nbembed._kernels.nearest.nearest_rows`). For those
candidates alone the distance is summed again exactly as
:func:`~nbembed._kernels.rows.cross_squared_distances` sums it (float64,
feature by feature, in a fixed order), and the k smallest are kept, ties
broken by index. The result depends on the row alone, whatever the batch and
the number of threads.

Blocks of rows are searched by one worker thread each, every worker with a
single-threaded BLAS: one block's product and its scan then stay on one core
and in its caches, where a multithreaded product followed by a parallel scan
moved every product between the cores.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import get_num_threads

from ._kernels.nearest import nearest_rows

#: Unit roundoff of float32 and float64.
_U32, _U64 = 2.0 ** -24, 2.0 ** -53

#: Largest (||x|| + ||r||)^2, in units of the largest reference norm, for which the
#: float32 estimates cannot overflow; a row beyond it is measured exactly.
_MAX_SCALED_SQUARE = 1e36

#: Entries of each worker's float32 block of products (64 MiB).
BLOCK_ENTRIES = 2 ** 24
#: Rows of a block at least and at most: fewer rows make BLAS repack the
#: reference rows for too little work, more only take memory.
MIN_BLOCK_ROWS, MAX_BLOCK_ROWS = 16, 256


def error_bound_factors(n_features):
    """(c1, c2, c3): the estimate ||x||^2 + fl32(||r||^2 - 2 x.r) of ||x - r||^2,
    in the centred and scaled rows, is within c1 |x| |r| + c2 (|x| + |r|)^2 + c3
    of the exact float64 sum, |x| and |r| the norms of those rows.

    The product's rounding is at most gamma_D |x| |r| (gamma_D = D u / (1 - D u),
    any summation order); rounding the rows to float32 moves the distance by at
    most about 2 u (|x| + |r|)^2 and ||r||^2 by u |r|^2; the float32 subtraction
    and doubling add at most 3 u (|x| + |r|)^2; the float64 sums, the centring,
    the scaling and the estimate's own arithmetic add (D + 12) u64 (|x| + |r|)^2.
    c3 covers coordinates so small that float32 holds them with an absolute
    rather than a relative error. All three are doubled.
    """
    gamma = n_features * _U32 / (1.0 - n_features * _U32)
    c1 = 2.0 * 2.01 * gamma
    c2 = 2.0 * (7.01 * _U32 + (n_features + 12) * _U64)
    c3 = 2.0 * (n_features + 2) * 2.0 ** -120
    return c1, c2, c3


def default_block_rows(n_reference):
    """Rows of a block of products against ``n_reference`` rows."""
    return int(min(MAX_BLOCK_ROWS, max(MIN_BLOCK_ROWS, BLOCK_ENTRIES // max(n_reference, 1))))


class ReferenceRows:
    """Dense reference rows prepared for :meth:`nearest`.

    Parameters
    ----------
    data : ndarray (n, D)
        The reference rows (float64).
    """

    def __init__(self, data):
        self.data = data = np.ascontiguousarray(data, dtype=np.float64)
        self.mean = data.mean(axis=0)
        centred = data - self.mean
        norms = np.sqrt(np.einsum("ij,ij->i", centred, centred))
        largest = float(norms.max()) if norms.size else 0.0
        # Reference rows beyond float64's range leave no scale: every row is
        # then measured exactly.
        self._finite = bool(np.isfinite(largest))
        self.scale = 1.0 / largest if self._finite and largest > 0 else 1.0
        centred *= self.scale
        self.norms = norms * self.scale
        with np.errstate(over="ignore", invalid="ignore"):
            self.centred32 = np.ascontiguousarray(centred, dtype=np.float32)
            self.sq32 = np.square(self.norms).astype(np.float32)
        self.c1, self.c2, self.c3 = error_bound_factors(data.shape[1])

    def nearest(self, X, k, block_rows=None):
        """Squared distances and indices (m, k) of each row's k nearest reference rows,
        nearest first (ties by index).

        Parameters
        ----------
        X : ndarray (m, D), float64
        k : int
            At most the number of reference rows.
        block_rows : int, optional
            Rows estimated at a time (the float32 block is block_rows x n);
            default :func:`default_block_rows` of the reference rows.
        """
        X = np.ascontiguousarray(X, dtype=np.float64)
        m = X.shape[0]
        dist = np.empty((m, k))
        idx = np.empty((m, k), dtype=np.int64)
        if block_rows is None:
            block_rows = default_block_rows(self.centred32.shape[0])

        def search(start):
            rows = slice(start, start + block_rows)
            centred = (X[rows] - self.mean) * self.scale
            norms = np.sqrt(np.einsum("ij,ij->i", centred, centred))
            with np.errstate(over="ignore", invalid="ignore"):
                bounded = self._finite & ((norms + 1.0) ** 2 <= _MAX_SCALED_SQUARE)
                centred[~bounded] = 0.0  # measured exactly; kept out of the product
                products = centred.astype(np.float32) @ self.centred32.T
            nearest_rows(products, self.sq32, self.norms, norms, bounded, self.c1, self.c2,
                         self.c3, X[rows], self.data, dist[rows], idx[rows])

        starts = range(0, m, block_rows)
        workers = min(get_num_threads(), len(starts))
        if workers <= 1:
            for start in starts:
                search(start)
            return dist, idx
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1, user_api="blas"), ThreadPoolExecutor(workers) as pool:
            for _ in pool.map(search, starts):
                pass
        return dist, idx
