"""Must-link groups and cannot-linked selections cost memory in their size, not its square."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from nbembed import HSSNE, SSDNE, Annotations
from nbembed.affinity.constraints import (GROUP_PARTNERS, cross_links, group_links,
                                          must_link_matrix, must_links_from,
                                          spectral_link_pairs)


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
