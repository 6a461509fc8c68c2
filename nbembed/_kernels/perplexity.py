"""Per-point Gaussian bandwidths with a given perplexity (entropy of each row)."""

import math

import numpy as np
from numba import njit, prange

from .._config import JIT_PARALLEL
from .fastexp import exp_nonpositive

_MAX_STEPS = 200
_TOL = 1e-10
#: Squared distances above a row's nearest by at most this fraction of its
#: largest count as ties with the nearest (copies computed as
#: |x|^2 + |y|^2 - 2 x.y are apart by rounding only).
TIE_RTOL = 1e-10


@njit(**JIT_PARALLEL)
def conditional_probabilities(sq_distances, log_perplexity, skip_diagonal):
    """Conditional p_{j|i} with each row's entropy equal to ``log_perplexity``.

    The precision b_i of exp(-b_i d^2) is found by Newton's method on the
    entropy H(b) = log S + b E[d^2], whose derivative is -b Var[d^2], kept
    inside a bracket that shrinks every step: a step that would leave it is
    replaced by a bisection (or a doubling while there is no upper end). From
    b = 1 / mean(d^2) this takes a handful of evaluations where plain
    bisection takes forty.

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
        Precisions 1 / (2 sigma_i^2).
    ties : ndarray (n,) of int
        How many candidates of each row lie at its nearest distance, to
        ``TIE_RTOL`` of the row's spread; a row with at least the perplexity
        of them cannot reach it (the caller floors its bandwidth).
    """
    n, m = sq_distances.shape
    P = np.zeros((n, m))
    beta = np.ones(n)
    ties = np.zeros(n, dtype=np.int64)
    for i in prange(n):
        row = sq_distances[i]
        d_min = np.inf
        d_max = -np.inf
        for j in range(m):
            if not (skip_diagonal and j == i):
                if row[j] < d_min:
                    d_min = row[j]
                if row[j] > d_max and row[j] < np.inf:
                    d_max = row[j]
        tie_limit = TIE_RTOL * (d_max - d_min) if d_max > d_min else 0.0
        count = 0
        mean = 0.0
        for j in range(m):
            if not (skip_diagonal and j == i):
                shifted = row[j] - d_min
                if shifted <= tie_limit:
                    count += 1
                if shifted < np.inf:
                    mean += shifted
        ties[i] = count
        mean /= max(1, m - (1 if skip_diagonal else 0))
        b = 1.0 / mean if mean > 0.0 else 1.0
        b_used = b
        total = 1.0
        lo = 0.0
        hi = np.inf
        for _ in range(_MAX_STEPS):
            total = 0.0
            first = 0.0
            second = 0.0
            # Branch-free (selects, not a skipped iteration) and with an exp of
            # plain arithmetic, so that LLVM vectorizes the row's sums.
            for j in range(m):
                shifted = max(row[j] - d_min, 0.0)
                e = exp_nonpositive(-b * shifted)
                e = 0.0 if skip_diagonal and j == i else e
                weighted = e * shifted if e > 0.0 else 0.0
                total += e
                first += weighted
                second += weighted * shifted
            first /= total
            entropy = math.log(total) + b * first
            b_used = b
            gap = entropy - log_perplexity
            if abs(gap) < _TOL:
                break
            if gap > 0.0:
                lo = b
            else:
                hi = b
            variance = second / total - first * first
            newton = b + gap / (b * variance) if variance > 0.0 else -1.0
            if lo < newton < hi:
                b = newton
            elif hi == np.inf:
                b = 2.0 * b
            else:
                b = 0.5 * (lo + hi)
            if not lo < b < hi and hi < np.inf:  # the bracket is down to rounding
                break
        # Written once, after the search, so that the search's sums are in a
        # loop that stores nothing (see nbembed._kernels.reduction).
        for j in range(m):
            if not (skip_diagonal and j == i):
                P[i, j] = exp_nonpositive(-b_used * max(row[j] - d_min, 0.0)) / total
        beta[i] = b_used
    return P, beta, ties
