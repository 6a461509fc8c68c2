"""Checks of the data the :class:`~nbembed.widget.Explorer` is created with.

Each check raises ``TypeError`` or ``ValueError`` with what was expected, so
that a wrong argument fails when the widget is made rather than in the
browser, and returns the value in the form the widget sends or keeps.

Threads: functions of their arguments, without state of their own.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..annotations import Annotations
from . import palette
from .traits import UINT8, encode

#: Largest ``images`` array (as uint8) sent to the browser.
MAX_IMAGE_BYTES = 64 * 2**20
#: Most categories of a non-float ``colors`` array.
MAX_CATEGORIES = 1024


def count_samples(X):
    """The number of points in ``X`` (its first dimension, or its length).

    Raises
    ------
    TypeError
        If ``X`` has neither a shape nor a length.
    """
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0])
    try:
        return len(X)
    except TypeError:
        raise TypeError(f"X must be array-like (n_samples, n_features); got "
                        f"{type(X).__name__}.") from None


def initial_annotations(n, y, class_names, annotations):
    """The annotations to start from: ``annotations`` as given, or new ones
    holding the labels ``y`` (or nothing).

    Parameters
    ----------
    n : int
        Number of points.
    y : ndarray of int (n,) or None
        Checked labels, -1 for unlabelled points.
    class_names : list of str or None
    annotations : Annotations or None

    Returns
    -------
    Annotations

    Raises
    ------
    TypeError, ValueError
        If ``annotations`` is not an :class:`~nbembed.Annotations` for ``n``
        points, or ``class_names`` disagree with its class names.
    """
    if annotations is None:
        if y is not None:
            return Annotations.from_labels(y, class_names=class_names)
        return Annotations(n, class_names=class_names)
    if not isinstance(annotations, Annotations):
        raise TypeError(f"annotations must be an nbembed.Annotations (for example "
                        f"Annotations.from_json(text)); got {type(annotations).__name__}.")
    if annotations.n_samples != n:
        raise ValueError(f"annotations are for {annotations.n_samples} points but X has {n}.")
    if class_names is not None and \
            list(class_names) != annotations.class_names[:len(class_names)]:
        raise ValueError(f"class_names {list(class_names)} differ from the class names of "
                         f"the annotations {annotations.class_names}; leave class_names out "
                         f"when passing annotations.")
    return annotations


def check_colors(colors, n, name="colors"):
    """The colouring of a user array with one value per point (``name`` in messages).

    Returns
    -------
    palette.Coloring
        Categories for integers and strings, a colour ramp for floats.

    Raises
    ------
    TypeError, ValueError
        For a wrong shape or dtype, or more than :data:`MAX_CATEGORIES`
        categories.
    """
    values = np.asarray(colors)
    if values.shape != (n,):
        raise ValueError(f"{name} must have one value per point, shape ({n},); got "
                         f"{values.shape}.")
    if values.dtype.kind not in "biufUSO":
        raise TypeError(f"{name} must hold numbers or strings; got dtype {values.dtype}.")
    if values.dtype.kind == "O":
        values = values.astype(str)  # mixed objects (a pandas column with None) as text
    if values.dtype.kind != "f" and len(np.unique(values)) > MAX_CATEGORIES:
        raise ValueError(f"{name} has more than {MAX_CATEGORIES} distinct values; pass "
                         f"floats (np.asarray(values, dtype=float)) for a colour ramp.")
    return palette.by_values(values)


def check_hover_text(hover_text, n):
    """One tooltip text per point, as a list of str.

    Raises
    ------
    ValueError
        If there are not ``n`` texts.
    """
    texts = [str(t) for t in hover_text]
    if len(texts) != n:
        raise ValueError(f"hover_text must have one entry per point ({n}); got {len(texts)}.")
    return texts


def check_images(images, n):
    """Thumbnails as the browser takes them: uint8 bytes and the shape of one image.

    Images that are not uint8 are scaled to 0..255 over the whole array.

    Returns
    -------
    data : bytes
    shape : list of int
        ``[h, w]`` or ``[h, w, channels]``.

    Raises
    ------
    TypeError, ValueError
        For a wrong shape or dtype, or more than :data:`MAX_IMAGE_BYTES`.
    """
    images = np.asarray(images)
    if images.ndim not in (3, 4) or images.shape[0] != n or \
            (images.ndim == 4 and images.shape[3] not in (3, 4)):
        raise ValueError(f"images must have shape (n_samples, h, w) or (n_samples, h, w, 3 "
                         f"or 4) with n_samples = {n}; got {images.shape}.")
    if images.dtype.kind not in "biuf":
        raise TypeError(f"images must be numeric; got dtype {images.dtype}.")
    if images.size > MAX_IMAGE_BYTES:
        raise ValueError(f"images would send {images.size / 2**20:.0f} MiB to the browser "
                         f"(limit {MAX_IMAGE_BYTES / 2**20:.0f} MiB); pass smaller thumbnails.")
    if images.dtype != np.uint8:
        images = images.astype(np.float64)
        low, high = np.nanmin(images), np.nanmax(images)
        scale = 255.0 / (high - low) if high > low else 0.0
        images = np.nan_to_num((images - low) * scale).round().astype(np.uint8)
    return encode(images, UINT8), list(images.shape[1:])


def check_data(data, n):
    """The colourings of the columns of a table with one row per point.

    Parameters
    ----------
    data : pandas.DataFrame or dict of array-like
        Columns to colour by, under their names.
    n : int

    Returns
    -------
    dict of str to palette.Coloring

    Raises
    ------
    TypeError, ValueError
        If ``data`` has no columns by name, or a column fails :func:`check_colors`.
    """
    if not hasattr(data, "keys") or not callable(data.keys):
        raise TypeError(f"data must be a pandas DataFrame or a dict of columns; got "
                        f"{type(data).__name__}.")
    return {str(col): check_colors(data[col], n, f"data[{col!r}]") for col in data.keys()}


def take_rows(values, rows):
    """The rows ``rows`` of an array, sparse matrix, list or data frame (pandas, polars)."""
    if values is None:
        return None
    if hasattr(values, "iloc"):
        return values.iloc[rows]
    if sp.issparse(values):
        return values.tocsr()[rows]
    if hasattr(values, "to_numpy"):  # polars
        return values[rows]
    if isinstance(values, dict):
        return {name: take_rows(column, rows) for name, column in values.items()}
    if isinstance(values, (list, tuple)):
        return [values[i] for i in rows]
    return np.asarray(values)[rows]
