"""Spatial order of the points for large approximate runs."""

import numpy as np
import pytest
import scipy.sparse as sp

from nbembed import HSSNE
from nbembed._kernels import locality
from nbembed.objectives import hssne as hssne_module


def test_morton_order_follows_the_z_curve():
    # A 4 x 4 grid: the Z-order visits each 2 x 2 quadrant before the next.
    x, y = np.meshgrid(np.arange(4.0), np.arange(4.0), indexing="ij")
    Yt = np.vstack([x.ravel(), y.ravel()])
    shuffled = np.random.default_rng(0).permutation(16)
    order = locality.morton_order(Yt[:, shuffled])
    visited = [tuple(p) for p in Yt[:, shuffled][:, order].T.astype(int)]
    # Each 2 x 2 quadrant is visited whole before the next, in the same Z
    # pattern as the points inside it (x is the lower bit).
    quadrants = [(px // 2, py // 2) for px, py in visited]
    z_pattern = [(0, 0), (1, 0), (0, 1), (1, 1)]
    assert quadrants == [q for q in z_pattern for _ in range(4)]
    assert visited[:4] == z_pattern

def test_morton_order_of_a_line_is_the_sorted_order():
    values = np.random.default_rng(1).normal(size=(1, 50))
    np.testing.assert_array_equal(locality.morton_order(values), np.argsort(values[0]))


def test_permute_csr_matches_scipy(rng):
    P = sp.random(60, 60, density=0.1, random_state=3, format="csr")
    order = rng.permutation(60)
    indptr, indices, data = locality.permute_csr(P.indptr, P.indices, P.data, order)
    assert indptr.dtype == P.indptr.dtype and indices.dtype == P.indices.dtype
    assert data.dtype == np.float32
    ours = sp.csr_matrix((data, indices, indptr), shape=P.shape)
    expected = P[order][:, order]
    np.testing.assert_array_equal(ours.toarray(), expected.toarray().astype(np.float32))


@pytest.mark.parametrize("repulsion", ["barnes-hut", "fft"])
def test_the_spatial_order_changes_no_result(monkeypatch, repulsion):
    """Gradient and cost are the same sums in another order; the runs agree."""
    X = np.random.default_rng(0).normal(size=(700, 6))
    params = dict(affinity="knn", repulsion=repulsion, max_iter=120, early_exaggeration_iter=40,
                  random_state=0)
    plain = HSSNE(**params).prepare(X)
    monkeypatch.setattr(hssne_module, "LOCAL_ORDER_MIN_N", 500)
    monkeypatch.setattr(hssne_module, "REORDER_EVERY", 30)
    local = HSSNE(**params).prepare(X)
    plain.step(60)
    local.step(60)
    order = local.objective._local
    # Renewed at 0 and 30 by the gradient, at 60 by the cost recorded after the
    # last step (the next gradient, at the same embedding, reuses its repulsion).
    assert order is not None and order.since == 60
    assert not np.array_equal(order.order, np.arange(700))
    np.testing.assert_allclose(local.embedding, plain.embedding, rtol=1e-6,
                               atol=1e-6 * np.ptp(plain.embedding))
    # P's values are single precision in the local copy.
    assert local.cost == pytest.approx(plain.cost, rel=1e-7)
    grads = []
    for run in (plain, local):
        grad = np.empty_like(run._Yt)
        a_rowsum = run._gradient(plain._Yt, 1.0, grad)
        grads.append((grad, a_rowsum))
    np.testing.assert_allclose(grads[1][0], grads[0][0], rtol=1e-6,
                               atol=1e-7 * np.abs(grads[0][0]).max())
    np.testing.assert_allclose(grads[1][1], grads[0][1], rtol=1e-6)


def test_a_run_in_the_local_order_keeps_no_single_precision_copy_in_the_data_order(
        monkeypatch):
    """A large run with float32 kernels stores P~ in single precision and holds
    besides it only its locally ordered copy; a small one keeps P~ in float64
    (the cost) and reads a float32 copy in the data's order."""
    X = np.random.default_rng(0).normal(size=(700, 6))
    params = dict(affinity="knn", repulsion="fft", dtype="float32", max_iter=60,
                  early_exaggeration_iter=20, random_state=0)
    small = HSSNE(**params).prepare(X)
    small.step(5)
    assert small.objective.P.dtype == np.float64
    assert small.objective._local is None and small.objective._P_cast.dtype == np.float32
    monkeypatch.setattr(hssne_module, "LOCAL_ORDER_MIN_N", 500)
    large = HSSNE(**params).prepare(X)
    large.run()
    assert large.objective.P.dtype == np.float32
    assert large.objective._local is not None and large.objective._P_cast is None
    assert large.objective._local.data.dtype == np.float32
    # The same P~, rounded once to single precision.
    np.testing.assert_array_equal(large.objective.P.indices, small.objective.P.indices)
    np.testing.assert_allclose(large.objective.P.data, small.objective.P.data, rtol=6e-8)
    # Kernels in float64 keep P~ in float64 whatever the size.
    assert HSSNE(**dict(params, dtype="float64")).prepare(X).objective.P.dtype == np.float64


def test_the_sum_of_p_log_p_in_pieces_is_the_whole_sum(monkeypatch):
    P = sp.random(300, 300, density=0.1, random_state=0, format="csr")
    P.data[::7] = 0.0  # stored zeros count as 0 log 0 = 0
    positive = P.data[P.data > 0]
    whole = float(np.sum(positive * np.log(positive)))
    monkeypatch.setattr(hssne_module, "P_LOG_P_PIECE", 100)
    assert hssne_module._p_log_p(P) == pytest.approx(whole, rel=1e-12)


def test_a_renewal_at_the_cost_leaves_the_next_gradient_its_repulsion(monkeypatch):
    """The cost recorded after a step renews a spatial order that is due, so the
    next gradient, at the same embedding and in the same order, reuses the
    repulsion the cost computed instead of computing it again."""
    X = np.random.default_rng(0).normal(size=(700, 6))
    monkeypatch.setattr(hssne_module, "LOCAL_ORDER_MIN_N", 500)
    monkeypatch.setattr(hssne_module, "REORDER_EVERY", 30)
    run = HSSNE(affinity="knn", repulsion="fft", max_iter=120, early_exaggeration_iter=40,
                random_state=0).prepare(X)
    run.step(60)  # the cost recorded after iteration 60 renews the order
    assert run.objective._local.since == 60
    calls = []
    original = hssne_module.HSSNEObjective._approximate_repulsion

    def counted(self, Yt, repulsion=None):
        calls.append(self.iteration)
        return original(self, Yt, repulsion)

    monkeypatch.setattr(hssne_module.HSSNEObjective, "_approximate_repulsion", counted)
    run.step(1)
    assert calls == [61]  # the cost after this step only; its gradient took the cost's


@pytest.mark.parametrize("pieces", [1, 3, 8, 1000])
def test_a_permutation_in_pieces_ends_as_the_whole_one(pieces):
    rng = np.random.default_rng(pieces)
    P = sp.random(300, 300, density=0.05, format="csr", random_state=pieces)
    order = rng.permutation(300)
    whole = locality.permute_csr(P.indptr, P.indices, P.data, order)
    in_pieces = locality.PermutationInPieces(P.indptr, P.indices, P.data, order, pieces)
    calls = 0
    while not in_pieces.done:
        in_pieces.advance()
        calls += 1
    assert calls == pieces
    for ours, expected in zip((in_pieces.indptr, in_pieces.indices, in_pieces.data), whole):
        np.testing.assert_array_equal(ours, expected)
    assert in_pieces.data.dtype == np.float32 and in_pieces.advance()


def _live_and_plain(monkeypatch, X, **params):
    monkeypatch.setattr(hssne_module, "LOCAL_ORDER_MIN_N", 500)
    monkeypatch.setattr(hssne_module, "REORDER_EVERY", 30)
    monkeypatch.setattr(hssne_module, "RENEWAL_PIECES", 4)
    params = dict(affinity="knn", repulsion="fft", max_iter=120, early_exaggeration_iter=40,
                  random_state=0, **params)
    live = HSSNE(**params).prepare(X)
    live.prefer_even_steps()
    return live, HSSNE(**params).prepare(X)


def test_a_live_run_spreads_the_renewal_of_its_order_over_gradients(monkeypatch):
    X = np.random.default_rng(0).normal(size=(700, 6))
    live, plain = _live_and_plain(monkeypatch, X)
    assert live.objective.spread_renewals and not plain.objective.spread_renewals
    seen = []  # (iteration, the order's since, a renewal under way) after each step
    for _ in range(40):
        live.step(1, record_last=False)
        seen.append((live.iteration, live.objective._local.since,
                     live.objective._renewal is not None))
    # The first order is made at once. The one due at iteration 30 is not begun by
    # the cost recorded there but by the next gradient, and copied in 4 pieces, the
    # last with the gradient of iteration 33; from then on the run reads it.
    assert [s for s in seen if 30 <= s[0] <= 35] == [
        (30, 0, False), (31, 0, True), (32, 0, True), (33, 0, True), (34, 30, False),
        (35, 30, False)]
    plain.step(40, record_last=False)
    np.testing.assert_allclose(live.embedding, plain.embedding, rtol=1e-6,
                               atol=1e-6 * np.ptp(plain.embedding))


def test_a_must_link_change_drops_a_renewal_under_way(monkeypatch):
    X = np.random.default_rng(0).normal(size=(700, 6))
    live, _ = _live_and_plain(monkeypatch, X)
    live.step(33, record_last=False)
    assert live.objective._renewal is not None
    live.set_annotations(y=np.where(np.arange(700) < 20, np.arange(700) % 2, -1))
    assert live.objective._renewal is None  # it copied the P~ of before
    live.step(3, record_last=False)
    local = live.objective._local
    P = live.objective.P_mixed
    expected = locality.permute_csr(P.indptr, P.indices, P.data, local.order)
    for ours, whole in zip((local.indptr, local.indices, local.data), expected):
        np.testing.assert_array_equal(ours, whole)


def test_without_memory_for_a_second_copy_a_live_run_renews_at_once(monkeypatch):
    X = np.random.default_rng(0).normal(size=(700, 6))
    live, _ = _live_and_plain(monkeypatch, X)
    monkeypatch.setattr(hssne_module, "available_bytes", lambda: 0)
    live.step(31, record_last=False)
    assert live.objective._renewal is None and live.objective._local.since == 30
