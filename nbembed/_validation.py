"""Input and parameter checks whose errors say what is wrong and how to fix it."""

from __future__ import annotations

import math
import numbers
import warnings

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


def check_auto_or_number(value, name, description, **bounds):
    """Check a parameter that is the string "auto" or a number.

    Parameters
    ----------
    value : object
    name : str
        The parameter's name, used in the error messages.
    description : str
        What the number is, for the message when ``value`` is another string
        ("a number in (0, 1)").
    **bounds
        Passed to :func:`check_number`.

    Returns
    -------
    "auto" or number
    """
    if isinstance(value, str):
        if value != "auto":
            raise ValueError(f'{name} must be "auto" or {description}; got {value!r}.')
        return "auto"
    return check_number(value, name, **bounds)


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


#: Non-numeric columns named at most in the error for a data frame.
SHOWN_COLUMNS = 10


def table_kind(obj):
    """``(library, kind)`` of a pandas or polars table, such as ``("pandas", "DataFrame")``.

    Recognized by the class's module, so that neither library is imported
    here; subclasses (a GeoDataFrame, say) count as their base. Anything
    else gives ``(None, None)``.
    """
    for cls in type(obj).__mro__:
        library = cls.__module__.partition(".")[0]
        if library in ("pandas", "polars") and cls.__name__ in ("DataFrame", "Series",
                                                                "LazyFrame"):
            return library, cls.__name__
    return None, None


def frame_values(X, name="X"):
    """The values of a pandas or polars DataFrame as a float64 array (n_rows, n_columns).

    Missing values (NaN, None, pandas.NA, polars null) become NaN, which
    :func:`check_data` then refuses with their position; booleans become 0 and 1.

    Raises
    ------
    TypeError
        For columns that do not hold real numbers (text, categories, dates,
        complex numbers, objects), naming them and saying how to drop or
        encode them; for a polars LazyFrame, which must be collected first.
    """
    library, kind = table_kind(X)
    if kind == "LazyFrame":
        raise TypeError(f"{name} is a polars LazyFrame, which holds a query rather than "
                        f"values; collect it first ({name}.collect()).")
    if library == "pandas":
        from pandas.api.types import is_complex_dtype, is_numeric_dtype
        bad = [(column, str(dtype)) for column, dtype in X.dtypes.items()
               if not is_numeric_dtype(dtype) or is_complex_dtype(dtype)]
        if bad:
            _refuse_columns(bad, name, drop=f"{name}.drop(columns={{columns}})",
                            encode=f"pandas.get_dummies({name}, columns={{columns}})")
        return X.to_numpy(dtype=np.float64, na_value=np.nan)
    import polars as pl
    bad = [(column, str(dtype)) for column, dtype in X.schema.items()
           if not (dtype.is_numeric() or dtype == pl.Boolean)]
    if bad:
        _refuse_columns(bad, name, drop=f"{name}.drop({{columns}})",
                        encode=f"{name}.to_dummies({{columns}})")
    if X.width == 0:
        return np.empty((X.height, 0))
    return X.select(pl.all().cast(pl.Float64)).to_numpy()


def column_names(X):
    """The column names of a pandas or polars DataFrame ``X`` as an object array, or
    None for anything else and for frames whose names are not all strings (as
    scikit-learn's ``feature_names_in_``)."""
    if table_kind(X)[1] != "DataFrame":
        return None
    names = list(X.columns)
    if not names or not all(isinstance(c, str) for c in names):
        return None
    return np.asarray(names, dtype=object)


def record_column_names(estimator, X):
    """Set ``estimator.feature_names_in_`` to the column names of ``X`` (see
    :func:`column_names`), or remove it when ``X`` has none."""
    names = column_names(X)
    if names is not None:
        estimator.feature_names_in_ = names
    elif hasattr(estimator, "feature_names_in_"):
        del estimator.feature_names_in_


def check_column_names(estimator, X, name="X", owner=None):
    """Refuse a DataFrame ``X`` whose column names differ from those the estimator
    (called ``owner`` in the message; by default its class name) was fitted
    with, in scikit-learn's words and with the fix.

    Data without names (an array) are taken by position, as documented.
    """
    fitted = getattr(estimator, "feature_names_in_", None)
    names = column_names(X)
    if fitted is None or names is None or np.array_equal(fitted, names):
        return
    fitted_set, names_set = set(fitted), set(names)
    unseen = [c for c in names if c not in fitted_set]
    missing = [c for c in fitted if c not in names_set]
    details = ""
    if unseen:
        details += "Feature names unseen at fit time:\n" + "".join(f"- {c}\n" for c in unseen)
    if missing:
        details += ("Feature names seen at fit time, yet now missing:\n"
                    + "".join(f"- {c}\n" for c in missing))
    if not details:
        details = "Feature names must be in the same order as they were in fit.\n"
    raise ValueError(f"The feature names should match those that were passed during fit.\n"
                     f"{details}{owner or type(estimator).__name__} was fitted on the columns "
                     f"{list(fitted)}; select them in that order: "
                     f"{name}[list(model.feature_names_in_)].")


def _refuse_columns(bad, name, *, drop, encode):
    """Raise the TypeError of :func:`frame_values` for the (column, dtype) pairs ``bad``."""
    shown = ", ".join(f"{column!r} ({dtype})" for column, dtype in bad[:SHOWN_COLUMNS])
    if len(bad) > SHOWN_COLUMNS:
        shown += f" and {len(bad) - SHOWN_COLUMNS} more"
    columns = repr([column for column, _ in bad])
    raise TypeError(f"{name} has {len(bad)} non-numeric column(s): {shown}. nbembed embeds "
                    f"numbers only: drop those columns ({drop.format(columns=columns)}) or "
                    f"encode them as numbers first (for example one-hot: "
                    f"{encode.format(columns=columns)}, or "
                    f"sklearn.preprocessing.OneHotEncoder).")


def series_values(y, name="y"):
    """``y`` as a NumPy array; a pandas or polars Series with missing values gives NaN there.

    Other inputs (lists, arrays) go through ``np.asarray``. Missing values of a
    numeric Series with integers (pandas.NA, polars null) would otherwise make
    an array of objects, or lose their position.
    """
    library, kind = table_kind(y)
    if kind != "Series":
        return np.asarray(y)
    if library == "pandas":
        from pandas.api.types import is_numeric_dtype
        if is_numeric_dtype(y.dtype) and y.isna().any():
            return y.to_numpy(dtype=np.float64, na_value=np.nan)
        return y.to_numpy()
    if y.dtype.is_numeric() and y.null_count():
        return y.cast(float).fill_null(float("nan")).to_numpy()
    return y.to_numpy()


#: Data whose largest absolute value lies outside [MIN_MAGNITUDE, MAX_MAGNITUDE]
#: (all-zero data aside) is refused: the squares of its distances leave the
#: range of double precision.
MAX_MAGNITUDE = 1e100
MIN_MAGNITUDE = 1e-100


def check_data(X, *, name="X", min_samples=1, allow_sparse=False, dtype=np.float64):
    """Validate a 2-D data matrix and return it as a float array.

    Accepts anything array-like (lists, pandas and polars DataFrames of
    numeric columns); scipy sparse matrices when ``allow_sparse`` (returned as
    CSR).

    Raises
    ------
    TypeError
        For sparse input where it is not supported, or non-numeric data (for
        a data frame, naming its non-numeric columns).
    ValueError
        For arrays that are not 2-D, are empty, have fewer than ``min_samples``
        rows, contain NaN or infinity, or values so large or small that squared
        distances leave double precision (see ``MAX_MAGNITUDE``).
    """
    columns = None  # a data frame's, to name the column of a missing value
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
        library, kind = table_kind(X)
        if kind == "Series":
            raise ValueError(f"{name} must be 2-D (n_samples, n_features); got a {library} "
                             f"Series. Pass a DataFrame instead ({name}.to_frame()).")
        if kind is not None:
            values = frame_values(X, name)
            columns, X = list(X.columns), values
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
        where = "" if columns is None else f", column {columns[bad[1]]!r}"
        raise ValueError(f"{name} contains NaN or infinity (first at index {tuple(bad)}"
                         f"{where}); remove or impute those values first.")
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
    if not sp.issparse(X) and table_kind(X)[1] is None and np.asarray(X).ndim == 1:
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


def check_nonnegative(D, *, name, fix):
    """Refuse a matrix (dense or sparse) with negative entries.

    Parameters
    ----------
    D : ndarray or scipy.sparse matrix
    name : str
        What ``D`` is, for the message ("X (precomputed dissimilarities)").
    fix : str
        The sentence that says how to correct it.

    Raises
    ------
    ValueError
        Naming the number of negative entries and the first one (row, column, value).
    """
    values = D.data if sp.issparse(D) else D
    negative = values < 0
    if not np.any(negative):
        return D
    if sp.issparse(D):
        rows = sp.csr_matrix(D)
        negative = rows.data < 0
        entry = int(np.flatnonzero(negative)[0])
        row = int(np.searchsorted(rows.indptr, entry, side="right")) - 1
        column, value = int(rows.indices[entry]), float(rows.data[entry])
    else:
        row, column = (int(i) for i in np.argwhere(negative)[0])
        value = float(D[row, column])
    count = int(np.count_nonzero(negative))
    entries = "entry" if count == 1 else "entries"
    raise ValueError(f"{name} has {count} negative {entries} (the first is {value:g} at row "
                     f"{row}, column {column}); dissimilarities "
                     f"and affinities must be non-negative. {fix}")


def check_square_nonnegative(D, *, name, zero_diagonal=True):
    """Validate a precomputed square matrix of dissimilarities or affinities."""
    if D.shape[0] != D.shape[1]:
        raise ValueError(f"{name} must be a square (n_samples, n_samples) matrix; got shape "
                         f"{D.shape}.")
    check_nonnegative(D, name=name, fix="Pass distances (or affinities) computed by a metric, "
                                        "or clip rounding errors below zero with "
                                        "np.maximum(X, 0).")
    if zero_diagonal:
        diag = D.diagonal()
        if np.any(diag != 0):
            raise ValueError(f"{name} must have a zero diagonal; found {np.count_nonzero(diag)} "
                             f"non-zero diagonal entries.")
    return D


#: ``fit`` warns when at least this fraction of the rows repeat an earlier row.
REPEATED_ROWS_WARN_FRACTION = 0.01
#: Rows of a precomputed matrix scanned at once for zero dissimilarities.
REPEATED_ROWS_BLOCK = 2**22


def count_repeated_rows(X, metric="euclidean"):
    """Number of rows that repeat an earlier row exactly, and whether all rows coincide.

    Data rows (dense or CSR) repeat when they are equal value for value (0.0
    and -0.0 alike, stored zeros ignored). With ``metric="precomputed"`` ``X``
    is a square matrix of dissimilarities; a point repeats when it is at
    dissimilarity zero from an earlier one, and all coincide when every
    dissimilarity is zero (a sparse matrix reads as the dense one, missing
    entries zero).

    Parameters
    ----------
    X : ndarray or scipy.sparse.csr_matrix (n_samples, n_features), validated
    metric : str

    Returns
    -------
    n_repeated : int
    all_identical : bool
    """
    n = X.shape[0]
    if metric == "precomputed":
        return _repeated_points(X), (X.count_nonzero() if sp.issparse(X) else
                                     np.count_nonzero(X)) == 0
    # Equal rows have equal sums (each row is summed in the same order), so only
    # rows whose sum another shares are compared.
    sums = np.asarray(X.sum(axis=1)).ravel()
    order = np.argsort(sums, kind="stable")
    tied = np.zeros(n, dtype=bool)
    same = sums[order][1:] == sums[order][:-1]
    tied[1:] |= same
    tied[:-1] |= same
    candidates = np.sort(order[tied])
    if candidates.size == 0:
        return 0, n == 1
    if sp.issparse(X):
        rows = sp.csr_matrix(X[candidates], copy=True)
        rows.eliminate_zeros()
        rows.sort_indices()
        keys = {rows.indices[a:b].tobytes() + (rows.data[a:b] + 0.0).tobytes()
                for a, b in zip(rows.indptr[:-1], rows.indptr[1:])}
        n_distinct = len(keys)
    else:
        rows = np.ascontiguousarray(X[candidates], dtype=np.float64) + 0.0
        keys = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
        n_distinct = np.unique(keys).size
    repeated = int(candidates.size - n_distinct)
    return repeated, repeated == n - 1


def _repeated_points(D):
    """Points at dissimilarity zero from an earlier point of the square matrix ``D``."""
    n = D.shape[0]
    block = max(1, REPEATED_ROWS_BLOCK // n)
    columns = np.arange(n)
    repeated = 0
    for start in range(0, n, block):
        rows = D[start:start + block]
        rows = rows.toarray() if sp.issparse(rows) else np.asarray(rows)
        earlier = columns[None, :] < np.arange(start, start + rows.shape[0])[:, None]
        repeated += int(np.count_nonzero(((rows == 0) & earlier).any(axis=1)))
    return repeated


def check_repeated_rows(X, *, metric="euclidean", name="X", stacklevel=2):
    """Refuse data whose points all coincide; warn when many rows are exact copies.

    Neighbourhoods calibrated to a perplexity cannot tell copies apart: they
    get the same neighbours and end at (nearly) the same place, which is
    right when the copies are meant and a surprise when they come from a
    loading or joining mistake.

    Parameters
    ----------
    X : ndarray or scipy.sparse.csr_matrix, validated
        Data rows, or a square matrix of dissimilarities with
        ``metric="precomputed"``.
    metric : str
    name : str
        The data's name in the messages.
    stacklevel : int
        Of the warning, counted from the caller of this function (1: the caller).

    Returns
    -------
    int
        The number of repeated rows (see :func:`count_repeated_rows`).

    Raises
    ------
    ValueError
        If all points coincide: the data have no spread.

    Warns
    -----
    UserWarning
        If at least ``REPEATED_ROWS_WARN_FRACTION`` of the rows repeat an earlier
        row, saying how many.
    """
    n = X.shape[0]
    repeated, identical = count_repeated_rows(X, metric)
    precomputed = metric == "precomputed"
    if identical:
        what = (f"every dissimilarity in {name} is zero" if precomputed else
                f"all {n} rows of {name} are identical")
        raise ValueError(f"{name} has no spread: {what}, so all points coincide and no "
                         f"neighbourhood tells them apart; there is nothing to embed. Check "
                         f"how {name} was built (loading, joining or scaling that lost the "
                         f"values).")
    if repeated and repeated >= REPEATED_ROWS_WARN_FRACTION * n:
        what = ("points are at dissimilarity zero from an earlier point" if precomputed else
                "rows repeat an earlier row exactly")
        fix = ("merge those points" if precomputed else
               f"remove the copies (np.unique({name}, axis=0))")
        warnings.warn(f"{repeated} of the {n} {what} (duplicates): copies get the same "
                      f"neighbourhood and will be placed at (nearly) the same spot. If they "
                      f"are not meant, {fix} before fitting.", UserWarning,
                      stacklevel=stacklevel + 1)
    return repeated


def check_labels(y, n_samples, *, name="y"):
    """Validate integer class labels with -1 for unlabelled points.

    ``y`` may be a list, an array or a pandas or polars Series.

    Returns
    -------
    ndarray of int64, shape (n_samples,)

    Raises
    ------
    ValueError
        For a wrong shape, missing labels (NaN, None, pandas.NA, polars null:
        unlabelled points are -1), labels that are not integers or are below -1.
    """
    y = series_values(y, name)
    if y.ndim != 1 or y.shape[0] != n_samples:
        raise ValueError(f"{name} must be 1-D with one label per sample ({n_samples}); got "
                         f"shape {y.shape}.")
    if y.dtype.kind == "f":
        missing = np.flatnonzero(np.isnan(y))
        if missing.size:
            raise ValueError(f"{name} has {missing.size} missing label(s) (the first at "
                             f"position {missing[0]}); mark unlabelled points with -1 instead "
                             f"(for a Series: {name}.fillna(-1) in pandas, "
                             f"{name}.fill_null(-1) in polars).")
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
