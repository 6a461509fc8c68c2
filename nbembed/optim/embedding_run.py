"""The SNE family's run: early exaggeration, then momentum steps or the fixed-point update.

A run follows the classic t-SNE schedule (:class:`~nbembed.optim.schedules.EarlyExaggeration`):
``exaggeration_iter`` iterations with the attraction multiplied and momentum
0.5 with the gradient optimizer, then the method's main optimizer. It checks
every update for non-finite values and, for the fixed-point optimizer,
watches the cost: on divergence it restores the last good embedding, damps
the step and carries on, so a user never sees NaN.

With ``tol`` > 0 a run stops early once it has converged: after early
exaggeration, when its cost changed by at most ``tol`` of itself per iteration
over each of its last ``CONVERGED_WINDOWS`` recording intervals (at least
``CONVERGED_MIN_ITERATIONS`` iterations in all). A change of the objective,
pins or moved points let it go on.

Pinned points get a zero gradient and no momentum, so neither optimizer moves
them. Without pins the embedding's mean is held where it is (at the origin
after the first iteration, or where points moved by hand put it); pins fix the
frame themselves, so then nothing is re-centred.
"""

from __future__ import annotations

import logging
import math

import numpy as np

from .. import _config
from .optimizers import FixedPoint, MomentumGains
from .run import DIVERGENCE_RISE, ObjectiveRun
from .schedules import EarlyExaggeration

logger = logging.getLogger("nbembed")

#: Recording intervals in a row over which the cost must have settled to stop.
CONVERGED_WINDOWS = 2
#: Fewest iterations those intervals must span together.
CONVERGED_MIN_ITERATIONS = 100

class EmbeddingRun(ObjectiveRun):
    """The run of the SNE-family objectives (HSSNE and its special cases, SNE).

    The objective gives the gradient (with the attraction exaggerated on
    request, and the per-point step scales of the fixed-point update where it
    has them) and the cost; the run owns the schedule, the optimizers and
    the recovery from divergence. Its name, live parameters and annotation
    kinds are the objective's.

    Parameters
    ----------
    objective : Objective
        For example :class:`~nbembed.objectives.hssne.HSSNEObjective`.
    Y0 : ndarray (n, d)
        Initial embedding.
    n_iter : int
        Length of the default schedule (``fit`` runs this many iterations).
    optimizer : {"gradient", "fixed-point"}
        Main-phase optimizer.
    learning_rate : float
        Step size of the gradient optimizer.
    exaggeration_learning_rate : float, optional
        Its step size during early exaggeration; ``learning_rate`` by default.
    exaggeration : float
    exaggeration_iter : int
    momentum : tuple of float
        Momentum during and after early exaggeration.
    fixed_point_momentum : float
        Heavy-ball momentum of the accelerated fixed-point update (0 = eq. 14).
    cost_every : int
        Evaluate the cost every this many iterations (and at the end of every
        ``step`` call). The interval never depends on timing, so runs with
        the same inputs are identical.
    max_step_norm : float or None
        Longest step of a point per iteration of the gradient optimizer
        (see :class:`MomentumGains`).
    tol : float
        Stop once the cost has settled to this relative change per iteration
        (see the module's docstring); 0 never stops early.
    """

    def __init__(self, objective, Y0, *, n_iter, optimizer, learning_rate,
                 exaggeration_learning_rate=None,
                 exaggeration=12.0, exaggeration_iter=250, momentum=(0.5, 0.8),
                 fixed_point_momentum=0.0, cost_every=10, max_step_norm=None, tol=0.0):
        super().__init__(objective, n_iter=n_iter)
        self.tol = float(tol)
        self._Yt = np.ascontiguousarray(np.asarray(Y0, dtype=np.float64).T)
        self._grad = np.empty_like(self._Yt)
        self.schedule = EarlyExaggeration(
            iterations=int(exaggeration_iter), factor=float(exaggeration),
            momentum=tuple(momentum), optimizer=optimizer,
            learning_rates=(float(learning_rate if exaggeration_learning_rate is None
                                  else exaggeration_learning_rate), float(learning_rate)))
        self.record_every = int(cost_every)
        self._step_scale = 1.0  # halved by every recovery from divergence
        self._gradient_descent = MomentumGains(self._Yt.shape, learning_rate,
                                               max_step_norm=max_step_norm)
        self._fixed_point = FixedPoint(self._Yt.shape, momentum=fixed_point_momentum)
        self._good_Yt = self._Yt.copy()
        self._good_cost = None
        self._centre = np.zeros((self._Yt.shape[0], 1))  # where the mean is held
        self._watch_cost_from_here()

    # -- state ---------------------------------------------------------------
    @property
    def embedding(self):
        """A copy of the current embedding, shape (n_samples, n_components)."""
        return self._Yt.T.copy()

    @property
    def n_samples(self):
        return self._Yt.shape[1]

    @property
    def cost(self):
        """The objective at the current embedding (computed now)."""
        with _config.KERNEL_LOCK:
            return float(self._cost(self._Yt))

    @property
    def optimizer(self):
        """The main phase's optimizer, "gradient" or "fixed-point"."""
        return self.schedule.optimizer

    @property
    def learning_rates(self):
        """Step sizes of the gradient optimizer during and after early exaggeration."""
        return self.schedule.learning_rates

    @property
    def done(self):
        """True once the default schedule is complete or the run has converged."""
        return self.converged or super().done

    @property
    def remaining(self):
        return 0 if self.converged else super().remaining

    # -- control -------------------------------------------------------------
    def _objective_changed(self):
        # Old momentum and the divergence baseline belong to the old objective.
        self._gradient_descent.reset()
        self._fixed_point.reset()
        self._good_cost = None
        self.converged = False

    # -- internals -----------------------------------------------------------
    def _point_variables(self):
        return self._Yt

    _variables = _point_variables

    def _force_options(self):
        return dict(exaggeration=self.schedule.phase(self.iteration).exaggeration)

    def _phase_name(self):
        if self.iteration < self.schedule.iterations:
            return "early exaggeration"
        return self.schedule.optimizer

    def _pins_changed(self, indices):
        """Points were pinned, unpinned or placed: they start without momentum, their
        gains afresh, and the mean is held where it now is."""
        for velocity in (self._gradient_descent.velocity, self._fixed_point.velocity):
            velocity[:, indices] = 0.0
        self._gradient_descent.gains[:, indices] = 1.0
        self._good_Yt[:, indices] = self._Yt[:, indices]
        self._centre = self._Yt.mean(axis=1, keepdims=True)
        self._watch_cost_from_here()  # convergence is judged afresh from here
        self.converged = False

    def _moved(self, indices):
        self._pins_changed(indices)
        self._good_cost = None  # the cost changed by hand, not by divergence

    def _gradient(self, Yt, exaggeration, grad):
        """The gradient the optimizers follow (pinned points' columns zero)."""
        self.objective.iteration = self.iteration
        scales = self.objective.gradient(Yt, grad, exaggeration)
        self._mask_pinned(grad)
        return scales

    def _cost(self, Yt):
        self.objective.iteration = self.iteration
        return self.objective.value(Yt)

    def _iterate(self):
        phase = self.schedule.phase(self.iteration)
        scales = self._gradient(self._Yt, phase.exaggeration, self._grad)
        if phase.optimizer == "fixed-point":
            self._fixed_point.step(self._Yt, self._grad, scales, phase.exaggeration)
        else:
            self._gradient_descent.learning_rate = self._step_scale * phase.learning_rate
            self._gradient_descent.step(self._Yt, self._grad, phase.momentum)
        if not len(self._point_pins):
            self._Yt -= self._Yt.mean(axis=1, keepdims=True) - self._centre
        if not np.all(np.isfinite(self._Yt)):
            self._recover("non-finite embedding")
        return {}

    def _record(self, stats):
        cost = float(self._cost(self._Yt)) if np.all(np.isfinite(self._Yt)) else math.inf
        phase = self.schedule.phase(self.iteration)
        watch = phase.optimizer == "fixed-point" and self._good_cost is not None
        if not math.isfinite(cost) or (watch and cost > self._good_cost * (1 + DIVERGENCE_RISE)):
            self._recover(f"cost {cost:.4g}, last good {self._good_cost}")
            cost = float(self._cost(self._Yt))
        else:
            self._good_Yt[:] = self._Yt
            self._good_cost = cost if phase.optimizer == "fixed-point" else None
        grad_norm = float(np.sqrt(np.sum(self._grad ** 2))) if self.iteration else math.nan
        self._append_record(cost, grad_norm=grad_norm, exaggeration=phase.exaggeration,
                            optimizer=phase.optimizer)
        if self.tol > 0 and self._settled():
            self.converged = True
            logger.info("%s converged at iteration %d (cost %.5f).", self.name,
                        self.iteration, cost)

    def _settled(self):
        """Whether the cost changed by at most ``tol`` of itself per iteration over
        each of the last ``CONVERGED_WINDOWS`` intervals between records since the
        current objective took over (after early exaggeration)."""
        if self._start_cost is None or not math.isfinite(self._start_cost):
            return False
        records = []  # the last records, one per iteration, newest first
        for record in reversed(self.history):
            if len(records) > CONVERGED_WINDOWS or record["iteration"] < self._start_iteration:
                break
            if not records or record["iteration"] < records[-1]["iteration"]:
                records.append(record)
        records.reverse()
        if (len(records) < CONVERGED_WINDOWS + 1
                or records[-1]["iteration"] - records[0]["iteration"] < CONVERGED_MIN_ITERATIONS):
            return False
        for before, after in zip(records, records[1:]):
            change = abs(after["cost"] - before["cost"])
            iterations = after["iteration"] - before["iteration"]
            if not change <= self.tol * iterations * abs(after["cost"]):
                return False
        return True

    def _watch_cost_from_here(self):
        # Early exaggeration minimizes another cost (and raises this one as
        # clusters separate): judge the run from where the plain cost takes over.
        super()._watch_cost_from_here()
        if self.iteration < self.schedule.iterations:
            self._start_cost = math.nan

    def _after_iteration(self):
        if self.iteration == self.schedule.iterations:
            self._start_cost = None  # a non-finite embedding: the next record starts
            if np.all(np.isfinite(self._Yt)):
                self._start_from(self._cost(self._Yt))

    def _recover(self, reason):
        """Go back to the last good embedding and take smaller steps from there."""
        self.recoveries += 1
        logger.warning("%s diverged at iteration %d (%s); restored the last good embedding "
                       "and halved the step.", self.name, self.iteration, reason)
        self._Yt[:] = self._good_Yt
        self._fixed_point.reset()
        self._fixed_point.relaxation *= 0.5
        self._gradient_descent.reset()
        self._step_scale *= 0.5
