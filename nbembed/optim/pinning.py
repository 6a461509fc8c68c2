"""Pinned points: the checks and bookkeeping behind ``run.pin``, ``unpin`` and ``move``.

A run holds a pinned point still by zeroing its rows of the gradient the
optimizer follows (and its optimizer state), so the optimizer works in the
subspace of the free coordinates. :class:`Pins` keeps which of ``n`` items
(points, or Parametric Embedding's classes) are pinned; the functions check a
caller's indices and positions before anything changes.
"""

from __future__ import annotations

import numbers

import numpy as np

from .._validation import check_data
from ..annotations.validation import check_indices as check_selection


def check_indices(indices, n, *, name="indices", what="point"):
    """Validate indices of items among ``n``; return them as int64, in the given order.

    As :func:`nbembed.annotations.validation.check_indices` (integers or a
    boolean mask, in ``[0, n)``), with one index also accepted alone and no
    item named twice: positions given with the indices pair up with them.

    Parameters
    ----------
    indices : int, array-like of int or boolean mask
    n : int
        Number of items.
    name, what : str
        The parameter and the kind of item, for the error messages.

    Returns
    -------
    ndarray of int64, 1-D

    Raises
    ------
    TypeError
        For indices that are neither integers nor a boolean mask.
    ValueError
        For no indices, indices out of range or repeated, or more than one
        dimension.
    """
    if isinstance(indices, numbers.Integral) and not isinstance(indices, bool):
        indices = [indices]
    array = check_selection(indices, n, name)
    values, counts = np.unique(array, return_counts=True)
    if np.any(counts > 1):
        raise ValueError(f"{name} must not repeat a {what}; {values[counts > 1][0]} appears "
                         f"{counts[counts > 1][0]} times.")
    return array


def check_positions(positions, count, dim, *, name="positions", what="point"):
    """Validate positions for ``count`` items in ``dim`` dimensions.

    Returns
    -------
    ndarray of float64, shape (count, dim)
        A new array, with negative zeros made positive: a held coordinate
        then stays bit for bit what it is under the optimizers' zero steps
        (-0.0 + 0.0 would be +0.0).

    Raises
    ------
    ValueError
        For the wrong shape, or NaN or infinite positions.
    """
    positions = check_data(positions, name=name)
    if positions.shape != (count, dim):
        raise ValueError(f"{name} must have shape (len(indices), n_components) = "
                         f"{(count, dim)}, one row per {what}; got {positions.shape}.")
    return positions + 0.0


class Pins:
    """Which of ``n`` items are pinned, as sorted int64 indices.

    Parameters
    ----------
    n : int
    what : str
        The kind of item ("point", "class"), for error messages.
    """

    def __init__(self, n, what="point"):
        self.n = int(n)
        self.what = what
        self.indices = np.empty(0, dtype=np.int64)

    def __len__(self):
        return self.indices.size

    def check(self, indices, name="indices"):
        """Validated indices (see :func:`check_indices`)."""
        return check_indices(indices, self.n, name=name, what=self.what)

    def add(self, indices):
        self.indices = np.union1d(self.indices, indices).astype(np.int64)

    def remove(self, indices):
        self.indices = np.setdiff1d(self.indices, indices).astype(np.int64)
