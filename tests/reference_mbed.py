"""Slow, obviously correct NumPy versions of Mbed's objective, written from the paper.

Full n x n matrices, explicit loops over classes and the softmax Jacobian,
independent of the kernels' shortcuts.
"""

import numpy as np
from scipy.special import logsumexp

import reference as ref


def input_neighbourhoods(D, sigma):
    """p_ij = exp(-d_ij^2 / sigma^2) / sum_{k != i} exp(-d_ik^2 / sigma^2)."""
    E = np.exp(-(D ** 2) / sigma ** 2)
    np.fill_diagonal(E, 0.0)
    return E / E.sum(axis=1, keepdims=True)


def _log_q(Y):
    """log q_ij from a log-sum-exp (no underflow for points far from all others)."""
    T = ref.sq_distances(Y)
    np.fill_diagonal(T, np.inf)
    return -T - logsumexp(-T, axis=1, keepdims=True)


def sne_cost(P, Y):
    """sum_i KL(P_i || Q_i)."""
    log_q = _log_q(Y)
    mask = P > 0
    return float(np.sum(P[mask] * (np.log(P[mask]) - log_q[mask])))


def sne_grad(P, Y):
    """2 sum_j (p_ij - q_ij + p_ji - q_ji)(y_i - y_j)."""
    W = P - np.exp(_log_q(Y))
    W = W + W.T
    return 2.0 * (W.sum(axis=1)[:, None] * Y - W @ Y)


def simplex_directions_check(W):
    """Gram matrix of the directions (should be 1 on, -1/(K-1) off the diagonal)."""
    return W @ W.T


def membership(Y, W, lam):
    """m_ik = exp(<w_k, y_i> / lambda) / sum_l exp(<w_l, y_i> / lambda), written out."""
    n, K = Y.shape[0], W.shape[0]
    m = np.zeros((n, K))
    for i in range(n):
        scores = np.array([W[k] @ Y[i] / lam for k in range(K)])
        e = np.exp(scores - scores.max())
        m[i] = e / e.sum()
    return m


def logistic_membership(Y, lam):
    """The paper's eq. 5 for K = 2: m_i = 1 / (1 + exp(-y_i1 / lambda))."""
    return 1.0 / (1.0 + np.exp(-Y[:, 0] / lam))


def margin_term(Y, W, lam):
    """A = (1/n) sum_i sum_k m_ik log m_ik."""
    m = membership(Y, W, lam)
    return float(np.sum(m * np.log(m)) / len(Y))


def balance_term(Y, W, lam, prior=None):
    """B = H(mbar), or -KL(mbar || prior)."""
    mbar = membership(Y, W, lam).mean(axis=0)
    if prior is None:
        return float(-np.sum(mbar * np.log(mbar)))
    return float(-np.sum(mbar * np.log(mbar / prior)))


def label_term(Y, W, lam, T, weights):
    """D = sum_i weights_i KL(T_i || M_i)."""
    m = membership(Y, W, lam)
    total = 0.0
    for i in np.flatnonzero(weights > 0):
        t = T[i]
        pos = t > 0
        total += weights[i] * np.sum(t[pos] * np.log(t[pos] / m[i, pos]))
    return float(total)


def _softmax_jacobian(m_i):
    """d m_il / d s_ik = m_il (delta_lk - m_ik), as a K x K matrix [l, k]."""
    return np.diag(m_i) - np.outer(m_i, m_i)


def _chain(Y, W, lam, dG_dm):
    """Gradient with respect to Y of a function of m, given dG/dm (n, K)."""
    m = membership(Y, W, lam)
    grad = np.zeros_like(Y)
    for i in range(len(Y)):
        dG_ds = _softmax_jacobian(m[i]).T @ dG_dm[i]
        grad[i] = (dG_ds @ W) / lam  # s_ik = <w_k, y_i> / lambda
    return grad


def margin_grad(Y, W, lam):
    m = membership(Y, W, lam)
    return _chain(Y, W, lam, (np.log(m) + 1.0) / len(Y))


def balance_grad(Y, W, lam, prior=None):
    m = membership(Y, W, lam)
    mbar = m.mean(axis=0)
    log_ratio = np.log(mbar) if prior is None else np.log(mbar / prior)
    dB_dmbar = -(log_ratio + 1.0)
    return _chain(Y, W, lam, np.tile(dB_dmbar / len(Y), (len(Y), 1)))


def label_grad(Y, W, lam, T, weights):
    m = membership(Y, W, lam)
    return _chain(Y, W, lam, -weights[:, None] * T / m)


def total_cost(P, Y, W, lam, T=None, weights=None, prior=None):
    """C - (A + B) + D."""
    cost = sne_cost(P, Y) - margin_term(Y, W, lam) - balance_term(Y, W, lam, prior)
    if weights is not None:
        cost += label_term(Y, W, lam, T, weights)
    return cost


def total_grad(P, Y, W, lam, T=None, weights=None, prior=None):
    grad = sne_grad(P, Y) - margin_grad(Y, W, lam) - balance_grad(Y, W, lam, prior)
    if weights is not None:
        grad += label_grad(Y, W, lam, T, weights)
    return grad


def label_confidence(r, lam, K):
    """Eq. 21 as printed."""
    a = np.exp(r / lam)
    return a / ((K - 1) * np.exp(-r / (lam * (K - 1))) + a)


def hotelling_lawley(Y, labels):
    """tr(H E^-1) with H, E the between- and within-group scatter (SSCP) matrices."""
    mean = Y.mean(axis=0)
    d = Y.shape[1]
    H, E = np.zeros((d, d)), np.zeros((d, d))
    for k in np.unique(labels):
        G = Y[labels == k]
        H += len(G) * np.outer(G.mean(0) - mean, G.mean(0) - mean)
        E += (G - G.mean(0)).T @ (G - G.mean(0))
    return float(np.trace(H @ np.linalg.inv(E)))


def fisher(u, labels):
    """(mean_0 - mean_1)^2 / (var_0 + var_1) of a 1-D projection."""
    a, b = u[labels == 0], u[labels == 1]
    return float((a.mean() - b.mean()) ** 2 / (a.var() + b.var()))
