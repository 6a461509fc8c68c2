"""Where a fit's time goes: wall-clock seconds per phase, measured as it runs.

A fit of the SNE family has five phases: the search for neighbours (for exact
affinities, all pairwise distances), the calibration of the bandwidths and
the symmetrization into P, the starting embedding, early exaggeration and the
main iterations. The affinity functions add the first two to a dictionary
given to them (:func:`timed`), the estimator's ``prepare`` the third, and the
run (:class:`~nbembed.optim.embedding_run.EmbeddingRun`) the last two with a
:class:`PhaseClock`, across all its ``step`` calls. :class:`FitTimings` is
what they add up to.
"""

from __future__ import annotations

import math
import time
from contextlib import contextmanager
from dataclasses import dataclass

#: Phases before the first iteration, in the order a fit runs them.
PREPARATION_PHASES = ("neighbors", "calibration", "initialization")
#: Phases of the iterations.
ITERATION_PHASES = ("early_exaggeration", "main")


@contextmanager
def timed(timings, phase):
    """Add the wall-clock seconds the ``with`` block takes to ``timings[phase]``.

    Parameters
    ----------
    timings : dict or None
        Phase name -> seconds, added to (a missing phase starts at 0). None
        measures nothing.
    phase : str
    """
    if timings is None:
        yield
        return
    start = time.perf_counter()
    try:
        yield
    finally:
        timings[phase] = timings.get(phase, 0.0) + (time.perf_counter() - start)


@dataclass(frozen=True)
class FitTimings:
    """Wall-clock seconds per phase of a fit (or of a run so far), all measured.

    Attributes
    ----------
    neighbors : float
        The nearest-neighbour search of a kNN P, or the pairwise distances of
        an exact one, with the check for repeated rows before it; 0 for
        precomputed affinities. NaN where the run was not timed from the data
        (a run made directly rather than by the estimator's ``prepare``).
    calibration : float
        The perplexity bandwidth search, the symmetrization into P, and
        mixing in the must-links (NaN as for ``neighbors``).
    initialization : float
        The starting embedding (PCA, MDS, random or given; NaN as above).
    early_exaggeration : float
        The iterations with the attraction exaggerated.
    main : float
        The iterations after them.
    n_iter_early, n_iter_main : int
        Iterations done in each of the two.

    Notes
    -----
    The iterations' seconds are those spent inside the run's ``step`` calls,
    with the cost evaluations, divergence checks and callbacks in them; time
    between calls (an interactive pause, say) is not counted. Input
    validation is in no phase, so the phases add up to a little less than the
    wall time of ``fit``.
    """

    neighbors: float = math.nan
    calibration: float = math.nan
    initialization: float = math.nan
    early_exaggeration: float = 0.0
    main: float = 0.0
    n_iter_early: int = 0
    n_iter_main: int = 0

    @property
    def ms_per_iteration_main(self):
        """float: Milliseconds per main iteration, NaN before the first one."""
        return 1000.0 * self.main / self.n_iter_main if self.n_iter_main else math.nan

    @property
    def total(self):
        """float: Seconds in all phases together."""
        return sum(getattr(self, phase) for phase in PREPARATION_PHASES + ITERATION_PHASES)

    def as_dict(self):
        """The phases' seconds, the iteration counts and ``ms_per_iteration_main``, in
        that order.

        Returns
        -------
        dict
        """
        names = PREPARATION_PHASES + ITERATION_PHASES + ("n_iter_early", "n_iter_main")
        record = {name: getattr(self, name) for name in names}
        record["ms_per_iteration_main"] = self.ms_per_iteration_main
        return record


class PhaseClock:
    """Seconds and iterations of a run, accumulated per phase of its iterations.

    The clock is started at the beginning of each ``step`` call; each
    :meth:`lap` gives the seconds since the last start or lap to a phase, so
    every second inside ``step`` goes to exactly one phase.

    Parameters
    ----------
    preparation : mapping, optional
        Seconds of the phases before the run (``PREPARATION_PHASES``); a phase
        missing from it is reported as NaN, not measured.
    """

    def __init__(self, preparation=None):
        preparation = dict(preparation or {})
        unknown = set(preparation) - set(PREPARATION_PHASES)
        if unknown:
            raise ValueError(f"Unknown preparation phases {sorted(unknown)}; expected some of "
                             f"{PREPARATION_PHASES}.")
        self.preparation = {name: float(preparation.get(name, math.nan))
                            for name in PREPARATION_PHASES}
        self.seconds = dict.fromkeys(ITERATION_PHASES, 0.0)
        self.iterations = dict.fromkeys(ITERATION_PHASES, 0)
        self._mark = None

    def start(self):
        """Count from now (the beginning of a ``step`` call)."""
        self._mark = time.perf_counter()

    def lap(self, phase, iterations=0):
        """Give the seconds since the last start or lap to ``phase`` (one of
        ``ITERATION_PHASES``), with ``iterations`` more iterations done in it."""
        now = time.perf_counter()
        if self._mark is not None:
            self.seconds[phase] += now - self._mark
        self.iterations[phase] += iterations
        self._mark = now

    def snapshot(self):
        """The totals so far.

        Returns
        -------
        FitTimings
        """
        return FitTimings(**self.preparation, **self.seconds,
                          n_iter_early=self.iterations["early_exaggeration"],
                          n_iter_main=self.iterations["main"])
