"""Read-outs and stepping of :class:`~nbembed.widget.Explorer` (teaching mode).

A mixin: it uses the Explorer's traits, lock, worker, data, method and
labels, and the force arrows (:mod:`~nbembed.widget.arrows`).

The quality read-outs (:mod:`~nbembed.widget.quality`) take about 20 ms on
their sample. They are computed in a thread of their own from a copy of the
embedding taken between two step calls (:class:`LatestOnly`), so neither a
frame nor the worker ever waits for them. That thread keeps the process's
CPU priority: a thread of lower priority that holds the interpreter lock, or
an import lock in its first import, makes every other thread of the process
wait while it is not scheduled, which on a busy machine is for minutes. While
the run steps, an update is skipped when the last one is
still being computed; when the worker goes idle (paused, done, or after
``step(n)``) the current iteration is queued behind the update in flight, so
that ``quality`` soon shows the run's current iteration.

Threads: the worker thread calls ``_on_work``; the read-out thread owns the
:class:`~nbembed.widget.quality.QualityMonitor` while it computes, and sets
``quality`` under the Explorer's sync lock.
"""

from __future__ import annotations

import logging
import threading

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
        readouts = self.__dict__.get("_readouts")
        if readouts is None:
            readouts = self._readouts = LatestOnly(self._background_quality,
                                                   "nbembed-read-outs")
        if readouts.busy and not idle:
            return  # one update at a time; the next one is due later anyway
        monitor = self._quality_monitor()
        fresh = run is not getattr(self, "_quality_run", None)  # a restart: a new history
        self._quality_run = run
        # Parameters and annotations change a spectral run's solution without an
        # iteration; the read-outs follow them too.
        state = (tuple(sorted(run.get_params().items())), self.annotations.revision)
        iteration = int(run.iteration)
        if not fresh and ((iteration, state) == self.__dict__.get("_quality_posted")
                          or not monitor.due(iteration, idle=idle, state=state)):
            return  # queued already, or not due
        self._quality_posted = (iteration, state)
        readouts.post(monitor, run, run.embedding, iteration, self._labels,
                      last_cost(run.history), state)

    def _readouts_pending(self):
        """Whether read-outs are being computed or wait to be."""
        readouts = self.__dict__.get("_readouts")
        return readouts is not None and readouts.busy

    def _publish_quality(self, monitor, run, embedding, iteration, labels, cost, state):
        if run is not self.__dict__.get("_scored_run"):  # a restart: a new history
            monitor.reset()
            self._scored_run = run
        values = monitor.update(embedding, iteration, labels, cost, state=state)
        with self._sync_lock:
            if monitor is self.__dict__.get("_monitor"):  # not replaced by new points
                self.quality = values

    def _background_quality(self, *snapshot):
        """The read-outs' own thread: a failure turns them off, as in ``_on_work``."""
        try:
            self._publish_quality(*snapshot)
        except Exception as err:
            logger.exception("nbembed Explorer: Quality read-outs failed")
            self.__dict__.setdefault("_failed_parts", set()).add("Quality read-outs")
            self._warn(f"Quality read-outs turned off ({type(err).__name__}: {err}).")


class LatestOnly:
    """Calls ``work(*args)`` in a thread of its own for the latest arguments posted.

    Arguments posted while ``work`` runs wait for it, replacing any that were
    waiting already; whoever posts never waits. The thread ends when nothing
    waits.

    Parameters
    ----------
    work : callable
    name : str
        The thread's name.
    """

    def __init__(self, work, name):
        self._work = work
        self._name = name
        self._lock = threading.Lock()
        self._waiting = None  # the latest arguments not yet worked on
        self._thread = None

    @property
    def busy(self):
        """Whether work is running or waiting."""
        with self._lock:
            return self._thread is not None

    def post(self, *args):
        """Queue ``work(*args)``, in place of any call still waiting."""
        with self._lock:
            self._waiting = args
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self._name,
                                                daemon=True)
                self._thread.start()

    def _loop(self):
        while True:
            with self._lock:
                args, self._waiting = self._waiting, None
                if args is None:
                    self._thread = None
                    return
            self._work(*args)
