"""Mbed's cost (Zien & Quinonero Candela, 2005): SNE with fixed class boundaries.

    cost = C - (A + B) + D

C is the SNE term sum_ij p_ij log(p_ij / q_ij) of the symmetrized input
neighbourhoods M = P + P^T; A (margin), B (balance) and D (label fit) depend on
the memberships m_ik = softmax_k(<w_k, y_i> / lambda) and exist only once
lambda is set (before that the cost is C alone: Algorithm 1's crude SNE). The
terms themselves are the kernels of :mod:`nbembed._kernels.mbed`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._kernels import mbed as kernels
from .._kernels import sne as sparse_kernels
from .._kernels.sne_grid import sne_cost_gradient_grid
from .base import Objective


class MbedObjective(Objective):
    """C - (A + B) + D over the transposed embedding Yt, shape (d, n).

    Parameters
    ----------
    M : ndarray (n, n) or scipy.sparse matrix
        P + P^T of the row-stochastic input neighbourhoods P.
    p_log_p : float
        sum_ij p_ij log p_ij (the constant part of C).
    directions : ndarray (K, d)
        Class directions w_k.
    soft_labels : ndarray (n, K)
        Label distributions T_i (before their confidence is annealed).
    label_weights : ndarray (n,)
        Weight of each point's label term, 0 for unlabelled points.
    label_weight : float
        Factor on all label terms.
    log_prior : ndarray (K,) or None
        log pi for the balance term -KL(mbar || pi); None: the entropy of mbar.
    repulsion : {"exact", "fft"}
        How C's normalizers are summed: over all pairs, or interpolated on a
        grid (then M is stored sparse).

    Attributes
    ----------
    lambda_ : float or None
        The boundaries' length scale in use; None: C alone.
    tau : float or None
        Confidence of the labels at this lambda (eq. 21).
    targets : ndarray (n, K)
        The label distributions at confidence tau.
    """

    name = "Mbed"

    def __init__(self, M, p_log_p, *, directions, soft_labels, label_weights, label_weight=1.0,
                 log_prior=None, repulsion="exact"):
        self.repulsion = repulsion
        if repulsion == "fft" and not sp.issparse(M):
            M = sp.csr_matrix(M)  # the grid path sums the attraction over stored entries
        self.M = M
        self.p_log_p = float(p_log_p)
        self.directions = directions
        self.n_classes = directions.shape[0]
        self.label_weight = float(label_weight)
        self.log_prior = log_prior
        self.lambda_ = None
        self.tau = None
        self._grid_cache = {}
        self.set_labels(soft_labels, label_weights)

    def set_labels(self, soft_labels, label_weights):
        """New label distributions and weights (at the current confidence)."""
        self.soft_labels = soft_labels
        self.label_weights = label_weights
        self._update_targets()

    def use_lambda(self, lam, radius):
        """Boundaries of length scale ``lam``; the labels' confidence follows it (eq. 21)
        for an embedding of radius ``radius``. None: back to C alone."""
        if lam is None:
            self.lambda_ = self.tau = None
        else:
            self.lambda_ = float(lam)
            self.tau = kernels.label_confidence(radius, self.lambda_, self.n_classes)
        self._update_targets()

    def _update_targets(self):
        self.targets = self.soft_labels if self.tau is None else \
            kernels.anneal_targets(self.soft_labels, self.tau)

    def value_and_gradient(self, Yt, grad):
        cost = self.p_log_p + self.sne_term(Yt, grad)
        if self.lambda_ is not None:
            extra, extra_grad, _ = self.boundary_terms(Yt)
            cost += extra
            grad += extra_grad.T
        return cost, None

    def sne_term(self, Yt, grad):
        """C without sum p log p; its gradient into ``grad``."""
        M = self.M
        if self.repulsion == "fft":
            if Yt.shape[0] == 2:
                return sne_cost_gradient_grid(Yt, M, grad, self._grid_cache)
            # A line is a plane with a zero second coordinate.
            plane_grad = np.empty((2, Yt.shape[1]))
            cost = sne_cost_gradient_grid(np.vstack([Yt, np.zeros_like(Yt)]), M, plane_grad,
                                          self._grid_cache)
            grad[0] = plane_grad[0]
            return cost
        if sp.issparse(M):
            return sparse_kernels.sne_gradient(Yt, M.indptr, M.indices, M.data,
                                               np.ones(Yt.shape[1]), 1.0, grad)
        return kernels.sne_cost_gradient(Yt, M, grad)

    def boundary_terms(self, Yt):
        """-(A + B) + D, its gradient (n, d) and the terms by name (A, B, D)."""
        return kernels.boundary_cost_gradient(
            Yt.T, self.directions, self.lambda_, self.targets,
            self.label_weight * self.label_weights, self.log_prior)

    def membership(self, Yt):
        """m_ik at the embedding, shape (n, K); None before lambda is set."""
        if self.lambda_ is None:
            return None
        return np.exp(kernels.log_membership(Yt.T, self.directions, self.lambda_))
