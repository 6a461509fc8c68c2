"""Tell when Numba compiles a kernel in this thread, so that progress shown to
the user can say so (the Explorer's status, :class:`~nbembed.ProgressBar`).

Numba announces every compilation that its disk cache could not serve with a
``numba:compile`` event (loading a cached kernel raises none). A
:class:`CompileWatch` listens to those events for the duration of a ``with``
block and reports the first one that starts, and the last one that ends, in
the thread that entered the block; compilations in other threads are not its
business.
"""

from __future__ import annotations

import threading

from numba.core import event


class CompileWatch(event.Listener):
    """Calls ``on_compiling(True)`` when a compilation starts in this thread and
    ``on_compiling(False)`` when it has ended (nested compilations count once).

    Parameters
    ----------
    on_compiling : callable
        ``on_compiling(active)``.
    """

    def __init__(self, on_compiling):
        self._on_compiling = on_compiling
        self._thread = None
        self._depth = 0

    def __enter__(self):
        self._thread = threading.get_ident()
        self._depth = 0
        event.register("numba:compile", self)
        return self

    def __exit__(self, *exc):
        event.unregister("numba:compile", self)
        if self._depth:
            self._depth = 0
            self._on_compiling(False)
        return False

    def on_start(self, ev):
        if threading.get_ident() != self._thread:
            return
        self._depth += 1
        if self._depth == 1:
            self._on_compiling(True)

    def on_end(self, ev):
        if threading.get_ident() != self._thread or not self._depth:
            return
        self._depth -= 1
        if self._depth == 0:
            self._on_compiling(False)
