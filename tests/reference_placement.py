"""Slow NumPy version of the placement kernel (new points against a fixed map).

Written from the formulas of nbembed/_kernels/placement.py with dense (m, n)
arrays: P scattered over all reference points, q without any shift.
"""

import numpy as np

import reference as ref


def dense_rows(indices, P, n):
    """The (m, k) neighbour rows as an (m, n) matrix."""
    full = np.zeros((P.shape[0], n))
    np.put_along_axis(full, indices, P, axis=1)
    return full


def placement_costs(R, Y, indices, P, precision, alpha, tradeoff, log_floor):
    """E_i = lambda KL(P_i || Q_i) + (1 - lambda) KL(Q_i || P~_i) for every new point."""
    Pf = dense_rows(indices, P, R.shape[0])
    tau = ((Y[:, None, :] - R[None, :, :]) ** 2).sum(-1)
    H = ref.power_kernel(precision[:, None] * tau, alpha)
    Q = H / H.sum(axis=1, keepdims=True)
    pos = Pf > 0
    kl_pq = np.where(pos, Pf * np.log(np.where(pos, Pf, 1.0) / Q), 0.0).sum(axis=1)
    log_p = np.maximum(np.log(np.maximum(Pf, 1e-300)), log_floor)
    kl_qp = (Q * (np.log(Q) - log_p)).sum(axis=1)
    return tradeoff * kl_pq + (1 - tradeoff) * kl_qp


def placement_gradient(R, Y, indices, P, precision, alpha, tradeoff, log_floor):
    """dE_i / dy_i, shape (m, d), from the formula of the kernel's docstring."""
    Pf = dense_rows(indices, P, R.shape[0])
    diff = Y[:, None, :] - R[None, :, :]
    tau = (diff ** 2).sum(-1)
    b = precision[:, None]
    G = b / (1.0 + alpha * b * tau)
    H = ref.power_kernel(b * tau, alpha)
    Q = H / H.sum(axis=1, keepdims=True)
    log_p = np.maximum(np.log(np.maximum(Pf, 1e-300)), log_floor)
    kl_qp = (Q * (np.log(Q) - log_p)).sum(axis=1, keepdims=True)
    W_rep = Q * G * (tradeoff + (1 - tradeoff) * (np.log(Q) - log_p - kl_qp))
    W = tradeoff * Pf * G - W_rep
    return 2.0 * np.einsum("mn,mnd->md", W, diff)


def neighbour_terms(R, Y, indices, P, alpha):
    """What the k neighbours give each new point (precision 1): the attraction
    sum_j p_j S_j (y - r_j) (m, d), sum_j p_j (log p_j - log H_j) and sum_j p_j S_j."""
    diff = Y[:, None, :] - R[indices]
    tau = (diff ** 2).sum(-1)
    S = 1.0 / (1.0 + alpha * tau)
    H = ref.power_kernel(tau, alpha)
    positive = P > 0
    cross_entropy = np.where(positive, P * (np.log(np.where(positive, P, 1.0)) - np.log(H)),
                             0.0).sum(axis=1)
    return np.einsum("mk,mkd->md", P * S, diff), cross_entropy, (P * S).sum(axis=1)


def field_sums(R, Y, alpha):
    """Z(y) = sum_j H(|y - r_j|^2) (m,) and F(y) = sum_j H S (y - r_j) (m, d) over all
    reference points, and sum_j H S |y - r_j| (m,), the scale of F's terms."""
    diff = Y[:, None, :] - R[None, :, :]
    tau = (diff ** 2).sum(-1)
    H = ref.power_kernel(tau, alpha)
    K = H / (1.0 + alpha * tau)
    return H.sum(axis=1), np.einsum("mn,mnd->md", K, diff), (K * np.sqrt(tau)).sum(axis=1)
