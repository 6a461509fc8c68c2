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
neighbours follow each manifold where ten jump between them.
:func:`choose_spread_neighbors` picks the number from the labels alone, by
cross-validation on the labelled points.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .knn_graphs import symmetric_union

#: Neighbours per point of the graph the labels spread over, where too few
#: points are labelled to choose among ``SPREAD_NEIGHBOR_CANDIDATES``.
SPREAD_NEIGHBORS = 10
#: The numbers of neighbours :func:`choose_spread_neighbors` compares.
SPREAD_NEIGHBOR_CANDIDATES = (3, 5, 7, 10, 15)
#: Weight of the neighbours against the point's own label in each step.
SPREAD_ALPHA = 0.99
#: Diffusion steps; alpha^steps (0.13) is what is left of the initial labels' echo.
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


def choose_spread_neighbors(indices, targets, folds, candidates=SPREAD_NEIGHBOR_CANDIDATES):
    """The number of neighbours whose graph best spreads held-out labels.

    For every candidate k the graph of the k nearest neighbours spreads the
    labels of all folds but one; the labelled points of that fold are then
    classified by their spread scores (argmax). The candidate with the
    smallest error in all folds, weighted by the labels' confidences, wins;
    ties go to the larger k (a better connected graph).

    Parameters
    ----------
    indices : ndarray of int (n, k_max)
        Each point's nearest neighbours, nearest first, itself excluded.
    targets : ndarray (n, K)
        Label distributions times their weight; zero rows for unlabelled points.
    folds : ndarray of int (n_labelled,)
        The fold of each labelled point, in the order of the labelled rows.
    candidates : sequence of int
        Numbers of neighbours to compare; those above k_max are left out.

    Returns
    -------
    k : int
    candidates : ndarray of int
        The candidates compared.
    errors : ndarray
        Their weighted error rates on the held-out labelled points.
    """
    weights = targets.sum(axis=1)
    labelled = np.flatnonzero(weights > 0)
    compared = np.array([k for k in candidates if k <= indices.shape[1]] or [indices.shape[1]])
    hidden_rows, kept_targets = [], []
    for fold in np.unique(folds):
        hidden = labelled[folds == fold]
        kept = targets.copy()
        kept[hidden] = 0.0
        hidden_rows.append(hidden)
        kept_targets.append(kept)
    errors = np.zeros(len(compared))
    for c, k in enumerate(compared):
        graph = knn_graph(indices[:, :k])
        for hidden, kept in zip(hidden_rows, kept_targets):
            scores = spread_labels(graph, kept)[hidden]
            wrong = scores.argmax(axis=1) != targets[hidden].argmax(axis=1)
            errors[c] += weights[hidden] @ wrong
    errors /= weights[labelled].sum()
    best = len(compared) - 1 - int(np.argmin(errors[::-1]))
    return int(compared[best]), compared, errors
