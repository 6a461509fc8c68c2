"""Kernels on sparse matrices in CSR form: a symmetry check that needs no copy,
and mixing a sparse matrix into a dense one."""

import numpy as np
from numba import njit, prange

from .._config import JIT_PARALLEL


@njit(**JIT_PARALLEL)
def is_symmetric_csr(indptr, indices, data):
    """Whether the square CSR matrix equals its transpose, entry for entry.

    Every row's column indices must be sorted (``csr_matrix.sort_indices``).
    Stored zeros count as entries: (i, j) stored as 0 with (j, i) absent is
    not symmetric. Memory O(n), against the O(nnz) of comparing with a
    transposed copy.
    """
    n = indptr.shape[0] - 1
    asymmetric = np.zeros(n, dtype=np.bool_)
    for i in prange(n):
        for idx in range(indptr[i], indptr[i + 1]):
            j = indices[idx]
            start, stop = indptr[j], indptr[j + 1]
            pos = start + np.searchsorted(indices[start:stop], i)
            if pos == stop or indices[pos] != i or data[pos] != data[idx]:
                asymmetric[i] = True
                break
    return not asymmetric.any()


#: No fused multiply-add in the mixing kernels: each entry gets the same bits as NumPy's.
_EXACT_PARALLEL = dict(JIT_PARALLEL, fastmath=False)


@njit(**_EXACT_PARALLEL)
def mix_dense_all(P, keep, per_link, indptr, indices, data, out):
    """``out = (A + A.T) * 0.5`` with ``A = keep[:, None] * P + per_link[:, None] * u``:
    the per-point must-link mixing of a dense P.

    ``u`` is the CSR matrix (indptr, indices, data). Every entry gets the
    floating-point operations of that NumPy expression in the same order
    (``A[u.nonzero()] += ...`` after the product), so the result is the same
    to the last bit whatever the number of threads.
    """
    n = P.shape[0]
    for i in prange(n):
        for j in range(n):
            out[i, j] = keep[i] * P[i, j]
        for idx in range(indptr[i], indptr[i + 1]):
            out[i, indices[idx]] += per_link[i] * data[idx]
    # Symmetrize by blocks of rows, and within a block column by column, so that
    # (i, j) and (j, i) are read from cache lines still in use.
    block = 64
    for b in prange((n + block - 1) // block):
        first, stop = b * block, min(b * block + block, n)
        for j in range(first + 1, n):
            for i in range(first, min(stop, j)):
                value = (out[i, j] + out[j, i]) * 0.5
                out[i, j] = value
                out[j, i] = value


@njit(**_EXACT_PARALLEL)
def mix_dense_rows(P, keep, per_link, indptr, indices, data, rows, out):
    """Compute again the rows ``rows`` and the same columns of ``out`` as
    :func:`mix_dense_all` would, for a symmetric ``u``; the rest of ``out`` stays.

    Each pair (i, j) is computed once, by whichever of i and j is listed and
    comes first, so the result is the same to the last bit as
    :func:`mix_dense_all`'s whatever the number of threads. Time O(len(rows) n),
    in strided passes over the columns: for a few rows only.
    """
    n = P.shape[0]
    listed = np.zeros(n, dtype=np.bool_)
    listed[rows] = True
    for r in prange(rows.size):
        i = rows[r]
        u_row = np.zeros(n)
        for idx in range(indptr[i], indptr[i + 1]):
            u_row[indices[idx]] = data[idx]
        for j in range(n):
            if listed[j] and j < i:
                continue  # row j computes this pair
            # u_ij = 0 adds 0.0, which leaves a (non-negative) entry as it is.
            a_ij = keep[i] * P[i, j] + per_link[i] * u_row[j]
            a_ji = keep[j] * P[j, i] + per_link[j] * u_row[j]
            value = (a_ij + a_ji) * 0.5
            out[i, j] = value
            out[j, i] = value
