"""The vectorizable exp and log of the pair loops against NumPy."""

import numpy as np
import pytest
from numba import njit

from nbembed._kernels.fastexp import exp_nonpositive, log_positive, unit_power32


@njit
def _apply_log(x):
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = log_positive(x[i])
    return out


def test_exp_matches_numpy(rng):
    x = -np.concatenate([rng.uniform(0, 700, 5000), rng.uniform(0, 1e-6, 100), [0.0, 699.0]])
    ours = np.array([exp_nonpositive(v) for v in x])
    np.testing.assert_allclose(ours, np.exp(x), rtol=3e-14, atol=0)
    assert exp_nonpositive(-701.0) == 0.0
    assert exp_nonpositive(-1e300) == 0.0


def test_log_matches_numpy(rng):
    x = np.concatenate([rng.uniform(0, 1, 20000), 10.0 ** rng.uniform(-307, 308, 20000),
                        1.0 + rng.uniform(-1e-6, 1e-6, 2000),
                        [1.0, 2.0, 0.5, np.sqrt(2), np.nextafter(np.sqrt(2), 2), 1e-300]])
    ours = _apply_log(x)
    expected = np.log(x)
    # Absolute error near log = 0, relative elsewhere: a few units in the last place.
    np.testing.assert_array_less(np.abs(ours - expected),
                                 4 * np.spacing(np.maximum(np.abs(expected), 1.0)))
    assert log_positive(1.0) == 0.0
    assert log_positive(2.0) == pytest.approx(np.log(2.0), rel=1e-16)


def test_log_below_the_smallest_normal_is_clamped():
    tiny = np.finfo(np.float64).tiny
    assert log_positive(tiny / 8) == pytest.approx(np.log(tiny), rel=1e-15)


@njit
def _apply_unit_power32(s, p):
    out = np.empty_like(s)
    for i in range(s.size):
        out[i] = unit_power32(s[i], p)
    return out


@pytest.mark.parametrize("alpha", [0.05, 0.3, 0.8, 1.5, 2.2, 5.0])
def test_single_precision_power_matches_numpy(rng, alpha):
    s = np.concatenate([rng.uniform(0, 1, 20000), 10.0 ** rng.uniform(-37, 0, 20000),
                        1.0 - rng.uniform(0, 1e-5, 2000), [1.0, 0.5, np.sqrt(0.5)]])
    s = s[s >= np.finfo(np.float32).tiny].astype(np.float32)
    p = np.float32(1.0 / alpha)
    ours = _apply_unit_power32(s, p).astype(np.float64)
    t = float(p) * np.log2(s.astype(np.float64))
    expected = np.exp2(np.maximum(t, -126.0))
    # Relative error of 2^t is the absolute error of t = p log2(s): float32 rounding
    # of t (|t| ulps of 1) and of log2(s) (an ulp or so, times p), a few ulps besides.
    bound = 1e-7 * (4.0 + np.abs(t) + float(p))
    assert np.all(np.abs(ours - expected) <= bound * expected)
    assert unit_power32(np.float32(1.0), p) == 1.0
