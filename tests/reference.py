"""Slow, obviously correct NumPy versions of every Numba kernel.

Each function follows the formula on the page, with full n x n matrices and no
tricks, so that the fast kernels can be checked against it.
"""

import numpy as np


def sq_distances(Y):
    diff = Y[:, None, :] - Y[None, :, :]
    return (diff ** 2).sum(-1)


def power_kernel(tau, alpha):
    """H(tau) = (1 + alpha tau)^(-1/alpha); exp(-tau) at alpha = 0."""
    if alpha == 0:
        return np.exp(-tau)
    return (1.0 + alpha * tau) ** (-1.0 / alpha)


def hssne_q(Y, alpha):
    H = power_kernel(sq_distances(Y), alpha)
    np.fill_diagonal(H, 0.0)
    return H / H.sum()


def hssne_cost(P, Y, alpha):
    """KL(P || Q) summed over pairs with P_ij > 0."""
    Q = hssne_q(Y, alpha)
    mask = P > 0
    return float(np.sum(P[mask] * np.log(P[mask] / Q[mask])))


def hssne_grad(P, Y, alpha):
    """4 sum_j (P_ij - Q_ij) S_ij (y_i - y_j), S = 1 / (1 + alpha tau)."""
    tau = sq_distances(Y)
    S = 1.0 / (1.0 + alpha * tau)
    Q = hssne_q(Y, alpha)
    W = (P - Q) * S
    np.fill_diagonal(W, 0.0)
    return 4.0 * (W.sum(1)[:, None] * Y - W @ Y)


def hssne_fixed_point(P, Y, alpha):
    """The paper's eq. 14 written out with A = P * S and B = Q * S."""
    tau = sq_distances(Y)
    S = 1.0 / (1.0 + alpha * tau)
    Q = hssne_q(Y, alpha)
    A = P * S
    B = Q * S
    np.fill_diagonal(A, 0.0)
    np.fill_diagonal(B, 0.0)
    return ((A - B) @ Y + Y * B.sum(1)[:, None]) / A.sum(1)[:, None]


def sne_q(Y):
    E = np.exp(-sq_distances(Y))
    np.fill_diagonal(E, 0.0)
    return E / E.sum(1, keepdims=True)


def sne_cost(P, Y):
    """sum_i KL(P_i || Q_i) for a conditional P (rows sum to one)."""
    Q = sne_q(Y)
    mask = P > 0
    return float(np.sum(P[mask] * np.log(P[mask] / Q[mask])))


def sne_grad(P, Y):
    """2 sum_j (p_ij - q_ij + p_ji - q_ji)(y_i - y_j)."""
    Q = sne_q(Y)
    W = P - Q + P.T - Q.T
    np.fill_diagonal(W, 0.0)
    return 2.0 * (W.sum(1)[:, None] * Y - W @ Y)


def conditional_probabilities(sq_dist, perplexity):
    """p_{j|i} for a full squared-distance matrix, by plain bisection on sigma_i."""
    n = sq_dist.shape[0]
    P = np.zeros((n, n))
    target = np.log(perplexity)
    for i in range(n):
        d = np.delete(sq_dist[i], i)
        lo, hi = 1e-20, 1e20
        for _ in range(300):
            beta = np.sqrt(lo * hi)
            p = np.exp(-beta * (d - d.min()))
            p /= p.sum()
            entropy = -np.sum(p[p > 0] * np.log(p[p > 0]))
            if entropy > target:
                lo = beta
            else:
                hi = beta
        P[i] = np.insert(p, i, 0.0)
    return P


def joint_probabilities(X, perplexity):
    """Symmetric P_ij = (p_{j|i} + p_{i|j}) / 2n from Euclidean inputs."""
    Pc = conditional_probabilities(sq_distances(X), perplexity)
    return (Pc + Pc.T) / (2 * X.shape[0])


def momentum_gains_step(Yt, grad, velocity, gains, momentum, learning_rate, min_gain,
                        max_step_norm=None):
    """t-SNE's momentum-and-gains step with whole-array NumPy operations, in place;
    returns how many points' steps were shortened."""
    same_sign = np.sign(grad) == np.sign(velocity)
    gains[:] = np.maximum(np.where(same_sign, gains * 0.8, gains + 0.2), min_gain)
    velocity[:] = momentum * velocity - learning_rate * gains * grad
    shortened = 0
    if max_step_norm is not None:
        lengths = np.linalg.norm(velocity, axis=0)
        long = lengths > max_step_norm
        velocity[:, long] *= max_step_norm / lengths[long]
        shortened = int(np.count_nonzero(long))
    Yt += velocity
    return shortened
