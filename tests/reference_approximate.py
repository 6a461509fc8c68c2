"""Slow, obviously correct NumPy versions of the approximate repulsion kernels.

The Barnes-Hut reference builds the quadtree recursively from the points'
integer grid coordinates and walks it point by point; the interpolation
reference writes the grid sums as dense matrices (Lagrange weights times the
node-to-node kernel) instead of FFTs. Both return Z = sum_{i != j} H_ij and
the forces sum_j H_ij S_ij (y_i - y_j).
"""

import numpy as np

from reference import power_kernel


def _h_s(tau, alpha):
    return power_kernel(tau, alpha), 1.0 / (1.0 + alpha * tau)


# --------------------------------------------------------------------------- Barnes-Hut

def _cell(points, q, level, levels, leaf_size):
    """A quadtree cell over ``points`` (indices): children split by the next bit
    of the integer coordinates ``q`` (n, 2)."""
    cell = dict(points=points, level=level, children=[])
    if len(points) > leaf_size and level < levels:
        shift = levels - level - 1
        quadrant = ((q[points, 0] >> shift) & 1) | (((q[points, 1] >> shift) & 1) << 1)
        for k in range(4):
            members = points[quadrant == k]
            if len(members):
                cell["children"].append(_cell(members, q, level + 1, levels, leaf_size))
    return cell


def barnes_hut(Y, alpha, theta, leaf_size, levels=21):
    """Z and forces by a recursive quadtree walk for each point.

    The bounding square starts at the smallest coordinates and has side
    max(x range, y range) * (1 + 1e-9); a point's cell at every level follows
    from its integer coordinates floor((y - corner) 2^levels / side). A cell
    of side s not holding y_i, whose centre of mass c lies at distance r from
    y_i, is taken whole when s < theta r, as the second-order expansion of its
    points' sums about c (covariance C, d = y_i - c):

        sum_j H(|d - u_j|^2) ~ m [H + H' tr C + 2 H'' d^T C d],
        sum_j K(|d - u_j|^2) (d - u_j) ~ m [(K + K' tr C + 2 K'' d^T C d) d + 2 K' C d],

    with K = H S and the derivatives in tau written out below.
    """
    n = Y.shape[0]
    corner = Y.min(axis=0)
    side = (Y.max(axis=0) - corner).max() * (1.0 + 1e-9) + 1e-300
    q = np.clip(((Y - corner) * (2 ** levels / side)).astype(np.int64), 0, 2 ** levels - 1)
    root = _cell(np.arange(n), q, 0, levels, leaf_size)
    z = 0.0
    forces = np.zeros((n, 2))

    def far(cell, d):
        pts = cell["points"]
        m = len(pts)
        C = np.cov(Y[pts].T, bias=True) if m > 1 else np.zeros((2, 2))
        h, s = _h_s(d @ d, alpha)
        k = h * s
        dh, ddh = -h * s, (1 + alpha) * h * s ** 2
        dk, ddk = -(1 + alpha) * k * s, (1 + alpha) * (1 + 2 * alpha) * k * s ** 2
        qd = d @ C @ d
        return (m * (h + dh * np.trace(C) + 2 * ddh * qd),
                m * ((k + dk * np.trace(C) + 2 * ddk * qd) * d + 2 * dk * (C @ d)))

    def visit(cell, i):
        pts = cell["points"]
        d = Y[i] - Y[pts].mean(axis=0)
        if i not in pts and (side / 2.0 ** cell["level"]) ** 2 < theta ** 2 * (d @ d):
            return far(cell, d)
        if not cell["children"]:
            others = pts[pts != i]
            diff = Y[i] - Y[others]
            h, s = _h_s((diff ** 2).sum(1), alpha)
            return h.sum(), (h * s) @ diff
        total_z, total_f = 0.0, np.zeros(2)
        for child in cell["children"]:
            cz, cf = visit(child, i)
            total_z += cz
            total_f += cf
        return total_z, total_f

    for i in range(n):
        zi, forces[i] = visit(root, i)
        z += zi
    return z, forces


# --------------------------------------------------------------------------- interpolation

def lagrange_weights(u, n_nodes):
    """Weights of the nodes (k + 1/2) / p of a unit box at positions u (n,), shape (n, p)."""
    nodes = (np.arange(n_nodes) + 0.5) / n_nodes
    w = np.ones((u.size, n_nodes))
    for k in range(n_nodes):
        for m in range(n_nodes):
            if m != k:
                w[:, k] *= (u - nodes[m]) / (nodes[k] - nodes[m])
    return w


def interpolation(Y, alpha, lo, h, n_boxes, n_nodes):
    """Z and forces from Lagrange interpolation on the grid of ``n_boxes`` boxes of
    side ``h`` per dimension starting at ``lo`` (2,), with dense matrices: the
    point-to-node weights W (n, M^2) and the node-to-node kernels (M^2, M^2)."""
    n = Y.shape[0]
    M = n_boxes * n_nodes
    W = np.ones((n, M, M))
    for k in range(2):
        t = (Y[:, k] - lo[k]) / h
        box = np.clip(np.floor(t).astype(int), 0, n_boxes - 1)
        wk = lagrange_weights(t - box, n_nodes)
        full = np.zeros((n, M))
        for a in range(n_nodes):
            full[np.arange(n), box * n_nodes + a] = wk[:, a]
        W *= full[:, :, None] if k == 0 else full[:, None, :]
    W = W.reshape(n, M * M)
    offsets = (np.arange(M) + 0.5) * h / n_nodes
    nodes = np.stack(np.meshgrid(lo[0] + offsets, lo[1] + offsets, indexing="ij"),
                     -1).reshape(-1, 2)
    tau = ((nodes[:, None, :] - nodes[None, :, :]) ** 2).sum(-1)
    H, S = _h_s(tau, alpha)
    # The grid's own version of each point's pair with itself is removed.
    z_i = W @ (H @ (W.T @ np.ones(n))) - np.einsum("ia,ab,ib->i", W, H, W)
    K = H * S
    k_sum = W @ (K @ (W.T @ np.ones(n)))
    k_y = W @ (K @ (W.T @ Y))
    forces = Y * k_sum[:, None] - k_y
    return z_i.sum(), forces
