"""Gaussian neighbourhoods of one fixed width for every point (Mbed's input).

Unlike perplexity calibration (:mod:`.perplexity`), every row uses the same
sigma: p_ij = exp(-d_ij^2 / sigma^2) / sum_{k != i} exp(-d_ik^2 / sigma^2), with
sigma the 1/K quantile of the pairwise dissimilarities, the paper's choice (Zien &
Quinonero Candela, 2005), or a fraction of it (Mbed's ``sigma="cv"``).
"""

import numpy as np
import scipy.sparse as sp

from .._distances import pairwise_distances
from .._validation import check_random_state

#: Random points among which the dissimilarities estimate the 1/K quantile of
#: ``sigma="auto"`` when not all pairs are computed (``affinity="knn"``): about
#: 250 000 pairs.
SIGMA_SAMPLE_POINTS = 700


def _precision(sigma):
    """1 / sigma^2, or an error where it is not a finite positive number."""
    with np.errstate(over="ignore", divide="ignore"):
        precision = 1.0 / np.float64(sigma) ** 2
    if not (np.isfinite(precision) and precision > 0):
        raise ValueError(f"sigma = {sigma!r} is too {'small' if sigma < 1 else 'large'} to "
                         f"compute exp(-d^2 / sigma^2) in floating point; give a width "
                         f"comparable to the distances between points, or sigma='auto'.")
    return precision


def input_neighbourhoods(D, sigma):
    """p_ij = exp(-d_ij^2 / sigma^2) / sum_{k != i} exp(-d_ik^2 / sigma^2), p_ii = 0.

    Parameters
    ----------
    D : ndarray (n, n)
        Dissimilarities, zero diagonal.
    sigma : float

    Returns
    -------
    ndarray (n, n), rows summing to one
    """
    logits = -(D * D) * _precision(sigma)
    np.fill_diagonal(logits, -np.inf)
    logits -= logits.max(axis=1, keepdims=True)
    P = np.exp(logits)
    P /= P.sum(axis=1, keepdims=True)
    return P


def sparse_input_neighbourhoods(dist, idx, sigma):
    """p_ij = exp(-d_ij^2 / sigma^2) normalized over the k nearest neighbours of i.

    Parameters
    ----------
    dist, idx : ndarray (n, k)
        Each point's neighbours (itself excluded) and their dissimilarities.
    sigma : float

    Returns
    -------
    scipy.sparse.csr_matrix (n, n), rows summing to one
    """
    n, k = dist.shape
    P = fixed_width_rows(dist, sigma)
    return sp.csr_matrix((P.ravel(), idx.ravel(), np.arange(0, n * k + 1, k)), shape=(n, n))


def fixed_width_rows(dist, sigma):
    """exp(-d^2 / sigma^2) of every row of ``dist`` (m, k), normalized to sum to one."""
    logits = -np.square(dist, dtype=np.float64) * _precision(sigma)
    logits -= logits.max(axis=1, keepdims=True)
    P = np.exp(logits)
    P /= P.sum(axis=1, keepdims=True)
    return P


def default_sigma(D, n_classes):
    """The 1/K quantile of the off-diagonal dissimilarities (the paper's choice)."""
    off = D[~np.eye(D.shape[0], dtype=bool)]
    sigma = float(np.quantile(off, 1.0 / n_classes))
    if not sigma > 0:
        raise ValueError(f"sigma='auto' is the 1/{n_classes} quantile of the pairwise "
                         f"dissimilarities, which is {sigma:g} here (many identical points?). "
                         f"Pass a positive sigma explicitly.")
    return sigma


def sampled_sigma(X, n_classes, metric, random_state):
    """:func:`default_sigma` on ``SIGMA_SAMPLE_POINTS`` random points: the 1/K
    quantile of the dissimilarities among them, without all pairs of X."""
    n = X.shape[0]
    rng = check_random_state(random_state)
    chosen = np.sort(rng.choice(n, size=min(n, SIGMA_SAMPLE_POINTS), replace=False))
    if metric == "precomputed":
        D = X[chosen][:, chosen]
        D = D.toarray() if sp.issparse(D) else np.asarray(D)
    else:
        D = pairwise_distances(X[chosen], metric=metric)
    return default_sigma(D, n_classes)
