"""Must-links taken in a little at a time give what building them afresh gives, to the bit.

The Explorer hands the run the whole annotations after every change;
``MustLinks`` links only the groups that changed, and P~ is mixed again only in
the rows whose links changed (``mix_dense_rows``). Both are checked against
slow, obvious references: the must-link matrix built from every group at once,
and the mixing written as NumPy expressions.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import nbembed.affinity.constraints as constraints
from nbembed import Annotations
from nbembed.affinity.constraints import (MustLinks, group_links, mix_must_links,
                                          must_link_matrix)


def reference_links(n, pairs, groups):
    """u from every link at once: scipy sums repeated links, which then count once."""
    rows, cols = [], []
    for group in groups:
        g = np.unique(np.asarray(group, dtype=np.int64))
        if g.size >= 2:
            a, b = group_links(g)
            rows += [a, b]
            cols += [b, a]
    if pairs is not None and len(pairs):
        rows += [pairs[:, 0], pairs[:, 1]]
        cols += [pairs[:, 1], pairs[:, 0]]
    if not rows:
        return None
    r, c = np.concatenate(rows), np.concatenate(cols)
    u = sp.csr_matrix((np.ones(r.size), (r, c)), shape=(n, n))
    u.data[:] = 1.0
    u.sort_indices()
    return u


def reference_mixing(P, u, rho):
    """The per-point mixing as the module docstring writes it."""
    degree = np.asarray(u.sum(axis=1)).ravel()
    linked = degree > 0
    keep = np.where(linked, 1.0 - rho, 1.0)
    to_partners = sp.diags(np.where(linked, rho * P.sum(axis=1) / np.maximum(degree, 1.0),
                                    0.0)) @ u
    A = keep[:, None] * P
    coo = to_partners.tocoo()
    A[coo.row, coo.col] += coo.data
    return 0.5 * (A + A.T)


def joint(rng, n):
    P = rng.random((n, n))
    P = P + P.T
    np.fill_diagonal(P, 0.0)
    return P / P.sum()


def same_matrix(u, v):
    if u is None or v is None:
        return u is None and v is None
    return (np.array_equal(u.indptr, v.indptr) and np.array_equal(u.indices, v.indices)
            and np.array_equal(u.data, v.data))


# Groups of 2 to 80 points (the larger ones linked through the circulant graph),
# and sometimes a block of explicit pairs, changed one state at a time.
group_sets = st.lists(st.lists(st.integers(0, 119), min_size=1, max_size=80), max_size=6)
states = st.lists(st.tuples(group_sets, st.booleans()), min_size=1, max_size=8)


@settings(max_examples=60, deadline=None)
@given(states=states, seed=st.integers(0, 2**16))
def test_links_updated_state_by_state_equal_links_built_afresh(states, seed):
    n = 120
    rng = np.random.default_rng(seed)
    pairs = rng.integers(0, n, (7, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    links = MustLinks(n)
    before = None
    for groups, with_pairs in states:
        given_pairs = pairs if with_pairs else None
        changed = links.update(given_pairs, groups)
        want = reference_links(n, given_pairs, groups)
        assert same_matrix(links.matrix, want)
        # Every row that differs from the last state is among those reported.
        old = sp.csr_matrix((n, n)) if before is None else before
        new = sp.csr_matrix((n, n)) if want is None else want
        assert set(np.flatnonzero(abs(old - new).sum(axis=1))) <= set(changed.tolist())
        before = want


def test_a_group_given_twice_or_again_later_is_linked_once():
    group = np.array([3, 1, 4, 1, 5], dtype=np.int64)
    links = MustLinks(10)
    links.update(None, [group, np.unique(group)])
    assert same_matrix(links.matrix, reference_links(10, None, [group]))
    assert links.update(None, [np.unique(group)]).size == 0
    assert links.update(None, []).tolist() == [1, 3, 4, 5]
    assert links.matrix is None


def test_too_many_links_are_refused_and_the_links_stay_as_they_were(monkeypatch):
    monkeypatch.setattr(constraints, "MAX_PAIRS", 10_000)
    links = MustLinks(1000)
    links.update(None, [np.arange(100)])
    kept = links.matrix
    with pytest.raises(MemoryError, match="link fewer points"):
        links.update(None, [np.arange(100), np.arange(200, 700)])
    assert links.matrix is kept
    assert links.update(None, [np.arange(100)]).size == 0


@pytest.mark.parametrize("rho", [0.1, 0.5, 1.0])
def test_dense_mixing_equals_the_numpy_expression_to_the_bit(rho):
    rng = np.random.default_rng(0)
    n = 150  # more than one block of rows in the symmetrizing pass
    P = joint(rng, n)
    pairs = rng.integers(0, n, (40, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    u = must_link_matrix(n, pairs, [rng.choice(n, 70, replace=False), np.arange(5)])
    assert np.array_equal(mix_must_links(P, u, rho), reference_mixing(P, u, rho))


def test_dense_mixing_again_in_the_changed_rows_equals_mixing_all_to_the_bit():
    rng = np.random.default_rng(1)
    n = 200
    P = joint(rng, n)
    groups = [rng.choice(n, int(rng.integers(2, 60)), replace=False) for _ in range(12)]
    links = MustLinks(n)
    links.update(None, groups)
    mixed = mix_must_links(P, links.matrix, 0.4)
    in_place = 0
    for k in range(20):
        # Small lassos come and go, so that most updates touch few rows.
        if k % 3 == 0 and len(groups) > 1:
            groups.pop(int(rng.integers(len(groups))))
        else:
            groups.append(rng.choice(n, int(rng.integers(2, 6)), replace=False))
        changed = links.update(None, groups)
        in_place += len(changed) <= n // constraints.ROWS_MIXED_AGAIN
        again = mix_must_links(P, links.matrix, 0.4, out=mixed, rows=changed)
        assert again is mixed
        assert np.array_equal(mixed, reference_mixing(P, links.matrix, 0.4)), k
    assert in_place >= 10, "the test did not exercise the row-by-row update"


def test_the_objective_takes_annotations_a_little_at_a_time_as_if_afresh():
    from nbembed.objectives.hssne import HSSNEObjective

    rng = np.random.default_rng(2)
    n = 120
    P = joint(rng, n)
    labels = rng.integers(-1, 3, n)

    def objective():
        return HSSNEObjective(P, None, n_components=2, alpha=1.0, rho=0.5,
                              dtype=np.float32)

    live = objective()
    ann = Annotations(n)
    for k in range(12):
        if k % 4 == 3:
            ann.undo()
        elif k % 4 == 2:
            ann.set_labels(rng.choice(n, 5, replace=False), int(rng.integers(3)))
        else:
            ann.add_must_link(rng.choice(n, int(rng.integers(2, 8)), replace=False))
        live.set_annotations(ann, labels)
        fresh = objective()
        fresh.set_annotations(ann, labels)
        assert same_matrix(live.links, fresh.links)
        assert np.array_equal(live.P_mixed, fresh.P_mixed)
        assert np.array_equal(live._P_in(np.float32), fresh._P_in(np.float32))
        Y = rng.normal(size=(2, n))
        assert live.value(Y) == fresh.value(Y)


def sparse_joint(rng, n, k):
    """A symmetric sparse P with about 2k entries a row, summing to one."""
    rows = np.repeat(np.arange(n), k)
    cols = rng.integers(0, n, n * k)
    W = sp.csr_matrix((rng.random(n * k), (rows, cols)), shape=(n, n))
    W.setdiag(0.0)
    W.eliminate_zeros()
    P = W + W.T
    return sp.csr_matrix(P / P.sum())


@pytest.mark.parametrize("mixing", ["per-point", "global"])
@pytest.mark.parametrize("rho", [0.3, 1.0])
def test_sparse_mixing_equals_the_scipy_expression_to_the_bit(mixing, rho):
    rng = np.random.default_rng(3)
    n = 300
    P = sparse_joint(rng, n, 6)
    pairs = rng.integers(0, n, (50, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    u = must_link_matrix(n, pairs, [rng.choice(n, 90, replace=False), np.arange(4)])
    if mixing == "global":
        want = (1.0 - rho) * P + (rho / u.sum()) * u
    else:
        degree = np.asarray(u.sum(axis=1)).ravel()
        linked = degree > 0
        keep = np.where(linked, 1.0 - rho, 1.0)
        per_link = np.where(linked, rho * np.asarray(P.sum(axis=1)).ravel()
                            / np.maximum(degree, 1.0), 0.0)
        A = sp.diags(keep) @ P + sp.diags(per_link) @ u
        want = (A + A.T) * 0.5
    got = mix_must_links(P, u, rho, mixing)
    assert sp.isspmatrix_csr(got) and got.has_sorted_indices
    assert got.dtype == np.float64
    assert np.array_equal(got.toarray(), want.toarray())
    # Its pattern is the union of P's and u's (stored zeros of rho = 1 included).
    pattern = (abs(P) + abs(u)).tocsr()
    pattern.sort_indices()
    assert np.array_equal(got.indptr, pattern.indptr)
    assert np.array_equal(got.indices, pattern.indices)


def test_sparse_mixing_keeps_single_precision_rounded_once():
    rng = np.random.default_rng(4)
    n = 200
    P64 = sparse_joint(rng, n, 5)
    P32 = P64.astype(np.float32)
    u = must_link_matrix(n, None, [rng.choice(n, 70, replace=False)])
    got = mix_must_links(P32, u, 0.5)
    assert got.dtype == np.float32
    keep, per_link, u = constraints._per_point_shares(P32, u, 0.5)
    A = sp.diags(keep) @ P32.astype(np.float64) + sp.diags(per_link) @ u
    want = sp.csr_matrix((A + A.T) * 0.5)
    want.sort_indices()
    assert np.array_equal(got.indices, want.indices)
    assert np.array_equal(got.data, want.data.astype(np.float32))
    # Linked rows keep their mass: each row of P~ sums as P's does, up to the symmetrizing.
    np.testing.assert_allclose(got.sum(), 1.0, rtol=1e-5)


def test_sparse_mixing_into_rooms_reuses_them_and_gives_the_same_matrix():
    from nbembed._memory import Room

    rng = np.random.default_rng(5)
    n = 250
    P = sparse_joint(rng, n, 6).astype(np.float32)
    rooms = (Room(), Room(), Room())
    groups = [rng.choice(n, 60, replace=False)]
    first = mix_must_links(P, must_link_matrix(n, None, groups), 0.5, rooms=rooms)
    first_nnz = first.nnz  # first's arrays are overwritten by the next mixing
    groups.append(rng.choice(n, 5, replace=False))  # a few more entries: fits the room's slack
    u = must_link_matrix(n, None, groups)
    second = mix_must_links(P, u, 0.5, rooms=rooms)
    want = mix_must_links(P, u, 0.5)
    assert second.nnz > first_nnz
    for got, expected in ((second.indptr, want.indptr), (second.indices, want.indices),
                          (second.data, want.data)):
        assert got.dtype == expected.dtype and np.array_equal(got, expected)
    assert np.shares_memory(second.data, first.data)
    assert np.shares_memory(second.indices, first.indices)
    # Much larger: new memory, the same result.
    big = must_link_matrix(n, None, [np.arange(n)])
    third = mix_must_links(P, big, 0.5, rooms=rooms)
    assert not np.shares_memory(third.data, first.data)
    assert same_matrix(third, mix_must_links(P, big, 0.5))


def test_a_large_run_keeps_its_spatial_order_and_memory_over_a_must_link_change(monkeypatch):
    """After a lasso the spatial order stays (P~ changed, not the map) and its copy of
    P~ is made again in the same memory, equal to one made afresh in that order."""
    from nbembed._kernels.locality import permute_csr
    from nbembed.objectives import hssne as hssne_module

    monkeypatch.setattr(hssne_module, "LOCAL_ORDER_MIN_N", 200)
    rng = np.random.default_rng(6)
    n = 400
    P = sparse_joint(rng, n, 8).astype(np.float32)
    objective = hssne_module.HSSNEObjective(P, None, n_components=2, alpha=1.0, rho=0.5,
                                            dtype=np.float32, repulsion="fft")
    Yt = rng.normal(size=(2, n)).astype(np.float32)
    grad = np.empty_like(Yt)
    annotations = Annotations(n)
    annotations.add_must_link(rng.choice(n, 30, replace=False))
    objective.set_annotations(annotations)  # the first links: P~ no longer P itself
    objective.gradient(Yt, grad)
    before = objective._local
    annotations.add_must_link(rng.choice(n, 4, replace=False))
    objective.iteration = 1
    objective.set_annotations(annotations)
    objective.gradient(Yt, grad)
    after = objective._local
    assert after.order is before.order and after.since == before.since
    assert np.shares_memory(after.data, before.data)
    expected = permute_csr(objective.P_mixed.indptr, objective.P_mixed.indices,
                           objective.P_mixed.data, before.order)
    for got, want in zip((after.indptr, after.indices, after.data), expected):
        assert np.array_equal(got, want)
    fresh = mix_must_links(P, objective.links, 0.5)
    assert same_matrix(objective.P_mixed, fresh)
    assert np.array_equal(objective.P_mixed.data, fresh.data)


def test_prepared_annotations_change_nothing_until_applied_and_then_equal_set_annotations():
    """``prepare_annotations`` (what the Explorer runs in a thread of its own for a
    large run) leaves the links and P~ in use alone; applying its results in order
    gives what ``set_annotations`` of the last annotations gives, to the bit."""
    from nbembed.objectives.hssne import HSSNEObjective

    rng = np.random.default_rng(7)
    n = 300
    P = sparse_joint(rng, n, 6).astype(np.float32)

    def objective():
        return HSSNEObjective(P, None, n_components=2, alpha=1.0, rho=0.5,
                              dtype=np.float32, repulsion="fft")

    live, fresh = objective(), objective()
    annotations = Annotations(n)
    applies = []
    for size in (40, 3, 25):
        annotations.add_must_link(rng.choice(n, size, replace=False))
        links, mixed = live.links, live.P_mixed
        applies.append(live.prepare_annotations(annotations.copy()))
        assert live.links is links and live.P_mixed is mixed
    assert live.prepare_annotations(annotations.copy()) is None  # nothing new
    for apply in applies:
        apply()
    fresh.set_annotations(annotations)
    assert same_matrix(live.links, fresh.links)
    assert same_matrix(live.P_mixed, fresh.P_mixed)
    Yt = rng.normal(size=(2, n))
    assert live.value(Yt) == fresh.value(Yt)


def _large_run_pair(monkeypatch, rng, n=400):
    """Two equal HSSNE objectives treated as large runs (spatial order, annotations
    worked out aside), each with its spatial order made at the same embedding."""
    from nbembed.objectives import hssne as hssne_module

    monkeypatch.setattr(hssne_module, "LOCAL_ORDER_MIN_N", n // 2)
    monkeypatch.setattr(hssne_module, "ANNOTATIONS_ASIDE_MIN_N", n // 2)
    P = sparse_joint(rng, n, 8).astype(np.float32)
    Yt = rng.normal(size=(2, n)).astype(np.float32)
    pair = []
    for _ in range(2):
        objective = hssne_module.HSSNEObjective(P, None, n_components=2, alpha=1.0, rho=0.5,
                                                dtype=np.float32, repulsion="fft")
        objective.gradient(Yt, np.empty_like(Yt))
        pair.append(objective)
    assert pair[0].annotations_aside and pair[0]._local is not None
    return pair, Yt


def _assert_same_run(live, fresh, Yt):
    """P~, its spatial-order copy, the cost and the gradient are the same to the bit."""
    from nbembed._kernels.locality import permute_csr

    assert same_matrix(live.P_mixed, fresh.P_mixed)
    assert np.array_equal(live.P_mixed.data, fresh.P_mixed.data)
    grads = [np.empty_like(Yt), np.empty_like(Yt)]
    live.gradient(Yt, grads[0])
    fresh.gradient(Yt, grads[1])
    assert np.array_equal(grads[0], grads[1])
    assert live.value(Yt) == fresh.value(Yt)
    local = live._local
    expected = permute_csr(fresh.P_mixed.indptr, fresh.P_mixed.indices, fresh.P_mixed.data,
                           local.order)
    for got, want in zip((local.indptr, local.indices, local.data), expected):
        assert np.array_equal(got, want)


def test_a_large_run_takes_up_the_p_mixed_aside_as_set_annotations_makes_it(monkeypatch):
    """P~ and its spatial-order copy, made by ``prepare_annotations`` in new memory,
    leave the run alone until applied; then the run has them without mixing or
    permuting again, equal to what ``set_annotations`` makes."""
    rng = np.random.default_rng(8)
    (live, fresh), Yt = _large_run_pair(monkeypatch, rng)
    annotations = Annotations(live.n_samples)
    for size in (60, 5):
        annotations.add_must_link(rng.choice(live.n_samples, size, replace=False))
        mixed, local = live.P_mixed, live._local
        apply = live.prepare_annotations(annotations.copy())
        assert live.P_mixed is mixed and live._local is local
        apply()
        assert not live._local_is_stale  # taken up: nothing left to permute
        assert live._local.order is local.order
        assert not np.shares_memory(live._local.data, local.data)
        fresh.set_annotations(annotations)
        _assert_same_run(live, fresh, Yt)


def test_a_large_run_mixes_again_when_rho_or_the_order_changed_meanwhile(monkeypatch):
    """What was made aside for an older rho or spatial order is not used."""
    rng = np.random.default_rng(9)
    (live, fresh), Yt = _large_run_pair(monkeypatch, rng)
    annotations = Annotations(live.n_samples)
    annotations.add_must_link(rng.choice(live.n_samples, 50, replace=False))
    apply = live.prepare_annotations(annotations.copy())
    live.set_params(rho=0.8)
    apply()
    fresh.set_params(rho=0.8)
    fresh.set_annotations(annotations)
    _assert_same_run(live, fresh, Yt)

    annotations.add_must_link(rng.choice(live.n_samples, 20, replace=False))
    apply = live.prepare_annotations(annotations.copy())
    moved = Yt[:, ::-1].copy()  # the points elsewhere: a new spatial order
    for objective in (live, fresh):
        objective.iteration += 10**6
        objective.gradient(moved, np.empty_like(moved))
    before = live._local.order
    apply()
    assert live._local_is_stale
    fresh.set_annotations(annotations)
    _assert_same_run(live, fresh, moved)
    assert live._local.order is before


def test_the_work_aside_calls_no_parallel_kernel(monkeypatch):
    """A parallel kernel entered beside the run's could abort the process (Numba's
    default threading layer) or wait on its lock."""
    from nbembed._kernels import locality

    rng = np.random.default_rng(10)
    (live, _), _ = _large_run_pair(monkeypatch, rng)

    def refuse(*args):
        raise AssertionError("a parallel kernel was called aside")

    for module, name in ((constraints, "mix_sparse"), (constraints, "merged_row_lengths"),
                         (locality, "_permute_csr_into")):
        monkeypatch.setattr(module, name, refuse)
    annotations = Annotations(live.n_samples)
    annotations.add_must_link(rng.choice(live.n_samples, 40, replace=False))
    apply = live.prepare_annotations(annotations.copy())
    apply()
    assert not live._local_is_stale


def test_without_memory_for_a_second_p_mixed_a_large_run_mixes_when_applied(monkeypatch):
    from nbembed.objectives import hssne as hssne_module

    rng = np.random.default_rng(11)
    (live, fresh), Yt = _large_run_pair(monkeypatch, rng)
    monkeypatch.setattr(hssne_module, "available_bytes", lambda: 1000)
    annotations = Annotations(live.n_samples)
    annotations.add_must_link(rng.choice(live.n_samples, 50, replace=False))
    apply = live.prepare_annotations(annotations.copy())
    apply()
    assert live._local_is_stale  # mixed in the run: its copy is made again when next used
    fresh.set_annotations(annotations)
    _assert_same_run(live, fresh, Yt)


def test_a_run_given_annotations_finds_the_neighbours_groups_take_in_before_the_first_lasso():
    """The Explorer prepares every run with annotations (empty at first): the
    strongest neighbours are found then, with the parallel kernel, and the first
    lasso does not wait for them; a fit without labels or annotations does not
    look for them, nor does must_link_neighbors=0."""
    from sklearn.datasets import load_iris

    from nbembed import HSSNE
    from nbembed.affinity.constraints import strongest_neighbors

    X, _ = load_iris(return_X_y=True)
    run = HSSNE(max_iter=10, random_state=0).prepare(X, annotations=Annotations(len(X)))
    np.testing.assert_array_equal(run.objective._neighbor_index,
                                  strongest_neighbors(run.objective.P, 5))
    assert HSSNE(max_iter=10, random_state=0).prepare(X).objective._neighbor_index is None
    alone = HSSNE(max_iter=10, random_state=0, must_link_neighbors=0).prepare(
        X, annotations=Annotations(len(X)))
    assert alone.objective._neighbor_index is None
