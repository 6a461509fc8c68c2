"""Nearest-neighbour descent (nbembed._kernels.descent, nbembed._nearest_descent)
against a plain NumPy search and plain NumPy selections."""

import numba
import numpy as np
import pytest

from nbembed._kernels import descent
from nbembed._nearest_descent import descent_neighbors


def numpy_nearest(X, k):
    """Distances (float64, feature by feature) and indices of each row's k nearest
    other rows, nearest first, ties by index."""
    X = np.asarray(X, dtype=np.float64)
    D = np.zeros((X.shape[0], X.shape[0]))
    for f in range(X.shape[1]):
        D += (X[:, f, None] - X[None, :, f]) ** 2
    np.fill_diagonal(D, np.inf)
    order = np.lexsort((np.broadcast_to(np.arange(X.shape[0]), D.shape), D), axis=1)[:, :k]
    return np.sqrt(np.take_along_axis(D, order, axis=1)), order


def numpy_best(offers, k):
    """The indices of the k smallest distances among (distance, index) offers,
    an index counted once."""
    distinct = dict((j, d) for d, j in offers)
    ranked = sorted(distinct.items(), key=lambda item: item[1])
    return {j for j, _ in ranked[:k]}


def empty_heaps(n, k):
    return (np.full((n, k), np.inf, dtype=np.float32), np.full((n, k), -1, dtype=np.int32),
            np.zeros((n, k), dtype=np.uint8))


def assert_max_heap(dist):
    for row in dist:
        for pos in range(len(row)):
            for child in (2 * pos + 1, 2 * pos + 2):
                if child < len(row):
                    assert row[pos] >= row[child]


@pytest.mark.parametrize("k", [1, 5, 16])
def test_pushes_keep_the_k_smallest_distinct_offers(k):
    rng = np.random.default_rng(k)
    dist, idx, flag = empty_heaps(1, k)
    # a candidate's distance is a function of its index, as in a search
    weights = rng.random(60).astype(np.float32)
    offers = [(weights[j], int(j)) for j in rng.integers(0, 60, size=300)]
    for d, j in offers:
        descent.heap_push(dist, idx, flag, 0, d, j, 1)
    assert set(idx[0]) == numpy_best(offers, k)
    assert len(set(idx[0])) == k
    assert_max_heap(dist)


@pytest.mark.parametrize("batch", [3, 40])  # below and above MERGE_MIN
def test_merges_keep_the_k_smallest_distinct_offers(batch):
    rng = np.random.default_rng(batch)
    k = 16
    dist, idx, flag = empty_heaps(1, k)
    offers = []
    # a candidate's distance is a function of its index, as in a search; no ties
    weights = (rng.permutation(200) / 200).astype(np.float32)
    work = [np.empty(k + batch, dtype=t) for t in (np.float32, np.int32, np.uint8, np.float32)]
    for _ in range(12):
        js = rng.choice(np.arange(1, 200), batch, replace=False).astype(np.int32)
        ds = weights[js]
        offers += list(zip(ds, js.tolist()))
        descent.heap_merge(dist, idx, flag, 0, ds, js, batch, *work)
        assert set(idx[0][idx[0] >= 0]) == numpy_best(offers, k) or len(offers) < k
    assert set(idx[0]) == numpy_best(offers, k)
    assert_max_heap(dist)


def test_a_tree_puts_every_point_in_one_leaf():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 5)).astype(np.float32)
    order = np.empty(1000, dtype=np.int32)
    starts = np.empty(1001, dtype=np.int64)
    leaves = descent.grow_tree(X, 7, 0, 30, order, starts)
    np.testing.assert_array_equal(np.sort(order), np.arange(1000))
    sizes = np.diff(starts[:leaves + 1])
    assert starts[0] == 0 and starts[leaves] == 1000
    assert sizes.min() >= 1 and sizes.max() <= 30
    again = np.empty_like(order)
    descent.grow_tree(X, 7, 0, 30, again, np.empty_like(starts))
    np.testing.assert_array_equal(order, again)
    other = np.empty_like(order)
    descent.grow_tree(X, 7, 1, 30, other, np.empty_like(starts))
    assert not np.array_equal(order, other)


def clusters(n, dim, seed):
    rng = np.random.default_rng(seed)
    centres = 5.0 * rng.normal(size=(10, dim))
    widths = rng.uniform(0.3, 2.0, size=10)
    labels = rng.integers(0, 10, size=n)
    return centres[labels] + widths[labels, None] * rng.normal(size=(n, dim))


@pytest.mark.parametrize("n, dim, k", [(3000, 20, 15), (2000, 3, 30), (1500, 100, 5)])
def test_descent_finds_nearly_all_nearest_neighbours(n, dim, k):
    X = clusters(n, dim, n + dim)
    dist, idx = descent_neighbors(X, k, 0)
    expected_dist, expected_idx = numpy_nearest(X, k)
    recall = np.mean([len(set(a) & set(b)) for a, b in zip(idx, expected_idx)]) / k
    assert recall >= 0.99, recall
    # what it returns is measured exactly, in order, without the point itself
    exact = np.sqrt(((X[:, None, :] - X[idx]) ** 2).sum(axis=2))
    np.testing.assert_allclose(dist, exact, rtol=1e-12)
    assert np.all(np.diff(dist, axis=1) >= 0)
    assert not np.any(idx == np.arange(n)[:, None])
    assert all(len(set(row)) == k for row in idx)
    # where it found the true k nearest, their distances are the true ones
    found = np.all(np.sort(idx, axis=1) == np.sort(expected_idx, axis=1), axis=1)
    np.testing.assert_allclose(dist[found], expected_dist[found], rtol=1e-12)


def test_descent_is_the_same_on_any_number_of_threads():
    X = clusters(4000, 10, 1)
    threads = numba.get_num_threads()
    dist, idx = descent_neighbors(X, 12, 3, n_trees=6)
    try:
        numba.set_num_threads(1)
        dist_one, idx_one = descent_neighbors(X, 12, 3, n_trees=6)
    finally:
        numba.set_num_threads(threads)
    np.testing.assert_array_equal(idx, idx_one)
    np.testing.assert_array_equal(dist, dist_one)
    other_dist, other_idx = descent_neighbors(X, 12, 4, n_trees=6)
    assert not np.array_equal(idx, other_idx)  # the seed matters


def test_duplicate_points_and_the_fewest_points():
    rng = np.random.default_rng(2)
    base = rng.normal(size=(40, 4))
    X = np.vstack([base] * 5)  # every point five times
    dist, idx = descent_neighbors(X, 6, 0, n_trees=4)
    assert not np.any(idx == np.arange(len(X))[:, None])
    assert np.all(dist[:, :4] == 0.0)  # its four copies come first
    for row, d in zip(idx, dist):
        zeros = row[d == 0.0]
        np.testing.assert_array_equal(zeros, np.sort(zeros))  # equal distances by index
    small = rng.normal(size=(8, 3))
    dist, idx = descent_neighbors(small, 7, 0)
    np.testing.assert_array_equal(np.sort(idx, axis=1),
                                  [[j for j in range(8) if j != i] for i in range(8)])
    with pytest.raises(ValueError, match="more than 7 points"):
        descent_neighbors(small[:7], 7, 0)
