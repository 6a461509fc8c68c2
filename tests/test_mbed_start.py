"""Where Mbed's annealing starts: the paper's restart near the origin, or label
spreading over the nearest-neighbour graph (for many classes, docs/mbed.md)."""

import numpy as np
import pytest

from nbembed.affinity.label_spreading import knn_graph, spread_labels
from nbembed.affinity.perplexity import nearest_neighbors
from nbembed.methods.mbed import Mbed
from test_mbed import blobs, small


def reference_spreading(W, T, alpha, n_steps):
    """The closed form of n_steps spreading steps from F = T, dense, then the two
    normalizations."""
    d = W.sum(axis=1)
    S = W / np.sqrt(np.outer(d, d))
    F = np.linalg.matrix_power(alpha * S, n_steps) @ T
    for t in range(n_steps):
        F += (1 - alpha) * np.linalg.matrix_power(alpha * S, t) @ T
    F /= F.sum(axis=0)
    return F / F.sum(axis=1, keepdims=True)


def test_label_spreading_matches_its_closed_form(rng):
    X = rng.normal(size=(30, 4))
    _, idx = nearest_neighbors(X, 5)
    graph = knn_graph(idx)
    T = np.zeros((30, 3))
    T[[0, 1, 2, 3], [0, 1, 2, 2]] = [1.0, 1.0, 0.5, 1.0]
    np.testing.assert_allclose(spread_labels(graph, T, alpha=0.9, n_steps=20),
                               reference_spreading(graph.toarray(), T, 0.9, 20), rtol=1e-10)


def test_label_spreading_fills_each_labelled_cluster(rng):
    X, y = blobs(rng, n_per=20, K=3, gap=8.0)
    X = np.vstack([X, 100.0 + rng.normal(size=(15, 5))])  # a cluster no label reaches
    targets = np.zeros((75, 3))
    targets[[0, 20, 40], [0, 1, 2]] = 1.0
    _, idx = nearest_neighbors(X, 10)
    graph = knn_graph(idx)
    assert (graph != graph.T).nnz == 0 and graph.diagonal().sum() == 0
    F = spread_labels(graph, targets)
    np.testing.assert_allclose(F.sum(axis=1), 1.0)
    np.testing.assert_array_equal(F[:60].argmax(axis=1), y)
    np.testing.assert_allclose(F[60:], 1.0 / 3)
    # class mass normalization: three labels for class 0 do not let it take over
    targets[[1, 2], 0] = 1.0
    np.testing.assert_array_equal(spread_labels(graph, targets)[:60].argmax(axis=1), y)


def test_annealing_starts_from_the_spread_labels(rng):
    X, y = blobs(rng, n_per=20, K=3, gap=8.0)
    partial = np.full(60, -1)
    partial[[0, 20, 40]] = [0, 1, 2]
    model = small(3, n_iter_init=0)
    run = model.prepare(X, partial)
    assert model.anneal_start_ == "labels"
    # every point starts in the region of its cluster's class, near r w_k
    np.testing.assert_array_equal(run.membership.argmax(axis=1), y)
    assert np.linalg.norm(run.embedding, axis=1).mean() > 0.3 * run.radius
    random = small(3, n_iter_init=0, anneal_start="random")
    run = random.prepare(X, partial)
    assert random.anneal_start_ == "random"
    assert run.embedding.std() == pytest.approx(1e-3 * run.radius, rel=0.3)


@pytest.mark.parametrize("K, labelled, expected", [
    (2, True, "random"), (3, False, "random"), (3, True, "labels")])
def test_automatic_anneal_start(rng, K, labelled, expected):
    X, y = blobs(rng, n_per=20, K=K)
    partial = np.where(np.arange(len(y)) % 10 == 0, y, -1) if labelled else None
    model = small(K, max_iter=30)
    model.fit(X, partial)
    assert model.anneal_start_ == expected
    same = small(K, max_iter=30, anneal_start=expected).fit(X, partial)
    np.testing.assert_array_equal(model.embedding_, same.embedding_)


@pytest.mark.parametrize("params, match", [
    (dict(anneal_start="spectral"), "anneal_start"),
    (dict(anneal_start="labels"), "no point is labelled"),
])
def test_bad_anneal_start(rng, params, match):
    X, _ = blobs(rng)
    with pytest.raises(ValueError, match=match):
        Mbed(2, **params).fit(X)
