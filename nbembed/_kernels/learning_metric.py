"""Learning-metric distances along straight paths (Peltonen, Klami & Kaski 2004).

The class posterior is a discriminative mixture of labelled Gaussians,

    p(c | x) = sum_k beta_ck g_k(x) / sum_k g_k(x),   g_k(x) = exp(-||x - m_k||^2 / 2 sigma^2),

and the local squared distance is dx^T J(x) dx with the Fisher information
J(x) = sum_c p(c|x) grad log p(c|x) grad log p(c|x)^T. Along the straight path
from x_a to x_b, cut into T pieces delta = (x_b - x_a) / T and evaluated at the
midpoint x_t of each piece,

    d(x_a, x_b) = sum_t sqrt(delta^T J(x_t) delta),

and since grad log p(c|x) = (sum_k r^c_k m_k - sum_k r_k m_k) / sigma^2 with
r_k = g_k / sum_l g_l and r^c_k = beta_ck g_k / sum_l beta_cl g_l,

    delta^T J(x_t) delta = sum_c p_c (sum_k r^c_k mu_k - sum_k r_k mu_k)^2 / sigma^4,
    mu_k = m_k . delta.

Nothing of dimension D is touched per pair: with the Gram matrix G = X_1 X_2^T,
H = X M^T and A_ak = ||x_a - m_k||^2 (all from BLAS beforehand),

    ||x_t - m_k||^2 = A_ak + 2 s (G_ab - ||x_a||^2 - H_bk + H_ak) + s^2 ||x_b - x_a||^2,
    mu_k = (H_bk - H_ak) / T,

with s = (t + 1/2) / T, so a pair costs O(T K C). Midpoints make the sum
symmetric in a and b.
"""

import math

import numpy as np
from numba import njit, prange

from .._config import JIT, JIT_PARALLEL
from .fastexp import exp_nonpositive


@njit(**JIT)
def _path_length(a, b, A1, H1, n1, A2, H2, n2, gram_ab, beta_ck, inv_two_sigma_sq,
                 inv_sigma_sq, n_pieces, q, mu, weighted, class_mass, class_moment):
    """Learning-metric length of the straight path from row a of set 1 to row b of set 2.

    ``q``, ``mu``, ``weighted``, ``class_mass`` and ``class_moment`` are scratch arrays.
    """
    C, K = beta_ck.shape
    span = n1[a] + n2[b] - 2.0 * gram_ab
    if span < 0.0:
        span = 0.0
    base = gram_ab - n1[a]
    for k in range(K):
        mu[k] = (H2[b, k] - H1[a, k]) / n_pieces
    total = 0.0
    for t in range(n_pieces):
        s = (t + 0.5) / n_pieces
        q_min = np.inf
        for k in range(K):
            qk = A1[a, k] + 2.0 * s * (base - H2[b, k] + H1[a, k]) + s * s * span
            q[k] = qk
            if qk < q_min:
                q_min = qk
        for k in range(K):
            q[k] = exp_nonpositive(-(q[k] - q_min) * inv_two_sigma_sq)
            weighted[k] = q[k] * mu[k]
        # Sums in a loop that stores nothing (see nbembed._kernels.reduction).
        mass = 0.0
        moment = 0.0
        for k in range(K):
            mass += q[k]
            moment += weighted[k]
        for c in range(C):
            bc = beta_ck[c]
            cm = 0.0
            cmu = 0.0
            for k in range(K):
                cm += bc[k] * q[k]
                cmu += bc[k] * weighted[k]
            class_mass[c] = cm
            class_moment[c] = cmu
        mean = moment / mass
        sq = 0.0
        for c in range(C):
            if class_mass[c] > 0.0:
                diff = class_moment[c] / class_mass[c] - mean
                sq += class_mass[c] * diff * diff
        total += math.sqrt(sq / mass) * inv_sigma_sq
    return total


@njit(**JIT)
def _fill_row(a, first, A1, H1, n1, A2, H2, n2, G, beta_ck, sigma, n_pieces, symmetric, out):
    """Distances from row a to the rows b >= first of set 2 (mirrored if symmetric)."""
    C, K = beta_ck.shape
    q = np.empty(K)
    mu = np.empty(K)
    weighted = np.empty(K)
    class_mass = np.empty(C)
    class_moment = np.empty(C)
    inv_two_sigma_sq = 1.0 / (2.0 * sigma * sigma)
    inv_sigma_sq = 1.0 / (sigma * sigma)
    for b in range(first, G.shape[1]):
        d = _path_length(a, b, A1, H1, n1, A2, H2, n2, G[a, b], beta_ck, inv_two_sigma_sq,
                         inv_sigma_sq, n_pieces, q, mu, weighted, class_mass, class_moment)
        out[a, b] = d
        if symmetric:
            out[b, a] = d


@njit(**JIT_PARALLEL)
def straight_path_distances(A1, H1, n1, A2, H2, n2, G, beta_ck, sigma, n_pieces, symmetric,
                            out):
    """Learning-metric distances between two sets of points along straight paths.

    Parameters
    ----------
    A1, A2 : ndarray (n1, K), (n2, K)
        Squared distances from the points to the centroids m_k.
    H1, H2 : ndarray (n1, K), (n2, K)
        Inner products x . m_k.
    n1, n2 : ndarray (n1,), (n2,)
        Squared norms ||x||^2.
    G : ndarray (n1, n2)
        Inner products x_a . x_b.
    beta_ck : ndarray (C, K)
        Class probabilities of the components (columns sum to one).
    sigma : float
        Common width of the Gaussians.
    n_pieces : int
        T, the number of pieces of each path.
    symmetric : bool
        Both sets are the same (n1 == n2, same arrays): compute each pair once,
        mirror it and leave zeros on the diagonal. Rows are processed in pairs
        (a, n - 1 - a) so that the threads get equal shares of the triangle.
    out : ndarray (n1, n2)
        Output.
    """
    n_rows = G.shape[0]
    if not symmetric:
        for a in prange(n_rows):
            _fill_row(a, 0, A1, H1, n1, A2, H2, n2, G, beta_ck, sigma, n_pieces, False, out)
        return
    for task in prange((n_rows + 1) // 2):
        out[task, task] = 0.0
        _fill_row(task, task + 1, A1, H1, n1, A2, H2, n2, G, beta_ck, sigma, n_pieces, True,
                  out)
        mirror = n_rows - 1 - task
        if mirror != task:
            out[mirror, mirror] = 0.0
            _fill_row(mirror, mirror + 1, A1, H1, n1, A2, H2, n2, G, beta_ck, sigma, n_pieces,
                      True, out)
