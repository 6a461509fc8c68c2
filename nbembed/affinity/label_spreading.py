"""Label spreading over a k-nearest-neighbour graph (Zhou et al., 2004).

Class scores for every point from a few labelled ones: the labels diffuse
along the normalized graph S = D^-1/2 W D^-1/2,

    F <- alpha S F + (1 - alpha) T,

for a fixed number of steps from F = T (T: the label distributions, zero
rows for unlabelled points). Each class's scores are then divided by their
total (class mass normalization), so a class with many labels or in a dense
part of the graph does not swallow its neighbours. Mbed starts its annealing
from these scores (:func:`nbembed.methods.mbed.Mbed`, ``anneal_start``).

How many neighbours the graph links matters more than anything else here: on
classes that are thin manifolds (an object seen from many angles) three
neighbours follow each manifold where ten jump between them. How far the
labels diffuse (alpha) matters next: Zhou et al.'s 0.99 lets them travel far,
which suits classes that are long connected manifolds, 0.9 keeps each label
closer to home, which suits classes that overlap. :func:`choose_spreading`
picks both from the labels alone, by cross-validation on the labelled points;
:func:`nested_spreading_error` estimates the error of that choice itself.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._folds import stratified_folds
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


def spread_labels(graph, targets, *, alpha=SPREAD_ALPHA, n_steps=SPREAD_STEPS):
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

    Returns
    -------
    ndarray (n, K)
        Rows summing to one; uniform for a point no label reaches.
    """
    degree = np.asarray(graph.sum(axis=1)).ravel()
    scale = np.zeros_like(degree)
    np.divide(1.0, np.sqrt(degree), out=scale, where=degree > 0)
    S = sp.diags(scale) @ graph @ sp.diags(scale)
    F = targets.astype(np.float64, copy=True)
    for _ in range(n_steps):
        F = alpha * (S @ F) + (1.0 - alpha) * targets
    mass = F.sum(axis=0)
    F = np.divide(F, mass, out=np.zeros_like(F), where=mass > 0)
    total = F.sum(axis=1, keepdims=True)
    K = F.shape[1]
    return np.divide(F, total, out=np.full_like(F, 1.0 / K), where=total > 0)


def _held_out_misses(graph, alpha, targets, hidden):
    """Weighted misses of the ``hidden`` labelled rows when the other labels spread."""
    kept = targets.copy()
    kept[hidden] = 0.0
    scores = spread_labels(graph, kept, alpha=alpha)[hidden]
    wrong = scores.argmax(axis=1) != targets[hidden].argmax(axis=1)
    return targets[hidden].sum(axis=1) @ wrong


def choose_spreading(indices, targets, folds, neighbors=SPREAD_NEIGHBOR_CANDIDATES,
                     alphas=SPREAD_ALPHA_CANDIDATES):
    """The graph and the alpha that best spread held-out labels.

    For every candidate (k, alpha) the graph of the k nearest neighbours
    spreads the labels of all folds but one; the labelled points of that fold
    are then classified by their spread scores (argmax), and the errors of
    all folds add up, weighted by the labels' confidences. The choice is made
    in two steps: k is the candidate with the smallest error at the first
    alpha (ties to the larger k, a better connected graph), then alpha the
    one with the smallest error on that graph (ties to the earlier).

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
    k : int
    alpha : float
    neighbors : ndarray of int
        The numbers of neighbours compared.
    errors : ndarray (len(alphas), len(neighbors))
        The weighted error rates on the held-out labelled points.
    """
    weights = targets.sum(axis=1)
    labelled = np.flatnonzero(weights > 0)
    compared = np.array([k for k in neighbors if k <= indices.shape[1]] or [indices.shape[1]])
    hidden_rows = [labelled[folds == fold] for fold in np.unique(folds)]
    errors = np.zeros((len(alphas), len(compared)))
    for c, k in enumerate(compared):
        graph = knn_graph(indices[:, :k])
        for a, alpha in enumerate(alphas):
            errors[a, c] = sum(_held_out_misses(graph, alpha, targets, hidden)
                               for hidden in hidden_rows)
    errors /= weights[labelled].sum()
    c = len(compared) - 1 - int(np.argmin(errors[0, ::-1]))
    a = int(np.argmin(errors[:, c]))
    return int(compared[c]), float(alphas[a]), compared, errors


def nested_spreading_error(indices, targets, folds, rng, neighbors=SPREAD_NEIGHBOR_CANDIDATES,
                           alphas=SPREAD_ALPHA_CANDIDATES):
    """The error rate on held-out labels of spreading with a chosen (k, alpha).

    The smallest error of :func:`choose_spreading` is the best of many
    candidates measured on the same held-out points, so it promises less
    error than the chosen spreading will make. Here the choice is made
    inside each fold: the labels of the other folds are dealt into folds of
    their own (stratified by class), :func:`choose_spreading` picks (k, alpha)
    on them alone, they spread, and the fold's labelled points are
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
    float
        The weighted error rate over all labelled points.
    """
    weights = targets.sum(axis=1)
    labelled = np.flatnonzero(weights > 0)
    classes = targets[labelled].argmax(axis=1)
    n_folds = np.unique(folds).size
    wrong = 0.0
    for fold in np.unique(folds):
        inside = folds != fold
        hidden = labelled[~inside]
        kept = targets.copy()
        kept[hidden] = 0.0
        inner = stratified_folds(classes[inside], n_folds, rng)
        k, alpha, _, _ = choose_spreading(indices, kept, inner, neighbors, alphas)
        graph = knn_graph(indices[:, :k])
        wrong += _held_out_misses(graph, alpha, targets, hidden)
    return float(wrong / weights[labelled].sum())
