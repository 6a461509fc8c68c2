"""How a gradient-based fit ended: ``converged_``, ``n_recoveries_``, the recovery
from divergence in every phase and the warnings when a run diverged or ends worse
than it started."""

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


@pytest.fixture(scope="module")
def blobs():
    """300 points in four clusters: large enough for the default step sizes."""
    rng = np.random.default_rng(1)
    centres = rng.normal(0, 8, (4, 10))
    return np.vstack([rng.normal(c, 1, (75, 10)) for c in centres])


# Steps that suit 40 points: "auto" takes at least 50, which overshoots on so few
# points (the runs recover from it, see test_auto_learning_rate_recovers_quietly).
GRADIENT_ESTIMATORS = [
    (HSSNE, dict(perplexity=5.0, max_iter=60, early_exaggeration_iter=10, learning_rate=5.0,
                 random_state=0)),
    (SNE, dict(perplexity=5.0, max_iter=60, early_exaggeration_iter=10, learning_rate=0.05,
               random_state=0)),
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


def test_divergence_after_early_exaggeration_is_restored_and_reported(data):
    """Without early exaggeration a step of 1e6 raises the plain cost: the run goes
    back and halves the step instead of ending worse than it started."""
    est = HSSNE(learning_rate=1e6, max_step_norm=None, perplexity=5.0, max_iter=100,
                early_exaggeration_iter=0, random_state=0)
    with pytest.warns(RuntimeWarning, match=r"diverged \d+ time\(s\) .* smaller "
                                            r"learning_rate than 1e\+06"):
        est.fit(data[0])
    assert est.n_recoveries_ > 0
    assert est.history_[-1]["cost"] < est.history_[0]["cost"]
    assert np.all(np.isfinite(est.embedding_))


def test_a_run_that_ends_worse_than_it_started_warns_and_has_not_converged(data, monkeypatch):
    """The end of a run is judged apart from the checks between records: with those
    blind to rises (a rise below the threshold at every check adds up the same way),
    a step of 1e6 ends worse than it started, and fit says so."""
    from nbembed.optim import embedding_run
    monkeypatch.setattr(embedding_run, "DIVERGENCE_RISE", np.inf)
    est = HSSNE(learning_rate=1e6, max_step_norm=None, perplexity=5.0, max_iter=100,
                early_exaggeration_iter=0, random_state=0)
    with pytest.warns(RuntimeWarning, match=r"ended with a higher cost .* smaller "
                                            r"learning_rate"):
        est.fit(data[0])
    assert est.n_recoveries_ == 0
    assert est.history_[-1]["cost"] > est.history_[0]["cost"]
    assert est.converged_ is False


def test_a_good_run_does_not_warn_and_converges_when_it_settles(data):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # Long enough to settle from this start (at 1500 iterations it still descends).
        est = HSSNE(perplexity=10.0, max_iter=2000, random_state=0).fit(data[0])
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
    iterations after it; neither a run inside it nor one ending just after warns or
    counts it as divergence."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = HSSNE(perplexity=5.0, max_iter=max_iter, early_exaggeration_iter=10,
                    learning_rate=5.0, init="random", random_state=0).fit(data[0])
        inside = HSSNE(perplexity=5.0, max_iter=max_iter, learning_rate=5.0,
                       random_state=0).fit(data[0])
    assert est.converged_ is False
    assert est.n_recoveries_ == inside.n_recoveries_ == 0
    if max_iter == 20:
        assert est.history_[-1]["cost"] > est.history_[0]["cost"]


# -- divergence in every phase -----------------------------------------------------------------
def _recoveries_by_iteration(run, seen):
    seen[run.iteration] = run.recoveries


def test_divergence_during_early_exaggeration_is_restored_and_reported(blobs):
    """A step of 1e6 blows the exaggerated layout apart (the plain cost hardly shows
    it); the exaggerated cost catches it, the run goes back to its last good layout
    and halves the step until it descends. (The plain cost rises during early
    exaggeration and falls only some 50 iterations after it: the run is given 250
    more, so that it ends well after that.)"""
    seen = {}
    est = HSSNE(learning_rate=1e6, max_step_norm=None, max_iter=500, random_state=0)
    with pytest.warns(RuntimeWarning, match=r"diverged .* smaller "
                                            r"learning_rate than 1e\+06 .* max_step_norm"):
        est.fit(blobs, callbacks=lambda run: _recoveries_by_iteration(run, seen))
    assert seen[est.early_exaggeration_iter] > 0  # caught during early exaggeration
    assert np.all(np.isfinite(est.embedding_))
    assert np.abs(est.embedding_).max() < 100.0  # not the blown-apart layout
    assert est.history_[-1]["cost"] < est.history_[0]["cost"]


@pytest.mark.parametrize("cls, n, params", [
    (HSSNE, 300, dict(max_iter=300)),
    (HSSNE, 300, dict(max_iter=300, max_step_norm=None, dtype="float64")),
    (SNE, 60, dict(perplexity=10.0, max_iter=60, early_exaggeration_iter=10)),
], ids=["HSSNE", "HSSNE-no-step-limit", "SNE"])
def test_a_huge_learning_rate_has_not_converged_and_warns(cls, n, params, blobs):
    est = cls(learning_rate=1e300, random_state=0, **params)
    with pytest.warns(RuntimeWarning, match=r"diverged .* smaller learning_rate than 1e\+300"):
        est.fit(blobs[:n])
    assert est.converged_ is False  # by recovering, or by wandering at max_step_norm
    assert np.all(np.isfinite(est.embedding_))


def test_how_steps_are_split_does_not_change_a_diverging_run(data):
    """Checks fall at iterations the schedule fixes, not where a step call ends: a
    diverging run stepped in pieces is the run stepped at once."""
    def make():
        return HSSNE(learning_rate=1e6, max_step_norm=None, perplexity=5.0, max_iter=140,
                     early_exaggeration_iter=60, random_state=0).prepare(data[0])

    whole, pieces = make(), make()
    whole.step(140)
    for _ in range(20):
        pieces.step(7)
    assert whole.recoveries > 0
    assert pieces.recoveries == whole.recoveries
    np.testing.assert_array_equal(pieces.embedding, whole.embedding)


def test_a_run_that_never_moves_from_its_start_says_so(blobs):
    """Every step of 1e300 is non-finite: the run keeps its start and says so."""
    X = blobs[:60]
    est = SNE(learning_rate=1e300, perplexity=10.0, max_iter=40, early_exaggeration_iter=10,
              random_state=0)
    run = est.prepare(X)
    start = run.embedding
    run.run()
    outcome = run.outcome()
    assert run.recovering and outcome.diverged and not outcome.converged
    with pytest.warns(RuntimeWarning, match=r"did not recover.* its start.* converged_ is "
                                            r"False"):
        est.fit(X)
    np.testing.assert_array_equal(est.embedding_, start)
    assert est.converged_ is False


@pytest.mark.parametrize("cls, n, params", [
    (HSSNE, 300, {}),
    (HSSNE, 300, dict(alpha=0.5)),
    (HSSNE, 300, dict(alpha=2.0, optimizer="fixed-point")),
    (SNE, 100, dict(max_iter=300)),
], ids=["t-SNE", "alpha-0.5", "fixed-point", "SNE"])
def test_a_normal_fit_raises_no_warning(cls, n, params, blobs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = cls(random_state=0, **params).fit(blobs[:n])
    assert np.all(np.isfinite(est.embedding_))
    if cls is HSSNE:
        assert est.n_recoveries_ == 0


def test_auto_learning_rate_recovers_quietly(data):
    """On 40 points the step "auto" chooses (50) overshoots early exaggeration: the run
    halves it by itself, without a warning, and ends better than without recovery."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = HSSNE(perplexity=10.0, alpha=0.5, random_state=0).fit(data[0])
    assert est.n_recoveries_ > 0
    assert est.kl_divergence_ < 0.2  # 0.73 when the overshoot went on unchecked


@pytest.mark.parametrize("objective", ["HSSNE", "SNE"])
def test_exaggerated_cost_terms_match_the_exaggerated_gradient(objective, data):
    """exaggeration * attraction + rest is the cost the exaggerated gradient descends."""
    X = data[0][::2]
    est = HSSNE(perplexity=5.0) if objective == "HSSNE" else SNE(perplexity=5.0)
    run = est.prepare(X)
    obj = run.objective
    Yt = np.random.default_rng(0).normal(size=run._Yt.shape)
    exaggeration, h = 7.0, 1e-6
    grad = np.empty_like(Yt)
    obj.gradient(Yt, grad, exaggeration)

    def cost(Z):
        attraction, rest = obj.value_terms(Z)
        return exaggeration * attraction + rest

    numeric = np.empty_like(Yt)
    for index in np.ndindex(Yt.shape):
        step = np.zeros_like(Yt)
        step[index] = h
        numeric[index] = (cost(Yt + step) - cost(Yt - step)) / (2 * h)
    np.testing.assert_allclose(numeric, grad, rtol=1e-5, atol=1e-7 * np.abs(grad).max())
    assert sum(obj.value_terms(Yt)) == pytest.approx(obj.value(Yt), rel=1e-12)


def test_a_step_whose_length_overflows_is_shortened_not_dropped():
    from nbembed._kernels.optimizer import momentum_gains_step

    Yt = np.zeros((2, 3))
    grad = np.array([[1.0, -2.0, 0.5], [0.5, 1.0, -3.0]])
    velocity, gains = np.zeros_like(Yt), np.ones_like(Yt)
    momentum_gains_step(Yt, grad, velocity, gains, 0.5, 1e300, 0.01, 5.0)
    np.testing.assert_allclose(np.linalg.norm(Yt, axis=0), 5.0)
    np.testing.assert_allclose(Yt / np.linalg.norm(Yt, axis=0),
                               -grad / np.linalg.norm(grad, axis=0))
