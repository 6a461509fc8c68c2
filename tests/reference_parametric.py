"""Slow, obviously correct NumPy versions of the Parametric Embedding formulas.

Everything follows Iwata et al. (2007) on the page: full n x K matrices, the
gradients in the form of eqs. 3 and 4, the Hessian of eq. 5, plain loops.
"""

import numpy as np


def membership(R, Phi, priors):
    """p(c_k | r_n) = p(c_k) exp(-|r_n - phi_k|^2 / 2) / sum_l (...)   (eq. 1)."""
    sq = ((R[:, None, :] - Phi[None, :, :]) ** 2).sum(-1)
    logits = np.log(priors)[None, :] - 0.5 * sq
    logits -= logits.max(axis=1, keepdims=True)
    E = np.exp(logits)
    return E / E.sum(axis=1, keepdims=True)


def objective(P, R, Phi, priors, eta_r, eta_phi):
    """J = -sum_nk p_nk log q_nk + eta_r |R|^2 + eta_phi |Phi|^2   (eqs. 2 and 6)."""
    Q = membership(R, Phi, priors)
    mask = P > 0
    return float(-np.sum(P[mask] * np.log(Q[mask])) + eta_r * np.sum(R ** 2)
                 + eta_phi * np.sum(Phi ** 2))


def grad_r(P, R, Phi, priors, eta_r):
    """dJ/dr_n = sum_k (p_nk - q_nk)(r_n - phi_k) + 2 eta_r r_n   (eq. 3)."""
    Q = membership(R, Phi, priors)
    G = np.zeros_like(R)
    for n in range(R.shape[0]):
        for k in range(Phi.shape[0]):
            G[n] += (P[n, k] - Q[n, k]) * (R[n] - Phi[k])
    return G + 2 * eta_r * R


def grad_phi(P, R, Phi, priors, eta_phi):
    """dJ/dphi_k = sum_n (p_nk - q_nk)(phi_k - r_n) + 2 eta_phi phi_k   (eq. 4)."""
    Q = membership(R, Phi, priors)
    G = np.zeros_like(Phi)
    for k in range(Phi.shape[0]):
        for n in range(R.shape[0]):
            G[k] += (P[n, k] - Q[n, k]) * (Phi[k] - R[n])
    return G + 2 * eta_phi * Phi


def hessian_r(R, Phi, priors, eta_r):
    """Per object: sum_k q phi phi^T - (sum_k q phi)(sum_k q phi)^T + 2 eta_r I   (eq. 5)."""
    Q = membership(R, Phi, priors)
    d = R.shape[1]
    H = np.zeros((R.shape[0], d, d))
    for n in range(R.shape[0]):
        mean = Q[n] @ Phi
        H[n] = (Phi.T * Q[n]) @ Phi - np.outer(mean, mean) + 2 * eta_r * np.eye(d)
    return H


def newton_solve(P, R0, Phi, priors, eta_r, n_steps=100):
    """Minimize J over each r_n (Phi fixed) by Newton steps with step halving."""
    R = R0.astype(float).copy()
    for n in range(R.shape[0]):
        def f(r):
            return objective(P[n:n + 1], r[None, :], Phi, priors, eta_r, 0.0)

        for _ in range(n_steps):
            r = R[n]
            g = grad_r(P[n:n + 1], r[None, :], Phi, priors, eta_r)[0]
            if np.linalg.norm(g) < 1e-12:
                break
            H = hessian_r(r[None, :], Phi, priors, eta_r)[0]
            step = np.linalg.solve(H, g)
            t = 1.0
            while f(r - t * step) > f(r) and t > 1e-12:
                t /= 2
            R[n] = r - t * step
    return R


def posterior_precision(P, Y, centres, h):
    """prec(h) with Python sets; objects tied with the h-th posterior count as high."""
    K = P.shape[1]
    total = 0.0
    for k in range(K):
        dist = np.linalg.norm(Y - centres[k], axis=1)
        close = set(np.argsort(dist, kind="stable")[:h].tolist())
        threshold = sorted(P[:, k], reverse=True)[h - 1]
        high = {n for n in range(P.shape[0]) if P[n, k] >= threshold}
        total += len(close & high) / h
    return total / K


def soft_nn_posteriors(X, y, Sigma, priors):
    """Appendix D with an explicit inverse covariance and explicit sums."""
    classes = np.unique(y[y >= 0])
    inv = np.linalg.inv(Sigma)
    out = np.zeros((X.shape[0], classes.size))
    for n in range(X.shape[0]):
        for c, k in enumerate(classes):
            members = np.flatnonzero(y == k)
            dens = np.mean([np.exp(-0.5 * (X[n] - X[m]) @ inv @ (X[n] - X[m]))
                            for m in members])
            out[n, c] = priors[c] * dens
        out[n] /= out[n].sum()
    return out
