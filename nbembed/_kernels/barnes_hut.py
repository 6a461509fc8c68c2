"""Barnes-Hut approximation of the HSSNE repulsion in two dimensions.

For every point i the repulsion needs Z_i = sum_{j != i} H_ij and the force
sum_j K_ij (y_i - y_j) with K = H S = H^(1 + alpha) (see ``hssne``). A quadtree
groups points into square cells; a cell of side s whose m points have centre of
mass c and covariance C stands for them all when s^2 < theta^2 tau, tau =
|d|^2, d = y_i - c. Expanding to second order in the points' offsets from c
(with H' = -H S, H'' = (1 + alpha) H S^2, K' = -(1 + alpha) K S,
K'' = (1 + alpha)(1 + 2 alpha) K S^2, q = d^T C d):

    Z_i += m [H + H' tr C + 2 H'' q],
    force_i += m [(K + K' tr C + 2 K'' q) d + 2 K' C d].

The second-order (quadrupole) terms cost a few operations per cell and cut the
error severalfold at the same theta (the plain centre-of-mass rule
underestimates Z by about 1% at theta = 0.5). Otherwise the cell is opened (its
children, or the exact pairs of a leaf). theta = 0 opens every cell: the exact
sums. A cell that contains y_i is always opened. (Walking the tree once per
group of nearby points, with the rule applied to the group's bounding box, was
about twice as slow at equal accuracy here.)

The tree: the points are sorted by their Morton (Z-order) code on a 2^21 x
2^21 grid over the bounding square, so every cell is a contiguous range of the
sorted points and its centre of mass comes from prefix sums. Cells split into
their non-empty quadrants until they hold at most ``LEAF_SIZE`` points or reach
the finest level. Each point's sums are accumulated by one thread in a fixed
order, so the results do not depend on the number of threads.

The walk is compiled once per kernel function, each in a kernel of its own
chosen in Python, so that a run compiles only the walk it uses. An alpha
without a closed form takes the tabulated power (:mod:`.power_table`,
relative error below 2e-9): with the exp-and-log kernel the walk took 5x as
long as at alpha = 1, with the table 1.6x (10 000 points, one thread: 52 and
17 ms against 10.5).
"""

import numpy as np
from numba import njit, prange
from numba.core import types
from numba.extending import overload

from .._config import JIT, JIT_PARALLEL
from .hssne import gaussian_kernel, half_kernel, power_kernel, student_kernel, two_kernel
from .power_table import TABULATED_MIN_ALPHA, power_table, tabulated_power_kernel
from .variants import named_variant

#: Levels of the quadtree (bits per coordinate of the Morton code).
LEVELS = 21
#: Cells with at most this many points are leaves.
LEAF_SIZE = 16
#: Points per parallel task of the tree walk.
_BLOCK = 64
_STACK = 4 * LEVELS + 8


@njit(**JIT)
def _spread_bits(v):
    """Put the low 32 bits of v on the even bit positions of a 64-bit integer."""
    v &= 0xFFFFFFFF
    v = (v | (v << 16)) & 0x0000FFFF0000FFFF
    v = (v | (v << 8)) & 0x00FF00FF00FF00FF
    v = (v | (v << 4)) & 0x0F0F0F0F0F0F0F0F
    v = (v | (v << 2)) & 0x3333333333333333
    v = (v | (v << 1)) & 0x5555555555555555
    return v


@njit(**JIT)
def bounding_square(Yt):
    """(x0, y0, side): the lower corner and side of the square the tree covers."""
    n = Yt.shape[1]
    x_lo = x_hi = Yt[0, 0]
    y_lo = y_hi = Yt[1, 0]
    for i in range(1, n):
        x_lo = min(x_lo, Yt[0, i])
        x_hi = max(x_hi, Yt[0, i])
        y_lo = min(y_lo, Yt[1, i])
        y_hi = max(y_hi, Yt[1, i])
    side = max(x_hi - x_lo, y_hi - y_lo)
    # Slightly larger, so the largest coordinate falls inside the last cell.
    side = side * (1.0 + 1e-9) + 1e-300
    return x_lo, y_lo, side


@njit(**JIT)
def grid_coordinates(Yt, x0, y0, side):
    """Integer coordinates of every point on the finest grid, shape (2, n)."""
    n = Yt.shape[1]
    top = (1 << LEVELS) - 1
    scale = (1 << LEVELS) / side
    q = np.empty((2, n), dtype=np.int64)
    for i in range(n):
        q[0, i] = min(max(np.int64((Yt[0, i] - x0) * scale), 0), top)
        q[1, i] = min(max(np.int64((Yt[1, i] - y0) * scale), 0), top)
    return q


@njit(**JIT)
def _child_end(codes, lo, hi, shift, quadrant):
    """First index in [lo, hi) whose quadrant bits at ``shift`` exceed ``quadrant``."""
    while lo < hi:
        mid = (lo + hi) // 2
        if (codes[mid] >> shift) & 3 > quadrant:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(**JIT)
def _grow(a, size):
    """``a`` copied into the start of a new array of ``size`` elements."""
    out = np.empty(size, dtype=a.dtype)
    # A loop, not out[:a.size] = a: the slice assignment compiles Numba's shape
    # check with its error message, string formatting included (about 2 s of a
    # first fit's compilation for four lines).
    for i in range(a.size):
        out[i] = a[i]
    return out


@njit(**JIT)
def build_tree(codes, leaf_size):
    """Cells of the quadtree over points sorted by Morton code.

    Returns
    -------
    start, end : ndarray
        Each cell's range in the sorted points.
    level : ndarray
        Its depth (the root is 0).
    first_child, n_children : ndarray
        Its children are cells first_child .. first_child + n_children - 1;
        leaves have n_children = 0.
    """
    n = codes.size
    cap = 64
    start = np.empty(cap, dtype=np.int64)
    end = np.empty(cap, dtype=np.int64)
    level = np.empty(cap, dtype=np.int64)
    first_child = np.empty(cap, dtype=np.int64)
    n_children = np.empty(cap, dtype=np.int64)
    start[0] = 0
    end[0] = n
    level[0] = 0
    count = 1
    cell = 0
    while cell < count:  # breadth first: children are appended at the end
        s = start[cell]
        e = end[cell]
        lv = level[cell]
        first_child[cell] = count
        n_children[cell] = 0
        if e - s > leaf_size and lv < LEVELS:
            if count + 4 > cap:
                cap *= 2
                start = _grow(start, cap)
                end = _grow(end, cap)
                level = _grow(level, cap)
                first_child = _grow(first_child, cap)
                n_children = _grow(n_children, cap)
            shift = 2 * (LEVELS - lv - 1)
            lo = s
            for quadrant in range(4):
                hi = _child_end(codes, lo, e, shift, quadrant)
                if hi > lo:
                    start[count] = lo
                    end[count] = hi
                    level[count] = lv + 1
                    count += 1
                lo = hi
            n_children[cell] = count - first_child[cell]
        cell += 1
    return (start[:count].copy(), end[:count].copy(), level[:count].copy(),
            first_child[:count].copy(), n_children[:count].copy())


@njit(**JIT)
def _cell_moments(xs, ys, start, end, level, root_side):
    """Mass, centre of mass, covariance and squared side of every cell.

    From prefix sums of the sorted coordinates, taken relative to the first
    point so that the covariances do not cancel catastrophically.
    """
    n = xs.size
    n_cells = start.size
    x_ref = xs[0]
    y_ref = ys[0]
    sums = np.zeros((5, n + 1))
    for u in range(n):
        ex = xs[u] - x_ref
        ey = ys[u] - y_ref
        sums[0, u + 1] = sums[0, u] + ex
        sums[1, u + 1] = sums[1, u] + ey
        sums[2, u + 1] = sums[2, u] + ex * ex
        sums[3, u + 1] = sums[3, u] + ey * ey
        sums[4, u + 1] = sums[4, u] + ex * ey
    # One row (a 64-byte cache line) per cell: mass, cx, cy, cxx, cyy, cxy, side^2.
    moments = np.zeros((n_cells, 8))
    for c in range(n_cells):
        s = start[c]
        e = end[c]
        m = e - s
        mx = (sums[0, e] - sums[0, s]) / m
        my = (sums[1, e] - sums[1, s]) / m
        moments[c, 0] = m
        moments[c, 1] = x_ref + mx
        moments[c, 2] = y_ref + my
        moments[c, 3] = max((sums[2, e] - sums[2, s]) / m - mx * mx, 0.0)
        moments[c, 4] = max((sums[3, e] - sums[3, s]) / m - my * my, 0.0)
        moments[c, 5] = (sums[4, e] - sums[4, s]) / m - mx * my
        side = root_side / 2.0 ** level[c]
        moments[c, 6] = side * side
    return moments


def _walk_loop(kern):
    """The walk of :func:`_walk_form` for one kernel function kern(tau, alpha, table)."""

    def walk(t, xs, ys, links, moments, theta2, alpha, table, form, with_forces, stack):
        """Z_t and the force on sorted point t; returns (z, f0, f1).

        ``links`` rows: start, end, first child, number of children of a cell;
        ``moments`` rows: see ``_cell_moments``.
        """
        xt = xs[t]
        yt = ys[t]
        z = 0.0
        f0 = 0.0
        f1 = 0.0
        a1 = 1.0 + alpha
        a2 = 2.0 * a1 * (1.0 + 2.0 * alpha)
        stack[0] = 0
        top = 1
        while top > 0:
            top -= 1
            c = stack[top]
            dx = xt - moments[c, 1]
            dy = yt - moments[c, 2]
            tau = dx * dx + dy * dy
            lo = links[c, 0]
            hi = links[c, 1]
            inside = lo <= t < hi
            if not inside and moments[c, 6] < theta2 * tau:
                h, s = kern(tau, alpha, table)
                m = moments[c, 0]
                cxx = moments[c, 3]
                cyy = moments[c, 4]
                cxy = moments[c, 5]
                trace = cxx + cyy
                cdx = cxx * dx + cxy * dy
                cdy = cxy * dx + cyy * dy
                q = dx * cdx + dy * cdy
                z += m * h * (1.0 - s * trace + 2.0 * a1 * s * s * q)
                if with_forces:
                    k = m * h * s
                    radial = k * (1.0 - a1 * s * trace + a2 * s * s * q)
                    across = 2.0 * a1 * k * s
                    f0 += radial * dx - across * cdx
                    f1 += radial * dy - across * cdy
            elif links[c, 3] == 0:
                for u in range(lo, hi):
                    if u == t:
                        continue
                    ex = xt - xs[u]
                    ey = yt - ys[u]
                    h, s = kern(ex * ex + ey * ey, alpha, table)
                    z += h
                    if with_forces:
                        hs = h * s
                        f0 += hs * ex
                        f1 += hs * ey
            else:
                first = links[c, 2]
                for child in range(first, first + links[c, 3]):
                    stack[top] = child
                    top += 1
        return z, f0, f1

    return named_variant(walk, kern.__name__)


def _untabulated(kern):
    """A kernel of :mod:`.hssne` with the (unused) table argument of the walk."""

    def untabulated(tau, alpha, table):
        return kern(tau, alpha)

    return njit(**JIT)(named_variant(untabulated, kern.__name__))


#: The kernel function for each ``form`` of the walk (see :func:`_form`).
_WALK_FORMS = (_untabulated(student_kernel), _untabulated(half_kernel),
               _untabulated(two_kernel), _untabulated(gaussian_kernel),
               _untabulated(power_kernel), tabulated_power_kernel)
_JIT_LOOP = dict(fastmath=JIT["fastmath"], error_model=JIT["error_model"])


def _walk_form(t, xs, ys, links, moments, theta2, alpha, table, form, with_forces, stack):
    """The walk for ``_WALK_FORMS[form]``; compiled code only (see below)."""
    raise NotImplementedError


# As in ``hssne``: the walk is compiled once per kernel function, each with its
# kernel inlined, so that neither the kernel's branches on alpha nor its
# registers burden the walk of another (comparing alpha inside one shared walk
# made the walk at alpha = 1 half again as slow).
@overload(_walk_form, prefer_literal=True, jit_options=_JIT_LOOP)
def _walk_form_overload(t, xs, ys, links, moments, theta2, alpha, table, form, with_forces,
                        stack):
    if isinstance(form, types.IntegerLiteral):
        return _walk_loop(_WALK_FORMS[form.literal_value])
    return None


@njit(**JIT)
def _form(alpha):
    """Index into ``_WALK_FORMS`` of the kernel function for ``alpha``."""
    if alpha == 1.0:
        return 0
    if alpha == 0.5:
        return 1
    if alpha == 2.0:
        return 2
    if alpha == 0.0:
        return 3
    if alpha < TABULATED_MIN_ALPHA:
        return 4
    return 5


def _walk_all_for(form):
    """The walk of every point, compiled for ``_WALK_FORMS[form]`` alone.

    One kernel per form, chosen in Python (:func:`barnes_hut_repulsion`), so
    that a run compiles the walk of the kernel it uses and no other: the six
    walks compiled together took 17 s in a first run.
    """

    def walk_all(xs, ys, order, start, end, level, first_child, n_children, root_side, theta,
                 alpha, with_forces, repulsion):
        n = xs.size
        moments = _cell_moments(xs, ys, start, end, level, root_side)
        links = np.empty((start.size, 4), dtype=np.int64)
        links[:, 0] = start
        links[:, 1] = end
        links[:, 2] = first_child
        links[:, 3] = n_children
        theta2 = theta * theta
        # Only the tabulated form reads the table.
        table = power_table(alpha) if form == 5 else np.empty(0)
        z_rows = np.zeros(n)
        n_blocks = (n + _BLOCK - 1) // _BLOCK
        for b in prange(n_blocks):
            stack = np.empty(_STACK, dtype=np.int64)
            for t in range(b * _BLOCK, min(n, (b + 1) * _BLOCK)):
                z, f0, f1 = _walk_form(t, xs, ys, links, moments, theta2, alpha, table, form,
                                       with_forces, stack)
                z_rows[t] = z
                if with_forces:
                    i = order[t]
                    repulsion[i, 0] = f0
                    repulsion[i, 1] = f1
        return z_rows

    return njit(**JIT_PARALLEL)(named_variant(walk_all, _WALK_FORMS[form].__name__))


#: The walk of every point for each form of ``_WALK_FORMS``.
_WALK_ALL = tuple(_walk_all_for(form) for form in range(len(_WALK_FORMS)))


@njit(**JIT)
def morton_codes(Yt):
    """Z-order codes (n,) of a two-dimensional embedding on the tree's finest grid,
    and the side of its bounding square."""
    x0, y0, side = bounding_square(Yt)
    q = grid_coordinates(Yt, x0, y0, side)
    n = Yt.shape[1]
    codes = np.empty(n, dtype=np.int64)
    for i in range(n):
        codes[i] = _spread_bits(q[0, i]) | (_spread_bits(q[1, i]) << 1)
    return codes, side


@njit(**JIT)
def _sort_points(Yt):
    codes, side = morton_codes(Yt)
    order = np.argsort(codes)
    return order, codes[order], Yt[0][order], Yt[1][order], side


def barnes_hut_repulsion(Yt, alpha, theta, repulsion=None):
    """Approximate Z and repulsive forces for a two-dimensional embedding.

    Parameters
    ----------
    Yt : ndarray (2, n), float64
        Embedding, transposed.
    alpha : float
    theta : float
        Opening angle, >= 0; 0 gives the exact sums.
    repulsion : ndarray (n, 2), optional
        Overwritten with sum_j H_ij S_ij (y_i - y_j). Without it only Z is
        computed (cheaper).

    Returns
    -------
    z : float
        Z = sum_{i != j} H_ij.
    """
    if Yt.shape[0] != 2:
        raise ValueError(f"Barnes-Hut repulsion needs a two-dimensional embedding; got "
                         f"{Yt.shape[0]} dimensions.")
    Yt = np.ascontiguousarray(Yt, dtype=np.float64)
    order, codes, xs, ys, side = _sort_points(Yt)
    start, end, level, first_child, n_children = build_tree(codes, LEAF_SIZE)
    with_forces = repulsion is not None
    out = repulsion if with_forces else np.empty((0, 2))
    walk_all = _WALK_ALL[_form(float(alpha))]
    z_rows = walk_all(xs, ys, order, start, end, level, first_child, n_children, side,
                      float(theta), float(alpha), with_forces, out)
    # Summed outside the parallel kernel, whose reductions depend on the thread count.
    return float(np.sum(z_rows))
