"""The exact k nearest reference rows of a block of rows, from float32 estimates.

:class:`nbembed._nearest_reference.ReferenceRows` hands each block of new rows
here with the products x_i.r_j in float32 (centred, scaled rows). The estimate
t_ij = ||r_j||^2 - 2 x_i.r_j is the squared distance less ||x_i||^2, and
bounds say how far t_ij + ||x_i||^2 may lie from the exact squared distance.
Every row whose estimate is within the bounds of the k-th smallest is a
candidate; the candidates alone are then measured exactly, in float64, feature
by feature in a fixed order, and the k smallest kept, ties broken by index.

Most of a row is far from its k nearest. A first pass computes the estimates
and the smallest of each chunk of ``FINE`` and of ``COARSE`` of them; the k-th
smallest of the minima of k chunks bounds the k-th smallest estimate from
above, so only the chunks whose minimum is below it (and the bounds' width)
are gathered, and the k-th smallest estimate and the candidates are found
among them alone.
"""

import numpy as np
from numba import njit

from .._config import JIT

#: Estimates summarized by their minimum, finely and coarsely (a coarse chunk
#: is ``COARSE // FINE`` fine ones).
FINE = 8
COARSE = 32


@njit(**JIT)
def kth_smallest(values, count, kth, scratch):
    """The ``kth`` smallest (from 0) of ``values[:count]``, by Hoare's selection
    with a median-of-three pivot; ``scratch`` (at least ``count`` long) is
    overwritten."""
    for c in range(count):
        scratch[c] = values[c]
    low, high = 0, count - 1
    while low < high:
        first, middle, last = scratch[low], scratch[(low + high) // 2], scratch[high]
        if first > middle:
            first, middle = middle, first
        if middle > last:
            middle = last
        pivot = max(first, middle)
        left, right = low, high
        while left <= right:
            while scratch[left] < pivot:
                left += 1
            while scratch[right] > pivot:
                right -= 1
            if left <= right:
                scratch[left], scratch[right] = scratch[right], scratch[left]
                left += 1
                right -= 1
        # Now scratch[low:right + 1] <= pivot <= scratch[left:high + 1], and
        # whatever lies between equals the pivot.
        if kth <= right:
            high = right
        elif kth >= left:
            low = left
        else:
            return scratch[kth]
    return scratch[kth]


@njit(**JIT)
def nearest_rows(products, columns, r_sq, r_norms, x_norms, bounded, c1, c2, c3, X, R, dist,
                 idx):
    """The k nearest reference rows of each row of a block, exactly.

    Parameters
    ----------
    products : ndarray (m, n), float32
        x_i . r_j of the centred, scaled rows (overwritten by the estimates),
        for the reference rows that can hold a row's k nearest.
    columns : ndarray (n,), int64
        The reference row (index into ``R``) of each column of ``products``.
    r_sq : ndarray (n,), float32
        ||r_j||^2 of the centred, scaled reference rows.
    r_norms : ndarray (n,), float64
        ||r_j|| of the centred, scaled reference rows.
    x_norms : ndarray (m,), float64
        ||x_i|| of the centred, scaled rows.
    bounded : ndarray (m,), bool
        Rows whose estimates are within the bounds; the others are measured
        against every reference row.
    c1, c2, c3 : float
        The estimate of a pair lies within c1 a b + c2 (a + b)^2 + c3 of its
        exact squared distance (a, b the norms above, in the same scaled units).
    X : ndarray (m, D), float64
        The rows as given.
    R : ndarray (N, D), float64
        All reference rows as given.
    dist, idx : ndarray (m, k)
        Out: exact squared distances and indices, nearest first.
    """
    m, n = products.shape
    k = dist.shape[1]
    n_features = R.shape[1]
    n_fine = (n + FINE - 1) // FINE
    per = COARSE // FINE
    n_coarse = (n_fine + per - 1) // per
    two = np.float32(2.0)
    fine = np.empty(n_fine, dtype=np.float32)
    coarse = np.empty(n_coarse, dtype=np.float32)
    picked = np.empty(n_fine, dtype=np.int64)
    picked_minima = np.empty(n_fine, dtype=np.float32)
    candidates = np.empty(n, dtype=np.int64)
    estimates = np.empty(n, dtype=np.float32)
    scratch = np.empty(n, dtype=np.float32)
    exact = np.empty(n)
    b_max = r_norms.max() if n else 0.0
    for i in range(m):
        t = products[i]
        count = 0
        if bounded[i]:
            a = x_norms[i]
            # Above every pair's bound: the k smallest estimates are within `wide`
            # of their exact values, so the k-th nearest is at most kth + wide
            # (less ||x_i||^2), kth the k-th smallest estimate, and a row whose
            # estimate exceeds that by more than its own bound is not among them.
            wide = c1 * a * b_max + c2 * (a + b_max) * (a + b_max) + c3
            # Pass 1: the estimates, in place, and the minima of the chunks.
            for j in range(n):
                t[j] = r_sq[j] - two * t[j]
            for q in range(n_fine):
                low = t[q * FINE]
                for j in range(q * FINE + 1, min(n, (q + 1) * FINE)):
                    low = min(low, t[j])
                fine[q] = low
            for c in range(n_coarse):
                low = fine[c * per]
                for q in range(c * per + 1, min(n_fine, (c + 1) * per)):
                    low = min(low, fine[q])
                coarse[c] = low
            # The k-th smallest of k chunks' minima bounds the k-th smallest
            # estimate: first over the coarse chunks, then over the fine chunks
            # of the coarse ones that can hold a candidate.
            limit = (kth_smallest(coarse, n_coarse, k - 1, scratch) if n_coarse >= k
                     else np.inf) + 2.0 * wide
            n_picked = 0
            for c in range(n_coarse):
                if coarse[c] <= limit:
                    for q in range(c * per, min(n_fine, (c + 1) * per)):
                        picked[n_picked] = q
                        picked_minima[n_picked] = fine[q]
                        n_picked += 1
            if n_picked >= k:
                limit = min(limit, kth_smallest(picked_minima, n_picked, k - 1, scratch)
                            + 2.0 * wide)
            # Pass 2: the estimates of the fine chunks that can hold a candidate,
            # in the order of j, their k-th smallest, and the candidates.
            gathered = 0
            for p in range(n_picked):
                if picked_minima[p] <= limit:
                    q = picked[p]
                    for j in range(q * FINE, min(n, (q + 1) * FINE)):
                        candidates[gathered] = j
                        estimates[gathered] = t[j]
                        gathered += 1
            kth = kth_smallest(estimates, gathered, k - 1, scratch)
            threshold = kth + wide
            kept = 0
            for c in range(gathered):
                b = r_norms[candidates[c]]
                if estimates[c] <= threshold + c1 * a * b + c2 * (a + b) * (a + b) + c3:
                    candidates[kept] = candidates[c]
                    kept += 1
            count = kept
        if count < k:  # unbounded (or, were the bounds ever wrong, at least exact)
            for j in range(n):
                candidates[j] = j
            count = n
        # In the order of the reference rows, so that ties go by index below.
        for c in range(count):
            candidates[c] = columns[candidates[c]]
        chosen = np.sort(candidates[:count])
        # Summed over the features in order, as cross_squared_distances sums; the
        # candidates' rows stay in the cache from one feature to the next.
        for c in range(count):
            exact[c] = 0.0
        for f in range(n_features):
            value = X[i, f]
            for c in range(count):
                diff = value - R[chosen[c], f]
                exact[c] += diff * diff
        order = np.argsort(exact[:count], kind="mergesort")
        for c in range(k):
            dist[i, c] = exact[order[c]]
            idx[i, c] = chosen[order[c]]
