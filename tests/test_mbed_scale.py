"""Mbed for large n: sparse input neighbourhoods and the SNE term on a grid.

The grid kernel against the dense NumPy reference (including points far from
all others, which take the exact fallback), the sparse neighbourhoods against
the dense ones, and whole runs against exact runs.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import pairwise_distances

import reference_mbed as refm
from nbembed import Mbed
from nbembed._kernels import sne_grid
from nbembed.affinity import fixed_width
from nbembed.methods import mbed as mbed_module


def _sparse_problem(rng, n=400, k=15):
    """A row-stochastic P over each point's k nearest neighbours, as a dense array."""
    X = np.vstack([rng.normal(size=(n // 2, 5)), rng.normal(size=(n - n // 2, 5)) + 3.0])
    D = pairwise_distances(X)
    np.fill_diagonal(D, np.inf)
    far = np.argsort(D, axis=1)[:, k:]
    np.fill_diagonal(D, 0.0)
    P = refm.input_neighbourhoods(D, 2.0)
    np.put_along_axis(P, far, 0.0, axis=1)
    return P / P.sum(axis=1, keepdims=True)


def _embedding(rng, n):
    Y = np.vstack([rng.normal(size=(n // 2, 2)), 0.5 * rng.normal(size=(n - n // 2, 2)) + 4.0])
    Y[0] = [30.0, -30.0]  # far from all others: Z underflows, the exact fallback takes over
    Y[1] = [-6.0, 9.0]  # a few units away: Z small but representable
    return Y


def _grid_cost_gradient(P, Y):
    M = sp.csr_matrix(P + P.T)
    grad = np.empty((2, Y.shape[0]))
    p_log_p = np.sum(P[P > 0] * np.log(P[P > 0]))
    cost = p_log_p + sne_grid.sne_cost_gradient_grid(np.ascontiguousarray(Y.T), M, grad)
    return cost, grad.T


def test_grid_sne_term_matches_the_reference(rng):
    P = _sparse_problem(rng)
    Y = _embedding(rng, P.shape[0])
    cost, grad = _grid_cost_gradient(P, Y)
    expected = refm.sne_grad(P, Y)
    assert cost == pytest.approx(refm.sne_cost(P, Y), rel=1e-5)
    # Documented accuracy (docs/scale.md): relative error of the gradient below 1e-3.
    error = np.linalg.norm(grad - expected) / np.linalg.norm(expected)
    assert 1e-9 < error < 1e-3
    # The points far from the rest are exact up to the grid's share of their columns.
    np.testing.assert_allclose(grad[:2], expected[:2], rtol=1e-6, atol=1e-8)


def test_grid_sne_term_takes_exact_rows_only_where_needed(rng, monkeypatch):
    P = _sparse_problem(rng, n=200)
    Y = _embedding(rng, 200)
    calls = []
    exact_rows = sne_grid.exact_rows
    monkeypatch.setattr(sne_grid, "exact_rows",
                        lambda Yt, rows: calls.append(rows.copy()) or exact_rows(Yt, rows))
    _grid_cost_gradient(P, Y)
    assert set(calls[0]) == {0, 1}
    # Everything summed exactly: the same as the grid to the grid's accuracy.
    monkeypatch.setattr(sne_grid, "EXACT_ROW_BELOW", np.inf)
    cost_exact, grad_exact = _grid_cost_gradient(P, Y)
    assert cost_exact == pytest.approx(refm.sne_cost(P, Y), rel=1e-10)
    np.testing.assert_allclose(grad_exact, refm.sne_grad(P, Y), rtol=1e-8, atol=1e-10)


def test_sparse_input_neighbourhoods(rng):
    X = rng.normal(size=(120, 4))
    D = pairwise_distances(X)
    np.fill_diagonal(D, np.inf)
    idx = np.argsort(D, axis=1)[:, :10]
    dist = np.take_along_axis(D, idx, axis=1)
    P = fixed_width.sparse_input_neighbourhoods(dist, idx, 1.5)
    dense = np.zeros((120, 120))
    np.put_along_axis(dense, idx, np.exp(-dist ** 2 / 1.5 ** 2), axis=1)
    np.testing.assert_allclose(P.toarray(), dense / dense.sum(axis=1, keepdims=True),
                               rtol=1e-12)


def test_sampled_sigma_estimates_the_quantile(rng):
    X = rng.normal(size=(3000, 6))
    exact = fixed_width.default_sigma(pairwise_distances(X), 3)
    assert fixed_width.sampled_sigma(X, 3, "euclidean", 0) == pytest.approx(exact, rel=0.02)
    D = pairwise_distances(X[:900])
    assert fixed_width.sampled_sigma(D, 2, "precomputed", 0) == pytest.approx(
        fixed_width.default_sigma(D, 2), rel=0.02)


def _blobs(rng, n=1200):
    centres = np.array([[0.0] * 6, [4.0] + [0.0] * 5])
    labels = np.arange(n) % 2
    return centres[labels] + rng.normal(size=(n, 6)), labels


def test_knn_run_matches_the_exact_repulsion(rng, monkeypatch):
    """Same sparse P and start: the grid run ends at the exact run's cost (within 1%)
    and classifies the same way."""
    X, labels = _blobs(rng)
    params = dict(n_classes=2, affinity="knn", max_iter=120, random_state=0)
    exact = Mbed(repulsion="exact", **params).fit(X)
    grid = Mbed(repulsion="fft", **params).fit(X)
    assert grid.sigma_ == exact.sigma_
    assert grid.cost_ == pytest.approx(exact.cost_, rel=0.01)
    agree = np.mean(grid.labels_ == exact.labels_)
    assert max(agree, 1 - agree) > 0.98
    truth = np.mean(grid.labels_ == labels)
    assert max(truth, 1 - truth) > 0.95


def test_auto_choices(rng, monkeypatch):
    from nbembed import _config

    X, _ = _blobs(rng, 300)
    run = Mbed(max_iter=30).prepare(X)
    assert run.objective.repulsion == "exact" and not sp.issparse(run.objective.M)
    monkeypatch.setattr(_config, "DENSE_AFFINITY_MAX_N", 200)
    monkeypatch.setattr(mbed_module, "EXACT_NORMALIZERS_MAX_N", 250)
    run = Mbed(max_iter=30).prepare(X)
    assert run.objective.repulsion == "fft" and sp.issparse(run.objective.M)
    assert run.objective.M.nnz <= 2 * 300 * mbed_module.KNN_NEIGHBORS
    run.step(30)
    assert np.all(np.isfinite(run.embedding))
    # Three classes in three dimensions stay exact; in two they use the grid.
    assert Mbed(n_classes=3, max_iter=30).prepare(X).objective.repulsion == "exact"
    assert Mbed(n_classes=3, n_components=2, max_iter=30).prepare(X).objective.repulsion == "fft"


def test_one_dimension_on_the_grid(rng):
    """A line is a plane with a zero second coordinate: the same run as exact."""
    X, _ = _blobs(rng, 300)
    params = dict(n_components=1, affinity="knn", max_iter=60, random_state=0)
    grid = Mbed(repulsion="fft", **params).fit(X)
    exact = Mbed(repulsion="exact", **params).fit(X)
    assert grid.embedding_.shape == (300, 1)
    assert grid.cost_ == pytest.approx(exact.cost_, rel=0.01)
    agree = np.mean(grid.labels_ == exact.labels_)
    assert max(agree, 1 - agree) > 0.98


@pytest.mark.parametrize("params, match", [
    (dict(affinity="all"), "affinity"),
    (dict(repulsion="barnes-hut"), "repulsion"),
    (dict(n_classes=3, repulsion="fft"), "n_components=1 or 2"),
    (dict(affinity="knn", n_neighbors=0), "n_neighbors"),
    (dict(neighbors="annoy"), "neighbors"),
])
def test_bad_parameters(rng, params, match):
    with pytest.raises(ValueError, match=match):
        Mbed(max_iter=30, **params).fit(rng.normal(size=(40, 3)))


def test_memory_guard_names_the_sparse_path(monkeypatch, rng):
    from nbembed import _config

    monkeypatch.setattr(_config, "MAX_DENSE_BYTES", 8 * 50 * 50)
    with pytest.raises(MemoryError, match='affinity="knn"'):
        Mbed(affinity="exact", max_iter=30).fit(rng.normal(size=(60, 3)))
