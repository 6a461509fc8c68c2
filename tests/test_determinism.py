"""Same input and seed give the same embedding, bit for bit, on any thread count.

Every method is fitted in a fresh process per thread count (Numba reads
``NUMBA_NUM_THREADS`` once, at start-up); each child prints a SHA-256 of every
embedding and the hashes must agree. The data are small and the schedules
short: what is tested is the order of the floating-point sums, which is the
same at any size.

A first child fills Numba's disk cache before the compared ones run: a kernel
compiled in the process can round differently from the same kernel loaded
from the cache, which is another matter than the thread count (the process
that compiles a kernel calls its helpers as compiled on their own, the cached
kernel holds copies optimized again when linked into it; docs/reliability.md).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import hashlib, json, sys
import numpy as np
from nbembed import (HSSNE, SNE, Mbed, NeRV, SNeRV, ParametricEmbedding, SSLFDA)
from nbembed.datasets import load_digits

X, y = load_digits()
X, y = X[:240], y[:240]
partial = np.where(np.arange(len(y)) % 4 == 0, y, -1)
P = np.full((len(y), 10), 0.02)
P[np.arange(len(y)), y] += 0.8
P /= P.sum(axis=1, keepdims=True)

fits = {
    "hssne-exact": lambda: HSSNE(alpha=1.0, max_iter=120, random_state=0).fit_transform(X),
    "hssne-alpha-0.8": lambda: HSSNE(alpha=0.8, max_iter=120, random_state=0).fit_transform(X),
    "hssne-barnes-hut": lambda: HSSNE(repulsion="barnes-hut", max_iter=120,
                                      random_state=0).fit_transform(X),
    "hssne-fft": lambda: HSSNE(repulsion="fft", max_iter=120, random_state=0).fit_transform(X),
    "sne": lambda: SNE(max_iter=120, random_state=0).fit_transform(X),
    "mbed": lambda: Mbed(n_classes=3, max_iter=60, random_state=0).fit_transform(X[y < 3]),
    "nerv": lambda: NeRV(max_iter=40, anneal_iter=10, random_state=0).fit_transform(X),
    "snerv": lambda: SNeRV(max_iter=30, anneal_iter=10, random_state=0).fit_transform(X, partial),
    "parametric": lambda: ParametricEmbedding(max_iter=30, random_state=0).fit_transform(P),
    "ss-lfda": lambda: SSLFDA().fit_transform(X, partial),
}
out = {}
for name, fit in fits.items():
    Y = np.ascontiguousarray(fit(), dtype=np.float64)
    out[name] = hashlib.sha256(Y.tobytes()).hexdigest()
print(json.dumps(out))
"""


def _hashes(threads):
    env = dict(os.environ, NUMBA_NUM_THREADS=str(threads),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                          text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_every_method_gives_the_same_embedding_on_1_2_and_4_threads():
    _hashes(2)  # compiles whatever is not cached yet
    by_threads = {threads: _hashes(threads) for threads in (1, 2, 4)}
    methods = by_threads[1]
    assert len(methods) == 10
    differing = sorted(name for name in methods
                       if len({by_threads[t][name] for t in by_threads}) != 1)
    assert not differing, f"embeddings depend on the thread count: {differing}"
