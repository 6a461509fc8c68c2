"""Cost and gradient of new points placed against a fixed map (``transform``).

Each new point i has input neighbourhood p_{j|i} over its nearest reference
points (rows of ``P`` with columns ``indices``) and output neighbourhood

    q_{j|i} = H(b_i tau_ij) / Z_i,   Z_i = sum_j H(b_i tau_ij),   tau_ij = ||y_i - r_j||^2,

over all n reference points r_j, with the power-family kernel H of HSSNE
(alpha = 0 the Gaussian exp(-b tau)) and a per-point precision b_i (1 for
HSSNE, SNE and Mbed; the calibrated input precision for NeRV). New points do
not see each other, so the cost decouples into one term per point:

    E_i = lambda KL(P_i || Q_i) + (1 - lambda) KL(Q_i || P~_i),

P~ being P with its logarithm floored at ``log_floor`` (lambda = 1 except for
NeRV). With g_ij = b_i S(b_i tau_ij), S = 1 / (1 + alpha b tau) the negative
score (b at alpha = 0), and KL_qp the second divergence,

    dE_i/dy_i = 2 lambda sum_j p_ij g_ij (y_i - r_j)
                - 2 sum_j q_ij g_ij [lambda + (1 - lambda)(log(q_ij / p~_ij) - KL_qp)] (y_i - r_j).

Each point costs O(n d + k d): the rows are independent, so they run in
parallel and every sum runs in a fixed order (the result does not depend on
the number of threads). At alpha = 0 the kernel values are shifted by the
nearest reference point before exponentiating (the shift cancels in q), so a
point far from the map does not underflow.
"""

import math

import numpy as np
from numba import njit, prange

from .._config import JIT_PARALLEL
from .hssne import kernel_by_alpha, log_kernel
from .mbed import exp_neg
from .rows import add_squared_differences


@njit(**JIT_PARALLEL)
def placement_cost_gradient(Rt, Yt, indices, P, P_by_reference, p_log_p, precision, alpha,
                            tradeoff, log_floor, active, grad, costs, scales):
    """Per-point costs E_i and gradients of new points against fixed reference points.

    Parameters
    ----------
    Rt : ndarray (d, n)
        Reference embedding, transposed.
    Yt : ndarray (d, m)
        Positions of the new points, transposed.
    indices : ndarray of int (m, k)
        Reference neighbours of each new point.
    P : ndarray (m, k)
        p_{j|i} over those neighbours, rows summing to one.
    P_by_reference : ndarray (m, n) or (0, 0)
        Where every reference point is a neighbour (Mbed's wide neighbourhoods):
        ``P`` with its columns in the reference points' order, which the
        attraction then reads in loops that vectorize; else empty.
    p_log_p : ndarray (m,)
        sum_j p_{j|i} log p_{j|i} of each row (fixed while a point moves: a log
        per neighbour and step cost as much as the rest of the sums).
    precision : ndarray (m,)
        b_i.
    alpha : float
        Tail heaviness of H, >= 0.
    tradeoff : float
        lambda in [0, 1].
    log_floor : float
        log of the floor of p~ (pairs outside the neighbour list get it).
    active : ndarray of bool (m,)
        Points to evaluate; the others keep their ``grad``, ``costs`` and ``scales``.
    grad : ndarray (d, m)
        Output: dE_i / dy_i.
    costs : ndarray (m,)
        Output: E_i.
    scales : ndarray (m,)
        Output: sum_j p_ij g_ij, the curvature of the attraction (half of it),
        for the fixed-point step -grad_i / (2 scales_i).
    """
    d, n = Rt.shape
    m, k = indices.shape
    for i in prange(m):
        if not active[i]:
            continue
        b = precision[i]
        tau = np.zeros(n)
        for c in range(d):
            add_squared_differences(Yt[c, i], Rt[c], tau)
        shift = 0.0
        if alpha == 0.0:
            shift = np.inf
            for j in range(n):
                shift = min(shift, tau[j])
        h = np.empty(n)
        g = np.empty(n)
        if alpha == 0.0:
            # The Gaussian in a loop that vectorizes (math.exp does not).
            for j in range(n):
                h[j] = exp_neg(b * (tau[j] - shift))
                g[j] = b
        else:
            for j in range(n):
                hj, sj = kernel_by_alpha(b * (tau[j] - shift), alpha)
                h[j] = hj
                g[j] = b * sj
        z = 0.0  # summed in a loop that stores nothing (see nbembed._kernels.reduction)
        for j in range(n):
            z += h[j]
        log_z = math.log(z)
        attraction = np.zeros(d)
        kl_pq = p_log_p[i]
        scale = 0.0
        if P_by_reference.shape[0]:
            pi = P_by_reference[i]
            mass = 0.0  # sum_j p_j and sum_j p_j log H_j, in loops that store nothing
            cross = 0.0
            for j in range(n):
                mass += pi[j]
            if alpha == 0.0:
                for j in range(n):
                    cross -= pi[j] * (b * (tau[j] - shift))
            else:
                for j in range(n):
                    cross += pi[j] * log_kernel(b * tau[j], alpha)
            kl_pq += mass * log_z - cross
            w = np.empty(n)
            for j in range(n):
                w[j] = pi[j] * g[j]
            for j in range(n):
                scale += w[j]
            for e in range(d):
                y = Yt[e, i]
                r = Rt[e]
                pull = 0.0
                for j in range(n):
                    pull += w[j] * (y - r[j])
                attraction[e] = pull
        else:
            for c in range(k):
                p = P[i, c]
                if p <= 0.0:
                    continue
                j = indices[i, c]
                kl_pq += p * (log_z - log_kernel(b * (tau[j] - shift), alpha))
                w = p * g[j]
                scale += w
                for e in range(d):
                    attraction[e] += w * (Yt[e, i] - Rt[e, j])
        kl_qp = 0.0
        log_p = np.empty(0)
        if tradeoff < 1.0:
            log_p = np.full(n, log_floor)
            for c in range(k):
                log_p[indices[i, c]] = max(math.log(max(P[i, c], 1e-300)), log_floor)
            for j in range(n):
                if h[j] > 0.0:
                    log_q = math.log(h[j]) - log_z
                    kl_qp += h[j] / z * (log_q - log_p[j])
        repulsion = np.zeros(d)
        if tradeoff == 1.0:
            # KL(P || Q) alone: sum_j q_ij g_ij (y_i - r_j), a coordinate at a time in
            # loops without branches, which vectorize.
            for e in range(d):
                y = Yt[e, i]
                r = Rt[e]
                pull = 0.0  # summed in a loop that stores nothing
                for j in range(n):
                    pull += h[j] * g[j] * (y - r[j])
                repulsion[e] = pull / z
        else:
            for j in range(n):
                q = h[j] / z
                if q <= 0.0:
                    continue
                w = tradeoff + (1.0 - tradeoff) * (math.log(h[j]) - log_z - log_p[j] - kl_qp)
                w *= q * g[j]
                for e in range(d):
                    repulsion[e] += w * (Yt[e, i] - Rt[e, j])
        for e in range(d):
            grad[e, i] = 2.0 * (tradeoff * attraction[e] - repulsion[e])
        costs[i] = tradeoff * kl_pq + (1.0 - tradeoff) * kl_qp
        scales[i] = scale


@njit(**JIT_PARALLEL)
def neighbour_attraction(Rt, Yt, indices, P, alpha, active, attraction, cross_entropy, scales):
    """The part of each new point's cost and gradient that its reference
    neighbours give, for the kernel H of precision 1 (the rest comes from the
    repulsion of all reference points, :class:`~nbembed.objectives.placement.ReferenceField`).

    Parameters
    ----------
    Rt : ndarray (d, n)
    Yt : ndarray (d, m)
    indices, P : ndarray (m, k)
        As for :func:`placement_cost_gradient`.
    alpha : float
    active : ndarray of bool (m,)
    attraction : ndarray (d, m)
        Output: sum_j p_ij S_ij (y_i - r_j).
    cross_entropy : ndarray (m,)
        Output: sum_j p_ij (log p_ij - log H_ij).
    scales : ndarray (m,)
        Output: sum_j p_ij S_ij.
    """
    d = Rt.shape[0]
    m, k = indices.shape
    for i in prange(m):
        if not active[i]:
            continue
        total = 0.0
        scale = 0.0
        for e in range(d):
            attraction[e, i] = 0.0
        for c in range(k):
            p = P[i, c]
            if p <= 0.0:
                continue
            j = indices[i, c]
            tau = 0.0
            for e in range(d):
                diff = Yt[e, i] - Rt[e, j]
                tau += diff * diff
            _, s = kernel_by_alpha(tau, alpha)
            total += p * (math.log(p) - log_kernel(tau, alpha))
            w = p * s
            scale += w
            for e in range(d):
                attraction[e, i] += w * (Yt[e, i] - Rt[e, j])
        cross_entropy[i] = total
        scales[i] = scale
