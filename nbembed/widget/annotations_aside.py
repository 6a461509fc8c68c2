"""Work out a large run's new annotations in a thread of their own while it steps.

When a lasso of 10^5 points becomes a must-link group in a run of 10^6, most
of the work is bookkeeping that the run's iterations never read (which pairs
the group links, how many groups give each link). A run whose
``annotations_aside`` is true splits ``set_annotations`` in two:
``prepare_annotations`` does that bookkeeping without changing the run, and
the callable it returns applies the result between two steps.
:class:`AnnotationsAside` calls ``prepare_annotations`` in the daemon thread
"nbembed-annotations", so the worker keeps stepping (and the page keeps
getting frames) meanwhile, and hands the results back in the order they were
made.

Threads: :meth:`AnnotationsAside.submit`, :meth:`~AnnotationsAside.take` and the
properties are called by the worker thread (and ``busy`` by the main
thread); the aside thread only calls ``snapshot()`` (which takes the
Explorer's annotation lock) and ``run.prepare_annotations``. The queue and the
results are guarded by one lock.
"""

from __future__ import annotations

import threading


class AnnotationsAside:
    """Calls ``run.prepare_annotations`` in a thread of its own, one snapshot at a time.

    Parameters
    ----------
    on_ready : callable
        ``on_ready()``, in the aside thread, after each result is ready (the
        worker wakes up to apply it).
    """

    def __init__(self, on_ready):
        self._on_ready = on_ready
        self._lock = threading.Lock()
        self._queued = None  # (run, snapshot) not started yet: the latest replaces it
        self._working = False
        self._ready = []  # (run, apply), in the order made
        self._thread = None

    def submit(self, run, snapshot):
        """Queue working out ``snapshot()`` (``(annotations, y)``) for ``run``.

        A snapshot still waiting is replaced (the annotations are taken whole
        each time, so only the latest matters); one being worked on is
        finished first.
        """
        with self._lock:
            self._queued = (run, snapshot)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, daemon=True,
                                                name="nbembed-annotations")
                self._thread.start()

    def take(self):
        """The ``(run, apply)`` results ready, oldest first, cleared.

        ``apply()`` makes the annotations the run's, as ``run.set_annotations``
        would (raising what it would have raised); call it in the thread that
        steps the run, in this order, and only for that run.
        """
        with self._lock:
            ready, self._ready = self._ready, []
        return ready

    @property
    def ready(self):
        """bool: Whether results wait to be taken."""
        with self._lock:
            return bool(self._ready)

    @property
    def busy(self):
        """bool: Whether a snapshot waits or is being worked out."""
        with self._lock:
            return self._queued is not None or self._working

    def _loop(self):
        while True:
            with self._lock:
                if self._queued is None:
                    self._working = False
                    self._thread = None
                    return
                (run, snapshot), self._queued = self._queued, None
                self._working = True
            try:
                apply = run.prepare_annotations(*snapshot())
            except Exception as err:  # raised where set_annotations would have raised it
                apply = _raiser(err)
            with self._lock:
                self._ready.append((run, apply))
            self._on_ready()


def _raiser(err):
    """A callable that raises ``err``."""
    def apply():
        raise err
    return apply
