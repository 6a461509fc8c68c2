"""transform: new points placed against a fitted map (HSSNE, SNE, NeRV, SNeRV, Mbed)."""

import math
import warnings

import numba
import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.exceptions import NotFittedError
from sklearn.metrics import pairwise_distances
from sklearn.neighbors import KNeighborsClassifier

import reference_placement as ref
from nbembed import HSSNE, SNE, Mbed, NeRV, SNeRV
from nbembed._kernels.nerv import P_FLOOR
from nbembed.affinity.learning_metric import LearningMetric
from nbembed.methods import _new_points as new_points
from nbembed.methods._new_points import place
from nbembed.objectives.placement import PlacementObjective
from test_gradients import finite_difference

LOG_FLOOR = math.log(P_FLOOR)


def _problem(rng, m=5, n=30, k=8, d=2):
    R = rng.normal(size=(n, d)) * 2.0
    Y = rng.normal(size=(m, d)) * 2.0
    indices = np.array([rng.choice(n, size=k, replace=False) for _ in range(m)])
    P = rng.random((m, k)) + 0.05
    P /= P.sum(axis=1, keepdims=True)
    precision = rng.uniform(0.3, 2.0, size=m)
    return R, Y, indices, P, precision


# -- the kernel and its gradient -----------------------------------------------------------
@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0, 2.0, 1.5])
@pytest.mark.parametrize("tradeoff", [1.0, 0.3, 0.0])
@pytest.mark.parametrize("k", [8, 30], ids=["some neighbours", "every point a neighbour"])
def test_kernel_matches_the_numpy_reference(rng, alpha, tradeoff, k):
    R, Y, indices, P, precision = _problem(rng, k=k)
    objective = PlacementObjective(R, indices, P, precision, alpha=alpha, tradeoff=tradeoff)
    Yt = np.ascontiguousarray(Y.T)
    grad = np.empty_like(Yt)
    costs, scales = objective.point_costs(Yt, grad)
    args = (R, Y, indices, P, precision, alpha, tradeoff, LOG_FLOOR)
    np.testing.assert_allclose(costs, ref.placement_costs(*args), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grad.T, ref.placement_gradient(*args), rtol=1e-9, atol=1e-12)
    tau = ((Y[:, None, :] - R[None, :, :]) ** 2).sum(-1)
    G = precision[:, None] / (1 + alpha * precision[:, None] * tau)
    np.testing.assert_allclose(scales, (ref.dense_rows(indices, P, len(R)) * G).sum(axis=1),
                               rtol=1e-12)


@pytest.mark.parametrize("alpha", [0.0, 1.0, 1.5])
@pytest.mark.parametrize("tradeoff", [1.0, 0.4])
@pytest.mark.parametrize("k", [8, 30], ids=["some neighbours", "every point a neighbour"])
def test_gradient_by_finite_differences(rng, alpha, tradeoff, k):
    R, Y, indices, P, precision = _problem(rng, k=k)
    objective = PlacementObjective(R, indices, P, precision, alpha=alpha, tradeoff=tradeoff)

    def cost(Z):
        return objective.value(np.ascontiguousarray(Z.T))

    grad = np.empty((2, len(Y)))
    objective.value_and_gradient(np.ascontiguousarray(Y.T), grad)
    np.testing.assert_allclose(grad.T, finite_difference(cost, Y), rtol=1e-5, atol=1e-8)


def test_far_point_under_the_gaussian_kernel_stays_finite(rng):
    R, Y, indices, P, precision = _problem(rng)
    Y[0] = [1e4, -1e4]
    objective = PlacementObjective(R, indices, P, precision, alpha=0.0)
    grad = np.empty((2, len(Y)))
    costs, _ = objective.point_costs(np.ascontiguousarray(Y.T), grad)
    assert np.all(np.isfinite(costs)) and np.all(np.isfinite(grad))
    # KL written with the log-sum-exp by hand: the kernel must not lose the far point.
    tau = ((Y[0] - R) ** 2).sum(-1) * precision[0]
    log_q = -(tau - tau.min()) - np.log(np.exp(-(tau - tau.min())).sum())
    expected = np.sum(P[0] * (np.log(P[0]) - log_q[indices[0]]))
    assert costs[0] == pytest.approx(expected, rel=1e-9)


def test_placement_lowers_every_point_cost_and_ignores_the_others(rng):
    R, Y, indices, P, precision = _problem(rng, m=6)
    objective = PlacementObjective(R, indices, P, alpha=1.0)
    start = objective.start()
    before, _ = objective.point_costs(start.copy(), np.empty_like(start))
    placed = place(objective, start.copy())
    after, _ = objective.point_costs(placed, np.empty_like(placed))
    assert np.all(after <= before + 1e-12) and np.any(after < before - 1e-3)
    # The same points placed two at a time land bit for bit at the same places.
    for pair in ([0, 1], [2, 5]):
        alone = PlacementObjective(R, indices[pair], P[pair], alpha=1.0)
        assert np.array_equal(place(alone, alone.start()), placed[:, pair])


# -- estimators on digits ----------------------------------------------------------------------
def _shuffled_digits():
    X, y = load_digits(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(X))
    return X[order], y[order]


@pytest.fixture(scope="module")
def digits_split():
    X, y = _shuffled_digits()
    return X[:400], y[:400], X[400:500], y[400:500]


@pytest.fixture(scope="module")
def fitted_hssne(digits_split):
    X, _, _, _ = digits_split
    return HSSNE(perplexity=20, max_iter=400, random_state=0).fit(X)


def _knn_accuracy(Y_train, y_train, Y, y):
    return KNeighborsClassifier(n_neighbors=10).fit(Y_train, y_train).score(Y, y)


def _spread(Y):
    return float(np.sqrt(np.var(Y, axis=0).sum()))


def test_training_points_land_near_their_fitted_positions(fitted_hssne, digits_split):
    X, y, _, _ = digits_split
    Y = fitted_hssne.transform(X)
    distance = np.linalg.norm(Y - fitted_hssne.embedding_, axis=1)
    assert np.median(distance) < 0.05 * _spread(fitted_hssne.embedding_)
    # Classified by the map, a training point placed anew gets the class its
    # fitted position gets (0.99 measured; the fitted positions themselves
    # score only 0.955 against the labels, so that is no ceiling to test near).
    classifier = KNeighborsClassifier(n_neighbors=10).fit(fitted_hssne.embedding_, y)
    agreement = np.mean(classifier.predict(Y) == classifier.predict(fitted_hssne.embedding_))
    assert agreement > 0.95


def test_new_points_land_among_their_class(fitted_hssne, digits_split):
    X, y, _, _ = digits_split
    # Every digit not fitted (1397), not only the 100 of digits_split: over 8 splits and
    # seeds the accuracy was 0.936 to 0.960 (sd 0.008) and the difference from the input
    # space -0.012 to 0.007 (sd 0.006); on 100 new digits that difference spread by 0.018.
    X_new, y_new = [a[400:] for a in _shuffled_digits()]
    Y_new = fitted_hssne.transform(X_new)
    assert Y_new.shape == (len(X_new), 2)
    accuracy = _knn_accuracy(fitted_hssne.embedding_, y, Y_new, y_new)
    assert accuracy > 0.9
    # About as well as the same classifier in the input space.
    assert accuracy >= _knn_accuracy(X, y, X_new, y_new) - 0.03


def test_transform_is_per_point_and_independent_of_threads(fitted_hssne, digits_split,
                                                         monkeypatch):
    _, _, X_new, _ = digits_split
    Y = fitted_hssne.transform(X_new)
    assert np.array_equal(fitted_hssne.transform(X_new[::3]), Y[::3])
    # Small blocks of neighbour search and placement change nothing.
    monkeypatch.setattr(new_points, "NEIGHBOUR_BLOCK", 1000)
    assert np.array_equal(fitted_hssne.transform(X_new), Y)
    monkeypatch.undo()
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        single = fitted_hssne.transform(X_new)
    finally:
        numba.set_num_threads(threads)
    assert np.array_equal(single, Y)


def test_precomputed_dissimilarities(digits_split):
    X, y, X_new, y_new = digits_split
    model = SNE(perplexity=15, metric="precomputed", max_iter=200, random_state=0)
    model.fit(pairwise_distances(X))
    Y_new = model.transform(pairwise_distances(X_new, X))
    assert _knn_accuracy(model.embedding_, y, Y_new, y_new) > 0.8
    with pytest.raises(ValueError, match="dissimilarities to the training points"):
        model.transform(X_new)


@pytest.mark.parametrize("make, near", [
    (lambda: SNE(perplexity=15, max_iter=200, random_state=0), 0.1),
    (lambda: NeRV(n_neighbors=15, max_iter=40, anneal_iter=10, random_state=0), 0.1),
    (lambda: SNeRV(max_iter=40, anneal_iter=10, random_state=0,
                   learning_metric=LearningMetric(n_components=20, sigma=16.0, max_iter=50,
                                                  random_state=0)), 0.1),
    (lambda: Mbed(n_classes=10, max_iter=120, random_state=0), 0.1),
    # Only the SNE part places a point; the fitted position also answered the boundary
    # terms and the other points' sparse neighbourhoods. It moves (about half the spread
    # here) while the neighbourhood, and so the class, stays.
    (lambda: Mbed(n_classes=10, affinity="knn", n_neighbors=40, max_iter=120,
                  random_state=0), None),
], ids=["SNE", "NeRV", "SNeRV", "Mbed", "Mbed-knn"])
def test_every_method_places_training_and_new_points(make, near, digits_split):
    X, y, X_new, y_new = digits_split
    model = make().fit(X, y if isinstance(make(), SNeRV) else None)
    Y = model.transform(X)
    spread = _spread(model.embedding_)
    # The fit's positions also answer the other points' neighbourhoods (p_{i|j}), which a
    # point placed alone does not feel: near, within a tenth of the map's spread.
    if near is not None:
        assert np.median(np.linalg.norm(Y - model.embedding_, axis=1)) < near * spread
    # Over 6 splits and seeds, training points placed anew scored 0.905 to 0.94 with SNE
    # and NeRV (means 0.921 and 0.928, sd 0.013), 0.93 to 1.0 with the others; 0.88 is 3
    # sd below the lowest mean. New points: 0.86 to 0.98 (lowest mean 0.90, Mbed-knn).
    assert _knn_accuracy(model.embedding_, y, Y, y) > 0.88
    assert _knn_accuracy(model.embedding_, y, model.transform(X_new), y_new) > 0.8


def test_mbed_predicts_memberships_of_new_points(digits_split):
    X, _, X_new, _ = digits_split
    model = Mbed(n_classes=3, max_iter=100, random_state=0).fit(X)
    proba = model.predict_proba(X_new)
    assert proba.shape == (len(X_new), 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.array_equal(model.predict(X_new), proba.argmax(axis=1))
    np.testing.assert_allclose(model.memberships_at(model.embedding_), model.membership_,
                               atol=1e-12)
    # Training points placed again mostly keep the cluster they were given.
    assert np.mean(model.predict(X) == model.labels_) > 0.9


# -- errors ---------------------------------------------------------------------------------------
def test_bad_input_is_refused_clearly(fitted_hssne, digits_split):
    _, _, X_new, _ = digits_split
    with pytest.raises(ValueError, match="X has 10 features, but HSSNE is expecting 64"):
        fitted_hssne.transform(X_new[:, :10])
    bad = X_new[:3].copy()
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        fitted_hssne.transform(bad)
    with pytest.raises(ValueError, match="2-D"):
        fitted_hssne.transform(X_new[0])
    with pytest.raises(NotFittedError):
        HSSNE().transform(X_new)
    with pytest.raises(NotFittedError):
        Mbed().predict(X_new)


def test_placement_perplexity_defaults_to_five_and_can_be_chosen(fitted_hssne, digits_split):
    _, _, X_new, _ = digits_split
    default = fitted_hssne._new_points
    assert default.perplexity == new_points.NEW_POINT_PERPLEXITY == 5.0
    assert default.n_neighbors == 15
    Y = fitted_hssne.transform(X_new)
    assert np.array_equal(fitted_hssne.transform(X_new, perplexity=5), Y)
    wide = fitted_hssne.transform(X_new, perplexity=20)
    assert not np.allclose(wide, Y)
    # The fitted perplexity, when it is below 5, stays.
    small = HSSNE(perplexity=3, max_iter=50, random_state=0).fit(digits_split[0][:100])
    assert small._new_points.perplexity == 3.0
    # NeRV's neighbourhoods span every training point whatever the perplexity.
    nerv = NeRV(n_neighbors=15, max_iter=5, anneal_iter=2, random_state=0).fit(
        digits_split[0][:100])
    assert nerv._new_points.with_perplexity(4).n_neighbors == 100


def test_bad_placement_perplexity_is_refused(fitted_hssne, digits_split):
    X_new = digits_split[2][:5]
    with pytest.raises(ValueError, match=r"perplexity must be in \[1, inf\)"):
        fitted_hssne.transform(X_new, perplexity=0.5)
    with pytest.raises(ValueError, match="too large for the 400 training points"):
        fitted_hssne.transform(X_new, perplexity=400)
    with pytest.raises(TypeError, match="perplexity must be a real number"):
        fitted_hssne.transform(X_new, perplexity="5")
    mbed = Mbed(n_classes=3, max_iter=40, random_state=0).fit(digits_split[0][:100])
    with pytest.raises(ValueError, match="fixed width sigma"):
        mbed.transform(X_new, perplexity=5)


def test_precomputed_affinities_cannot_place_new_points(digits_split):
    X = digits_split[0][:60]
    A = np.exp(-pairwise_distances(X) ** 2 / 2000.0)
    model = HSSNE(affinity="precomputed", perplexity=5, max_iter=30, random_state=0).fit(A)
    with pytest.raises(ValueError, match="affinity='precomputed'"):
        model.transform(A[:3])


def test_cross_squared_distances_match_numpy():
    from nbembed._kernels.rows import cross_squared_distances

    rng = np.random.default_rng(5)
    X, R = rng.normal(size=(7, 13)), rng.normal(size=(31, 13))
    out = np.empty((7, 31))
    cross_squared_distances(X, np.ascontiguousarray(R.T), out)
    expected = ((X[:, None, :] - R[None, :, :]) ** 2).sum(axis=2)
    np.testing.assert_allclose(out, expected, rtol=1e-13)


def test_a_point_lands_on_the_same_bits_alone_or_in_a_batch():
    """Real-valued data: distances from a matrix product would round differently
    with the batch's size, and a chaotic map amplifies that into another place."""
    rng = np.random.RandomState(0)
    X = 3 * rng.uniform(size=(20, 3))
    model = HSSNE(perplexity=3.0, max_iter=60, early_exaggeration_iter=20, n_components=1,
                  repulsion="barnes-hut", random_state=0).fit(X, X[:, 0].astype(int))
    together = model.transform(X)
    alone = np.vstack([model.transform(X[i:i + 1]) for i in range(len(X))])
    assert np.array_equal(alone, together)


# -- points far from the map and from the data ----------------------------------------------
def test_placement_never_ends_above_its_start(rng):
    """Between clusters far apart in the map a point's attraction is weak and a step
    overshoots; each point keeps the lowest cost on its path."""
    R = np.vstack([rng.normal(-8, 1, (20, 2)), rng.normal(8, 1, (20, 2)),
                   rng.normal([0, 12], 1, (20, 2))])
    m = 100
    indices = np.array([np.r_[rng.choice(20, 3, replace=False),
                              20 + rng.choice(20, 3, replace=False),
                              40 + rng.choice(20, 2, replace=False)] for _ in range(m)])
    P = rng.random((m, 8)) ** 3 + 1e-3
    P /= P.sum(axis=1, keepdims=True)
    for alpha in (0.0, 0.5):
        objective = PlacementObjective(R, indices, P, alpha=alpha)
        start = objective.start()
        before, _ = objective.point_costs(start.copy(), np.empty_like(start))
        placed = place(objective, start.copy())
        after, _ = objective.point_costs(placed, np.empty_like(placed))
        assert np.all(after <= before)


@pytest.fixture(scope="module")
def blobs():
    rng = np.random.default_rng(3)
    centers = rng.normal(0, 6, size=(3, 5))
    X = np.vstack([c + rng.normal(size=(30, 5)) for c in centers])
    # Far from every training point: 1000 times the data's spread in 5 directions.
    directions = rng.normal(size=(5, 5))
    far = X.mean(axis=0) + 1000 * X.std() * directions / np.linalg.norm(directions, axis=1,
                                                                          keepdims=True)
    return X, far


@pytest.mark.parametrize("make", [
    lambda: HSSNE(perplexity=10, max_iter=150, random_state=0),
    lambda: HSSNE(alpha=0.5, perplexity=10, max_iter=150, random_state=0),
    lambda: SNE(perplexity=10, max_iter=100, random_state=0),
    lambda: NeRV(n_neighbors=10, max_iter=20, anneal_iter=5, random_state=0),
    lambda: Mbed(n_classes=3, max_iter=40, random_state=0),
], ids=["HSSNE", "HSSNE-alpha0.5", "SNE", "NeRV", "Mbed"])
def test_points_far_from_the_data_stay_near_the_map_and_are_reported(make, blobs):
    X, far = blobs
    model = make().fit(X)
    E = model.embedding_
    low, high = E.min(axis=0), E.max(axis=0)
    margin = new_points.MAP_MARGIN * np.ptp(E, axis=0).max()
    with pytest.warns(UserWarning, match=r"5 of the 8 new points lie far outside the training "
                                         r"data.*farthest of its 15 nearest neighbours"):
        Y = model.transform(np.vstack([far, X[:3] + 0.01]))
    assert np.all(Y >= low - margin) and np.all(Y <= high + margin)
    # Points among the training data are not reported.
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        model.transform(X[:10] + 0.01)


def test_far_points_of_precomputed_dissimilarities_are_reported(blobs):
    X, far = blobs
    model = HSSNE(metric="precomputed", perplexity=10, max_iter=100, random_state=0)
    model.fit(pairwise_distances(X))
    assert model._new_points.reach == pytest.approx(
        np.sort(pairwise_distances(X), axis=1)[:, 15].max())
    with pytest.warns(UserWarning, match="5 of the 5 new points lie far outside"):
        model.transform(pairwise_distances(far, X))
