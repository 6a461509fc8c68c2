"""NeRV and SNeRV: kernels against NumPy, gradients, identities, the run protocol,
bad input, the retrieval measures and quality on real data."""

import math

import numpy as np
import pytest
from sklearn.datasets import load_digits, load_iris
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import MinMaxScaler

import reference as ref
import reference_nerv as rn
from conftest import load_shared
from nbembed import HSSNE, Annotations, _config
from nbembed._kernels import nerv as kernels
from nbembed._metrics_retrieval import retrieval_precision_recall, smoothed_precision, \
    smoothed_recall
from nbembed.affinity import conditional_probabilities
from nbembed.affinity.learning_metric import LearningMetric
from nbembed.methods.nerv import NeRV, SNeRV, auto_neighbors
from nbembed.methods.nerv_run import NeRVRun, SupervisedDistances
from nbembed.objectives.nerv import NeRVObjective
from nbembed.objectives import SNEObjective
from nbembed.metrics import knn_error

TRADEOFFS = [0.0, 0.1, 0.5, 1.0]


def _problem(rng, n=30, d=2, n_neighbors=5.0):
    X = rng.normal(size=(n, 4))
    P, beta = conditional_probabilities(X, n_neighbors, method="exact")
    return X, P, beta, rng.normal(size=(n, d))


def _run(P, beta, Y, tradeoff, optimizer="lbfgs"):
    return NeRVRun(NeRVObjective(P, beta, tradeoff), Y, n_iter=10, optimizer=optimizer)


def _cost_and_gradient(run, Y):
    Yt = np.ascontiguousarray(Y.T)
    grad = np.empty_like(Yt)
    return run.objective.value_and_gradient(Yt, grad)[0], grad.T


@pytest.fixture(scope="module")
def iris():
    return load_iris(return_X_y=True)


# -- kernels against the NumPy reference ------------------------------------------------
@pytest.mark.parametrize("tradeoff", TRADEOFFS)
@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("n_chunks", [1, 4])
def test_gradient_kernel_matches_reference(rng, tradeoff, d, n_chunks):
    _, P, beta, Y = _problem(rng, d=d)
    logP = kernels.floored_log(P)
    grad = np.empty((d, len(Y)))
    cross, kl = kernels.nerv_gradient(np.ascontiguousarray(Y.T), P, logP, beta, tradeoff,
                                      n_chunks, grad)
    recall, precision = rn.nerv_divergences(P, logP, Y, beta)
    positive = P[P > 0]
    assert np.sum(positive * np.log(positive)) + cross == pytest.approx(recall, rel=1e-12)
    assert kl == pytest.approx(precision, rel=1e-12)
    np.testing.assert_allclose(grad.T, rn.nerv_grad(P, logP, Y, beta, tradeoff),
                               rtol=1e-10, atol=1e-12)
    rows_cross, rows_kl = kernels.nerv_divergences(np.ascontiguousarray(Y.T), P, logP, beta)
    assert rows_cross.sum() == pytest.approx(cross, rel=1e-12)
    assert rows_kl.sum() == pytest.approx(kl, rel=1e-12)


@pytest.mark.parametrize("tradeoff", TRADEOFFS)
def test_gradient_by_finite_differences(rng, tradeoff):
    _, P, beta, Y = _problem(rng)
    run = _run(P, beta, Y, tradeoff)
    numeric = np.zeros_like(Y)
    eps = 1e-6
    for idx in np.ndindex(*Y.shape):
        up, down = Y.copy(), Y.copy()
        up[idx] += eps
        down[idx] -= eps
        numeric[idx] = (_cost_and_gradient(run, up)[0] - _cost_and_gradient(run, down)[0]) / (
            2 * eps)
    np.testing.assert_allclose(_cost_and_gradient(run, Y)[1], numeric, rtol=1e-5, atol=1e-7)
    assert run.cost == pytest.approx(rn.nerv_cost(P, kernels.floored_log(P), Y, beta,
                                                  tradeoff), rel=1e-12)


def test_far_apart_embedding_stays_finite(rng):
    """Rows are shifted by their nearest neighbour: no underflow of Z_i at any scale."""
    _, P, beta, Y = _problem(rng)
    for scale in (1e-8, 1e3, 1e6):
        cost, grad = _cost_and_gradient(_run(P, beta, Y, 0.3), scale * Y)
        assert np.isfinite(cost) and np.all(np.isfinite(grad))


# -- identities ------------------------------------------------------------------------------
def test_tradeoff_one_is_sne_with_the_same_bandwidths(rng):
    _, P, beta, Y = _problem(rng)
    run = _run(P, beta, Y, 1.0)
    assert run.cost == pytest.approx(rn.sne_cost_with_bandwidths(P, Y, beta), rel=1e-12)
    # With unit bandwidths it is nbembed's SNE, a separate kernel.
    P1 = rng.random((30, 30))
    np.fill_diagonal(P1, 0)
    P1 /= P1.sum(axis=1, keepdims=True)
    sne = SNEObjective(P1).value(np.ascontiguousarray(Y.T))
    assert _run(P1, np.ones(30), Y, 1.0).cost == pytest.approx(sne, rel=1e-12)


def test_tradeoff_zero_is_the_reverse_divergence(rng):
    _, P, beta, Y = _problem(rng)
    Q = rn.nerv_q(Y, beta)
    off = ~np.eye(30, dtype=bool)
    expected = np.sum(Q[off] * np.log(Q[off] / np.maximum(P[off], kernels.P_FLOOR)))
    assert _run(P, beta, Y, 0.0).cost == pytest.approx(expected, rel=1e-12)


def test_precomputed_distances_give_the_same_objective(rng):
    X = rng.normal(size=(40, 5))
    D = np.sqrt(ref.sq_distances(X))
    Y0 = rng.normal(size=(40, 2))
    a = NeRV(n_neighbors=8).prepare(X, init=Y0)
    b = NeRV(n_neighbors=8, metric="precomputed").prepare(D, init=Y0)
    np.testing.assert_allclose(a.P, b.P, rtol=1e-9, atol=1e-15)
    assert a.cost == pytest.approx(b.cost, rel=1e-9)


# -- optimizer ------------------------------------------------------------------------------
@pytest.mark.parametrize("optimizer", ["lbfgs", "cg"])
def test_every_step_lowers_the_cost(iris, optimizer):
    run = NeRV(tradeoff=0.3, optimizer=optimizer, random_state=0).prepare(iris[0])
    run.step(40)
    costs = [h["cost"] for h in run.history]
    assert np.all(np.diff(costs) <= 1e-12)
    assert costs[-1] < 0.8 * costs[0]
    assert np.mean([h["evaluations"] for h in run.history[1:]]) < 4


def test_optimizing_precision_vs_recall_moves_the_readouts(iris):
    """tradeoff 0 wins on smoothed precision, tradeoff 1 on smoothed recall."""
    X = iris[0]
    Y0 = NeRV(tradeoff=0.0, max_iter=150, random_state=0, n_neighbors=10).fit_transform(X)
    Y1 = NeRV(tradeoff=1.0, max_iter=150, random_state=0, n_neighbors=10).fit_transform(X)
    assert smoothed_precision(X, Y0, 10) > smoothed_precision(X, Y1, 10)
    assert smoothed_recall(X, Y1, 10) > smoothed_recall(X, Y0, 10)


def _row_entropy(P):
    return -np.sum(np.where(P > 0, P * np.log(np.where(P > 0, P, 1.0)), 0.0), axis=1)


def test_widening_stages_halve_and_end_at_the_final_neighbourhoods(iris):
    run = NeRV(n_neighbors=5, max_iter=90, random_state=0).prepare(iris[0])
    assert [round(k, 3) for k, _ in run.stages] == [37.25, 18.625, 9.312]
    assert run.anneal_iter == 30
    seen = {}
    for _ in range(40):
        seen.setdefault(run.effective_neighbors, _row_entropy(run.objective.P))
        run.step(1)
    assert list(seen) == [37.25, 18.625, 9.3125, 5]
    for k, entropy in seen.items():
        np.testing.assert_allclose(entropy, np.log(k), atol=1e-6)   # every row calibrated
    assert run.objective.P is run.P and run.sq_distances is None
    changes = [h["iteration"] for h in run.history if h["evaluations"] == 1
               and h["step_length"] == 0.0]
    assert {10, 20, 30} <= set(changes)     # each stage change is recorded


def test_widening_lowers_the_final_cost():
    """Broad neighbourhoods first avoid poor local minima (docs/nerv.md: 962 -> 920)."""
    X = load_digits().data[:800]
    costs = [NeRV(tradeoff=1.0, anneal_iter=a, random_state=0).fit(X).cost_ for a in (0, 100)]
    assert costs[1] < 0.97 * costs[0]


# -- the run protocol ----------------------------------------------------------------------
def test_set_params_continues_without_a_jump(iris):
    run = NeRV(tradeoff=0.8, random_state=0).prepare(iris[0])
    run.step(60)
    before = run.embedding
    n_records = len(run.history)
    run.set_params(tradeoff=0.2)
    np.testing.assert_array_equal(run.embedding, before)      # no restart
    assert run.tradeoff == 0.2 and run.get_params() == {"tradeoff": 0.2}
    assert run.history[-1]["tradeoff"] == 0.2 and run.history[-1]["iteration"] == 60
    assert len(run.history) == n_records + 1
    assert run.history[-1]["cost"] == pytest.approx(
        0.2 * run.history[-1]["recall_divergence"]
        + 0.8 * run.history[-1]["precision_divergence"])
    run.step(1)
    assert np.max(np.abs(run.embedding - before)) < 0.05 * np.ptp(before)   # no jump
    run.step(30)
    tradeoffs = [h["tradeoff"] for h in run.history]
    assert tradeoffs[:n_records] == [0.8] * n_records and set(tradeoffs[n_records:]) == {0.2}
    assert run.history[-1]["iteration"] == 91
    costs = [h["cost"] for h in run.history[n_records:]]
    assert np.all(np.diff(costs) <= 1e-12)


def test_step_returns_and_embedding_is_a_copy(iris):
    run = NeRV(random_state=0).prepare(iris[0])
    assert run.step(3) is run and run.iteration == 3
    emb = run.embedding
    emb[:] = np.nan
    assert np.all(np.isfinite(run.embedding))
    assert NeRVRun.live_parameters["tradeoff"].low == 0.0
    assert NeRVRun.live_parameters["tradeoff"].high == 1.0
    assert NeRV.get_live_parameters()["tradeoff"].label == "tradeoff"


def test_callbacks_stop_a_run(iris):
    seen = []
    model = NeRV(max_iter=50, random_state=0).fit(
        iris[0], callbacks=lambda run: seen.append(run.iteration) or run.iteration >= 7)
    assert seen == list(range(1, 8)) and model.n_iter_ == 7


def test_fit_stores_the_run(iris):
    model = NeRV(tradeoff=0.4, max_iter=30, random_state=0).fit(iris[0])
    assert model.embedding_.shape == (150, 2)
    assert model.cost_ == pytest.approx(0.4 * model.recall_divergence_
                                        + 0.6 * model.precision_divergence_)
    assert model.history_[-1]["iteration"] == 30
    np.testing.assert_allclose(model.affinities_.sum(axis=1), 1.0)
    # sigma_i gives every row the entropy log(n_neighbors) = log(20)
    P = model.affinities_
    entropy = -np.sum(np.where(P > 0, P * np.log(np.where(P > 0, P, 1)), 0), axis=1)
    np.testing.assert_allclose(entropy, np.log(20), atol=1e-6)
    assert np.all(model.bandwidths_ > 0)


def test_same_seed_same_embedding(iris):
    a = NeRV(max_iter=20, random_state=3, init="random").fit_transform(iris[0])
    b = NeRV(max_iter=20, random_state=3, init="random").fit_transform(iris[0])
    np.testing.assert_array_equal(a, b)


def test_a_given_learning_metric_without_a_seed_takes_the_estimators(iris):
    """random_state makes SNeRV reproducible also with a LearningMetric of one's own
    (its k-means start would otherwise draw from the global generator)."""
    from nbembed import LearningMetric, SNeRV
    X, y = iris
    partial = np.where(np.arange(len(y)) % 3 == 0, y, -1)
    metric = LearningMetric(n_components=2, sigma=1.0, cv=2, max_iter=20)
    runs = [SNeRV(learning_metric=metric, max_iter=10, random_state=3).fit(X, partial)
            for _ in range(2)]
    assert metric.random_state is None  # the estimator's parameter is left alone
    np.testing.assert_array_equal(runs[0].embedding_, runs[1].embedding_)


# -- bad input -------------------------------------------------------------------------------
@pytest.mark.parametrize("tradeoff", [-0.1, 1.5, np.nan])
def test_tradeoff_outside_the_unit_interval(iris, tradeoff):
    with pytest.raises(ValueError, match="tradeoff"):
        NeRV(tradeoff=tradeoff).fit(iris[0])


def test_set_params_rejects_bad_values_and_changes_nothing(iris):
    run = NeRV(tradeoff=0.5, random_state=0).prepare(iris[0])
    with pytest.raises(ValueError, match=r"tradeoff must be in \[0, 1\]"):
        run.set_params(tradeoff=2.0)
    assert run.tradeoff == 0.5
    with pytest.raises(ValueError, match="not a live parameter"):
        run.set_params(n_neighbors=5)


@pytest.mark.parametrize("n_neighbors", [10, 11, 50])
def test_too_many_neighbors(rng, n_neighbors):
    with pytest.raises(ValueError, match="n_neighbors .* too large for n_samples = 11"):
        NeRV(n_neighbors=n_neighbors).fit(rng.normal(size=(11, 3)))


def test_unknown_optimizer(iris):
    with pytest.raises(ValueError, match="optimizer must be one of 'lbfgs', 'cg'"):
        NeRV(optimizer="adam").fit(iris[0])


def test_snerv_needs_two_classes(iris):
    X, y = iris
    with pytest.raises(ValueError, match="single class"):
        SNeRV().fit(X, np.where(y == 0, 0, -1))
    with pytest.raises(ValueError, match="requires y"):
        SNeRV().fit(X)
    with pytest.raises(ValueError, match="No labelled points"):
        SNeRV().fit(X, np.full(150, -1))


# -- SNeRV -----------------------------------------------------------------------------------
def _small_metric():
    return LearningMetric(n_components=6, sigma=0.5, random_state=0)


def test_snerv_embeds_labelled_and_unlabelled_points(iris):
    X, y = iris
    partial = np.where(np.arange(150) % 3 == 0, y, -1)
    model = SNeRV(learning_metric=_small_metric(), max_iter=100, random_state=0).fit(X, partial)
    assert model.embedding_.shape == (150, 2) and np.all(np.isfinite(model.embedding_))
    assert model.learning_metric_.n_components_ == 6
    assert model.n_neighbors_ == pytest.approx(20.0)   # the paper's 0.5 n / K = 12.5, raised
    # "auto" keeps the paper's distances when the metric was not validated (K and
    # sigma given).
    assert model.euclidean_weight_ == 0.0
    # Unlabelled points land among their class: 5-NN error from the labelled ones.
    err = knn_error(model.embedding_, y, k=5, train=partial >= 0, test=partial < 0)
    assert err < 0.1


def test_auto_neighbors_is_the_papers_rule_with_a_floor_and_a_cap():
    assert auto_neighbors(1500, 20) == pytest.approx(37.5)     # 0.5 n / K
    assert auto_neighbors(1500, 80) == pytest.approx(20.0)     # 9.4 raised to the floor
    assert auto_neighbors(31, 2) == pytest.approx(10.0)        # (n - 1) / 3 caps both
    assert auto_neighbors(4, 1) < 3


def test_snerv_set_annotations_refits_the_metric(iris):
    X, y = iris
    run = SNeRV(learning_metric=_small_metric(), random_state=0).prepare(
        X, np.where(np.arange(150) % 5 == 0, y, -1))
    run.step(20)
    before, old_metric = run.embedding, run.learning_metric
    ann = Annotations(150)
    ann.set_labels(np.flatnonzero(y == 0), 0)
    ann.set_soft_labels(np.flatnonzero(y > 0), [0.0, 0.5, 0.5], confidence=0.5)
    run.set_annotations(ann)
    assert run.learning_metric is not old_metric
    assert run.learning_metric.classes_.tolist() == [0, 1, 2]
    np.testing.assert_array_equal(run.embedding, before)
    run.step(5)
    assert np.all(np.isfinite(run.embedding)) and run.iteration == 25
    assert SNeRV.annotation_kinds == ("labels", "soft_labels")


def test_supervised_distances_without_euclidean_weight_are_the_metrics(iris):
    X, y = iris
    metric = _small_metric().fit(X, y)
    distances, D = SupervisedDistances.fit_distances(metric, X, 0.0)
    np.testing.assert_array_equal(D, metric.pairwise_distances(X))
    np.testing.assert_array_equal(distances.pairwise_distances(X[:7], X),
                                  metric.pairwise_distances(X[:7], X))


def test_supervised_distances_add_the_scaled_euclidean_term(iris):
    X, y = iris
    metric = _small_metric().fit(X, y)
    distances, D = SupervisedDistances.fit_distances(metric, X, 0.5)
    L2 = np.square(metric.pairwise_distances(X))
    E2 = np.square(X[:, None, :] - X[None, :, :]).sum(axis=2)
    upper = np.triu_indices(150, 1)
    scale = np.median(L2[upper]) / np.median(E2[upper])
    assert distances.scale == pytest.approx(scale)
    np.testing.assert_allclose(np.square(D), L2 + 0.5 * scale * E2, rtol=1e-9, atol=1e-9)
    # New points (here old ones again) get the same distances.
    np.testing.assert_allclose(distances.pairwise_distances(X[:9], X), D[:9], rtol=1e-9,
                               atol=1e-9)


def test_euclidean_weight_separates_points_the_metric_merges(rng):
    """Only the first feature decides the class: far apart along the second, two
    points of one class are nearly at distance zero in the learning metric."""
    X = rng.uniform(-3, 3, size=(200, 2))
    y = (X[:, 0] > 0).astype(int)
    metric = LearningMetric(n_components=4, sigma=1.0, random_state=0).fit(X, y)
    pair = np.array([[2.5, -2.5], [2.5, 2.5]])
    across = np.array([[-0.5, 0.0], [0.5, 0.0]])
    plain = SupervisedDistances.fit_distances(metric, X, 0.0)[0]
    blended = SupervisedDistances.fit_distances(metric, X, 0.3)[0]
    assert plain.pairwise_distances(pair[:1], pair[1:])[0, 0] < \
        0.1 * plain.pairwise_distances(across[:1], across[1:])[0, 0]
    # With the Euclidean term the pair is apart, but the border still dominates:
    # the pair is 5 apart in the input, the points across the border 1.
    far = blended.pairwise_distances(pair[:1], pair[1:])[0, 0]
    near = blended.pairwise_distances(across[:1], across[1:])[0, 0]
    assert 0.25 * near < far < near


def test_snerv_euclidean_weight_reaches_the_run_new_points_and_new_labels(iris):
    X, y = iris
    partial = np.where(np.arange(150) % 3 == 0, y, -1)
    model = SNeRV(learning_metric=_small_metric(), euclidean_weight=0.4, max_iter=40,
                  random_state=0)
    run = model.prepare(X, partial)
    assert run.euclidean_weight == 0.4 and run.distances.scale > 0
    run.run()
    model.fit(X, partial)
    assert model.euclidean_weight_ == 0.4
    # A training point placed again as a new point lands near its embedding.
    extent = np.ptp(model.embedding_, axis=0).max()
    assert np.abs(model.transform(X[:5]) - model.embedding_[:5]).max() < 0.1 * extent
    run.set_annotations(y=y)
    assert run.euclidean_weight == 0.4 and run.learning_metric.classes_.tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="euclidean_weight"):
        SNeRV(euclidean_weight=-1.0).fit(X, partial)


def test_learning_metric_records_held_out_errors_of_itself_and_of_input_neighbours(iris):
    from sklearn.neighbors import KNeighborsClassifier

    X, y = iris
    folds = [(np.flatnonzero(np.arange(150) % 3 != f), np.flatnonzero(np.arange(150) % 3 == f))
             for f in range(3)]
    metric = LearningMetric(n_components=[3, 6], sigma=[1.0, 0.5], cv=folds,
                            random_state=0).fit(X, y)
    knn = np.mean([np.mean(KNeighborsClassifier(5).fit(X[a], y[a]).predict(X[b]) != y[b])
                   for a, b in folds])
    assert metric.knn_validation_error_ == pytest.approx(knn)
    chosen = max(metric.validation_scores_, key=lambda r: r["validation_log_likelihood"])
    assert metric.validation_error_ == chosen["validation_error"]
    assert all(0.0 <= r["validation_error"] < 0.2 for r in metric.validation_scores_)
    metric_missed, knn_missed = metric.validation_disagreements_
    assert metric_missed >= 0 and knn_missed >= 0
    assert metric_missed - knn_missed == pytest.approx(
        150 * (metric.validation_error_ - metric.knn_validation_error_))  # folds of 50
    fixed = LearningMetric(n_components=3, sigma=0.5, random_state=0).fit(X, y)
    assert fixed.validation_error_ is None and fixed.knn_validation_error_ is None
    assert fixed.validation_disagreements_ is None


class _ValidatedMetric:
    def __init__(self, only_metric_missed=None, only_neighbours_missed=None):
        self.validation_disagreements_ = (
            None if only_metric_missed is None else (only_metric_missed, only_neighbours_missed))


def test_auto_euclidean_weight_falls_back_to_the_input_only_when_the_metric_clearly_loses():
    from nbembed.methods.nerv_run import choose_euclidean_weight

    assert choose_euclidean_weight("auto", _ValidatedMetric(3, 10)) == 0.0    # the metric wins
    assert choose_euclidean_weight("auto", _ValidatedMetric(5, 5)) == 0.0     # a tie
    assert choose_euclidean_weight("auto", _ValidatedMetric(3, 0)) == 0.0     # 3 < 2 sqrt(3)
    assert math.isinf(choose_euclidean_weight("auto", _ValidatedMetric(4, 0)))   # 4 >= 2 sqrt(4)
    assert choose_euclidean_weight("auto", _ValidatedMetric(11, 4)) == 0.0    # 7 < 2 sqrt(15)
    assert math.isinf(choose_euclidean_weight("auto", _ValidatedMetric(13, 4)))
    assert choose_euclidean_weight("auto", _ValidatedMetric(0, 0)) == 0.0
    assert choose_euclidean_weight("auto", _ValidatedMetric()) == 0.0         # not validated
    assert choose_euclidean_weight(0.3, _ValidatedMetric(90, 0)) == 0.3


def _interleaved_spirals(rng, n_per=90):
    """Two spirals wound into each other: nearest neighbours classify them, a few
    isotropic Gaussians cannot."""
    t = np.sqrt(rng.uniform(0.05, 1.0, n_per)) * 3.0 * np.pi
    arms = [np.column_stack([t * np.cos(t + shift), t * np.sin(t + shift)])
            for shift in (0.0, np.pi)]
    X = np.vstack(arms) + 0.1 * rng.normal(size=(2 * n_per, 2))
    return X, np.repeat([0, 1], n_per)


def test_snerv_uses_the_input_distances_when_its_metric_classifies_worse(rng):
    X, y = _interleaved_spirals(rng)
    partial = np.where(np.arange(len(y)) % 3 == 0, y, -1)
    metric = LearningMetric(n_components=[1, 2], random_state=0)
    model = SNeRV(learning_metric=metric, n_neighbors=15, max_iter=30, random_state=0)
    model.fit(X, partial)
    only_metric_missed, only_neighbours_missed = model.learning_metric_.validation_disagreements_
    assert only_metric_missed - only_neighbours_missed >= 2 * math.sqrt(
        only_metric_missed + only_neighbours_missed)
    assert math.isinf(model.euclidean_weight_)
    # The map is NeRV's on the input: the same neighbourhoods.
    nerv = NeRV(n_neighbors=15, max_iter=30, random_state=0).fit(X)
    np.testing.assert_allclose(model.affinities_, nerv.affinities_, rtol=1e-6, atol=1e-12)
    # New points are measured in the input as well.
    D = model.prepare(X, partial).distances.pairwise_distances(X[:4], X)
    np.testing.assert_allclose(D, np.sqrt(np.square(X[:4, None] - X[None]).sum(axis=2)),
                               rtol=1e-9, atol=1e-9)
    # Where the metric wins (classes decided by one feature), "auto" keeps it.
    X2 = rng.uniform(-3, 3, size=(120, 2))
    y2 = (X2[:, 0] > 0).astype(int)
    kept = SNeRV(learning_metric=LearningMetric(n_components=[2, 4], random_state=0),
                 n_neighbors=15, max_iter=5, random_state=0).fit(X2, y2)
    assert kept.euclidean_weight_ == 0.0


def test_snerv_decides_the_euclidean_weight_again_for_new_labels(rng):
    X, y = _interleaved_spirals(rng)
    run = SNeRV(learning_metric=LearningMetric(n_components=[1, 2], random_state=0),
                n_neighbors=10, random_state=0).prepare(X, np.where(np.arange(180) % 3, -1, y))
    assert math.isinf(run.euclidean_weight) and run.euclidean_setting == "auto"
    X2 = rng.uniform(-3, 3, size=(180, 2))
    run.X = X2                       # the same run, labels that the metric classifies well
    run.set_annotations(y=(X2[:, 0] > 0).astype(int))
    assert run.euclidean_weight == 0.0
    with pytest.raises(ValueError, match="euclidean_weight"):
        SNeRV(euclidean_weight="sometimes").fit(X, y)


def test_learning_metric_distances_check_the_array_they_allocate(iris, monkeypatch):
    X, y = iris
    metric = _small_metric().fit(X, y)
    # 150 points against 40: the distances (and inner products) are 150 x 40.
    monkeypatch.setattr(_config, "MAX_DENSE_BYTES", 8 * 150 * 40)
    assert metric.pairwise_distances(X, X[:40]).shape == (150, 40)
    assert metric.pairwise_distances(X[:40], X).shape == (40, 150)
    monkeypatch.setattr(_config, "MAX_DENSE_BYTES", 8 * 150 * 40 - 1)
    with pytest.raises(MemoryError, match="between 150 and 40 points would need a 150 x 40 "
                                          "array.*a block of rows of X at a time"):
        metric.pairwise_distances(X, X[:40])


def test_snerv_places_batches_of_any_size_under_the_dense_limit(iris, monkeypatch):
    X, y = iris
    model = SNeRV(learning_metric=_small_metric(), max_iter=10, anneal_iter=0,
                  random_state=0).fit(X[::3], y[::3])
    new = np.repeat(X, 2, axis=0) + np.random.default_rng(0).normal(0, 0.05, (300, 4))
    expected = model.transform(new)
    # The 50 x 50 training distances fit, the 300 x 300 a batch would take by the
    # larger side do not; the new points' distances go a block of rows at a time.
    monkeypatch.setattr(_config, "MAX_DENSE_BYTES", 8 * 50 * 60)
    placed = model.transform(new)
    extent = np.ptp(model.embedding_, axis=0).max()
    np.testing.assert_allclose(placed, expected, rtol=0, atol=1e-9 * extent)


# -- retrieval measures -------------------------------------------------------------------
def test_retrieval_precision_recall_matches_reference(rng):
    X = rng.normal(size=(40, 5))
    Y = X[:, :2] + 0.3 * rng.normal(size=(40, 2))
    precision, recall = retrieval_precision_recall(X, Y, n_relevant=6, n_retrieved=[1, 3, 6, 12])
    DX, DY = np.sqrt(ref.sq_distances(X)), np.sqrt(ref.sq_distances(Y))
    for k, r in enumerate([1, 3, 6, 12]):
        p, rec = rn.retrieval_precision_recall(DX, DY, 6, r)
        assert precision[k] == pytest.approx(p) and recall[k] == pytest.approx(rec)
    assert precision[2] == pytest.approx(recall[2])
    same = retrieval_precision_recall(DX, Y, n_relevant=6, n_retrieved=[1, 3, 6, 12],
                                      metric="precomputed")
    np.testing.assert_allclose(same, (precision, recall))


def test_smoothed_measures_are_the_nerv_divergences(iris):
    X = iris[0]
    model = NeRV(tradeoff=0.3, n_neighbors=10, max_iter=20, random_state=0).fit(X)
    Y = model.embedding_
    assert smoothed_recall(X, Y, 10) == pytest.approx(-model.recall_divergence_ / 150)
    assert smoothed_precision(X, Y, 10) == pytest.approx(-model.precision_divergence_ / 150)


def test_retrieval_measures_reject_bad_sizes(rng):
    X = rng.normal(size=(10, 3))
    with pytest.raises(ValueError, match="n_relevant"):
        retrieval_precision_recall(X, X, n_relevant=10)
    with pytest.raises(ValueError, match="n_retrieved"):
        retrieval_precision_recall(X, X, n_relevant=3, n_retrieved=[0, 2])
    with pytest.raises(ValueError, match="same points"):
        smoothed_precision(X, X[:5], 3)


def _cv_errors(X, y, folds, metric, n_iter):
    """5-NN errors of test points embedded without labels, per method, over ``folds``."""
    errors = {}
    # The unsupervised maps see no labels, so one fit serves every fold.
    nerv = NeRV(tradeoff=0.1, max_iter=n_iter, random_state=0).fit_transform(X)
    tsne = HSSNE(alpha=1.0, random_state=0).fit_transform(X)
    for train, test in folds:
        partial = y.copy()
        partial[test] = -1
        run = SNeRV(tradeoff=0.1, learning_metric=metric, max_iter=n_iter,
                    random_state=0).prepare(X, partial)
        run.run()
        errors.setdefault("SNeRV 0.1", []).append(
            knn_error(run.embedding, y, k=5, train=train, test=test))
        run.set_params(tradeoff=0.3)
        run.step(n_iter // 2)
        errors.setdefault("SNeRV 0.3", []).append(
            knn_error(run.embedding, y, k=5, train=train, test=test))
        errors.setdefault("NeRV 0.1", []).append(
            knn_error(nerv, y, k=5, train=train, test=test))
        errors.setdefault("t-SNE", []).append(knn_error(tsne, y, k=5, train=train, test=test))
    return {name: float(np.mean(v)) for name, v in errors.items()}


@pytest.mark.slow
def test_snerv_beats_nerv_and_tsne_on_vehicle():
    data = load_shared("vehicle")
    X = MinMaxScaler((-1, 1)).fit_transform(data["X"])
    y = data["y"]
    folds = list(StratifiedKFold(10, shuffle=True, random_state=0).split(X, y))[:2]
    errors = _cv_errors(X, y, folds, LearningMetric(n_components=16, cv=2, random_state=0),
                        n_iter=200)
    print("vehicle 5-NN test error, 2 of 10 folds:", errors)
    # Measured: SNeRV 0.1 0.22, SNeRV 0.3 0.22, NeRV 0.1 0.32, t-SNE 0.38.
    assert errors["SNeRV 0.1"] < errors["NeRV 0.1"] - 0.03
    assert errors["SNeRV 0.1"] < errors["t-SNE"] - 0.03
    assert errors["SNeRV 0.3"] < errors["t-SNE"]


@pytest.mark.slow
def test_snerv_beats_nerv_and_ties_tsne_on_usps():
    data = load_shared("usps_full")
    idx = np.random.default_rng(0).choice(len(data["y"]), 1500, replace=False)
    X, y = data["X"][idx], data["y"][idx]
    folds = list(StratifiedKFold(10, shuffle=True, random_state=0).split(X, y))[:3]
    errors = _cv_errors(X, y, folds, LearningMetric(random_state=0), n_iter=300)
    print("USPS (1500) 5-NN test error, 3 of 10 folds:", errors)
    # Over all 10 folds (benchmarks/snerv_reproduce.py, docs/nerv.md): SNeRV 0.067 / 0.065
    # at tradeoff 0.1 / 0.3, NeRV 0.106 / 0.129, t-SNE 0.073. SNeRV beats NeRV (paired p
    # 0.0015 and 0.0002) but only ties t-SNE (p 0.19, ahead on 6 folds of 10): the metric
    # classifies held-out digits hardly better than 5-NN on a t-SNE map. Per fold the
    # errors spread by about 0.016, so the tie allows 0.02 on a mean of three folds.
    assert errors["SNeRV 0.1"] < errors["NeRV 0.1"]
    assert errors["SNeRV 0.3"] < errors["NeRV 0.1"]
    assert errors["SNeRV 0.1"] <= errors["t-SNE"] + 0.02
    assert errors["SNeRV 0.3"] <= errors["t-SNE"] + 0.02
