"""run.forces(): the gradient split into its terms, for every gradient-based method.

The terms must add up to the gradient the objective's kernels compute (the
sum is compared with the real gradient, not with itself), each term must be
the gradient of its own part of the cost where the cost splits (checked by
finite differences), and rows for a few points must be the rows of the full
result.
"""

import numpy as np
import pytest
import scipy.sparse as sp

import reference as ref
import reference_mbed as refm
import reference_nerv as refn
import reference_parametric as refp
from nbembed._kernels import parametric as pe_kernels
from nbembed.affinity import (LearningMetric, conditional_probabilities, must_link_matrix,
                              must_link_share)
from nbembed.methods.hssne import HSSNE
from nbembed.methods.mbed import Mbed
from nbembed.methods.nerv import NeRV, SNeRV
from nbembed.methods.parametric import ParametricEmbedding
from nbembed.methods.sne import SNE
from nbembed.objectives import HSSNEObjective, NeRVObjective, SNEObjective
from nbembed.optim import EmbeddingRun
from test_gradients import finite_difference

N = 60


@pytest.fixture
def blobs(rng):
    centres = np.repeat(np.eye(3, 5) * 6.0, N // 3, axis=0)
    X = centres + rng.normal(size=(N, 5))
    y = np.repeat(np.arange(3), N // 3)
    return X, y


def partial_labels(y):
    """Every third point labelled, the rest -1."""
    return np.where(np.arange(y.size) % 3 == 0, y, -1)


def objective_gradient(run, forces):
    """The gradient the run's objective computes now (its own kernels), (n, d)."""
    x = run._variables()
    grad = np.empty_like(x)
    if isinstance(run, EmbeddingRun):
        run.objective.gradient(x, grad, forces.exaggeration)
    else:
        run.objective.value_and_gradient(x, grad)
    return grad.T


def assert_sums_to(forces, gradient):
    scale = np.abs(gradient).max()
    assert scale > 0
    np.testing.assert_allclose(forces.gradient, gradient, rtol=1e-10, atol=1e-12 * scale)


def hssne_run(X, y=None, *, alpha=1.0, rho=0.5, exaggeration_iter=250, **kw):
    return HSSNE(alpha=alpha, rho=rho, perplexity=8.0, early_exaggeration_iter=exaggeration_iter,
                 random_state=0, **kw).prepare(X, y)


# -- HSSNE and SNE -----------------------------------------------------------------------------

@pytest.mark.parametrize("alpha", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("exaggerated", [True, False])
def test_hssne_terms_sum_to_the_gradient(blobs, alpha, exaggerated):
    X, _ = blobs
    run = hssne_run(X, alpha=alpha, exaggeration_iter=250 if exaggerated else 3)
    run.step(5)
    forces = run.forces()
    assert list(forces) == ["attraction", "must_link", "repulsion"]
    assert forces.exaggeration == (12.0 if exaggerated else 1.0)
    assert forces.phase == ("early exaggeration" if exaggerated else run.optimizer)
    assert not np.any(forces["must_link"])          # no links: no must-link pull
    assert_sums_to(forces, objective_gradient(run, forces))
    # The attraction points along the exaggeration: the same split at e = 1 has it e times smaller.
    plain = run.objective.forces(run._variables())
    np.testing.assert_allclose(forces["attraction"], forces.exaggeration * plain["attraction"],
                               rtol=1e-12)
    np.testing.assert_array_equal(forces["repulsion"], plain["repulsion"])


@pytest.mark.parametrize("mixing", ["per-point", "global"])
@pytest.mark.parametrize("exaggerated", [True, False])
def test_must_link_pull_is_the_links_share_of_the_attraction(blobs, mixing, exaggerated):
    X, y = blobs
    run = hssne_run(X, partial_labels(y), rho=0.5, must_link_mixing=mixing,
                    exaggeration_iter=250 if exaggerated else 3)
    run.step(5)
    forces = run.forces()
    assert_sums_to(forces, objective_gradient(run, forces))
    objective = run.objective
    # By hand, with the dense formula: 4 e sum_j L_ij S_ij (y_i - y_j).
    L = must_link_share(objective.P, objective.links, 0.5, mixing).toarray()
    Y = run.embedding
    S = 1.0 / (1.0 + ref.sq_distances(Y))
    W = L * S
    by_hand = 4.0 * forces.exaggeration * (W.sum(1)[:, None] * Y - W @ Y)
    np.testing.assert_allclose(forces["must_link"], by_hand, rtol=1e-10, atol=1e-14)
    # the labelled points and the neighbours their classes took in
    degree = np.diff(sp.csr_matrix(objective.links).indptr)
    assert np.all(degree[partial_labels(y) >= 0] > 0)
    assert np.all(np.linalg.norm(forces["must_link"][degree > 0], axis=1) > 0)
    assert not np.any(forces["must_link"][degree == 0])


def test_approximate_repulsion_terms_sum_to_the_gradient(blobs):
    X, y = blobs
    run = hssne_run(X, partial_labels(y), repulsion="barnes-hut", exaggeration_iter=3)
    run.step(5)
    forces = run.forces()
    assert_sums_to(forces, objective_gradient(run, forces))


def test_sne_terms_sum_to_the_gradient(blobs):
    X, _ = blobs
    run = SNE(perplexity=8.0, random_state=0).prepare(X)
    run.step(3)
    forces = run.forces()
    assert list(forces) == ["attraction", "repulsion"] and forces.exaggeration == 4.0
    assert_sums_to(forces, objective_gradient(run, forces))


def test_sne_terms_are_gradients_of_their_cost_parts(rng):
    n = 16
    P = ref.conditional_probabilities(ref.sq_distances(rng.normal(size=(n, 3))), 4.0)
    objective = SNEObjective(P)
    Y = rng.normal(size=(n, 2))
    forces = objective.forces(np.ascontiguousarray(Y.T))

    def p_tau(Z):                        # -sum p log of the unnormalized kernel
        return float(np.sum(P * ref.sq_distances(Z)))

    def log_normalizers(Z):
        E = np.exp(-ref.sq_distances(Z))
        np.fill_diagonal(E, 0.0)
        return float(np.sum(np.log(E.sum(axis=1))))
    np.testing.assert_allclose(forces["attraction"], finite_difference(p_tau, Y), rtol=1e-5,
                               atol=1e-8)
    np.testing.assert_allclose(forces["repulsion"], finite_difference(log_normalizers, Y),
                               rtol=1e-5, atol=1e-8)


def _hssne_cost_parts(N_part, L_part, alpha):
    """The parts of KL(P~ || Q) as functions of Y: -sum N log H, -sum L log H, log Z."""
    def minus_p_log_h(W):
        def cost(Y):
            H = ref.power_kernel(ref.sq_distances(Y), alpha)
            return -float(np.sum(W[W > 0] * np.log(H[W > 0])))
        return cost

    def log_z(Y):
        H = ref.power_kernel(ref.sq_distances(Y), alpha)
        np.fill_diagonal(H, 0.0)
        return float(np.log(H.sum()))
    return dict(attraction=minus_p_log_h(N_part), must_link=minus_p_log_h(L_part),
                repulsion=log_z)


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0, 1.5])
@pytest.mark.parametrize("sparse", [False, True])
def test_hssne_terms_are_gradients_of_their_cost_parts(rng, alpha, sparse):
    n = 20
    P = ref.joint_probabilities(rng.normal(size=(n, 4)), 5.0)
    if sparse:
        P[P < np.quantile(P, 0.5)] = 0
        P = sp.csr_matrix(P / P.sum())
    links = must_link_matrix(n, pairs=np.array([[0, 1], [2, 5]]), groups=[[10, 11, 12]])
    objective = HSSNEObjective(P, links, n_components=2, alpha=alpha, rho=0.3)
    L = must_link_share(P, links, 0.3).toarray()
    mixed = objective.P_mixed.toarray() if sparse else objective.P_mixed
    parts = _hssne_cost_parts(mixed - L, L, alpha)
    Y = rng.normal(size=(n, 2))
    forces = objective.forces(np.ascontiguousarray(Y.T))
    for name, cost in parts.items():
        np.testing.assert_allclose(forces[name], finite_difference(cost, Y), rtol=1e-5,
                                   atol=1e-8, err_msg=name)


# -- NeRV and SNeRV ----------------------------------------------------------------------------

@pytest.mark.parametrize("tradeoff", [0.0, 0.3, 1.0])
def test_nerv_terms_sum_to_the_gradient(blobs, tradeoff):
    X, _ = blobs
    run = NeRV(tradeoff=tradeoff, n_neighbors=8, anneal_iter=4, random_state=0).prepare(X)
    assert run.forces().phase == "widening"
    run.step(6)
    forces = run.forces()
    assert list(forces) == ["recall", "precision"] and forces.phase == "final"
    assert_sums_to(forces, objective_gradient(run, forces))
    if tradeoff == 1.0:
        assert not np.any(forces["precision"])
    if tradeoff == 0.0:
        assert not np.any(forces["recall"])


def test_snerv_terms_sum_to_the_gradient(blobs):
    X, y = blobs
    metric = LearningMetric(n_components=3, sigma=1.0, random_state=0)
    run = SNeRV(learning_metric=metric, tradeoff=0.3, anneal_iter=2,
                random_state=0).prepare(X, partial_labels(y))
    run.step(3)
    forces = run.forces()
    assert_sums_to(forces, objective_gradient(run, forces))


def test_nerv_terms_are_gradients_of_their_divergences(rng):
    n = 18
    X = rng.normal(size=(n, 4))
    P, beta = conditional_probabilities(X, 5.0, method="exact")
    P = P.toarray() if sp.issparse(P) else np.asarray(P)
    tradeoff = 0.4
    objective = NeRVObjective(P, beta, tradeoff)
    Y = rng.normal(size=(n, 2))
    forces = objective.forces(np.ascontiguousarray(Y.T))
    logP = objective.logP
    recall = finite_difference(lambda Z: refn.nerv_divergences(P, logP, Z, beta)[0], Y)
    precision = finite_difference(lambda Z: refn.nerv_divergences(P, logP, Z, beta)[1], Y)
    np.testing.assert_allclose(forces["recall"], tradeoff * recall, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(forces["precision"], (1 - tradeoff) * precision, rtol=1e-5,
                               atol=1e-8)


# -- Mbed ----------------------------------------------------------------------------------------

def test_mbed_terms_in_the_sne_and_the_margin_phase(blobs):
    X, y = blobs
    run = Mbed(n_classes=3, max_iter=60, n_iter_init=4, n_anneal=4,
               random_state=0).prepare(X, partial_labels(y))
    run.step(2)
    forces = run.forces()
    assert list(forces) == ["sne", "margin", "balance", "labels"] and forces.phase == "sne"
    for name in ("margin", "balance", "labels"):
        assert not np.any(forces[name])          # C alone before lambda exists
    assert_sums_to(forces, objective_gradient(run, forces))
    run.step(6)
    forces = run.forces()
    assert forces.phase == "anneal"
    for name in forces:
        assert np.any(forces[name]), name
    assert_sums_to(forces, objective_gradient(run, forces))
    # The boundary terms are those of the cost's own parts (A, B, D).
    Yt = run._variables()
    _, grad, _ = run.objective.boundary_terms(Yt)
    np.testing.assert_allclose(forces["margin"] + forces["balance"] + forces["labels"], grad,
                               rtol=1e-12, atol=1e-15)
    run.set_params(lambda_=2.0)
    assert run.forces().phase == "held"
    # Each boundary term by finite differences of its own part of the cost.
    objective = run.objective
    forces = run.forces()
    Y = run.embedding
    W, lam = objective.directions, objective.lambda_
    weights = objective.label_weight * objective.label_weights
    parts = dict(margin=lambda Z: -refm.margin_term(Z, W, lam),
                 balance=lambda Z: -refm.balance_term(Z, W, lam),
                 labels=lambda Z: refm.label_term(Z, W, lam, objective.targets, weights))
    for name, cost in parts.items():
        np.testing.assert_allclose(forces[name], finite_difference(cost, Y), rtol=1e-5,
                                   atol=1e-8, err_msg=name)


# -- Parametric Embedding ----------------------------------------------------------------------

def pe_problem(rng, n=80, K=4):
    return rng.dirichlet(np.full(K, 0.5), size=n)


def test_parametric_object_and_class_terms_sum_to_the_gradients(rng):
    P = pe_problem(rng)
    run = ParametricEmbedding(random_state=0).prepare(P)
    run.step(3)
    run.pin([2, 7])                 # pinned objects are not solved: their gradient is not zero
    run.move([2], [[3.0, -1.0]])
    run.unpin([2, 7])
    forces = run.forces()
    objective = run.objective
    R, Phi = objective.R, run.anchors
    grad_r = np.empty_like(R)
    pe_kernels.object_derivatives(objective.P, R, Phi, objective.log_prior, objective.eta_r,
                                  grad_r, np.empty((R.shape[0], 2, 2)))
    assert np.abs(grad_r[2]).max() > 1e-3
    assert list(forces) == ["attraction", "repulsion", "origin"]
    assert_sums_to(forces, grad_r)
    assert forces.anchors["origin"].shape == Phi.shape
    assert_sums_to(forces.anchors, objective.value_here(Phi)[1])
    # Against the formulas of the paper (eqs. 3 and 4).
    by_formula = refp.grad_r(objective.P, R, Phi, objective.priors, objective.eta_r)
    np.testing.assert_allclose(forces.gradient, by_formula, rtol=1e-10, atol=1e-12)


def test_parametric_pinned_classes_have_zero_rows(rng):
    run = ParametricEmbedding(random_state=0).prepare(pe_problem(rng))
    run.step(2)
    run.pin_classes([1])
    run.pin([0, 5])
    forces = run.forces()
    assert not np.any(forces.anchors.gradient[1]) and np.any(forces.anchors.gradient[0])
    np.testing.assert_array_equal(forces.pinned, [0, 5])
    assert not np.any(forces.gradient[[0, 5]])


# -- every method: rows for a few points, pins, bad input -----------------------------------------

def _runs(X, y):
    metric = LearningMetric(n_components=3, sigma=1.0, random_state=0)
    return dict(
        hssne=lambda: hssne_run(X, partial_labels(y), alpha=0.5),
        hssne_bh=lambda: hssne_run(X, partial_labels(y), repulsion="barnes-hut"),
        sne=lambda: SNE(perplexity=8.0, random_state=0).prepare(X),
        mbed=lambda: Mbed(n_classes=3, max_iter=40, n_iter_init=2, n_anneal=3,
                          random_state=0).prepare(X, partial_labels(y)),
        nerv=lambda: NeRV(n_neighbors=8, anneal_iter=0, random_state=0).prepare(X),
        snerv=lambda: SNeRV(learning_metric=metric, anneal_iter=0,
                            random_state=0).prepare(X, partial_labels(y)),
        pe=lambda: ParametricEmbedding(random_state=0).prepare(
            np.eye(3)[y] * 0.8 + 0.2 / 3),
    )


@pytest.mark.parametrize("method", ["hssne", "hssne_bh", "sne", "mbed", "nerv", "snerv", "pe"])
def test_rows_for_a_few_points_are_rows_of_the_full_result(blobs, method):
    X, y = blobs
    run = _runs(X, y)[method]()
    run.step(4)
    full = run.forces()
    indices = [17, 3, 40]
    some = run.forces(indices)
    np.testing.assert_array_equal(some.indices, indices)
    assert list(some) == list(full) and some.labels == full.labels
    for name in full:
        np.testing.assert_allclose(some[name], full[name][indices], rtol=1e-12,
                                   atol=1e-14 * np.abs(full[name]).max(), err_msg=name)
    assert set(full.labels) == set(full) == {name for name, _ in run.objective.force_terms}


@pytest.mark.parametrize("method", ["hssne", "mbed", "nerv"])
def test_pinned_points_get_zero_rows(blobs, method):
    X, y = blobs
    run = _runs(X, y)[method]()
    run.step(2)
    run.pin([4, 9])
    forces = run.forces([9, 1, 4])
    np.testing.assert_array_equal(forces.pinned, [4, 9])
    assert not np.any(forces.gradient[[0, 2]]) and np.any(forces.gradient[1])


def test_bad_indices_are_refused(blobs):
    X, _ = blobs
    run = SNE(perplexity=8.0, random_state=0).prepare(X)
    with pytest.raises(ValueError, match="indices"):
        run.forces([0, N])
    with pytest.raises(ValueError, match="repeat"):
        run.forces([1, 1])
    with pytest.raises(TypeError):
        run.forces([0.5])


def test_forces_leave_the_run_unchanged(blobs):
    X, y = blobs
    run = hssne_run(X, partial_labels(y))
    run.step(3)
    before = run.embedding
    run.forces()
    run.step(2)
    again = hssne_run(X, partial_labels(y))
    again.step(5)
    np.testing.assert_array_equal(run.embedding, again.embedding)
    assert not np.array_equal(before, run.embedding)


def test_forces_of_a_map_whose_kernel_underflows_everywhere_are_not_an_error():
    """At alpha = 0 (Gaussian kernel) points 10^4 apart give Z = 0: the repulsion is
    not finite, which the Explorer's arrows drop, instead of a ZeroDivisionError."""
    rng = np.random.default_rng(0)
    run = HSSNE(alpha=0.0, perplexity=10).prepare(rng.normal(size=(60, 5)))
    run.move(np.arange(60), rng.normal(size=(60, 2)) * 1e4)
    forces = run.forces([0, 1])
    assert np.all(np.isnan(forces["repulsion"]))
    assert np.all(np.isfinite(forces["attraction"]))
