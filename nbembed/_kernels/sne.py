"""Asymmetric SNE (Hinton & Roweis) with a unit-bandwidth Gaussian output kernel.

q_{j|i} = exp(-||y_i - y_j||^2) / Z_i, Z_i = sum_{k != i} exp(-||y_i - y_k||^2).
Cost C = sum_i KL(P_i || Q_i); gradient

    dC/dy_i = 2 sum_j (p_{j|i} - q_{j|i} + p_{i|j} - q_{i|j}) (y_i - y_j).

The attraction uses M = P + P^T in CSR form, so the kernel needs no transpose
of P; the repulsion is exact over all pairs in two passes (the second needs
every Z_j). A point far from all others would have Z_i underflow to 0; its Z_i
is kept as exp(-s_i) z_i, shifted by its smallest tau (a log-sum-exp, as in
:mod:`.mbed`), so the cost and the gradient stay finite.
"""

import math

import numpy as np
from numba import njit, prange

from .._config import JIT_PARALLEL
from .mbed import BIG, exp_neg, shifted_normalizer
from .reduction import ordered_sum
from .rows import row_squared_distances


@njit(**JIT_PARALLEL)
def sne_normalizers(Yt):
    """Z_i = sum_{k != i} exp(-||y_i - y_k||^2) for every i, as exp(-s_i) z_i.

    Returns
    -------
    shift : ndarray (n,)
        s_i: 0, or min_k ||y_i - y_k||^2 in rows where Z_i would underflow.
    z : ndarray (n,)
        z_i = sum_{k != i} exp(-(||y_i - y_k||^2 - s_i)).
    """
    d, n = Yt.shape
    shift = np.zeros(n)
    z = np.zeros(n)
    for i in prange(n):
        buf = np.empty(n)
        row_squared_distances(Yt, i, buf, BIG)
        shift[i], z[i] = shifted_normalizer(buf)
    return shift, z


@njit(**JIT_PARALLEL)
def sne_gradient(Yt, indptr, indices, mvalues, row_mass, exaggeration, grad):
    """Gradient of the asymmetric SNE cost; returns the cost without sum p log p.

    Parameters
    ----------
    Yt : ndarray (d, n)
        Embedding, transposed.
    indptr, indices, mvalues : CSR arrays of M = P + P^T (P conditional,
        rows summing to ``row_mass``), no diagonal entries.
    row_mass : ndarray (n,)
        sum_j p_{j|i} (normally ones).
    exaggeration : float
        Factor on the attraction.
    grad : ndarray (d, n)
        Output (transposed like ``Yt``).

    Returns
    -------
    float
        sum_ij p_{j|i} tau_ij + sum_i row_mass_i log Z_i, that is the cost minus
        the constant sum p log p.
    """
    d, n = Yt.shape
    shift, z = sne_normalizers(Yt)
    inv_z = 1.0 / z
    # In a plane, unless some row had to be shifted, q_{j|i} + q_{i|j} =
    # exp(-tau) (1/Z_i + 1/Z_j): one exponential per pair instead of two, in a
    # loop without branches that vectorizes (the pair (i, i) adds nothing, its
    # difference being zero); 10x faster at 10^4 points. In more dimensions the
    # same loop did not vectorize and gained nothing.
    plane = d == 2 and shift.max() == 0.0
    cost_rows = np.zeros(n)
    for i in prange(n):
        rep = np.zeros(d)
        if plane:
            a0 = Yt[0, i]
            a1 = Yt[1, i]
            r0 = 0.0
            r1 = 0.0
            for j in range(n):
                dx = a0 - Yt[0, j]
                dy = a1 - Yt[1, j]
                w = exp_neg(dx * dx + dy * dy) * (inv_z[i] + inv_z[j])
                r0 += w * dx
                r1 += w * dy
            rep[0] = r0
            rep[1] = r1
        else:
            for j in range(n):
                if j == i:
                    continue
                tau = 0.0
                for k in range(d):
                    diff = Yt[k, i] - Yt[k, j]
                    tau += diff * diff
                # q_{j|i} + q_{i|j}, each with its row's shift
                w = exp_neg(tau - shift[i]) * inv_z[i] + exp_neg(tau - shift[j]) * inv_z[j]
                for k in range(d):
                    rep[k] += w * (Yt[k, i] - Yt[k, j])
        attr = np.zeros(d)
        m_tau = 0.0
        for idx in range(indptr[i], indptr[i + 1]):
            j = indices[idx]
            m = mvalues[idx]
            tau = 0.0
            for k in range(d):
                diff = Yt[k, i] - Yt[k, j]
                tau += diff * diff
            m_tau += m * tau
            for k in range(d):
                attr[k] += m * (Yt[k, i] - Yt[k, j])
        for k in range(d):
            grad[k, i] = 2.0 * (exaggeration * attr[k] - rep[k])
        cost_rows[i] = 0.5 * m_tau + row_mass[i] * (math.log(z[i]) - shift[i])
    return ordered_sum(cost_rows)
