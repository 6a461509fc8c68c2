"""Read-outs and stepping of :class:`~nbembed.widget.Explorer` (teaching mode).

A mixin: it uses the Explorer's traits, lock, worker, data, method and
labels, and the force arrows (:mod:`~nbembed.widget.arrows`). The quality read-outs (:mod:`~nbembed.widget.quality`) are computed
in the worker thread between two step calls (the worker's ``on_work``
callback), so they never run beside a step and never hold up a frame for
longer than one update.
"""

from __future__ import annotations

import logging

import traitlets

from .._validation import check_number
from .frames import last_cost
from .quality import QualityMonitor

logger = logging.getLogger("nbembed")

#: Most iterations one :meth:`Teaching.step` call may ask for.
MAX_STEPS = 100_000


class Teaching(traitlets.HasTraits):
    """The read-outs and the Step command of :class:`~nbembed.widget.Explorer`."""

    #: The latest read-outs (see :mod:`nbembed.widget.quality`), with a short
    #: history of each for the sparklines; {} until the first update.
    quality = traitlets.Dict().tag(sync=True)

    def step(self, n=1):
        """While paused, advance the run by exactly ``n`` iterations, then stay paused.

        Parameters
        ----------
        n : int, default 1
            Iterations, 1 to ``MAX_STEPS``.

        Raises
        ------
        ValueError
            If the Explorer is not paused (pause it first) or ``n`` is out of range.
        """
        n = check_number(n, "n", low=1, high=MAX_STEPS, integer=True)
        if self.status not in ("paused", "done"):
            raise ValueError(f"Step works while the Explorer is paused (it is {self.status}); "
                             f"pause it first.")
        self._worker.start(paused=True)
        self._worker.pause()
        self._worker.step(n)

    def _quality_monitor(self):
        monitor = getattr(self, "_monitor", None)
        if monitor is None:
            metric = getattr(self._method, "metric", "euclidean")
            monitor = self._monitor = QualityMonitor(self._X, metric=metric)
        return monitor

    def _on_work(self, run, idle):
        """Worker thread, between two step calls: update the read-outs and the
        force arrows when due. Neither may stop the run: a failure turns the
        part off with a notice."""
        failed = self.__dict__.setdefault("_failed_parts", set())
        for part, update in (("Quality read-outs", self._update_quality),
                             ("Force arrows", self._update_forces),
                             ("Neighbour lines", self._update_neighbours)):
            if part in failed:
                continue
            try:
                update(run, idle)
            except Exception as err:
                logger.exception("nbembed Explorer: %s failed", part)
                failed.add(part)
                self._warn(f"{part} turned off ({type(err).__name__}: {err}).")

    def _update_quality(self, run, idle):
        monitor = self._quality_monitor()
        if run is not getattr(self, "_quality_run", None):  # a restart: a new history
            monitor.reset()
            self._quality_run = run
        # Parameters and annotations change a spectral run's solution without an
        # iteration; the read-outs follow them too.
        state = (tuple(sorted(run.get_params().items())), len(self.annotations))
        if not monitor.due(int(run.iteration), idle=idle, state=state):
            return
        values = monitor.update(run.embedding, int(run.iteration), self._labels,
                                last_cost(run.history), state=state)
        with self._sync_lock:
            self.quality = values
