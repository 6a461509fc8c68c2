"""Finite-difference checks of every objective's gradient through the run objects."""

import numpy as np
import pytest
import scipy.sparse as sp

import reference as ref
from nbembed.affinity import must_link_matrix
from nbembed.methods.hssne import HSSNERun
from nbembed.methods.sne import SNERun

SCHEDULE = dict(n_iter=10, optimizer="gradient", learning_rate=1.0)


def finite_difference(cost, Y, eps=1e-6):
    grad = np.zeros_like(Y)
    for idx in np.ndindex(*Y.shape):
        up, down = Y.copy(), Y.copy()
        up[idx] += eps
        down[idx] -= eps
        grad[idx] = (cost(up) - cost(down)) / (2 * eps)
    return grad


def _run_gradient(run, Y):
    Yt = np.ascontiguousarray(Y.T)
    grad = np.empty_like(Yt)
    run._gradient(Yt, 1.0, grad)
    return grad.T


def _run_cost(run, Y):
    return run._cost(np.ascontiguousarray(Y.T))


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0, 2.0, 1.5])
@pytest.mark.parametrize("rho", [0.0, 0.3, 1.0])
@pytest.mark.parametrize("sparse", [False, True])
def test_hssne_gradient_by_finite_differences(rng, alpha, rho, sparse):
    n = 24
    X = rng.normal(size=(n, 4))
    P = ref.joint_probabilities(X, 6.0)
    if sparse:
        P[P < np.quantile(P, 0.6)] = 0
        P = sp.csr_matrix(P / P.sum())
    U = must_link_matrix(n, pairs=np.array([[0, 1], [2, 5], [7, 3]]), groups=[[10, 11, 12]])
    Y = rng.normal(size=(n, 2))
    run = HSSNERun(P, U, Y, alpha=alpha, rho=rho, **SCHEDULE)
    numeric = finite_difference(lambda Z: _run_cost(run, Z), Y)
    np.testing.assert_allclose(_run_gradient(run, Y), numeric, rtol=1e-5, atol=1e-8)


def test_hssne_cost_uses_the_mixed_p(rng):
    n = 20
    P = ref.joint_probabilities(rng.normal(size=(n, 3)), 5.0)
    U = must_link_matrix(n, pairs=np.array([[0, 1], [4, 9]]))
    Y = rng.normal(size=(n, 2))
    run = HSSNERun(P, U, Y, alpha=1.0, rho=0.4, **SCHEDULE)
    mixed = 0.6 * P + 0.4 * U.toarray()
    assert run.cost == pytest.approx(ref.hssne_cost(mixed, Y, 1.0), rel=1e-12)


@pytest.mark.parametrize("d", [2, 3])
def test_sne_gradient_by_finite_differences(rng, d):
    n = 20
    X = rng.normal(size=(n, 4))
    Pc = ref.conditional_probabilities(ref.sq_distances(X), 5.0)
    Y = rng.normal(size=(n, d))
    run = SNERun(Pc, Y, **SCHEDULE)
    numeric = finite_difference(lambda Z: _run_cost(run, Z), Y)
    np.testing.assert_allclose(_run_gradient(run, Y), numeric, rtol=1e-5, atol=1e-8)
    assert _run_cost(run, Y) == pytest.approx(ref.sne_cost(Pc, Y), rel=1e-12)
