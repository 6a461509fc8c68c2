"""Points in a spatial order, so that sums over neighbours read nearby memory.

The attraction and the cost of a large embedding visit, for every point, its
stored entries of P: about 150 other points chosen by the input neighbourhoods.
In the data's own order those points lie anywhere in memory, and at 10^6
points every visit is a cache miss. Once the embedding has formed, a point's
neighbours in P are also its neighbours on the display; numbering the points
along a space-filling curve of the embedding (:func:`morton_order`) then puts
them close in memory too. On 10^6 points with 157 entries a row the attraction
took 1.35 s in random order and 0.30 s with every row's entries within 5000
positions of its own.
"""

import numpy as np
from numba import njit, prange

from .._config import JIT, JIT_PARALLEL

#: Bits per coordinate of the Morton code (the curve's resolution is 2^-16 of
#: the embedding's extent).
MORTON_BITS = 16


@njit(**JIT)
def _spread_bits(v):
    """The 16 bits of v moved to the even positions of a 32-bit word."""
    v &= 0xFFFF
    v = (v | (v << 8)) & 0x00FF00FF
    v = (v | (v << 4)) & 0x0F0F0F0F
    v = (v | (v << 2)) & 0x33333333
    v = (v | (v << 1)) & 0x55555555
    return v


@njit(**JIT_PARALLEL)
def morton_codes(Yt):
    """Z-order codes (n,) of a one- or two-dimensional embedding (d, n)."""
    d, n = Yt.shape
    levels = (1 << MORTON_BITS) - 1
    low = np.empty(d)
    scale = np.empty(d)
    for k in range(d):
        lo = Yt[k].min()
        extent = Yt[k].max() - lo
        low[k] = lo
        scale[k] = levels / extent if extent > 0 else 0.0
    codes = np.empty(n, dtype=np.int64)
    for i in prange(n):
        code = 0
        for k in range(d):
            q = np.int64((Yt[k, i] - low[k]) * scale[k])
            code |= _spread_bits(min(max(q, 0), levels)) << k
        codes[i] = code
    return codes


def morton_order(Yt):
    """A permutation (n,) of the points along the Z-order curve of the embedding.

    Points close on the display get close positions (mostly: the curve jumps
    at the edges of its quadrants). Only the first two dimensions are used.
    """
    return np.argsort(morton_codes(np.ascontiguousarray(Yt[:2])), kind="stable")


@njit(**JIT_PARALLEL)
def permute_csr(indptr, indices, data, order):
    """CSR arrays of P[order][:, order]: row k is the old row order[k], with its
    column indices renumbered the same way.

    Returns
    -------
    indptr, indices, data : ndarray
        Same dtypes as given.
    """
    n = order.size
    inverse = np.empty(n, dtype=indices.dtype)
    for k in prange(n):
        inverse[order[k]] = k
    new_indptr = np.zeros(n + 1, dtype=indptr.dtype)
    for k in range(n):
        new_indptr[k + 1] = new_indptr[k] + indptr[order[k] + 1] - indptr[order[k]]
    new_indices = np.empty_like(indices)
    new_data = np.empty_like(data)
    for k in prange(n):
        src = indptr[order[k]]
        dst = new_indptr[k]
        for t in range(indptr[order[k] + 1] - src):
            new_indices[dst + t] = inverse[indices[src + t]]
            new_data[dst + t] = data[src + t]
    return new_indptr, new_indices, new_data
