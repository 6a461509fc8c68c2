"""Folds of the labelled points for choices made by cross-validation on them
(Mbed's input width and spreading graph, HSSNE's must-link weight), and the
measures that score the held-out labels: error rates and, for two classes,
the area under the ROC curve."""

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


def weighted_auc(scores, positive, weights):
    """The area under the ROC curve of ``scores`` for telling ``positive`` points apart.

    The chance that a positive point scores above a negative one, every pair
    weighted by the product of the two points' weights; a tie counts half.
    It depends on the order of the scores only, so scores on different scales
    (an embedding's memberships, a spreading's probabilities) compare alike.

    Parameters
    ----------
    scores : ndarray (m,)
    positive : ndarray of bool (m,)
    weights : ndarray (m,)
        Non-negative; each class needs a positive total.

    Returns
    -------
    float
        In [0, 1]; 0.5 for scores that say nothing.
    """
    values, rank = np.unique(np.asarray(scores, dtype=float), return_inverse=True)
    weights = np.asarray(weights, dtype=float)
    pos = np.bincount(rank, weights=np.where(positive, weights, 0.0), minlength=values.size)
    neg = np.bincount(rank, weights=np.where(positive, 0.0, weights), minlength=values.size)
    below = np.cumsum(neg) - neg  # negative weight under each score value
    return float(pos @ (below + 0.5 * neg) / (pos.sum() * neg.sum()))
