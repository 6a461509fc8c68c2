"""Checks on sparse matrices in CSR form that need no copy of the matrix."""

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
