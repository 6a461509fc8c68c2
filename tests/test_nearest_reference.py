"""The exact k-nearest reference search proposed by a float32 product
(nbembed._nearest_reference) against a plain NumPy search."""

import numba
import numpy as np
import pytest

from nbembed import _nearest_reference as nearest_reference
from nbembed._nearest_reference import ReferenceRows, error_bound_factors


def numpy_nearest(X, R, k):
    """Squared distances (float64, summed feature by feature) and indices of the k
    nearest rows of R, nearest first, ties by index."""
    D = np.zeros((X.shape[0], R.shape[0]))
    with np.errstate(over="ignore"):  # rows of 1e200: their distances are infinite
        for f in range(X.shape[1]):
            D += (X[:, f, None] - R[None, :, f]) ** 2
    order = np.lexsort((np.broadcast_to(np.arange(R.shape[0]), D.shape), D), axis=1)[:, :k]
    return np.take_along_axis(D, order, axis=1), order


@pytest.mark.parametrize("n, n_features, offset, scale", [
    (500, 64, 0.0, 1.0),      # digits-like
    (800, 300, 50.0, 1.0),    # far from the origin: centring matters
    (400, 3, 1e4, 1e-3),      # tiny spread, huge offset
    (300, 1, 0.0, 1.0),       # one feature
])
@pytest.mark.parametrize("k", [1, 7, 30])
def test_the_k_nearest_equal_numpys(n, n_features, offset, scale, k):
    rng = np.random.default_rng(n + k)
    R = offset + scale * rng.normal(size=(n, n_features))
    X = np.vstack([offset + scale * rng.normal(size=(60, n_features)), R[:20]])
    dist, idx = ReferenceRows(R).nearest(X, k, block_rows=16)
    expected_dist, expected_idx = numpy_nearest(X, R, k)
    np.testing.assert_array_equal(idx, expected_idx)
    np.testing.assert_allclose(dist, expected_dist, rtol=1e-12, atol=1e-12 * scale ** 2)


def test_ties_and_duplicates_go_by_index():
    """Integer rows give exact ties; duplicated reference rows tie at every distance."""
    rng = np.random.default_rng(1)
    R = rng.integers(0, 3, size=(200, 5)).astype(float)
    R = np.vstack([R, R[:50]])
    X = rng.integers(0, 3, size=(40, 5)).astype(float)
    dist, idx = ReferenceRows(R).nearest(X, 12, block_rows=7)
    expected_dist, expected_idx = numpy_nearest(X, R, 12)
    np.testing.assert_array_equal(idx, expected_idx)
    np.testing.assert_array_equal(dist, expected_dist)


def test_differences_below_float32_resolution_are_ordered_exactly():
    """Reference rows at distances from the new row that differ by 1e-10 relative:
    their float32 estimates scatter by rounding, the exact sums order them (and
    without the error bound the search keeps an arbitrary k of them)."""
    rng = np.random.default_rng(4)
    n, n_features = 400, 40
    directions = rng.normal(size=(n, n_features))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    x = rng.normal(size=n_features)
    R = x + directions * (1.0 + 1e-10 * np.arange(n)[::-1, None])
    dist, idx = ReferenceRows(R).nearest(x[None, :], 10, block_rows=1)
    expected_dist, expected_idx = numpy_nearest(x[None, :], R, 10)
    np.testing.assert_array_equal(idx, expected_idx)
    np.testing.assert_allclose(dist, expected_dist, rtol=1e-14)


@pytest.mark.parametrize("scale", [1e20, 1e40, 1e200])
def test_rows_beyond_float32_range_are_searched_exactly(scale):
    """float32 products overflow (inf or NaN estimates): every such row stays a
    candidate, so the search is the exact one instead of reading past its candidates."""
    rng = np.random.default_rng(6)
    R = rng.normal(size=(200, 8)) * scale
    X = np.vstack([rng.normal(size=(5, 8)) * scale, rng.normal(size=(5, 8))])
    dist, idx = ReferenceRows(R).nearest(X, 10, block_rows=3)
    expected_dist, expected_idx = numpy_nearest(X, R, 10)
    np.testing.assert_array_equal(idx, expected_idx)
    np.testing.assert_allclose(dist, expected_dist, rtol=1e-12)


def test_a_row_gets_the_same_bits_in_any_batch_and_on_any_thread_count():
    rng = np.random.default_rng(2)
    R = rng.normal(size=(3000, 50)) + 3.0
    X = rng.normal(size=(257, 50)) + 3.0
    rows = ReferenceRows(R)
    dist, idx = rows.nearest(X, 15, block_rows=64)
    alone = [rows.nearest(X[i:i + 1], 15, block_rows=1) for i in range(0, 257, 37)]
    assert all(np.array_equal(a[0][0], dist[i]) and np.array_equal(a[1][0], idx[i])
               for a, i in zip(alone, range(0, 257, 37)))
    reversed_dist, reversed_idx = rows.nearest(X[::-1], 15, block_rows=100)
    assert np.array_equal(reversed_dist[::-1], dist) and np.array_equal(reversed_idx[::-1], idx)
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        single = rows.nearest(X, 15, block_rows=64)
    finally:
        numba.set_num_threads(threads)
    assert np.array_equal(single[0], dist) and np.array_equal(single[1], idx)


def test_the_error_bound_holds_for_every_pair():
    """What the search rests on: each float32 estimate, computed as the kernel
    computes it, lies within its bound of the exact sum (rows of mixed scales,
    far from the origin, many features)."""
    rng = np.random.default_rng(3)
    for n_features, offset in [(2, 0.0), (64, 10.0), (1000, 1e3)]:
        R = offset + rng.normal(size=(300, n_features)) * rng.uniform(0.01, 10, size=(300, 1))
        X = offset + rng.normal(size=(50, n_features)) * rng.uniform(0.01, 10, size=(50, 1))
        rows = ReferenceRows(R)
        centred = (X - rows.mean) * rows.scale
        a = np.sqrt(np.einsum("ij,ij->i", centred, centred))[:, None]
        b = rows.norms[None, :]
        products = centred.astype(np.float32) @ rows.centred32.T
        estimate = a * a + (rows.sq32[None, :] - np.float32(2.0) * products).astype(np.float64)
        c1, c2, c3 = error_bound_factors(n_features)
        direct = np.zeros_like(estimate)
        for f in range(n_features):  # the prepared rows are in the leaves' order
            direct += (X[:, f, None] - R[None, rows.order, f]) ** 2
        direct *= rows.scale ** 2
        assert np.all(np.abs(estimate - direct) <= c1 * a * b + c2 * (a + b) ** 2 + c3)


def test_the_transform_of_dense_euclidean_rows_uses_it(monkeypatch):
    """HSSNE's transform finds its neighbours through this search (and equals the
    full exact search's result)."""
    from sklearn.datasets import load_digits

    from nbembed import HSSNE

    X, _ = load_digits(return_X_y=True)
    model = HSSNE(max_iter=250, random_state=0).fit(X[:300])
    calls = []
    original = nearest_reference.ReferenceRows.nearest
    monkeypatch.setattr(nearest_reference.ReferenceRows, "nearest",
                        lambda self, *a: calls.append(a) or original(self, *a))
    placer = model._fitted_placement()
    dist, idx = placer.neighbours(X[300:400])
    assert calls
    expected_dist, expected_idx = numpy_nearest(X[300:400], X[:300], placer.n_neighbors)
    np.testing.assert_array_equal(idx, expected_idx)
    np.testing.assert_allclose(dist, np.sqrt(expected_dist), rtol=1e-12)


@pytest.mark.parametrize("n, k", [
    (40, 39),     # every other row is a neighbour: fewer chunks than k
    (300, 90),
    (1000, 5),
])
def test_the_k_nearest_of_the_rows_themselves(n, k):
    """The k-nearest-neighbour affinities search the rows among themselves: the
    point itself is dropped, and duplicated rows (ties at distance 0) go by index."""
    from nbembed.affinity.perplexity import nearest_neighbors

    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, 12)) * rng.uniform(0.1, 3.0, size=(n, 1)) + 20.0
    X[n // 2:n // 2 + 5] = X[3]
    dist, idx = nearest_neighbors(X, k, neighbors="exact")
    sq, order = numpy_nearest(X, X, k + 1)
    for i in range(n):
        keep = order[i] != i
        if keep.all():  # i not among its k + 1 nearest (ties at 0): drop the farthest
            keep[-1] = False
        np.testing.assert_array_equal(idx[i], order[i][keep][:k])
        np.testing.assert_allclose(dist[i], np.sqrt(sq[i][keep][:k]), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("values", [
    np.arange(100, dtype=np.float32),
    np.arange(100, dtype=np.float32)[::-1].copy(),
    np.zeros(57, dtype=np.float32),
    np.random.default_rng(0).integers(0, 4, 200).astype(np.float32),  # many ties
    np.random.default_rng(1).normal(size=333).astype(np.float32),
    np.array([3.0], dtype=np.float32),
])
def test_kth_smallest_equals_numpys_partition(values):
    from nbembed._kernels.nearest import kth_smallest

    scratch = np.empty_like(values)
    n = len(values)
    for kth in sorted({0, 1, n // 2, n - 2, n - 1} & set(range(n))):
        assert kth_smallest(values, n, kth, scratch) == np.partition(values, kth)[kth]
    if n > 1:  # only the first `count` values count
        assert kth_smallest(values, n - 1, 0, scratch) == values[:-1].min()


def test_leaves_partition_the_rows():
    from nbembed._nearest_reference import leaf_order

    rng = np.random.default_rng(8)
    for n, n_features in [(1000, 3), (777, 40), (129, 1), (128, 5), (5, 2)]:
        order, starts = leaf_order(rng.normal(size=(n, n_features)), 128)
        np.testing.assert_array_equal(np.sort(order), np.arange(n))
        sizes = np.diff(starts)
        assert starts[0] == 0 and starts[-1] == n
        assert sizes.max() <= 128 and (n <= 128 or sizes.min() >= 32)


def test_far_leaves_are_skipped_and_the_result_stays_exact():
    """Separated clusters: a block of one cluster's rows multiplies with that
    cluster's leaves only, and the search still equals the plain one."""
    rng = np.random.default_rng(9)
    centres = rng.normal(size=(20, 10)) * 50.0
    X = np.repeat(centres, 200, axis=0) + rng.normal(size=(4000, 10))
    rows = ReferenceRows(X)
    block = (X[:150] - rows.mean) * rows.scale
    norms = np.sqrt(np.einsum("ij,ij->i", block, block))
    assert rows._needed_columns(block, norms, 30).size <= 400  # of 4000
    assert rows._candidate_leaves(block, 30).size <= 8  # of 32 or more
    sample = rng.choice(4000, 300, replace=False)
    dist, idx = rows.nearest(X[sample], 30, block_rows=64)
    expected_dist, expected_idx = numpy_nearest(X[sample], X, 30)
    np.testing.assert_array_equal(idx, expected_idx)
    np.testing.assert_allclose(dist, expected_dist, rtol=1e-12, atol=1e-12)


def test_searches_in_several_threads_leave_blas_as_it_was():
    """Each search runs BLAS on one thread; searches that overlap in time must not
    leave it there."""
    import threading

    from threadpoolctl import threadpool_info

    def blas_threads():
        return sorted(info["num_threads"] for info in threadpool_info()
                      if info["user_api"] == "blas")

    rng = np.random.default_rng(10)
    rows = ReferenceRows(rng.normal(size=(3000, 20)))
    X = rng.normal(size=(2000, 20))
    expected = rows.nearest(X, 10, block_rows=32)  # loads every BLAS it uses
    before = blas_threads()
    results = [None] * 4

    def search(slot):
        results[slot] = rows.nearest(X, 10, block_rows=32)

    threads = [threading.Thread(target=search, args=(slot,)) for slot in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert blas_threads() == before
    for dist, idx in results:
        np.testing.assert_array_equal(idx, expected[1])
        np.testing.assert_array_equal(dist, expected[0])


@pytest.mark.parametrize("n_features", [2, 10, 50])
def test_the_rows_nearest_to_themselves_equal_numpys(n_features):
    """Blocks taken in the leaf order (no nearest-leaf search) and leaves judged
    first for the whole block: the same neighbours, clustered rows and uniform."""
    rng = np.random.default_rng(n_features)
    centres = rng.normal(size=(6, n_features)) * 6.0
    R = np.vstack([np.repeat(centres, 300, axis=0) + rng.normal(size=(1800, n_features)),
                   rng.uniform(-8, 8, size=(700, n_features))])
    rows = ReferenceRows(R)
    dist, idx = rows.nearest_to_themselves(25, block_rows=40)
    expected_dist, expected_idx = numpy_nearest(R, R, 25)
    np.testing.assert_array_equal(idx, expected_idx)
    np.testing.assert_allclose(dist, expected_dist, rtol=1e-12, atol=1e-12)
    again_dist, again_idx = rows.nearest(R, 25, block_rows=40)
    np.testing.assert_array_equal(again_idx, idx)
    np.testing.assert_array_equal(again_dist, dist)
