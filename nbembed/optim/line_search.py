"""A line search for the strong Wolfe conditions (Nocedal & Wright, 2006, Alg. 3.5-3.6).

Along a descent direction d from x, with phi(a) = f(x + a d), a step a is
accepted when

    phi(a) <= phi(0) + c1 a phi'(0)        (sufficient decrease)
    abs(phi'(a)) <= c2 abs(phi'(0))       (strong curvature condition).

The search first extrapolates: while the trial steps keep decreasing the
cost steeply it tries longer ones (a cubic extrapolation, at most ``growth``
times the last step). Once a step is too long -- it does not decrease the
cost enough, or the slope there is no longer negative -- an interval holding
acceptable steps is known, and the search zooms into it with cubic
interpolations kept away from the interval's ends. A trial cost that is not
finite counts as "too long": the interval is halved.

Every method that uses a line search (NeRV, Mbed, Parametric Embedding) goes
through :func:`strong_wolfe` with its own :class:`WolfeSettings`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple


@dataclass(frozen=True)
class WolfeSettings:
    """The constants of one line search.

    Parameters
    ----------
    c1 : float
        Sufficient-decrease constant, 0 < c1 < c2.
    c2 : float
        Curvature constant, c1 < c2 < 1: small for an almost exact search
        (conjugate gradients need one), near 1 for a loose one (quasi-Newton).
    max_evaluations : int
        Most cost-and-gradient evaluations per search.
    growth : float
        Longest extrapolation, as a multiple of the last trial step (> 1).
    min_bracket : float
        A new trial keeps at least this fraction of the interval's width from
        its ends (and extrapolates at least this fraction of the last advance).
    """

    c1: float = 1e-4
    c2: float = 0.9
    max_evaluations: int = 20
    growth: float = 2.0
    min_bracket: float = 0.1

    def __post_init__(self):
        if not 0.0 < self.c1 < self.c2 < 1.0:
            raise ValueError(f"need 0 < c1 < c2 < 1; got c1 = {self.c1}, c2 = {self.c2}.")
        if int(self.max_evaluations) < 1:
            raise ValueError(f"max_evaluations must be at least 1; got {self.max_evaluations}.")
        if not self.growth > 1.0:
            raise ValueError(f"growth must be greater than 1; got {self.growth}.")
        if not 0.0 < self.min_bracket < 0.5:
            raise ValueError(f"min_bracket must be in (0, 0.5); got {self.min_bracket}.")


class LineSearchResult(NamedTuple):
    """What :func:`strong_wolfe` found.

    Attributes
    ----------
    step : float or None
        The accepted step, or None when no step decreased the cost.
    cost : float
        phi(step), or phi(0) when ``step`` is None.
    extra : object
        What ``phi`` returned with the accepted step's cost (the gradient
        there, say); None when ``step`` is None.
    evaluations : int
        Calls of ``phi``.
    wolfe : bool
        True if the step meets both strong Wolfe conditions; False if the
        evaluations ran out and the step only decreases the cost.
    """

    step: float | None
    cost: float
    extra: Any
    evaluations: int
    wolfe: bool


def cubic_minimizer(a, fa, sa, b, fb, sb):
    """The minimizer of the cubic through (a, fa) and (b, fb) with slopes sa, sb.

    Nocedal & Wright, eq. 3.59. Returns NaN where the cubic has no local
    minimizer (or the arithmetic fails).
    """
    if a == b:
        return math.nan
    d1 = sa + sb - 3.0 * (fa - fb) / (a - b)
    disc = d1 * d1 - sa * sb
    if not disc >= 0.0:
        return math.nan
    d2 = math.copysign(math.sqrt(disc), b - a)
    denom = sb - sa + 2.0 * d2
    if denom == 0.0:
        return math.nan
    x = b - (b - a) * (sb + d2 - d1) / denom
    return x if math.isfinite(x) else math.nan


class _Point(NamedTuple):
    step: float
    cost: float
    slope: float
    extra: Any


def _next_trial(lo, hi, previous, settings):
    """The next trial step from the best point ``lo`` and the bracket end ``hi``."""
    if hi is None:
        # No bracket yet: extrapolate beyond lo, by the cubic through the last two
        # points, at least a little and at most ``growth`` times lo.
        far = settings.growth * lo.step
        near = lo.step + settings.min_bracket * (lo.step - previous.step)
        a = cubic_minimizer(previous.step, previous.cost, previous.slope,
                            lo.step, lo.cost, lo.slope)
        if not (a > lo.step) or a > far:
            return far
        return max(a, near)
    width = hi.step - lo.step
    if not math.isfinite(hi.cost):
        return lo.step + 0.5 * width
    a = cubic_minimizer(lo.step, lo.cost, lo.slope, hi.step, hi.cost, hi.slope)
    if math.isnan(a):
        return lo.step + 0.5 * width
    near = lo.step + settings.min_bracket * width
    far = hi.step - settings.min_bracket * width
    return min(max(a, min(near, far)), max(near, far))


def strong_wolfe(phi, cost0, slope0, step, settings=WolfeSettings()):
    """Search a step length meeting the strong Wolfe conditions.

    Parameters
    ----------
    phi : callable
        ``phi(a) -> (cost, slope, extra)``: the cost at x + a d, its derivative
        in a (the gradient's product with d) and anything the caller wants
        back for the accepted step (typically the gradient). A cost that is
        not finite (inf, NaN) marks a step as too long; its slope is ignored.
    cost0, slope0 : float
        phi(0) and phi'(0); ``slope0`` must be negative (a descent direction).
    step : float
        The first trial step, positive.
    settings : WolfeSettings

    Returns
    -------
    LineSearchResult
        When the evaluations run out before the conditions are met, the step
        with the lowest cost found so far is returned if it has sufficient
        decrease (``wolfe`` False); no step at all (``step`` None) if none had.

    Raises
    ------
    ValueError
        If ``slope0`` is not negative or ``step`` is not positive.
    """
    if not slope0 < 0.0:
        raise ValueError(f"the direction must be a descent direction (slope < 0); got slope "
                         f"{slope0}.")
    if not (step > 0.0 and math.isfinite(step)):
        raise ValueError(f"the first trial step must be positive and finite; got {step}.")
    c1, c2 = settings.c1, settings.c2
    lo = _Point(0.0, cost0, slope0, None)   # lowest cost so far, with sufficient decrease
    hi = None                               # the other end of a bracket around acceptable steps
    previous = None                         # the point before lo, for extrapolation
    for evaluation in range(1, int(settings.max_evaluations) + 1):
        cost, slope, extra = phi(step)
        cost, slope = float(cost), float(slope)
        trial = _Point(step, cost, slope, extra)
        if not (math.isfinite(cost) and math.isfinite(slope)):
            hi = _Point(step, math.inf, math.nan, None)
        elif cost > cost0 + c1 * step * slope0 or cost >= lo.cost:
            hi = trial
        elif abs(slope) <= -c2 * slope0:
            return LineSearchResult(step, cost, extra, evaluation, True)
        else:
            # Sufficient decrease but still steep: trial becomes the new best end. If
            # the slope there points back toward lo (or, unbracketed, is uphill),
            # the acceptable steps lie between trial and the old lo.
            if (hi is None and slope >= 0.0) or (hi is not None and
                                                 slope * (hi.step - step) >= 0.0):
                hi = lo
            previous, lo = lo, trial
        if evaluation < settings.max_evaluations:
            step = _next_trial(lo, hi, previous, settings)
    if lo.step > 0.0 and lo.cost < cost0:
        return LineSearchResult(lo.step, lo.cost, lo.extra, int(settings.max_evaluations), False)
    return LineSearchResult(None, cost0, None, int(settings.max_evaluations), False)
