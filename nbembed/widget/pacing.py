"""Pace the Explorer's frames to the page that draws them.

Frames reach the page through one ordered channel (the kernel's IOPub socket,
the Jupyter server, the page's websocket), and the page handles them one at a
time. When it draws more slowly than the kernel sends (many points, software
WebGL, a busy machine), frames pile up in that channel without bound, and
everything behind them waits, the output of the cells the user runs
included: with 100 000 points in Chromium on software WebGL, the page drew
0.3 frames a second while the kernel sent 1.8, and after two minutes a cell's
output took 90 s to appear.

So the page reports every frame it has drawn (a ``drawn`` message with the
``frame_id``; :mod:`~nbembed.widget.messages`) and, once a page reports, a
frame goes out only while fewer than :data:`FRAMES_AHEAD_OF_PAGE` sent frames
are unreported: a slow page gets the newest frame each time it is ready. A
frame forced by a change (:meth:`FrameStream._frame_allowed`) always goes.

Reports are handled on the kernel's main thread, which cannot read them while
a cell runs: meanwhile the frames are not paced (they go at the stream's own
rate, as for a page that never reports). A page that stops reporting (its tab
closed) still gets a frame every :data:`PAGE_SILENCE_SECONDS`.

Threads: :meth:`PagePacer.report` and the cell hooks run on the kernel's main
thread, :meth:`PagePacer.allows` on whichever thread publishes a frame; the
pacer's state belongs to its own lock.
"""

from __future__ import annotations

import threading
import time

#: Frames sent that the page has not reported drawn, at most.
FRAMES_AHEAD_OF_PAGE = 2

#: Seconds without a report after which one more frame goes out anyway.
PAGE_SILENCE_SECONDS = 5.0


class PagePacer:
    """Whether the next frame may go, from what the pages reported drawn.

    Parameters
    ----------
    ahead : int
        :data:`FRAMES_AHEAD_OF_PAGE`.
    silence : float
        :data:`PAGE_SILENCE_SECONDS`.
    clock : callable
        Seconds, monotonic.
    """

    def __init__(self, ahead=FRAMES_AHEAD_OF_PAGE, silence=PAGE_SILENCE_SECONDS,
                 clock=time.monotonic):
        self.ahead = ahead
        self.silence = silence
        self._clock = clock
        self._lock = threading.Lock()
        self._drawn = None  # the newest frame a page reported drawn; None: no page reports
        self._heard = 0.0  # when a page last reported, or a frame last went without it
        self._cell_running = False
        self._unhook = None

    @property
    def drawn(self):
        """The newest ``frame_id`` a page reported drawn (None before any report)."""
        return self._drawn

    @property
    def pacing(self):
        """Whether a page's reports bound the frames now (one reports and no cell
        runs): then at most ``ahead`` frames are on their way to it, whatever
        their size."""
        with self._lock:
            return self._drawn is not None and not self._cell_running

    def report(self, frame):
        """A page has drawn frame number ``frame``."""
        with self._lock:
            self._drawn = frame if self._drawn is None else max(self._drawn, frame)
            self._heard = self._clock()

    def allows(self, sent):
        """Whether a frame may go out now, ``sent`` frames having gone before it."""
        with self._lock:
            if self._drawn is None or self._cell_running or sent - self._drawn < self.ahead:
                return True
            now = self._clock()
            if now - self._heard < self.silence:
                return False
            self._heard = now
            return True

    def _cell_started(self, *args):
        self._cell_running = True

    def _cell_ended(self, *args):
        self._cell_running = False

    def watch_cells(self):
        """Stop pacing while the IPython shell runs code (when there is one)."""
        try:
            from IPython import get_ipython
        except ImportError:
            return
        shell = get_ipython()
        if shell is None or self._unhook is not None:
            return
        shell.events.register("pre_execute", self._cell_started)
        shell.events.register("post_execute", self._cell_ended)

        def unhook():
            for name, callback in (("pre_execute", self._cell_started),
                                   ("post_execute", self._cell_ended)):
                try:
                    shell.events.unregister(name, callback)
                except ValueError:
                    pass
        self._unhook = unhook

    def close(self):
        """Remove the hooks :meth:`watch_cells` added."""
        if self._unhook is not None:
            self._unhook()
            self._unhook = None
