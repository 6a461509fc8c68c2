"""Placement against a large map: the repulsion of all reference points read off a
grid (ReferenceField, GridPlacementObjective) instead of summed point by point."""

import copy
import pickle

import numba
import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.neighbors import KNeighborsClassifier

import reference_placement as ref
from nbembed import SNE, HSSNE, NeRV
from nbembed._kernels.placement import neighbour_attraction
from nbembed.fitted_map import fitted_map
from nbembed.methods import _new_points as new_points
from nbembed.objectives.placement import GridPlacementObjective, PlacementObjective, \
    ReferenceField


def _map(rng, n=600):
    return np.vstack([rng.normal(size=(n // 2, 2)) * 3,
                      rng.normal(size=(n - n // 2, 2)) * 2 + [20, 5]])


@pytest.mark.parametrize("alpha", [0.5, 1.0, 1.5, 2.0])
def test_neighbour_terms_match_numpy(rng, alpha):
    R = _map(rng, 50)
    Y = rng.normal(size=(7, 2)) * 5
    indices = np.array([rng.choice(50, size=6, replace=False) for _ in range(7)])
    P = rng.random((7, 6))
    P[0, 2] = 0.0
    P /= P.sum(axis=1, keepdims=True)
    active = np.ones(7, dtype=bool)
    active[3] = False
    attraction = np.full((2, 7), -1.0)
    cross_entropy, scales = np.full(7, -1.0), np.full(7, -1.0)
    neighbour_attraction(np.ascontiguousarray(R.T), np.ascontiguousarray(Y.T), indices, P, alpha,
                         active, attraction, cross_entropy, scales)
    expected = ref.neighbour_terms(R, Y, indices, P, alpha)
    np.testing.assert_allclose(attraction.T[active], expected[0][active], rtol=1e-12)
    np.testing.assert_allclose(cross_entropy[active], expected[1][active], rtol=1e-12)
    np.testing.assert_allclose(scales[active], expected[2][active], rtol=1e-12)
    # An inactive point's outputs are left alone.
    assert np.all(attraction[:, 3] == -1.0) and cross_entropy[3] == -1.0 and scales[3] == -1.0


@pytest.mark.parametrize("alpha", [0.5, 1.0, 1.5])
def test_the_field_matches_the_exact_sums(rng, alpha):
    """Measured: Z within 0.2% and F within 0.7% of the scale of its terms
    (sum_j H S |y - r_j|), near the points and anywhere in the box."""
    R = _map(rng)
    low, high = R.min(axis=0) - 10, R.max(axis=0) + 10
    field = ReferenceField(R, alpha, low, high)
    Y = rng.uniform(low, high, size=(400, 2))
    Y[:100] = R[:100] + rng.normal(size=(100, 2)) * 0.3
    Z, F = field.sums(np.ascontiguousarray(Y.T))
    Z_exact, F_exact, scale = ref.field_sums(R, Y, alpha)
    assert np.max(np.abs(Z - Z_exact) / Z_exact) < 0.005
    assert np.max(np.linalg.norm(F.T - F_exact, axis=1) / scale) < 0.02


def test_the_field_refuses_what_it_cannot_hold(rng):
    R = _map(rng, 20)
    with pytest.raises(ValueError, match="alpha > 0"):
        ReferenceField(R, 0.0, R.min(axis=0), R.max(axis=0))
    with pytest.raises(ValueError, match="two-dimensional"):
        ReferenceField(rng.normal(size=(20, 3)), 1.0, np.zeros(3), np.ones(3))


@pytest.mark.parametrize("alpha", [0.5, 1.0])
def test_grid_cost_and_gradient_are_close_to_the_exact_ones(rng, alpha):
    R = _map(rng)
    Y = R[rng.choice(len(R), 40)] + rng.normal(size=(40, 2))
    indices = np.array([np.argsort(((R - y) ** 2).sum(1))[:15] for y in Y])
    P = rng.random((40, 15)) + 0.1
    P /= P.sum(axis=1, keepdims=True)
    exact = PlacementObjective(R, indices, P, alpha=alpha)
    low, high = R.min(axis=0) - 10, R.max(axis=0) + 10
    grid = GridPlacementObjective(R, indices, P, alpha=alpha,
                                  field=ReferenceField(R, alpha, low, high))
    Yt = np.ascontiguousarray(Y.T)
    g_exact, g_grid = np.empty_like(Yt), np.empty_like(Yt)
    c_exact, s_exact = exact.point_costs(Yt, g_exact)
    c_grid, s_grid = grid.point_costs(Yt, g_grid)
    np.testing.assert_allclose(c_grid, c_exact, rtol=0, atol=0.005)  # log Z within 0.5%
    np.testing.assert_array_equal(s_grid, s_exact)
    attraction = np.linalg.norm(2 * ref.neighbour_terms(R, Y, indices, P, alpha)[0], axis=1)
    assert np.all(np.linalg.norm(g_grid - g_exact, axis=0) < 0.05 * attraction + 1e-3)


def test_points_are_kept_in_the_field_box(rng):
    R = _map(rng, 50)
    field = ReferenceField(R, 1.0, R.min(axis=0) - 1, R.max(axis=0) + 1)
    objective = GridPlacementObjective(R, np.zeros((2, 1), dtype=np.int64), np.ones((2, 1)),
                                       alpha=1.0, field=field)
    Yt = np.array([[1e6, 0.0], [-1e6, 3.0]])
    objective.project(Yt)
    np.testing.assert_array_equal(Yt[:, 0], [field.high[0], field.low[1]])
    np.testing.assert_array_equal(Yt[:, 1], [0.0, 3.0])


@pytest.fixture(scope="module")
def digits_map():
    X, y = load_digits(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(X))
    X, y = X[order], y[order]
    model = HSSNE(random_state=0).fit(X[:1000])
    return model, X, y


def _placer(model, placement):
    """A copy of the model's placer that places by ``placement``, with no grid yet."""
    placer = copy.copy(model._fitted_placement())
    placer.placement = placement
    placer._field = None
    return placer


def test_grid_placement_lands_where_the_exact_one_does(digits_map):
    """797 new digits against 1000: measured median distance 0.005 in a map 122 wide,
    none farther than 2% of it, 10-NN accuracy 0.966 against the exact 0.967."""
    model, X, y = digits_map
    exact = _placer(model, "exact").transform(X[1000:])
    grid = _placer(model, "grid").transform(X[1000:])
    distance = np.linalg.norm(grid - exact, axis=1)
    extent = np.ptp(model.embedding_, axis=0).max()
    assert np.median(distance) < 1e-3 * extent
    assert np.mean(distance > 0.02 * extent) < 0.01
    knn = KNeighborsClassifier(10).fit(model.embedding_, y[:1000])
    assert abs(knn.score(grid, y[1000:]) - knn.score(exact, y[1000:])) <= 0.005


def test_grid_placement_is_per_point_and_independent_of_threads(digits_map, monkeypatch):
    model, X, _ = digits_map
    placer = _placer(model, "grid")
    Y = placer.transform(X[1000:1200])
    assert np.array_equal(placer.transform(X[1000:1200:7]), Y[::7])
    monkeypatch.setattr(new_points, "NEIGHBOUR_BLOCK", 500)
    assert np.array_equal(placer.transform(X[1000:1200]), Y)
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        fresh = _placer(model, "grid")  # its field built on one thread
        assert np.array_equal(fresh.transform(X[1000:1200]), Y)
    finally:
        numba.set_num_threads(threads)


def test_auto_takes_the_grid_for_large_heavy_tailed_two_dimensional_maps(digits_map,
                                                                           monkeypatch):
    model, X, _ = digits_map
    assert not model._fitted_placement().uses_grid  # 1000 reference points
    monkeypatch.setattr(new_points, "GRID_PLACEMENT_MIN_REFERENCE", 1000)
    assert model._fitted_placement().uses_grid
    assert np.array_equal(model.transform(X[1000:1100]),
                          _placer(model, "grid").transform(X[1000:1100]))
    small = X[:300]
    assert not SNE(max_iter=250, random_state=0).fit(small)._fitted_placement().uses_grid
    assert not HSSNE(n_components=3, max_iter=250, random_state=0).fit(
        small)._fitted_placement().uses_grid
    assert not NeRV(max_iter=50, random_state=0).fit(small)._fitted_placement().uses_grid


def test_the_fitted_map_places_as_the_estimator_and_pickles_without_the_grid(digits_map,
                                                                              monkeypatch):
    model, X, _ = digits_map
    monkeypatch.setattr(new_points, "GRID_PLACEMENT_MIN_REFERENCE", 1000)
    placer = fitted_map(model)
    Y = placer.transform(X[1000:1150])
    assert placer._placer.uses_grid and placer._placer._field is not None
    assert np.array_equal(Y, model.transform(X[1000:1150]))
    loaded = pickle.loads(pickle.dumps(placer))
    assert getattr(loaded._placer, "_field", None) is None
    assert np.array_equal(loaded.transform(X[1000:1150]), Y)
    assert len(pickle.dumps(placer)) < 1.1 * len(pickle.dumps(fitted_map(model)))


def test_a_grid_where_the_map_cannot_have_one_is_refused(digits_map):
    model, X, _ = digits_map
    placer = model._fitted_placement()
    with pytest.raises(ValueError, match="placement must be one of"):
        type(placer)(None, placer.embedding, n_neighbors=5, perplexity=5, placement="fast")
    with pytest.raises(ValueError, match="two-dimensional map with alpha > 0"):
        type(placer)(None, placer.embedding, n_neighbors=5, perplexity=5, alpha=0.0,
                     placement="grid")
