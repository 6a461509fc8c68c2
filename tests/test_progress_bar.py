"""The progress bar says when Numba compiles, and its rate and time left leave
the compilation out."""

import time

import numba
import numpy as np

from nbembed import ProgressBar
from nbembed.optim.callbacks import COMPILING


def _fresh_kernel():
    """A kernel Numba has never compiled (not cached: defined here, cache off)."""
    @numba.njit(cache=False)
    def kernel(x):
        return np.sum(x * x) + 1.0
    return kernel


class _Run:
    name = "run"

    def __init__(self):
        self.iteration = 0
        self.history = []


def _iterate(bar, run, kernel=None):
    """One iteration, calling (and so perhaps compiling) ``kernel``; its seconds."""
    start = time.perf_counter()
    if kernel is not None:
        kernel(np.ones(2))
    run.iteration += 1
    bar(run)
    return time.perf_counter() - start


def _shown(capsys):
    """Every state of the bar that was written, in order."""
    return [s for s in capsys.readouterr().err.replace("\n", "\r").split("\r") if s.strip()]


def test_the_bar_says_compiling_without_a_rate_or_time_left(capsys):
    bar, run = ProgressBar(), _Run()
    bar.on_start(run, 3)
    _iterate(bar, run, _fresh_kernel())
    bar.on_end(run)
    compiling = [s for s in _shown(capsys) if COMPILING in s]
    assert compiling and compiling[0].startswith("run: 0/3 ")
    assert not any("it/s" in s or "s/it" in s or "<" in s for s in compiling)


def test_rate_and_time_left_come_from_the_iterations_after_compiling():
    bar, run = ProgressBar(), _Run()
    bar.on_start(run, 3)
    compiling = _iterate(bar, run, _fresh_kernel())
    state = bar._bar.format_dict
    assert (state["n"], state["initial"]) == (1, 1)
    assert state["elapsed"] < compiling
    assert "?it/s" in str(bar._bar)  # no iteration timed yet
    _iterate(bar, run)
    assert "?it/s" not in str(bar._bar)
    bar.on_end(run)


def test_a_cached_run_keeps_its_bar_and_says_nothing_of_compiling(capsys):
    bar, run = ProgressBar(), _Run()
    kernel = _fresh_kernel()
    kernel(np.ones(2))
    bar.on_start(run, 3)
    shown = bar._bar
    _iterate(bar, run, kernel)
    assert bar._bar is shown
    bar.on_end(run)
    assert not any(COMPILING in s for s in _shown(capsys))


def test_the_bar_stops_listening_at_the_end(capsys):
    bar, run = ProgressBar(), _Run()
    bar.on_start(run, 3)
    bar.on_end(run)
    capsys.readouterr()
    _fresh_kernel()(np.ones(2))
    assert not _shown(capsys)


class _Estimator:
    def __init__(self, kernel=None):
        self.kernel = kernel

    def fit(self, bar, run):
        """What EmbeddingEstimator.fit does around its callbacks."""
        bar.on_prepare(self)
        if self.kernel is not None:
            self.kernel(np.ones(2))  # the neighbours and affinities, compiled or not
        bar.on_start(run, 2)
        _iterate(bar, run)
        bar.on_end(run)


def test_compiling_while_the_run_is_prepared_is_shown_before_the_iterations(capsys):
    _Estimator(_fresh_kernel()).fit(ProgressBar(), _Run())
    shown = _shown(capsys)
    preparing = [i for i, s in enumerate(shown) if "preparing, " + COMPILING in s]
    iterating = [i for i, s in enumerate(shown) if "/2" in s]
    assert preparing and shown[preparing[0]].startswith("_Estimator: preparing")
    assert iterating and max(preparing) < min(iterating)


def test_a_cached_preparation_shows_no_bar(capsys):
    kernel = _fresh_kernel()
    kernel(np.ones(2))
    bar = ProgressBar()
    _Estimator(kernel).fit(bar, _Run())
    assert not any(COMPILING in s for s in _shown(capsys))
    assert bar._watch is None and bar._bar is None


def test_fit_tells_its_callbacks_that_it_prepares_first():
    from nbembed import HSSNE

    heard = []

    class Listener:
        def on_prepare(self, estimator):
            heard.append(("prepare", type(estimator).__name__))

        def on_start(self, run, n):
            heard.append(("start", n))

        def __call__(self, run):
            return None

    X = np.random.default_rng(0).normal(size=(40, 3))
    HSSNE(perplexity=5, max_iter=30, random_state=0).fit(X, callbacks=Listener())
    assert heard == [("prepare", "HSSNE"), ("start", 30)]
