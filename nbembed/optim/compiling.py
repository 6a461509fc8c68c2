"""Tell when Numba compiles a kernel in this thread, so that progress shown to
the user can say so (the Explorer's status, :class:`~nbembed.ProgressBar`).

Numba announces every compilation that its disk cache could not serve with a
``numba:compile`` event (loading a cached kernel raises none). A
:class:`CompileWatch` listens to those events for the duration of a ``with``
block and reports the first one that starts, and the last one that ends, in
the thread that entered the block; compilations in other threads are not its
business. A :class:`CompileCounter` counts the compilations of nbembed's
kernels in every thread (``nbembed compile`` reports them).
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


class CompileCounter(event.Listener):
    """Counts the compilations of nbembed's kernels, in any thread, for the
    duration of a ``with`` block (loading one from the disk cache is none).

    Attributes
    ----------
    count : int
    """

    def __init__(self):
        self.count = 0

    def __enter__(self):
        event.register("numba:compile", self)
        return self

    def __exit__(self, *exc):
        event.unregister("numba:compile", self)
        return False

    def on_start(self, ev):
        pass

    def on_end(self, ev):
        function = getattr(ev.data["dispatcher"], "py_func", None)
        if getattr(function, "__module__", "").startswith("nbembed."):
            self.count += 1
