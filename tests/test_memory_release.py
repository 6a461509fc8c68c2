"""The Explorer's worker gives freed memory back to the system now and then."""

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
