"""NeRV cost and gradient over all pairs (Venna, Peltonen, Nybo, Aidos & Kaski).

Input neighbourhoods p_ij (rows of a conditional P) and output neighbourhoods

    q_ij = exp(-beta_i tau_ij) / Z_i,   tau_ij = ||y_i - y_j||^2,   beta_i = 1 / sigma_i^2,

with the same bandwidth sigma_i in both spaces. With the tradeoff lambda the cost is

    E = lambda sum_i KL(P_i || Q_i) + (1 - lambda) sum_i KL(Q_i || P~_i),

P~ being P with its logarithm floored (``logP``). Its gradient, with
g_ij = -lambda (p_ij - q_ij) + (1 - lambda) q_ij [log(q_ij / p~_ij) - KL(Q_i || P~_i)], is

    dE/dy_m = -2 sum_j (beta_m g_mj + beta_j g_jm) (y_m - y_j).

Layout: embeddings are transposed, ``Yt`` of shape (d, n). One pass per row i
computes the row's normalizer and divergence (they need all of row i) and then
the row's forces; the second half of each pair force, beta_i g_ij (y_j - y_i)
acting on y_j, is scattered into a per-chunk accumulator instead of being
recomputed from row j. So every pair costs one exponential, no n x n scratch
array is written, and P and log P~ are read by rows only. Rows are shifted by
their nearest output neighbour before exponentiating, so Z_i never underflows
however large the embedding is.
"""

import numpy as np
from numba import njit, prange

from .._config import JIT, JIT_PARALLEL
from .fastexp import exp_nonpositive
from .reduction import ordered_sum
from .rows import row_squared_distances


# ------------------------------------------------------------------------- NeRV rows
#: Floor of p_ij inside log(q_ij / p_ij): a pair that is far apart in the input
#: costs at most q_ij log(q_ij / P_FLOOR) when it comes close on the display.
P_FLOOR = 1e-12

#: Row chunks of :func:`nerv_gradient`: enough for 16 threads to share evenly,
#: few enough that their force accumulators (16 x d x n) stay small.
GRADIENT_CHUNKS = 16


def floored_log(P, floor=P_FLOOR):
    """log max(p_ij, floor), with zeros on the diagonal: the ``logP`` of the kernels."""
    logP = np.log(np.maximum(P, floor))
    np.fill_diagonal(logP, 0.0)
    return logP


#: Stand-in for tau_ii: the point itself gets e = 0 and no force, with no
#: branch inside the loops over j (a branch there stops vectorization).
_SELF = 1e200


@njit(**JIT)
def _squared_distances(Yt, i, tau):
    """tau[j] = ||y_i - y_j||^2, tau[i] = a huge stand-in; returns min_{j != i} tau_ij."""
    row_squared_distances(Yt, i, tau, _SELF)
    shift = np.inf
    for j in range(tau.shape[0]):
        shift = min(shift, tau[j])
    return shift


@njit(**JIT)
def _row_statistics(Yt, i, P, logP, beta_i, tau, e):
    """Fill ``tau`` (squared distances from y_i) and ``e`` (shifted kernel values) for row i.

    Returns
    -------
    shift : float
        min_{j != i} tau_ij; ``e[j] = exp(-beta_i (tau_ij - shift))``, ``e[i] = 0``.
    log_z : float
        log sum_{j != i} e[j].
    kl_qp : float
        KL(Q_i || P~_i).
    cross : float
        -sum_j p_ij log q_ij (so KL(P_i || Q_i) = sum_j p_ij log p_ij + cross).
    """
    n = Yt.shape[1]
    shift = _squared_distances(Yt, i, tau)
    z = 0.0
    e_scaled = 0.0
    p_tau = 0.0
    mass = 0.0
    prow = P[i]
    lrow = logP[i]
    for j in range(n):
        e[j] = exp_nonpositive(-beta_i * (tau[j] - shift))
    # The sums in a loop that stores nothing (see nbembed._kernels.reduction).
    for j in range(n):
        f = beta_i * (tau[j] - shift)
        z += e[j]
        e_scaled += e[j] * (f + lrow[j])
        p_tau += prow[j] * f
        mass += prow[j]
    log_z = np.log(z)
    kl_qp = -e_scaled / z - log_z
    cross = p_tau + mass * log_z
    return shift, log_z, kl_qp, cross


@njit(**JIT_PARALLEL)
def nerv_divergences(Yt, P, logP, beta):
    """Per-row divergences without the gradient.

    Parameters
    ----------
    Yt : ndarray (d, n)
        Embedding, transposed.
    P : ndarray (n, n)
        Conditional input neighbourhoods, rows summing to one, zero diagonal.
    logP : ndarray (n, n)
        log p~_ij, finite off the diagonal.
    beta : ndarray (n,)
        Output precisions 1 / sigma_i^2.

    Returns
    -------
    cross : ndarray (n,)
        -sum_j p_ij log q_ij; add sum_j p_ij log p_ij for KL(P_i || Q_i).
    kl_qp : ndarray (n,)
        KL(Q_i || P~_i).
    """
    d, n = Yt.shape
    cross = np.zeros(n)
    kl_qp = np.zeros(n)
    for i in prange(n):
        tau = np.empty(n)
        e = np.empty(n)
        _, _, kl_qp[i], cross[i] = _row_statistics(Yt, i, P, logP, beta[i], tau, e)
    return cross, kl_qp


@njit(**JIT_PARALLEL)
def nerv_gradient(Yt, P, logP, beta, tradeoff, n_chunks, grad):
    """NeRV gradient and both divergences in one pass over the pairs.

    Parameters
    ----------
    Yt, P, logP, beta
        As in ``nerv_divergences``.
    tradeoff : float
        lambda in [0, 1]: 1 is SNE (recall), 0 smoothed precision.
    n_chunks : int
        Rows are split into this many contiguous chunks, each with its own
        (d, n) accumulator for the scattered half of the forces, added up in
        chunk order. A fixed number (:data:`GRADIENT_CHUNKS`, not the thread
        count) keeps the result the same on any number of threads.
    grad : ndarray (d, n)
        Output, overwritten with dE/dY (transposed like ``Yt``).

    Returns
    -------
    cross : float
        -sum_ij p_ij log q_ij.
    kl_qp : float
        sum_i KL(Q_i || P~_i).
    """
    d, n = Yt.shape
    n_chunks = max(1, min(n_chunks, n))
    scattered = np.zeros((n_chunks, d, n))
    own = np.zeros((d, n))
    cross_rows = np.zeros(n)
    kl_rows = np.zeros(n)
    rest = 1.0 - tradeoff
    for c in prange(n_chunks):
        tau = np.empty(n)
        e = np.empty(n)
        w = np.empty(n)
        acc = scattered[c]
        for i in range(c * n // n_chunks, (c + 1) * n // n_chunks):
            b = beta[i]
            shift, log_z, kl, cross_rows[i] = _row_statistics(Yt, i, P, logP, b, tau, e)
            kl_rows[i] = kl
            inv_z = np.exp(-log_z)
            prow = P[i]
            lrow = logP[i]
            for j in range(n):
                q = e[j] * inv_z
                log_q = -b * (tau[j] - shift) - log_z
                g = tradeoff * (q - prow[j]) + rest * q * (log_q - lrow[j] - kl)
                w[j] = -2.0 * b * g
            for k in range(d):
                yk = Yt[k]
                yki = yk[i]
                acck = acc[k]
                total = 0.0
                for j in range(n):
                    total += w[j] * (yki - yk[j])
                for j in range(n):
                    acck[j] -= w[j] * (yki - yk[j])
                own[k, i] = total
    for k in range(d):
        for j in range(n):
            total = own[k, j]
            for c in range(n_chunks):
                total += scattered[c, k, j]
            grad[k, j] = total
    return ordered_sum(cross_rows), ordered_sum(kl_rows)


@njit(**JIT_PARALLEL)
def widened_neighbourhoods(sq_distances, beta, scale, log_floor, P, logP):
    """Input neighbourhoods with every width multiplied by ``scale``.

    p_ij = exp(-beta_i d_ij^2 / scale^2) / sum_{k != i} exp(-beta_i d_ik^2 / scale^2),
    written into ``P``; ``logP`` receives max(log p_ij, log_floor) computed from
    the exponent (exact even where p_ij underflows). Diagonals are zero.

    Returns
    -------
    entropy : ndarray (n,)
        The entropy of each row (the log of its effective number of neighbours).
    """
    n = sq_distances.shape[0]
    entropy = np.empty(n)
    for i in prange(n):
        row = sq_distances[i]
        b = beta[i] / (scale * scale)
        d_min = np.inf
        for j in range(n):
            if j != i:
                d_min = min(d_min, row[j])
        z = 0.0
        weighted = 0.0
        prow = P[i]
        for j in range(n):
            prow[j] = exp_nonpositive(-(b * (row[j] - d_min) if j != i else _SELF))
        for j in range(n):
            f = b * (row[j] - d_min) if j != i else _SELF
            z += prow[j]
            weighted += prow[j] * f
        log_z = np.log(z)
        lrow = logP[i]
        for j in range(n):
            prow[j] /= z
            lrow[j] = max(-b * (row[j] - d_min) - log_z, log_floor)
        lrow[i] = 0.0
        entropy[i] = log_z + weighted / z
    return entropy
