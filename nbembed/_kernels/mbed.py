"""Mbed's objective: the asymmetric SNE term (Numba) and the boundary terms (NumPy).

SNE term, for a row-stochastic input P (p_ii = 0) and unit-bandwidth output
neighbourhoods q_ij = exp(-tau_ij) / Z_i, tau_ij = ||y_i - y_j||^2:

    C = sum_i KL(P_i || Q_i),
    dC/dy_i = 2 sum_j (p_ij - q_ij + p_ji - q_ji) (y_i - y_j).

The kernel takes M = P + P^T, dense, and works in two passes over the pairs:
the first finds every Z_i, the second the forces (they need Z_j of every
neighbour). Where that pays (:func:`keeps_exponentials`) the first keeps each
pair's exp(-tau_ij) (half an n x n matrix, packed) and the second reads them
back instead of computing distances and exponentials again; the bits are the
same either way. A row whose Z_i would underflow (a point far from all
others) is recomputed shifted by its smallest tau (a log-sum-exp), so the
cost stays finite and exact instead of hitting log 0.

Speed: tau_ij, exp(-tau_ij) and the pair's weight m_ij - q_ij - q_ji are
symmetric, so each pass visits the pairs (i, j > i) once and adds to both
points, into partial sums per group of rows (a fixed number, so the rounding
does not depend on the thread count). A row's pairs are taken in chunks of
columns: one loop over the dimensions writes the chunk's tau, then one loop
over it; every inner loop runs over contiguous memory that stays in the
first-level cache, and vectorizes for any dimension. ``math.exp`` does not
vectorize without a vector math library; :func:`exp_neg` does (a range
reduction and a polynomial, see nbembed/_kernels/fastexp.py). Against one
visit per ordered pair this halves the work (2x faster measured at 5000
points in 9-D).

nbembed/_kernels/sne.py computes the same cost with a sparse M and ``math.exp``;
it stays the kernel for sparse neighbourhoods. Mbed's neighbourhoods are wide
(sigma is a quantile of all distances), so P is dense and this kernel reads
it row by row.

Boundary terms (O(n K), NumPy): membership m_ik = softmax_k(<w_k, y_i> / lambda)
over the regular-simplex directions w_k;
A = (1/n) sum_ik m_ik log m_ik (margin), B = H(mbar) or -KL(mbar || pi) (balance),
D = sum_i c_i KL(T_i || M_i) (labels, c_i the label weight), cost C - (A + B) + D.
"""

import math

import numpy as np
from numba import njit, prange
from scipy.special import xlogy

from .._config import JIT, JIT_PARALLEL
from .fastexp import exp_nonpositive
from .reduction import ordered_sum
from .rows import row_squared_distances

#: A squared distance standing for "not a neighbour" (the pair i, i): large
#: enough for exp(-tau) to be 0, finite so that 0 * BIG = 0.
BIG = 1e300


@njit(inline="always", **JIT)
def exp_neg(tau):
    """exp(-tau) for tau >= 0, vectorizable (see :mod:`.fastexp`); 0 for tau >= 708."""
    return exp_nonpositive(-tau) if tau < 708.0 else 0.0


#: Rows per block; the blocks are dealt to the groups of rows below.
ROW_BLOCK = 64

#: Below this unshifted normalizer a row is recomputed shifted by its nearest
#: neighbour's tau (a log-sum-exp), before exp(-tau) underflows to 0.
_TINY_Z = 1e-250


@njit(inline="always", **JIT)
def shifted_normalizer(tau):
    """(s, z) with sum_j exp(-tau_j) = exp(-s) z.

    s = 0 unless the plain sum falls below ``_TINY_Z``; then s is the smallest
    tau, so that z >= 1 cannot underflow (a log-sum-exp).
    """
    z = 0.0
    for j in range(tau.size):
        z += exp_neg(tau[j])
    if z >= _TINY_Z:
        return 0.0, z
    s = BIG
    for j in range(tau.size):
        s = min(s, tau[j])
    z = 0.0
    for j in range(tau.size):
        z += exp_neg(tau[j] - s)
    return s, z


#: The pairs (i, j > i) are shared among this many groups of rows, whatever the
#: number of threads; each group adds into partial sums of its own, which are
#: then added in a fixed order, so the result does not depend on the threads.
N_GROUPS = 16


@njit(**JIT)
def group_block_starts(g, n):
    """First rows of the blocks of ``ROW_BLOCK`` rows that group g handles.

    Blocks are dealt to the groups in a snake order (0..G-1, then G-1..0, ...),
    so every group gets long and short rows alike.
    """
    n_blocks = (n + ROW_BLOCK - 1) // ROW_BLOCK
    starts = []
    for r in range((n_blocks + N_GROUPS - 1) // N_GROUPS):
        b = r * N_GROUPS + (g if r % 2 == 0 else N_GROUPS - 1 - g)
        if b < n_blocks:
            starts.append(b * ROW_BLOCK)
    return starts


#: Columns of a row handled at once: the chunk's distances, weights and
#: coordinates stay in the first-level cache across the dimensions.
COLUMN_CHUNK = 512


@njit(inline="always", **JIT)
def chunk_squared_distances(Yt, i, j0, m, buf):
    """buf[t] = ||y_i - y_j||^2 for j = j0 + t, t < m."""
    for t in range(m):
        buf[t] = 0.0
    for k in range(Yt.shape[0]):
        yk = Yt[k, j0:j0 + m]
        a = Yt[k, i]
        for t in range(m):
            diff = a - yk[t]
            buf[t] += diff * diff


@njit(**JIT_PARALLEL)
def add_group_parts(parts, out):
    """out = parts.sum(axis=0), adding the groups in their order."""
    flat = parts.reshape(parts.shape[0], -1)
    total = out.reshape(-1)
    for j in prange(total.size):
        s = 0.0
        for g in range(flat.shape[0]):
            s += flat[g, j]
        total[j] = s


@njit(inline="always", **JIT)
def packed_row_offset(i, n):
    """Where pair (i, j) of row i, j > i, lies in the packed upper triangle of
    an n x n matrix: at ``packed_row_offset(i, n) + j``."""
    return i * (2 * n - i - 1) // 2 - i - 1


@njit(**JIT_PARALLEL)
def sne_pair_exponentials(Yt, M, pair_exp):
    """The first pass: normalizers Z_i = sum_{j != i} exp(-tau_ij), as
    Z_i = exp(-s_i) z_i, and, with a ``pair_exp`` to keep them in, every
    exp(-tau_ij) of the upper triangle and the rows' sum_{j > i} m_ij tau_ij.

    Each pair's exponential is computed once, for Z_i and Z_j.

    Parameters
    ----------
    Yt : ndarray (d, n)
        Embedding, transposed.
    M : ndarray (n, n)
        P + P^T (only the upper triangle is read, and only to keep sums).
    pair_exp : ndarray (n (n - 1) / 2,) or (0,)
        Output: exp(-tau_ij) for i < j, row by row (:func:`packed_row_offset`);
        empty to keep nothing.

    Returns
    -------
    shift : ndarray (n,)
        s_i: 0, or min_{j != i} tau_ij in rows where Z_i would underflow.
    z : ndarray (n,)
        z_i = sum_{j != i} exp(-(tau_ij - s_i)).
    m_tau : ndarray (n,)
        sum_{j > i} m_ij tau_ij where the exponentials are kept, else zeros.
    """
    d, n = Yt.shape
    keep = pair_exp.size > 0
    parts = np.zeros((N_GROUPS, n))
    m_tau = np.zeros(n)
    for g in prange(N_GROUPS):
        buf = np.empty(COLUMN_CHUNK)
        zpart = parts[g]
        for start in group_block_starts(g, n):
            for i in range(start, min(n, start + ROW_BLOCK)):
                zi = 0.0
                row_m_tau = 0.0
                offset = packed_row_offset(i, n)
                for j0 in range(i + 1, n, COLUMN_CHUNK):
                    m = min(COLUMN_CHUNK, n - j0)
                    chunk_squared_distances(Yt, i, j0, m, buf)
                    zj = zpart[j0:j0 + m]
                    # Sums in loops that store nothing (see nbembed._kernels.reduction).
                    if keep:
                        mrow = M[i, j0:j0 + m]
                        for t in range(m):
                            row_m_tau += mrow[t] * buf[t]
                        e = pair_exp[offset + j0:offset + j0 + m]
                        for t in range(m):
                            e[t] = exp_neg(buf[t])
                        for t in range(m):
                            zi += e[t]
                        for t in range(m):
                            zj[t] += e[t]
                    else:
                        for t in range(m):
                            buf[t] = exp_neg(buf[t])
                        for t in range(m):
                            zi += buf[t]
                        for t in range(m):
                            zj[t] += buf[t]
                zpart[i] += zi
                m_tau[i] = row_m_tau
    z = np.empty(n)
    add_group_parts(parts, z)
    shift = np.zeros(n)
    # Points far from all others (rare): their rows again, shifted.
    row = np.empty(n)
    for i in range(n):
        if z[i] < _TINY_Z:
            row_squared_distances(Yt, i, row, BIG)
            shift[i], z[i] = shifted_normalizer(row)
    return shift, z, m_tau


def sne_cost_gradient(Yt, M, grad):
    """:func:`sne_cost_gradient_kept` computing each pair's exponential in both
    passes.

    Plain Python on purpose: compiled (serially, with ``cache=True``) in a
    process that had loaded the parallel kernel from Numba's cache, it was
    saved in a form that crashed every later process that loaded it.
    """
    return sne_cost_gradient_kept(Yt, M, grad, np.empty(0))


#: Up to this many points the pairs' exponentials are kept between the passes
#: whatever the dimension (half an n x n matrix, 9 MB at 1500, which stays in
#: the caches); above it only from ``KEEP_EXPONENTIALS_MIN_D`` dimensions,
#: where a distance costs more than reading a value back from memory. Measured
#: on two cores: 1.09-1.14x faster at 1500 points in 2 to 20 dimensions, 0.96x
#: at 2000 and 3000 points in 2 and 3, 1.05x at 5000 points in 9.
KEEP_EXPONENTIALS_MAX_N = 1500
KEEP_EXPONENTIALS_MIN_D = 8


def keeps_exponentials(n, d):
    """Whether :func:`sne_cost_gradient_kept` should keep the pairs'
    exponentials for n points in d dimensions (the same result either way)."""
    return n <= KEEP_EXPONENTIALS_MAX_N or d >= KEEP_EXPONENTIALS_MIN_D


@njit(**JIT_PARALLEL)
def sne_cost_gradient_kept(Yt, M, grad, pair_exp):
    """SNE cost (without the constant sum p log p) and its gradient.

    M is symmetric, and so is the weight m_ij - q_ij - q_ji of each pair: a
    pair (i, j > i) is visited once and pulls y_i and y_j by equal and
    opposite amounts. With a ``pair_exp`` of n (n - 1) / 2 values the first
    pass (:func:`sne_pair_exponentials`) keeps every exp(-tau_ij) there and the
    second reads them back; with an empty one the second computes them again.
    The result is the same bit for bit.

    Parameters
    ----------
    Yt : ndarray (d, n)
        Embedding, transposed.
    M : ndarray (n, n)
        P + P^T for a row-stochastic P with zero diagonal (only the upper
        triangle is read).
    grad : ndarray (d, n)
        Output: dC/dY, transposed like ``Yt``.
    pair_exp : ndarray (n (n - 1) / 2,) or (0,)
        Work space, overwritten (see :func:`keeps_exponentials`).

    Returns
    -------
    float
        sum_ij p_ij tau_ij + sum_i log Z_i = C - sum_ij p_ij log p_ij.
    """
    d, n = Yt.shape
    keep = pair_exp.size > 0
    shift, z, m_tau = sne_pair_exponentials(Yt, M, pair_exp)
    inv_z = 1.0 / z
    shifted = shift.max() > 0.0
    parts = np.zeros((N_GROUPS, d, n))
    cost_rows = np.zeros(n)
    for g in prange(N_GROUPS):
        buf = np.empty(COLUMN_CHUNK)
        gpart = parts[g]
        for start in group_block_starts(g, n):
            for i in range(start, min(n, start + ROW_BLOCK)):
                inv_zi = inv_z[i]
                si = shift[i]
                offset = packed_row_offset(i, n)
                row_m_tau = m_tau[i]
                for j0 in range(i + 1, n, COLUMN_CHUNK):
                    m = min(COLUMN_CHUNK, n - j0)
                    mrow = M[i, j0:j0 + m]
                    inv_zj = inv_z[j0:j0 + m]
                    if keep and not shifted:
                        # The usual case, one exponential per pair: q_ij Z_i = q_ji Z_j.
                        e = pair_exp[offset + j0:offset + j0 + m]
                        for t in range(m):
                            buf[t] = mrow[t] - e[t] * (inv_zi + inv_zj[t])
                    else:
                        chunk_squared_distances(Yt, i, j0, m, buf)
                        if not keep:
                            # Sums in loops that store nothing (see nbembed._kernels.reduction).
                            for t in range(m):
                                row_m_tau += mrow[t] * buf[t]
                        if shifted:
                            sj = shift[j0:j0 + m]
                            for t in range(m):
                                tau = buf[t]
                                buf[t] = (mrow[t] - exp_neg(tau - si) * inv_zi
                                          - exp_neg(tau - sj[t]) * inv_zj[t])
                        else:
                            for t in range(m):
                                buf[t] = mrow[t] - exp_neg(buf[t]) * (inv_zi + inv_zj[t])
                    for k in range(d):
                        yk = Yt[k, j0:j0 + m]
                        gk = gpart[k, j0:j0 + m]
                        a = Yt[k, i]
                        force = 0.0
                        # Sums in loops that store nothing (see nbembed._kernels.reduction).
                        for t in range(m):
                            force += buf[t] * (a - yk[t])
                        for t in range(m):
                            gk[t] -= buf[t] * (a - yk[t])
                        gpart[k, i] += force
                cost_rows[i] = row_m_tau + math.log(z[i]) - si
    add_group_parts(parts, grad)
    for k in prange(d):
        for j in range(n):
            grad[k, j] *= 2.0
    return ordered_sum(cost_rows)


# -- boundary terms (NumPy, O(n K)) ---------------------------------------------------------

def simplex_directions(n_classes, n_components):
    """K unit vectors with pairwise inner products -1/(K-1) (a regular simplex).

    They span the first K - 1 coordinates; further coordinates are zero. For
    K = 2 they are +e_1 and -e_1, so the boundary is y_1 = 0 as in the paper.

    Parameters
    ----------
    n_classes : int
        K >= 2.
    n_components : int
        Embedding dimension d >= K - 1.

    Returns
    -------
    ndarray (K, d)
    """
    K = n_classes
    centred = np.eye(K) - 1.0 / K
    # Coordinates of the centred unit vectors in an orthonormal basis of their
    # (K - 1)-dimensional span.
    _, _, vt = np.linalg.svd(centred)
    coords = centred @ vt[:K - 1].T
    coords /= np.linalg.norm(coords, axis=1, keepdims=True)
    signs = np.sign(coords[0])
    signs[signs == 0] = 1.0
    coords *= signs  # deterministic orientation: w_1 has non-negative coordinates
    W = np.zeros((K, n_components))
    W[:, :K - 1] = coords
    return W


def log_membership(Y, W, lam):
    """log m_ik = log softmax_k(<w_k, y_i> / lambda), shape (n, K)."""
    S = Y @ W.T / lam
    # scipy.special.logsumexp's checks cost more than the sum at these sizes
    S -= S.max(axis=1, keepdims=True)
    return S - np.log(np.exp(S).sum(axis=1, keepdims=True))


# Each term is a function of the memberships; its derivative is returned with
# respect to the scores s_ik = <w_k, y_i> / lambda. For a function of m_i with
# partials g_il: d/ds_ik = m_ik (g_ik - sum_l m_il g_il). scores_to_embedding
# turns such a derivative into one with respect to Y.

def margin_term(m, log_m):
    """A = (1/n) sum_ik m_ik log m_ik and dA/ds."""
    n = m.shape[0]
    terms = m * log_m
    return terms.sum() / n, (terms - m * terms.sum(axis=1, keepdims=True)) / n


def balance_term(m, log_prior=None):
    """B = H(mbar) (or -KL(mbar || pi) with ``log_prior`` = log pi) and dB/ds."""
    n = m.shape[0]
    mbar = m.mean(axis=0)
    B = -xlogy(mbar, mbar).sum()
    log_ratio = np.log(np.maximum(mbar, 1e-300))
    if log_prior is not None:
        B += float(mbar @ log_prior)
        log_ratio = log_ratio - log_prior
    return B, -(m * log_ratio - m * (m @ log_ratio)[:, None]) / n


def label_term(m, log_m, targets, weights):
    """D = sum_i weights_i KL(T_i || M_i) and dD/ds (rows with weight 0 ignored)."""
    dS = np.zeros_like(m)
    rows = weights > 0
    if not np.any(rows):
        return 0.0, dS
    T = targets[rows]
    kl = (xlogy(T, T) - T * log_m[rows]).sum(axis=1)
    dS[rows] = weights[rows, None] * (m[rows] - T)
    return float(np.sum(weights[rows] * kl)), dS


def scores_to_embedding(dS, W, lam):
    """dF/dY from dF/ds, s = Y W^T / lambda."""
    return (dS @ W) / lam


def boundary_cost_gradient(Y, W, lam, targets=None, weights=None, log_prior=None):
    """Cost -(A + B) + D and its gradient with respect to Y.

    Parameters
    ----------
    Y : ndarray (n, d)
    W : ndarray (K, d)
        Class directions.
    lam : float
        lambda > 0.
    targets : ndarray (n, K), optional
        Label distributions T_i (rows of unlabelled points are ignored).
    weights : ndarray (n,), optional
        Weight of each point's KL(T_i || M_i); 0 for unlabelled points.
    log_prior : ndarray (K,), optional
        log pi; B = -KL(mbar || pi) instead of H(mbar).

    Returns
    -------
    cost : float
    grad : ndarray (n, d)
    parts : dict
        The values of A, B and D.
    """
    (A, dA), (B, dB), (D, dD) = boundary_parts(Y, W, lam, targets, weights, log_prior)
    grad = scores_to_embedding(dD - dA - dB, W, lam)
    return -(A + B) + D, grad, dict(A=float(A), B=float(B), D=float(D))


def boundary_parts(Y, W, lam, targets=None, weights=None, log_prior=None):
    """The terms A, B and D, each with its derivative with respect to the scores.

    Parameters as :func:`boundary_cost_gradient`.

    Returns
    -------
    (A, dA/ds), (B, dB/ds), (D, dD/ds) : tuples of (float, ndarray (n, K))
    """
    log_m = log_membership(Y, W, lam)
    m = np.exp(log_m)
    D, dD = 0.0, np.zeros_like(m)
    if weights is not None:
        D, dD = label_term(m, log_m, targets, weights)
    return margin_term(m, log_m), balance_term(m, log_prior), (D, dD)


def label_confidence(radius, lam, n_classes):
    """tau of Zien & Quinonero Candela's eq. 21: the membership of class k at
    the point radius * w_k for this lambda.

    tau = exp(r / lambda) / [(K - 1) exp(-r / (lambda (K - 1))) + exp(r / lambda)].
    """
    K = n_classes
    a = radius / lam
    # Divided through by exp(r / lambda) to avoid overflow at small lambda.
    return 1.0 / (1.0 + (K - 1) * math.exp(-a * K / (K - 1)))


def anneal_targets(soft_labels, tau):
    """Label distributions at confidence tau: tau' T + (1 - tau') / K,
    tau' = (K tau - 1) / (K - 1). A hard label k gets t_k = tau and
    (1 - tau) / (K - 1) elsewhere."""
    K = soft_labels.shape[1]
    tau_prime = (K * tau - 1.0) / (K - 1)
    return tau_prime * soft_labels + (1.0 - tau_prime) / K
