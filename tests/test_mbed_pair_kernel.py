"""Mbed's exact SNE kernel visits each pair once: against the NumPy reference at
sizes that exercise its row groups and column chunks, and bit for bit on any
thread count."""

import numpy as np
import pytest
from sklearn.metrics import pairwise_distances

import reference_mbed as refm
from nbembed._kernels import mbed as kernels


@pytest.mark.parametrize("far", [False, True])
def test_sne_kernel_matches_reference_over_many_row_groups(rng, far):
    """More rows than the kernel's groups of row blocks hold in one round, and
    rows longer than one column chunk: every pair is visited once, both ways."""
    n = kernels.N_GROUPS * kernels.ROW_BLOCK + 3 * kernels.COLUMN_CHUNK // 2
    P = refm.input_neighbourhoods(pairwise_distances(rng.normal(size=(n, 4))), 2.0)
    Y = rng.normal(size=(n, 3))
    if far:
        Y[n // 2] += 100.0  # its normalizer is summed shifted
    grad = np.empty((3, n))
    p_log_p = np.sum(P * np.log(P, where=P > 0, out=np.zeros_like(P)))
    cost = p_log_p + kernels.sne_cost_gradient(np.ascontiguousarray(Y.T), P + P.T, grad)
    assert cost == pytest.approx(refm.sne_cost(P, Y), rel=1e-11)
    np.testing.assert_allclose(grad.T, refm.sne_grad(P, Y), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("far", [False, True])
def test_the_kept_exponentials_are_the_pairs_and_a_reused_buffer_changes_nothing(rng, far):
    n = kernels.COLUMN_CHUNK + 37
    P = refm.input_neighbourhoods(pairwise_distances(rng.normal(size=(n, 4))), 2.0)
    Y = rng.normal(size=(n, 3))
    if far:
        Y[5] += 100.0  # its row is summed shifted; the second pass computes again
    Yt = np.ascontiguousarray(Y.T)
    first, again = np.empty((3, n)), np.empty((3, n))
    pair_exp = np.full(n * (n - 1) // 2, np.nan)  # work space: its content must not matter
    cost = kernels.sne_cost_gradient_kept(Yt, P + P.T, first, pair_exp)
    # row by row, the upper triangle of exp(-||y_i - y_j||^2)
    tau = ((Yt.T[:, None, :] - Yt.T[None, :, :]) ** 2).sum(axis=2)
    np.testing.assert_allclose(pair_exp, np.exp(-tau[np.triu_indices(n, 1)]), rtol=1e-13)
    pair_exp[::7] = -1.0
    assert kernels.sne_cost_gradient_kept(Yt, P + P.T, again, pair_exp) == cost
    np.testing.assert_array_equal(again, first)
    # the same bits without keeping them (each pass computes them)
    assert kernels.sne_cost_gradient(Yt, P + P.T, again) == cost
    np.testing.assert_array_equal(again, first)
    assert cost + np.sum(P * np.log(P, where=P > 0, out=np.zeros_like(P))) == pytest.approx(
        refm.sne_cost(P, Y), rel=1e-11)


KERNEL_THREADS_SCRIPT = """
import hashlib
import numpy as np
from nbembed._kernels import mbed
rng = np.random.default_rng(1)
n = 2 * mbed.N_GROUPS * mbed.ROW_BLOCK + 77
P = rng.random((n, n))
np.fill_diagonal(P, 0.0)
P /= P.sum(axis=1, keepdims=True)
Yt = rng.normal(size=(5, n))
grad = np.empty_like(Yt)
cost = mbed.sne_cost_gradient(Yt, P + P.T, grad)
print(repr(cost), hashlib.sha256(grad.tobytes()).hexdigest())
"""


def test_sne_kernel_gives_the_same_bits_on_any_thread_count():
    import os
    import subprocess
    import sys

    outputs = set()
    for threads in ("1", "2", "3"):
        env = dict(os.environ, NUMBA_NUM_THREADS=threads)
        done = subprocess.run([sys.executable, "-c", KERNEL_THREADS_SCRIPT], env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        outputs.add(done.stdout.strip())
    assert len(outputs) == 1, outputs


KERNEL_FROM_CACHE_SCRIPT = """
import numpy as np
from nbembed._kernels import mbed
rng = np.random.default_rng(2)
n = 300
P = rng.random((n, n))
np.fill_diagonal(P, 0.0)
P /= P.sum(axis=1, keepdims=True)
Yt = rng.normal(size=(3, n))
grad = np.empty_like(Yt)
if WHICH == "kept":
    print(repr(mbed.sne_cost_gradient_kept(Yt, P + P.T, grad, np.empty(0))))
else:
    print(repr(mbed.sne_cost_gradient(Yt, P + P.T, grad)))
"""


def test_the_kernel_runs_in_processes_that_load_it_from_the_disk_cache(tmp_path):
    """One process compiles the parallel kernel into an empty disk cache; the next
    ones load it and call it through ``sne_cost_gradient``. A compiled wrapper
    built in the second process was cached in a form that crashed the third."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), NBEMBED_PREBUILT_KERNELS="0")
    outputs = []
    for which in ("kept", "wrapper", "wrapper"):
        script = KERNEL_FROM_CACHE_SCRIPT.replace("WHICH", repr(which))
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, (which, done.returncode, done.stderr[-2000:])
        outputs.append(done.stdout.strip())
    assert len(set(outputs)) == 1, outputs
