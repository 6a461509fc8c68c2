"""Parametric Embedding: per-object Newton solves and the class gradient.

Objects r_n and classes phi_k share a d-dimensional space. With class priors
pi_k, the embedding's class posteriors are a unit-variance Gaussian mixture,

    q_nk = pi_k exp(-|r_n - phi_k|^2 / 2) / sum_l pi_l exp(-|r_n - phi_l|^2 / 2),

and the objective is J = sum_n f_n(r_n) + eta_phi |Phi|^2 with the per-object term

    f_n(r) = -sum_k p_nk log q_nk(r) + eta_r |r|^2.

Given Phi the objects are independent and each f_n is strictly convex:

    grad f_n    = sum_k (q_nk - p_nk) phi_k + 2 eta_r r,
    Hessian f_n = sum_k q_nk phi_k phi_k^T - mu mu^T + 2 eta_r I,  mu = sum_k q_nk phi_k,

a covariance of the class positions under q_n plus a ridge. ``solve_objects``
runs damped Newton (backtracking on f_n) for every object in parallel, then adds
f_n and the object's share of dJ/dphi_k = sum_n (p_nk - q_nk)(phi_k - r_n) to
per-chunk sums. Objects are cut into fixed chunks and the chunk sums are added
in order afterwards, so the order of every sum is the same for any number of
threads.

Layout: P (n, K), R (n, d) and Phi (K, d), all C-contiguous float64; one
object's row is contiguous. Costs are O(n K d) per Newton sweep; the d x d solve
is closed-form for d <= 2 and a Cholesky factorization above.
"""

import math

import numpy as np
from numba import njit, prange

from .._config import JIT, JIT_PARALLEL

#: Objects per chunk of the parallel loops (and per partial sum).
CHUNK = 512

#: Halvings of a Newton step before the backtracking line search gives up
#: (the object is then at its optimum to rounding precision).
MAX_HALVINGS = 40

#: Armijo constant of the backtracking line search.
ARMIJO = 1e-4

#: Relative Newton decrement below which a full Newton step is taken without
#: the line search (the decrease is then too small for f to measure).
FULL_STEP_DECREMENT = 1e-10


@njit(**JIT)
def log_membership(r, Phi, log_prior, logq, q):
    """Fill ``logq`` with log q_k(r) and ``q`` with q_k(r)."""
    K, d = Phi.shape
    top = -math.inf
    for k in range(K):
        s = 0.0
        for j in range(d):
            diff = r[j] - Phi[k, j]
            s += diff * diff
        a = log_prior[k] - 0.5 * s
        logq[k] = a
        if a > top:
            top = a
    for k in range(K):
        q[k] = math.exp(logq[k] - top)
    z = 0.0  # summed in a loop that stores nothing (see nbembed._kernels.reduction)
    for k in range(K):
        z += q[k]
    lse = top + math.log(z)
    for k in range(K):
        logq[k] -= lse
        q[k] /= z


@njit(**JIT)
def object_cost(p, r, Phi, log_prior, eta_r, logq, q):
    """f(r) = -sum_k p_k log q_k(r) + eta_r |r|^2; leaves log q(r) and q(r)
    in ``logq`` and ``q``."""
    log_membership(r, Phi, log_prior, logq, q)
    f = 0.0
    for k in range(p.shape[0]):
        if p[k] > 0.0:
            f -= p[k] * logq[k]
    for j in range(r.shape[0]):
        f += eta_r * r[j] * r[j]
    return f


@njit(**JIT)
def gradient_hessian(p, r, Phi, q, eta_r, g, H, mu):
    """Gradient ``g`` and Hessian ``H`` of f at r, given ``q`` = q(r);
    ``mu`` receives sum_k q_k phi_k."""
    K, d = Phi.shape
    for j in range(d):
        g[j] = 2.0 * eta_r * r[j]
        mu[j] = 0.0
        for m in range(d):
            H[j, m] = 0.0
    for k in range(K):
        w = q[k] - p[k]
        for j in range(d):
            g[j] += w * Phi[k, j]
            qphi = q[k] * Phi[k, j]
            mu[j] += qphi
            for m in range(j + 1):
                H[j, m] += qphi * Phi[k, m]
    for j in range(d):
        for m in range(j + 1):
            H[j, m] -= mu[j] * mu[m]
        H[j, j] += 2.0 * eta_r
        for m in range(j):
            H[m, j] = H[j, m]


@njit(**JIT)
def solve_spd(H, b, x, L):
    """x = H^-1 b for a symmetric positive definite H; False if H is not."""
    d = b.shape[0]
    if d == 1:
        if not H[0, 0] > 0.0:
            return False
        x[0] = b[0] / H[0, 0]
        return True
    if d == 2:
        det = H[0, 0] * H[1, 1] - H[0, 1] * H[0, 1]
        if not (det > 0.0 and H[0, 0] > 0.0):
            return False
        x[0] = (H[1, 1] * b[0] - H[0, 1] * b[1]) / det
        x[1] = (H[0, 0] * b[1] - H[0, 1] * b[0]) / det
        return True
    for i in range(d):
        for j in range(i + 1):
            s = H[i, j]
            for m in range(j):
                s -= L[i, m] * L[j, m]
            if i == j:
                if not s > 0.0:
                    return False
                L[i, i] = math.sqrt(s)
            else:
                L[i, j] = s / L[j, j]
    for i in range(d):
        s = b[i]
        for m in range(i):
            s -= L[i, m] * x[m]
        x[i] = s / L[i, i]
    for i in range(d - 1, -1, -1):
        s = x[i]
        for m in range(i + 1, d):
            s -= L[m, i] * x[m]
        x[i] = s / L[i, i]
    return True


@njit(**JIT)
def newton_object(p, r, Phi, log_prior, eta_r, tol, max_iter, logq, q, g, H, L, mu, step,
                  trial):
    """Minimize f over r in place by damped Newton steps.

    Stops when |grad f| <= tol, after ``max_iter`` steps, or when no step
    decreases f any more (rounding level). Returns (steps taken, f at r) and
    leaves log q(r) and q(r) in ``logq`` and ``q``.
    """
    d = r.shape[0]
    f = object_cost(p, r, Phi, log_prior, eta_r, logq, q)
    steps = 0
    while steps < max_iter:
        gradient_hessian(p, r, Phi, q, eta_r, g, H, mu)
        norm2 = 0.0
        slope = 0.0
        for j in range(d):
            norm2 += g[j] * g[j]
        if norm2 <= tol * tol:
            break
        if not solve_spd(H, g, step, L):
            break
        for j in range(d):
            slope -= g[j] * step[j]
        # Near the optimum the decrease (about half the Newton decrement
        # -slope) is at the rounding level of f, so f cannot judge the step;
        # there the full Newton step is safe and is taken as it is.
        full = -slope <= FULL_STEP_DECREMENT * (1.0 + abs(f))
        t = 1.0
        accepted = False
        f_trial = f
        for _ in range(MAX_HALVINGS):
            for j in range(d):
                trial[j] = r[j] - t * step[j]
            f_trial = object_cost(p, trial, Phi, log_prior, eta_r, logq, q)
            if full or f_trial <= f + ARMIJO * t * slope:
                accepted = True
                break
            t *= 0.5
        if not accepted:
            object_cost(p, r, Phi, log_prior, eta_r, logq, q)
            break
        for j in range(d):
            r[j] = trial[j]
        f = f_trial
        steps += 1
    return steps, f


@njit(**JIT_PARALLEL)
def solve_objects(P, R, Phi, log_prior, eta_r, tol, max_iter, frozen, cost_parts, grad_parts,
                  steps_total, steps_max):
    """Newton-solve every object (in place in R) and sum up what Phi needs.

    With ``max_iter = 0`` nothing moves: the sums are then those of the given R.
    Objects with ``frozen[i]`` (pinned ones) are not moved either, but count in
    the sums.

    Per chunk c: ``cost_parts[c]`` = sum of f_n, ``grad_parts[c]`` (K, d) =
    sum of (p_nk - q_nk)(phi_k - r_n), ``steps_total[c]`` and ``steps_max[c]``
    the Newton steps taken.
    """
    n, K = P.shape
    d = R.shape[1]
    n_chunks = (n + CHUNK - 1) // CHUNK
    for c in prange(n_chunks):
        logq = np.empty(K)
        q = np.empty(K)
        g = np.empty(d)
        H = np.empty((d, d))
        L = np.zeros((d, d))
        mu = np.empty(d)
        step = np.empty(d)
        trial = np.empty(d)
        G = grad_parts[c]
        G[:] = 0.0
        cost = 0.0
        total = 0
        most = 0
        for i in range(c * CHUNK, min(n, (c + 1) * CHUNK)):
            steps, f = newton_object(P[i], R[i], Phi, log_prior, eta_r, tol,
                                     0 if frozen[i] else max_iter, logq, q, g, H, L, mu, step,
                                     trial)
            cost += f
            total += steps
            if steps > most:
                most = steps
            for k in range(K):
                w = P[i, k] - q[k]
                for j in range(d):
                    G[k, j] += w * (Phi[k, j] - R[i, j])
        cost_parts[c] = cost
        steps_total[c] = total
        steps_max[c] = most


@njit(**JIT_PARALLEL)
def object_derivatives(P, R, Phi, log_prior, eta_r, grad, hess):
    """Per-object gradient (n, d) and Hessian (n, d, d) of f_n at R."""
    n, K = P.shape
    n_chunks = (n + CHUNK - 1) // CHUNK
    for c in prange(n_chunks):
        logq = np.empty(K)
        q = np.empty(K)
        mu = np.empty(R.shape[1])
        for i in range(c * CHUNK, min(n, (c + 1) * CHUNK)):
            log_membership(R[i], Phi, log_prior, logq, q)
            gradient_hessian(P[i], R[i], Phi, q, eta_r, grad[i], hess[i], mu)


@njit(**JIT_PARALLEL)
def membership(R, Phi, log_prior, Q):
    """Q[n, k] = q_nk, the embedding's class posteriors."""
    n = R.shape[0]
    K = Phi.shape[0]
    n_chunks = (n + CHUNK - 1) // CHUNK
    for c in prange(n_chunks):
        logq = np.empty(K)
        for i in range(c * CHUNK, min(n, (c + 1) * CHUNK)):
            log_membership(R[i], Phi, log_prior, logq, Q[i])


def solve(P, R, Phi, log_prior, eta_r, tol, max_iter, frozen=None):
    """Run :func:`solve_objects` and add up its chunk sums.

    ``frozen`` (bool, n) marks objects left where they are; none by default.

    Returns
    -------
    cost : float
        sum_n f_n(r_n) at the returned R (J without the eta_phi term).
    grad_phi : ndarray (K, d)
        dE/dPhi at the returned R (without the eta_phi term).
    steps_total, steps_max : int
        Newton steps over all objects, and the most any object took.
    """
    n, K = P.shape
    d = R.shape[1]
    n_chunks = (n + CHUNK - 1) // CHUNK
    cost_parts = np.empty(n_chunks)
    grad_parts = np.empty((n_chunks, K, d))
    steps_total = np.empty(n_chunks, dtype=np.int64)
    steps_max = np.empty(n_chunks, dtype=np.int64)
    if frozen is None:
        frozen = np.zeros(n, dtype=np.bool_)
    solve_objects(P, R, Phi, log_prior, float(eta_r), float(tol), int(max_iter), frozen,
                  cost_parts, grad_parts, steps_total, steps_max)
    return (float(cost_parts.sum()), grad_parts.sum(axis=0), int(steps_total.sum()),
            int(steps_max.max(initial=0)))
