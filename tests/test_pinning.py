"""Pinning and moving points in the runs of every gradient-based method."""

import pathlib
import re

import numpy as np
import pytest

import reference_parametric as ref
from _waiting import wait_for
from nbembed import Annotations
from nbembed._kernels import parametric as pe_kernels
from nbembed.affinity.learning_metric import LearningMetric
from nbembed.methods.hssne import HSSNE
from nbembed.methods.mbed import Mbed
from nbembed.methods.nerv import NeRV, SNeRV
from nbembed.methods.parametric import ParametricEmbedding
from nbembed.methods.sne import SNE
from nbembed.methods.spectral import SpectralSSDR
from nbembed.widget.worker import RunWorker

N = 120
PINNED = np.array([0, 7, 41, 80, 119])


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    centres = 4.0 * np.eye(3, 5)
    X = np.vstack([rng.normal(size=(N // 3, 5)) + c for c in centres])
    y = np.repeat(np.arange(3), N // 3)
    partial = np.where(np.arange(N) % 4 == 0, y, -1)
    # Class posteriors for Parametric Embedding: softened one-hot labels.
    P = np.full((N, 3), 0.1)
    P[np.arange(N), y] = 0.8
    P = 0.7 * P + 0.3 * rng.dirichlet([1.0, 1.0, 1.0], size=N)
    Y0 = rng.normal(size=(N, 2))
    return X, partial, P, Y0


SCHEDULE = dict(max_iter=300, early_exaggeration_iter=10, perplexity=10.0, random_state=0)
SNERV_METRIC = dict(n_components=2, sigma=1.0, cv=2, max_iter=20)

#: Method -> prepare(data) giving a run started at the init array Y0.
PREPARE = {
    "hssne-gradient": lambda X, y, P, Y0: HSSNE(optimizer="gradient", **SCHEDULE).prepare(
        X, y, init=Y0),
    "hssne-fixed-point": lambda X, y, P, Y0: HSSNE(optimizer="fixed-point", **SCHEDULE).prepare(
        X, y, init=Y0),
    "sne": lambda X, y, P, Y0: SNE(**SCHEDULE).prepare(X, init=Y0),
    "mbed": lambda X, y, P, Y0: Mbed(3, n_components=2, max_iter=100, n_anneal=5, n_iter_init=5,
                                     random_state=0).prepare(X, y, init=Y0),
    "nerv-lbfgs": lambda X, y, P, Y0: NeRV(n_neighbors=8.0, max_iter=100, anneal_iter=9,
                                           random_state=0).prepare(X, init=Y0),
    "nerv-cg": lambda X, y, P, Y0: NeRV(n_neighbors=8.0, max_iter=100, anneal_iter=0,
                                        optimizer="cg", random_state=0).prepare(X, init=Y0),
    "snerv": lambda X, y, P, Y0: SNeRV(n_neighbors=8.0, max_iter=100, anneal_iter=0,
                                       learning_metric=LearningMetric(**SNERV_METRIC),
                                       random_state=0).prepare(X, y, init=Y0),
    "pe": lambda X, y, P, Y0: ParametricEmbedding(max_iter=100, tol=1e-12,
                                                  random_state=0).prepare(P, init=Y0),
}
METHODS = sorted(PREPARE)


def prepare(method, data):
    return PREPARE[method](*data)


def same_bits(a, b):
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def moved_by(before, after):
    """Largest distance any point moved."""
    return float(np.max(np.linalg.norm(after - before, axis=1)))


def free(n=N):
    return np.setdiff1d(np.arange(n), PINNED)


@pytest.mark.parametrize("method", METHODS)
def test_pinned_points_stay_bit_for_bit_while_the_others_optimize(method, data):
    run = prepare(method, data)
    run.pin(PINNED)
    assert run.pinned.dtype == np.int64 and run.pinned.tolist() == PINNED.tolist()
    start = run.embedding
    # Through early exaggeration, Mbed's restart before annealing, NeRV's widening.
    run.step(25)
    Y = run.embedding
    assert same_bits(Y[PINNED], start[PINNED])
    assert np.all(np.isfinite(Y))
    assert moved_by(start[free()], Y[free()]) > 1e-3
    if method == "pe":
        assert moved_by(start, Y) > 0
    if hasattr(run, "cost"):
        assert np.isfinite(run.cost)


@pytest.mark.parametrize("method", METHODS)
def test_pins_survive_live_parameters_and_annotations(method, data):
    X, y, P, Y0 = data
    run = prepare(method, data)
    run.step(8)
    run.pin(PINNED[:3], Y0[PINNED[:3]] + 1.0)
    held = run.embedding[PINNED[:3]]
    np.testing.assert_array_equal(held, Y0[PINNED[:3]] + 1.0)
    run.set_params(**{name: float(np.mean(live.slider))
                      for name, live in run.live_parameters.items()})
    run.step(5)
    run.set_annotations(Annotations.from_labels(y), y)
    run.step(5)
    assert run.pinned.tolist() == PINNED[:3].tolist()
    assert same_bits(run.embedding[PINNED[:3]], held)


@pytest.mark.parametrize("method", METHODS)
def test_unpinned_points_move_again(method, data):
    run = prepare(method, data)
    run.pin(PINNED)
    run.step(8)
    run.unpin(PINNED[:2])
    assert run.pinned.tolist() == PINNED[2:].tolist()
    before = run.embedding
    run.step(10)
    after = run.embedding
    assert same_bits(after[PINNED[2:]], before[PINNED[2:]])
    assert moved_by(before[PINNED[:2]], after[PINNED[:2]]) > 0
    run.unpin()
    assert run.pinned.size == 0


#: Input neighbours of a moved point that may follow it by more than a normal step.
NEIGHBOURS_PULLED = 8


def normal_step(run):
    """Longest move of a point in one iteration, over a few iterations."""
    longest = 0.0
    for _ in range(3):
        before = run.embedding
        run.step(1)
        longest = max(longest, moved_by(before, run.embedding))
    return longest


@pytest.mark.parametrize("method", METHODS)
def test_moved_points_continue_without_a_jump(method, data):
    run = prepare(method, data)
    run.step(3 if method == "pe" else 30)   # Parametric Embedding converges early
    run.pin(PINNED[:2])
    step = normal_step(run)
    # Moved: two pinned points and (but for Parametric Embedding, whose free
    # objects are solved exactly every round) three free ones.
    moved = PINNED if method != "pe" else PINNED[:2]
    others = np.setdiff1d(np.arange(N), moved)
    Y = run.embedding
    placed = Y[moved] + np.array([0.4, -0.3])
    run.move(moved, placed)
    np.testing.assert_array_equal(run.embedding[moved], placed)
    assert run.pinned.tolist() == PINNED[:2].tolist()
    # Nothing carries a stale step: no momentum for the moved points, no L-BFGS
    # memory or conjugate direction.
    if hasattr(run, "_descent"):
        assert run._descent.directions.fresh and run._descent.f is None
    else:
        assert not np.any(run._gradient_descent.velocity[:, moved])
        assert not np.any(run._fixed_point.velocity[:, moved])
    before = run.embedding
    run.step(1)
    after = run.embedding
    assert same_bits(after[PINNED[:2]], placed[:2])
    # The moved points' input neighbours are pulled after them (by design), by
    # no more than the move on top of a normal step; every other point takes no
    # more than a normal step.
    X = data[0] if method != "pe" else data[2]
    distances = np.linalg.norm(X[:, None] - X[None, :], axis=-1)
    neighbours = np.argsort(distances, axis=1)[:, 1:NEIGHBOURS_PULLED + 1]
    near = np.union1d(np.flatnonzero(np.isin(neighbours, moved).any(axis=1)),
                      neighbours[moved].ravel())
    far = np.setdiff1d(others, near)
    assert moved_by(before[others], after[others]) <= 3.0 * step + np.linalg.norm([0.4, -0.3])
    assert moved_by(before[far], after[far]) <= 3.0 * step


def test_a_move_without_pins_keeps_the_mean_where_it_put_it(data):
    """t-SNE re-centres every iteration: after a move it must not shift all points."""
    run = prepare("hssne-gradient", data)
    run.step(30)
    step = normal_step(run)
    run.move(PINNED, run.embedding[PINNED] + 20.0)
    before = run.embedding
    run.step(1)
    assert moved_by(before, run.embedding) <= 3.0 * step
    assert np.allclose(run.embedding.mean(axis=0), before.mean(axis=0))


def test_nerv_rescale_leaves_pinned_points(data):
    run = prepare("nerv-lbfgs", data)
    run.pin(PINNED)
    before = run.embedding
    factor = run.rescale()
    assert factor != 1.0
    assert same_bits(run.embedding[PINNED], before[PINNED])
    np.testing.assert_allclose(run.embedding[free()], factor * before[free()])


def test_parametric_embedding_pins_classes(data):
    run = prepare("pe", data)
    run.step(3)
    phi = run.anchors
    run.pin_classes([1], phi[[1]] + 0.5)
    run.pin([3])
    assert run.pinned_classes.tolist() == [1] and run.pinned.tolist() == [3]
    held = run.anchors[1].copy()
    run.step(10)
    assert same_bits(run.anchors[1], held)
    assert moved_by(phi[[0, 2]], run.anchors[[0, 2]]) > 0
    run.move_classes([0], [[2.0, 2.0]])
    assert run.anchors[0].tolist() == [2.0, 2.0]
    run.unpin_classes()
    assert run.pinned_classes.size == 0
    before = run.anchors
    run.step(3)
    assert moved_by(before, run.anchors) > 0
    with pytest.raises(ValueError, match="out of range"):
        run.pin_classes([3])


# -- the masked gradient -----------------------------------------------------------------------
def finite_difference(cost, x, coordinates, eps=1e-6):
    grad = np.zeros_like(x)
    for idx in coordinates:
        up, down = x.copy(), x.copy()
        up[idx] += eps
        down[idx] -= eps
        grad[idx] = (cost(up) - cost(down)) / (2 * eps)
    return grad


def small_data(n=24):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(n, 4))
    X[n // 2:] += 3.0
    y = np.where(np.arange(n) % 3 == 0, np.arange(n) >= n // 2, -1)
    return X, y, rng.normal(size=(n, 2))


SMALL_PINNED = [0, 5, 17]


def check_masked(masked, full, cost, x, atol):
    """The masked gradient (d, n): zero for the pinned points, the full gradient
    elsewhere, and the finite differences of the cost over the free coordinates."""
    assert np.all(masked[:, SMALL_PINNED] == 0.0)
    keep = np.setdiff1d(np.arange(x.shape[1]), SMALL_PINNED)
    np.testing.assert_array_equal(masked[:, keep], full[:, keep])
    coords = [(k, i) for k in range(x.shape[0]) for i in keep]
    numeric = finite_difference(cost, x, coords)
    np.testing.assert_allclose(masked, numeric, rtol=1e-5, atol=atol)


@pytest.mark.parametrize("method", ["hssne", "sne"])
def test_masked_gradient_of_the_sne_family(method):
    X, y, Y0 = small_data()
    est = (HSSNE(alpha=0.5, perplexity=5.0) if method == "hssne" else SNE(perplexity=5.0))
    run = est.prepare(X, y, init=Y0)
    run.pin(SMALL_PINNED)
    Yt = np.ascontiguousarray(Y0.T)
    masked = np.empty_like(Yt)
    run._gradient(Yt, 1.0, masked)           # what the optimizers follow
    full = np.empty_like(Yt)
    run.objective.gradient(Yt, full)
    check_masked(masked, full, run.objective.value, Yt, atol=1e-6)


@pytest.mark.parametrize("method", ["nerv", "mbed"])
def test_masked_gradient_of_the_line_search_runs(method):
    X, y, Y0 = small_data()
    if method == "nerv":
        run = NeRV(n_neighbors=5.0, anneal_iter=0).prepare(X, init=Y0)
    else:
        run = Mbed(2, max_iter=20, n_anneal=3, n_iter_init=0, random_state=0).prepare(X, y)
    run.pin(SMALL_PINNED)
    x = run._x.copy()
    cost, masked, _ = run._descent.fun(x.reshape(-1))
    masked = masked.reshape(x.shape)
    full = np.empty_like(x)
    run.objective.value_and_gradient(x, full)
    check_masked(masked, full, run.objective.value, x, atol=1e-7)


def test_masked_class_gradient_with_pinned_objects(data):
    """F(Phi) = min over the free objects only: its gradient, classes masked."""
    _, _, P, Y0 = data
    run = ParametricEmbedding(random_state=0).prepare(P[:30], init=Y0[:30])
    run.pin([2, 9])
    run.pin_classes([1])
    phi = run.anchors
    cost, masked, R = run._descent.fun(phi.reshape(-1).copy())
    masked = masked.reshape(phi.shape)
    assert np.all(masked[1] == 0.0)
    np.testing.assert_array_equal(R[[2, 9]], Y0[[2, 9]])
    coords = [(k, j) for k in (0, 2) for j in range(2)]
    numeric = finite_difference(lambda z: run._descent.fun(z.reshape(-1))[0], phi, coords)
    np.testing.assert_allclose(masked, numeric, rtol=1e-5, atol=1e-6)


def test_frozen_objects_kernel_against_the_reference(data):
    _, _, P, Y0 = data
    P, R0 = P[:40], np.ascontiguousarray(Y0[:40])
    rng = np.random.default_rng(3)
    Phi = rng.normal(size=(3, 2))
    priors = np.full(3, 1 / 3)
    frozen = np.zeros(40, dtype=bool)
    frozen[[1, 4, 30]] = True
    R = R0.copy()
    cost, grad, _, _ = pe_kernels.solve(P, R, Phi, np.log(priors), 0.1, 1e-10, 100, frozen)
    assert same_bits(R[frozen], R0[frozen])
    solved = ref.newton_solve(P, R0, Phi, priors, 0.1)
    np.testing.assert_allclose(R[~frozen], solved[~frozen], atol=1e-8)
    assert cost == pytest.approx(ref.objective(P, R, Phi, priors, 0.1, 0.0), rel=1e-10)
    np.testing.assert_allclose(grad, ref.grad_phi(P, R, Phi, priors, 0.0), rtol=1e-10,
                               atol=1e-12)


# -- bad input ---------------------------------------------------------------------------------
@pytest.mark.parametrize("call, error, match", [
    (lambda r: r.pin([N]), ValueError, "must lie in"),
    (lambda r: r.pin([-1]), ValueError, "must lie in"),
    (lambda r: r.pin([3, 3]), ValueError, "repeat"),
    (lambda r: r.pin([1.5]), TypeError, "integer"),
    (lambda r: r.pin([]), ValueError, "empty"),
    (lambda r: r.pin([[1, 2]]), ValueError, "1-D"),
    (lambda r: r.pin([1, 2], np.zeros((3, 2))), ValueError, "shape"),
    (lambda r: r.pin([1, 2], np.zeros((2, 3))), ValueError, "shape"),
    (lambda r: r.pin([1], [[np.nan, 0.0]]), ValueError, "NaN"),
    (lambda r: r.move([1], [[np.inf, 0.0]]), ValueError, "NaN"),
    (lambda r: r.move([1, 2], [[0.0, 0.0]]), ValueError, "shape"),
    (lambda r: r.move([N + 5], [[0.0, 0.0]]), ValueError, "must lie in"),
    (lambda r: r.unpin([N]), ValueError, "must lie in"),
])
@pytest.mark.parametrize("method", ["hssne-gradient", "nerv-lbfgs", "pe"])
def test_bad_pins_raise_and_change_nothing(method, call, error, match, data):
    run = prepare(method, data)
    run.pin([5])
    run.step(2)
    before = run.embedding
    with pytest.raises(error, match=match):
        call(run)
    assert run.pinned.tolist() == [5]
    assert same_bits(run.embedding, before)


# -- fit(pinned=...) ---------------------------------------------------------------------------
def test_fit_keeps_pinned_points_at_init(data):
    X, y, P, Y0 = data
    model = HSSNE(max_iter=60, early_exaggeration_iter=10, perplexity=10.0,
                  random_state=0).fit(X, y, init=Y0, pinned=PINNED)
    assert same_bits(model.embedding_[PINNED], Y0[PINNED])
    assert moved_by(Y0[free()], model.embedding_[free()]) > 0
    pe = ParametricEmbedding(max_iter=20, random_state=0).fit(P, init=Y0, pinned=PINNED)
    assert same_bits(pe.embedding_[PINNED], Y0[PINNED])
    # The init parameter as the array works too.
    Y = NeRV(n_neighbors=8.0, max_iter=10, anneal_iter=0, init=Y0).fit_transform(
        X, pinned=PINNED)
    assert same_bits(Y[PINNED], Y0[PINNED])


@pytest.mark.parametrize("estimator, kwargs, match", [
    (HSSNE(), dict(pinned=[0]), "pinned needs the positions"),
    (Mbed(3), dict(pinned=[0]), "pinned needs the positions"),
    (HSSNE(), dict(pinned=[N], init="Y0"), "pinned contains indices out of range"),
    (HSSNE(), dict(pinned=[2, 2], init="Y0"), "repeat"),
    (SpectralSSDR(), dict(pinned=[0], init="Y0"), "does not take pinned"),
])
def test_fit_refuses_bad_pins(estimator, kwargs, match, data):
    X, y, _, Y0 = data
    if kwargs.get("init") == "Y0":
        kwargs = dict(kwargs, init=Y0)
    with pytest.raises(ValueError, match=match):
        estimator.fit(X, y, **kwargs)
    with pytest.raises(ValueError, match="pinned needs"):
        ParametricEmbedding().fit(data[2], pinned=[0])


# -- the Explorer's worker ---------------------------------------------------------------------
def test_worker_restart_keeps_the_pins(data):
    warnings = []
    worker = RunWorker(lambda: prepare("pe", data), on_step=lambda run, force: None,
                       on_status=lambda status, error: None, on_warning=warnings.append)
    old = prepare("pe", data)
    old.step(3)
    old.pin(PINNED[3:], [[1.0, 2.0], [3.0, 4.0]])
    old.pin_classes([2])
    new = prepare("pe", data)
    worker._carry_pins(old, new)
    assert new.pinned.tolist() == PINNED[3:].tolist()
    assert new.embedding[PINNED[3:]].tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert new.pinned_classes.tolist() == [2]
    np.testing.assert_array_equal(new.anchors[2], old.anchors[2])
    assert not warnings
    # A run the pins do not fit keeps going without them, with a warning.
    smaller = ParametricEmbedding(random_state=0).prepare(data[2][:50])
    worker._carry_pins(old, smaller)
    assert smaller.pinned.size == 0 and "pinned points could not be kept" in warnings[0]


def test_pins_hold_while_the_worker_steps_changes_and_restarts(data):
    """A slider change and a restart through the Explorer's worker thread."""
    X, y, _, Y0 = data
    method = HSSNE(optimizer="gradient", **dict(SCHEDULE, max_iter=100000))
    worker = RunWorker(lambda: method.prepare(X, y, init=Y0), on_step=lambda run, force: None,
                       on_status=lambda status, error: None, on_warning=print)
    worker.start()
    try:
        wait_for(lambda: worker.run is not None and worker.run.iteration > 5)
        first = worker.run
        first.pin(PINNED, Y0[PINNED] * 3.0)   # from the main thread, while it steps
        pinned_at = first.iteration
        worker.set_params(alpha=0.7)
        wait_for(lambda: first.alpha == 0.7 and first.iteration > pinned_at + 20)
        assert same_bits(first.embedding[PINNED], Y0[PINNED] * 3.0)
        worker.restart()
        wait_for(lambda: worker.run is not first and worker.run is not None
                 and worker.run.iteration > 20)
        assert worker.run.pinned.tolist() == PINNED.tolist()
        assert same_bits(worker.run.embedding[PINNED], Y0[PINNED] * 3.0)
    finally:
        assert worker.stop(timeout=30)


# -- the documentation -------------------------------------------------------------------------
def test_the_examples_of_docs_arrange_run():
    page = pathlib.Path(__file__).resolve().parents[1] / "docs" / "arrange.md"
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)
    # The Explorer's examples run in tests/test_widget_pins.py, which builds the widget.
    blocks = [block for block in blocks if "Explorer" not in block]
    assert len(blocks) == 5
    namespace = {}
    for block in blocks:   # one session: later examples use earlier names
        exec(compile(block, str(page), "exec"), namespace)


@pytest.mark.parametrize("make", [lambda: HSSNE(perplexity=10, random_state=0),
                                  lambda: NeRV(n_neighbors=10, random_state=0)],
                         ids=["HSSNE", "NeRV"])
def test_points_moved_onto_one_spot_part_again(make):
    """Coinciding points have no gradient between them; a move that stacks them
    spreads them a little so that the run can part them."""
    X = np.random.default_rng(0).normal(size=(60, 4))
    run = make().prepare(X)
    run.step(5)
    run.move(np.arange(60), np.zeros((60, 2)))
    assert np.ptp(run.embedding) > 0
    run.step(50)
    assert np.ptp(run.embedding, axis=0).min() > 1e-2
    pinned = make().prepare(X)
    pinned.pin([0, 1])
    pinned.move([0, 1], [[1.0, 1.0], [1.0, 1.0]])  # pinned where asked, exactly
    np.testing.assert_array_equal(pinned.embedding[[0, 1]], [[1.0, 1.0], [1.0, 1.0]])
