"""NeRV's cost (Venna & Kaski, 2007): a tradeoff between the two KL divergences::

    E = tradeoff * sum_i KL(P_i || Q_i) + (1 - tradeoff) * sum_i KL(Q_i || P_i)

with conditional input neighbourhoods P_i and output neighbourhoods
q_ij proportional to exp(-beta_i ‖y_i - y_j‖²), of the same precisions beta_i.
The first divergence penalizes missed neighbours (recall; tradeoff = 1 is
SNE), the second false ones (precision). The kernel is
:func:`nbembed._kernels.nerv.nerv_gradient`.
"""

from __future__ import annotations

import numpy as np

from .._kernels import nerv as kernels
from ..optim import LiveParameter
from .base import Objective
from .forces import Forces, block_sq_distances, pair_sum, point_rows, row_blocks

TRADEOFF = LiveParameter("tradeoff", 0.0, 1.0, (0.0, 1.0), 0.05,
                         "0 favours precision (no false neighbours on the display), "
                         "1 recall (no missed neighbours; SNE)", label="tradeoff")

#: The terms of :meth:`NeRVObjective.forces` and their legend labels.
FORCE_TERMS = (("recall", "recall: toward missed input neighbours"),
               ("precision", "precision: away from false neighbours"))


class NeRVObjective(Objective):
    """E over the transposed embedding Yt, shape (d, n).

    Parameters
    ----------
    P : ndarray (n, n)
        Conditional input neighbourhoods, rows summing to one.
    beta : ndarray (n,)
        Precisions 1 / sigma_i^2 of the input and the output neighbourhoods.
    tradeoff : float
        In [0, 1] (live).
    logP : ndarray (n, n), optional
        log P with zeros floored (computed from P when not given).

    Attributes
    ----------
    info of :meth:`value_and_gradient` : tuple of float
        (sum_i KL(P_i || Q_i), sum_i KL(Q_i || P_i)) at the point evaluated.
    """

    name = "NeRV"
    live_parameters = {"tradeoff": TRADEOFF}
    force_terms = FORCE_TERMS

    def __init__(self, P, beta, tradeoff, logP=None):
        self.tradeoff = float(tradeoff)
        self.use_neighbourhoods(P, beta, logP)

    def use_neighbourhoods(self, P, beta, logP=None):
        """Evaluate against these neighbourhoods from now on (a widening stage, say)."""
        self.P = P
        self.beta = beta
        self.logP = kernels.floored_log(P) if logP is None else logP
        positive = P[P > 0]
        self.p_log_p = float(np.sum(positive * np.log(positive)))

    def value_and_gradient(self, Yt, grad):
        cross, kl_qp = kernels.nerv_gradient(Yt, self.P, self.logP, self.beta, self.tradeoff,
                                             kernels.GRADIENT_CHUNKS, grad)
        recall = self.p_log_p + cross
        return self.tradeoff * recall + (1.0 - self.tradeoff) * kl_qp, (recall, kl_qp)

    def forces(self, Yt, indices=None):
        """The gradient at Yt split into its recall and precision terms.

        With lambda the tradeoff, g_ij = lambda g^R_ij + (1 - lambda) g^P_ij,
        g^R_ij = q_ij - p_ij and g^P_ij = q_ij [log(q_ij / p~_ij) - KL(Q_i || P~_i)],
        and dE/dy_m = -2 sum_j (beta_m g_mj + beta_j g_jm) (y_m - y_j) is linear
        in g, so it splits into

        - ``recall``: the part of lambda sum_i KL(P_i || Q_i), which pulls
          points toward input neighbours they are missing on the display;
        - ``precision``: the part of (1 - lambda) sum_i KL(Q_i || P~_i), which
          pushes away display neighbours that are not input neighbours.

        Every point's normalizer and divergence need one pass over all pairs;
        the forces of ``indices`` then cost O(len(indices) n). See
        :mod:`nbembed.objectives.forces` for the conventions.

        Returns
        -------
        Forces
        """
        Y = np.ascontiguousarray(Yt, dtype=np.float64).T
        n = Y.shape[0]
        rows = point_rows(indices, n)
        offset, kl = self._row_statistics(Y)
        recall = np.empty((rows.size, Y.shape[1]))
        precision = np.empty_like(recall)
        start = 0
        for block in row_blocks(rows):
            tau = block_sq_distances(Y, block)
            w_recall, w_precision = self._pair_weights(block, tau, offset, kl)
            recall[start:start + block.size] = pair_sum(Y, block, w_recall)
            precision[start:start + block.size] = pair_sum(Y, block, w_precision)
            start += block.size
        return Forces(dict(recall=recall, precision=precision), dict(FORCE_TERMS),
                      indices=None if indices is None else rows)

    def _row_statistics(self, Y):
        """c_i with log q_ij = c_i - beta_i tau_ij, and KL(Q_i || P~_i), for every i."""
        n = Y.shape[0]
        offset = np.empty(n)
        kl = np.empty(n)
        for block in row_blocks(np.arange(n)):
            f = self.beta[block, None] * block_sq_distances(Y, block)
            f[np.arange(block.size), block] = np.inf
            shift = f.min(axis=1)
            offset[block] = shift - np.log(np.exp(-(f - shift[:, None])).sum(axis=1))
            log_q = offset[block, None] - f
            q = np.exp(log_q)
            log_q[np.arange(block.size), block] = 0.0
            kl[block] = np.sum(q * (log_q - self.logP[block]), axis=1)
        return offset, kl

    def _pair_weights(self, block, tau, offset, kl):
        """The weights W[a, j] of the recall and precision forces on i = block[a]:
        force = sum_j W[a, j] (y_i - y_j), both halves of every pair included."""
        beta = self.beta
        own = np.arange(block.size), block
        # Row i's pairs (i, j) and, through the symmetry of tau, the pairs (j, i).
        log_q_row = offset[block, None] - beta[block, None] * tau
        log_q_col = offset[None, :] - beta[None, :] * tau
        log_q_row[own] = log_q_col[own] = 0.0
        q_row, q_col = np.exp(log_q_row), np.exp(log_q_col)
        q_row[own] = q_col[own] = 0.0
        p_row, p_col = self.P[block], self.P[:, block].T
        logp_row, logp_col = self.logP[block], self.logP[:, block].T
        b_row, b_col = beta[block, None], beta[None, :]
        w_recall = -2.0 * self.tradeoff * (b_row * (q_row - p_row) + b_col * (q_col - p_col))
        w_precision = -2.0 * (1.0 - self.tradeoff) * (
            b_row * q_row * (log_q_row - logp_row - kl[block, None])
            + b_col * q_col * (log_q_col - logp_col - kl[None, :]))
        return w_recall, w_precision
