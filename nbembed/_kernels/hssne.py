"""HSSNE cost and gradient for the power family of embedding kernels.

H(tau) = (1 + alpha * tau) ** (-1 / alpha), tau = ||y_i - y_j||^2, with the
Gaussian exp(-tau) at alpha = 0 and Student-t (t-SNE) at alpha = 1. The
negative score function is S(tau) = 1 / (1 + alpha * tau) = H ** alpha.

With Q_ij = H_ij / Z, Z = sum_{a != b} H_ab, the cost is KL(P || Q) and

    dJ/dy_i = 4 sum_j (P_ij - Q_ij) S_ij (y_i - y_j)
            = 4 (attraction_i - repulsion_i / Z).

Layout: embeddings are passed transposed, ``Yt`` of shape (d, n), so that the
inner loop over j reads contiguous memory and vectorizes; two dimensions get a
dedicated loop. The pair (i, i) is not skipped inside the loops (a branch there
stops vectorization): at tau = 0 it contributes H = 1 and no force, which is
subtracted afterwards. Fractional powers are slow without a vector math
library, so common alphas get closed forms and the others the vectorizable
power of :mod:`.fastexp` (in float32 about 5x the cost of a closed form per
pair, in float64 about 18x). The pair kernels (:func:`hssne_dense`,
:func:`hssne_sparse`, :func:`hssne_z`) are compiled once per kernel
function, each on its own, and chosen in Python by alpha (:func:`form_of`):
a run compiles only the form it uses, and alpha stays a runtime argument, so
every alpha without a closed form shares one cached kernel.

Precision follows the inputs: with a float32 ``Yt`` (and alpha as np.float32) the
pair loops run in float32, about 2.4x faster; constants are written as float32
(``ONE``, ``ZERO``) because they promote to float64 in float64 code, whereas a
Python float literal would force float64 everywhere.

Every kernel also returns the row sums A_i = sum_j P_ij S_ij that the
fixed-point update needs.

For large n the repulsion is approximated (``barnes_hut``, ``interpolation``)
and only the attraction over a sparse P is computed here
(:func:`hssne_attraction`). Loops that cannot vectorize (sparse rows, grids)
choose the closed form by comparing alpha per pair (:func:`kernel_by_alpha`),
where the branch costs little; the tree walk is compiled for each kernel
function, with a table for the power (:mod:`.power_table`).
"""

import math

import numpy as np
from numba import njit, prange
from numba.core import types
from numba.extending import overload

from .._config import JIT, JIT_PARALLEL
from .fastexp import log_positive, unit_power
from .reduction import ordered_sum
from .variants import named_variant

ZERO = np.float32(0.0)
ONE = np.float32(1.0)
HALF = np.float32(0.5)
TWO = np.float32(2.0)


@njit(**JIT)
def gaussian_kernel(tau, alpha):
    """(H, S) at alpha = 0: H = exp(-tau), S = 1."""
    return math.exp(-tau), ONE + ZERO * tau


@njit(**JIT)
def student_kernel(tau, alpha):
    """(H, S) at alpha = 1: H = S = 1 / (1 + tau)."""
    s = ONE / (ONE + tau)
    return s, s


@njit(**JIT)
def half_kernel(tau, alpha):
    """(H, S) at alpha = 0.5: H = S^2."""
    s = ONE / (ONE + HALF * tau)
    return s * s, s


@njit(**JIT)
def two_kernel(tau, alpha):
    """(H, S) at alpha = 2: H = sqrt(S)."""
    s = ONE / (ONE + TWO * tau)
    return math.sqrt(s), s


@njit(**JIT)
def power_kernel(tau, alpha):
    """(H, S) for any alpha > 0: H = S^(1/alpha), by a power that vectorizes
    (math.exp and math.log made the pair loops about 30x slower than closed forms)."""
    s = ONE / (ONE + alpha * tau)
    return unit_power(s, ONE / alpha), s


#: Kernel functions the pair loops are compiled for, by alpha (any other alpha
#: takes ``power_kernel``).
_CLOSED_FORMS = {0.0: gaussian_kernel, 1.0: student_kernel, 0.5: half_kernel, 2.0: two_kernel}


def has_closed_form(alpha):
    """Whether ``alpha`` has a closed-form kernel (the others take an exp and a log per pair)."""
    return float(alpha) in _CLOSED_FORMS


@njit(**JIT)
def kernel_by_alpha(tau, alpha):
    """(H, S) of the power family, the closed form chosen by comparing alpha.

    For loops that do not vectorize anyway (sparse rows, grids):
    the branch costs little there, and kernels that use it need no kernel
    function argument, so they are cached on disk.
    """
    if alpha == 1.0:
        return student_kernel(tau, alpha)
    if alpha == 0.5:
        return half_kernel(tau, alpha)
    if alpha == 2.0:
        return two_kernel(tau, alpha)
    if alpha == 0.0:
        return gaussian_kernel(tau, alpha)
    return power_kernel(tau, alpha)


@njit(**JIT)
def log_kernel(tau, alpha):
    """log H(tau) = -log(1 + alpha tau) / alpha, and -tau at alpha = 0.

    ``log`` rather than ``log1p``: about twice as fast here, and the absolute
    error (1e-16) is all that matters in a sum of P log H.
    """
    if alpha == 0.0:
        return -tau
    return -math.log(1.0 + alpha * tau) / alpha


def _repulsion_loop(kern):
    """The loop of :func:`_repulsion_row` for one kernel function."""

    def loop(Yt, i, alpha, form, force):
        """Z_i = sum_{j != i} H_ij; ``force`` += sum_j H_ij S_ij (y_i - y_j)."""
        d, n = Yt.shape
        z = ZERO
        if d == 2:
            y0 = Yt[0]
            y1 = Yt[1]
            a0 = y0[i]
            a1 = y1[i]
            f0 = ZERO
            f1 = ZERO
            for j in range(n):
                dx = a0 - y0[j]
                dy = a1 - y1[j]
                h, s = kern(dx * dx + dy * dy, alpha)
                z += h
                hs = h * s
                f0 += hs * dx
                f1 += hs * dy
            force[0] += f0
            force[1] += f1
        else:
            for j in range(n):
                tau = ZERO
                for k in range(d):
                    diff = Yt[k, i] - Yt[k, j]
                    tau += diff * diff
                h, s = kern(tau, alpha)
                z += h
                hs = h * s
                for k in range(d):
                    force[k] += hs * (Yt[k, i] - Yt[k, j])
        return z - ONE

    return named_variant(loop, kern.__name__)


def _dense_loop(kern):
    """The loop of :func:`_dense_row` for one kernel function."""

    def loop(Yt, i, prow, alpha, form, repulsion, attraction):
        """Both forces of row i in one pass over j (the kernel is evaluated once per pair).

        Returns (Z_i, A_i); ``repulsion`` += sum_j H_ij S_ij (y_i - y_j) and
        ``attraction`` += sum_j P_ij S_ij (y_i - y_j).
        """
        d, n = Yt.shape
        z = ZERO
        a = ZERO
        if d == 2:
            y0 = Yt[0]
            y1 = Yt[1]
            a0 = y0[i]
            a1 = y1[i]
            r0 = ZERO
            r1 = ZERO
            f0 = ZERO
            f1 = ZERO
            for j in range(n):
                dx = a0 - y0[j]
                dy = a1 - y1[j]
                h, s = kern(dx * dx + dy * dy, alpha)
                z += h
                hs = h * s
                r0 += hs * dx
                r1 += hs * dy
                ps = prow[j] * s
                a += ps
                f0 += ps * dx
                f1 += ps * dy
            repulsion[0] += r0
            repulsion[1] += r1
            attraction[0] += f0
            attraction[1] += f1
        else:
            for j in range(n):
                tau = ZERO
                for k in range(d):
                    diff = Yt[k, i] - Yt[k, j]
                    tau += diff * diff
                h, s = kern(tau, alpha)
                z += h
                hs = h * s
                ps = prow[j] * s
                a += ps
                for k in range(d):
                    diff = Yt[k, i] - Yt[k, j]
                    repulsion[k] += hs * diff
                    attraction[k] += ps * diff
        return z - ONE, a

    return named_variant(loop, kern.__name__)



#: The kernel function for each ``form`` index of the row loops.
_FORMS = (student_kernel, half_kernel, two_kernel, gaussian_kernel, power_kernel)
_CLOSED_FORM_INDEX = {alpha: _FORMS.index(kern) for alpha, kern in _CLOSED_FORMS.items()}
_JIT_LOOP = dict(fastmath=JIT["fastmath"], error_model=JIT["error_model"])


def _repulsion_row_form(Yt, i, alpha, form, force):
    """The repulsion loop for ``_FORMS[form]``; compiled code only (see below)."""
    raise NotImplementedError


def _dense_row_form(Yt, i, prow, alpha, form, repulsion, attraction):
    """The fused loop for ``_FORMS[form]``; compiled code only (see below)."""
    raise NotImplementedError


# A kernel function passed as an argument makes every kernel that calls it
# impossible to cache on disk. Instead ``form`` is a literal integer: each
# value gets its own loop, compiled with its kernel function inlined, as part
# of the cached kernel that calls it.
@overload(_repulsion_row_form, prefer_literal=True, jit_options=_JIT_LOOP)
def _repulsion_row_form_overload(Yt, i, alpha, form, force):
    if isinstance(form, types.IntegerLiteral):
        return _repulsion_loop(_FORMS[form.literal_value])
    return None


@overload(_dense_row_form, prefer_literal=True, jit_options=_JIT_LOOP)
def _dense_row_form_overload(Yt, i, prow, alpha, form, repulsion, attraction):
    if isinstance(form, types.IntegerLiteral):
        return _dense_loop(_FORMS[form.literal_value])
    return None


def form_of(alpha):
    """Index into ``_FORMS`` of the kernel function for ``alpha``."""
    alpha = float(alpha)
    return _CLOSED_FORM_INDEX.get(alpha, len(_FORMS) - 1)


@njit(**JIT_PARALLEL)
def points_side_by_side(Yt):
    """Y (n, d), C-contiguous, from Yt (d, n): the layout the attraction reads.

    A point's coordinates then share a cache line, so each stored entry of P
    costs one read of memory instead of d; at 10^6 points, where most of a
    point's entries lie far away in memory, the attraction took 10-15% less
    time than with the transposed layout.
    """
    d, n = Yt.shape
    Y = np.empty((n, d), dtype=Yt.dtype)
    for i in prange(n):
        for k in range(d):
            Y[i, k] = Yt[k, i]
    return Y


@njit(**JIT)
def _attraction_row(Y, i, indptr, indices, pvalues, alpha, force):
    """A_i = sum_j P_ij S_ij over the stored entries of CSR row i; ``force`` +=
    sum_j P_ij S_ij (y_i - y_j). ``Y`` is (n, d) (:func:`points_side_by_side`).

    S = H^alpha = 1 / (1 + alpha tau) for every alpha (1 at alpha = 0), so the
    attraction needs no power: one division per entry, whatever the tail.

    The row's entries are read through slices counted from 0. Indexed by
    ``range(indptr[i], indptr[i + 1])``, whose start Numba cannot prove
    non-negative, every read carried a wraparound test and LLVM gathered P's
    entries one by one like the coordinates they point to: at 10^6 points the
    loop took twice as long.
    """
    d = Y.shape[1]
    start, stop = indptr[i], indptr[i + 1]
    columns = indices[start:stop]
    values = pvalues[start:stop]
    a = ZERO
    if d == 2:
        a0 = Y[i, 0]
        a1 = Y[i, 1]
        f0 = ZERO
        f1 = ZERO
        for t in range(columns.size):
            j = columns[t]
            dx = a0 - Y[j, 0]
            dy = a1 - Y[j, 1]
            ps = values[t] / (ONE + alpha * (dx * dx + dy * dy))
            a += ps
            f0 += ps * dx
            f1 += ps * dy
        force[0] += f0
        force[1] += f1
    else:
        for t in range(columns.size):
            j = columns[t]
            tau = ZERO
            for k in range(d):
                diff = Y[i, k] - Y[j, k]
                tau += diff * diff
            ps = values[t] / (ONE + alpha * tau)
            a += ps
            for k in range(d):
                force[k] += ps * (Y[i, k] - Y[j, k])
    return a


@njit(**JIT)
def _sq_dist(Yt, i, j):
    tau = ZERO
    for k in range(Yt.shape[0]):
        diff = Yt[k, i] - Yt[k, j]
        tau += diff * diff
    return tau


@njit(**JIT)
def _row_sums(Yt):
    """Zeroed per-row outputs of the gradient kernels: Z_i, A_i, attraction, repulsion."""
    d, n = Yt.shape
    return np.zeros(n), np.zeros(n), np.zeros((n, d)), np.zeros((n, d))


@njit(**JIT)
def _gradient(grad, z_rows, a_rowsum, attraction, repulsion, exaggeration):
    """grad from the per-row sums (Z added in a fixed order); returns (Z, A)."""
    z = ordered_sum(z_rows)
    _combine(grad, attraction, repulsion, 4.0 * exaggeration, 4.0 / z)
    return z, a_rowsum


def _dense_kernel(form):
    """:func:`hssne_dense` compiled for ``_FORMS[form]`` alone."""

    def dense(Yt, P, alpha, exaggeration, grad):
        z_rows, a_rowsum, attraction, repulsion = _row_sums(Yt)
        for i in prange(Yt.shape[1]):
            z_rows[i], a_rowsum[i] = _dense_row_form(Yt, i, P[i], alpha, form, repulsion[i],
                                                     attraction[i])
        return _gradient(grad, z_rows, a_rowsum, attraction, repulsion, exaggeration)

    return njit(**JIT_PARALLEL)(named_variant(dense, _FORMS[form].__name__))


def _sparse_kernel(form):
    """:func:`hssne_sparse` compiled for ``_FORMS[form]`` alone."""

    def sparse(Yt, indptr, indices, pvalues, alpha, exaggeration, grad):
        z_rows, a_rowsum, attraction, repulsion = _row_sums(Yt)
        Y = points_side_by_side(Yt)
        for i in prange(Yt.shape[1]):
            z_rows[i] = _repulsion_row_form(Yt, i, alpha, form, repulsion[i])
            a_rowsum[i] = _attraction_row(Y, i, indptr, indices, pvalues, alpha,
                                          attraction[i])
        return _gradient(grad, z_rows, a_rowsum, attraction, repulsion, exaggeration)

    return njit(**JIT_PARALLEL)(named_variant(sparse, _FORMS[form].__name__))


def _z_kernel(form):
    """:func:`hssne_z` compiled for ``_FORMS[form]`` alone."""

    def normalizer(Yt, alpha):
        d, n = Yt.shape
        z_rows = np.zeros(n)
        for i in prange(n):
            scratch = np.zeros(d)
            z_rows[i] = _repulsion_row_form(Yt, i, alpha, form, scratch)
        return ordered_sum(z_rows)

    return njit(**JIT_PARALLEL)(named_variant(normalizer, _FORMS[form].__name__))


# One compiled kernel per form, chosen in Python by alpha: a run compiles the
# pair loops of the kernel function it uses and no other (the five forms
# compiled together took 13 s for each of these kernels in a first run). Each
# form's kernel is cached on disk apart, so every alpha without a closed form
# shares the one of ``power_kernel``.
_DENSE = tuple(_dense_kernel(form) for form in range(len(_FORMS)))
_SPARSE = tuple(_sparse_kernel(form) for form in range(len(_FORMS)))
_Z = tuple(_z_kernel(form) for form in range(len(_FORMS)))


def hssne_dense(Yt, P, alpha, exaggeration, grad):
    """Gradient of KL(P || Q) for a dense symmetric P.

    Parameters
    ----------
    Yt : ndarray (d, n)
        Embedding, transposed.
    P : ndarray (n, n)
        Joint probabilities, zero diagonal, summing to one.
    alpha : float
        A runtime argument: it picks the compiled kernel of its form
        (:func:`form_of`), which then serves every alpha of that form.
    exaggeration : float
        Factor on the attraction (early exaggeration).
    grad : ndarray (d, n)
        Output, overwritten with the gradient (transposed like ``Yt``).

    Returns
    -------
    z : float
        Normalizer Z = sum_{i != j} H_ij.
    a_rowsum : ndarray (n,)
        A_i = sum_j P_ij S_ij.
    """
    return _DENSE[form_of(alpha)](Yt, P, alpha, exaggeration, grad)


def hssne_sparse(Yt, indptr, indices, pvalues, alpha, exaggeration, grad):
    """Like :func:`hssne_dense` for P in CSR form; the repulsion is still exact.

    ``indptr``, ``indices``, ``pvalues`` are the CSR arrays of a symmetric P
    without diagonal entries.
    """
    return _SPARSE[form_of(alpha)](Yt, indptr, indices, pvalues, alpha, exaggeration, grad)


@njit(**JIT_PARALLEL)
def hssne_attraction(Yt, indptr, indices, pvalues, alpha, attraction):
    """The attraction over a sparse P alone, for approximate repulsion.

    ``attraction`` (n, d) is overwritten with sum_j P_ij S_ij (y_i - y_j);
    returns A_i = sum_j P_ij S_ij. O(nnz(P)).
    """
    n = Yt.shape[1]
    a_rowsum = np.zeros(n)
    Y = points_side_by_side(Yt)
    for i in prange(n):
        attraction[i] = 0.0
        a_rowsum[i] = _attraction_row(Y, i, indptr, indices, pvalues, alpha, attraction[i])
    return a_rowsum


def combine(grad, attraction, repulsion, exaggeration, z):
    """grad = 4 (exaggeration * attraction - repulsion / Z), transposed into ``grad``.

    Z = 0 (an embedding blown apart) gives a non-finite gradient, as in the
    exact kernels, so that the run's divergence recovery takes over.
    """
    _combine(grad, attraction, repulsion, 4.0 * exaggeration, 4.0 / z if z > 0 else math.inf)


@njit(**JIT)
def _combine(grad, attraction, repulsion, attraction_scale, repulsion_scale):
    d, n = grad.shape
    for i in range(n):
        for k in range(d):
            grad[k, i] = attraction_scale * attraction[i, k] - repulsion_scale * repulsion[i, k]


def hssne_z(Yt, alpha):
    """Normalizer Z = sum_{i != j} H_ij alone."""
    return _Z[form_of(alpha)](Yt, alpha)


@njit(**JIT)
def _lower_p_log_h(Yt, P, i, alpha):
    """sum_{j < i} P_ij log H_ij."""
    acc = 0.0
    for j in range(i):
        p = P[i, j]
        if p > 0.0:
            acc += p * log_kernel(_sq_dist(Yt, i, j), alpha)
    return acc


@njit(**JIT_PARALLEL)
def dense_p_log_h(Yt, P, alpha):
    """sum_ij P_ij log H_ij for a dense symmetric P with a zero diagonal.

    Each pair is taken once (j < i) and counted twice: half the logarithms.
    Rows i and n - 1 - i form one task, so that every task has n - 1 pairs.
    """
    n = Yt.shape[1]
    half = (n + 1) // 2
    tasks = np.zeros(half)
    for r in prange(half):
        acc = _lower_p_log_h(Yt, P, r, alpha)
        if n - 1 - r != r:
            acc += _lower_p_log_h(Yt, P, n - 1 - r, alpha)
        tasks[r] = acc
    return 2.0 * ordered_sum(tasks)


@njit(**JIT)
def _lower_p_log_p(P, i):
    """sum_{j < i} P_ij log P_ij (0 log 0 = 0)."""
    acc = 0.0
    for j in range(i):
        p = P[i, j]
        if p > 0.0:
            acc += p * math.log(p)
    return acc


@njit(**JIT_PARALLEL)
def dense_p_log_p(P):
    """sum_ij P_ij log P_ij for a dense symmetric P with a zero diagonal: each
    pair once, counted twice, rows paired as in :func:`dense_p_log_h`."""
    n = P.shape[0]
    half = (n + 1) // 2
    tasks = np.zeros(half)
    for r in prange(half):
        acc = _lower_p_log_p(P, r)
        if n - 1 - r != r:
            acc += _lower_p_log_p(P, n - 1 - r)
        tasks[r] = acc
    return 2.0 * ordered_sum(tasks)


#: Rows of P that :func:`sparse_p_log_h` hands to a thread at a time, with one
#: buffer for their entries' logarithms.
P_LOG_H_ROWS = 256


@njit(**JIT_PARALLEL)
def sparse_p_log_h(Yt, indptr, indices, pvalues, alpha):
    """sum_ij P_ij log H_ij for P in CSR form.

    log H = -log(1 + alpha tau) / alpha, and -tau at alpha = 0. Per row, the
    tau are gathered into a buffer, the logarithms taken in a loop
    of their own and then summed in order: the logarithm is
    :func:`log_positive`, which LLVM vectorizes only in a loop without a sum
    (in order, a sum does not vectorize). At 10^6 points in one loop it took
    three times as long.
    """
    d, n = Yt.shape
    rows = np.zeros(n)
    Y = points_side_by_side(Yt)
    for block in prange((n + P_LOG_H_ROWS - 1) // P_LOG_H_ROWS):
        first = block * P_LOG_H_ROWS
        last = min(n, first + P_LOG_H_ROWS)
        longest = 0
        for i in range(first, last):
            longest = max(longest, indptr[i + 1] - indptr[i])
        x = np.empty(longest)
        for i in range(first, last):
            # Slices counted from 0, as in _attraction_row.
            start, stop = indptr[i], indptr[i + 1]
            columns = indices[start:stop]
            values = pvalues[start:stop]
            for t in range(columns.size):
                j = columns[t]
                tau = 0.0
                for k in range(d):
                    diff = Y[i, k] - Y[j, k]
                    tau += diff * diff
                x[t] = tau
            acc = 0.0
            if alpha == 0.0:
                for t in range(columns.size):
                    acc -= values[t] * x[t]
                rows[i] = acc
                continue
            for t in range(columns.size):
                x[t] = log_positive(1.0 + alpha * x[t])
            for t in range(columns.size):
                acc += values[t] * x[t]
            rows[i] = -acc / alpha
    return ordered_sum(rows)
