"""Where a fit's time goes: HSSNE's ``timings_`` and the run's ``timings``.

Only what a clock guarantees is asserted: every phase measured (finite, not
negative), the iterations counted in the right phase, the phases inside the
wall time around them, and sleeps put into a phase found there at least whole.
Nothing asserts that anything is fast.
"""

import math
import time

import numpy as np
import pytest
from sklearn.datasets import load_iris

from nbembed import HSSNE, SNE
from nbembed.affinity import joint_probabilities
from nbembed.optim.timings import ITERATION_PHASES, PREPARATION_PHASES, FitTimings, timed

PHASES = PREPARATION_PHASES + ITERATION_PHASES


@pytest.fixture(scope="module")
def X_small():
    return load_iris(return_X_y=True)[0]


def small(**kw):
    params = dict(perplexity=10.0, max_iter=60, early_exaggeration_iter=25, tol=0.0,
                  random_state=0)
    params.update(kw)
    return HSSNE(**params)


def timed_fit(estimator, X, **fit_params):
    """The fitted estimator and the wall time of its fit."""
    start = time.perf_counter()
    estimator.fit(X, **fit_params)
    return estimator, time.perf_counter() - start


def phase_seconds(timings):
    return [getattr(timings, phase) for phase in PHASES]


@pytest.mark.parametrize("affinity", ["exact", "knn"])
def test_fit_times_every_phase_within_its_wall_time(X_small, affinity):
    estimator, wall = timed_fit(small(affinity=affinity), X_small)
    timings = estimator.timings_
    assert isinstance(timings, FitTimings)
    seconds = phase_seconds(timings)
    assert all(math.isfinite(s) and s > 0 for s in seconds), timings
    assert sum(seconds) == pytest.approx(timings.total)
    assert timings.total <= wall
    assert (timings.n_iter_early, timings.n_iter_main) == (25, 35)
    assert timings.n_iter_early + timings.n_iter_main == estimator.n_iter_
    assert timings.ms_per_iteration_main == pytest.approx(1000 * timings.main / 35)


def test_as_dict_lists_the_phases_then_the_counts(X_small):
    record = small().fit(X_small).timings_.as_dict()
    assert list(record) == list(PHASES) + ["n_iter_early", "n_iter_main",
                                           "ms_per_iteration_main"]
    assert (record["n_iter_early"], record["n_iter_main"]) == (25, 35)


def test_a_fit_without_main_iterations_has_no_time_per_iteration(X_small):
    timings = small(max_iter=20, early_exaggeration_iter=25).fit(X_small).timings_
    assert (timings.n_iter_early, timings.n_iter_main) == (20, 0)
    assert timings.main == 0.0
    assert math.isnan(timings.ms_per_iteration_main)


def test_precomputed_affinities_need_no_neighbour_search(X_small):
    P = joint_probabilities(X_small, 10.0, method="exact")
    timings = small(affinity="precomputed").fit(P).timings_
    assert timings.neighbors == 0.0
    assert timings.calibration > 0 and timings.initialization > 0


def test_each_fit_reports_its_own_timings(X_small):
    estimator = small()
    first = estimator.fit(X_small).timings_
    second = estimator.fit(X_small).timings_
    assert (second.n_iter_early, second.n_iter_main) == (25, 35)
    assert second is not first


def test_a_resumed_run_accumulates(X_small):
    run = small().prepare(X_small)
    prepared = run.timings
    assert (prepared.early_exaggeration, prepared.main) == (0.0, 0.0)
    assert (prepared.n_iter_early, prepared.n_iter_main) == (0, 0)
    start = time.perf_counter()
    run.step(15)
    stepping = time.perf_counter() - start  # time inside the step calls only
    after_one = run.timings
    time.sleep(0.05)  # a pause between calls, as in the Explorer: in no phase
    start = time.perf_counter()
    run.step(20)  # crosses the end of early exaggeration at 25
    stepping += time.perf_counter() - start
    after_two = run.timings
    assert (after_one.n_iter_early, after_one.n_iter_main) == (15, 0)
    assert after_one.main == 0.0
    assert (after_two.n_iter_early, after_two.n_iter_main) == (25, 10)
    assert after_two.early_exaggeration >= after_one.early_exaggeration > 0
    assert after_two.main > 0
    assert after_two.early_exaggeration + after_two.main <= stepping
    # The preparation is measured once, by prepare.
    assert phase_seconds(after_two)[:3] == phase_seconds(prepared)[:3]
    run.step(25)
    assert (run.timings.n_iter_early, run.timings.n_iter_main) == (25, 35)


@pytest.mark.parametrize("slow_phase", ["early_exaggeration", "main"])
def test_the_time_of_an_iteration_goes_to_its_phase(X_small, slow_phase):
    """Iterations of one phase made slower by a sleep of known length: that phase
    holds at least all the sleeps."""
    run = small().prepare(X_small)
    gradient = run.objective.gradient
    pause = 0.004

    def slow_gradient(Yt, grad, exaggeration=1.0):
        if (exaggeration != 1.0) == (slow_phase == "early_exaggeration"):
            time.sleep(pause)
        return gradient(Yt, grad, exaggeration)

    run.objective.gradient = slow_gradient
    run.run()
    timings = run.timings
    slept = pause * (timings.n_iter_early if slow_phase == "early_exaggeration"
                     else timings.n_iter_main)
    assert getattr(timings, slow_phase) >= slept


def test_callbacks_count_in_the_iterations(X_small):
    pause = 0.003
    estimator, wall = timed_fit(small(), X_small, callbacks=lambda run: time.sleep(pause))
    timings = estimator.timings_
    assert timings.early_exaggeration + timings.main >= pause * estimator.n_iter_
    assert timings.total <= wall


def test_timed_adds_to_a_phase_and_ignores_none():
    timings = {"calibration": 1.0}
    for _ in range(2):
        with timed(timings, "calibration"):
            time.sleep(0.01)
    with timed(timings, "neighbors"):
        pass
    assert timings["calibration"] >= 1.02
    assert sorted(timings) == ["calibration", "neighbors"]
    with timed(None, "neighbors"):
        pass


def test_the_affinities_report_their_phases_and_stay_the_same(X_small):
    for method in ("exact", "knn"):
        timings = {}
        P = joint_probabilities(X_small, 10.0, method=method, timings=timings)
        assert sorted(timings) == ["calibration", "neighbors"]
        assert all(seconds > 0 for seconds in timings.values())
        plain = joint_probabilities(X_small, 10.0, method=method)
        dense = (lambda M: M.toarray()) if method == "knn" else np.asarray
        np.testing.assert_array_equal(dense(P), dense(plain))


def test_a_run_not_prepared_from_data_reports_its_preparation_as_unmeasured(X_small):
    timings = SNE(perplexity=10.0, max_iter=10, early_exaggeration_iter=5).prepare(
        X_small).step(10).timings
    assert all(math.isnan(getattr(timings, phase)) for phase in PREPARATION_PHASES)
    assert (timings.n_iter_early, timings.n_iter_main) == (5, 5)
    assert math.isnan(timings.total)
