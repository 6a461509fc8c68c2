"""The semi-supervised spectral framework: references, invariances, the run
protocol, scikit-learn integration, bad input and reproduction on real data."""

import importlib.util
import pathlib
import threading
import time

import numpy as np
import pytest
import scipy.linalg
from sklearn.datasets import load_iris, load_wine
from sklearn.decomposition import PCA as SklearnPCA
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.model_selection import GridSearchCV
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

import reference_spectral as ref
from conftest import load_shared
from nbembed import Annotations, HSSNE, _config
from nbembed.affinity import knn_graphs
from nbembed.methods.spectral import SpectralSSDR
from nbembed.methods.spectral_presets import LFDA, LPP, PCA, SELF, SSDNE, SSLFDA, SSMFA
from nbembed.spectral import costs


def _partial_labels(y, every, offset=0):
    out = np.full_like(y, -1)
    out[offset::every] = y[offset::every]
    return out


@pytest.fixture(scope="module")
def blobs():
    """Three Gaussian classes in 5-D, every third point labelled."""
    rng = np.random.default_rng(1)
    centers = rng.normal(scale=3.0, size=(3, 5))
    y = np.repeat(np.arange(3), 20)
    X = centers[y] + rng.normal(size=(60, 5))
    return X, y, _partial_labels(y, 3)


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def _reference_costs(X, y_partial, label_cost, k, gamma, power, neighbor_cost="local_scaling"):
    """The dense C (label + weighted neighbourhood cost) and B, built by the reference."""
    Cu = ref.neighbourhood_cost(X, k, neighbor_cost, power=power) \
        if neighbor_cost is not None else None
    if label_cost is None:
        return Cu, np.diag(Cu.sum(axis=1)), None
    if label_cost == "dne":
        Cl, B = ref.dne_cost(X, y_partial, k), None
    elif label_cost == "mfa":
        Cl, apart = ref.same_and_other_class_pairs(X, y_partial, k)
        B = ref.laplacian(apart)
    else:
        Cl, Wb = ref.lfda_weights(X, y_partial)
        B = ref.laplacian(Wb)
    if Cu is None:
        return Cl, B, 0.0
    weight = gamma * ref.weighted_scatter(X, Cl) / ref.weighted_scatter(X, Cu)
    return Cl + weight * Cu, B, weight


# -- graphs and costs against the dense reference ---------------------------------------------
@pytest.mark.parametrize("kind", ["local_scaling", "heat"])
@pytest.mark.parametrize("power", [1.0, 3.0])
def test_neighbourhood_cost_matches_reference(blobs, kind, power):
    X, _, _ = blobs
    distances, indices = knn_graphs.knn_distances(X, 7)
    W, _ = knn_graphs.neighbourhood_affinity(distances, indices, kind, 5)
    W = knn_graphs.hadamard_power(W, power)
    np.testing.assert_allclose(W.toarray(), ref.neighbourhood_cost(X, 5, kind, power=power),
                               rtol=1e-12, atol=1e-15)


def test_label_costs_match_reference(blobs):
    X, _, yp = blobs
    dne = costs.label_cost(X, yp, "dne", 3)
    np.testing.assert_array_equal(dne.cost.toarray(), ref.dne_cost(X, yp, 3))
    assert dne.constraint is None
    mfa = costs.label_cost(X, yp, "mfa", 3)
    near, apart = ref.same_and_other_class_pairs(X, yp, 3)
    np.testing.assert_array_equal(mfa.cost.toarray(), near)
    np.testing.assert_allclose(mfa.constraint, ref.quadratic_form(X, ref.laplacian(apart)),
                               rtol=1e-10, atol=1e-10)
    lfda = costs.label_cost(X, yp, "lfda", 3)
    Ww, Wb = ref.lfda_weights(X, yp)
    np.testing.assert_allclose(lfda.cost.toarray(), Ww, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(lfda.constraint, ref.quadratic_form(X, ref.laplacian(Wb)),
                               rtol=1e-10, atol=1e-10)


def test_must_and_cannot_links_join_the_dne_pairs(blobs):
    X, _, yp = blobs
    plain = costs.label_cost(X, yp, "dne", 3).cost.toarray()
    linked = costs.label_cost(X, yp, "dne", 3, must_links=np.array([[1, 4]]),
                              cannot_links=np.array([[2, 5]])).cost.toarray()
    expected = plain.copy()  # points 1, 2, 4, 5 are unlabelled: no label pairs yet
    expected[1, 4] = expected[4, 1] = 1.0
    expected[2, 5] = expected[5, 2] = -1.0
    np.testing.assert_array_equal(linked, expected)


# -- the solution: constraint, objective, references ------------------------------------------
CONFIGS = [
    dict(label_cost="lfda", gamma=1.0, hadamard_power=1.0),
    dict(label_cost="lfda", gamma=0.3, hadamard_power=2.0, constraint="label"),
    dict(label_cost="dne", gamma=2.0, hadamard_power=1.0),
    dict(label_cost="mfa", gamma=0.5, hadamard_power=3.0, constraint="label"),
    dict(label_cost="lfda", neighbor_cost=None),
    dict(label_cost=None, hadamard_power=2.0),
]


@pytest.mark.parametrize("config", CONFIGS)
def test_constraint_and_objective(blobs, config):
    """A (X^T B X + eps I) A^T = I and tr(A X^T L_C X A^T) = 1/2 sum C_ij ||z_i - z_j||^2."""
    X, _, yp = blobs
    model = SpectralSSDR(n_components=2, n_neighbors=5, **config).fit(X, yp)
    C, B, weight = _reference_costs(X, yp, config["label_cost"], 5, config.get("gamma", 1.0),
                                    config.get("hadamard_power", 1.0),
                                    config.get("neighbor_cost", "local_scaling"))
    M_B = np.eye(X.shape[1]) if B is None else ref.quadratic_form(X, B)
    if config.get("constraint", "label+neighbor") == "label+neighbor" and weight:
        M_D = ref.quadratic_form(X, np.diag(ref.neighbourhood_cost(
            X, 5, "local_scaling", power=config["hadamard_power"]).sum(axis=1)))
        M_B = M_B + config["gamma"] * np.trace(M_B) / np.trace(M_D) * M_D
    A = model.components_
    np.testing.assert_allclose(A @ (M_B + model.constraint_ridge_ * np.eye(len(M_B))) @ A.T,
                               np.eye(2), atol=1e-9)
    assert model.objective_ == pytest.approx(ref.pair_objective(model.embedding_, C),
                                             rel=1e-9, abs=1e-9)
    np.testing.assert_allclose(np.diag(A @ ref.quadratic_form(X, ref.laplacian(C)) @ A.T),
                               model.eigenvalues_, rtol=1e-8, atol=1e-9)
    if weight is not None:
        assert model.neighbor_weight_ == pytest.approx(weight, rel=1e-10)


@pytest.mark.parametrize("config", CONFIGS[:4])
def test_solution_is_optimal(blobs, config):
    """No feasible perturbation (rotations within the constraint) lowers the objective:
    the first-order condition M_C a = mu (M_B + eps I) a holds for every axis."""
    X, _, yp = blobs
    run = SpectralSSDR(n_components=2, n_neighbors=5, **config).prepare(X, yp)
    run.step()
    M_C, M_B = run._matrices()
    B = M_B + run.ridge * np.eye(len(M_B))
    A = run.components
    residual = M_C @ A.T - B @ A.T * run.eigenvalues
    assert np.max(np.abs(residual)) < 1e-8 * max(1.0, np.max(np.abs(M_C)))
    mu_all = scipy.linalg.eigh(M_C, B, eigvals_only=True)
    np.testing.assert_allclose(run.eigenvalues, mu_all[:2], rtol=1e-8, atol=1e-10)


def test_pca_matches_scikit_learn(wine):
    X, _ = wine
    ours = PCA(n_components=3, axis_scaling="unit").fit(X)
    theirs = SklearnPCA(n_components=3).fit(X)
    np.testing.assert_allclose(np.abs(ours.components_ @ theirs.components_.T), np.eye(3),
                               atol=1e-8)
    whitened = PCA(n_components=3).fit(X)
    assert ref.subspace_distance(whitened.components_, theirs.components_) < 1e-8


def test_lpp_matches_dense_reference(blobs):
    X, _, _ = blobs
    ours = LPP(n_components=2, n_neighbors=5, reg=0.0).fit(X)
    Z = ref.lpp(X, ref.neighbourhood_cost(X, 5, "heat"), 2)
    np.testing.assert_allclose(np.abs(ours.embedding_), np.abs(Z), rtol=1e-7, atol=1e-9)


# -- documented invariances -------------------------------------------------------------------
@pytest.mark.parametrize("estimator", [SSLFDA(n_neighbors=5, beta=0.0),
                                       SSMFA(n_neighbors=5, beta=0.0), LPP(n_neighbors=5),
                                       LFDA(), SSDNE(n_neighbors=5, beta=0.0)])
def test_scale_and_translation_of_x(blobs, estimator):
    """X -> c X + t: the same embedding for graph constraints, c times it for DNE's A A^T = I.
    Without SELF's shrinkage: its identity in the cost depends on the scale of X."""
    X, _, yp = blobs
    base = estimator.fit(X, yp).embedding_
    moved = estimator.fit(7.5 * X + 3.0, yp).embedding_
    factor = 7.5 if estimator.label_cost == "dne" else 1.0
    np.testing.assert_allclose(moved, factor * base, rtol=1e-6, atol=1e-8)


def test_axis_scaling_keeps_the_subspace(blobs):
    X, _, yp = blobs
    a = SSLFDA(n_neighbors=5).fit(X, yp)
    b = SSLFDA(n_neighbors=5, axis_scaling="unit").fit(X, yp)
    np.testing.assert_allclose(np.linalg.norm(b.components_, axis=1), 1.0)
    assert ref.subspace_distance(a.components_, b.components_) < 1e-8
    ratio = b.embedding_ / a.embedding_
    np.testing.assert_allclose(ratio, np.broadcast_to(ratio[0], ratio.shape), rtol=1e-8)


def test_gamma_is_relative_to_the_costs(blobs):
    """With gamma_scale="relative" the solution does not depend on the units of C^u:
    the heat kernel and its Hadamard power r are the heat kernel with t / r."""
    X, _, yp = blobs
    t = 2.0
    a = SSDNE(n_neighbors=5, neighbor_cost="heat", bandwidth=t, hadamard_power=2.0).fit(X, yp)
    b = SSDNE(n_neighbors=5, neighbor_cost="heat", bandwidth=t / 2.0).fit(X, yp)
    np.testing.assert_allclose(a.embedding_, b.embedding_, rtol=1e-8, atol=1e-10)


# -- the KPCA trick and inductive projection --------------------------------------------------
def test_transform_projects_new_points(blobs):
    X, _, yp = blobs
    model = SSLFDA(n_neighbors=5).fit(X[:50], yp[:50])
    np.testing.assert_allclose(model.transform(X[:50]), model.embedding_, atol=1e-10)
    np.testing.assert_allclose(model.transform(X[50:]),
                               (X[50:] - X[:50].mean(axis=0)) @ model.components_.T, atol=1e-12)


def test_kpca_coordinates_reproduce_the_centred_kernel(blobs):
    X, _, yp = blobs
    model = SSLFDA(n_neighbors=5, kernel="rbf", kernel_params={"gamma": 0.05}).fit(X[:50],
                                                                                    yp[:50])
    kpca = model.kernel_pca_
    F = kpca.transform(X[:50])
    np.testing.assert_allclose(F @ F.T, ref.centred_kernel(rbf_kernel(X[:50], gamma=0.05)),
                               atol=1e-9)
    np.testing.assert_allclose(model.transform(X[:50]), model.embedding_, atol=1e-8)
    # A new point's coordinates: its centred kernel row projected on the eigenvectors.
    K_new = rbf_kernel(X[50:], X[:50], gamma=0.05)
    K_train = rbf_kernel(X[:50], gamma=0.05)
    Kc_new = K_new - K_train.mean(axis=0) - K_new.mean(axis=1, keepdims=True) + K_train.mean()
    np.testing.assert_allclose(kpca.transform(X[50:]) @ F.T, Kc_new, atol=1e-8)


def test_linear_kernel_trick_equals_the_linear_learner(blobs):
    """KPCA with the linear kernel is a rotation of the centred data: same solution."""
    X, _, yp = blobs
    for cls in (SSLFDA, SSDNE, LPP):
        linear = cls(n_neighbors=5).fit(X, yp).embedding_
        kernel = cls(n_neighbors=5, kernel="linear").fit(X, yp).embedding_
        np.testing.assert_allclose(np.abs(kernel), np.abs(linear), rtol=1e-6, atol=1e-8)


def test_callable_kernel_equals_named_kernel(blobs):
    X, _, yp = blobs
    a = SSDNE(n_neighbors=5, kernel="rbf", kernel_params={"gamma": 0.1}).fit(X, yp)
    b = SSDNE(n_neighbors=5, kernel=lambda A, B, g: rbf_kernel(A, B, gamma=g),
              kernel_params={"g": 0.1}).fit(X, yp)
    np.testing.assert_allclose(a.embedding_, b.embedding_, atol=1e-8)
    np.testing.assert_allclose(a.transform(X[:5] + 0.1), b.transform(X[:5] + 0.1), atol=1e-8)


def test_kernel_allows_more_components_than_features(blobs):
    X, _, yp = blobs
    Z = SSLFDA(n_components=8, n_neighbors=5, kernel="rbf").fit_transform(X, yp)
    assert Z.shape == (60, 8) and np.linalg.matrix_rank(Z) == 8


# -- scikit-learn integration ------------------------------------------------------------------
# Every estimator runs scikit-learn's checks in tests/test_sklearn_checks.py; here the
# kernelized variant, which goes through another code path.
@parametrize_with_checks([SSLFDA(n_neighbors=3, kernel="rbf")])
def test_sklearn_compatible_with_a_kernel(estimator, check):
    check(estimator)


def test_pipeline_and_grid_search(wine):
    X, y = wine
    pipe = make_pipeline(SSLFDA(n_components=2), KNeighborsClassifier(1))
    search = GridSearchCV(pipe, {"sslfda__gamma": [0.1, 10.0],
                                 "sslfda__n_neighbors": [5, 9]}, cv=3).fit(X, y)
    assert set(search.cv_results_["params"][0]) == {"sslfda__gamma", "sslfda__n_neighbors"}
    best = search.best_estimator_
    assert best.named_steps["sslfda"].gamma == search.best_params_["sslfda__gamma"]
    # The score is 1-NN accuracy in the reduced space, recomputed by hand.
    Z = best.named_steps["sslfda"].transform(X)
    manual = KNeighborsClassifier(1).fit(Z, y).score(Z, y)
    assert best.score(X, y) == pytest.approx(manual)
    assert search.best_score_ > 0.9


def test_self_in_a_named_pipeline(wine):
    X, y = wine
    pipe = Pipeline([("projection", SELF(n_components=2)), ("knn", KNeighborsClassifier(1))])
    Z = SELF(n_components=2).fit_transform(X, y)
    manual = KNeighborsClassifier(1).fit(Z, y).score(Z, y)
    assert pipe.fit(X, y).score(X, y) == pytest.approx(manual)


def test_as_init_starts_hssne(iris_data):
    X, y = iris_data
    projector = SSLFDA(n_components=3).fit(X, _partial_labels(y, 10))
    init = projector.as_init(X, n_components=2)
    assert init.shape == (150, 2)
    assert init[:, 0].std() == pytest.approx(1e-4)
    np.testing.assert_allclose(init / init[0] * projector.embedding_[0, :2],
                               projector.embedding_[:, :2], rtol=1e-8)
    model = HSSNE(perplexity=10.0, max_iter=30, early_exaggeration_iter=10, random_state=0)
    run = model.prepare(X, init=init)
    np.testing.assert_array_equal(run.embedding, init)
    model.fit(X, init=init)
    assert model.embedding_.shape == (150, 2) and np.all(np.isfinite(model.embedding_))


@pytest.fixture(scope="module")
def iris_data():
    return load_iris(return_X_y=True)


# -- the run protocol --------------------------------------------------------------------------
def test_run_is_one_shot(blobs):
    X, _, yp = blobs
    run = SSLFDA(n_neighbors=5).prepare(X, yp)
    assert run.n_iter == 1 and run.iteration == 0 and not run.done
    assert np.all(run.embedding == 0)
    run.step(5)
    assert run.done and run.iteration == 1 and len(run.history) == 1
    solved = run.embedding
    run.step(3)
    np.testing.assert_array_equal(run.embedding, solved)
    assert len(run.history) == 1
    np.testing.assert_allclose(solved, SSLFDA(n_neighbors=5).fit(X, yp).embedding_)
    assert run.history[0]["cost"] == pytest.approx(run.cost)


def test_live_parameters_resolve_and_reuse_the_graph(blobs):
    X, _, yp = blobs
    run = SSLFDA(n_neighbors=5).prepare(X, yp)
    assert {p.display_name for p in run.live_parameters.values()} == {"γ", "Hadamard power"}
    run.step()
    graph = run.neighbor_graph
    previous = run.embedding
    run.set_params(gamma=3.0, hadamard_power=2.0)
    assert run.neighbor_graph is graph and len(run.history) == 2
    fresh = SSLFDA(n_neighbors=5, gamma=3.0, hadamard_power=2.0,
                   beta=run.beta).fit(X, yp).embedding_
    np.testing.assert_allclose(np.abs(run.embedding), np.abs(fresh), rtol=1e-8, atol=1e-10)
    # Axes are flipped to follow the previous picture, never mirrored.
    assert np.all(np.sum(run.embedding * previous, axis=0) > 0)
    with pytest.raises(ValueError, match="gamma must be in"):
        run.set_params(gamma=-1.0)
    with pytest.raises(ValueError, match="not a live parameter"):
        run.set_params(beta=0.3)
    assert run.gamma == 3.0 and len(run.history) == 2


def test_set_params_before_the_solve_only_stores(blobs):
    X, _, yp = blobs
    run = SSDNE(n_neighbors=5).prepare(X, yp).set_params(gamma=0.5)
    assert run.history == [] and run.gamma == 0.5
    run.step()
    # A run whose choice was SELF keeps LFDA's label cost as gamma moves.
    learner = SSLFDA if run.label_cost == "lfda" else SSDNE
    np.testing.assert_allclose(np.abs(run.embedding),
                               np.abs(learner(n_neighbors=5, gamma=0.5, beta=run.beta,
                                              hadamard_power=run.hadamard_power)
                                      .fit(X, yp).embedding_))


def test_set_annotations_uses_new_labels(blobs):
    X, y, yp = blobs
    # A run keeps its gamma and r when the labels change (they are the sliders'):
    # compare with a fit at the same values.
    run = SSDNE(n_neighbors=5, gamma=1.0, hadamard_power=1.0).prepare(X, yp)
    assert run.annotation_kinds == ("labels", "must_link", "cannot_link")
    run.step()
    other = _partial_labels(y, 4, offset=1)
    ann = Annotations.from_labels(other)
    run.set_annotations(ann)
    np.testing.assert_array_equal(run.labels, other)
    fresh = SSDNE(n_neighbors=5, gamma=1.0, hadamard_power=1.0).fit(X, other).embedding_
    np.testing.assert_allclose(np.abs(run.embedding), np.abs(fresh), rtol=1e-8, atol=1e-10)
    before = run.embedding
    single = np.full_like(y, -1)
    single[[0, 1, 30]] = y[[0, 1, 30]]
    with pytest.raises(ValueError, match="single labelled point"):
        run.set_annotations(y=single)
    np.testing.assert_array_equal(run.labels, other)
    np.testing.assert_array_equal(run.embedding, before)


def test_run_changes_wait_for_the_kernel_lock(blobs):
    X, _, yp = blobs
    run = SSLFDA(n_neighbors=5).prepare(X, yp).step()
    done = threading.Event()
    worker = threading.Thread(target=lambda: (run.set_params(gamma=2.0), done.set()))
    with _config.KERNEL_LOCK:
        worker.start()
        time.sleep(0.2)
        assert not done.is_set()
    worker.join(10)
    assert done.is_set() and run.gamma == 2.0


def test_presets_declare_their_controls():
    assert set(SSLFDA.live_parameters) == {"gamma", "hadamard_power"}
    assert set(LPP.live_parameters) == {"hadamard_power"}
    assert LFDA.live_parameters == {} and PCA.annotation_kinds == ()
    assert "label_cost" not in LFDA().get_params() and LFDA.label_cost == "lfda"


# -- bad input ---------------------------------------------------------------------------------
def test_bad_input_gets_clear_errors(blobs):
    X, y, yp = blobs
    with pytest.raises(ValueError, match="n_components = 6 is larger than n_features = 5"):
        SSLFDA(n_components=6).fit(X, yp)
    with pytest.raises(ValueError, match=r"gamma must be in \[0, inf\), got -0.5"):
        SSLFDA(gamma=-0.5).fit(X, yp)
    with pytest.raises(ValueError, match="n_neighbors = 60 must be less than n_samples = 60"):
        LPP(n_neighbors=60).fit(X)
    single = np.full_like(y, -1)
    single[[0, 1, 2, 25, 50]] = y[[0, 1, 2, 25, 50]]
    for cls in (SSLFDA, SSDNE, SSMFA, LFDA):
        with pytest.raises(ValueError, match="class 1 has a single labelled point"):
            cls().fit(X, single)
    with pytest.raises(ValueError, match="requires y to be passed"):
        SSLFDA().fit(X)
    with pytest.raises(ValueError, match="at least two classes"):
        LFDA().fit(X, np.where(y == 0, 0, -1))
    with pytest.raises(ValueError, match="label_cost must be one of"):
        SpectralSSDR(label_cost="fda").fit(X, yp)
    with pytest.raises(ValueError, match="nothing to optimize"):
        SpectralSSDR(label_cost=None, neighbor_cost=None).fit(X)
    with pytest.raises(ValueError, match="hadamard_power must be in"):
        LPP(hadamard_power=-1).fit(X)
    flat = np.column_stack([X[:, :2], X[:, 0] + X[:, 1]])
    with pytest.raises(ValueError, match="larger than the rank of the centred data, 2"):
        LPP(n_components=3).fit(flat)


@pytest.mark.parametrize("kernel, params, error, match", [
    ("rbf", {"gamma": -1}, ValueError,
     r"kernel_params\['gamma'\] = -1 for kernel='rbf' must be a finite number > 0"),
    ("rbf", {"gamma": 0.0}, ValueError, r"kernel_params\['gamma'\] = 0.0 .* > 0"),
    ("rbf", {"gamma": np.inf}, ValueError, r"kernel_params\['gamma'\] = inf .* finite"),
    ("rbf", {"gamma": np.nan}, ValueError, r"kernel_params\['gamma'\] = nan .* finite"),
    ("rbf", {"gamma": "0.1"}, TypeError, r"kernel_params\['gamma'\] must be a number"),
    ("poly", {"gamma": -0.5}, ValueError, r"kernel_params\['gamma'\] = -0.5 for kernel='poly'"),
    ("poly", {"degree": 0}, ValueError, r"kernel_params\['degree'\] = 0 .* integer >= 1"),
    ("poly", {"degree": 2.5}, ValueError, r"kernel_params\['degree'\] = 2.5 .* integer >= 1"),
    ("poly", {"coef0": np.inf}, ValueError, r"kernel_params\['coef0'\] = inf .* finite"),
    ("rbf", {"degree": 3}, ValueError,
     r"kernel_params has 'degree', which kernel='rbf' does not take: it takes only 'gamma'"),
    ("poly", {"sigma": 1.0}, ValueError,
     r"'sigma', which kernel='poly' does not take: it takes only 'gamma', 'degree', 'coef0'"),
    ("linear", {"gamma": 1.0}, ValueError, r"kernel='linear' .* takes no parameters"),
    ("rbf", [("gamma", 1.0)], TypeError, "kernel_params must be a dict or None"),
    (None, {"gamma": 1.0}, ValueError, "kernel_params=.* has no effect with kernel=None"),
])
def test_bad_kernel_params_are_refused_at_fit(blobs, kernel, params, error, match):
    X, _, yp = blobs
    model = SSLFDA(n_neighbors=5, kernel=kernel, kernel_params=params)  # construction accepts
    with pytest.raises(error, match=match):
        model.fit(X, yp)


def test_good_kernel_params_are_accepted(blobs):
    X, _, yp = blobs
    for kernel, params in [("rbf", {"gamma": 0.05}), ("rbf", {"gamma": None}),
                           ("poly", {"gamma": 0.1, "degree": np.int64(2), "coef0": -1.0}),
                           ("linear", {}), ("linear", None)]:
        Z = SSLFDA(n_neighbors=5, kernel=kernel, kernel_params=params).fit_transform(X, yp)
        assert np.all(np.isfinite(Z))


# -- reproduction on real data ----------------------------------------------------------------
def _benchmark():
    path = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "spectral_reproduce.py"
    spec = importlib.util.spec_from_file_location("spectral_reproduce", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_ionosphere_semi_supervised_against_supervised_and_unsupervised():
    """benchmarks/spectral_reproduce.py's protocol on 6 seeded splits, every learner with its
    defaults (gamma, r and beta chosen by CV on the labelled points only). With 10 and with 50
    labels SS-LFDA and SS-DNE beat LFDA; with 50 they also beat LPP, as the paper reports,
    and with 10 they tie with it (the 30-split table is in docs/spectral.md)."""
    load_shared("ionosphere")
    bench = _benchmark()
    data, table = bench.load("ionosphere"), bench.methods(kernel_variants=False)
    d = bench.DATASETS["ionosphere"]["n_components"]

    def accuracy(method, n_labelled):
        return float(bench.evaluate(data, table[method], n_labelled, d, n_splits=6)[0].mean())

    methods = ("LPP", "LFDA", "SS-LFDA", "SS-DNE")
    many = {m: accuracy(m, 50) for m in methods}
    few = {m: accuracy(m, 10) for m in methods}
    print("50 labels", many, "10 labels", few)
    for semi in ("SS-LFDA", "SS-DNE"):
        assert many[semi] > max(many["LFDA"], many["LPP"]), many
        assert few[semi] > few["LFDA"] + 0.15, few
        # Over 30 splits SS-LFDA - LPP with 10 labels is +1.3 +- 1.1 points (SS-DNE -1.4
        # +- 1.5), a per-split sd of 6 to 8: on 6 splits a tie, 5 points being about 1.5 to 2
        # standard errors.
        assert few[semi] > few["LPP"] - 0.05, few
