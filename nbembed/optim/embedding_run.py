"""The SNE family's run: early exaggeration, then momentum steps or the fixed-point update.

A run follows the classic t-SNE schedule (:class:`~nbembed.optim.schedules.EarlyExaggeration`):
``exaggeration_iter`` iterations with the attraction multiplied and momentum
0.5 with the gradient optimizer, then the method's main optimizer.

Divergence is caught in every phase. Each iteration checks the gradient and
the new embedding for non-finite values. A check, every ``cost_every``
iterations and at the ends of early exaggeration and of the default schedule
(iterations the schedule fixes, so how a caller splits its ``step`` calls does
not change the run), compares the cost the steps since the last good
embedding descended with its value there: during early exaggeration the cost
with the attraction exaggerated
(:meth:`~nbembed.objectives.base.Objective.value_terms`; the plain cost rises
there as clusters separate), after it the plain cost. A non-finite value, or
a rise by more than ``DIVERGENCE_RISE`` of it (``EXAGGERATED_RISE`` of the
exaggerated cost, which the long steps of early exaggeration raise), is
divergence: the run restores the last good embedding, halves the step of the
optimizer that diverged (the gradient step of that phase, or the fixed-point
relaxation) and carries on, so a user never sees NaN. A gradient step damped
during early exaggeration caps the main phase's at ``exaggeration`` times it,
the attraction's curvature being that much smaller there. After a recovery
the run checks after every iteration until a regular check passes, so a step
far too large is halved as often as it fails rather than once a recording
interval. Until a step from the restored embedding is accepted the run is
``recovering``; one that ends so has not converged, and one that ends after a
halved step failed too has diverged
(:meth:`~nbembed.optim.run.ObjectiveRun.outcome`).

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
from .timings import PhaseClock

logger = logging.getLogger("nbembed")

#: Recording intervals in a row over which the cost must have settled to stop.
CONVERGED_WINDOWS = 2
#: Fewest iterations those intervals must span together.
CONVERGED_MIN_ITERATIONS = 100

#: Rise of the exaggerated cost, as a fraction of it, that counts as divergence
#: during early exaggeration. There the steps are long by design and the layout
#: grows from a start of scale 1e-4 thousands of times: over the first recording
#: interval, steps of n / early_exaggeration raised the exaggerated cost by at most
#: 7% (84 settings on 100 to 700 points: perplexity, alpha, start); steps four or
#: more times as long (learning_rate "auto" on a few hundred points, or 1e4 and
#: more) by 20% to 60%, and a layout blown apart (learning_rate=1e6,
#: max_step_norm=None) by 230% to 330%. The threshold lies between the last two,
#: so that the default step on small data is not taken for divergence (a short fit
#: would return an earlier layout). After early exaggeration checks allow
#: ``DIVERGENCE_RISE``.
EXAGGERATED_RISE = 1.0

#: Share of shortened gradient steps (see ``EmbeddingRun.shortened_share``) above
#: which a run counts as diverged. Learning rates up to 1000 shortened at most 19%
#: of the steps (digits, blobs, 200 digits), the default on 20 points about half;
#: 1e5 shortened 31% to 86%, 1e300 all of them.
MOSTLY_SHORTENED = 0.9

#: Recoveries from divergence logged as warnings; later ones are logged at INFO
#: level (a hopeless step size recovers every few iterations).
LOGGED_RECOVERIES = 5

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
    auto_learning_rate : bool
        Whether the method chose the learning rates (``learning_rate="auto"``):
        halving them where they diverge is then part of finding a step that
        works, and recoveries are logged at INFO level instead of as warnings.
    preparation : mapping, optional
        Seconds the method spent before the run, per phase ("neighbors",
        "calibration", "initialization"), reported in :attr:`timings`; a phase
        not given is reported as NaN.

    Attributes
    ----------
    recoveries : int
        How often the run diverged and went back to its last good embedding.
    recovering : int
        Recoveries since a step from the restored embedding was last accepted
        (see the module's docstring).
    good_iteration : int
        The iteration the last good embedding, the one a recovery restores,
        was reached at.
    """

    def __init__(self, objective, Y0, *, n_iter, optimizer, learning_rate,
                 exaggeration_learning_rate=None,
                 exaggeration=12.0, exaggeration_iter=250, momentum=(0.5, 0.8),
                 fixed_point_momentum=0.0, cost_every=10, max_step_norm=None, tol=0.0,
                 auto_learning_rate=False, preparation=None):
        super().__init__(objective, n_iter=n_iter)
        self._clock = PhaseClock(preparation)
        self.tol = float(tol)
        self.auto_learning_rate = bool(auto_learning_rate)
        self._Yt = np.ascontiguousarray(np.asarray(Y0, dtype=np.float64).T)
        self._grad = np.empty_like(self._Yt)
        self.schedule = EarlyExaggeration(
            iterations=int(exaggeration_iter), factor=float(exaggeration),
            momentum=tuple(momentum), optimizer=optimizer,
            learning_rates=(float(learning_rate if exaggeration_learning_rate is None
                                  else exaggeration_learning_rate), float(learning_rate)))
        self.record_every = int(cost_every)
        # The gradient optimizer's steps during and after early exaggeration are
        # halved apart: exaggeration multiplies the attraction's curvature, so a
        # step too long there may suit the main phase (see _carry_damping_over).
        self._step_scales = [1.0, 1.0]
        self._gradient_descent = MomentumGains(self._Yt.shape, learning_rate,
                                               max_step_norm=max_step_norm)
        self._fixed_point = FixedPoint(self._Yt.shape, momentum=fixed_point_momentum)
        self._good_Yt = self._Yt.copy()
        self.good_iteration = 0
        # The watched cost at the last good embedding, and the exaggeration it
        # was taken with (a baseline of another phase is not compared).
        self._good_cost = None
        self._good_exaggeration = None
        self._on_probation = False  # checked every iteration since a recovery
        self._last_check = (None, math.nan)  # (iteration, cost) of the last check
        self._centre = np.zeros((self._Yt.shape[0], 1))  # where the mean is held
        self._watch_cost_from_here()

    # -- state ---------------------------------------------------------------
    def outcome(self):
        """:meth:`ObjectiveRun.outcome`, with a run whose steps were mostly shortened
        to ``max_step_norm`` (more than ``MOSTLY_SHORTENED`` of them) counted as
        diverged: it wandered at that length instead of descending."""
        outcome = super().outcome()
        if self.shortened_share > MOSTLY_SHORTENED:
            outcome = outcome._replace(converged=False, diverged=True)
        return outcome

    @property
    def shortened_share(self):
        """float: Share of the points' gradient steps so far that were longer than
        ``max_step_norm`` and shortened to it (0 before any step): near 1, the
        learning rate is far too large and the run only wanders at that length."""
        descent = self._gradient_descent
        return descent.shortened / descent.point_steps if descent.point_steps else 0.0

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
    def timings(self):
        """:class:`~nbembed.optim.timings.FitTimings`: Wall-clock seconds per phase so
        far: the preparation's as given, and the time inside every ``step`` call
        (the run's own cost checks and the callbacks included) split between
        early exaggeration and the main phase, each iteration counted in the
        phase it belongs to."""
        return self._clock.snapshot()

    @property
    def done(self):
        """True once the default schedule is complete or the run has converged."""
        return self.converged or super().done

    @property
    def remaining(self):
        return 0 if self.converged else super().remaining

    # -- control -------------------------------------------------------------
    def step(self, n=1, callbacks=None, *, record_last=True):
        """:meth:`~nbembed.optim.protocol.Run.step`, timed per phase (see :attr:`timings`)."""
        self._clock.start()
        try:
            return super().step(n, callbacks, record_last=record_last)
        finally:
            # What followed the last iteration (its callbacks, the call's end).
            self._clock.lap(self._timed_phase(max(self.iteration - 1, 0)))

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
        self._good_cost = None  # pinning at given positions changes the cost by hand
        self._centre = self._Yt.mean(axis=1, keepdims=True)
        self._watch_cost_from_here()  # convergence is judged afresh from here
        self.converged = False

    def _moved(self, indices):
        self._pins_changed(indices)  # the cost changed by hand, not by divergence

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
        with np.errstate(over="ignore", invalid="ignore"):
            scales = self._gradient(self._Yt, phase.exaggeration, self._grad)
            if not np.all(np.isfinite(self._grad)):
                self._recover("non-finite gradient", self.iteration)
                return {}
            if phase.optimizer == "fixed-point":
                self._fixed_point.step(self._Yt, self._grad, scales, phase.exaggeration)
            else:
                self._gradient_descent.learning_rate = \
                    self._step_scales[self._in_main_phase(self.iteration)] * phase.learning_rate
                self._gradient_descent.step(self._Yt, self._grad, phase.momentum)
            if not len(self._point_pins):
                self._Yt -= self._Yt.mean(axis=1, keepdims=True) - self._centre
            if not np.all(np.isfinite(self._Yt)):
                self._recover("non-finite embedding", self.iteration)
        return {}

    def _record(self, stats):
        if self._check_due():
            cost, accepted = self._check()
            if accepted:
                self._on_probation = False
        else:
            cost = self._costs()[0]
            if not math.isfinite(cost):
                cost = self._check()[0]
        phase = self.schedule.phase(self.iteration)
        with np.errstate(over="ignore", invalid="ignore"):
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
        if self.recovering or self._start_cost is None or not math.isfinite(self._start_cost):
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

    def _check_due(self):
        """Whether a record at this iteration checks for divergence: the first one,
        and those every ``record_every`` iterations and at the end of the default
        schedule (not those where a ``step`` call happens to end)."""
        return (not self.history or self.iteration % self.record_every == 0
                or self.iteration == self.n_iter)

    def _after_iteration(self):
        self._follow_schedule()
        self._clock.lap(self._timed_phase(self.iteration - 1), iterations=1)

    def _timed_phase(self, iteration):
        """The phase of :attr:`timings` that ``iteration`` (0-based) belongs to."""
        return "main" if self._in_main_phase(iteration) else "early_exaggeration"

    def _follow_schedule(self):
        """At the end of early exaggeration judge its last steps and watch the plain
        cost from there; on probation after a recovery, check this iteration."""
        checked = self._last_check[0] == self.iteration
        if self.iteration == self.schedule.iterations:
            # Judge the last exaggerated steps and watch the plain cost from here
            # (a check at this iteration has done both).
            cost = self._last_check[1] if checked else self._check()[0]
            self._carry_damping_over()
            self._start_cost = None  # a non-finite embedding: the next record starts
            if math.isfinite(cost):
                self._start_from(cost)
        elif self._on_probation and not checked:
            self._check(accept=False)

    def _costs(self, *exaggerations):
        """The plain cost at the current embedding and the cost the steps descend
        under each of ``exaggerations`` (None where the objective does not split
        its cost, see :meth:`~nbembed.objectives.base.Objective.value_terms`);
        all inf where the embedding is not finite."""
        if not np.all(np.isfinite(self._Yt)):
            return (math.inf,) * (1 + len(exaggerations))
        self.objective.iteration = self.iteration
        terms = None
        if any(e != 1.0 for e in exaggerations):
            terms = self.objective.value_terms(self._Yt)
        if terms is None:
            cost = float(self.objective.value(self._Yt))
            return (cost,) + tuple(cost if e == 1.0 else None for e in exaggerations)
        attraction, rest = float(terms[0]), float(terms[1])
        return (attraction + rest,) + tuple(e * attraction + rest for e in exaggerations)

    def _check(self, accept=True):
        """Judge the current embedding; return its (plain) cost and whether it
        passed.

        The steps since the last good embedding descended the cost under the
        exaggeration of the last iteration; a non-finite cost, or one that rose
        by more than ``DIVERGENCE_RISE`` (``EXAGGERATED_RISE``) of that cost at the last good
        embedding, is divergence and the run recovers. Otherwise, with
        ``accept``, the embedding becomes the last good one. After a recovery
        or an accepted embedding, the cost the next steps descend there is the
        baseline the next check compares with. Checks between records after a
        recovery do not ``accept``: a cost creeping up by less than the
        threshold per iteration is still caught against the last good one.
        """
        cost, passed = self._judge(accept)
        self._last_check = (self.iteration, cost)
        return cost, passed

    def _judge(self, accept):
        """:meth:`_check` but for remembering where it happened."""
        last = max(self.iteration - 1, 0)
        done = self.schedule.phase(last).exaggeration
        upcoming = self.schedule.phase(self.iteration).exaggeration
        with np.errstate(over="ignore", invalid="ignore"):
            cost, watched, next_baseline = self._costs(done, upcoming)
            baseline = self._good_cost if self._good_exaggeration == done else None
            rise = EXAGGERATED_RISE if done != 1.0 else DIVERGENCE_RISE
            if not math.isfinite(cost) or (watched is not None and not math.isfinite(watched)):
                self._recover(f"cost {cost:.4g}", last)
            elif (watched is not None and baseline is not None
                  and watched - baseline > rise * abs(baseline)):
                what = "cost" if done == 1.0 else "exaggerated cost"
                self._recover(f"{what} {watched:.4g}, last good {baseline:.4g}", last)
            else:
                if not accept:
                    return cost, True
                if not np.array_equal(self._Yt, self._good_Yt):
                    self._good_Yt[:] = self._Yt
                    self.good_iteration = self.iteration
                    self.recovering = 0
                self._good_cost, self._good_exaggeration = next_baseline, upcoming
                return cost, True
            cost, self._good_cost = self._costs(upcoming)
        self._good_exaggeration = upcoming
        return cost, False

    def _carry_damping_over(self):
        """At the end of early exaggeration, cap the main phase's step by the one that
        worked during it: the attraction's curvature is ``factor`` times smaller
        now, so the main phase may take ``factor`` times the step (of its own
        learning rate) that early exaggeration was damped to, not more."""
        during, after = self.schedule.learning_rates
        if self._step_scales[0] < 1.0:
            cap = self.schedule.factor * self._step_scales[0] * during / after
            self._step_scales[1] = min(self._step_scales[1], cap)

    def _in_main_phase(self, iteration):
        """0 during early exaggeration, 1 after it."""
        return int(iteration >= self.schedule.iterations)

    def _recover(self, reason, iteration):
        """Go back to the last good embedding and halve, from there on, the step of
        the optimizer whose step at ``iteration`` diverged (the fixed-point
        relaxation, or the gradient step of that phase)."""
        self.recoveries += 1
        self.recovering += 1
        self._on_probation = True
        loud = not self.auto_learning_rate and self.recoveries <= LOGGED_RECOVERIES
        logger.log(logging.WARNING if loud else logging.INFO,
                   "%s diverged at iteration %d (%s); restored the embedding of iteration %d "
                   "and halved the step.%s", self.name, self.iteration, reason,
                   self.good_iteration, " Further recoveries are logged at INFO level."
                   if loud and self.recoveries == LOGGED_RECOVERIES else "")
        self._Yt[:] = self._good_Yt
        self._fixed_point.reset()
        self._gradient_descent.reset()
        if self.schedule.phase(iteration).optimizer == "fixed-point":
            self._fixed_point.relaxation *= 0.5
        else:
            self._step_scales[self._in_main_phase(iteration)] *= 0.5
