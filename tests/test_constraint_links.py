"""Must-link groups and cannot-linked selections cost memory in their size, not its square."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from nbembed import HSSNE, SSDNE, Annotations
from nbembed.affinity.constraints import (GROUP_PARTNERS, cross_links, group_links,
                                          must_link_matrix, must_links_from,
                                          semi_supervised_groups, spectral_link_pairs,
                                          strongest_neighbors)


@pytest.mark.parametrize("g", [2, 3, 30, GROUP_PARTNERS + 1])
def test_a_small_group_is_linked_pairwise(g):
    group = np.arange(5, 5 + g, dtype=np.int64)
    a, b = group_links(group)
    pairs = {tuple(sorted(p)) for p in zip(a.tolist(), b.tolist())}
    assert len(pairs) == len(a) == g * (g - 1) // 2


@pytest.mark.parametrize("g", [GROUP_PARTNERS + 2, 101, 1000, 4097])
def test_a_large_group_gives_every_point_the_same_number_of_distinct_partners(g):
    rng = np.random.default_rng(g)
    group = np.sort(rng.choice(10 * g, g, replace=False)).astype(np.int64)
    a, b = group_links(group)
    assert np.all(a != b)
    assert np.isin(a, group).all() and np.isin(b, group).all()
    u = must_link_matrix(10 * g, groups=[group])
    assert (u.data == 1).all(), "a pair was linked twice"
    degree = np.asarray(u.sum(axis=1)).ravel()
    assert set(degree[group].tolist()) == {2 * (GROUP_PARTNERS // 2)}
    assert degree.sum() == degree[group].sum()
    sub = u[group][:, group]
    assert connected_components(sub, directed=False)[0] == 1


def test_group_links_depend_only_on_the_group():
    group = np.arange(0, 3000, 3, dtype=np.int64)
    first, again = group_links(group), group_links(group.copy())
    assert all(np.array_equal(x, y) for x, y in zip(first, again))
    other = group_links(group + 1)
    assert not np.array_equal(first[1] + 1, other[1])


def test_a_lasso_of_most_points_builds_links_linear_in_its_size():
    n, g = 30_000, 20_000
    ann = Annotations(n)
    ann.add_must_link(np.arange(g))
    u = must_links_from(None, ann, n)
    assert u.nnz == g * 2 * (GROUP_PARTNERS // 2)
    assert ann.must_link_pairs(groups=False).shape == (0, 2)


def test_a_large_labelled_class_is_linked_like_a_lasso_of_it():
    n = 2000
    y = np.full(n, -1)
    y[:800] = 0
    ann = Annotations(n)
    ann.add_must_link(np.arange(800))
    from_labels = must_links_from(y, None, n)
    from_lasso = must_links_from(None, ann, n)
    assert (from_labels != from_lasso).nnz == 0


def test_small_cross_links_are_every_pair():
    i, j = cross_links(np.array([0, 1, 2]), np.array([7, 9]))
    assert sorted(zip(i.tolist(), j.tolist())) == [(0, 7), (0, 9), (1, 7), (1, 9), (2, 7), (2, 9)]


def test_large_cross_links_are_bounded_and_touch_every_point():
    a = np.arange(0, 20_000, dtype=np.int64)
    b = np.arange(20_000, 50_000, dtype=np.int64)
    i, j = cross_links(a, b)
    assert len(i) == (len(a) + len(b)) * (GROUP_PARTNERS // 2)
    assert np.isin(i, a).all() and np.isin(j, b).all()
    assert np.array_equal(np.unique(np.concatenate([i, j])), np.concatenate([a, b]))


def test_spectral_pairs_keep_explicit_pairs_and_bound_groups():
    n = 5000
    ann = Annotations(n)
    ann.add_must_link(np.arange(3000))
    ann.add_must_link_pairs([[4000, 4001]])
    ann.add_cannot_link(np.arange(3000, 3500), np.arange(3500, 4000))
    ann.add_cannot_link_pairs([[4002, 4003]])
    must, cannot = spectral_link_pairs(ann)
    assert [4000, 4001] in must.tolist() and [4002, 4003] in cannot.tolist()
    assert len(must) == 1 + 3000 * (GROUP_PARTNERS // 2)
    assert len(cannot) == 1 + 1000 * (GROUP_PARTNERS // 2)
    assert ann.cannot_link_pairs(groups=False).tolist() == [[4002, 4003]]
    assert len(ann.cannot_link_groups()) == 1


def test_methods_fit_with_a_must_link_group_of_most_points():
    rng = np.random.default_rng(0)
    n = 3000
    X = np.concatenate([rng.normal(0, 1, (n // 2, 5)), rng.normal(4, 1, (n // 2, 5))])
    ann = Annotations(n)
    ann.add_must_link(np.arange(0, n, 2))
    ann.add_cannot_link(np.arange(1, 200, 2), np.arange(n - 199, n, 2))
    Y = HSSNE(max_iter=60, random_state=0).fit_transform(X, annotations=ann)
    assert np.isfinite(Y).all()
    ann.set_labels(np.arange(0, 40), 0)
    ann.set_labels(np.arange(n - 40, n), 1)
    Z = SSDNE(n_components=2).fit_transform(X, annotations=ann)
    assert np.isfinite(Z).all()


def test_a_must_link_matrix_beyond_the_entry_limit_is_refused(monkeypatch):
    import nbembed.affinity.constraints as constraints

    monkeypatch.setattr(constraints, "MAX_PAIRS", 10_000)
    with pytest.raises(MemoryError, match="link fewer points"):
        constraints.must_link_matrix(1000, groups=[np.arange(500)])
    assert sp.issparse(constraints.must_link_matrix(1000, groups=[np.arange(100)]))


def strongest_by_sorting(P, k):
    """The slow, obvious reference of strongest_neighbors: sort each row."""
    P = P.toarray() if sp.issparse(P) else np.array(P)
    n = P.shape[0]
    out = np.full((n, k), -1, dtype=np.int64)
    for i in range(n):
        columns = np.flatnonzero((P[i] > 0) & (np.arange(n) != i))
        chosen = columns[np.lexsort((columns, -P[i, columns]))][:k]
        out[i, :chosen.size] = chosen
    return out


@pytest.mark.parametrize("parallel", [True, False])
@pytest.mark.parametrize("k", [1, 5, 12])
def test_strongest_neighbors_against_sorting(rng, parallel, k):
    n = 120
    A = sp.random(n, n, density=0.06, random_state=3, format="csr")
    A = (A + A.T).tocsr()
    A.data[::7] = 0.0  # stored zeros are not neighbours
    A.setdiag(1.0)  # nor is the point itself
    ties = A.data[3::5]
    A.data[1:1 + 5 * ties.size:5] = ties  # ties go to the smaller column
    A.sort_indices()
    row = slice(A.indptr[5], A.indptr[6])
    A.data[row] = np.where(A.indices[row] == 5, 1.0, 0.0)  # a row with no neighbour
    reference = strongest_by_sorting(A, k)
    assert (reference == -1).any(), "some row should have fewer than k neighbours"
    np.testing.assert_array_equal(strongest_neighbors(A, k, parallel=parallel), reference)
    dense = A.toarray().astype(np.float32)
    np.testing.assert_array_equal(strongest_neighbors(dense, k, parallel=parallel),
                                  strongest_by_sorting(dense, k))
    shuffled = A.copy()  # unsorted column indices give the same answer
    for i in range(n):
        lo, hi = shuffled.indptr[i], shuffled.indptr[i + 1]
        order = rng.permutation(hi - lo)
        shuffled.indices[lo:hi] = shuffled.indices[lo:hi][order]
        shuffled.data[lo:hi] = shuffled.data[lo:hi][order]
    shuffled.has_sorted_indices = False
    np.testing.assert_array_equal(strongest_neighbors(shuffled, k, parallel=parallel), reference)


def test_groups_take_in_their_members_neighbours_and_pairs_do_not():
    n = 14
    neighbors = np.full((n, 2), -1, dtype=np.int64)
    neighbors[0] = [5, 12]
    neighbors[1] = [6, 9]
    neighbors[5] = [0, 13]   # mutual with 0: taken in
    neighbors[6] = [1, 13]   # mutual with 1: taken in
    neighbors[9] = [1, 11]   # mutual with 1, but 11 of the other class is among its own
    neighbors[12] = [0, 10]  # mutual with 0, and next to 10 of the other class too
    neighbors[10] = [11, 7]
    neighbors[7] = [8, 13]   # 10's neighbour, but 10 is not 7's: left out
    neighbors[11] = [10, 4]
    neighbors[4] = [11, 3]   # mutual with 11, but linked by a pair: left out
    neighbors[2] = [8, 3]
    neighbors[8] = [2, 13]   # mutual with a lone labelled point, which links nothing
    y = np.full(n, -1)
    y[[0, 1]] = 0
    y[[10, 11]] = 1
    y[2] = 2
    ann = Annotations(n)
    ann.add_must_link_pairs(np.array([[3, 4]]))
    pairs, groups = semi_supervised_groups(y, ann, n, neighbors)
    assert [g.tolist() for g in groups] == [[0, 1, 5, 6], [10, 11]]
    assert pairs.tolist() == [[3, 4]]
    u = must_links_from(y, ann, n, neighbors).toarray()
    expected = np.zeros((n, n))
    expected[np.ix_([0, 1, 5, 6], [0, 1, 5, 6])] = 1
    expected[np.ix_([10, 11], [10, 11])] = 1
    expected[3, 4] = expected[4, 3] = 1
    np.fill_diagonal(expected, 0)
    np.testing.assert_array_equal(u, expected)
    without = semi_supervised_groups(y, ann, n, neighbors[:, :0])[1]
    assert [g.tolist() for g in without] == [[0, 1], [10, 11]]
