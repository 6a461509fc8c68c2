"""Give memory that a long session has freed back to the operating system.

A live Explorer allocates and frees large arrays in several threads for hours
(affinities after each slider move, read-outs, frames). glibc's allocator keeps
much of what is freed in its per-thread heaps instead of returning it, so the
process's resident memory creeps up although the live data does not grow (in
seven minutes of the Explorer soak, from 468 to 497 MiB; one ``malloc_trim``
then brought it to 401 MiB, 3% above the 390 MiB it gave at the start).

Two things keep it down on glibc; elsewhere (macOS, Windows, another C library)
neither does anything:

* :func:`configure_allocator`, once per process when an Explorer starts: large
  blocks get their own mapping, returned when freed. glibc starts with that at
  128 KiB but raises the threshold after every freed mapping, up to 32 MiB,
  after which the affinity matrices, frames and read-outs of a live Explorer
  come from heaps that keep their pages; and it makes up to eight heaps per
  core, one for each thread that allocates. Fixing the threshold and allowing
  two heaps, the soak's resident memory grew 5% in its first six minutes at
  ten actions a second instead of 21% in five.

  The threshold is fixed at 4 MiB, not at glibc's starting 128 KiB: an
  iteration allocates and frees arrays of a few hundred kilobytes (positions,
  gradients, grids), and with their own mappings each one was mapped, faulted
  in page by page and unmapped again, every iteration: 20 000 points took
  37-44 ms an iteration instead of 18-27 ms. Fixing the threshold also fixes
  glibc's trim threshold at 128 KiB, so that the heaps were shrunk and grown
  again every iteration as well (26-34 ms); it is set to 64 MiB, and the
  releaser below returns what stays free.
* :class:`MemoryReleaser` calls ``malloc_trim(0)`` now and then, for what the
  heaps still keep.

And one thing that saves time rather than memory: :class:`Room`, storage that
an array rebuilt again and again at about the same size (P~ after each
must-link change at 10^6 points, 1.2 GB) is written into, instead of pages
that the system maps and zeroes one by one on first touch: at that size a
fresh array cost 0.1-3 s more to fill than a reused one, depending on how
fragmented the system's memory was.
"""

from __future__ import annotations

import ctypes
import os
import sys
import time

import numpy as np

#: Fewest seconds between two releases: a release takes milliseconds, while the
#: memory it returns builds up over minutes.
RELEASE_EVERY_SECONDS = 30.0


#: Bytes from which every allocation gets its own mapping, returned when freed.
MMAP_THRESHOLD_BYTES = 4 * 2**20
#: Free bytes at the top of a heap before glibc gives them back by itself.
TRIM_THRESHOLD_BYTES = 64 * 2**20
#: Heaps that glibc may make for the threads that allocate.
MAX_ARENAS = 2

# mallopt's parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
#: Environment variables by which a user sets these themselves; they are left alone then.
_USER_SETTINGS = {_M_MMAP_THRESHOLD: "MALLOC_MMAP_THRESHOLD_",
                  _M_TRIM_THRESHOLD: "MALLOC_TRIM_THRESHOLD_", _M_ARENA_MAX: "MALLOC_ARENA_MAX"}

_configured = False


def _glibc(name):
    """glibc's function ``name``, or None where the C library has none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None


def configure_allocator():
    """Fix glibc's mmap and trim thresholds and cap its heaps, once per process, for a
    long session.

    Settings the user made through ``MALLOC_MMAP_THRESHOLD_``,
    ``MALLOC_TRIM_THRESHOLD_`` or ``MALLOC_ARENA_MAX`` are kept. Returns whether
    anything was set.
    """
    global _configured
    mallopt = _glibc("mallopt")
    if _configured or mallopt is None:
        return False
    _configured = True
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    changed = False
    for param, value in ((_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES),
                         (_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES), (_M_ARENA_MAX, MAX_ARENAS)):
        if _USER_SETTINGS[param] not in os.environ:
            changed = bool(mallopt(param, value)) or changed
    return changed


def _malloc_trim():
    """glibc's ``malloc_trim``, or None where the C library has none."""
    trim = _glibc("malloc_trim")
    if trim is None:
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


class Room:
    """One-dimensional storage reused by an array that is rebuilt at about the same size.

    :meth:`take` hands out the first ``size`` elements of the stored buffer
    when it has room for them and the same dtype, else a new buffer with half
    as much again of room (so that an array that grows, P~ after more
    must-links, fits next time; the system gives memory pages only once they
    are written, so room never used costs address space, not memory). What
    was taken before is overwritten by the next use: the owner of a room keeps
    only its last result.
    """

    def __init__(self):
        self._buffer = None

    def take(self, size, dtype):
        """An array of ``size`` elements of ``dtype``, uninitialized, a view of the room."""
        dtype = np.dtype(dtype)
        buffer = self._buffer
        if buffer is None or buffer.dtype != dtype or buffer.size < size:
            self._buffer = buffer = None  # freed first, unless its last array is still held
            self._buffer = buffer = np.empty(size + size // 2, dtype=dtype)
        return buffer[:size]


def available_bytes():
    """Memory the system can give without swapping (Linux's ``MemAvailable``), in
    bytes; None where it does not say."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def new_arrays(shapes, rooms=None):
    """Uninitialized arrays, one for each ``(size, dtype)`` of ``shapes``: new, or
    taken from ``rooms`` (a :class:`Room` for each) when given."""
    if rooms is None:
        return [np.empty(size, dtype=dtype) for size, dtype in shapes]
    return [room.take(size, dtype) for room, (size, dtype) in zip(rooms, shapes, strict=True)]
