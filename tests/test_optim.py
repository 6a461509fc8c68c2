"""The line search, the L-BFGS and conjugate-gradient directions and the descent driver."""

import math

import numpy as np
import pytest

from nbembed.methods import mbed_run as mbed
from nbembed.methods import nerv_run as nerv
from nbembed.methods import parametric
from nbembed.optim import LBFGS, LineSearchDescent, PolakRibiere, WolfeSettings, strong_wolfe
from nbembed.optim.line_search import cubic_minimizer

#: The settings every method uses, by name.
SETTINGS = {
    "nerv-lbfgs": nerv.LINE_SEARCHES["lbfgs"],
    "nerv-cg": nerv.LINE_SEARCHES["cg"],
    "mbed": mbed.LINE_SEARCH,
    "pe": parametric.LINE_SEARCH,
}


def rosenbrock(x):
    """Rosenbrock's function in any even dimension, and its gradient."""
    a, b = x[0::2], x[1::2]
    f = float(np.sum(100.0 * (b - a * a) ** 2 + (1.0 - a) ** 2))
    g = np.empty_like(x)
    g[0::2] = -400.0 * a * (b - a * a) - 2.0 * (1.0 - a)
    g[1::2] = 200.0 * (b - a * a)
    return f, g


def quadratic(rng, n=8, condition=100.0):
    """f = x'Ax / 2 - b'x with A symmetric positive definite of the given condition."""
    Q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    A = Q @ np.diag(np.geomspace(1.0, condition, n)) @ Q.T
    b = rng.normal(size=n)
    return (lambda x: (0.5 * x @ A @ x - b @ x, A @ x - b)), np.linalg.solve(A, b)


def along(fun, x, d):
    """phi(a) = fun(x + a d) as the line search sees it."""
    def phi(a):
        f, g = fun(x + a * d)
        return f, g @ d, g
    return phi


def assert_strong_wolfe(phi, f0, s0, result, settings):
    assert result.step is not None and result.wolfe
    f, s, _ = phi(result.step)
    assert f == pytest.approx(result.cost, rel=1e-12, abs=1e-12)
    assert f <= f0 + settings.c1 * result.step * s0
    assert abs(s) <= settings.c2 * abs(s0)
    assert result.evaluations <= settings.max_evaluations


# -- the line search --------------------------------------------------------------------------
def test_cubic_minimizer_is_exact_on_a_cubic():
    def c(a):   # minimum at a = 2: c'(a) = 3 (a - 2) (a + 1)
        return a ** 3 - 1.5 * a ** 2 - 6.0 * a, 3.0 * a * a - 3.0 * a - 6.0

    for lo, hi in [(0.0, 3.0), (1.0, 5.0), (4.0, 0.5)]:
        assert cubic_minimizer(lo, *c(lo), hi, *c(hi)) == pytest.approx(2.0)
    assert math.isnan(cubic_minimizer(1.0, 1.0, -1.0, 1.0, 1.0, -1.0))


@pytest.mark.parametrize("family", SETTINGS)
def test_line_search_meets_strong_wolfe_on_a_parabola(family):
    settings = SETTINGS[family]

    def phi(a):   # (a - 3)^2
        return (a - 3.0) ** 2, 2.0 * (a - 3.0), None

    for start in (1e-3, 1.0, 50.0):
        result = strong_wolfe(phi, 9.0, -6.0, start, settings)
        assert_strong_wolfe(phi, 9.0, -6.0, result, settings)


@pytest.mark.parametrize("family", SETTINGS)
def test_line_search_meets_strong_wolfe_on_quadratics(family, rng):
    settings = SETTINGS[family]
    for _ in range(5):
        fun, _ = quadratic(rng)
        x = rng.normal(size=8)
        f0, g0 = fun(x)
        d = -g0 if rng.random() < 0.5 else -g0 + 0.3 * np.linalg.norm(g0) * rng.normal(size=8)
        if d @ g0 >= 0:
            d = -g0
        phi = along(fun, x, d)
        for start in (1e-4, 1.0, 100.0):
            result = strong_wolfe(phi, f0, g0 @ d, start, settings)
            assert_strong_wolfe(phi, f0, g0 @ d, result, settings)


@pytest.mark.parametrize("family", SETTINGS)
def test_line_search_meets_strong_wolfe_on_rosenbrock(family, rng):
    settings = SETTINGS[family]
    for x in [np.array([-1.2, 1.0]), np.array([0.5, -0.4, 2.0, 1.0]), rng.normal(size=6)]:
        f0, g0 = rosenbrock(x)
        d = -g0
        phi = along(rosenbrock, x, d)
        for start in (1e-6, 1e-3, 1.0 / np.linalg.norm(g0)):
            result = strong_wolfe(phi, f0, g0 @ d, start, settings)
            assert_strong_wolfe(phi, f0, g0 @ d, result, settings)


@pytest.mark.parametrize("family", SETTINGS)
@pytest.mark.parametrize("bad", [math.inf, math.nan])
def test_line_search_backs_off_from_non_finite_costs(family, bad):
    """f = (a - 3)^2 up to a = 3.5, not finite beyond: long trial steps are cut."""
    settings = SETTINGS[family]
    calls = []

    def phi(a):
        calls.append(a)
        if a > 3.5:
            return bad, bad, None
        return (a - 3.0) ** 2, 2.0 * (a - 3.0), "here"

    for start in (1.0, 10.0, 100.0):   # each non-finite trial halves the step
        result = strong_wolfe(phi, 9.0, -6.0, start, settings)
        assert_strong_wolfe(phi, 9.0, -6.0, result, settings)
        assert result.step <= 3.5 and result.extra == "here"
    assert any(a > 3.5 for a in calls)


def test_line_search_returns_none_without_decrease():
    def phi(a):   # a descent slope at 0 that lies: the cost only rises
        return 1.0 + a, 1.0, None

    result = strong_wolfe(phi, 1.0, -1.0, 1.0, WolfeSettings(max_evaluations=8))
    assert result.step is None and result.extra is None
    assert result.cost == 1.0 and result.evaluations == 8 and not result.wolfe


def test_line_search_checks_its_arguments():
    phi = lambda a: (a, 1.0, None)  # noqa: E731
    with pytest.raises(ValueError, match="descent"):
        strong_wolfe(phi, 0.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="positive"):
        strong_wolfe(phi, 0.0, -1.0, 0.0)
    with pytest.raises(ValueError, match="c1 < c2"):
        WolfeSettings(c1=0.5, c2=0.1)


# -- L-BFGS against an explicit BFGS matrix ---------------------------------------------------
def bfgs_inverse_hessian(pairs):
    """The BFGS inverse-Hessian estimate, built matrix by matrix (Nocedal & Wright eq. 6.17)
    from H0 = (s.y / y.y) I of the newest pair."""
    s, y = pairs[-1]
    n = s.size
    H = (s @ y) / (y @ y) * np.eye(n)
    for s, y in pairs:
        rho = 1.0 / (s @ y)
        V = np.eye(n) - rho * np.outer(y, s)
        H = V.T @ H @ V + rho * np.outer(s, s)
    return H


@pytest.mark.parametrize("memory", [1, 3, 5])
def test_two_loop_direction_equals_the_explicit_bfgs_matrix(rng, memory):
    n = 6
    B = rng.normal(size=(n, n))
    A = B @ B.T + np.eye(n)
    pairs = []
    lbfgs = LBFGS(memory)
    for _ in range(7):
        s = rng.normal(size=n)
        y = A @ s
        g_old = rng.normal(size=n)
        lbfgs.update(s, g_old, g_old + y, -g_old)
        pairs.append((s, y))
    g = rng.normal(size=n)
    H = bfgs_inverse_hessian(pairs[-memory:])
    np.testing.assert_allclose(lbfgs.direction(g), -H @ g, rtol=1e-10, atol=1e-12)


def test_lbfgs_skips_pairs_without_positive_curvature(rng):
    lbfgs = LBFGS(5)
    s = rng.normal(size=4)
    lbfgs.update(s, np.zeros(4), -s, -s)   # s.y < 0
    assert lbfgs.fresh
    g = rng.normal(size=4)
    np.testing.assert_array_equal(lbfgs.direction(g), -g)


def test_polak_ribiere_plus_restarts_on_negative_beta():
    cg = PolakRibiere()
    g0 = np.array([1.0, 0.0])
    np.testing.assert_array_equal(cg.direction(g0), -g0)
    cg.update(None, g0, None, -g0)
    g1 = np.array([0.5, 0.5])      # beta = g1.(g1 - g0) / g0.g0 = 0
    np.testing.assert_allclose(cg.direction(g1), -g1)
    g2 = np.array([0.0, 2.0])      # beta = 4
    np.testing.assert_allclose(cg.direction(g2), -g2 + 4.0 * -g0)
    g3 = np.array([0.1, 0.0])      # beta < 0: steepest descent
    np.testing.assert_allclose(cg.direction(g3), -g3)


# -- the descent driver -----------------------------------------------------------------------
def lbfgs_descent(fun, x, family="pe"):
    return LineSearchDescent(fun, x, LBFGS(10), line_search=SETTINGS[family],
                             first_step="unit_length", continued_step="unit")


def cg_descent(fun, x, family="mbed"):
    return LineSearchDescent(fun, x, PolakRibiere(), line_search=SETTINGS[family],
                             first_step="inverse_gradient", continued_step="slope_ratio")


@pytest.mark.parametrize("make", [lbfgs_descent, cg_descent])
def test_descent_minimizes_a_convex_quadratic(rng, make):
    fun, solution = quadratic(rng, n=10, condition=100.0)
    x = np.zeros(10)
    opt = make(fun, x)
    costs = []
    for _ in range(300):
        opt.iterate()
        costs.append(opt.f)
        if opt.stalled:
            break
    assert np.all(np.diff(costs) <= 0)
    np.testing.assert_allclose(x, solution, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("make, family, iterations", [
    (lbfgs_descent, "pe", 200), (lbfgs_descent, "nerv-lbfgs", 200),
    (cg_descent, "mbed", 2000), (cg_descent, "nerv-cg", 2000)])
def test_descent_minimizes_rosenbrock(make, family, iterations):
    x = np.array([-1.2, 1.0, -1.2, 1.0])
    opt = make(rosenbrock, x, family)
    for _ in range(iterations):
        opt.iterate()
        if opt.stalled or np.linalg.norm(opt.g) < 1e-8:
            break
    np.testing.assert_allclose(x, 1.0, atol=1e-5)


def test_nerv_first_steps_move_by_the_spread_then_reuse_the_last_move():
    """"relative": the first trial moves x by 1% of |x|; "previous_move": as far as last time."""
    moves = []

    def fun(x):
        moves.append(np.linalg.norm(x - start))
        return 0.5 * x @ x, x.copy()

    start = np.array([3.0, 4.0])
    x = start.copy()
    opt = LineSearchDescent(fun, x, PolakRibiere(), line_search=SETTINGS["nerv-cg"],
                            first_step="relative", first_move=0.01,
                            continued_step="previous_move", restart_with_previous_move=True)
    opt.evaluate()
    moves.clear()
    opt.iterate()
    assert moves[0] == pytest.approx(0.05)
    last = np.linalg.norm(x - start)
    opt.reset()
    start = x.copy()
    opt.evaluate()
    moves.clear()
    opt.iterate()
    assert moves[0] == pytest.approx(last)


def test_reset_forgets_the_state(rng):
    fun, _ = quadratic(rng)
    x = rng.normal(size=8)
    for directions in (LBFGS(5), PolakRibiere()):
        opt = LineSearchDescent(fun, x, directions, first_step="unit_length")
        for _ in range(3):
            opt.iterate()
        assert not directions.fresh and opt.f is not None
        evaluations = opt.evaluations
        opt.reset()
        assert directions.fresh and opt.f is None and opt.g is None and not opt.stalled
        assert opt.evaluate() == 1 and opt.evaluations == evaluations + 1
        # the next direction is steepest descent again
        np.testing.assert_array_equal(directions.direction(opt.g), -opt.g)


def test_stalls_where_no_step_lowers_the_cost():
    """A gradient that promises a decrease the cost never gives: stalled, then free."""
    x = np.array([1.0, 2.0])
    opt = LineSearchDescent(lambda z: (1.0, np.array([1.0, 1.0])), x, LBFGS(3),
                            line_search=WolfeSettings(max_evaluations=5))
    result = opt.iterate()
    assert not result.moved and opt.stalled and result.evaluations == 1 + 5
    np.testing.assert_array_equal(x, [1.0, 2.0])
    assert opt.iterate() == (False, 0, 0.0)
    opt.reset()
    assert not opt.stalled


def test_stalls_at_a_stationary_point():
    x = np.zeros(3)
    opt = LineSearchDescent(lambda z: (z @ z, 2.0 * z), x, PolakRibiere())
    assert opt.iterate() == (False, 1, 0.0) and opt.stalled


def test_a_stale_direction_restarts_from_steepest_descent():
    """Off the ray through the start the cost is infinite: only -g finds a step."""
    def fun(z):
        if abs(z[0] * 1.0 - z[1] * 2.0) > 1e-9:   # not parallel to (2, 1)
            return math.inf, np.full(2, math.inf)
        return 0.5 * z @ z, z.copy()

    x = np.array([2.0, 1.0])
    lbfgs = LBFGS(3)
    opt = LineSearchDescent(fun, x, lbfgs, line_search=WolfeSettings(max_evaluations=6))
    opt.evaluate()
    lbfgs.update(np.array([1.0, 0.0]), np.zeros(2), np.array([4.0, 0.1]), None)
    d = lbfgs.direction(opt.g)
    assert d @ opt.g < 0 and abs(d[0] - 2.0 * d[1]) > 1e-3   # downhill, but off the ray
    result = opt.iterate()
    assert result.moved and not opt.stalled
    assert opt.f < 2.5 and x[0] == pytest.approx(2.0 * x[1])


def test_descent_only_visits_finite_points():
    def fun(z):
        if z @ z > 1.0:
            return math.nan, np.full_like(z, math.nan)
        return -z.sum(), -np.ones_like(z)

    x = np.zeros(2)
    for make in (lbfgs_descent, cg_descent, mbed.conjugate_gradients):
        x[:] = 0.0
        opt = make(fun, x)
        for _ in range(10):
            opt.iterate()
            assert np.all(np.isfinite(x)) and x @ x <= 1.0 and math.isfinite(opt.f)
        assert opt.f < -1.2


def test_info_follows_the_accepted_point(rng):
    fun, _ = quadratic(rng)

    def with_info(z):
        f, g = fun(z)
        return f, g, z.copy()

    x = rng.normal(size=8)
    opt = lbfgs_descent(with_info, x)
    for _ in range(4):
        opt.iterate()
        np.testing.assert_array_equal(opt.info, x)
