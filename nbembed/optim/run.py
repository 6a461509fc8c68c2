"""Runs of an objective: what every gradient-based method's run shares.

``run = method.prepare(X, ...)`` builds one; ``run.step(n)`` advances it n
iterations (the loop of :class:`~nbembed.optim.protocol.Run`);
``run.set_params(alpha=...)`` changes a live parameter and continues from the
current embedding; ``run.pin(indices)`` holds points still while the others
keep optimizing. :class:`ObjectiveRun` wires a run to its objective (name,
live parameters, annotations, history rows) and keeps its pinned points;
:class:`LineSearchRun` moves the
variables by line-search descent (NeRV, Mbed, Parametric Embedding); the SNE
family's :class:`~nbembed.optim.embedding_run.EmbeddingRun` by momentum
gradient steps or the fixed-point update.
"""

from __future__ import annotations

import logging
import math
import time
from typing import NamedTuple

import numpy as np

from .. import _config
from .descent import LineSearchDescent
from .pinning import Pins, check_indices, check_positions
from .protocol import Run

logger = logging.getLogger("nbembed")

#: A cost rise by more than this fraction counts as divergence: between two
#: checks of a fixed-point run, and from a run's start to its end.
DIVERGENCE_RISE = 0.05
#: Offset, as a fraction of the map's extent (at least 1), that parts points moved
#: exactly onto one another (see ``ObjectiveRun.move``).
COINCIDENT_OFFSET = 1e-4
#: Recoveries in a row (without an accepted step between them) after which a run
#: that ends so counts as diverged: the halved step failed as well.
DIVERGED_RECOVERIES = 2

#: A run is judged worse at its end only this many iterations or more after
#: its start (after a change of objective the cost may rise briefly, as the
#: momentum of the exaggerated SNE-family gradient carries on).
JUDGED_AFTER = 50

#: A run whose cost changed by at most this fraction per iteration between its
#: last two records has settled (see :meth:`ObjectiveRun.outcome`).
SETTLED_RTOL = 1e-5


class RunOutcome(NamedTuple):
    """How a run ended (:meth:`ObjectiveRun.outcome`).

    Attributes
    ----------
    converged : bool
        The run settled at a minimum of its current objective: it stopped early
        because no step lowered the cost (or its own criterion held), or its
        cost changed by at most ``SETTLED_RTOL`` per iteration between its last
        two records, and it neither ended worse than it started
        (``ended_worse``) nor ``diverged``.
    start_cost, end_cost : float
        The cost when the current objective came into use (the first record,
        or the first after a live parameter, the annotations or a schedule
        changed the objective; NaN while the run is not judged, during early
        exaggeration) and the last recorded cost; NaN without records.
    iterations : int
        Iterations from the start to the end.
    diverged : bool
        The run ended diverged: its last recorded cost is not finite, or it
        recovered twice or more without a step accepted since (``recovering``:
        a halved step failed too, so it returns its last good variables). A
        single recovery at the end only returns the last good variables.
    """

    converged: bool
    start_cost: float
    end_cost: float
    iterations: int = 0
    diverged: bool = False

    @property
    def ended_worse(self):
        """True if the run ended, ``JUDGED_AFTER`` iterations or more after its start,
        with a cost higher by more than ``DIVERGENCE_RISE`` of the start's (or a
        non-finite one) than it started with."""
        if not math.isfinite(self.start_cost) or self.iterations < JUDGED_AFTER:
            return False
        return not self.end_cost - self.start_cost <= DIVERGENCE_RISE * abs(self.start_cost)


class ObjectiveRun(Run):
    """A run of one objective (see :mod:`nbembed.objectives`).

    The run takes the objective's name, live parameters and annotation kinds.
    :meth:`set_params` and :meth:`set_annotations` hand values to the
    objective under the kernel lock and then call ``_objective_changed``,
    where a subclass makes its optimizer forget what belonged to the old
    objective. Live parameters read as attributes of the run (``run.alpha``).

    Parameters
    ----------
    objective : Objective
    n_iter : int
        Length of the default schedule.

    Attributes
    ----------
    recoveries : int
        How often the run diverged (a non-finite value, or a rise of the cost
        its steps descend) and went back to its last good variables.
    recovering : int
        Recoveries since the last accepted step, 0 when none (runs that
        recover by damping their steps count them; see
        :class:`~nbembed.optim.embedding_run.EmbeddingRun`).
    """

    def __init__(self, objective, *, n_iter):
        self.objective = objective
        self.name = objective.name
        self.live_parameters = objective.live_parameters
        self.annotation_kinds = objective.annotation_kinds
        self.n_iter = int(n_iter)
        self.iteration = 0
        self.history = []
        self.recoveries = 0
        self.recovering = 0
        self._start_cost = None
        self._start_iteration = 0
        self._started = time.perf_counter()

    def __getattr__(self, name):
        if name in self.__dict__.get("live_parameters", {}):
            return getattr(self.__dict__["objective"], name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def idle_params(self):
        """The live parameters that change nothing now, each with the reason."""
        return self.objective.idle_params()

    # -- control -------------------------------------------------------------
    def set_params(self, **params):
        """Change live parameters and continue from the current embedding.

        Parameters
        ----------
        **params
            Names from ``live_parameters``.

        Returns
        -------
        self

        Raises
        ------
        ValueError, TypeError
            For an unknown name or a value outside its range; nothing changes.
        """
        checked = self.check_params(params)
        with _config.KERNEL_LOCK:
            self.objective.set_params(**checked)
            self._watch_cost_from_here()
            self._objective_changed()
        return self

    def set_annotations(self, annotations=None, y=None):
        """Use these labels and constraints from the next iteration on; the
        embedding is kept.

        Parameters
        ----------
        annotations : Annotations, optional
        y : array-like, optional
            Labels with -1 for unlabelled points (or what the method reads).

        Returns
        -------
        self
        """
        with _config.KERNEL_LOCK:
            self.objective.set_annotations(annotations, y)
            self._watch_cost_from_here()
            self._objective_changed()
        return self

    def prefer_even_steps(self):
        """Spread the objective's renewals over several iterations where it has
        any (``spread_renewals``; see :meth:`nbembed.optim.protocol.Run.prefer_even_steps`)."""
        self.objective.spread_renewals = True

    @property
    def annotations_aside(self):
        """bool: Whether the objective's :meth:`prepare_annotations` is worth a
        thread of its own."""
        return self.objective.annotations_aside

    def prepare_annotations(self, annotations=None, y=None):
        """Work out new labels and constraints without changing the run (see
        :meth:`nbembed.optim.protocol.Run.prepare_annotations`).

        Returns
        -------
        callable
            ``apply()``, which makes them the run's from the next iteration on,
            as :meth:`set_annotations` does.
        """
        if not self.annotations_aside:
            # Nothing to work out aside; a subclass's own set_annotations does it all.
            return super().prepare_annotations(annotations, y)
        apply_to_objective = self.objective.prepare_annotations(annotations, y)

        def apply():
            with _config.KERNEL_LOCK:
                if apply_to_objective is not None:
                    apply_to_objective()
                self._watch_cost_from_here()
                self._objective_changed()

        return apply

    # -- inspection -----------------------------------------------------------
    def forces(self, indices=None):
        """The current gradient split into its terms, one row per point.

        The gradient is the one the next iteration follows: at the current
        embedding, with the live parameters and the schedule's state now
        (the early exaggeration factor, Mbed's lambda, NeRV's widening
        stage). The terms add up to it to rounding; their sign is the
        gradient's, so points move against their sum. Pinned points get zero
        rows (the run's gradient has none for them). Which terms a method
        has is documented with its objective's ``forces``.

        Parameters
        ----------
        indices : int or array-like of int, optional
            Points to return rows for, in this order (all points by default).
            A few points cost O(len(indices) n) pair evaluations besides the
            normalizers.

        Returns
        -------
        Forces
            Mapping term name -> ndarray (len(indices), n_components), with
            ``labels``, ``exaggeration``, ``phase`` and, for Parametric
            Embedding, ``anchors`` (the same split for the classes).

        Raises
        ------
        ValueError, TypeError
            For indices out of range, repeated or not integers.
        """
        rows = None if indices is None else check_indices(indices, self.n_samples)
        with _config.KERNEL_LOCK:
            self.objective.iteration = self.iteration
            forces = self.objective.forces(self._variables(), rows, **self._force_options())
            forces.phase = self._phase_name()
            self._mask_forces(forces)
        return forces

    def _variables(self):
        """The variables the objective is evaluated at (lock held)."""
        raise NotImplementedError(f"{type(self).__name__} does not split its gradient.")

    def _force_options(self):
        """Keyword arguments of the objective's ``forces`` from the schedule's state."""
        return {}

    def _phase_name(self):
        """The schedule's phase now, for :meth:`forces` (None: no phases)."""
        return None

    @property
    def phase(self):
        """The phase of the schedule the next iteration belongs to (as
        :meth:`forces` reports it, for example "early exaggeration"), or None."""
        return self._phase_name()

    def continue_schedule(self, other):
        """Go on from where ``other`` is in its schedule: a run of the same method
        on the same points and more (the Explorer's ``add_points``) takes its
        iteration count, so a finished phase (early exaggeration, NeRV's
        widening, Mbed's initial SNE) is not done again. Returns self."""
        with _config.KERNEL_LOCK:
            self.iteration = other.iteration
            self._schedule_changed()
            self._watch_cost_from_here()
        return self

    def _schedule_changed(self):
        """The iteration count was set by hand: follow the schedule to it (lock held)."""

    def _mask_forces(self, forces):
        """Zero the rows of held items in ``forces`` (lock held)."""
        forces.mask(self._point_pins.indices)

    # -- pinned points --------------------------------------------------------
    @property
    def pinned(self):
        """Indices of the pinned points, sorted, int64."""
        return self._point_pins.indices.copy()

    def pin(self, indices, positions=None):
        """Hold points still (at ``positions``, or where they are) while the others move.

        A pinned point does not move at all (bit for bit) until it is
        unpinned: its rows of the gradient the optimizer follows are zero
        and its optimizer state (momentum, L-BFGS memory) is cleared. Pins
        survive ``set_params`` and ``set_annotations``.

        Parameters
        ----------
        indices : int or array-like of int
            Points to pin (already pinned ones may be repeated across calls).
        positions : array-like (len(indices), n_components), optional
            Where to pin them; where they are now by default.

        Returns
        -------
        self

        Raises
        ------
        ValueError, TypeError
            For indices out of range or repeated, or positions of the wrong
            shape or not finite; nothing changes.
        """
        return self._hold(self._point_pins, self._point_variables, indices, positions,
                          self._pins_changed)

    def unpin(self, indices=None):
        """Let pinned points move again (all of them by default).

        Indices that are not pinned are ignored. Returns self.
        """
        return self._release(self._point_pins, indices, self._pins_changed)

    def move(self, indices, positions):
        """Place points (pinned or not) at ``positions``; the run continues from there.

        The optimizer forgets what would carry a stale step (the momentum of
        the moved points, the L-BFGS memory), so no point jumps further than
        a normal step at the next iteration. Moved pinned points stay pinned
        at their new positions. Unpinned points moved exactly onto one another
        are spread by a tiny seeded offset
        (``COINCIDENT_OFFSET`` of the map's extent): every objective's gradient
        between coinciding points is zero, so they would otherwise never part.

        Parameters
        ----------
        indices : int or array-like of int
        positions : array-like (len(indices), n_components)

        Returns
        -------
        self

        Raises
        ------
        ValueError, TypeError
            As :meth:`pin`; nothing changes.
        """
        self._place(self._point_pins, self._point_variables, indices, positions,
                    self._moved)
        self._separate(self._point_pins.check(indices))
        return self

    def _separate(self, moved):
        """Offset the unpinned points of ``moved`` that coincide with another moved point."""
        with _config.KERNEL_LOCK:
            Y = self._point_variables()
            free = moved[~np.isin(moved, self._point_pins.indices)]
            if not free.size:
                return
            # Only among the moved points: O(m log m), not a pass over the whole map.
            _, inverse, counts = np.unique(Y[:, moved].T, axis=0, return_inverse=True,
                                           return_counts=True)
            stuck = moved[counts[inverse.ravel()] > 1]
            stuck = stuck[np.isin(stuck, free)]
            if not stuck.size:
                return
            extent = float(np.ptp(Y)) if np.all(np.isfinite(Y)) else 0.0
            offset = COINCIDENT_OFFSET * max(extent, 1.0)
            rng = np.random.default_rng(stuck.size)
            Y[:, stuck] += offset * rng.standard_normal((Y.shape[0], stuck.size))
            self._moved(stuck)

    @property
    def _point_pins(self):
        return self._pins_kept("_pins", lambda: Pins(self.n_samples, "point"))

    def _pins_kept(self, attribute, make):
        """The :class:`Pins` kept in ``attribute``, made by ``make()`` on first use
        (the number of items is known once a subclass has its variables)."""
        pins = self.__dict__.get(attribute)
        if pins is None:
            pins = make()
            setattr(self, attribute, pins)
        return pins

    def _point_variables(self):
        """The positions as the run moves them, shape (n_components, n_samples):
        a view the pin methods write into."""
        raise NotImplementedError(f"{type(self).__name__} does not support pinning.")

    def _hold(self, pins, variables, indices, positions, changed):
        """Pin ``indices`` of ``pins`` (items are the columns of ``variables()``)."""
        indices = pins.check(indices)
        if positions is not None:
            positions = check_positions(positions, indices.size, variables().shape[0],
                                        what=pins.what)
        with _config.KERNEL_LOCK:
            columns = variables()
            if positions is None:
                positions = columns[:, indices].T + 0.0
            columns[:, indices] = positions.T
            pins.add(indices)
            changed(indices)
        return self

    def _release(self, pins, indices, changed):
        indices = pins.indices if indices is None else pins.check(indices)
        with _config.KERNEL_LOCK:
            pins.remove(indices)
            changed(indices)
        return self

    def _place(self, pins, variables, indices, positions, changed):
        indices = pins.check(indices)
        positions = check_positions(positions, indices.size, variables().shape[0],
                                    what=pins.what)
        with _config.KERNEL_LOCK:
            variables()[:, indices] = positions.T
            changed(indices)
        return self

    def _mask_pinned(self, grad):
        """Zero the pinned points' columns of a gradient shaped (d, n), in place."""
        pinned = self._point_pins.indices
        if pinned.size:
            grad[:, pinned] = 0.0
        return grad

    def outcome(self):
        """How the run has ended so far: a :class:`RunOutcome`.

        Fitted estimators report its ``converged`` as ``converged_`` and warn
        when it ``ended_worse`` or ``diverged``.
        """
        if not self.history:
            return RunOutcome(False, math.nan, math.nan,
                              diverged=self.recovering >= DIVERGED_RECOVERIES)
        end = float(self.history[-1]["cost"])
        start = math.nan if self._start_cost is None else self._start_cost
        settled = self.converged
        earlier = [r for r in self.history if r["iteration"] < self.history[-1]["iteration"]]
        if not settled and earlier and math.isfinite(end):
            before = float(earlier[-1]["cost"])
            iterations = self.history[-1]["iteration"] - earlier[-1]["iteration"]
            settled = abs(end - before) <= SETTLED_RTOL * iterations * max(abs(end), 1e-300)
        diverged = self.recovering >= DIVERGED_RECOVERIES or not math.isfinite(end)
        outcome = RunOutcome(False, start, end, self.iteration - self._start_iteration,
                             diverged)
        return outcome._replace(
            converged=bool(settled) and not outcome.ended_worse and not diverged)

    # -- internals -----------------------------------------------------------
    def _objective_changed(self):
        """The objective's parameters or inputs changed (lock held)."""

    def _pins_changed(self, indices):
        """Points were pinned or unpinned (lock held): clear their optimizer state."""

    def _moved(self, indices):
        """Points were placed by hand (lock held): clear what would carry a stale step."""

    def _watch_cost_from_here(self):
        """The objective changes now: judge the run's outcome from its next record on."""
        self._start_cost = None

    def _start_from(self, cost):
        """Judge the run's outcome from this cost at the current iteration."""
        self._start_cost = float(cost)
        self._start_iteration = self.iteration

    def _append_record(self, cost, **fields):
        """Add a row to ``history``: iteration, cost, the live parameters, ``fields``
        and the seconds since the run was made."""
        record = dict(iteration=self.iteration, cost=cost)
        record.update(self.get_params())
        record.update(fields)
        record["seconds"] = time.perf_counter() - self._started
        self.history.append(record)
        if self._start_cost is None:
            self._start_from(cost)
        logger.info("%s iteration %d: cost %.5f", self.name, self.iteration, cost)
        return record


class LineSearchRun(ObjectiveRun):
    """A run whose every iteration is one line-search step on its objective.

    The step is :class:`~nbembed.optim.descent.LineSearchDescent` over the
    variables ``x`` (updated in place): a direction (L-BFGS or conjugate
    gradients) and a strong Wolfe line search, taken only to finite points of
    lower cost. A change of the objective restarts the directions.

    Pinned points (columns of ``x``, unless a run pins other variables) have
    their gradient zeroed in every evaluation, so the directions, the memory
    pairs and the line search live in the subspace of the free coordinates;
    pinning, unpinning or moving points restarts the directions.

    Parameters
    ----------
    objective : Objective
    x : ndarray of float64, C-contiguous
        The variables, moved in place (a point embedding transposed, or
        Parametric Embedding's class positions).
    directions : LBFGS or PolakRibiere
    n_iter : int
    **descent_options
        The line search and first steps (see ``LineSearchDescent``).
    """

    def __init__(self, objective, x, directions, *, n_iter, **descent_options):
        super().__init__(objective, n_iter=n_iter)
        self._x = x
        self._descent = LineSearchDescent(self._masked(objective.line_search_function(x.shape)),
                                          x.reshape(-1), directions, **descent_options)

    def _masked(self, fun):
        """``fun`` with the gradient of the held variables zeroed (``_mask_variables``)."""
        shape = self._x.shape

        def masked(flat):
            value = fun(flat)
            self._mask_variables(value[1].reshape(shape))
            return value
        return masked

    def _mask_variables(self, grad):
        """Zero, in place, the gradient (shaped as ``x``) of the variables held still."""
        self._mask_pinned(grad)

    @property
    def embedding(self):
        """A copy of the current embedding, shape (n_samples, n_components)
        (the variables are the transposed embedding unless a run says otherwise)."""
        return self._x.T.copy()

    @property
    def n_samples(self):
        return self._x.shape[1]

    @property
    def cost(self):
        """The objective at the current variables."""
        with _config.KERNEL_LOCK:
            self._descent.evaluate()
            return float(self._descent.f)

    def _point_variables(self):
        return self._x

    def _variables(self):
        return self._x

    def _objective_changed(self):
        self._restart_descent()

    def _restart_descent(self, indices=None):
        """Forget the directions' memory and the cost (lock held)."""
        self._descent.reset()
        self.converged = False

    _pins_changed = _moved = _restart_descent

    def _iterate(self):
        """One line-search step; its cost evaluations and the length of the move.

        When even a steepest-descent step finds no lower cost the variables are
        at a minimum to rounding level: later iterations cost nothing until the
        objective changes.
        """
        before = self._x.copy()
        result = self._descent.iterate()
        if not np.all(np.isfinite(self._x)):  # cannot happen by design; never show it
            logger.warning("%s: non-finite variables at iteration %d; kept the last good ones.",
                           self.name, self.iteration)
            self.recoveries += 1
            self._x[:] = before
            self._descent.reset()
        return dict(evaluations=result.evaluations, step_length=result.step_length)

    def _evaluated(self):
        """(cost, gradient norm) at the current variables, evaluated if needed;
        the cost is inf where the objective is not finite."""
        self._descent.evaluate()
        if not self._descent.finite:
            return math.inf, math.nan
        return float(self._descent.f), float(np.sqrt(np.sum(self._descent.g ** 2)))
