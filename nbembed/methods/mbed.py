"""Mbed: large-margin non-linear embedding (Zien & Quinonero Candela, ICML 2005).

SNE with fixed class boundaries: K class directions w_k at equal angles split
the embedding into regions, memberships m_ik = softmax_k(<w_k, y_i> / lambda)
say which region a point is in, and the cost

    C - (A + B) + D

adds to the SNE term C a margin A (minus the mean entropy of the
memberships: points leave the boundaries), a balance B (entropy of the mean
membership, or -KL(mbar || prior)) and, for labelled points, D = sum KL(T_i || M_i).
Algorithm 1 of the paper anneals lambda from 20 r to 0.2 r (r the radius of
a crude SNE embedding) with conjugate-gradient steps in between, and returns
the annealing step whose embedding separates its classes best (Fisher's
criterion for K = 2, the Hotelling-Lawley trace for K > 2). The conjugate
gradients are :class:`~nbembed.optim.descent.LineSearchDescent` with
Polak-Ribiere+ directions and the constants of ``minimize.m`` (see
``LINE_SEARCH``). See docs/mbed.md.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import replace

import numpy as np
import scipy.sparse as sp
from sklearn.metrics import pairwise_distances
from sklearn.utils import check_random_state

from .. import _config
from .._kernels import mbed as kernels
from .._kernels import sne as sparse_kernels
from .._kernels.sne_grid import sne_cost_gradient_grid
from .._validation import check_dense_allowed, check_labels, check_number, check_option
from ..affinity.perplexity import NEIGHBORS, nearest_neighbors
from . import hssne as hssne_method
from ..optim import LiveParameter, Run
from ..optim.descent import LineSearchDescent
from ..optim.directions import PolakRibiere
from ..optim.line_search import WolfeSettings
from ._base import EmbeddingEstimator, enable_verbose_logging, validate_input

logger = logging.getLogger("nbembed")

LAMBDA = LiveParameter(
    "lambda_", 0.0, math.inf, (0.05, 30.0), 0.05,
    "Length scale of the class boundaries (larger = softer memberships, wider margin); "
    "automatic: annealed from 20 r to 0.2 r", label="λ", allows_auto=True, low_open=True)

#: Standard deviation of the start of the crude SNE embedding (Algorithm 1, line 2).
SNE_INIT_SCALE = 0.1
#: Standard deviation of the re-initialization before annealing, in units of the
#: radius r (Algorithm 1, line 5).
ANNEAL_INIT_SCALE = 1e-3
#: lambda runs from LAMBDA_START * r down to LAMBDA_END * r (Algorithm 1, line 7).
LAMBDA_START, LAMBDA_END = 20.0, 0.2
#: Largest accepted deviation from 1 of a soft label's sum or of a class prior's sum.
SUM_TOLERANCE = 1e-6
#: Neighbours per point of the sparse input neighbourhoods (``affinity="knn"``).
KNN_NEIGHBORS = 90
#: Random points among which the dissimilarities estimate the 1/K quantile of
#: ``sigma="auto"`` when not all pairs are computed (``affinity="knn"``): about
#: 250 000 pairs.
SIGMA_SAMPLE_POINTS = 700
AFFINITIES = ("auto", "exact", "knn")
REPULSIONS = ("auto", "exact", "fft")


# -- Algorithm 1's schedule and criterion ------------------------------------------------------

def lambda_schedule(radius, n_anneal):
    """lambda_j = 2 r 10 / 100^((j - 2) / (p - 2)) for j = 2..p: from 20 r to 0.2 r."""
    j = np.arange(n_anneal - 1)
    return LAMBDA_START * radius * (LAMBDA_END / LAMBDA_START) ** (j / (n_anneal - 2))


def iterations_per_step(n_iter, n_anneal):
    """The n_iter annealing iterations spread evenly over the p - 1 steps."""
    base, extra = divmod(n_iter, n_anneal - 1)
    return np.array([base + (j < extra) for j in range(n_anneal - 1)], dtype=np.int64)


def embedding_radius(Y):
    """Geometric mean of the per-dimension standard deviations of Y (n, d)."""
    std = Y.std(axis=0)
    if np.all(std > 0):
        return float(np.exp(np.mean(np.log(std))))
    rms = float(np.sqrt(np.mean(std ** 2)))
    return rms if rms > 0 else 1.0


def margin_criterion(Y, labels, directions):
    """How well the groups ``labels`` separate in Y; larger is better.

    K = 2: Fisher's J of the coordinate along w_1 (the normal of the boundary),
    ``(mean_+ - mean_-)^2 / (var_+ + var_-)``. K > 2: the Hotelling-Lawley trace
    tr(H E^-1) of the between-group (H) and within-group (E) scatter matrices.
    Both are invariant to the scale of Y. 0 when fewer than two groups are
    non-empty.

    Parameters
    ----------
    Y : ndarray (n, d)
    labels : ndarray (n,) of int
    directions : ndarray (K, d)
    """
    groups = [np.flatnonzero(labels == k) for k in range(directions.shape[0])]
    groups = [g for g in groups if g.size]
    if len(groups) < 2:
        return 0.0
    if directions.shape[0] == 2:
        u = Y @ directions[0]
        a, b = u[labels == 0], u[labels == 1]
        spread = a.var() + b.var()
        gap = (a.mean() - b.mean()) ** 2
        return float(gap / spread) if spread > 0 else (math.inf if gap > 0 else 0.0)
    mean = Y.mean(axis=0)
    d = Y.shape[1]
    H = np.zeros((d, d))
    E = np.zeros((d, d))
    for g in groups:
        centred = Y[g] - Y[g].mean(axis=0)
        E += centred.T @ centred
        shift = Y[g].mean(axis=0) - mean
        H += g.size * np.outer(shift, shift)
    return float(np.trace(H @ np.linalg.pinv(E)))


# -- inputs ---------------------------------------------------------------------------------

def input_neighbourhoods(D, sigma):
    """p_ij = exp(-d_ij^2 / sigma^2) / sum_{k != i} exp(-d_ik^2 / sigma^2), p_ii = 0.

    Parameters
    ----------
    D : ndarray (n, n)
        Dissimilarities, zero diagonal.
    sigma : float

    Returns
    -------
    ndarray (n, n), rows summing to one
    """
    logits = -(D * D) / sigma ** 2
    np.fill_diagonal(logits, -np.inf)
    logits -= logits.max(axis=1, keepdims=True)
    P = np.exp(logits)
    P /= P.sum(axis=1, keepdims=True)
    return P


def sparse_input_neighbourhoods(dist, idx, sigma):
    """p_ij = exp(-d_ij^2 / sigma^2) normalized over the k nearest neighbours of i.

    Parameters
    ----------
    dist, idx : ndarray (n, k)
        Each point's neighbours (itself excluded) and their dissimilarities.
    sigma : float

    Returns
    -------
    scipy.sparse.csr_matrix (n, n), rows summing to one
    """
    n, k = dist.shape
    logits = -np.square(dist, dtype=np.float64) / sigma ** 2
    logits -= logits.max(axis=1, keepdims=True)
    P = np.exp(logits)
    P /= P.sum(axis=1, keepdims=True)
    return sp.csr_matrix((P.ravel(), idx.ravel(), np.arange(0, n * k + 1, k)), shape=(n, n))


def default_sigma(D, n_classes):
    """The 1/K quantile of the off-diagonal dissimilarities (the paper's choice)."""
    off = D[~np.eye(D.shape[0], dtype=bool)]
    sigma = float(np.quantile(off, 1.0 / n_classes))
    if not sigma > 0:
        raise ValueError(f"sigma='auto' is the 1/{n_classes} quantile of the pairwise "
                         f"dissimilarities, which is {sigma:g} here (many identical points?). "
                         f"Pass a positive sigma explicitly.")
    return sigma


def sampled_sigma(X, n_classes, metric, random_state):
    """:func:`default_sigma` on ``SIGMA_SAMPLE_POINTS`` random points: the 1/K
    quantile of the dissimilarities among them, without all pairs of X."""
    n = X.shape[0]
    rng = check_random_state(random_state)
    chosen = np.sort(rng.choice(n, size=min(n, SIGMA_SAMPLE_POINTS), replace=False))
    if metric == "precomputed":
        D = X[chosen][:, chosen]
        D = D.toarray() if sp.issparse(D) else np.asarray(D)
    else:
        D = pairwise_distances(X[chosen], metric=metric)
    return default_sigma(D, n_classes)


def check_class_prior(prior, n_classes):
    """A class prior as log pi, or None."""
    if prior is None:
        return None
    pi = np.asarray(prior, dtype=np.float64)
    if pi.shape != (n_classes,):
        raise ValueError(f"class_prior must have one entry per class, shape ({n_classes},); "
                         f"got shape {pi.shape}.")
    if not np.all(np.isfinite(pi)) or np.any(pi <= 0):
        raise ValueError(f"class_prior must be a probability distribution with positive "
                         f"entries; got {pi.tolist()}.")
    if abs(pi.sum() - 1.0) > SUM_TOLERANCE:
        raise ValueError(f"class_prior must sum to 1 (a probability distribution); it sums "
                         f"to {pi.sum():.6g}.")
    return np.log(pi / pi.sum())


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
        if annotations.n_samples != n_samples:
            raise ValueError(f"annotations are for {annotations.n_samples} samples but X has "
                             f"{n_samples}.")
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


# -- the optimizer ----------------------------------------------------------------------------

#: The paper optimized with C. E. Rasmussen's ``minimize.m``: Polak-Ribiere+ conjugate
#: gradients and a strong Wolfe line search with sufficient decrease 0.01, curvature
#: 0.5, extrapolation at most 3x and at most 20 evaluations per search; the first
#: step 1 / (1 + |g|^2), each later first guess the last step scaled by the ratio of
#: the last two initial slopes (at most 100).
LINE_SEARCH = WolfeSettings(c1=0.01, c2=0.5, max_evaluations=20, growth=3.0)


def conjugate_gradients(objective, x):
    """The optimizer of Algorithm 1's steps: ``minimize.m``'s settings on ``objective``.

    Parameters
    ----------
    objective : callable
        ``objective(x) -> (f, g)`` for a flat float64 array.
    x : ndarray
        Updated in place (a view of the run's embedding).

    Returns
    -------
    LineSearchDescent
    """
    return LineSearchDescent(objective, x, PolakRibiere(), line_search=LINE_SEARCH,
                             first_step="inverse_gradient", continued_step="slope_ratio",
                             max_step_ratio=100.0)


# -- the run ----------------------------------------------------------------------------------

class MbedRun(Run):
    """A resumable Mbed optimization: Algorithm 1 one CG iteration at a time.

    The schedule: ``n_iter_init`` iterations of SNE alone from N(0, 0.1^2);
    then the radius r of that embedding, a restart from N(0, (1e-3 r)^2) and
    ``n_anneal - 1`` annealing steps with lambda from 20 r down to 0.2 r,
    sharing the remaining iterations. At the end of each step its embedding,
    memberships, lambda and margin criterion are kept.

    Live parameter ``lambda_``: a number holds lambda there (the schedule
    pauses and the run continues from the current embedding); None returns
    to the schedule where it paused. :meth:`set_annotations` replaces the
    labels from the next iteration on.

    Parameters
    ----------
    M : ndarray (n, n)
        P + P^T of the row-stochastic input neighbourhoods P.
    p_log_p : float
        sum_ij p_ij log p_ij (the constant part of C).
    Y0 : ndarray (n, d)
        Start of the initial SNE.
    restart_noise : ndarray (d, n)
        Standard normal draws for the restart before annealing.
    directions : ndarray (K, d)
        Class directions w_k.
    soft_labels : ndarray (n, K)
        Label distributions (before annealing their confidence).
    label_weights : ndarray (n,)
        Weight of each point's label term, 0 for unlabelled points.
    label_weight : float
        Factor on all label terms.
    log_prior : ndarray (K,) or None
        log pi for the balance term -KL(mbar || pi).
    n_iter, n_iter_init, n_anneal : int
        The schedule: iterations in all, for the initial SNE, and p.

    Attributes
    ----------
    lambda_ : float or None
        The held lambda, None while the schedule decides.
    current_lambda : float or None
        The lambda in use (None during the initial SNE).
    tau : float or None
        The label confidence (eq. 21) in use.
    radius : float or None
        r, known after the initial SNE.
    schedule_position : int
        Iterations done under the schedule (``iteration`` also counts those
        with a held lambda).
    sne_embedding : ndarray or None
        The crude SNE embedding r was measured on.
    step_embeddings, step_memberships, lambda_path, criterion_path : list
        One entry per completed annealing step.
    """

    name = "Mbed"
    live_parameters = {"lambda_": LAMBDA}
    annotation_kinds = ("labels", "soft_labels")

    def __init__(self, M, p_log_p, Y0, restart_noise, *, directions, soft_labels,
                 label_weights, label_weight=1.0, log_prior=None, n_iter=500, n_iter_init=10,
                 n_anneal=20, repulsion="exact"):
        self.repulsion = repulsion
        if repulsion == "fft" and not sp.issparse(M):
            M = sp.csr_matrix(M)  # the grid path sums the attraction over stored entries
        self.M = M
        self._grid_cache = {}
        self._p_log_p = float(p_log_p)
        self._Yt = np.ascontiguousarray(np.asarray(Y0, dtype=np.float64).T)
        self._restart_noise = restart_noise
        self.directions = directions
        self.n_classes = directions.shape[0]
        self.label_weight = float(label_weight)
        self.log_prior = log_prior
        self.n_iter = int(n_iter)
        self.n_iter_init = int(n_iter_init)
        self.n_anneal = int(n_anneal)
        self._step_ends = self.n_iter_init + np.cumsum(
            iterations_per_step(self.n_iter - self.n_iter_init, self.n_anneal))
        self.iteration = 0
        self.schedule_position = 0
        self.history = []
        self.lambda_ = None
        self.current_lambda = None
        self.tau = None
        self.radius = None
        self.anneal_step = None
        self.sne_embedding = None
        self.step_embeddings = []
        self.step_memberships = []
        self.lambda_path = []
        self.criterion_path = []
        self._soft = soft_labels
        self._weights = label_weights
        self._targets = soft_labels
        self._started = time.perf_counter()
        self._descent = conjugate_gradients(self._objective, self._Yt.reshape(-1))
        if self.n_iter_init == 0:
            self._start_annealing()

    # -- state ---------------------------------------------------------------
    @property
    def embedding(self):
        """A copy of the current embedding, shape (n_samples, n_components)."""
        return self._Yt.T.copy()

    @property
    def n_samples(self):
        return self._Yt.shape[1]

    @property
    def remaining(self):
        """Iterations left in the schedule; those with a held lambda do not count."""
        return max(0, self.n_iter - self.schedule_position)

    @property
    def done(self):
        """True once the schedule (``n_iter`` iterations) is complete."""
        return self.remaining == 0

    @property
    def membership(self):
        """Current class probabilities m_ik, shape (n_samples, n_classes); None
        during the initial SNE, before lambda exists."""
        with _config.KERNEL_LOCK:
            if self.current_lambda is None:
                return None
            return np.exp(kernels.log_membership(self._Yt.T, self.directions,
                                                 self.current_lambda))

    @property
    def selected_step(self):
        """Index of the completed annealing step with the largest criterion, or None."""
        if not self.criterion_path:
            return None
        return int(np.argmax(self.criterion_path))

    @property
    def cost(self):
        """The objective in use at the current embedding (computed now)."""
        with _config.KERNEL_LOCK:
            f, _ = self._objective(self._Yt.reshape(-1))
            return float(f)

    # -- control -------------------------------------------------------------
    def set_params(self, **params):
        """Hold lambda at a value, or give it back to the schedule with None.

        The run continues from the current embedding; the label confidence
        follows lambda (eq. 21).

        Parameters
        ----------
        lambda_ : float or None
            A positive value holds lambda; None returns to the annealing.

        Returns
        -------
        self

        Raises
        ------
        ValueError, TypeError
            For an unknown name or a value that is not positive; nothing changes.
        """
        checked = self.check_params(params)
        if "lambda_" not in checked:
            return self
        value = checked["lambda_"]
        with _config.KERNEL_LOCK:
            self.lambda_ = value
            if value is not None:
                self._use_lambda(value)
            elif self.anneal_step is not None:
                self._use_lambda(lambda_schedule(self.radius, self.n_anneal)[self.anneal_step])
            else:
                self.current_lambda = None
                self.tau = None
                self._descent.reset()
        return self

    def set_annotations(self, annotations=None, y=None):
        """Use these labels from the next iteration on; the embedding is kept.

        Parameters
        ----------
        annotations : Annotations, optional
            Hard and soft labels with confidences (used as weights).
        y : array-like, optional
            Hard labels (-1 for unlabelled points) or soft labels (n, K).

        Returns
        -------
        self
        """
        soft, weights = label_inputs(y, annotations, self.n_samples, self.n_classes)
        with _config.KERNEL_LOCK:
            self._soft = soft
            self._weights = weights
            self._update_targets()
            self._descent.reset()
        return self

    # -- internals -----------------------------------------------------------
    def _objective(self, x):
        Yt = x.reshape(self._Yt.shape)
        grad = np.empty_like(Yt)
        cost = self._p_log_p + self._sne_term(Yt, grad)
        if self.current_lambda is not None:
            extra, extra_grad, _ = self._boundary(Yt)
            cost += extra
            grad += extra_grad.T
        return cost, grad.reshape(-1)

    def _sne_term(self, Yt, grad):
        """The SNE cost without sum p log p; its gradient into ``grad``."""
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

    def _boundary(self, Yt):
        return kernels.boundary_cost_gradient(
            Yt.T, self.directions, self.current_lambda, self._targets,
            self.label_weight * self._weights, self.log_prior)

    def _use_lambda(self, lam):
        self.current_lambda = float(lam)
        radius = self.radius if self.radius is not None else embedding_radius(self._Yt.T)
        self.tau = kernels.label_confidence(radius, self.current_lambda, self.n_classes)
        self._update_targets()
        self._descent.reset()

    def _update_targets(self):
        if self.tau is not None:
            self._targets = kernels.anneal_targets(self._soft, self.tau)

    def _iterate(self):
        before = self._Yt.copy()
        self._descent.iterate()
        if not np.all(np.isfinite(self._Yt)):  # cannot happen by design; never show it
            logger.warning("%s: non-finite embedding at iteration %d; kept the last good one.",
                           self.name, self.iteration)
            self._Yt[:] = before
            self._descent.reset()
        return {}

    def _after_iteration(self):
        if self.lambda_ is None:  # a held lambda pauses the schedule
            self.schedule_position += 1
            self._follow_schedule()

    def _follow_schedule(self):
        position = self.schedule_position
        if self.anneal_step is None:
            if position == self.n_iter_init:
                self._start_annealing()
            return
        if self.anneal_step < len(self._step_ends) and position == self._step_ends[
                self.anneal_step]:
            self._finish_step()
            if self.anneal_step + 1 < len(self._step_ends):
                self.anneal_step += 1
                self._use_lambda(lambda_schedule(self.radius, self.n_anneal)[self.anneal_step])

    def _start_annealing(self):
        self.sne_embedding = self.embedding
        self.radius = embedding_radius(self.sne_embedding)
        self._Yt[:] = ANNEAL_INIT_SCALE * self.radius * self._restart_noise
        self.anneal_step = 0
        slider = (round(0.5 * LAMBDA_END * self.radius, 3),
                  round(1.5 * LAMBDA_START * self.radius, 3))
        self.live_parameters = {"lambda_": replace(LAMBDA, slider=slider,
                                                   step=max(slider[0], 1e-3))}
        self._use_lambda(lambda_schedule(self.radius, self.n_anneal)[0])
        logger.info("%s: radius r = %.4g after %d SNE iterations.", self.name, self.radius,
                    self.iteration)

    def _finish_step(self):
        Y = self._Yt.T
        membership = np.exp(kernels.log_membership(Y, self.directions, self.current_lambda))
        criterion = margin_criterion(Y, membership.argmax(axis=1), self.directions)
        self.step_embeddings.append(Y.copy())
        self.step_memberships.append(membership)
        self.lambda_path.append(self.current_lambda)
        self.criterion_path.append(criterion)
        logger.info("%s: annealing step %d, lambda %.4g, criterion %.4g.", self.name,
                    self.anneal_step, self.current_lambda, criterion)

    def _record(self, stats):
        self._descent.evaluate()
        cost = self._descent.f if self._descent.finite else math.inf
        parts = dict(A=math.nan, B=math.nan, D=math.nan, C=cost)
        if self.current_lambda is not None and math.isfinite(cost):
            extra, _, terms = self._boundary(self._Yt)
            parts = dict(terms, C=cost - extra)
        if self.lambda_ is not None:
            phase = "held"
        elif self.anneal_step is None:
            phase = "sne"
        else:
            phase = "anneal"
        self.history.append(dict(
            iteration=self.iteration, cost=cost, **{"lambda": self.current_lambda},
            lambda_=self.lambda_, tau=self.tau, phase=phase, anneal_step=self.anneal_step,
            evaluations=self._descent.evaluations, seconds=time.perf_counter() - self._started,
            **parts))


# -- the estimator ----------------------------------------------------------------------------

class Mbed(EmbeddingEstimator):
    """Large-margin non-linear embedding with (soft) labels (Mbed).

    Embeds points by SNE while fixed class boundaries push them into K
    regions, away from the boundaries and in balanced numbers; labelled points
    are pulled into their class. The result is an embedding and, for every
    point, class probabilities: a clustering without labels, a transductive
    classification with some.

    Parameters
    ----------
    n_classes : int, default=2
        K >= 2, the number of classes (clusters).
    n_components : int or None, default=None
        Embedding dimension d, at least K - 1; None is K (the paper's choice).
    n_anneal : int, default=20
        p, the number of steps of Algorithm 1: the initial SNE plus p - 1
        annealing steps (at least 3).
    max_iter : int, default=500
        Conjugate-gradient iterations (line searches) in all.
    n_iter_init : int, default=10
        Of those, for the crude SNE embedding that sets the radius r; the
        rest are spread evenly over the annealing steps.
    class_prior : array-like of shape (K,) or None, default=None
        Known class proportions pi: the balance term becomes -KL(mbar || pi)
        instead of the entropy of the mean membership.
    label_weight : float, default=1.0
        Factor on the label term D (1 in the paper).
    metric : str, default="euclidean"
        Input metric for ``sklearn.metrics.pairwise_distances``, or
        "precomputed" for a matrix of dissimilarities (non-negative, zero
        diagonal, not necessarily a metric).
    sigma : "auto" or float, default="auto"
        Width of the input neighbourhoods exp(-d_ij^2 / sigma^2); "auto" is
        the 1/K quantile of all pairwise dissimilarities (with
        ``affinity="knn"``, of those among 700 random points).
    affinity : {"auto", "exact", "knn"}, default="auto"
        Input neighbourhoods over all pairs (dense, the paper's), or over the
        ``n_neighbors`` nearest neighbours of each point (sparse, memory
        O(n k)). The neighbourhoods are wide (sigma is a quantile of all
        distances), so truncating them changes the objective: each point then
        attracts its nearest neighbours only. "auto" is exact up to 5000
        points (``nbembed._config.DENSE_AFFINITY_MAX_N``).
    n_neighbors : int or None, default=None
        Neighbours per point for ``affinity="knn"``; None is min(n - 1, 90).
    neighbors : {"auto", "exact", "approximate"}, default="auto"
        How the nearest neighbours are found (see :class:`~nbembed.HSSNE`).
    repulsion : {"auto", "exact", "fft"}, default="auto"
        How the normalizers Z_i = sum_j exp(-||y_i - y_j||^2) of the output
        neighbourhoods and their gradient are computed: over all pairs, O(n^2)
        per evaluation, or by FFT-accelerated interpolation on a grid of node
        spacing 0.1, O(n + grid) (``n_components`` <= 2 only). "auto" is exact
        up to 10 000 points (as for HSSNE, see docs/scale.md).
    random_state : int, RandomState or None
    verbose : bool, default=False
        Log the radius and each annealing step through the ``nbembed`` logger.

    Attributes
    ----------
    embedding_ : ndarray (n_samples, n_components)
        The embedding of the selected annealing step.
    membership_ : ndarray (n_samples, n_classes)
        Class probabilities m_ik at the selected step.
    labels_ : ndarray (n_samples,)
        argmax of ``membership_``.
    step_embeddings_ : ndarray (n_anneal - 1, n_samples, n_components)
        The embedding at the end of every annealing step.
    step_memberships_ : ndarray (n_anneal - 1, n_samples, n_classes)
    lambda_path_ : ndarray (n_anneal - 1,)
        lambda of every annealing step.
    criterion_path_ : ndarray (n_anneal - 1,)
        Margin criterion of every step (Fisher's J for K = 2, the
        Hotelling-Lawley trace for K > 2).
    selected_step_ : int
        Index of the step with the largest criterion (the paper's step
        ``selected_step_ + 2``).
    sne_embedding_ : ndarray (n_samples, n_components)
        The crude SNE embedding that set the radius.
    radius_ : float
    sigma_ : float
    directions_ : ndarray (n_classes, n_components)
        The class directions w_k.
    cost_ : float
        The objective at the end of the run.
    history_ : list of dict
    n_iter_ : int
    n_features_in_ : int

    References
    ----------
    A. Zien, J. Quinonero Candela. Large margin non-linear embedding. ICML 2005.

    Examples
    --------
    >>> import numpy as np
    >>> from nbembed.methods.mbed import Mbed
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(-3, 1, (40, 5)), rng.normal(3, 1, (40, 5))])
    >>> model = Mbed(n_classes=2, max_iter=100, random_state=0).fit(X)
    >>> model.embedding_.shape, model.membership_.shape
    ((80, 2), (80, 2))
    """

    live_parameters = MbedRun.live_parameters
    annotation_kinds = MbedRun.annotation_kinds

    def __init__(self, n_classes=2, n_components=None, *, n_anneal=20, max_iter=500,
                 n_iter_init=10, class_prior=None, label_weight=1.0, metric="euclidean",
                 sigma="auto", affinity="auto", n_neighbors=None, neighbors="auto",
                 repulsion="auto", random_state=None, verbose=False):
        self.n_classes = n_classes
        self.n_components = n_components
        self.n_anneal = n_anneal
        self.max_iter = max_iter
        self.n_iter_init = n_iter_init
        self.class_prior = class_prior
        self.label_weight = label_weight
        self.metric = metric
        self.sigma = sigma
        self.affinity = affinity
        self.n_neighbors = n_neighbors
        self.neighbors = neighbors
        self.repulsion = repulsion
        self.random_state = random_state
        self.verbose = verbose

    def _check_params(self, n):
        K = check_number(self.n_classes, "n_classes", low=2, integer=True)
        if K > n:
            raise ValueError(f"n_classes = {K} is larger than n_samples = {n}; there must be "
                             f"at least as many points as classes.")
        d = K if self.n_components is None else check_number(
            self.n_components, "n_components", low=max(1, K - 1), integer=True)
        n_anneal = check_number(self.n_anneal, "n_anneal", low=3, integer=True)
        n_iter_init = check_number(self.n_iter_init, "n_iter_init", low=0, integer=True)
        n_iter = check_number(self.max_iter, "max_iter", low=n_iter_init + n_anneal - 1,
                              integer=True)
        label_weight = check_number(self.label_weight, "label_weight", low=0)
        log_prior = check_class_prior(self.class_prior, K)
        return K, d, dict(n_iter=n_iter, n_iter_init=n_iter_init, n_anneal=n_anneal,
                          label_weight=label_weight, log_prior=log_prior)

    def prepare(self, X, y=None, annotations=None, init=None):
        """Build the neighbourhoods and the start; return a resumable :class:`MbedRun`.

        Parameters
        ----------
        X : array-like (n_samples, n_features) or (n_samples, n_samples)
            Data, or dissimilarities with ``metric="precomputed"``.
        y : array-like, optional
            Hard labels (n_samples,) with -1 for unlabelled points, or soft
            labels (n_samples, n_classes) with rows summing to 1 (all zero for
            unlabelled points).
        annotations : Annotations, optional
            Hard and soft labels; a label's confidence weights its term.
        init : ndarray (n_samples, n_components), optional
            Start of the initial SNE (default: N(0, 0.1^2)).

        Returns
        -------
        MbedRun
        """
        X = validate_input(X, min_samples=4, metric=self.metric)
        n = X.shape[0]
        K, d, schedule = self._check_params(n)
        if self.verbose:
            enable_verbose_logging()
        affinity = check_option(self.affinity, "affinity", AFFINITIES)
        if affinity == "auto":
            affinity = "exact" if n <= _config.DENSE_AFFINITY_MAX_N else "knn"
        check_option(self.neighbors, "neighbors", NEIGHBORS)
        repulsion = self._resolve_repulsion(n, d)
        P = (self._dense_neighbourhoods(X, K) if affinity == "exact" else
             self._sparse_neighbourhoods(X, K))
        positive = P.data[P.data > 0] if sp.issparse(P) else P[P > 0]
        p_log_p = float(np.sum(positive * np.log(positive)))
        M = sp.csr_matrix(P + P.T) if sp.issparse(P) else P + P.T
        del P
        soft, weights = label_inputs(y, annotations, n, K)
        rng = check_random_state(self.random_state)
        if init is None:
            start = SNE_INIT_SCALE * rng.standard_normal((n, d))
        else:
            start = np.asarray(init, dtype=np.float64)
            if start.shape != (n, d):
                raise ValueError(f"init must have shape (n_samples, n_components) = {(n, d)}; "
                                 f"got {start.shape}.")
            if not np.all(np.isfinite(start)):
                raise ValueError("init contains NaN or infinity.")
        noise = rng.standard_normal((d, n))
        self.n_features_in_ = X.shape[1]
        return MbedRun(M, p_log_p, start, noise,
                       directions=kernels.simplex_directions(K, d), soft_labels=soft,
                       label_weights=weights, repulsion=repulsion, **schedule)

    def _resolve_repulsion(self, n, d):
        repulsion = check_option(self.repulsion, "repulsion", REPULSIONS)
        if repulsion == "fft" and d > 2:
            raise ValueError(f"repulsion='fft' supports n_components=1 or 2 only (got {d}); "
                             f"use repulsion='exact' (O(n^2) per evaluation) for more "
                             f"dimensions.")
        if repulsion == "auto":
            return "fft" if n > hssne_method.EXACT_REPULSION_MAX_N and d <= 2 else "exact"
        return repulsion

    def _sigma(self, n_classes, estimate):
        if isinstance(self.sigma, str) and self.sigma == "auto":
            return estimate()
        return check_number(self.sigma, "sigma", low=0, low_open=True)

    def _dense_neighbourhoods(self, X, n_classes):
        """P over all pairs (the paper's): an n x n array."""
        check_dense_allowed(X.shape[0], what="Mbed's neighbourhoods over all pairs",
                            alternative='Use affinity="knn" (sparse, memory O(n k))')
        if self.metric == "precomputed":
            D = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)
        else:
            D = pairwise_distances(X, metric=self.metric)
        self.sigma_ = self._sigma(n_classes, lambda: default_sigma(D, n_classes))
        return input_neighbourhoods(D, self.sigma_)

    def _sparse_neighbourhoods(self, X, n_classes):
        """P over each point's nearest neighbours: a CSR matrix with n k entries."""
        n = X.shape[0]
        k = min(n - 1, KNN_NEIGHBORS) if self.n_neighbors is None else check_number(
            self.n_neighbors, "n_neighbors", low=1, high=n - 1, integer=True)
        self.sigma_ = self._sigma(n_classes, lambda: sampled_sigma(
            X, n_classes, self.metric, self.random_state))
        dist, idx = nearest_neighbors(X, k, metric=self.metric, neighbors=self.neighbors,
                                      random_state=self.random_state)
        return sparse_input_neighbourhoods(dist, idx, self.sigma_)

    def _store_fitted(self, run):
        step = run.selected_step
        if step is None:  # stopped before the first annealing step ended
            self.embedding_ = run.embedding
            membership = run.membership
            self.membership_ = (membership if membership is not None else
                                np.full((run.n_samples, run.n_classes), 1.0 / run.n_classes))
        else:
            self.embedding_ = run.step_embeddings[step]
            self.membership_ = run.step_memberships[step]
        self.labels_ = self.membership_.argmax(axis=1)
        self.selected_step_ = step
        shape = (0, run.n_samples)
        self.step_embeddings_ = (np.array(run.step_embeddings) if run.step_embeddings else
                                 np.empty(shape + (run.directions.shape[1],)))
        self.step_memberships_ = (np.array(run.step_memberships) if run.step_memberships else
                                  np.empty(shape + (run.n_classes,)))
        self.lambda_path_ = np.array(run.lambda_path)
        self.criterion_path_ = np.array(run.criterion_path)
        self.sne_embedding_ = run.sne_embedding
        self.radius_ = run.radius
        self.directions_ = run.directions
        self.cost_ = run.history[-1]["cost"] if run.history else run.cost
        self.history_ = run.history
        self.n_iter_ = run.iteration
        self._n_features_out = self.embedding_.shape[1]
