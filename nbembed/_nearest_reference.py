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
the k nearest, and the k nearest are all among them; two passes over the row
find them (:func:`nbembed._kernels.nearest.nearest_rows`). For those
candidates alone the distance is summed again exactly as
:func:`~nbembed._kernels.rows.cross_squared_distances` sums it (float64,
feature by feature, in a fixed order), and the k smallest are kept, ties
broken by index. The result depends on the row alone, whatever the batch and
the number of threads.

Most reference rows are far from any given row, and the product need not
reach them. The reference rows are cut into leaves of at most ``LEAF_SIZE``
neighbouring rows (cut along principal directions, :func:`leaf_order`),
each with its centroid and radius. For a row x, the triangle inequality bounds
every distance to a leaf's rows by ||x - c|| -/+ r; counting rows of the
leaves in order of their upper bounds gives a distance U within which at least
k rows lie, and a leaf whose lower bound exceeds U holds none of the k nearest
(not even a tie). New rows are searched in blocks of rows that share their
nearest leaf (the reference rows themselves: the rows of a leaf), and each
block's product covers only the leaves some row of it may need. The same test
for a ball around the whole block first keeps the candidate leaves, so that
the rows' own bounds cost O(m L') rather than O(m L) for L leaves (at 150 000
rows in 2-D they had cost more than the search itself). On clustered data and
on manifolds this skips most of the product; on data whose distances all look
alike it skips nothing and costs little.

Blocks of rows are searched by one worker thread each, every worker with a
single-threaded BLAS: one block's product and its scan then stay on one core
and in its caches, where a multithreaded product followed by a parallel scan
moved every product between the cores.
"""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import get_num_threads

from ._kernels.nearest import nearest_rows

#: Unit roundoff of float32 and float64.
_U32, _U64 = 2.0 ** -24, 2.0 ** -53

#: Largest (||x|| + ||r||)^2, in units of the largest reference norm, for which the
#: float32 estimates cannot overflow; a row beyond it is measured exactly.
_MAX_SCALED_SQUARE = 1e36

#: Most reference rows in a leaf.
LEAF_SIZE = 128
#: Features the leaves are cut along at most (a random projection beyond).
PARTITION_DIMENSIONS = 64
#: A block whose leaves need more than this share of the reference rows
#: multiplies with all of them.
_MOST = 0.75

#: Entries of each worker's float32 block of products (64 MiB).
BLOCK_ENTRIES = 2 ** 24
#: Rows of a block at least and at most: fewer rows make BLAS repack the
#: reference rows for too little work, more only take memory.
MIN_BLOCK_ROWS, MAX_BLOCK_ROWS = 16, 256


_BLAS_LOCK = threading.Lock()
_blas = {"searches": 0, "limits": None}


@contextlib.contextmanager
def _single_threaded_blas():
    """BLAS on one thread while any search of any thread runs, then as it was.

    threadpoolctl's limits are process-wide: two searches that set and restored
    them on their own could, interleaved, leave BLAS on one thread for good.
    """
    from threadpoolctl import threadpool_limits

    with _BLAS_LOCK:
        if _blas["searches"] == 0:
            _blas["limits"] = threadpool_limits(1, user_api="blas")
        _blas["searches"] += 1
    try:
        yield
    finally:
        with _BLAS_LOCK:
            _blas["searches"] -= 1
            if _blas["searches"] == 0:
                _blas["limits"].restore_original_limits()


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


def leaf_order(points, leaf_size):
    """An order of the rows of ``points`` in which every leaf (a run of at most
    ``leaf_size`` rows) holds neighbouring rows, and where the leaves start.

    Each group of more than ``leaf_size`` rows is cut in two along its
    principal direction (power iterations from a fixed start), at the widest
    gap between the projections of its middle half, so that each part keeps a
    quarter of the rows at least; groups first in the order they were cut, so
    nearby leaves are near in the order too. Rows of more than
    ``PARTITION_DIMENSIONS`` features are cut along a fixed random projection
    to that many, which keeps the cost low and the leaves as coherent as the
    data allow. Which leaves come out only decides how much of the product is
    skipped, never the result.

    Parameters
    ----------
    points : ndarray (n, D)
    leaf_size : int

    Returns
    -------
    order : ndarray (n,), int64
    starts : ndarray (L + 1,), int64
        Leaf l holds ``order[starts[l]:starts[l + 1]]``.
    """
    n, n_features = points.shape
    if n_features > PARTITION_DIMENSIONS:
        projection = np.random.default_rng(0).standard_normal((n_features, PARTITION_DIMENSIONS))
        points = points @ projection
    order = np.arange(n)
    starts = [0]
    pending = [(0, n)]
    while pending:
        low, high = pending.pop()
        if high - low <= leaf_size:
            starts.append(high)
            continue
        group = points[order[low:high]]
        group -= group.mean(axis=0)
        direction = np.ones(group.shape[1]) / np.sqrt(group.shape[1])
        for _ in range(3):
            direction = group.T @ (group @ direction)
            norm = np.linalg.norm(direction)
            if not norm > 0:
                direction = np.ones(group.shape[1])
                break
            direction /= norm
        # Cut at the widest gap between neighbouring projections in the middle
        # half: between clusters where there are any, near the median otherwise.
        projected = group @ direction
        by_projection = np.argsort(projected, kind="stable")
        size = high - low
        first, last = size // 4, size - size // 4
        gaps = np.diff(projected[by_projection[first - 1:last]])
        cut = first + int(np.argmax(gaps)) if gaps.size else size // 2
        order[low:high] = order[low:high][by_projection]
        pending.append((low + cut, high))  # popped after the first part's leaves
        pending.append((low, low + cut))
    return order, np.asarray(starts, dtype=np.int64)


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
        norms *= self.scale
        if self._finite:
            self.order, self.starts = leaf_order(centred, LEAF_SIZE)
        else:
            self.order, self.starts = np.arange(data.shape[0]), np.array([0, data.shape[0]])
        centred = centred[self.order]
        sizes = np.diff(self.starts)
        leaf_of_row = np.repeat(np.arange(sizes.size), sizes)
        self.centroids = np.add.reduceat(centred, self.starts[:-1], axis=0) / sizes[:, None]
        self.centroid_norms = np.sqrt(np.einsum("ij,ij->i", self.centroids, self.centroids))
        offsets = centred - self.centroids[leaf_of_row]
        radii = np.zeros(sizes.size)
        np.maximum.at(radii, leaf_of_row, np.sqrt(np.einsum("ij,ij->i", offsets, offsets)))
        # Rounded up past the rounding of the offsets and their sums.
        self.radii = radii * (1.0 + (data.shape[1] + 8) * _U64) + _U64
        self._expansion_error = 4.0 * (data.shape[1] + 4) * _U64
        self.leaf_sizes = sizes
        self.norms = norms[self.order]
        with np.errstate(over="ignore", invalid="ignore"):
            self.centred32 = np.ascontiguousarray(centred, dtype=np.float32)
            self.sq32 = np.square(self.norms).astype(np.float32)
        self.c1, self.c2, self.c3 = error_bound_factors(data.shape[1])

    def _leaf_distances(self, centred, norms=None, leaves=slice(None)):
        """Lower and upper bounds (m, L) on the distances of centred, scaled rows to
        the centroids of ``leaves`` (all by default; the lower bounds only where
        ``norms`` is None).

        The expansion |x|^2 + |c|^2 - 2 x.c cancels: in float64 it lies within
        (D + 4) u64 (|x| + |c|)^2 of the exact square, taken four times here.
        """
        centroids, centroid_norms = self.centroids[leaves], self.centroid_norms[leaves]
        squared_norms = (np.einsum("ij,ij->i", centred, centred) if norms is None
                         else np.square(norms))
        squared = (squared_norms[:, None] + np.square(centroid_norms)[None, :]
                   - 2.0 * (centred @ centroids.T))
        if norms is None:
            return np.sqrt(np.maximum(squared, 0.0))
        error = self._expansion_error * np.square(norms[:, None] + centroid_norms[None, :])
        return (np.sqrt(np.maximum(squared - error, 0.0)),
                np.sqrt(np.maximum(squared + error, 0.0)))

    def _reach(self, upper, sizes, k):
        """For each row of ``upper`` (m, L'), upper bounds on its distances to leaves
        of ``sizes`` rows: a distance within which at least k of those rows lie
        (infinite where they hold fewer).

        Counting rows over the leaves in order of their upper bounds, it is the
        bound of the leaf that brings the count to k. Only the leaves with the
        smallest bounds are ordered; a row that needs more (tiny leaves) gets
        an infinite reach.
        """
        nearest = min(upper.shape[1], -(-4 * k // int(self.leaf_sizes.mean())) + 8)
        closest = np.argpartition(upper, nearest - 1, axis=1)[:, :nearest]
        closest = np.take_along_axis(closest, np.argsort(np.take_along_axis(
            upper, closest, axis=1), axis=1, kind="stable"), axis=1)
        counts = np.cumsum(sizes[closest], axis=1)
        enough = counts[:, -1] >= k
        reach = np.full(upper.shape[0], np.inf)
        last = np.argmax(counts[enough] >= k, axis=1)
        reach[enough] = upper[np.flatnonzero(enough), closest[enough, last]]
        return reach

    def _candidate_leaves(self, centred, k):
        """Leaves that may hold one of the k nearest of some row of the block, judged
        from a ball around the block: O(L) work, where the rows' own bounds cost
        O(m L)."""
        centre = centred.mean(axis=0)
        offsets = centred - centre
        spread = float(np.sqrt(np.einsum("ij,ij->i", offsets, offsets).max()))
        spread = spread * (1.0 + (centred.shape[1] + 8) * _U64) + _U64  # rounded up
        near, far = self._leaf_distances(centre[None, :], np.array([np.sqrt(centre @ centre)]))
        lower = near[0] - spread - self.radii
        upper = far + spread + self.radii
        return np.flatnonzero(lower <= self._reach(upper, self.leaf_sizes, k)[0])

    def _needed_columns(self, centred, norms, k):
        """Columns (positions in the leaf order) whose leaves may hold one of the k
        nearest of some row of the block.

        A leaf whose lower bound exceeds a row's reach (:meth:`_reach`) holds none
        of that row's k nearest, not even a tie. Every row of the block lies in a
        ball around the block's centre; the same test for the ball first keeps
        the candidate leaves, and the rows' own bounds are taken over those only.
        """
        candidates = self._candidate_leaves(centred, k)
        near, far = self._leaf_distances(centred, norms, candidates)
        radii = self.radii[candidates]
        reach = self._reach(far + radii, self.leaf_sizes[candidates], k)
        needed = np.zeros(self.leaf_sizes.size, dtype=bool)
        needed[candidates[(near - radii <= reach[:, None]).any(axis=0)]] = True
        return np.flatnonzero(np.repeat(needed, self.leaf_sizes))

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
        if block_rows is None:
            block_rows = default_block_rows(self.centred32.shape[0])
        # Rows that share their nearest leaf go in one block.
        leaves = self.starts.size - 1
        if leaves > 1 and m > block_rows:
            nearest_leaf = np.concatenate([
                self._leaf_distances((X[start:start + 4096] - self.mean) * self.scale)
                .argmin(axis=1) for start in range(0, m, 4096)])
            rows_in_order = np.argsort(nearest_leaf, kind="stable")
        else:
            rows_in_order = np.arange(m)
        return self._search(X, k, block_rows, rows_in_order)

    def nearest_to_themselves(self, k, block_rows=None):
        """:meth:`nearest` of the reference rows themselves (each row is its own
        nearest), the same result, without looking for each row's nearest leaf: the
        rows of a leaf go in one block."""
        if block_rows is None:
            block_rows = default_block_rows(self.centred32.shape[0])
        return self._search(self.data, k, block_rows, self.order)

    def _search(self, X, k, block_rows, rows_in_order):
        """:meth:`nearest`, blocks of ``block_rows`` rows taken in ``rows_in_order``."""
        m = X.shape[0]
        dist = np.empty((m, k))
        idx = np.empty((m, k), dtype=np.int64)
        leaves = self.starts.size - 1
        everything = np.arange(self.centred32.shape[0])

        def search(start):
            rows = rows_in_order[start:start + block_rows]
            block = X[rows]
            centred = (block - self.mean) * self.scale
            norms = np.sqrt(np.einsum("ij,ij->i", centred, centred))
            with np.errstate(over="ignore", invalid="ignore"):
                bounded = self._finite & ((norms + 1.0) ** 2 <= _MAX_SCALED_SQUARE)
                centred[~bounded] = 0.0  # measured exactly; kept out of the product
                columns = everything
                if leaves > 1 and bounded.all():
                    needed = self._needed_columns(centred, norms, k)
                    # Copying most of the rows out would cost more than it saves.
                    if needed.size < _MOST * everything.size:
                        columns = needed
                if columns is everything:
                    reference, order, sq32, r_norms = (self.centred32, self.order, self.sq32,
                                                       self.norms)
                else:
                    reference, order, sq32, r_norms = (self.centred32[columns],
                                                       self.order[columns], self.sq32[columns],
                                                       self.norms[columns])
                products = centred.astype(np.float32) @ reference.T
            block_dist = np.empty((rows.size, k))
            block_idx = np.empty((rows.size, k), dtype=np.int64)
            nearest_rows(products, order, sq32, r_norms, norms, bounded, self.c1, self.c2,
                         self.c3, block, self.data, block_dist, block_idx)
            dist[rows], idx[rows] = block_dist, block_idx

        starts = range(0, m, block_rows)
        workers = min(get_num_threads(), len(starts))
        if workers <= 1:
            for start in starts:
                search(start)
            return dist, idx
        with _single_threaded_blas(), ThreadPoolExecutor(workers) as pool:
            for _ in pool.map(search, starts):
                pass
        return dist, idx
