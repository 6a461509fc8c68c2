"""The exact k nearest reference rows of a block of rows, from float32 estimates.

:class:`nbembed._nearest_reference.ReferenceRows` hands each block of new rows
here with the products x_i.r_j in float32 (centred, scaled rows). The estimate
t_ij = ||r_j||^2 - 2 x_i.r_j is the squared distance less ||x_i||^2, and
bounds say how far t_ij + ||x_i||^2 may lie from the exact squared distance.
Every row whose estimate is within the bounds of the k-th smallest is a
candidate; the candidates alone are then measured exactly, in float64, feature
by feature in a fixed order, and the k smallest kept, ties broken by index.

Most of a row is far from its k nearest. A first, vectorized pass computes the
estimates and the smallest of each chunk of ``CHUNK``; the k-th smallest of
those minima bounds the k-th smallest estimate from above, so only the chunks
whose minimum is below it (and the bounds' width) are gathered, and the k-th
smallest estimate and the candidates are found among them alone.
"""

import numpy as np
from numba import njit

from .._config import JIT

#: Estimates summarized by their minimum at a time, and the running minima that
#: find it (independent lanes, so that the loop vectorizes).
CHUNK = 32
LANES = 8


@njit(**JIT)
def chunk_minimum(values, start, stop, lanes):
    """The smallest of ``values[start:stop]`` (``lanes`` is scratch of ``LANES``)."""
    full = start + (stop - start) // LANES * LANES
    if full == start:
        low = values[start]
        for j in range(start + 1, stop):
            low = min(low, values[j])
        return low
    for lane in range(LANES):
        lanes[lane] = values[start + lane]
    for base in range(start + LANES, full, LANES):
        for lane in range(LANES):
            value = values[base + lane]
            lanes[lane] = value if value < lanes[lane] else lanes[lane]
    for j in range(full, stop):
        lanes[0] = min(lanes[0], values[j])
    low = lanes[0]
    for lane in range(1, LANES):
        low = min(low, lanes[lane])
    return low


@njit(**JIT)
def nearest_rows(products, r_sq, r_norms, x_norms, bounded, c1, c2, c3, X, R, dist, idx):
    """The k nearest reference rows of each row of a block, exactly.

    Parameters
    ----------
    products : ndarray (m, n), float32
        x_i . r_j of the centred, scaled rows (overwritten by the estimates).
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
    R : ndarray (n, D), float64
        The reference rows as given.
    dist, idx : ndarray (m, k)
        Out: exact squared distances and indices, nearest first.
    """
    m, n = products.shape
    k = dist.shape[1]
    n_features = R.shape[1]
    n_chunks = (n + CHUNK - 1) // CHUNK
    two = np.float32(2.0)
    minima = np.empty(n_chunks, dtype=np.float32)
    lanes = np.empty(LANES, dtype=np.float32)
    candidates = np.empty(n, dtype=np.int64)
    estimates = np.empty(n, dtype=np.float32)
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
            # Pass 1, vectorized: the estimates, in place, and each chunk's smallest.
            for j in range(n):
                t[j] = r_sq[j] - two * t[j]
            for chunk in range(n_chunks):
                minima[chunk] = chunk_minimum(t, chunk * CHUNK, min(n, (chunk + 1) * CHUNK),
                                              lanes)
            # The k-th smallest of the chunks' minima: k estimates are at most
            # that, so the k-th smallest estimate is too.
            limit = (np.partition(minima, k - 1)[k - 1] if n_chunks >= k else np.inf) + 2.0 * wide
            # Pass 2: the chunks that can hold a candidate, their k-th smallest
            # estimate, and the candidates among them in the order of j.
            gathered = 0
            for chunk in range(n_chunks):
                if minima[chunk] <= limit:
                    for j in range(chunk * CHUNK, min(n, (chunk + 1) * CHUNK)):
                        candidates[gathered] = j
                        estimates[gathered] = t[j]
                        gathered += 1
            kth = np.partition(estimates[:gathered], k - 1)[k - 1]
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
        # Summed over the features in order, as cross_squared_distances sums; the
        # candidates' rows stay in the cache from one feature to the next.
        for c in range(count):
            exact[c] = 0.0
        for f in range(n_features):
            value = X[i, f]
            for c in range(count):
                diff = value - R[candidates[c], f]
                exact[c] += diff * diff
        order = np.argsort(exact[:count], kind="mergesort")
        for c in range(k):
            dist[i, c] = exact[order[c]]
            idx[i, c] = candidates[order[c]]
