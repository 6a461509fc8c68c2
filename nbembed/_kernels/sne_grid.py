"""The asymmetric SNE term of Mbed for large n: sparse input, grid normalizers.

With unit-bandwidth output neighbourhoods q_ij = H_ij / Z_i, H_ij = exp(-tau_ij),
Z_i = sum_{j != i} H_ij, and M = P + P^T stored sparse:

    C - sum_ij p_ij log p_ij = (1/2) sum_ij m_ij tau_ij + sum_i log Z_i,
    dC/dy_i = 2 [sum_j m_ij (y_i - y_j) - (1/Z_i) sum_j H_ij (y_i - y_j)
                 - sum_j (H_ij / Z_j) (y_i - y_j)].

The first sum runs over the stored entries of M. The sums over all pairs are
kernel sums of the Gaussian (the alpha = 0 member of the power family) on an
interpolation grid (:class:`.interpolation.Grid`), in two passes: charges
1 and y give Z_i and the first force; then charges w_j = 1 / Z_j and w_j y_j
give the second.

A point far from all others has a normalizer far below the grid's absolute
error. Rows whose grid estimate of Z_i falls below ``EXACT_ROW_BELOW`` are
therefore summed exactly over all points (O(n) each, shifted by their nearest
neighbour's tau when Z_i would underflow, as in the dense kernel), and their
columns (the second force) are added exactly too instead of through the grid.
"""

import math

import numpy as np
from numba import njit, prange

from .._config import JIT_PARALLEL
from .hssne import _sq_dist, hssne_attraction, sparse_p_log_h
from .interpolation import KERNEL_H, Grid
from .mbed import BIG, exp_neg, shifted_normalizer
from .rows import row_squared_distances

#: Grid normalizers below this are recomputed exactly (see the module docstring).
EXACT_ROW_BELOW = 1e-3

#: The grid: node spacing 0.1 (box side 0.3 with 3 nodes), relative error of
#: the sums near 1e-4 for the unit-width Gaussian.
GRID = dict(n_nodes=3, box_size=0.3, min_boxes=50)


@njit(**JIT_PARALLEL)
def exact_rows(Yt, rows):
    """Z_i = exp(-s_i) z_i and sum_j q_ij (y_i - y_j) over all j, for ``rows``.

    Returns
    -------
    shift, z : ndarray (r,)
        s_i (0, or the smallest tau of the row when the plain sum underflows)
        and z_i.
    force : ndarray (r, d)
        sum_j q_ij (y_i - y_j).
    """
    d, n = Yt.shape
    r = rows.size
    shift = np.zeros(r)
    z = np.empty(r)
    force = np.zeros((r, d))
    for t in prange(r):
        i = rows[t]
        tau = np.empty(n)
        row_squared_distances(Yt, i, tau, BIG)
        s, zi = shifted_normalizer(tau)
        for j in range(n):
            q = exp_neg(tau[j] - s) / zi
            for k in range(d):
                force[t, k] += q * (Yt[k, i] - Yt[k, j])
        shift[t] = s
        z[t] = zi
    return shift, z, force


@njit(**JIT_PARALLEL)
def add_exact_columns(Yt, columns, shift, z, out):
    """out[i] += sum_{j in columns} q_ji (y_i - y_j) with q_ji = exp(-(tau - s_j)) / z_j."""
    d, n = Yt.shape
    for i in prange(n):
        for t in range(columns.size):
            j = columns[t]
            if j == i:
                continue
            q = exp_neg(_sq_dist(Yt, i, j) - shift[t]) / z[t]
            for k in range(d):
                out[i, k] += q * (Yt[k, i] - Yt[k, j])


def sne_cost_gradient_grid(Yt, M, grad, cache=None):
    """SNE cost (without sum p log p) and gradient, with a sparse M and grid sums.

    Parameters
    ----------
    Yt : ndarray (2, n)
        Embedding, transposed (one dimension: pass a zero second row).
    M : scipy.sparse.csr_matrix (n, n)
        P + P^T.
    grad : ndarray (2, n)
        Output: dC/dY, transposed like ``Yt``.
    cache : dict, optional
        Keeps the grid's kernel spectra between calls.

    Returns
    -------
    float
        (1/2) sum_ij m_ij tau_ij + sum_i log Z_i.
    """
    Yt = np.ascontiguousarray(Yt, dtype=np.float64)
    n = Yt.shape[1]
    # One layout, one set of weights and self terms for both passes.
    grid = Grid(Yt, 0.0, cache=cache, **GRID)
    pairs = ((0, KERNEL_H), (1, KERNEL_H), (2, KERNEL_H))
    first = grid.sums(np.vstack([np.ones((1, n)), Yt]), pairs)
    z = first[0]
    # sum_j H_ij (y_i - y_j), later divided by Z_i
    force = (Yt * z - first[1:]).T
    rows = np.flatnonzero(z < EXACT_ROW_BELOW)
    log_z = np.log(np.maximum(z, EXACT_ROW_BELOW))
    weights = 1.0 / np.maximum(z, EXACT_ROW_BELOW)
    force *= weights[:, None]
    if rows.size:
        shift, z_rows, force_rows = exact_rows(Yt, rows)
        log_z[rows] = np.log(z_rows) - shift
        force[rows] = force_rows
        weights[rows] = 0.0
    second = grid.sums(np.vstack([weights, weights * Yt]), pairs)
    force += (Yt * second[0] - second[1:]).T
    if rows.size:
        add_exact_columns(Yt, rows, shift, z_rows, force)
    attraction = np.empty((n, 2))
    hssne_attraction(Yt, M.indptr, M.indices, M.data, 0.0, attraction)
    grad[:] = 2.0 * (attraction - force).T
    m_tau = -sparse_p_log_h(Yt, M.indptr, M.indices, M.data, 0.0)
    return 0.5 * m_tau + math.fsum(log_z)
