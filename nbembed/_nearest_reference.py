"""The k nearest reference rows of new rows, exactly, at the speed of a float32 product.

Placing a new row needs its k nearest rows among the n reference (training)
rows. Summing every squared distance in float64, feature by feature, costs
O(n D) slow operations a row; a float32 matrix product (BLAS, vectorized and
multithreaded) is many times faster but rounds differently with the number of
rows in the batch, and a row's result must not depend on its batch.

So the product only proposes. Each row's squared distances are estimated as
||x - mu||^2 + ||r - mu||^2 - 2 (x - mu).(r - mu) in float32, mu being the
reference mean (centring keeps the norms, and so the rounding, small), each
with a bound on its error (:func:`error_bound_factors`). Every reference row
whose lower bound is at most the k-th smallest upper bound could be among the
k nearest, and the k nearest are all among them; one pass over the row finds
them, with a heap of the k smallest upper bounds seen so far. For those candidates alone
the distance is summed again exactly as
:func:`~nbembed._kernels.rows.cross_squared_distances` sums it (float64,
feature by feature, in a fixed order), and the k smallest are kept, ties
broken by index. The result depends on the row alone, whatever the batch and
the number of threads.
"""

from __future__ import annotations

import numpy as np
from numba import get_num_threads, njit, prange

from . import _config
from ._config import JIT, JIT_PARALLEL

#: Unit roundoff of float32 and float64.
_U32, _U64 = 2.0 ** -24, 2.0 ** -53


def error_bound_factors(n_features):
    """(c1, c2): the float32 estimate of ||x - r||^2 is within
    c1 |x| |r| + c2 (|x| + |r|)^2 of the exact float64 sum, |x| and |r| the
    norms of the centred rows.

    The product's rounding is at most gamma_D |x| |r| (gamma_D = D u / (1 - D u),
    any summation order), rounding the centred rows to float32 moves the
    distance by at most about 2 u (|x| + |r|)^2 and the norms by 2 u |x|^2
    and 2 u |r|^2; the float64 sums, the centring and the estimate's own
    arithmetic add (D + 10) u64 (|x| + |r|)^2. Both factors are doubled.
    """
    gamma = n_features * _U32 / (1.0 - n_features * _U32)
    return 2.0 * 2.01 * gamma, 2.0 * (4.01 * _U32 + (n_features + 10) * _U64)


class ReferenceRows:
    """Dense reference rows prepared for :meth:`nearest`.

    Parameters
    ----------
    data : ndarray (n, D)
        The reference rows (float64).
    data_t : ndarray (D, n), optional
        Their transpose, C-contiguous float64, if the caller has it already.
    """

    def __init__(self, data, data_t=None):
        data = np.asarray(data, dtype=np.float64)
        self.data_t = (np.ascontiguousarray(data.T) if data_t is None else data_t)
        self.mean = data.mean(axis=0)
        centred = data - self.mean
        self.norms = np.sqrt(np.einsum("ij,ij->i", centred, centred))
        with np.errstate(over="ignore"):
            self.centred32 = np.ascontiguousarray(centred, dtype=np.float32)
        self._finite = bool(np.isfinite(self.norms).all() and np.isfinite(self.centred32).all())
        self.c1, self.c2 = error_bound_factors(data.shape[1])

    def nearest(self, X, k, block_rows):
        """Squared distances and indices (m, k) of each row's k nearest reference rows,
        nearest first (ties by index).

        Parameters
        ----------
        X : ndarray (m, D), float64
        k : int
            At most the number of reference rows.
        block_rows : int
            Rows estimated at a time (the float32 block is block_rows x n).
        """
        X = np.ascontiguousarray(X, dtype=np.float64)
        m = X.shape[0]
        dist = np.empty((m, k))
        idx = np.empty((m, k), dtype=np.int64)
        for start in range(0, m, block_rows):
            rows = slice(start, start + block_rows)
            centred = X[rows] - self.mean
            norms = np.sqrt(np.einsum("ij,ij->i", centred, centred))
            with np.errstate(over="ignore", invalid="ignore"):
                products = centred.astype(np.float32) @ self.centred32.T
                # Beyond float32's range (or float64's, for the norms) the estimates
                # say nothing: such a row measures every reference row exactly.
                unbounded = ~(np.isfinite(products).all(axis=1) & np.isfinite(norms))
            if not self._finite:
                unbounded[:] = True
            with _config.KERNEL_LOCK:
                _nearest_from_products(products, norms, self.norms, self.c1, self.c2, unbounded,
                                       X[rows], self.data_t, dist[rows], idx[rows],
                                       4 * get_num_threads())
        return dist, idx


@njit(**JIT)
def _heap_push(heap, size, value):
    """Add ``value`` to the max-heap ``heap[:size]`` (which has room for it)."""
    child = size
    heap[child] = value
    while child > 0:
        parent = (child - 1) // 2
        if heap[parent] >= heap[child]:
            break
        heap[parent], heap[child] = heap[child], heap[parent]
        child = parent


@njit(**JIT)
def _heap_replace_top(heap, size, value):
    """Replace the largest of the max-heap ``heap[:size]`` by ``value``."""
    heap[0] = value
    parent = 0
    while True:
        child = 2 * parent + 1
        if child >= size:
            break
        if child + 1 < size and heap[child + 1] > heap[child]:
            child += 1
        if heap[parent] >= heap[child]:
            break
        heap[parent], heap[child] = heap[child], heap[parent]
        parent = child


@njit(**JIT_PARALLEL)
def _nearest_from_products(products, x_norms, r_norms, c1, c2, unbounded, X, Rt, dist, idx,
                           n_chunks):
    """:meth:`ReferenceRows.nearest` of one block, from its float32 products (m, n);
    rows marked ``unbounded`` measure every reference row exactly."""
    m, n = products.shape
    k = dist.shape[1]
    n_features = Rt.shape[0]
    per_chunk = (m + n_chunks - 1) // n_chunks
    for chunk in prange(n_chunks):
        largest = np.empty(k)  # max-heap: the k smallest upper bounds so far
        lower = np.empty(n)
        candidates = np.empty(n, dtype=np.int64)
        exact = np.empty(n)
        for i in range(chunk * per_chunk, min(m, (chunk + 1) * per_chunk)):
            count = 0
            if not unbounded[i]:
                # One pass: the k-th smallest upper bound so far only falls, so a row
                # whose lower bound exceeds it now can never be among the k nearest.
                a = x_norms[i]
                size = 0
                for j in range(n):
                    b = r_norms[j]
                    estimate = a * a + b * b - 2.0 * np.float64(products[i, j])
                    bound = c1 * a * b + c2 * (a + b) * (a + b)
                    if size < k:
                        _heap_push(largest, size, estimate + bound)
                        size += 1
                    elif estimate + bound < largest[0]:
                        _heap_replace_top(largest, k, estimate + bound)
                    if size < k or estimate - bound <= largest[0]:
                        candidates[count] = j
                        lower[count] = estimate - bound
                        count += 1
                threshold = largest[0]
                kept = 0
                for c in range(count):
                    if lower[c] <= threshold:
                        candidates[kept] = candidates[c]
                        kept += 1
                count = kept
            if count < k:  # unbounded (or, were the bounds ever wrong, at least exact)
                for j in range(n):
                    candidates[j] = j
                count = n
            # Summed as cross_squared_distances sums: over the features in order.
            for c in range(count):
                exact[c] = 0.0
            for f in range(n_features):
                value = X[i, f]
                row = Rt[f]
                for c in range(count):
                    diff = value - row[candidates[c]]
                    exact[c] += diff * diff
            order = np.argsort(exact[:count], kind="mergesort")
            for c in range(k):
                dist[i, c] = exact[order[c]]
                idx[i, c] = candidates[order[c]]
