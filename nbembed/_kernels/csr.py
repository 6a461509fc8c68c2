"""Kernels on sparse matrices in CSR form: a symmetry check that needs no copy,
A + A^T without a transposed copy, and mixing a sparse matrix into a dense or a
sparse one."""

import numpy as np
from numba import njit, prange

from .._config import JIT, JIT_PARALLEL
from .variants import serial_twin


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


@njit(**JIT)
def transposed_entries(indptr, indices):
    """The rows of A^T as lists of A's entries (i, j), by j: (indptr, rows,
    positions) in CSR form, with i and where A stores the entry; each list in
    the order of i. A is square, given by its CSR structure."""
    n = indptr.shape[0] - 1
    t_indptr = np.zeros(n + 1, dtype=np.int64)
    for t in range(indices.shape[0]):
        t_indptr[indices[t] + 1] += 1
    for i in range(n):
        t_indptr[i + 1] += t_indptr[i]
    fill = t_indptr[:-1].copy()
    rows = np.empty(indices.shape[0], dtype=indices.dtype)
    positions = np.empty(indices.shape[0], dtype=indptr.dtype)
    for i in range(n):
        for t in range(indptr[i], indptr[i + 1]):
            j = indices[t]
            rows[fill[j]] = i
            positions[fill[j]] = t
            fill[j] += 1
    return t_indptr, rows, positions


@njit(**JIT_PARALLEL)
def mirror_positions(indptr, indices, t_indptr, t_rows, t_positions):
    """For the square CSR matrix A (rows' column indices sorted, no duplicates)
    and its transpose (:func:`transposed_entries`): where A stores the mirror
    (j, i) of each stored (i, j), or -1, and the row lengths of A + A^T."""
    n = indptr.shape[0] - 1
    mirror = np.empty(indices.shape[0], dtype=indptr.dtype)
    lengths = np.empty(n, dtype=np.int64)
    for i in prange(n):
        b, b_stop = t_indptr[i], t_indptr[i + 1]
        both = 0
        for a in range(indptr[i], indptr[i + 1]):
            while b < b_stop and t_rows[b] < indices[a]:
                b += 1
            if b < b_stop and t_rows[b] == indices[a]:
                mirror[a] = t_positions[b]
                both += 1
            else:
                mirror[a] = -1
        lengths[i] = indptr[i + 1] - indptr[i] + b_stop - t_indptr[i] - both
    return mirror, lengths


@njit(**JIT)
def _floored(value, floor):
    """``value``, or 0 where its magnitude is below ``floor``."""
    return 0.0 if abs(value) < floor else value


@njit(**JIT_PARALLEL)
def symmetric_sum(indptr, indices, data, mirror, out_indptr, out_indices, out_data,
                  scale, floor):
    """``scale`` (A + A^T) into the CSR arrays ``out_*`` (``out_indptr`` from the
    lengths of :func:`mirror_positions`, ``mirror`` its positions), rows' column
    indices sorted.

    Each entry is (a_ij + a_ji) scale (a_ij scale alone where (j, i) is not
    stored), computed in ``data``'s precision and rounded once to
    ``out_data``'s; with ``scale`` 1, the same bits as SciPy's ``A + A.T``.
    Entries smaller than ``floor`` in magnitude are stored as 0 (the
    subnormal range of a single-precision ``out_data``).
    """
    n = indptr.shape[0] - 1
    # The entries without a mirror go to the end of their row of the sum, in
    # the order of the rows they come from (so sorted), ...
    fill = np.empty(n, dtype=out_indptr.dtype)
    for i in prange(n):
        fill[i] = out_indptr[i] + indptr[i + 1] - indptr[i]
    for i in range(n):  # scattered writes: one thread
        for t in range(indptr[i], indptr[i + 1]):
            if mirror[t] < 0:
                j = indices[t]
                out_indices[fill[j]] = i
                out_data[fill[j]] = _floored(data[t] * scale, floor)
                fill[j] += 1
    # ... and each row merges A's row into the front. The write position never
    # passes the read position of the end part: it is behind by the A entries
    # still to place.
    for i in prange(n):
        a, a_stop = indptr[i], indptr[i + 1]
        b, b_stop = out_indptr[i] + a_stop - a, out_indptr[i + 1]
        o = out_indptr[i]
        while a < a_stop:
            j = indices[a]
            if b < b_stop and out_indices[b] < j:
                out_indices[o] = out_indices[b]
                out_data[o] = out_data[b]
                b += 1
            else:
                value = data[a]
                if mirror[a] >= 0:
                    value += data[mirror[a]]
                out_indices[o] = j
                out_data[o] = _floored(value * scale, floor)
                a += 1
            o += 1


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


@njit(**JIT_PARALLEL)
def merged_row_lengths(p_indptr, p_indices, u_indptr, u_indices):
    """Entries of each row of the union of two CSR patterns (rows' column
    indices sorted, no duplicates)."""
    n = p_indptr.shape[0] - 1
    lengths = np.empty(n, dtype=np.int64)
    for i in prange(n):
        a, a_stop = p_indptr[i], p_indptr[i + 1]
        b, b_stop = u_indptr[i], u_indptr[i + 1]
        count = 0
        while a < a_stop and b < b_stop:
            ja, jb = p_indices[a], u_indices[b]
            a += ja <= jb
            b += jb <= ja
            count += 1
        lengths[i] = count + (a_stop - a) + (b_stop - b)
    return lengths


@njit(**_EXACT_PARALLEL)
def mix_sparse(p_indptr, p_indices, p_data, keep, u_indptr, u_indices, u_data, per_link,
               out_indptr, out_indices, out_data):
    """``(A + A.T) * 0.5`` with ``A = diag(keep) P + diag(per_link) u`` into the CSR
    arrays ``out_*`` (``out_indptr`` from :func:`merged_row_lengths`), for
    symmetric P and u given as CSR with sorted column indices.

    Entry (i, j) is ``((keep_i P_ij + per_link_i u_ij) + (keep_j P_ij +
    per_link_j u_ij)) * 0.5`` with an absent entry read as 0: the operations of
    SciPy's expression in its order, computed in float64 and rounded once to
    ``out_data``'s precision. Memory: the result only; time O(nnz(P) + nnz(u))
    with the rows shared among the threads.
    """
    n = p_indptr.shape[0] - 1
    for i in prange(n):
        a, a_stop = p_indptr[i], p_indptr[i + 1]
        b, b_stop = u_indptr[i], u_indptr[i + 1]
        o = out_indptr[i]
        while a < a_stop or b < b_stop:
            ja = p_indices[a] if a < a_stop else n
            jb = u_indices[b] if b < b_stop else n
            j = min(ja, jb)
            p = 0.0
            u = 0.0
            if ja == j:
                p = np.float64(p_data[a])
                a += 1
            if jb == j:
                u = np.float64(u_data[b])
                b += 1
            a_ij = keep[i] * p + per_link[i] * u
            a_ji = keep[j] * p + per_link[j] * u
            out_indices[o] = j
            out_data[o] = (a_ij + a_ji) * 0.5
            o += 1


#: Serial twins of the mixing kernels, for P~ worked out beside a running fit.
merged_row_lengths_serial = serial_twin(merged_row_lengths)
mix_sparse_serial = serial_twin(mix_sparse)


#: Without fastmath: the same sums in the same order as scipy's sparse products,
#: without fused multiply-adds, so that a spreading gives what those products
#: give (to the last bit on this project's machines).
@njit(**dict(JIT_PARALLEL, fastmath=False))
def spread_steps(indptr, indices, data, targets, alpha, n_steps):
    """``n_steps`` steps of F <- alpha S F + (1 - alpha) T from F = T.

    S is the square CSR matrix (``indptr``, ``indices``, ``data``), T
    ``targets`` (n, K). Each row's sum runs over its entries in stored order,
    then is scaled, as scipy's ``alpha * (S @ F) + (1 - alpha) * T`` does;
    one thread writes each row, so the result does not depend on the number
    of threads.
    """
    n, K = targets.shape
    F = targets.copy()
    G = np.empty_like(F)
    for _ in range(n_steps):
        for i in prange(n):
            for k in range(K):
                G[i, k] = 0.0
            for t in range(indptr[i], indptr[i + 1]):
                j = indices[t]
                w = data[t]
                for k in range(K):
                    G[i, k] += w * F[j, k]
            for k in range(K):
                G[i, k] = alpha * G[i, k] + (1.0 - alpha) * targets[i, k]
        F, G = G, F
    return F
