"""How much HSSNE trusts the labels: the must-link weight rho chosen on the labelled points.

Labels enter HSSNE as must-links: with weight rho a labelled point gives that
share of its attraction to the other points of its class. Where the input
neighbourhoods already follow the classes this pulls each class together;
where they do not (faces under changing light, whose neighbours share the
light rather than the person) it pulls the labelled points out of their
neighbourhoods and leaves their unlabelled neighbours behind, and the map
classifies new points worse than without the labels.

``HSSNE(rho="auto")`` therefore chooses rho among ``RHO_CANDIDATES``, 0 (the
labels ignored) included, by cross-validation on the labelled points: they are
dealt into ``RHO_CV_FOLDS`` folds (stratified by class); for each candidate and
fold the map is made with that fold's labels hidden, and each hidden point is
classified by its nearest visible labelled point in the map. The candidate
with the fewest errors wins (every class counting alike, so a class with few
labels is not outvoted), ties going to the smaller weight: the labels pull
only where the labelled points themselves say that the pull helps. See
docs/hssne.md ("How much the labels are trusted").
"""

from __future__ import annotations

import logging

import numpy as np

from .._folds import class_balanced_weights, error_rate, stratified_folds
from .._row_products import squared_distances

logger = logging.getLogger("nbembed")

#: The weights ``rho="auto"`` compares, least trust first (ties go to it).
RHO_CANDIDATES = (0.0, 0.25, 0.5)
#: Folds of the labelled points.
RHO_CV_FOLDS = 3
#: The weight used where nothing is compared: without labels to validate on,
#: above ``RHO_CV_MAX_N`` points, and in the Explorer (where ρ is a slider).
RHO_DEFAULT = 0.5
#: Up to this many points ``rho="auto"`` cross-validates (7 extra maps); above
#: it the maps cost too much and rho is ``RHO_DEFAULT``.
RHO_CV_MAX_N = 10_000


def nearest_labelled_misses(Y, labels, visible, hidden):
    """Which ``hidden`` points the class of their nearest ``visible`` point in Y misses.

    Parameters
    ----------
    Y : ndarray (n, d)
    labels : ndarray of int (n,)
    visible, hidden : ndarray of int
        Indices of labelled points.

    Returns
    -------
    ndarray of bool (len(hidden),)
    """
    nearest = visible[np.argmin(squared_distances(Y[hidden], Y[visible]), axis=1)]
    return labels[nearest] != labels[hidden]


def can_cross_validate(labels):
    """Whether ``labels`` (-1 unlabelled) give folds to validate on: two classes and
    at least two labelled points per fold."""
    labelled = labels[labels >= 0]
    return labelled.size >= 2 * RHO_CV_FOLDS and np.unique(labelled).size >= 2


def cross_validate_rho(embed, labels, rng):
    """The candidate weight whose maps best classify held-out labelled points.

    Parameters
    ----------
    embed : callable
        ``embed(labels, rho) -> Y``: the map made with these labels (-1 for
        unlabelled points) as must-links of weight ``rho``.
    labels : ndarray of int (n,)
        -1 for unlabelled points; :func:`can_cross_validate` must hold.
    rng : numpy.random.RandomState
        Draws the folds.

    Returns
    -------
    rho : float
    candidates : ndarray
    errors : ndarray
        The fraction of labelled points each candidate misclassified while
        hidden, every class's points weighing the same in all (the mean of
        the classes' error rates).
    """
    labelled = np.flatnonzero(labels >= 0)
    scoring = class_balanced_weights((labels >= 0).astype(float), labels)
    folds = stratified_folds(labels[labelled], RHO_CV_FOLDS, rng)
    candidates = np.array(RHO_CANDIDATES)
    errors = np.zeros(len(candidates))
    for c, rho in enumerate(candidates):
        unlinked = embed(np.full_like(labels, -1), 0.0) if rho == 0.0 else None
        for fold in range(RHO_CV_FOLDS):
            hidden = labelled[folds == fold]
            visible = labelled[folds != fold]
            if unlinked is None:
                kept = labels.copy()
                kept[hidden] = -1
                Y = embed(kept, float(rho))
            else:
                Y = unlinked  # the labels ignored: one map serves every fold
            errors[c] += scoring[hidden] @ nearest_labelled_misses(Y, labels, visible, hidden)
    errors = error_rate(errors, scoring[labelled].sum())
    best = int(np.argmin(errors))
    logger.info("HSSNE: rho %.2f by cross-validation (candidates %s, errors %s).",
                candidates[best], candidates, np.round(errors, 3))
    return float(candidates[best]), candidates, errors
