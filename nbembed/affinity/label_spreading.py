"""Label spreading over a k-nearest-neighbour graph (Zhou et al., 2004).

Class scores for every point from a few labelled ones: the labels diffuse
along the normalized graph S = D^-1/2 W D^-1/2,

    F <- alpha S F + (1 - alpha) T,

for a fixed number of steps from F = T (T: the label distributions, zero
rows for unlabelled points). Each class's scores may then be divided by
their total (class mass normalization, Zhu et al., 2003), so that a class
with many labels or in a dense part of the graph does not swallow its
neighbours; it also gives every class the labels' share of the points, which
misleads where the classes' sizes differ more than their labels' counts. Mbed
starts its annealing from the normalized scores
(:func:`nbembed.methods.mbed.Mbed`, ``anneal_start``).

How many neighbours the graph links matters more than anything else here: on
classes that are thin manifolds (an object seen from many angles) three
neighbours follow each manifold where ten jump between them. How far the
labels diffuse (alpha) matters next: Zhou et al.'s 0.99 lets them travel far,
which suits classes that are long connected manifolds, 0.9 keeps each label
closer to home, which suits classes that overlap. :func:`choose_spreading`
picks both, and whether to normalize the class masses, from the labels alone,
by cross-validation on the labelled points; :func:`nested_spreading` estimates
the error of that choice itself.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from .._folds import class_balanced_weights, error_rate, stratified_folds
from .knn_graphs import symmetric_union

#: Neighbours per point of the graph the labels spread over, where too few
#: points are labelled to choose among ``SPREAD_NEIGHBOR_CANDIDATES``.
SPREAD_NEIGHBORS = 10
#: The numbers of neighbours :func:`choose_spreading` compares.
SPREAD_NEIGHBOR_CANDIDATES = (3, 5, 7, 10, 15)
#: Weight of the neighbours against the point's own label in each step, where
#: too few points are labelled to choose among ``SPREAD_ALPHA_CANDIDATES``.
SPREAD_ALPHA = 0.99
#: The weights :func:`choose_spreading` compares; the first (Zhou et al.'s)
#: chooses the graph and wins ties.
SPREAD_ALPHA_CANDIDATES = (0.99, 0.9)
#: The class mass normalizations :func:`choose_spreading` compares, in the
#: order of its table's first axis.
CLASS_MASS_CANDIDATES = (True, False)
#: Diffusion steps; alpha^steps (0.13 at 0.99) is what is left of the initial labels' echo.
SPREAD_STEPS = 200


def knn_graph(indices):
    """The symmetric 0/1 graph of the k-nearest-neighbour relations (their union).

    Parameters
    ----------
    indices : ndarray of int (n, k)
        Each point's nearest neighbours, itself excluded.

    Returns
    -------
    csr_matrix (n, n)
    """
    n, k = indices.shape
    rows = np.repeat(np.arange(n), k)
    return symmetric_union(rows, indices.ravel(), np.ones(n * k), n)


def spread_labels(graph, targets, *, alpha=SPREAD_ALPHA, n_steps=SPREAD_STEPS,
                  class_mass=True):
    """Class probabilities of every point after label spreading on ``graph``.

    Parameters
    ----------
    graph : csr_matrix (n, n)
        Symmetric non-negative weights.
    targets : ndarray (n, K)
        Label distributions times their weight; zero rows for unlabelled points.
    alpha : float
        In (0, 1).
    n_steps : int
    class_mass : bool
        Divide each class's scores by their total before normalizing the rows.

    Returns
    -------
    ndarray (n, K)
        Rows summing to one; uniform for a point no label reaches.
    """
    return class_probabilities(spread_scores(graph, targets, alpha, n_steps), class_mass)


def spread_scores(graph, targets, alpha=SPREAD_ALPHA, n_steps=SPREAD_STEPS):
    """The class scores after ``n_steps`` spreading steps from ``targets``, unnormalized."""
    degree = np.asarray(graph.sum(axis=1)).ravel()
    scale = np.zeros_like(degree)
    np.divide(1.0, np.sqrt(degree), out=scale, where=degree > 0)
    S = sp.diags(scale) @ graph @ sp.diags(scale)
    F = targets.astype(np.float64, copy=True)
    for _ in range(n_steps):
        F = alpha * (S @ F) + (1.0 - alpha) * targets
    return F


def class_probabilities(scores, class_mass):
    """Rows of ``scores`` normalized to probabilities, after dividing each class
    by its total where ``class_mass``; uniform rows where a row is all zero."""
    if class_mass:
        mass = scores.sum(axis=0)
        scores = np.divide(scores, mass, out=np.zeros_like(scores), where=mass > 0)
    total = scores.sum(axis=1, keepdims=True)
    K = scores.shape[1]
    return np.divide(scores, total, out=np.full_like(scores, 1.0 / K), where=total > 0)


def _held_out_misses(graph, alpha, targets, hidden, scoring):
    """The ``scoring`` weight of the ``hidden`` labelled rows missed when the
    other labels spread, with and without class mass normalization (one
    spreading)."""
    kept = targets.copy()
    kept[hidden] = 0.0
    scores = spread_scores(graph, kept, alpha)
    truth = targets[hidden].argmax(axis=1)
    return np.array([scoring[hidden]
                     @ (class_probabilities(scores, mass)[hidden].argmax(axis=1) != truth)
                     for mass in CLASS_MASS_CANDIDATES])


def _scoring_weights(targets):
    """Each labelled row's weight in a held-out error: its confidence, every
    class's total made equal (:func:`~nbembed._folds.class_balanced_weights`)."""
    return class_balanced_weights(targets.sum(axis=1), targets.argmax(axis=1))


class SpreadingChoice(NamedTuple):
    """What :func:`choose_spreading` chose and the table it chose from."""

    k: int
    alpha: float
    class_mass: bool
    #: The held-out error rate of the chosen setting.
    error: float
    neighbors: np.ndarray
    errors: np.ndarray


def choose_spreading(indices, targets, folds, neighbors=SPREAD_NEIGHBOR_CANDIDATES,
                     alphas=SPREAD_ALPHA_CANDIDATES):
    """The graph, alpha and class mass normalization that best spread held-out labels.

    For a candidate setting the labels of all folds but one spread; the
    labelled points of that fold are then classified by their spread scores
    (argmax), and the errors of all folds add up, weighted by the labels'
    confidences with every class's total made equal (a class with few labels
    counts as much as one with many: the normalization is what keeps it from
    being swallowed). The choice is made in two steps. First the graph: the k
    with the smallest error at the first alpha with class mass normalization
    (the spreading Mbed's annealing starts from; ties to the larger k, a
    better connected graph). Then, on that graph, the alpha and the
    normalization with the smallest error; ties go to the scores without the
    normalization (Zhou et al.'s spreading; the normalization is taken only
    where held-out labels say it helps), then to the earlier alpha.

    Parameters
    ----------
    indices : ndarray of int (n, k_max)
        Each point's nearest neighbours, nearest first, itself excluded.
    targets : ndarray (n, K)
        Label distributions times their weight; zero rows for unlabelled points.
    folds : ndarray of int (n_labelled,)
        The fold of each labelled point, in the order of the labelled rows.
    neighbors : sequence of int
        Numbers of neighbours to compare; those above k_max are left out.
    alphas : sequence of float
        Weights of the neighbours to compare, each in (0, 1).

    Returns
    -------
    SpreadingChoice
        ``k``, ``alpha``, ``class_mass`` (bool), ``error`` (the chosen
        setting's), ``neighbors`` (the numbers of neighbours compared) and
        ``errors``, the weighted error rates on the held-out labelled points,
        shape (2, len(alphas), len(neighbors)): with class mass normalization,
        then without. Alphas after the first are measured on the chosen graph
        only (NaN elsewhere).
    """
    scoring = _scoring_weights(targets)
    labelled = np.flatnonzero(scoring > 0)
    compared = np.array([k for k in neighbors if k <= indices.shape[1]] or [indices.shape[1]])
    hidden_rows = [labelled[folds == fold] for fold in np.unique(folds)]
    errors = np.full((len(CLASS_MASS_CANDIDATES), len(alphas), len(compared)), np.nan)

    def measure(a, c, graph):
        errors[:, a, c] = error_rate(
            sum(_held_out_misses(graph, alphas[a], targets, hidden, scoring)
                for hidden in hidden_rows), scoring[labelled].sum())

    graphs = [knn_graph(indices[:, :k]) for k in compared]
    for c, graph in enumerate(graphs):
        measure(0, c, graph)
    c = len(compared) - 1 - int(np.argmin(errors[0, 0, ::-1]))
    for a in range(1, len(alphas)):
        measure(a, c, graphs[c])
    plain_first = errors[::-1, :, c]  # rows: without the normalization, then with it
    m, a = np.unravel_index(np.argmin(plain_first), plain_first.shape)
    return SpreadingChoice(int(compared[c]), float(alphas[a]),
                           bool(CLASS_MASS_CANDIDATES[::-1][m]), float(plain_first[m, a]),
                           compared, errors)


class NestedSpreading(NamedTuple):
    """What :func:`nested_spreading` measured."""

    #: The weighted error rate over all labelled points.
    error: float
    #: Class probabilities of each labelled point when its fold was hidden,
    #: shape (n_labelled, K), in the order of the labelled rows.
    held_out: np.ndarray


def nested_spreading(indices, targets, folds, rng, neighbors=SPREAD_NEIGHBOR_CANDIDATES,
                     alphas=SPREAD_ALPHA_CANDIDATES):
    """The error on held-out labels of spreading with a chosen setting.

    The error :func:`choose_spreading` measured for its choice is the best
    of many candidates measured on the same held-out points, so it promises
    less error than the chosen spreading will make. Here the choice is made
    inside each fold: the labels of the other folds are dealt into folds of
    their own (stratified by class), :func:`choose_spreading` picks the
    setting on them alone, they spread, and the fold's labelled points are
    classified. This estimates the error of the whole procedure, comparable
    with that of a single candidate's.

    Parameters
    ----------
    indices, targets, folds, neighbors, alphas
        As for :func:`choose_spreading`.
    rng : numpy.random.RandomState
        Deals the inner folds.

    Returns
    -------
    NestedSpreading
        ``error``, the weighted error rate over all labelled points (every
        class's labels weighing the same in all), and ``held_out``, each
        labelled point's class probabilities from the spreading that did not
        see its label.
    """
    scoring = _scoring_weights(targets)
    labelled = np.flatnonzero(scoring > 0)
    classes = targets[labelled].argmax(axis=1)
    n_folds = np.unique(folds).size
    wrong = 0.0
    held_out = np.zeros((labelled.size, targets.shape[1]))
    for fold in np.unique(folds):
        inside = folds != fold
        hidden = labelled[~inside]
        kept = targets.copy()
        kept[hidden] = 0.0
        inner = stratified_folds(classes[inside], n_folds, rng)
        choice = choose_spreading(indices, kept, inner, neighbors, alphas)
        graph = knn_graph(indices[:, :choice.k])
        probabilities = class_probabilities(spread_scores(graph, kept, choice.alpha),
                                            choice.class_mass)[hidden]
        held_out[~inside] = probabilities
        wrong += scoring[hidden] @ (probabilities.argmax(axis=1) != classes[~inside])
    return NestedSpreading(float(error_rate(wrong, scoring[labelled].sum())), held_out)
