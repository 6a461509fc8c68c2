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
from .._validation import check_annotations, check_labels
from .base import Objective
from .forces import Forces, point_rows

#: Largest accepted deviation from 1 of a soft label's sum or of a class prior's sum.
SUM_TOLERANCE = 1e-6


def label_inputs(y, annotations, n_samples, n_classes):
    """Soft labels and their weights from ``y`` and ``annotations``.

    ``y`` holds hard labels (-1 for unlabelled points) or, as a 2-D array, one
    probability vector per point (a row of zeros for unlabelled points).
    Labelled points in ``annotations`` override ``y``; their weight is the
    annotation's confidence, 1 for labels from ``y``.

    Returns
    -------
    soft : ndarray (n, K)
        Rows of labelled points sum to one; others are uniform.
    weights : ndarray (n,)
        0 for unlabelled points.
    """
    K = n_classes
    soft = np.zeros((n_samples, K))
    weights = np.zeros(n_samples)
    if y is not None:
        arr = np.asarray(y)
        if arr.ndim == 2:
            _check_soft_labels(arr, n_samples, K)
            rows = arr.sum(axis=1) > 0
            soft[rows] = arr[rows]
        else:
            labels = check_labels(arr, n_samples)
            if np.any(labels >= K):
                raise ValueError(f"y has labels outside [0, n_classes) = [0, {K}), e.g. "
                                 f"{int(labels[labels >= K][0])}; use 0..{K - 1} for classes "
                                 f"and -1 for unlabelled points, or raise n_classes.")
            rows = labels >= 0
            soft[rows, labels[rows]] = 1.0
        weights[rows] = 1.0
    if annotations is not None:
        check_annotations(annotations, n_samples)
        if annotations.n_classes > K:
            raise ValueError(f"annotations use {annotations.n_classes} classes but n_classes "
                             f"= {K}; raise n_classes or remove the extra classes' labels.")
        rows = annotations.labelled_mask()
        given = annotations.soft_label_matrix()
        soft[rows] = 0.0
        soft[rows, :given.shape[1]] = given[rows]
        weights[rows] = annotations.confidences()[rows]
    soft[weights == 0] = 1.0 / K
    return soft, weights


def _check_soft_labels(T, n_samples, n_classes):
    if T.shape != (n_samples, n_classes):
        raise ValueError(f"soft labels y must have shape (n_samples, n_classes) = "
                         f"{(n_samples, n_classes)}; got {T.shape}.")
    if T.dtype.kind not in "biuf" or not np.all(np.isfinite(T)):
        raise ValueError("soft labels y must be finite numbers.")
    if np.any(T < 0):
        raise ValueError("soft labels y must be non-negative probabilities.")
    sums = T.sum(axis=1)
    bad = np.flatnonzero((sums > 0) & (np.abs(sums - 1.0) > SUM_TOLERANCE))
    if bad.size:
        raise ValueError(f"soft label rows must sum to 1 (or be all zero for unlabelled "
                         f"points); row {bad[0]} sums to {sums[bad[0]]:.6g}.")

#: The terms of :meth:`MbedObjective.forces` and their legend labels.
FORCE_TERMS = (("sne", "SNE: input neighbourhoods"),
               ("margin", "margin: away from class boundaries"),
               ("balance", "balance: toward even class sizes"),
               ("labels", "labels: toward the labelled class"))


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
    annotation_kinds = ("labels", "soft_labels")
    force_terms = FORCE_TERMS

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
        self._pair_exp = None
        self.set_labels(soft_labels, label_weights)

    def set_labels(self, soft_labels, label_weights):
        """New label distributions and weights (at the current confidence)."""
        self.soft_labels = soft_labels
        self.label_weights = label_weights
        self._update_targets()

    def set_annotations(self, annotations=None, y=None):
        """Use the hard and soft labels of ``y`` and ``annotations`` (see
        :func:`label_inputs`) from now on."""
        self.set_labels(*label_inputs(y, annotations, self.label_weights.shape[0],
                                      self.n_classes))

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
        d, n = Yt.shape
        size = n * (n - 1) // 2 if kernels.keeps_exponentials(n, d) else 0
        if self._pair_exp is None or self._pair_exp.size != size:
            # kept between evaluations: a fresh half n x n matrix each time would
            # cost its first touch of every page
            self._pair_exp = np.empty(size)
        return kernels.sne_cost_gradient_kept(Yt, M, grad, self._pair_exp)

    def boundary_terms(self, Yt):
        """-(A + B) + D, its gradient (n, d) and the terms by name (A, B, D)."""
        return kernels.boundary_cost_gradient(*self._boundary_arguments(Yt))

    def _boundary_arguments(self, Yt):
        return (Yt.T, self.directions, self.lambda_, self.targets,
                self.label_weight * self.label_weights, self.log_prior)

    def membership(self, Yt):
        """m_ik at the embedding, shape (n, K); None before lambda is set."""
        if self.lambda_ is None:
            return None
        return np.exp(kernels.log_membership(Yt.T, self.directions, self.lambda_))

    def forces(self, Yt, indices=None):
        """The gradient at Yt split into the terms of C - (A + B) + D.

        - ``sne``: dC/dy_i, the SNE term (attraction to input neighbours and
          repulsion together, from the same kernel as the gradient);
        - ``margin``: -dA/dy_i, away from the class boundaries;
        - ``balance``: -dB/dy_i, toward memberships of the class sizes (or
          prior) the balance term asks for;
        - ``labels``: dD/dy_i, labelled points toward their classes.

        Before lambda is set (the crude SNE of Algorithm 1) the cost is C
        alone and the last three are zero. C and the memberships' mean are
        sums over all points, so every evaluation costs what the gradient
        does; ``indices`` only selects rows. See
        :mod:`nbembed.objectives.forces` for the conventions.

        Returns
        -------
        Forces
        """
        Yt = np.ascontiguousarray(Yt, dtype=np.float64)
        rows = point_rows(indices, Yt.shape[1])
        sne = np.empty_like(Yt)
        self.sne_term(Yt, sne)
        terms = dict(sne=sne.T[rows], margin=None, balance=None, labels=None)
        if self.lambda_ is None:
            zero = np.zeros((rows.size, Yt.shape[0]))
            terms.update(margin=zero, balance=zero.copy(), labels=zero.copy())
        else:
            (_, dA), (_, dB), (_, dD) = kernels.boundary_parts(*self._boundary_arguments(Yt))
            for name, dS in (("margin", -dA), ("balance", -dB), ("labels", dD)):
                terms[name] = kernels.scores_to_embedding(dS[rows], self.directions,
                                                          self.lambda_)
        return Forces(terms, dict(FORCE_TERMS), indices=None if indices is None else rows)
