"""Finite-difference checks of every objective's gradient through the run objects."""

import numpy as np
import pytest
import scipy.sparse as sp

import reference as ref
from nbembed.affinity import must_link_matrix
from nbembed.objectives import HSSNEObjective, SNEObjective



def finite_difference(cost, Y, eps=1e-6):
    grad = np.zeros_like(Y)
    for idx in np.ndindex(*Y.shape):
        up, down = Y.copy(), Y.copy()
        up[idx] += eps
        down[idx] -= eps
        grad[idx] = (cost(up) - cost(down)) / (2 * eps)
    return grad


def _gradient(objective, Y):
    Yt = np.ascontiguousarray(Y.T)
    grad = np.empty_like(Yt)
    objective.gradient(Yt, grad)
    return grad.T


def _cost(objective, Y):
    return objective.value(np.ascontiguousarray(Y.T))


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0, 2.0, 1.5])
@pytest.mark.parametrize("rho, mixing", [(0.0, "per-point"), (0.3, "per-point"),
                                         (1.0, "per-point"), (0.3, "global"), (1.0, "global")])
@pytest.mark.parametrize("sparse", [False, True])
def test_hssne_gradient_by_finite_differences(rng, alpha, rho, mixing, sparse):
    n = 24
    X = rng.normal(size=(n, 4))
    P = ref.joint_probabilities(X, 6.0)
    if sparse:
        P[P < np.quantile(P, 0.6)] = 0
        P = sp.csr_matrix(P / P.sum())
    U = must_link_matrix(n, pairs=np.array([[0, 1], [2, 5], [7, 3]]), groups=[[10, 11, 12]])
    Y = rng.normal(size=(n, 2))
    objective = HSSNEObjective(P, U, n_components=2, alpha=alpha, rho=rho,
                               must_link_mixing=mixing)
    numeric = finite_difference(lambda Z: _cost(objective, Z), Y)
    np.testing.assert_allclose(_gradient(objective, Y), numeric, rtol=1e-5, atol=1e-8)


def _mixed_by_hand(P, u, rho, mixing):
    """The two mixing rules written out with dense matrices."""
    if mixing == "global":
        return (1 - rho) * P + rho * u / u.sum()
    A = P.copy()
    for i in range(len(P)):
        deg = u[i].sum()
        if deg:
            A[i] = (1 - rho) * P[i] + rho * P[i].sum() * u[i] / deg
    return (A + A.T) / 2


@pytest.mark.parametrize("mixing", ["per-point", "global"])
@pytest.mark.parametrize("sparse", [False, True])
def test_hssne_cost_uses_the_mixed_p(rng, mixing, sparse):
    n = 20
    P = ref.joint_probabilities(rng.normal(size=(n, 3)), 5.0)
    links = must_link_matrix(n, pairs=np.array([[0, 1], [4, 9], [4, 2]]))
    Y = rng.normal(size=(n, 2))
    given = sp.csr_matrix(P) if sparse else P
    objective = HSSNEObjective(given, links, n_components=2, alpha=1.0, rho=0.4,
                               must_link_mixing=mixing)
    mixed = _mixed_by_hand(P, links.toarray(), 0.4, mixing)
    assert mixed.sum() == pytest.approx(1.0)
    assert _cost(objective, Y) == pytest.approx(ref.hssne_cost(mixed, Y, 1.0), rel=1e-12)


def test_per_point_mixing_keeps_unlinked_rows_and_group_weights(rng):
    """Per point: points without links keep their neighbourhood; adding a second group does
    not change the weight inside the first. Globally, it does."""
    from nbembed.affinity import mix_must_links

    n = 40
    P = ref.joint_probabilities(rng.normal(size=(n, 3)), 8.0)
    first = must_link_matrix(n, groups=[range(0, 5)])
    both = must_link_matrix(n, groups=[range(0, 5), range(10, 30)])
    for rho in (0.3, 1.0):
        local1 = mix_must_links(P, first, rho)
        local2 = mix_must_links(P, both, rho)
        np.testing.assert_allclose(local1[:5, :5], local2[:5, :5], rtol=1e-12)
        np.testing.assert_allclose(local1[30:, 30:], P[30:, 30:], rtol=1e-12)
        # Globally, the links' share of (0, 1) drops 20-fold: 20 linked entries, then 400.
        link_part = [mix_must_links(P, links, rho, "global")[0, 1] - (1 - rho) * P[0, 1]
                     for links in (first, both)]
        assert link_part[1] == pytest.approx(link_part[0] / 20)


@pytest.mark.parametrize("d", [2, 3])
def test_sne_gradient_by_finite_differences(rng, d):
    n = 20
    X = rng.normal(size=(n, 4))
    Pc = ref.conditional_probabilities(ref.sq_distances(X), 5.0)
    Y = rng.normal(size=(n, d))
    objective = SNEObjective(Pc)
    numeric = finite_difference(lambda Z: _cost(objective, Z), Y)
    np.testing.assert_allclose(_gradient(objective, Y), numeric, rtol=1e-5, atol=1e-8)
    assert _cost(objective, Y) == pytest.approx(ref.sne_cost(Pc, Y), rel=1e-12)


def test_stored_zeros_of_a_sparse_p_add_nothing_to_the_cost(rng):
    """0 log 0 = 0: an affinity stored as an explicit zero (one that underflowed)
    leaves the cost finite and as without it."""
    n = 30
    P = ref.joint_probabilities(rng.normal(size=(n, 4)), 6.0)
    P[P < np.quantile(P, 0.6)] = 0
    P = sp.csr_matrix(P / P.sum())
    with_zeros = P.copy()
    with_zeros.data[:4] = 0.0  # stored, but zero
    without = with_zeros.copy()
    without.eliminate_zeros()
    Yt = np.ascontiguousarray(rng.normal(size=(n, 2)).T)
    costs = [HSSNEObjective(Q, None, n_components=2, alpha=1.0, rho=0.0).value(Yt)
             for Q in (with_zeros, without)]
    assert np.isfinite(costs[0]) and costs[0] == pytest.approx(costs[1], rel=1e-12)
