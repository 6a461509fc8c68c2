"""What the property-based tests (test_properties_*.py) share: the outcome every
bad input must have, and strategies for bad and edge values."""

import contextlib
import logging
import traceback

import numpy as np
from hypothesis import strategies as st

#: The only errors bad input may raise.
ALLOWED = (ValueError, TypeError, MemoryError)


def assert_clear_refusal(err):
    """``err`` is an allowed type, raised by nbembed itself, with a message."""
    assert isinstance(err, ALLOWED), f"{type(err).__name__}: {err}"
    assert str(err).strip(), f"{type(err).__name__} without a message"
    raised_in = traceback.extract_tb(err.__traceback__)[-1].filename
    assert "/nbembed/" in raised_in.replace("\\", "/"), \
        f"{type(err).__name__} raised outside nbembed, in {raised_in}: {err}"


@contextlib.contextmanager
def logging_kept():
    """Undo what a fit with ``verbose=True`` does to the "nbembed" logger (a handler
    on the stream of the moment), so later tests see their own output."""
    logger = logging.getLogger("nbembed")
    handlers, level = list(logger.handlers), logger.level
    try:
        yield
    finally:
        logger.handlers[:] = handlers
        logger.setLevel(level)


def same_params(before, after):
    """Parameters unchanged: the same objects (NaN is not equal to itself)."""
    return before.keys() == after.keys() and all(before[k] is after[k] or
                                                 before[k] == after[k] for k in before)


#: Values no parameter should take without a clear error (or take harmlessly).
BAD_VALUES = st.sampled_from([np.inf, -np.inf, np.nan, -1, -0.5, 0, 0.0, 1e300, -1e300, 1e-300,
                              "x", "", None, [1], (), {}, True, False, object(), 2.5, 3])

DATA_KINDS = ("normal", "nan", "inf", "huge", "tiny", "duplicates", "constant", "zeros",
              "integers", "mixed_scales", "one_dim", "three_dim", "empty", "strings", "complex")


@st.composite
def data_matrices(draw, max_samples=24, max_features=4):
    """Small data matrices, many of them bad or at an edge."""
    kind = draw(st.sampled_from(DATA_KINDS))
    n = draw(st.integers(1, max_samples))
    d = draw(st.integers(1, max_features))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    X = rng.normal(size=(n, d))
    if kind == "nan":
        X[rng.integers(n), rng.integers(d)] = np.nan
    elif kind == "inf":
        X[rng.integers(n), rng.integers(d)] = np.inf * rng.choice([-1, 1])
    elif kind == "huge":
        X *= 10.0 ** draw(st.integers(50, 300))
    elif kind == "tiny":
        X *= 10.0 ** -draw(st.integers(50, 300))
    elif kind == "duplicates":
        X[n // 2:] = X[0]
    elif kind == "constant":
        X[:] = draw(st.floats(-1e6, 1e6))
    elif kind == "zeros":
        X[:] = 0.0
    elif kind == "integers":
        X = rng.integers(-3, 3, size=(n, d))
    elif kind == "mixed_scales":
        X[:, 0] *= 1e90
        X[:, -1] *= 1e-90
    elif kind == "one_dim":
        X = X[:, 0]
    elif kind == "three_dim":
        X = X[None]
    elif kind == "empty":
        X = X[:0]
    elif kind == "strings":
        X = X.astype(str)
    elif kind == "complex":
        X = X + 1j
    return X


LABEL_KINDS = ("good", "unlabelled", "one_class", "non_integer", "strings", "wrong_length",
               "huge", "below_minus_one", "two_dim", "nan", "singletons")


@st.composite
def labels_for(draw, n):
    """Labels for n points, many of them bad."""
    kind = draw(st.sampled_from(LABEL_KINDS))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    y = rng.integers(-1, 3, size=n)
    if kind == "unlabelled":
        y[:] = -1
    elif kind == "one_class":
        y[:] = 0
    elif kind == "non_integer":
        y = y + 0.5
    elif kind == "strings":
        y = y.astype(str)
    elif kind == "wrong_length":
        y = y[:max(0, n - 1 - draw(st.integers(0, 3)))]
    elif kind == "huge":
        y = y * 10**12
    elif kind == "below_minus_one":
        y = y - 5
    elif kind == "two_dim":
        y = y[:, None]
    elif kind == "nan":
        y = np.full(n, np.nan)
    elif kind == "singletons":
        y = np.arange(n)
    return y
