"""How a gradient-based fit ended: ``converged_``, ``n_recoveries_`` and the
warning when a run ends worse than it started."""

import warnings

import numpy as np
import pytest

from nbembed import HSSNE, SNE, Mbed, NeRV, ParametricEmbedding, SNeRV  # noqa: F401
from nbembed.optim.run import JUDGED_AFTER, RunOutcome


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 1, (20, 4)), rng.normal(4, 1, (20, 4))])
    y = np.repeat([0, 1], 20)
    return X, y


GRADIENT_ESTIMATORS = [
    (HSSNE, dict(perplexity=5.0, max_iter=60, early_exaggeration_iter=10, random_state=0)),
    (SNE, dict(perplexity=5.0, max_iter=60, early_exaggeration_iter=10, random_state=0)),
    (NeRV, dict(n_neighbors=5.0, max_iter=30, random_state=0)),
    (SNeRV, dict(n_neighbors=5.0, max_iter=30, random_state=0)),
    (Mbed, dict(n_classes=2, max_iter=30, n_anneal=3, random_state=0)),
    (ParametricEmbedding, dict(max_iter=30, random_state=0)),
]


def _fit(cls, params, X, y):
    if cls is ParametricEmbedding:
        return cls(**params).fit(np.column_stack([y, 1 - y]) * 0.8 + 0.1)
    return cls(**params).fit(X, y)


@pytest.mark.parametrize("cls, params", GRADIENT_ESTIMATORS,
                         ids=[c.__name__ for c, _ in GRADIENT_ESTIMATORS])
def test_every_gradient_estimator_reports_how_its_run_ended(cls, params, data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short runs may not meet their tolerance
        est = _fit(cls, params, *data)
    assert isinstance(est.converged_, bool)
    assert est.n_recoveries_ == 0
    assert "converged_" in cls.__doc__


def test_a_run_that_ends_worse_than_it_started_warns_and_has_not_converged(data):
    est = HSSNE(learning_rate=1e6, max_step_norm=None, perplexity=5.0, max_iter=100,
                early_exaggeration_iter=0, random_state=0)
    with pytest.warns(RuntimeWarning, match=r"ended with a higher cost .* smaller "
                                            r"learning_rate"):
        est.fit(data[0])
    assert est.history_[-1]["cost"] > est.history_[0]["cost"]
    assert est.converged_ is False


def test_a_good_run_does_not_warn_and_converges_when_it_settles(data):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # Long enough to settle from this start (at 600 iterations it still descends).
        est = HSSNE(perplexity=10.0, max_iter=1000, random_state=0).fit(data[0])
    assert est.converged_ is True


def test_a_run_cut_short_has_not_converged(data):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = HSSNE(perplexity=5.0, max_iter=20, early_exaggeration_iter=10,
                    random_state=0).fit(data[0])
    assert est.converged_ is False


def test_a_schedule_that_changes_the_objective_is_judged_from_the_last_change(data):
    """NeRV's widening stages change the cost it minimizes: its final cost is above
    the first stage's start, which is no divergence."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = NeRV(n_neighbors=3.0, max_iter=60, random_state=0).fit(data[0])
    assert est.history_[-1]["cost"] > est.history_[0]["cost"]


def test_run_outcome_ended_worse():
    assert RunOutcome(False, 1.0, 2.0, JUDGED_AFTER).ended_worse
    assert RunOutcome(False, 1.0, float("inf"), JUDGED_AFTER).ended_worse
    assert not RunOutcome(False, 1.0, 2.0, JUDGED_AFTER - 1).ended_worse  # too early to say
    assert not RunOutcome(False, 2.0, 1.0, JUDGED_AFTER).ended_worse
    assert not RunOutcome(False, 2.0, 2.05, JUDGED_AFTER).ended_worse  # within DIVERGENCE_RISE
    assert not RunOutcome(False, float("nan"), float("nan"), JUDGED_AFTER).ended_worse


@pytest.mark.parametrize("max_iter", [20, 50])
def test_early_exaggeration_raising_the_plain_cost_is_no_divergence(max_iter, data):
    """The plain KL rises while early exaggeration separates clusters and for a few
    iterations after it; neither a run inside it nor one ending just after warns."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = HSSNE(perplexity=5.0, max_iter=max_iter, early_exaggeration_iter=10,
                    init="random", random_state=0).fit(data[0])
        HSSNE(perplexity=5.0, max_iter=max_iter, random_state=0).fit(data[0])
    assert est.converged_ is False
