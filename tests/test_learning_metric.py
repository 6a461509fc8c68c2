"""The learning metric: the mixture's likelihood and gradient, the Fisher
information, path distances against NumPy, the KL identity and labels."""

import numpy as np
import pytest

import reference_nerv as rn
from nbembed.affinity.learning_metric import LearningMetric, labels_from, mixture_objective

K, C, D = 5, 3, 4


def _data(rng, n=90):
    X = rng.normal(size=(n, D))
    y = np.digitize(X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=n), [-0.6, 0.6])
    return X, y


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(1)
    X, y = _data(rng)
    return X, y, LearningMetric(n_components=K, sigma=1.2, random_state=0).fit(X, y)


def _theta(lm):
    return np.log(lm.beta_)


# -- the mixture ----------------------------------------------------------------------------
@pytest.mark.parametrize("penalties", [(0.0, 0.0), (1e-3, 1e-3), (0.5, 0.2)])
def test_objective_gradient_by_finite_differences(rng, penalties):
    X = rng.normal(size=(40, D))
    T = rng.dirichlet(np.ones(C), size=40)              # soft labels
    w = rng.uniform(0.2, 2.0, size=40)
    params = rng.normal(size=K * D + C * K)
    args = (X, T, w, K, 0.9, *penalties, rng.normal(size=D), 2.5)
    f, grad = mixture_objective(params, *args)
    numeric = np.zeros_like(params)
    for i in range(params.size):
        up, down = params.copy(), params.copy()
        up[i] += 1e-6
        down[i] -= 1e-6
        numeric[i] = (mixture_objective(up, *args)[0] - mixture_objective(down, *args)[0]) / 2e-6
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-9)


def test_objective_is_the_weighted_log_likelihood(rng):
    X = rng.normal(size=(30, D))
    T = np.eye(C)[rng.integers(0, C, 30)]
    w = rng.uniform(0.5, 1.5, size=30)
    params = rng.normal(size=K * D + C * K)
    f, _ = mixture_objective(params, X, T, w, K, 0.7, 0.0, 0.0)
    centroids, theta = params[:K * D].reshape(K, D), params[K * D:].reshape(C, K)
    expected = -rn.mixture_log_likelihood(X, T, w, centroids, theta, 0.7) / w.sum()
    assert f == pytest.approx(expected, rel=1e-12)
    # doubling a weight is the same as repeating the row
    doubled_w = w.copy()
    doubled_w[0] *= 2
    repeated = mixture_objective(params, np.vstack([X, X[:1]]), np.vstack([T, T[:1]]),
                                 np.concatenate([w, w[:1]]), K, 0.7, 0.0, 0.0)[0]
    assert mixture_objective(params, X, T, doubled_w, K, 0.7, 0.0, 0.0)[0] == \
        pytest.approx(repeated, rel=1e-12)


def test_predict_proba_matches_reference(fitted):
    X, y, lm = fitted
    p = lm.predict_proba(X)
    np.testing.assert_allclose(p, rn.mixture_posteriors(X, lm.centroids_, _theta(lm), lm.sigma_),
                               rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    # Training accuracy over 8 draws of data and seeds: 0.79 to 0.92 (mean 0.87, sd 0.045;
    # this draw 0.88; the largest class is 0.37); 0.7 is 3.7 sd below the mean.
    assert np.mean(lm.predict(X) == y) > 0.7


# -- Fisher information and distances ----------------------------------------------------
def test_fisher_information_symmetric_psd_low_rank(fitted):
    X, _, lm = fitted
    J = lm.fisher_information(X[:20])
    for x, Jx in zip(X[:20], J):
        np.testing.assert_allclose(Jx, rn.fisher_information(x, lm.centroids_, _theta(lm),
                                                             lm.sigma_), rtol=1e-9, atol=1e-14)
        np.testing.assert_allclose(Jx, Jx.T, atol=1e-14)
        eig = np.linalg.eigvalsh(Jx)
        assert eig.min() >= -1e-12 * max(eig.max(), 1e-300)
        assert np.sum(eig > 1e-9 * eig.max()) <= C - 1


def test_distances_match_the_path_sum(fitted):
    X, _, lm = fitted
    Dm = lm.pairwise_distances(X[:12])
    for a in range(12):
        for b in range(12):
            expected = rn.learning_metric_distance(X[a], X[b], lm.centroids_, _theta(lm),
                                                   lm.sigma_, 10)
            assert Dm[a, b] == pytest.approx(expected, rel=1e-9, abs=1e-12)
    np.testing.assert_array_equal(Dm, Dm.T)
    np.testing.assert_array_equal(np.diag(Dm), 0.0)
    assert np.all(Dm[~np.eye(12, dtype=bool)] > 0)


def test_rectangular_distances_agree_with_the_square_matrix(fitted):
    X, _, lm = fitted
    full = lm.pairwise_distances(X)
    np.testing.assert_allclose(lm.pairwise_distances(X[:7], X[20:31]), full[:7, 20:31],
                               rtol=1e-9, atol=1e-12)


def test_one_piece_is_the_midpoint_quadratic_form(fitted):
    X, _, lm = fitted
    one = LearningMetric(n_pieces=1)
    for name in ("centroids_", "beta_", "sigma_", "classes_", "n_features_in_"):
        setattr(one, name, getattr(lm, name))
    d = one.pairwise_distances(X[:2])[0, 1]
    J = lm.fisher_information(((X[0] + X[1]) / 2)[None])[0]
    delta = X[1] - X[0]
    assert d == pytest.approx(np.sqrt(delta @ J @ delta), rel=1e-9)


@pytest.mark.parametrize("point", [0, 5, 17])
def test_squared_distance_is_twice_the_kl_divergence_to_second_order(fitted, point, rng):
    """d_L(x, x + eps v)^2 = 2 KL(p(c|x) || p(c|x + eps v)) + O(eps^3)."""
    X, _, lm = fitted
    x = X[point]
    v = rng.normal(size=D)
    v /= np.linalg.norm(v)
    gaps = []
    for eps in (1e-2, 1e-3):
        pair = np.vstack([x, x + eps * v])
        d2 = lm.pairwise_distances(pair)[0, 1] ** 2
        p, q = lm.predict_proba(pair)
        kl = np.sum(p * np.log(p / q))
        gaps.append(abs(d2 / (2 * kl) - 1))
    assert gaps[1] < 2e-3
    assert gaps[1] < gaps[0] / 5          # the gap shrinks like eps


def test_shortest_paths_are_shorter_and_metric(fitted):
    X, _, lm = fitted
    straight = lm.pairwise_distances(X[:40])
    lm_graph = LearningMetric(shortest_paths=True)
    for name in ("centroids_", "beta_", "sigma_", "classes_", "n_features_in_"):
        setattr(lm_graph, name, getattr(lm, name))
    graph = lm_graph.pairwise_distances(X[:40])
    assert np.all(graph <= straight + 1e-12) and np.any(graph < straight - 1e-6)
    # the triangle inequality holds exactly for shortest paths: d(a, c) <= d(a, b) + d(b, c)
    via = graph[:, :, None] + graph[None, :, :]           # [a, b, c] = d(a, b) + d(b, c)
    assert np.all(graph[:, None, :] <= via + 1e-9)
    with pytest.raises(ValueError, match="without Y"):
        lm_graph.pairwise_distances(X[:5], X[5:9])


# -- labels -------------------------------------------------------------------------------
def test_unlabelled_points_do_not_enter_the_likelihood(rng):
    X, y = _data(rng)
    partial = np.where(np.arange(len(y)) % 2 == 0, y, -1)
    a = LearningMetric(n_components=K, sigma=1.0, random_state=0).fit(X, partial)
    b = LearningMetric(n_components=K, sigma=1.0, random_state=0).fit(
        X, partial, sample_weight=np.ones(len(y)))
    np.testing.assert_allclose(a.centroids_, b.centroids_)
    assert a.classes_.tolist() == [0, 1, 2]
    # one-hot soft labels are hard labels
    soft = np.zeros((len(y), 3))
    soft[partial >= 0, partial[partial >= 0]] = 1.0
    c = LearningMetric(n_components=K, sigma=1.0, random_state=0).fit(X, soft_labels=soft)
    np.testing.assert_allclose(c.centroids_, a.centroids_, rtol=1e-8, atol=1e-10)


def test_labels_from_merges_and_checks():
    T, w, classes = labels_from(np.array([0, 2, -1, 2]), n_samples=4)
    assert classes.tolist() == [0, 2] and w.tolist() == [1, 1, 0, 1]
    np.testing.assert_array_equal(T[1], [0, 1])
    T, w, _ = labels_from(np.array(["a", "b", "a"]), n_samples=3)
    assert w.tolist() == [1, 1, 1]
    with pytest.raises(ValueError, match="single class"):
        labels_from(np.array([1, 1, -1]), n_samples=3)
    with pytest.raises(ValueError, match="No labelled points"):
        labels_from(np.array([-1, -1]), n_samples=2)
    with pytest.raises(ValueError, match="requires y"):
        labels_from(None, n_samples=2)
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        labels_from(np.array([0.5, 1.2, 3.3]), n_samples=3)
    with pytest.raises(ValueError, match="sample weights are zero"):
        labels_from(np.array([0, 1]), sample_weight=np.zeros(2), n_samples=2)


def test_model_selection_covers_the_grid(rng):
    X, y = _data(rng)
    lm = LearningMetric(n_components=[3, 6], sigma=[2.0, 1.0, 0.5], cv=2,
                        random_state=0).fit(X, y)
    grid = {(r["n_components"], round(r["sigma"], 9)) for r in lm.validation_scores_}
    assert grid == {(k, s) for k in (3, 6) for s in (2.0, 1.0, 0.5)}
    best = max(lm.validation_scores_, key=lambda r: r["validation_log_likelihood"])
    assert (lm.n_components_, lm.sigma_) == (best["n_components"], best["sigma"])
    auto = LearningMetric(cv=2, random_state=0).fit(X, y)
    assert len(auto.validation_scores_) == 4 * 4      # K in {3, 6, 12, 24} x 4 widths
    assert auto.n_components_ in (3, 6, 12, 24)


@pytest.mark.parametrize("params, match", [
    (dict(sigma=-1.0), "sigma"), (dict(sigma="wide"), "sigma"),
    (dict(n_components=[2.5]), "n_components"), (dict(n_pieces=0), "n_pieces"),
    (dict(cv=1, sigma=[1.0, 2.0]), "cv"), (dict(cv=()), "cv"), (dict(cv=[]), "cv")])
def test_bad_parameters(rng, params, match):
    X, y = _data(rng, n=30)
    with pytest.raises(ValueError, match=match):
        LearningMetric(**{"n_components": 3, **params}).fit(X, y)
