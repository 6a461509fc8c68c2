"""HSSNE's convergence stop (``tol``): a run ends early once its cost has settled."""

import numpy as np
import pytest

from nbembed import HSSNE
from nbembed.optim import embedding_run


@pytest.fixture(scope="module")
def blobs():
    rng = np.random.default_rng(0)
    y = np.arange(150) % 3
    return rng.normal(size=(150, 5)) + 6.0 * np.eye(5)[y]


def test_a_settled_run_stops_on_the_path_of_the_full_run(blobs):
    full = HSSNE(alpha=0.5, max_iter=1000, tol=0, random_state=0).fit(blobs)
    early = HSSNE(alpha=0.5, max_iter=1000, tol=1e-5, random_state=0).fit(blobs)
    assert full.n_iter_ == 1000
    assert early.n_iter_ < 1000 and early.converged_
    # Same iterations up to the stop, so the same records.
    assert [r["cost"] for r in early.history_] == \
        [r["cost"] for r in full.history_ if r["iteration"] <= early.n_iter_][:len(early.history_)]
    # Stopped where the cost had settled: the rest of the full run changes it little.
    assert abs(full.kl_divergence_ - early.kl_divergence_) <= \
        1e-5 * (1000 - early.n_iter_) * early.kl_divergence_
    # The last two intervals changed the cost by at most tol per iteration.
    last = early.history_[-3:]
    for before, after in zip(last, last[1:]):
        iterations = after["iteration"] - before["iteration"]
        assert abs(after["cost"] - before["cost"]) <= 1e-5 * iterations * after["cost"]


def test_no_stop_during_early_exaggeration_and_none_with_tol_zero(blobs):
    # Without exaggeration to speak of, the cost settles early; still no stop before
    # the exaggeration phase has ended and two intervals (100 iterations) have passed.
    model = HSSNE(alpha=0.5, max_iter=1000, early_exaggeration=1.0,
                  early_exaggeration_iter=400, random_state=0).fit(blobs)
    assert 400 + embedding_run.CONVERGED_MIN_ITERATIONS <= model.n_iter_ < 1000
    assert HSSNE(alpha=0.5, max_iter=600, tol=0.0, random_state=0).fit(blobs).n_iter_ == 600


def test_a_change_lets_a_converged_run_go_on(blobs):
    run = HSSNE(alpha=0.5, max_iter=2000, random_state=0).prepare(blobs)
    run.run()
    assert run.converged and run.done and run.remaining == 0
    stopped = run.iteration
    run.step(10)
    assert run.iteration == stopped  # nothing to do
    run.set_params(alpha=0.4)
    assert not run.converged and not run.done
    run.step(10)
    assert run.iteration == stopped + 10
    run.run()
    assert run.converged and run.iteration < 2000
    # Pinning (or moving) points also lets it go on.
    run.pin([0, 1])
    assert not run.done
    run.step(5)
    assert run.iteration > stopped + 10


@pytest.mark.parametrize("tol", [-1e-5, float("nan")])
def test_bad_tol_is_refused(blobs, tol):
    with pytest.raises(ValueError, match="tol"):
        HSSNE(tol=tol, max_iter=300).fit(blobs)
