"""Kernel sums on a grid: FFT-accelerated interpolation of the HSSNE repulsion.

The repulsion of a two-dimensional embedding needs

    Z = sum_i sum_{j != i} H_ij               (kernel H, charge 1),
    sum_j K_ij,  sum_j K_ij y_j               (kernel K = H S = H^(1 + alpha),
                                              charges 1, y_j1, y_j2),

from which force_i = y_i sum_j K_ij - sum_j K_ij y_j. These sums of smooth
translation-invariant kernels are computed as in FIt-SNE (Linderman et al.,
2019): the bounding square is cut into B x B boxes of side h, each with
p x p equispaced interpolation nodes, which together form a uniform grid of
M = B p nodes per dimension with spacing h / p.

1. Each charge is spread onto the nodes of its point's box with the Lagrange
   weights of the p nodes in each dimension.
2. The node potentials phi_n = sum_m K(node_n - node_m) charge_m are a
   discrete convolution on the uniform grid, done with FFTs of size 2M x 2M.
3. Each point reads its value back from the nodes of its box, with the same
   weights.

Both passes cost O(n p^2) and the FFTs O(M^2 log M) per kernel sum. A total
such as Z needs no potentials at all: by Parseval's theorem it is a weighted
sum of the charge grid's power spectrum (:func:`_energy`). The
interpolation error falls with the box side h (relative to the kernel's width
of about one unit) and the number of nodes p. The self term (j = i) is on
the grid too; what the grid makes of it is computed exactly for every point
and subtracted (:func:`self_terms`).

The same sums with other charges serve other objectives: :class:`Grid`
takes any charges and either kernel.
"""

import math

import numpy as np
import scipy.fft
from numba import get_num_threads, njit, prange

from .._config import JIT, JIT_PARALLEL
from .hssne import kernel_by_alpha
from .reduction import ordered_sum

#: Upper limit on grid nodes per dimension (M = B p): an embedding wider than
#: this many node spacings gets wider boxes (less accurate) instead of a larger
#: grid. The FFT arrays then take about 1 GiB.
MAX_GRID_NODES = 2400


def grid_layout(Yt, n_nodes, box_size, min_boxes, shift=(0.0, 0.0), max_boxes=None):
    """Where the grid lies: (lower corners (2,), box side h, boxes per dimension B).

    The boxes have side h = ``box_size`` once the embedding spans more than
    ``min_boxes`` of them (then the kernel on the grid changes only when B
    does, and its spectrum can be reused); smaller embeddings get
    ``min_boxes`` smaller boxes. The grid starts ``shift`` (fractions of h in
    [0, 1)) below the smallest coordinates; B covers the points with one box
    to spare, at most ``max_boxes`` (default ``MAX_GRID_NODES // n_nodes``,
    beyond which the boxes grow), and is raised until 2 B p has only the
    prime factors 2, 3 and 5 (fast FFT sizes).
    """
    if max_boxes is None:
        max_boxes = MAX_GRID_NODES // n_nodes
    low = Yt.min(axis=1)
    # A little wider than the points, so that the largest falls inside the last box.
    extent = max(float((Yt.max(axis=1) - low).max()), 1e-12) * (1.0 + 1e-9)
    n_boxes = math.ceil(extent / box_size) + 1
    if n_boxes < min_boxes:
        n_boxes = int(min_boxes)
        h = extent / (n_boxes - 1)
    elif n_boxes > max_boxes:
        n_boxes = int(max_boxes)
        h = extent / (n_boxes - 1)
    else:
        h = float(box_size)
    while scipy.fft.next_fast_len(2 * n_boxes * n_nodes, real=True) != 2 * n_boxes * n_nodes:
        n_boxes += 1
    return low - np.asarray(shift, dtype=np.float64) * h, h, n_boxes


def grid_shift(iteration):
    """Fractions of a box (2,) by which to shift the grid at ``iteration``.

    Interpolation errors depend on where points sit in their boxes; with a
    fixed grid they act as a systematic force that an optimized embedding
    exploits (on digits the final exact KL was 6-9% above the exact run's).
    Moving the grid every iteration along a low-discrepancy (R2) sequence
    turns them into noise that averages out.
    """
    g = 1.324717957244746  # the plastic number: R2 uses 1/g and 1/g^2
    return np.array([(0.5 + iteration / g) % 1.0, (0.5 + iteration / g ** 2) % 1.0])


@njit(**JIT)
def _node_denominators(p):
    """prod_{l != k} (x_k - x_l) for the nodes x_k = (k + 1/2) / p of a unit box."""
    den = np.ones(p)
    for k in range(p):
        for m in range(p):
            if m != k:
                den[k] *= (k - m) / p
    return den


@njit(**JIT_PARALLEL)
def interpolation_weights(Yt, lo, h, n_boxes, p):
    """Box index and Lagrange weights of every point in each dimension.

    Returns
    -------
    box : ndarray (d, n) of int64
    weights : ndarray (d, n, p)
        ``weights[k, i, a]`` is the weight of node a of point i's box along
        dimension k.
    """
    d, n = Yt.shape
    den = _node_denominators(p)
    box = np.empty((d, n), dtype=np.int64)
    weights = np.empty((d, n, p))
    for i in prange(n):
        for k in range(d):
            u = (Yt[k, i] - lo[k]) / h
            b = min(max(np.int64(u), 0), n_boxes - 1)
            box[k, i] = b
            u -= b  # position inside the box, in [0, 1]
            for a in range(p):
                w = 1.0 / den[a]
                for m in range(p):
                    if m != a:
                        w *= u - (m + 0.5) / p
                weights[k, i, a] = w
    return box, weights


@njit(**JIT)
def _group_by_column(box0, n_boxes):
    """Point indices grouped by their box along the first dimension (counting sort)."""
    n = box0.size
    counts = np.zeros(n_boxes + 1, dtype=np.int64)
    for i in range(n):
        counts[box0[i] + 1] += 1
    for b in range(n_boxes):
        counts[b + 1] += counts[b]
    fill = counts[:-1].copy()
    members = np.empty(n, dtype=np.int64)
    for i in range(n):
        b = box0[i]
        members[fill[b]] = i
        fill[b] += 1
    return members, counts


@njit(**JIT_PARALLEL)
def spread(box, weights, charges, n_boxes, grid):
    """Add the charges (c, n) onto the nodes: ``grid`` (c, M, M).

    Points of different columns of boxes write to different rows of nodes, so
    the columns run in parallel and the sums are in a fixed order.
    """
    n_charges = charges.shape[0]
    p = weights.shape[2]
    members, offsets = _group_by_column(box[0], n_boxes)
    for b in prange(n_boxes):
        for idx in range(offsets[b], offsets[b + 1]):
            i = members[idx]
            r0 = box[0, i] * p
            c0 = box[1, i] * p
            for a in range(p):
                wa = weights[0, i, a]
                for e in range(p):
                    w = wa * weights[1, i, e]
                    for c in range(n_charges):
                        grid[c, r0 + a, c0 + e] += w * charges[c, i]


@njit(**JIT_PARALLEL)
def gather(box, weights, potentials, values):
    """Interpolate node potentials (c, M, M) back to the points: ``values`` (c, n)."""
    n = box.shape[1]
    p = weights.shape[2]
    n_values = potentials.shape[0]
    for i in prange(n):
        r0 = box[0, i] * p
        c0 = box[1, i] * p
        for c in range(n_values):
            acc = 0.0
            for a in range(p):
                row = 0.0
                for e in range(p):
                    row += weights[1, i, e] * potentials[c, r0 + a, c0 + e]
                acc += weights[0, i, a] * row
            values[c, i] = acc


@njit(**JIT_PARALLEL)
def kernel_grids(n_nodes_1d, spacing, alpha, with_forces):
    """H and H S between grid nodes, laid out circulantly for an FFT convolution.

    Entry [a, b] holds the kernel at the node offset (a', b') * spacing with
    a' = a for a < M and a - 2M for a > M (row and column M are zero).

    Returns
    -------
    ndarray (1 or 2, 2M, 2M)
        H, and H S when ``with_forces``.
    """
    M = n_nodes_1d
    n_kernels = 2 if with_forces else 1
    out = np.zeros((n_kernels, 2 * M, 2 * M))
    for a in prange(M):
        for b in range(M):
            tau = (a * spacing) ** 2 + (b * spacing) ** 2
            h, s = kernel_by_alpha(tau, alpha)
            for k in range(n_kernels):
                v = h if k == 0 else h * s
                out[k, a, b] = v
                if a > 0:
                    out[k, 2 * M - a, b] = v
                if b > 0:
                    out[k, a, 2 * M - b] = v
                if a > 0 and b > 0:
                    out[k, 2 * M - a, 2 * M - b] = v
    return out


@njit(**JIT_PARALLEL)
def self_terms(weights, local_kernels):
    """What the grid adds for every point's pair with itself, per kernel: (k, n).

    A point's charge goes onto the p x p nodes of its box and is read back from
    the same nodes, so its own contribution is sum_{ab, a'b'} w_a w_b
    K(node_ab - node_a'b') w_a' w_b', not K(0). Subtracting exactly this removes
    the self term without the interpolation error of K(0), which matters for
    sums much smaller than K(0) (points far from all others).
    ``local_kernels[k, da, db]`` is kernel k at the node offset (da, db).

    The kernel depends on the offsets |a - a'| and |b - b'| only, so the weights
    are first summed per offset in each dimension: u[da] = sum_{|a - a'| = da}
    w_a w_a', and the term is sum_{da, db} u[da] v[db] K(da, db).
    """
    n = weights.shape[1]
    p = weights.shape[2]
    n_kernels = local_kernels.shape[0]
    out = np.empty((n_kernels, n))
    for i in prange(n):
        u = np.zeros(p)
        v = np.zeros(p)
        for a in range(p):
            for a2 in range(p):
                u[abs(a - a2)] += weights[0, i, a] * weights[0, i, a2]
                v[abs(a - a2)] += weights[1, i, a] * weights[1, i, a2]
        for k in range(n_kernels):
            acc = 0.0
            for da in range(p):
                row = 0.0
                for db in range(p):
                    row += v[db] * local_kernels[k, da, db]
                acc += u[da] * row
            out[k, i] = acc
    return out


def _kernel_spectra(M, spacing, alpha, dtype, workers, cache, n_nodes=1):
    """The corners (2, n_nodes, n_nodes) of the circulant grids of H and H S
    (float64: the kernel between nodes up to a box apart) and the grids' FFTs
    (in ``dtype``), reused from ``cache`` when the grid, the kernel and the
    precision are unchanged. Only the corners are kept of the grids themselves:
    as the embedding spreads the grids grow (2 x 2M x 2M values)."""
    key = (M, spacing, float(alpha), np.dtype(dtype).name, n_nodes)
    if cache is not None and cache.get("key") == key:
        return cache["corners"], cache["spectra"]
    if cache is not None:
        cache.clear()  # the old spectra go before the new ones are made
    grids = kernel_grids(M, spacing, float(alpha), True)
    corners = np.ascontiguousarray(grids[:, :n_nodes, :n_nodes])
    spectra = scipy.fft.rfft2(grids.astype(dtype), workers=workers)
    del grids
    if cache is not None:
        cache.update(key=key, corners=corners, spectra=spectra)
    return corners, spectra


def _charge_spectra(grid, workers):
    """The 2M x 2M real FFT of each zero-padded charge grid (c, M, M).

    Only M of the 2M padded rows hold charges, so the first stage transforms M
    rows only.
    """
    M = grid.shape[-1]
    rows = scipy.fft.rfft(grid, n=2 * M, axis=-1, workers=workers)
    return scipy.fft.fft(rows, n=2 * M, axis=-2, workers=workers, overwrite_x=True)


def _convolve(spectra, kernel_spectra, pairs, workers):
    """Node potentials (len(pairs), M, M): for each (charge, kernel) in ``pairs``,
    the charge grid convolved with the kernel, from the spectra of both.

    Only M rows of the result are needed, so the last stage transforms M rows only.
    """
    M = spectra.shape[-2] // 2
    charge, kernel = (np.array(side, dtype=np.int64) for side in zip(*pairs))
    products = _spectra_products(spectra, kernel_spectra, charge, kernel)
    columns = scipy.fft.ifft(products, axis=-2, workers=workers, overwrite_x=True)[:, :M]
    return scipy.fft.irfft(columns, n=2 * M, axis=-1, workers=workers)[:, :, :M]


@njit(**JIT_PARALLEL)
def _spectra_products(spectra, kernel_spectra, charge, kernel):
    """products[r] = spectra[charge[r]] * kernel_spectra[kernel[r]], row by row
    on every core (NumPy's products and their stacking ran on one, about a
    fifth of the repulsion's time at 2 10^5 points)."""
    n_rows, n_columns = spectra.shape[1], spectra.shape[2]
    products = np.empty((charge.size, n_rows, n_columns), dtype=spectra.dtype)
    for i in prange(n_rows):
        for r in range(charge.size):
            q = spectra[charge[r], i]
            k = kernel_spectra[kernel[r], i]
            out = products[r, i]
            for j in range(n_columns):
                out[j] = q[j] * k[j]
    return products


@njit(**JIT_PARALLEL)
def _energy_rows(spectrum, kernel_spectrum):
    """Per row of the real FFT's spectrum: sum_j w_j |q_j|^2 Re k_j in float64,
    w_j = 1 for the first and last column and 2 for the others."""
    n_rows, n_columns = spectrum.shape
    rows = np.empty(n_rows)
    for i in prange(n_rows):
        acc = 0.0
        for j in range(n_columns):
            weight = 1.0 if j == 0 or j == n_columns - 1 else 2.0
            q = spectrum[i, j]
            re = np.float64(q.real)
            im = np.float64(q.imag)
            acc += weight * (re * re + im * im) * np.float64(kernel_spectrum[i, j].real)
        rows[i] = acc
    return rows


def _energy(spectrum, kernel_spectrum):
    """sum_n q_n (K * q)_n of one charge grid q, by Parseval's theorem from the
    spectra (no inverse transform).

    The kernel's spectrum is real (the kernel is even). The real FFT holds the
    columns 1 .. M - 1 of the full spectrum twice (as conjugates), columns 0
    and M once. The rows are summed in parallel and added in a fixed order, so
    the result does not depend on the number of threads.
    """
    n_rows, n_columns = spectrum.shape
    total = ordered_sum(_energy_rows(spectrum, kernel_spectrum))
    return float(total) / (n_rows * 2 * (n_columns - 1))


#: Kernels of :class:`Grid`: H and K = H S of the power family.
KERNEL_H, KERNEL_HS = 0, 1


class Grid:
    """The grid of one embedding: layout, interpolation weights, kernel spectra and
    self terms, computed once and shared by every set of sums on that embedding.

    Parameters
    ----------
    Yt : ndarray (2, n), float64
        Embedding, transposed.
    alpha : float
        Tail of the power family; H(tau) = exp(-tau) at 0.
    n_nodes, box_size, min_boxes, shift, workers, cache
        As in :func:`interpolation_repulsion`.
    dtype : numpy dtype, default float64
        Precision of the charge grids and the FFTs. float32 transforms take a
        quarter to a half of the time; their rounding error is relative to the
        largest node potential, so sums far below it (isolated points, a
        Gaussian kernel's far tail) lose their digits first.
    """

    def __init__(self, Yt, alpha, *, n_nodes=3, box_size=1.0, min_boxes=50,
                 shift=(0.0, 0.0), workers=None, cache=None, dtype=np.float64):
        if Yt.shape[0] != 2:
            raise ValueError(f"FFT-accelerated interpolation needs a two-dimensional "
                             f"embedding; got {Yt.shape[0]} dimensions.")
        Yt = np.ascontiguousarray(Yt, dtype=np.float64)
        self.n = Yt.shape[1]
        self.dtype = np.dtype(dtype)
        self.workers = get_num_threads() if workers is None else workers
        lo, h, self.n_boxes = grid_layout(Yt, n_nodes, box_size, min_boxes, shift)
        self.M = self.n_boxes * n_nodes
        #: The middle of the grid: charges measured from here keep the sums small.
        self.center = lo + 0.5 * self.n_boxes * h
        self.box, self.weights = interpolation_weights(Yt, lo, h, self.n_boxes, n_nodes)
        corners, self.spectra = _kernel_spectra(self.M, h / n_nodes, alpha, self.dtype,
                                                self.workers, cache, n_nodes)
        self.own = self_terms(self.weights, corners)

    def sums(self, charges, pairs, total=None):
        """Kernel sums over all other points.

        Parameters
        ----------
        charges : ndarray (c, n)
            Values carried by the points.
        pairs : sequence of (charge, kernel)
            Which sums to form: charge row and kernel (``KERNEL_H`` or ``KERNEL_HS``).
        total : (charge, kernel), optional
            Also return sum_i sum_{j != i} kernel(y_i, y_j) c_i c_j for this
            charge row c, from the spectra alone (cheaper than a sum in
            ``pairs``).

        Returns
        -------
        values : ndarray (len(pairs), n)
            Row r: sum_{j != i} kernel_r(y_i, y_j) charges[charge_r, j].
        total : float
            Only when ``total`` is given.
        """
        charges = np.ascontiguousarray(charges, dtype=np.float64)
        grid = np.zeros((charges.shape[0], self.M, self.M), dtype=self.dtype)
        spread(self.box, self.weights, charges, self.n_boxes, grid)
        spectra = _charge_spectra(grid, self.workers)
        del grid
        values = np.empty((len(pairs), self.n))
        if pairs:
            potentials = _convolve(spectra, self.spectra, pairs, self.workers)
            gather(self.box, self.weights, np.ascontiguousarray(potentials), values)
            for row, (c, k) in enumerate(pairs):
                values[row] -= charges[c] * self.own[k]
        if total is None:
            return values
        c, k = total
        energy = _energy(spectra[c], self.spectra[k])
        # Summed outside the parallel kernels, whose reductions depend on the thread count.
        return values, energy - float(np.sum(charges[c] ** 2 * self.own[k]))


def interpolation_repulsion(Yt, alpha, n_nodes=3, box_size=1.0, min_boxes=50,
                            repulsion=None, shift=(0.0, 0.0), workers=None, cache=None,
                            dtype=np.float32):
    """Approximate Z and repulsive forces of a two-dimensional embedding on a grid.

    Parameters
    ----------
    Yt : ndarray (2, n), float64
        Embedding, transposed.
    alpha : float
    n_nodes : int
        Interpolation nodes per box and dimension (p).
    box_size : float
        Largest box side h; the accuracy is set by the node spacing h / p.
    min_boxes : int
        Fewest boxes per dimension (accuracy for small embeddings).
    repulsion : ndarray (n, 2), optional
        Overwritten with sum_j H_ij S_ij (y_i - y_j). Without it only Z is
        computed (one charge, one kernel).
    shift : sequence of 2 floats
        Offset of the grid, in boxes, in [0, 1) (see :func:`grid_shift`).
    workers : int, optional
        Threads for the FFTs; default Numba's thread count.
    cache : dict, optional
        Keeps the kernel grids and spectra between calls (a run passes its own
        dict).
    dtype : numpy dtype, default float32
        Precision of the FFTs (see :class:`Grid`). At the default node spacing
        single precision adds far less error than the interpolation itself.

    Returns
    -------
    z : float
        Z = sum_{i != j} H_ij.
    """
    Yt = np.ascontiguousarray(Yt, dtype=np.float64)
    grid = Grid(Yt, alpha, n_nodes=n_nodes, box_size=box_size, min_boxes=min_boxes,
                shift=shift, workers=workers, cache=cache, dtype=dtype)
    ones = np.ones((1, Yt.shape[1]))
    if repulsion is None:
        return grid.sums(ones, (), total=(0, KERNEL_H))[1]
    # Charges 1 and y - center: H on 1 gives Z, H S on all three the forces,
    # force_i = (y_i - c) sum_j K_ij - sum_j K_ij (y_j - c). Measuring from the
    # middle of the grid keeps the two terms small, so that their difference
    # keeps its digits.
    centered = Yt - grid.center[:, None]
    values, z = grid.sums(np.vstack([ones, centered]),
                          ((0, KERNEL_HS), (1, KERNEL_HS), (2, KERNEL_HS)),
                          total=(0, KERNEL_H))
    repulsion[:, 0] = centered[0] * values[0] - values[1]
    repulsion[:, 1] = centered[1] * values[0] - values[2]
    return z
