"""Give memory that a long session has freed back to the operating system.

A live Explorer allocates and frees large arrays in several threads for hours
(affinities after each slider move, read-outs, frames). glibc's allocator keeps
much of what is freed in its per-thread heaps instead of returning it, so the
process's resident memory creeps up although the live data does not grow (in
seven minutes of the Explorer soak, from 468 to 497 MiB; one ``malloc_trim``
then brought it to 401 MiB, 3% above the 390 MiB it gave at the start).
:class:`MemoryReleaser` calls ``malloc_trim(0)`` now and then; elsewhere
(macOS, Windows, a C library without it) it does nothing.
"""

from __future__ import annotations

import ctypes
import sys
import time

#: Fewest seconds between two releases: a release takes milliseconds, while the
#: memory it returns builds up over minutes.
RELEASE_EVERY_SECONDS = 30.0


def _malloc_trim():
    """glibc's ``malloc_trim``, or None where the C library has none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


class MemoryReleaser:
    """Returns freed heap memory to the operating system at most every ``every`` seconds.

    Parameters
    ----------
    every : float
        Seconds between two releases.
    """

    def __init__(self, every=RELEASE_EVERY_SECONDS):
        self.every = every
        self._trim = _malloc_trim()
        self._last = time.monotonic()

    @property
    def available(self):
        """bool: Whether this platform's C library can release memory."""
        return self._trim is not None

    def __call__(self):
        """Release now if the last release is ``every`` seconds old; return whether it did."""
        now = time.monotonic()
        if self._trim is None or now - self._last < self.every:
            return False
        self._last = now
        self._trim(0)
        return True
