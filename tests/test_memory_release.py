"""The Explorer's worker gives freed memory back to the system now and then; large
arrays rebuilt again and again reuse their memory."""

import os
import subprocess
import sys

import numpy as np
import pytest

from nbembed import _memory


def test_releases_at_most_once_per_period(monkeypatch):
    calls = []
    clock = [100.0]
    monkeypatch.setattr(_memory.time, "monotonic", lambda: clock[0])
    releaser = _memory.MemoryReleaser(every=30.0)
    releaser._trim = calls.append
    assert not releaser()  # just made
    clock[0] += 29.0
    assert not releaser()
    clock[0] += 1.0
    assert releaser() and calls == [0]
    clock[0] += 10.0
    assert not releaser() and calls == [0]


def test_does_nothing_where_the_c_library_cannot(monkeypatch):
    monkeypatch.setattr(_memory.sys, "platform", "darwin")
    releaser = _memory.MemoryReleaser(every=0.0)
    assert not releaser.available and not releaser()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_a_release_on_linux_returns_freed_heap_memory():
    releaser = _memory.MemoryReleaser(every=0.0)
    if not releaser.available:
        pytest.skip("this C library has no malloc_trim")

    def rss_pages():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1])

    # Blocks below the mmap threshold come from the heap; with the last one still
    # in use, freeing the others leaves their pages resident until a trim.
    blocks = [np.ones(4_000) for _ in range(10_000)]  # 32 kB each, 320 MB in all
    last = blocks.pop()
    del blocks
    held = rss_pages()
    assert releaser()
    assert rss_pages() < held - 50 * 2**20 // 4096  # over 50 MB back
    del last


_LARGE_BLOCKS = """
import numpy as np
from nbembed import _memory

def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20

if CONFIGURE:
    _memory.configure_allocator()
first = np.ones(2 * 2**20)          # 16 MiB, its own mapping ...
del first                           # ... whose release raises glibc's threshold
before = rss_mib()
blocks, kept = [], []
for _ in range(8):
    blocks.append(np.ones(2**20))   # 8 MiB ...
    kept.append(np.ones(25_000))    # ... and a 200 kB block after it, in use
del blocks                          # holes between blocks in use: no heap shrinks
print(rss_mib() - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
@pytest.mark.parametrize("configure", [False, True])
def test_a_configured_allocator_returns_freed_large_blocks_at_once(configure):
    if _memory._glibc("mallopt") is None:
        pytest.skip("this C library has no mallopt")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    done = subprocess.run([sys.executable, "-c", _LARGE_BLOCKS.replace("CONFIGURE", str(configure))],
                          env=env, check=True, capture_output=True, text=True, timeout=120)
    kept_mib = float(done.stdout)
    if configure:
        assert kept_mib < 8, f"{kept_mib:.0f} MiB of freed large blocks still resident"
    else:
        # glibc's own behaviour, which the setting is there to change.
        assert kept_mib > 32


def test_configuring_keeps_the_users_own_settings(monkeypatch):
    calls = []
    monkeypatch.setattr(_memory, "_configured", False)
    monkeypatch.setattr(_memory, "_glibc", lambda name: _FakeMallopt(calls))
    # A dask LocalCluster started earlier in this process leaves MALLOC_TRIM_THRESHOLD_
    # in the environment for its workers.
    for name in _memory._USER_SETTINGS.values():
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert _memory.configure_allocator()
    assert calls == [(_memory._M_MMAP_THRESHOLD, _memory.MMAP_THRESHOLD_BYTES),
                     (_memory._M_TRIM_THRESHOLD, _memory.TRIM_THRESHOLD_BYTES)]
    assert not _memory.configure_allocator()  # once per process


class _FakeMallopt:
    def __init__(self, calls):
        self.calls = calls

    def __call__(self, param, value):
        self.calls.append((param, value))
        return 1


def test_a_room_is_reused_while_it_has_room_and_grows_by_half():
    room = _memory.Room()
    first = room.take(800, np.float32)
    assert first.shape == (800,) and first.dtype == np.float32
    again = room.take(1200, np.float32)  # within the half of room more it was given
    assert np.shares_memory(again, first) and again.shape == (1200,)
    larger = room.take(1201, np.float32)
    assert not np.shares_memory(larger, first)
    assert np.shares_memory(room.take(1801, np.float32), larger)  # 1201 + 1201 // 2
    assert room.take(10, np.float64).dtype == np.float64  # another dtype: new memory
