"""Slow, obviously correct NumPy versions of the NeRV and learning-metric kernels.

Everything follows the formulas in docs/nerv.md with full n x n (or n x K x C)
arrays and no tricks, so that the Numba kernels can be checked against them.
"""

import numpy as np

import reference as ref


# --------------------------------------------------------------------------- NeRV

def nerv_q(Y, beta):
    """q_ij = exp(-beta_i ||y_i - y_j||^2) / sum_{k != i} exp(-beta_i ||y_i - y_k||^2)."""
    F = -beta[:, None] * ref.sq_distances(Y)
    np.fill_diagonal(F, -np.inf)
    F -= F.max(axis=1, keepdims=True)
    E = np.exp(F)
    return E / E.sum(axis=1, keepdims=True)


def nerv_divergences(P, logP, Y, beta):
    """(sum_i KL(P_i || Q_i), sum_i KL(Q_i || P~_i)) with log P~ given as ``logP``."""
    Q = nerv_q(Y, beta)
    off = ~np.eye(len(Y), dtype=bool)
    with np.errstate(divide="ignore"):
        logQ = np.log(Q)
    mask = off & (P > 0)
    recall = np.sum(P[mask] * (np.log(P[mask]) - logQ[mask]))
    precision = np.sum(Q[off] * (logQ[off] - logP[off]))
    return float(recall), float(precision)


def nerv_cost(P, logP, Y, beta, tradeoff):
    recall, precision = nerv_divergences(P, logP, Y, beta)
    return tradeoff * recall + (1 - tradeoff) * precision


def nerv_grad(P, logP, Y, beta, tradeoff):
    """dE/dy_m = -2 sum_j (g_mj beta_m + g_jm beta_j)(y_m - y_j), the formula of the spec."""
    n = len(Y)
    Q = nerv_q(Y, beta)
    off = ~np.eye(n, dtype=bool)
    logQ = np.where(off, np.log(np.where(off, Q, 1.0)), 0.0)
    kl = np.sum(np.where(off, Q * (logQ - logP), 0.0), axis=1)
    G = -tradeoff * (P - Q) + (1 - tradeoff) * Q * (logQ - logP - kl[:, None])
    np.fill_diagonal(G, 0.0)
    W = G * beta[:, None] + (G * beta[:, None]).T
    return -2.0 * (W.sum(1)[:, None] * Y - W @ Y)


def sne_cost_with_bandwidths(P, Y, beta):
    """sum_i KL(P_i || Q_i), written directly from the SNE definition."""
    n = len(Y)
    total = 0.0
    for i in range(n):
        w = np.array([np.exp(-beta[i] * np.sum((Y[i] - Y[j]) ** 2)) if j != i else 0.0
                      for j in range(n)])
        q = w / w.sum()
        for j in range(n):
            if j != i and P[i, j] > 0:
                total += P[i, j] * np.log(P[i, j] / q[j])
    return total


# ----------------------------------------------------------------------- learning metric

def mixture_posteriors(X, centroids, theta, sigma):
    """p(c | x) of the discriminative mixture, shape (n, C), by explicit sums."""
    beta = np.exp(theta - theta.max(axis=0, keepdims=True))
    beta /= beta.sum(axis=0, keepdims=True)                  # (C, K), columns sum to 1
    sq = ((X[:, None, :] - centroids[None, :, :]) ** 2).sum(-1)   # (n, K)
    g = np.exp(-(sq - sq.min(axis=1, keepdims=True)) / (2 * sigma ** 2))  # ratios only
    return (g @ beta.T) / g.sum(axis=1, keepdims=True)


def mixture_log_likelihood(X, T, w, centroids, theta, sigma):
    """sum_i w_i sum_c T_ic log p(c | x_i)."""
    p = mixture_posteriors(X, centroids, theta, sigma)
    return float(np.sum(w[:, None] * T * np.log(p)))


def fisher_information(x, centroids, theta, sigma):
    """J(x) = sum_c p(c|x) grad log p(c|x) grad log p(c|x)^T, gradients written out."""
    beta = np.exp(theta - theta.max(axis=0, keepdims=True))
    beta /= beta.sum(axis=0, keepdims=True)
    sq = ((x - centroids) ** 2).sum(1)
    g = np.exp(-(sq - sq.min()) / (2 * sigma ** 2))   # (K,), common factor dropped
    r = g / g.sum()
    J = np.zeros((x.size, x.size))
    for c in range(beta.shape[0]):
        rc = beta[c] * g / np.sum(beta[c] * g)
        grad = (rc @ centroids - r @ centroids) / sigma ** 2
        p = np.sum(beta[c] * g) / g.sum()
        J += p * np.outer(grad, grad)
    return J


def learning_metric_distance(xa, xb, centroids, theta, sigma, n_pieces):
    """Straight path from xa to xb in ``n_pieces`` pieces, each evaluated at its midpoint."""
    delta = (xb - xa) / n_pieces
    total = 0.0
    for t in range(n_pieces):
        x = xa + (t + 0.5) * delta
        total += np.sqrt(max(delta @ fisher_information(x, centroids, theta, sigma) @ delta,
                             0.0))
    return total


# -------------------------------------------------------------------------- retrieval

def retrieval_precision_recall(DX, DY, n_relevant, n_retrieved):
    """Mean precision and recall when the n_retrieved nearest in DY retrieve the
    n_relevant nearest in DX, by sets, one point at a time."""
    n = DX.shape[0]
    prec, rec = 0.0, 0.0
    for i in range(n):
        others = [j for j in range(n) if j != i]
        relevant = set(sorted(others, key=lambda j: (DX[i, j], j))[:n_relevant])
        retrieved = set(sorted(others, key=lambda j: (DY[i, j], j))[:n_retrieved])
        hits = len(relevant & retrieved)
        prec += hits / n_retrieved
        rec += hits / n_relevant
    return prec / n, rec / n
