"""The Explorer's status says "compiling" while Numba compiles in the worker thread."""

import threading

import numba
import pytest
import numpy as np

from nbembed.optim.compiling import CompileWatch
from nbembed.widget.worker import RunWorker


def _fresh_kernel():
    """A kernel Numba has never compiled (not cached: defined here, cache off)."""
    @numba.njit(cache=False)
    def kernel(x):
        return np.sum(x * x) + 1.0
    return kernel


def test_the_watch_reports_a_compilation_in_its_own_thread_once():
    seen = []
    kernel = _fresh_kernel()
    with CompileWatch(seen.append):
        kernel(np.ones(3))
        kernel(np.ones(4))  # compiled already: no event
    assert seen == [True, False]


def test_the_watch_ignores_other_threads_and_compiled_kernels():
    seen = []
    kernel = _fresh_kernel()
    with CompileWatch(seen.append):
        other = threading.Thread(target=lambda: kernel(np.ones(3)))
        other.start()
        other.join()
        kernel(np.ones(3))
    assert seen == []


class _CompilingRun:
    """A run whose first step compiles a new kernel."""

    name = "compiling"
    live_parameters = {}
    annotation_kinds = ()

    def __init__(self):
        self.iteration, self.n_iter = 0, 3
        self._kernel = _fresh_kernel()

    @property
    def done(self):
        return self.iteration >= self.n_iter

    @property
    def remaining(self):
        return self.n_iter - self.iteration

    def step(self, n=1, callbacks=None, record_last=True):
        self._kernel(np.ones(2))
        self.iteration += min(n, self.remaining)


def _run_until_done():
    """Run a :class:`_CompilingRun` in a worker to its end; returns the statuses it reported."""
    statuses = []
    done = threading.Event()

    def on_status(status, error):
        statuses.append(status)
        if status == "done":
            done.set()

    worker = RunWorker(_CompilingRun, on_step=lambda run, force: None, on_status=on_status,
                       on_warning=lambda message: None)
    worker.start()
    try:
        assert done.wait(60)
    finally:
        assert worker.stop(timeout=10)
    return statuses


def test_the_worker_says_compiling_then_goes_back_to_running():
    statuses = _run_until_done()
    assert statuses[:4] == ["preparing", "running", "compiling", "running"], statuses
    assert statuses[-1] == "done" and statuses.count("compiling") == 1


def test_an_idle_worker_compiles_the_forms_no_run_has_used():
    """A run compiles the pair kernels of its own alpha's form only; once idle,
    the worker compiles the other forms (for the signatures used so far), so
    that the next move of the alpha slider does not wait for them."""
    from nbembed._kernels import hssne
    from nbembed._kernels.forms import missing_forms
    from nbembed.widget import worker as worker_module

    # A layout no other caller uses: a signature that only the Student-t form has.
    Yt = np.asfortranarray(np.random.default_rng(0).normal(size=(2, 30)))
    hssne.hssne_z(Yt, 1.0)
    assert (hssne._Z[4], hssne._Z[0].signatures[-1]) in missing_forms()

    _run_until_done()
    compiling = worker_module._forms_thread
    assert compiling is not None
    compiling.join(600)
    assert not compiling.is_alive() and not missing_forms()
    expected = sum(np.sum((1 + 1.7 * ((Yt[:, i, None] - Yt) ** 2).sum(0)) ** (-1 / 1.7))
                   - 1.0 for i in range(30))
    assert hssne.hssne_z(Yt, 1.7) == pytest.approx(expected, rel=1e-10)
