"""Mbed's run: Algorithm 1 of Zien & Quinonero Candela (2005), one CG iteration at a time.

The schedule: a crude SNE from a small random start; the radius r of that
embedding; a restart and lambda annealed from 20 r down to 0.2 r in ``p - 1``
steps; the annealing step whose embedding separates its classes best is the
result. The cost is :class:`~nbembed.objectives.mbed.MbedObjective`; each
iteration is a Polak-Ribiere+ conjugate-gradient step with ``minimize.m``'s
line search (``LINE_SEARCH``).
"""

from __future__ import annotations

import logging
import math
from dataclasses import replace

import numpy as np

from .. import _config
from ..optim import LambdaAnnealing, LineSearchRun, LiveParameter
from ..optim.descent import LineSearchDescent
from ..optim.directions import PolakRibiere
from ..optim.line_search import WolfeSettings
from ..optim.schedules import LAMBDA_END, LAMBDA_START

logger = logging.getLogger("nbembed")


LAMBDA = LiveParameter(
    "lambda_", 0.0, math.inf, (0.05, 30.0), 0.05,
    "Length scale of the class boundaries (larger = softer memberships, wider margin); "
    "automatic: annealed from 20 r to 0.2 r", label="λ", allows_auto=True, low_open=True)

#: Standard deviation of the re-initialization before annealing, in units of the
#: radius r (Algorithm 1, line 5).
ANNEAL_INIT_SCALE = 1e-3


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


#: The paper optimized with C. E. Rasmussen's ``minimize.m``: Polak-Ribiere+ conjugate
#: gradients and a strong Wolfe line search with sufficient decrease 0.01, curvature
#: 0.5, extrapolation at most 3x and at most 20 evaluations per search; the first
#: step 1 / (1 + ‖g‖²), each later first guess the last step scaled by the ratio of
#: the last two initial slopes (at most 100).
LINE_SEARCH = WolfeSettings(c1=0.01, c2=0.5, max_evaluations=20, growth=3.0)
MINIMIZE_M = dict(line_search=LINE_SEARCH, first_step="inverse_gradient",
                  continued_step="slope_ratio", max_step_ratio=100.0)


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
    return LineSearchDescent(objective, x, PolakRibiere(), **MINIMIZE_M)


# -- the run ----------------------------------------------------------------------------------

class MbedRun(LineSearchRun):
    """A resumable Mbed optimization: Algorithm 1 one CG iteration at a time.

    The schedule: ``n_iter_init`` iterations of SNE alone from N(0, 0.1^2);
    then the radius r of that embedding, a restart from N(0, (1e-3 r)^2)
    (around ``r * anneal_start`` when given) and
    ``n_anneal - 1`` annealing steps with lambda from 20 r down to 0.2 r,
    sharing the remaining iterations. The restart leaves pinned points
    (:meth:`pin`) where they are. At the end of each step its embedding,
    memberships, lambda and margin criterion are kept.

    Live parameter ``lambda_``: a number holds lambda there (the schedule
    pauses and the run continues from the current embedding); None returns
    to the schedule where it paused. :meth:`set_annotations` replaces the
    labels from the next iteration on.

    Parameters
    ----------
    objective : MbedObjective
        The cost, with the labels (its lambda is set by the schedule).
    Y0 : ndarray (n, d)
        Start of the initial SNE.
    restart_noise : ndarray (d, n)
        Standard normal draws for the restart before annealing.
    anneal_start : ndarray (n, d) or None
        Where the restart centres each point, in units of r (the noise is
        added): None is the origin, the paper's restart.
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

    #: lambda is the schedule's, so the run, not the objective, takes it live.
    live_parameters = {"lambda_": LAMBDA}

    def __init__(self, objective, Y0, restart_noise, *, n_iter=500, n_iter_init=10, n_anneal=20,
                 anneal_start=None):
        self._anneal_start = None if anneal_start is None else np.asarray(anneal_start).T
        self._Yt = np.ascontiguousarray(np.asarray(Y0, dtype=np.float64).T)
        super().__init__(objective, self._Yt, PolakRibiere(), n_iter=n_iter, **MINIMIZE_M)
        self.live_parameters = type(self).live_parameters
        self.n_classes = objective.n_classes
        self._restart_noise = restart_noise
        self.n_iter_init = int(n_iter_init)
        self.n_anneal = int(n_anneal)
        self.schedule = LambdaAnnealing(self.n_iter, self.n_iter_init, self.n_anneal)
        self.schedule_position = 0
        self.lambda_ = None
        self.radius = None
        self.anneal_step = None
        self.sne_embedding = None
        self.step_embeddings = []
        self.step_memberships = []
        self.lambda_path = []
        self.criterion_path = []
        if self.n_iter_init == 0:
            self._start_annealing()

    # -- state ---------------------------------------------------------------
    @property
    def current_lambda(self):
        """The lambda in use (None during the initial SNE)."""
        return self.objective.lambda_

    @property
    def max_classes(self):
        """Most classes annotations may use: the ``n_classes`` the run was built for."""
        return self.n_classes

    def params_in_effect(self):
        """Live parameter values, with the automatic lambda as currently annealed."""
        return {**self.get_params(), "lambda_": self.current_lambda}

    @property
    def tau(self):
        """The label confidence (eq. 21) in use."""
        return self.objective.tau

    @property
    def directions(self):
        """The class directions w_k, shape (n_classes, n_components)."""
        return self.objective.directions

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
            return self.objective.membership(self._Yt)

    @property
    def selected_step(self):
        """Index of the completed annealing step with the largest criterion, or None.

        After the paper's random restart, with labelled points, only the steps
        whose memberships misclassify the fewest of them (by label weight) are
        candidates: the criterion measures how far apart the map's own classes
        are, and the first steps, before the labels weigh, can split the points
        along a direction the labels do not follow (on ionosphere, a clean split
        that missed half of the labelled points). A start from the spread
        labels puts each class in its region from the beginning.
        """
        if not self.criterion_path:
            return None
        criterion = np.asarray(self.criterion_path, dtype=float)
        if self._anneal_start is None:
            misses = self._labelled_misses()
            if misses is not None:
                criterion = np.where(misses <= misses.min() + 1e-9, criterion, -np.inf)
        return int(np.argmax(criterion))

    def _labelled_misses(self):
        """Label weight of the labelled points each completed step misclassifies
        (the argmax of its memberships against that of their labels); None without
        labelled points."""
        weights = np.asarray(self.objective.label_weights, dtype=float)
        labelled = weights > 0
        if not labelled.any():
            return None
        truth = np.asarray(self.objective.soft_labels)[labelled].argmax(axis=1)
        return np.array([weights[labelled] @ (m[labelled].argmax(axis=1) != truth)
                         for m in self.step_memberships])

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
                self._use_lambda(self.schedule.lambdas(self.radius)[self.anneal_step])
            else:
                self._use_lambda(None)
        return self

    def continue_schedule(self, other):
        """Go on from where ``other`` (an Mbed run on fewer points) is: the same
        schedule position, radius, annealing step and lambda (held or annealed).
        The annealing steps recorded so far stay with ``other``. Returns self."""
        super().continue_schedule(other)
        with _config.KERNEL_LOCK:
            self.schedule_position = other.schedule_position
            self.lambda_ = other.lambda_
            if other.anneal_step is not None:
                self.radius = other.radius
                self.anneal_step = other.anneal_step
                self.live_parameters = other.live_parameters
                self._use_lambda(other.current_lambda)
        return self

    # -- internals -----------------------------------------------------------
    def _use_lambda(self, lam):
        radius = self.radius if self.radius is not None else embedding_radius(self._Yt.T)
        self.objective.use_lambda(lam, radius)
        self._descent.reset()
        self._watch_cost_from_here()

    def _after_iteration(self):
        if self.lambda_ is None:  # a held lambda pauses the schedule
            self.schedule_position += 1
            self._follow_schedule()

    def _follow_schedule(self):
        position = self.schedule_position
        if self.anneal_step is None:
            if self.schedule.starts_annealing(position):
                self._start_annealing()
            return
        if self.schedule.ends_step(self.anneal_step, position):
            self._finish_step()
            if self.schedule.has_step(self.anneal_step + 1):
                self.anneal_step += 1
                self._use_lambda(self.schedule.lambdas(self.radius)[self.anneal_step])

    def _start_annealing(self):
        self.sne_embedding = self.embedding
        self.radius = embedding_radius(self.sne_embedding)
        pinned = self._point_pins.indices
        held = self._Yt[:, pinned]
        self._Yt[:] = ANNEAL_INIT_SCALE * self.radius * self._restart_noise
        if self._anneal_start is not None:
            self._Yt += self.radius * self._anneal_start
        self._Yt[:, pinned] = held  # the restart leaves pinned points where they are
        self.anneal_step = 0
        slider = (round(0.5 * LAMBDA_END * self.radius, 3),
                  round(1.5 * LAMBDA_START * self.radius, 3))
        self.live_parameters = {"lambda_": replace(LAMBDA, slider=slider,
                                                   step=max(slider[0], 1e-3))}
        self._use_lambda(self.schedule.lambdas(self.radius)[0])
        logger.info("%s: radius r = %.4g after %d SNE iterations.", self.name, self.radius,
                    self.iteration)

    def _finish_step(self):
        Y = self._Yt.T
        membership = self.objective.membership(self._Yt)
        criterion = margin_criterion(Y, membership.argmax(axis=1), self.directions)
        self.step_embeddings.append(Y.copy())
        self.step_memberships.append(membership)
        self.lambda_path.append(self.current_lambda)
        self.criterion_path.append(criterion)
        logger.info("%s: annealing step %d, lambda %.4g, criterion %.4g.", self.name,
                    self.anneal_step, self.current_lambda, criterion)

    def _phase_name(self):
        """"sne" (the crude SNE), "anneal" (lambda annealed) or "held" (a lambda set)."""
        if self.lambda_ is not None:
            return "held"
        return "sne" if self.anneal_step is None else "anneal"

    def _record(self, stats):
        cost, _ = self._evaluated()
        parts = dict(A=math.nan, B=math.nan, D=math.nan, C=cost)
        if self.current_lambda is not None and math.isfinite(cost):
            extra, _, terms = self.objective.boundary_terms(self._Yt)
            parts = dict(terms, C=cost - extra)
        self._append_record(cost, **{"lambda": self.current_lambda}, tau=self.tau,
                            phase=self._phase_name(),
                            anneal_step=self.anneal_step,
                            evaluations=self._descent.evaluations, **parts)
