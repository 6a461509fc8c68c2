"""Folds of the labelled points for choices made by cross-validation on them
(Mbed's input width and spreading graph, HSSNE's must-link weight)."""

from __future__ import annotations

import numpy as np


def stratified_folds(classes, n_folds, rng):
    """Fold numbers 0 .. n_folds - 1 for points of the given classes, each class
    dealt out evenly over the folds in random order.

    Parameters
    ----------
    classes : ndarray of int (m,)
        The class of each labelled point.
    n_folds : int
    rng : numpy.random.RandomState

    Returns
    -------
    ndarray of int (m,)
    """
    folds = np.empty(len(classes), dtype=np.intp)
    for k in np.unique(classes):
        members = rng.permutation(np.flatnonzero(classes == k))
        folds[members] = (np.arange(members.size) + rng.randint(n_folds)) % n_folds
    return folds
