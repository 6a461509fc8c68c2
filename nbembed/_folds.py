"""Folds of the labelled points for choices made by cross-validation on them
(Mbed's input width and spreading graph, HSSNE's must-link weight), and the
measures that score the held-out labels: error rates, and whether one
classifier clearly misses fewer than another."""

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


def class_balanced_weights(weights, classes):
    """Weights giving every class's labelled points the same total.

    An error rate on held-out labels counted with them is the mean of the
    classes' error rates, so a class with few labels is not outvoted by one
    with many (with equally many labels per class it is the plain rate).

    Parameters
    ----------
    weights : ndarray (n,)
        The labels' confidences; zero for unlabelled points.
    classes : ndarray of int (n,)
        The class of each point (any value where unlabelled).

    Returns
    -------
    ndarray (n,)
        ``weights`` divided by their class's total; zero for unlabelled points.
    """
    balanced = np.zeros(len(weights))
    labelled = weights > 0
    for k in np.unique(classes[labelled]):
        members = labelled & (classes == k)
        balanced[members] = weights[members] / weights[members].sum()
    return balanced


def error_rate(missed, total):
    """``missed / total``, rounded to 12 decimals.

    Sums of class-balanced weights (:func:`class_balanced_weights`) can
    differ in their last bits with the order of their terms; candidates that
    missed the same labels must tie, so that the tie-breaks decide.
    """
    return np.round(np.asarray(missed, dtype=float) / total, 12)


def clearly_fewer_misses(missed, reference_missed, weights, margin):
    """Whether held-out labels say one classifier misses fewer of them than another
    by more than chance explains.

    The difference of the two weighted error rates must exceed ``margin``
    standard errors of the weighted mean of their paired differences (one
    per held-out label: -1, 0 or 1). Where nothing clearly separates the two
    the reference is kept: the one-standard-error rule of cross-validation
    (Hastie, Tibshirani and Friedman, *The Elements of Statistical Learning*,
    7.10), with the margin as the number of standard errors.

    Parameters
    ----------
    missed, reference_missed : ndarray of bool (m,)
        Which held-out labels each missed.
    weights : ndarray (m,)
        Each held-out label's weight; a positive total.
    margin : float
        Non-negative.

    Returns
    -------
    bool
    """
    weights = np.asarray(weights, dtype=float)
    difference = np.asarray(missed, dtype=float) - np.asarray(reference_missed, dtype=float)
    total = weights.sum()
    mean = weights @ difference / total
    standard_error = np.sqrt(np.sum((weights * (difference - mean)) ** 2)) / total
    return bool(mean < 0 and -mean > margin * standard_error + 1e-12)
