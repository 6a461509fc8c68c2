"""Per-point Gaussian bandwidths by bisection on the entropy (perplexity)."""

import math

import numpy as np
from numba import njit, prange

from .._config import JIT_PARALLEL

_MAX_STEPS = 200
_TOL = 1e-10


@njit(**JIT_PARALLEL)
def conditional_probabilities(sq_distances, log_perplexity, skip_diagonal):
    """Conditional p_{j|i} with each row's entropy equal to ``log_perplexity``.

    Parameters
    ----------
    sq_distances : ndarray (n, m)
        Squared distances from point i to m candidate neighbours (row i).
    log_perplexity : float
        Target entropy in nats (the natural log of the perplexity).
    skip_diagonal : bool
        Treat column i of row i as the point itself and give it probability 0
        (for a full n x n matrix); False for neighbour lists without self.

    Returns
    -------
    P : ndarray (n, m)
        Rows sum to one.
    beta : ndarray (n,)
        Precisions 1 / (2 sigma_i^2) found by bisection.
    """
    n, m = sq_distances.shape
    P = np.zeros((n, m))
    beta = np.ones(n)
    for i in prange(n):
        row = sq_distances[i]
        d_min = np.inf
        for j in range(m):
            if not (skip_diagonal and j == i) and row[j] < d_min:
                d_min = row[j]
        b = 1.0
        b_used = b
        total = 1.0
        lo = 0.0
        hi = np.inf
        for _ in range(_MAX_STEPS):
            total = 0.0
            weighted = 0.0
            for j in range(m):
                if skip_diagonal and j == i:
                    continue
                shifted = row[j] - d_min
                e = math.exp(-b * shifted)
                P[i, j] = e
                total += e
                weighted += e * shifted
            entropy = math.log(total) + b * weighted / total
            b_used = b
            gap = entropy - log_perplexity
            if abs(gap) < _TOL:
                break
            if gap > 0.0:
                lo = b
                b = b * 2.0 if hi == np.inf else 0.5 * (lo + hi)
            else:
                hi = b
                b = 0.5 * (lo + hi)
        for j in range(m):
            P[i, j] /= total
        beta[i] = b_used
    return P, beta
