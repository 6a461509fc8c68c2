"""Checks of what the annotations are given: points, pairs, labels and classes.

Each check raises ``TypeError`` or ``ValueError`` with a message that says what
to change, or returns its input in the form the annotations store. Selections
of points are accepted as integer arrays, lists, ranges, sets, single integers
or boolean masks of length ``n_samples``; negative indices are rejected rather
than wrapped around.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from .._validation import check_number
from .pairs import sorted_unique, unique_pairs

#: Largest accepted deviation of a probability vector's sum from 1.
SUM_TOLERANCE = 1e-6


def check_class_names(class_names):
    """Distinct class names as a list of str.

    Parameters
    ----------
    class_names : iterable of str

    Returns
    -------
    list of str

    Raises
    ------
    TypeError
        If ``class_names`` is a single string or holds something else than strings.
    ValueError
        If a name repeats.
    """
    if isinstance(class_names, str):
        raise TypeError("class_names must be a list of strings, not a single string; "
                        "wrap it in a list.")
    names = list(class_names)
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"class names must be strings; got {name!r} of type "
                            f"{type(name).__name__}.")
    repeated = sorted(name for name, count in Counter(names).items() if count > 1)
    if repeated:
        raise ValueError(f"class names must be distinct; repeated: {repeated}.")
    return names


def _check_range(arr, n_samples, name):
    if arr.size and arr.min() < 0:
        raise ValueError(f"{name} contains negative indices (e.g. {int(arr[arr < 0][0])}); "
                         f"indices must lie in [0, {n_samples}) and are not wrapped "
                         f"around. Use i % n_samples if you meant counting from the end.")
    if arr.size and arr.max() >= n_samples:
        raise ValueError(f"{name} contains indices out of range (e.g. "
                         f"{int(arr[arr >= n_samples][0])}); indices must lie in "
                         f"[0, {n_samples}) for n_samples = {n_samples}.")


def check_indices(indices, n_samples, name):
    """A selection of points as int64 indices, in the given order, duplicates kept.

    Parameters
    ----------
    indices : array-like of int, range, set or boolean mask
        A non-empty selection; a mask has one entry per point.
    n_samples : int
        Number of points.
    name : str
        What the selection is called in error messages.

    Returns
    -------
    ndarray of int64, shape (n_selected,)

    Raises
    ------
    TypeError
        If ``indices`` holds neither integers nor booleans.
    ValueError
        If the selection is empty, not 1-D, a mask of the wrong length, or
        holds an index outside ``[0, n_samples)``.
    """
    if isinstance(indices, (set, frozenset)):
        indices = sorted(indices)
    arr = np.asarray(indices)
    if arr.dtype.kind == "b":
        if arr.ndim != 1 or arr.shape[0] != n_samples:
            raise ValueError(f"{name} is a boolean mask of shape {arr.shape}; a mask needs "
                             f"one entry per sample, shape ({n_samples},).")
        arr = np.flatnonzero(arr)
    if arr.size == 0:
        raise ValueError(f"{name} is an empty selection; select at least one point.")
    if arr.dtype.kind not in "iu":
        hint = (" Convert whole-number floats with np.asarray(indices).astype(int)."
                if arr.dtype.kind == "f" else "")
        raise TypeError(f"{name} must hold integer indices or be a boolean mask; got "
                        f"dtype {arr.dtype}.{hint}")
    if arr.ndim > 1:
        raise ValueError(f"{name} must be 1-D; got shape {arr.shape}.")
    _check_range(arr, n_samples, name)
    return arr.reshape(-1).astype(np.int64)


def check_selection(indices, n_samples, name="indices"):
    """A selection of points, sorted and without duplicates.

    As :func:`check_indices`, with the points sorted and each kept once.
    """
    return sorted_unique(check_indices(indices, n_samples, name))


def check_pairs(pairs, n_samples, name="pairs"):
    """Pairs of points written ``i < j``, each once, sorted by rows.

    Parameters
    ----------
    pairs : array-like of int, shape (m, 2)
        Pairs of distinct points, each in either order, repetitions allowed.
    n_samples : int
        Number of points.
    name : str, default "pairs"
        What the pairs are called in error messages.

    Returns
    -------
    ndarray of int64, shape (k, 2)
        The k <= m distinct pairs.

    Raises
    ------
    TypeError
        If the entries are not integers.
    ValueError
        If there are no pairs, their shape is not (m, 2), an index lies
        outside ``[0, n_samples)``, or a point is paired with itself.
    """
    arr = np.asarray(pairs)
    if arr.size == 0:
        raise ValueError(f"{name} is empty; give at least one pair.")
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer indices; got dtype {arr.dtype}.")
    if arr.ndim != 2 or arr.shape[1] != 2:
        hint = " For a single pair use [[i, j]]." if arr.shape == (2,) else ""
        raise ValueError(f"{name} must have shape (m, 2); got {arr.shape}.{hint}")
    _check_range(arr, n_samples, name)
    arr = arr.astype(np.int64)
    same = np.flatnonzero(arr[:, 0] == arr[:, 1])
    if len(same):
        raise ValueError(f"{name} contains self-pairs such as ({arr[same[0], 0]}, "
                         f"{arr[same[0], 1]}) at row {same[0]}; a point cannot be "
                         f"paired with itself.")
    return unique_pairs([np.sort(arr, axis=1)])


def check_confidence(confidence):
    """A confidence in (0, 1], as a float."""
    return check_number(confidence, "confidence", low=0, high=1, low_open=True)


def check_probabilities(probs, n_rows, n_classes, fixed, *, renormalize):
    """Probability rows over the classes, as float64 of shape (n_rows, width).

    Parameters
    ----------
    probs : array-like of float, shape (width,) or (n_rows, width)
        One vector for all rows, or one row each. ``width`` is at least
        ``n_classes``; more only when the number of classes is not fixed.
    n_rows : int
        Number of rows wanted.
    n_classes : int
        The current number of classes.
    fixed : bool
        Whether the number of classes is fixed.
    renormalize : bool
        Divide each row by its sum, which may differ from 1 by up to
        :data:`SUM_TOLERANCE`.

    Returns
    -------
    ndarray of float64, shape (n_rows, width)

    Raises
    ------
    TypeError
        If ``probs`` is not numeric.
    ValueError
        If it has the wrong shape, negative or non-finite entries, or rows
        not summing to 1.
    """
    probs = np.asarray(probs)
    if probs.dtype.kind not in "biuf":
        raise TypeError(f"probabilities must be numeric; got dtype {probs.dtype}.")
    probs = probs.astype(np.float64)
    if probs.ndim == 1:
        probs = np.tile(probs, (n_rows, 1))
    elif probs.ndim != 2 or probs.shape[0] != n_rows:
        raise ValueError(f"probabilities must be one vector of length n_classes or an "
                         f"array with one row per selected point, shape ({n_rows}, "
                         f"n_classes); got shape {probs.shape}.")
    width = probs.shape[1]
    if width == 0:
        raise ValueError("probabilities are empty; give one entry per class.")
    if width < n_classes:
        raise ValueError(f"probabilities have {width} entries but there are "
                         f"{n_classes} classes; give one entry per class (zeros "
                         f"for classes that do not apply).")
    if width > n_classes and fixed:
        raise ValueError(f"probabilities have {width} entries but n_classes is fixed at "
                         f"{n_classes}; use add_class() to create a new class.")
    if not np.all(np.isfinite(probs)):
        raise ValueError("probabilities contain NaN or infinity.")
    if np.any(probs < 0):
        raise ValueError(f"probabilities must be >= 0; got {float(probs[probs < 0][0])!r}.")
    sums = probs.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1) > SUM_TOLERANCE)
    if len(bad):
        raise ValueError(f"probabilities must sum to 1 (within {SUM_TOLERANCE:g}); row "
                         f"{bad[0]} sums to {float(sums[bad[0]])!r}.")
    if renormalize:
        probs /= sums[:, None]
    return probs


def check_label(label, n_classes, fixed):
    """A class index ``>= 0``, below ``n_classes`` when the number of classes is fixed."""
    label = check_number(label, "label", low=0, integer=True)
    if fixed and label >= n_classes:
        raise ValueError(f"label {label} is out of range for n_classes = {n_classes} "
                         f"(classes 0..{n_classes - 1}); use add_class() to create "
                         f"a new class.")
    return label
