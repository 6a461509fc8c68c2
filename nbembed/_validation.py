"""Input and parameter checks whose errors say what is wrong and how to fix it."""

from __future__ import annotations

import math
import numbers

import numpy as np
import scipy.sparse as sp

from . import _config


def check_number(value, name, *, low=None, high=None, low_open=False, high_open=False,
                 integer=False):
    """Check that ``value`` is a real number inside an interval.

    Parameters
    ----------
    value : object
        The value to check.
    name : str
        The parameter's name, used in the error message.
    low, high : float or None
        Bounds of the accepted interval; ``None`` means unbounded (an
        unbounded end is open: infinity itself is never accepted).
    low_open, high_open : bool
        Whether the bound itself is excluded.
    integer : bool
        Require an integer.

    Returns
    -------
    number
        ``value`` as a Python ``int`` or ``float``.

    Raises
    ------
    TypeError
        If ``value`` is not a (real, or integer) number.
    ValueError
        If it is NaN or infinite, or lies outside the interval.
    """
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind):
        what = "an integer" if integer else "a real number"
        raise TypeError(f"{name} must be {what}, got {value!r} of type {type(value).__name__}.")
    value = int(value) if integer else float(value)
    if isinstance(value, float) and math.isnan(value):
        raise ValueError(f"{name} must be a number, got NaN.")
    if isinstance(value, float) and math.isinf(value):
        raise ValueError(f"{name} must be finite, got {value!r}; pass a finite number.")
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and (value >= high if high_open else value > high)
    if too_low or too_high:
        left = "(" if low_open or low is None else "["
        right = ")" if high_open or high is None else "]"
        lo = "-inf" if low is None else f"{low:g}"
        hi = "inf" if high is None else f"{high:g}"
        raise ValueError(f"{name} must be in {left}{lo}, {hi}{right}, got {value!r}.")
    return value


def check_option(value, name, options):
    """Check that ``value`` is one of ``options`` and return it."""
    if isinstance(value, str) and value in options:
        return value
    listed = ", ".join(repr(o) for o in options)
    raise ValueError(f"{name} must be one of {listed}; got {value!r}.")


def check_random_state(random_state, name="random_state"):
    """The generator a ``random_state`` parameter names, as scikit-learn reads it.

    None is NumPy's global RandomState, an integer seeds a new one, a
    RandomState is used as it is.

    Returns
    -------
    numpy.random.RandomState

    Raises
    ------
    ValueError
        If ``random_state`` is not None, an integer seed in [0, 2**32 - 1] or a
        ``numpy.random.RandomState``.
    """
    if random_state is None:
        return np.random.mtrand._rand
    if isinstance(random_state, np.random.RandomState):
        return random_state
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool) \
            and 0 <= random_state < 2**32:
        return np.random.RandomState(int(random_state))
    raise ValueError(f"{name} must be None, an integer in [0, 2**32 - 1] or a "
                     f"numpy.random.RandomState; got {random_state!r}.")


#: Metrics accepted without asking scikit-learn for its list.
COMMON_METRICS = ("euclidean", "cosine", "precomputed")


def check_metric(metric, name="metric"):
    """Check a metric of ``sklearn.metrics.pairwise_distances``: a name, a callable or
    "precomputed"; return it."""
    if callable(metric) or (isinstance(metric, str) and metric in COMMON_METRICS):
        return metric
    if isinstance(metric, str):
        from sklearn.neighbors import VALID_METRICS
        if metric in VALID_METRICS["brute"]:
            return metric
    raise ValueError(f"{name} must be 'precomputed', a callable or a metric name of "
                     f"sklearn.metrics.pairwise_distances (such as 'euclidean', 'cosine' or "
                     f"'manhattan'); got {metric!r}.")


#: Data whose largest absolute value lies outside [MIN_MAGNITUDE, MAX_MAGNITUDE]
#: (all-zero data aside) is refused: the squares of its distances leave the
#: range of double precision.
MAX_MAGNITUDE = 1e100
MIN_MAGNITUDE = 1e-100


def check_data(X, *, name="X", min_samples=1, allow_sparse=False, dtype=np.float64):
    """Validate a 2-D data matrix and return it as a float array.

    Accepts anything array-like (lists, pandas frames); scipy sparse matrices
    when ``allow_sparse`` (returned as CSR).

    Raises
    ------
    TypeError
        For sparse input where it is not supported, or non-numeric data.
    ValueError
        For arrays that are not 2-D, are empty, have fewer than ``min_samples``
        rows, contain NaN or infinity, or values so large or small that squared
        distances leave double precision (see ``MAX_MAGNITUDE``).
    """
    if sp.issparse(X):
        if not allow_sparse:
            raise TypeError(f"{name} is a sparse matrix, which is not supported here; "
                            f"pass a dense array (X.toarray()).")
        if X.ndim != 2:
            raise ValueError(f"{name} must be a 2-D sparse matrix (n_samples, n_features); "
                             f"got shape {X.shape}.")
        if X.dtype.kind not in "biuf":
            raise TypeError(f"{name} is a sparse matrix of {X.dtype} values; it must hold real "
                            f"numbers (for example {name}.astype(float)).")
        X = sp.csr_matrix(X, dtype=dtype)
        if not X.has_canonical_format:  # repeated entries add up; the caller's X is kept
            X = X.copy()
            X.sum_duplicates()
        values = X.data
    else:
        try:
            X = np.asarray(X)
        except Exception as err:  # pragma: no cover - exotic inputs
            raise TypeError(f"{name} could not be converted to an array: {err}") from err
        if X.dtype.kind not in "biuf":
            if X.dtype.kind in "USV":
                raise TypeError(f"{name} holds {X.dtype} values, not numbers; convert them "
                                f"first (for example {name}.astype(float)).")
            if X.dtype.kind == "c":
                raise ValueError(f"Complex data not supported: {name} has complex values; pass real numbers.")
            try:
                X = X.astype(dtype)
            except ValueError as err:
                raise ValueError(f"{name} must be numeric; got dtype {X.dtype}: {err}") from err
        if X.ndim != 2:
            hint = " Reshape a single feature with X.reshape(-1, 1)." if X.ndim == 1 else ""
            raise ValueError(f"{name} must be a 2-D array (n_samples, n_features); "
                             f"got an array with {X.ndim} dimension(s) and shape {X.shape}.{hint}")
        X = np.ascontiguousarray(X, dtype=dtype)
        values = X
    n, d = X.shape
    if n == 0:
        raise ValueError(f"{name} is empty: 0 sample(s) (shape={X.shape}) while a minimum of "
                         f"{min_samples} is required.")
    if d == 0:
        raise ValueError(f"{name} is empty: 0 feature(s) (shape={X.shape}) while a minimum of 1 "
                         f"is required.")
    if n < min_samples:
        raise ValueError(f"{name} has n_samples = {n}; at least {min_samples} samples are "
                         f"needed.")
    if not np.all(np.isfinite(values)):
        bad = _first_non_finite(X)
        raise ValueError(f"{name} contains NaN or infinity (first at index {tuple(bad)}); "
                         f"remove or impute those values first.")
    check_magnitude(values, name)
    return X


def _first_non_finite(X):
    """(row, column) of the first NaN or infinity of a dense array or CSR matrix."""
    if not sp.issparse(X):
        return tuple(int(i) for i in np.argwhere(~np.isfinite(X))[0])
    entry = int(np.flatnonzero(~np.isfinite(X.data))[0])
    row = int(np.searchsorted(X.indptr, entry, side="right")) - 1
    return row, int(X.indices[entry])


#: Metrics computed from the rows of a sparse X without densifying it
#: (scikit-learn's ``pairwise_distances`` and ``NearestNeighbors`` work on the
#: stored entries: ||x||^2 + ||y||^2 - 2 x.y, and 1 - x.y / (||x|| ||y||)).
SPARSE_METRICS = ("euclidean", "cosine")


def check_sparse_metric(X, metric, name="X"):
    """Refuse a sparse ``X`` with a metric that would need its rows dense.

    Raises
    ------
    TypeError
        If ``X`` is sparse and ``metric`` is not one of ``SPARSE_METRICS``.
    """
    if sp.issparse(X) and not (isinstance(metric, str) and metric in SPARSE_METRICS):
        listed = " or ".join(repr(m) for m in SPARSE_METRICS)
        raise TypeError(f"{name} is a sparse matrix, which is supported with metric={listed} "
                        f"only; got metric={metric!r}. Use one of those, or pass a dense "
                        f"array ({name}.toarray()) for this metric.")


def check_cosine_rows(X, name="X"):
    """Refuse rows of all zeros, whose cosine distance is undefined.

    Raises
    ------
    ValueError
        Naming the number of such rows and the first one.
    """
    if sp.issparse(X):
        norms = np.asarray(abs(X).max(axis=1).todense()).ravel()
    else:
        norms = np.max(np.abs(X), axis=1)
    zero = np.flatnonzero(norms == 0)
    if zero.size:
        raise ValueError(f"metric='cosine' is undefined for a row of all zeros (it has no "
                         f"direction); {name} has {zero.size} such row(s), the first is row "
                         f"{zero[0]}. Remove those rows or use metric='euclidean'.")


def check_new_data(X, name="X"):
    """Validate data given to a fitted estimator (``transform``, ``predict``): a 2-D
    array as :func:`check_data` requires, with scikit-learn's advice for a single
    sample given as a 1-D array."""
    if not sp.issparse(X) and np.asarray(X).ndim == 1:
        raise ValueError(f"Expected a 2-D array for {name}, got a 1-D array. Reshape your data: "
                         f"{name}.reshape(1, -1) for a single sample.")
    return check_data(X, name=name)


def check_magnitude(values, name="X"):
    """Refuse data whose squared distances would leave double precision.

    Raises
    ------
    ValueError
        If the largest absolute value of ``values`` exceeds ``MAX_MAGNITUDE``,
        or is positive and below ``MIN_MAGNITUDE``; the message says to divide
        the data by a constant.
    """
    largest = float(np.max(np.abs(values))) if values.size else 0.0
    if largest > MAX_MAGNITUDE or 0.0 < largest < MIN_MAGNITUDE:
        fault = "overflow" if largest > MAX_MAGNITUDE else "underflow"
        raise ValueError(f"{name}'s largest absolute value is {largest:.3g}: squared distances "
                         f"between its rows would {fault} in floating point. Divide {name} by "
                         f"a constant first (for example {name} / abs({name}).max()).")


def check_square_nonnegative(D, *, name, zero_diagonal=True):
    """Validate a precomputed square matrix of dissimilarities or affinities."""
    if D.shape[0] != D.shape[1]:
        raise ValueError(f"{name} must be a square (n_samples, n_samples) matrix; got shape "
                         f"{D.shape}.")
    values = D.data if sp.issparse(D) else D
    if np.any(values < 0):
        raise ValueError(f"{name} has negative entries; dissimilarities and affinities must "
                         f"be non-negative.")
    if zero_diagonal:
        diag = D.diagonal()
        if np.any(diag != 0):
            raise ValueError(f"{name} must have a zero diagonal; found {np.count_nonzero(diag)} "
                             f"non-zero diagonal entries.")
    return D


def check_labels(y, n_samples, *, name="y"):
    """Validate integer class labels with -1 for unlabelled points.

    Returns
    -------
    ndarray of int64, shape (n_samples,)
    """
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n_samples:
        raise ValueError(f"{name} must be 1-D with one label per sample ({n_samples}); got "
                         f"shape {y.shape}.")
    if y.dtype.kind == "f":
        if not np.all(np.isfinite(y)) or np.any(y != np.round(y)):
            raise ValueError(f"{name} must hold integer class labels (-1 for unlabelled); "
                             f"got non-integer values.")
    elif y.dtype.kind not in "iub":
        raise ValueError(f"Unknown label type: {name} must hold integer class labels (-1 for "
                         f"unlabelled); got "
                         f"dtype {y.dtype}. Encode string labels first, e.g. with "
                         f"sklearn.preprocessing.LabelEncoder.")
    y = y.astype(np.int64)
    if np.any(y < -1):
        raise ValueError(f"{name} has labels below -1 (e.g. {int(y[y < -1][0])}); use -1 for "
                         f"unlabelled points and 0..K-1 for classes.")
    return y


def check_dense_allowed(n, *, what, alternative):
    """Refuse an n x n float64 allocation larger than ``MAX_DENSE_BYTES``."""
    check_allocation(8 * n * n, what=f"{what} for n = {n}", array="an n x n array",
                     alternative=alternative)


def check_allocation(nbytes, *, what, array="arrays", alternative):
    """Refuse to allocate more than ``MAX_DENSE_BYTES`` at once, with a MemoryError
    that says what needed it and what to do instead."""
    if nbytes > _config.MAX_DENSE_BYTES:
        raise MemoryError(
            f"{what} would need {array} of {nbytes / 2**30:.1f} GiB, above the limit of "
            f"{_config.MAX_DENSE_BYTES / 2**30:.1f} GiB. {alternative} (or raise the limit "
            f"with the environment variable NBEMBED_MAX_DENSE_BYTES).")


def check_annotations(annotations, n_samples, data="X"):
    """Check that ``annotations`` is an :class:`~nbembed.Annotations` for ``n_samples`` points.

    Parameters
    ----------
    annotations : object
    n_samples : int
        The number of points of the data the annotations go with.
    data : str
        The data's name in the error message ("X", "P", ...).

    Returns
    -------
    Annotations

    Raises
    ------
    TypeError
        If it is not an ``Annotations`` object (a dict, say).
    ValueError
        If it is for another number of points.
    """
    from .annotations import Annotations  # the annotations package imports this module

    if not isinstance(annotations, Annotations):
        raise TypeError(f"annotations must be an nbembed.Annotations object (build one with "
                        f"nbembed.Annotations(n_samples) or Annotations.from_labels(y)); got "
                        f"{type(annotations).__name__}.")
    if annotations.n_samples != n_samples:
        raise ValueError(f"annotations are for {annotations.n_samples} samples but {data} has "
                         f"{n_samples}.")
    return annotations
