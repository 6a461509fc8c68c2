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
picks the graph the annealing starts from, and the setting of the spread
labels (the graph, symmetric or directed, its neighbours, alpha and whether
to normalize the class masses), from the labels alone, by cross-validation on
the labelled points; :func:`nested_spreading` estimates the error of that
choice itself. Given a default (Mbed's: ``DEFAULT_SETTING``, scikit-learn's
``LabelSpreading`` defaults), the spread labels keep it unless the table's
best missed clearly fewer held-out labels: where no graph separates the
classes, the best of many settings on a few labels is only the luckiest.

The spread labels are meant for the unlabelled points, whose classes may be
shared quite unlike the labels' (ten labels of each class, a class that is
a twentieth of the data). Their held-out errors are therefore weighed by each
class's estimated share of the unlabelled points (:func:`class_shares`); the
start, which is to give every class its own region, weighs every class alike.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from .._folds import class_balanced_weights, clearly_fewer_misses, error_rate, \
    stratified_folds
from .._kernels.csr import spread_steps
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
#: order of its table's second axis.
CLASS_MASS_CANDIDATES = (True, False)
#: The graphs the spread labels compare, in the order of the table's first
#: axis: the symmetric union of the k-nearest-neighbour relations, where a
#: point also hears those that count it among their nearest, and the directed
#: graph, where each point hears its own k nearest only (an outlier then takes
#: the class of its neighbours without handing its own to them).
SPREAD_GRAPHS = ("symmetric", "directed")
#: The spreading that estimates the classes' shares of the unlabelled points
#: (:func:`class_shares`): scikit-learn's ``LabelSpreading`` defaults, seven
#: neighbours and alpha 0.2, on the directed graph and without class mass
#: normalization; with so small an alpha each point takes the classes of the
#: labels near it, not the labels' shares.
SHARE_NEIGHBORS = 7
SHARE_ALPHA = 0.2
#: The weight of equal shares in :func:`class_shares`: from ten labels a class
#: the spreading's shares are rough (a class of scattered points loses its
#: points to a dense neighbour), and a class they miss must still count.
SHARE_EVEN_WEIGHT = 0.5
#: Diffusion steps; alpha^steps (0.13 at 0.99) is what is left of the initial labels' echo.
SPREAD_STEPS = 200


def knn_graph(indices):
    """The symmetric 0/1 graph of the k-nearest-neighbour relations (their union):
    :func:`directed_knn_graph` with each link made mutual; CSR (n, n)."""
    n, k = indices.shape
    rows = np.repeat(np.arange(n), k)
    return symmetric_union(rows, indices.ravel(), np.ones(n * k), n)


def directed_knn_graph(indices):
    """The 0/1 graph from each point to its k nearest neighbours (row i: i's).

    :func:`spread_scores` divides its rows by their k: each step a point
    takes the mean of its own neighbours' scores.

    Parameters
    ----------
    indices : ndarray of int (n, k)
        Each point's nearest neighbours, itself excluded.

    Returns
    -------
    csr_matrix (n, n)
    """
    n, k = indices.shape
    return sp.csr_matrix((np.ones(n * k), (np.repeat(np.arange(n), k), indices.ravel())),
                         shape=(n, n))


def neighbor_graph(indices, k, graph="symmetric"):
    """The ``graph`` ("symmetric" or "directed") of the first ``k`` neighbours."""
    if graph == "directed":
        return directed_knn_graph(indices[:, :k])
    return knn_graph(indices[:, :k])


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
    S = (sp.diags(scale) @ graph @ sp.diags(scale)).tocsr()
    return spread_steps(S.indptr.astype(np.int64), S.indices.astype(np.int64),
                        S.data.astype(np.float64), np.ascontiguousarray(targets, np.float64),
                        float(alpha), int(n_steps))


def class_probabilities(scores, class_mass):
    """Rows of ``scores`` normalized to probabilities, after dividing each class
    by its total where ``class_mass``; uniform rows where a row is all zero."""
    if class_mass:
        mass = scores.sum(axis=0)
        scores = np.divide(scores, mass, out=np.zeros_like(scores), where=mass > 0)
    total = scores.sum(axis=1, keepdims=True)
    K = scores.shape[1]
    return np.divide(scores, total, out=np.full_like(scores, 1.0 / K), where=total > 0)


def _steps(alpha):
    """Spreading steps for ``alpha``: ``SPREAD_STEPS``, fewer where alpha^steps
    falls below 1e-12 sooner (the scores no longer change)."""
    return int(min(SPREAD_STEPS, np.ceil(np.log(1e-12) / np.log(alpha))))


def class_shares(indices, targets):
    """Each class's estimated share of the unlabelled points.

    The mean class probabilities of the unlabelled points after the labels
    spread over the directed ``SHARE_NEIGHBORS``-nearest-neighbour graph with
    alpha ``SHARE_ALPHA``, without class mass normalization (a point no label
    reaches counts every class alike), mixed with equal shares, which weigh
    ``SHARE_EVEN_WEIGHT``. Without unlabelled points, the labels' own
    shares.

    Parameters
    ----------
    indices, targets
        As for :func:`choose_spreading`.

    Returns
    -------
    ndarray (K,)
        Non-negative, summing to one.
    """
    unlabelled = targets.sum(axis=1) == 0
    if not np.any(unlabelled):
        return targets.sum(axis=0) / targets.sum()
    graph = directed_knn_graph(indices[:, :min(SHARE_NEIGHBORS, indices.shape[1])])
    scores = spread_scores(graph, targets, SHARE_ALPHA, _steps(SHARE_ALPHA))
    spread = class_probabilities(scores, class_mass=False)[unlabelled].mean(axis=0)
    return (1 - SHARE_EVEN_WEIGHT) * spread + SHARE_EVEN_WEIGHT / targets.shape[1]


def _scoring_weights(targets, shares=None):
    """Each labelled row's weight in a held-out error: its confidence, every
    class's total made equal (:func:`~nbembed._folds.class_balanced_weights`),
    then, with ``shares``, made the class's share."""
    classes = targets.argmax(axis=1)
    weights = class_balanced_weights(targets.sum(axis=1), classes)
    return weights if shares is None else weights * shares[classes]


class SpreadSetting(NamedTuple):
    """How labels spread: over which graph, how far, whether normalized."""

    graph: str
    k: int
    alpha: float
    class_mass: bool


#: The spread labels' setting unless held-out labels say clearly that one of
#: the table spreads better: scikit-learn's ``LabelSpreading`` defaults, as
#: for the shares. Where the labels cannot tell the table's settings apart
#: (classes no neighbourhood graph separates), the best of forty candidates
#: on a few held-out labels is mostly the luckiest, and a worse choice than
#: this one.
DEFAULT_SETTING = SpreadSetting("directed", SHARE_NEIGHBORS, SHARE_ALPHA, False)
#: Standard errors by which the best of the table must miss fewer held-out
#: labels than ``DEFAULT_SETTING`` to replace it
#: (:func:`~nbembed._folds.clearly_fewer_misses`): two, as the best of forty
#: is chosen on the same labels it is judged by.
SETTING_MARGIN = 2.0


def _settings(neighbors, alphas):
    """Every setting of the table, in its order: graph, class mass, alpha, k."""
    return [SpreadSetting(g, int(k), float(a), m) for g in SPREAD_GRAPHS
            for m in CLASS_MASS_CANDIDATES for a in alphas for k in neighbors]


def _preferred_first(neighbors, alphas):
    """Indices of the table's settings in the order ties go: the symmetric graph,
    more neighbours, the earlier alpha, no class mass normalization."""
    shape = (len(SPREAD_GRAPHS), len(CLASS_MASS_CANDIDATES), len(alphas), len(neighbors))
    return [np.ravel_multi_index((g, m, a, c), shape)
            for g in range(shape[0]) for c in range(shape[3])[::-1]
            for a in range(shape[2]) for m in range(shape[1])[::-1]]


def held_out_classes(indices, targets, folds, settings):
    """The class each setting gives each labelled point while its fold is hidden.

    The folds spread side by side, one block of columns each, so that each
    graph and alpha takes one spreading.

    Parameters
    ----------
    indices, targets, folds
        As for :func:`choose_spreading`.
    settings : list of SpreadSetting

    Returns
    -------
    ndarray of int (len(settings), n_labelled)
        The argmax of the spread scores, in the order of the labelled rows.
    """
    labelled = np.flatnonzero(targets.sum(axis=1) > 0)
    K = targets.shape[1]
    in_folds = [folds == fold for fold in np.unique(folds)]
    kept = np.repeat(targets[:, None, :], len(in_folds), axis=1)  # (n, folds, K)
    for f, in_fold in enumerate(in_folds):
        kept[labelled[in_fold], f] = 0.0
    kept = kept.reshape(len(targets), -1)
    predicted = np.zeros((len(settings), labelled.size), dtype=np.intp)
    for graph_kind, k, alpha in dict.fromkeys(setting[:3] for setting in settings):
        graph = neighbor_graph(indices, k, graph_kind)
        scores = spread_scores(graph, kept, alpha, _steps(alpha))
        for s, setting in enumerate(settings):
            if setting[:3] != (graph_kind, k, alpha):
                continue
            for f, in_fold in enumerate(in_folds):
                probabilities = class_probabilities(scores[:, f * K:(f + 1) * K],
                                                    setting.class_mass)[labelled[in_fold]]
                predicted[s, in_fold] = probabilities.argmax(axis=1)
    return predicted


def _error_rates(predicted, truth, weights):
    """The weighted error rate of each row of ``predicted``."""
    return error_rate((predicted != truth) @ weights, weights.sum())


class SpreadingChoice(NamedTuple):
    """What :func:`choose_spreading` chose and the table it chose from."""

    #: The number of neighbours of the symmetric graph the annealing starts from.
    start_k: int
    #: The spread labels' setting.
    setting: SpreadSetting
    #: Its held-out error rate (weighted by the classes' shares).
    error: float
    neighbors: np.ndarray
    #: Shape (graphs, class mass, alphas, neighbours): ``SPREAD_GRAPHS``,
    #: ``CLASS_MASS_CANDIDATES``, the alphas, the numbers of neighbours.
    errors: np.ndarray
    #: The classes' estimated shares of the unlabelled points.
    shares: np.ndarray
    #: Which labelled points the chosen setting missed while their fold was
    #: hidden, in the order of the labelled rows.
    missed: np.ndarray
    #: The scoring weight of each labelled point (its class's share).
    weights: np.ndarray
    #: The held-out error rate of ``default`` (None without one).
    default_error: float | None


def choose_spreading(indices, targets, folds, neighbors=SPREAD_NEIGHBOR_CANDIDATES,
                     alphas=SPREAD_ALPHA_CANDIDATES, default=None):
    """The start's graph, and the setting that best spreads held-out labels.

    Every setting (graph, number of neighbours, alpha, class mass
    normalization) spreads the labels of all folds but one; the labelled
    points of that fold are then classified by their spread scores (argmax).
    The start's graph is the symmetric one whose number of neighbours missed
    the fewest, at the first alpha with class mass normalization (the
    spreading Mbed's annealing starts from), every class's labels weighing
    alike (ties to the larger k, a better connected graph). The spread
    labels' setting is the one that missed the fewest with each class's
    labels weighing its estimated share of the unlabelled points
    (:func:`class_shares`): the labels are to classify those. Ties go to the
    symmetric graph, more neighbours, the earlier alpha, then to no class mass
    normalization (Zhou et al.'s spreading). With a ``default`` that setting
    is measured too and kept unless the table's best misses fewer held-out
    labels by more than ``SETTING_MARGIN`` standard errors.

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
    default : SpreadSetting, optional
        The setting to keep unless the table clearly beats it (with at most
        k_max neighbours).

    Returns
    -------
    SpreadingChoice
    """
    compared = np.array([k for k in neighbors if k <= indices.shape[1]] or [indices.shape[1]])
    table = _settings(compared, alphas)
    settings = table if default is None else \
        table + [default._replace(k=min(default.k, indices.shape[1]))]
    predicted = held_out_classes(indices, targets, folds, settings)
    labelled = targets.sum(axis=1) > 0
    truth = targets[labelled].argmax(axis=1)
    start_rows = [settings.index(SpreadSetting("symmetric", k, alphas[0], True))
                  for k in compared]
    start_errors = _error_rates(predicted[start_rows], truth, _scoring_weights(targets)[labelled])
    start_k = compared[len(compared) - 1 - int(np.argmin(start_errors[::-1]))]
    shares = class_shares(indices, targets)
    weights = _scoring_weights(targets, shares)[labelled]
    errors = _error_rates(predicted, truth, weights)
    missed = predicted != truth
    order = _preferred_first(compared, alphas)
    best = order[int(np.argmin(errors[order]))]
    if default is not None and not clearly_fewer_misses(missed[best], missed[-1], weights,
                                                        SETTING_MARGIN):
        best = len(settings) - 1
    grid = errors[:len(table)].reshape(len(SPREAD_GRAPHS), len(CLASS_MASS_CANDIDATES),
                                       len(alphas), len(compared))
    default_error = None if default is None else float(errors[-1])
    return SpreadingChoice(int(start_k), settings[best], float(errors[best]), compared, grid,
                           shares, missed[best], weights, default_error)


def spread_with(indices, targets, setting):
    """Class probabilities of every point after spreading ``targets`` with ``setting``."""
    graph = neighbor_graph(indices, setting.k, setting.graph)
    return spread_labels(graph, targets, alpha=setting.alpha, n_steps=_steps(setting.alpha),
                         class_mass=setting.class_mass)


class NestedSpreading(NamedTuple):
    """What :func:`nested_spreading` measured."""

    #: The weighted error rate over all labelled points.
    error: float
    #: Which labelled points the spreading missed while their fold was
    #: hidden, in the order of the labelled rows.
    missed: np.ndarray


def nested_spreading(indices, targets, folds, rng, neighbors=SPREAD_NEIGHBOR_CANDIDATES,
                     alphas=SPREAD_ALPHA_CANDIDATES, default=None, shares=None):
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
    indices, targets, folds, neighbors, alphas, default
        As for :func:`choose_spreading`.
    rng : numpy.random.RandomState
        Deals the inner folds.
    shares : ndarray (K,), optional
        The classes' estimated shares of the unlabelled points, from all
        labels (:func:`class_shares`, computed where not given).

    Returns
    -------
    NestedSpreading
        ``error``, the error rate over all labelled points, each class's
        labels weighing its share, and ``missed``, which labelled points the
        spreading that did not see their labels missed.
    """
    if shares is None:
        shares = class_shares(indices, targets)
    scoring = _scoring_weights(targets, shares)
    labelled = np.flatnonzero(targets.sum(axis=1) > 0)
    classes = targets[labelled].argmax(axis=1)
    n_folds = np.unique(folds).size
    held_out = np.zeros(labelled.size, dtype=np.intp)
    for fold in np.unique(folds):
        inside = folds != fold
        hidden = labelled[~inside]
        kept = targets.copy()
        kept[hidden] = 0.0
        inner = stratified_folds(classes[inside], n_folds, rng)
        choice = choose_spreading(indices, kept, inner, neighbors, alphas, default)
        held_out[~inside] = spread_with(indices, kept, choice.setting)[hidden].argmax(axis=1)
    missed = held_out != classes
    return NestedSpreading(float(error_rate(scoring[labelled] @ missed,
                                            scoring[labelled].sum())), missed)
