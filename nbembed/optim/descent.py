"""Line-search descent: one iteration is a search direction and a strong Wolfe line search.

:class:`LineSearchDescent` minimizes an objective ``fun(x) -> (f, g)`` over a
flat float64 array, one :meth:`~LineSearchDescent.iterate` at a time, so that
a run can interleave its iterations with schedules, live parameters and
display. It knows nothing of any method; NeRV, Mbed and Parametric Embedding
choose its directions (:mod:`.directions`), line-search constants
(:mod:`.line_search`) and first trial steps.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .directions import LBFGS, PolakRibiere, dot
from .line_search import WolfeSettings, strong_wolfe

#: How the first trial step of a search is chosen when the direction starts
#: afresh (steepest descent):
#: "relative": move x by ``first_move`` times its norm;
#: "inverse_gradient": a = 1 / (1 + ‖g‖²) (Rasmussen's ``minimize.m``);
#: "unit_length": a move of length at most 1, a = min(1, 1 / ‖g‖).
FIRST_STEPS = ("relative", "inverse_gradient", "unit_length")
#: ... and when it continues earlier ones:
#: "unit": a = 1, the natural step of a quasi-Newton direction;
#: "previous_move": move as far as the last accepted step did;
#: "slope_ratio": the last step times the ratio of the last and the current
#: initial slopes, at most ``max_step_ratio`` (``minimize.m``).
CONTINUED_STEPS = ("unit", "previous_move", "slope_ratio")


class IterationResult(NamedTuple):
    """What one :meth:`LineSearchDescent.iterate` did.

    Attributes
    ----------
    moved : bool
        True if x changed.
    evaluations : int
        Calls of the objective in this iteration.
    step_length : float
        ‖x_new - x_old‖, 0 if x did not move.
    """

    moved: bool
    evaluations: int
    step_length: float


class LineSearchDescent:
    """A resumable descent method: search direction plus strong Wolfe line search.

    Each iteration takes the direction of ``directions`` at the current
    gradient (steepest descent if that is not downhill), searches a step along
    it and moves x there. If a continued (L-BFGS or conjugate) direction finds
    no step, the iteration restarts once from steepest descent. If even
    steepest descent finds no lower cost, x is at a minimum to rounding level:
    the descent is ``stalled`` and later iterations do nothing (and cost
    nothing) until :meth:`reset`.

    A trial point with a non-finite cost, gradient or coordinate counts as
    too long a step, so x only ever moves to finite points with a lower cost.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (f, g)`` or ``fun(x) -> (f, g, info)``: the cost and its
        gradient, a new array of x's shape (the optimizer keeps references to
        it), and optionally anything the caller wants back about the point x
        ends up at (``info``, say parts of the cost or state solved for x).
        The ``x`` passed may be a scratch array the function must not keep.
    x : ndarray of float64, 1-D
        The variables; updated in place (pass a view to move a caller's array).
    directions : LBFGS or PolakRibiere
        Search directions (their state is reset with the optimizer).
    line_search : WolfeSettings
    first_step : {"relative", "inverse_gradient", "unit_length"}
        First trial step of a search from steepest descent (see ``FIRST_STEPS``).
    continued_step : {"unit", "previous_move", "slope_ratio"}
        First trial step of a search along a continued direction (see
        ``CONTINUED_STEPS``).
    restart_with_previous_move : bool
        If True, a search from steepest descent after the first accepted step
        (a restart, a reset objective) first tries to move as far as the last
        step did, instead of ``first_step``.
    first_move : float
        The fraction of ‖x‖ of a "relative" first step (‖x‖ = 0: 1e-12).
    max_step_ratio : float
        Largest factor of the "slope_ratio" rule.

    Attributes
    ----------
    f, g, info : float, ndarray, object or None
        Cost, gradient and ``info`` at x; None until evaluated (after
        :meth:`reset`).
    evaluations : int
        Calls of ``fun`` since the optimizer was made.
    stalled : bool
    """

    def __init__(self, fun, x, directions, *, line_search=WolfeSettings(),
                 first_step="relative", continued_step="unit",
                 restart_with_previous_move=False, first_move=0.01, max_step_ratio=100.0):
        if first_step not in FIRST_STEPS:
            raise ValueError(f"first_step must be one of {FIRST_STEPS}; got {first_step!r}.")
        if continued_step not in CONTINUED_STEPS:
            raise ValueError(f"continued_step must be one of {CONTINUED_STEPS}; got "
                             f"{continued_step!r}.")
        if not isinstance(directions, (LBFGS, PolakRibiere)):
            raise TypeError(f"directions must be an LBFGS or a PolakRibiere object; got "
                            f"{type(directions).__name__}.")
        if x.ndim != 1 or x.dtype != np.float64:
            raise ValueError("x must be a 1-D float64 array.")
        self.fun = fun
        self.x = x
        self.directions = directions
        self.line_search = line_search
        self.first_step = first_step
        self.continued_step = continued_step
        self.restart_with_previous_move = bool(restart_with_previous_move)
        self.first_move = float(first_move)
        self.max_step_ratio = float(max_step_ratio)
        self.evaluations = 0
        self._last_move = None     # ‖x_new - x_old‖ of the last accepted step, kept over resets
        self.reset()

    def reset(self):
        """Forget the cost, the gradient and the directions' memory (the objective changed)."""
        self.f = None
        self.g = None
        self.info = None
        self.stalled = False
        self.directions.reset()
        self._last_search = None   # (step, initial slope) of the last accepted search

    def _call(self, x):
        self.evaluations += 1
        value = self.fun(x)
        info = value[2] if len(value) > 2 else None
        return float(value[0]), value[1], info

    def evaluate(self):
        """Evaluate f and g at x unless known; return the number of evaluations (0 or 1)."""
        if self.f is not None:
            return 0
        self.f, self.g, self.info = self._call(self.x)
        return 1

    @property
    def finite(self):
        """True if the (evaluated) cost and gradient at x are finite."""
        return self.f is not None and math.isfinite(self.f) and \
            bool(np.all(np.isfinite(self.g)))

    def iterate(self):
        """One iteration: a direction, a line search, a move. Returns an ``IterationResult``."""
        evaluations = self.evaluate()
        if self.stalled:
            return IterationResult(False, evaluations, 0.0)
        if not self.finite or not dot(self.g, self.g) > 0.0:
            self.stalled = True
            return IterationResult(False, evaluations, 0.0)
        fresh = self.directions.fresh
        direction = self.directions.direction(self.g)
        slope = dot(direction, self.g)
        if not (slope < 0.0 and math.isfinite(slope)):
            self.directions.reset()
            fresh, direction = True, -self.g
            slope = -dot(self.g, self.g)
        found = self._search(direction, slope, fresh)
        evaluations += found.evaluations
        if found.step is None and not fresh:
            # The direction went stale (curvature from another part of the
            # landscape): try again from steepest descent.
            self.directions.reset()
            direction, slope = -self.g, -dot(self.g, self.g)
            found = self._search(direction, slope, True)
            evaluations += found.evaluations
        if found.step is None:
            self.stalled = True
            return IterationResult(False, evaluations, 0.0)
        x_new, g_new, info = found.extra
        move = x_new - self.x
        g_old = self.g
        self.x[:] = x_new
        self.f, self.g, self.info = found.cost, g_new, info
        self.directions.update(move, g_old, g_new, direction)
        length = math.sqrt(dot(move, move))
        self._last_move = length
        self._last_search = (found.step, slope)
        return IterationResult(True, evaluations, length)

    def _initial_step(self, direction, slope, fresh):
        d_norm = math.sqrt(dot(direction, direction))
        if not fresh:
            if self.continued_step == "unit":
                return 1.0
            if self.continued_step == "slope_ratio" and self._last_search is not None:
                step, last_slope = self._last_search
                return step * min(self.max_step_ratio, last_slope / slope)
            if self._last_move is not None:
                return self._last_move / d_norm
        elif self.restart_with_previous_move and self._last_move is not None:
            return self._last_move / d_norm
        if self.first_step == "inverse_gradient":
            return 1.0 / (1.0 - slope)
        if self.first_step == "unit_length":
            return min(1.0, 1.0 / d_norm)
        return self.first_move * max(math.sqrt(dot(self.x, self.x)), 1e-12) / d_norm

    def _search(self, direction, slope, fresh):
        def phi(step):
            x = self.x + step * direction
            if not np.all(np.isfinite(x)):
                return math.inf, math.nan, None
            f, g, info = self._call(x)
            if not math.isfinite(f):
                return f, math.nan, None
            return f, dot(g, direction), (x, g, info)

        step = self._initial_step(direction, slope, fresh)
        if not (step > 0.0 and math.isfinite(step)):
            step = 1.0
        return strong_wolfe(phi, self.f, slope, step, self.line_search)


def make_directions(kind, memory=10):
    """``LBFGS(memory)`` for ``kind="lbfgs"``, ``PolakRibiere()`` for ``kind="cg"``."""
    if kind == "lbfgs":
        return LBFGS(memory)
    if kind == "cg":
        return PolakRibiere()
    raise ValueError(f"kind must be 'lbfgs' or 'cg'; got {kind!r}.")
