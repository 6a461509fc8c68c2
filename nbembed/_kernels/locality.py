"""Points in a spatial order, so that sums over neighbours read nearby memory.

The attraction and the cost of a large embedding visit, for every point, its
stored entries of P: about 150 other points chosen by the input neighbourhoods.
In the data's own order those points lie anywhere in memory, and at 10^6
points every visit is a cache miss. Once the embedding has formed, a point's
neighbours in P are also its neighbours on the display; numbering the points
along a space-filling curve of the embedding (:func:`morton_order`) then puts
them close in memory too. On 10^6 points with 157 entries a row the attraction
took 1.35 s in random order and 0.30 s with every row's entries within 5000
positions of its own.
"""

import numpy as np
from numba import njit, prange

from .._config import JIT, JIT_PARALLEL
from .._memory import new_arrays
from .barnes_hut import morton_codes
from .variants import serial_twin


def morton_order(Yt):
    """A permutation (n,) of the points along the Z-order curve of the embedding
    (the Barnes-Hut tree's order); a one-dimensional embedding is simply sorted.

    Points close on the display get close positions (mostly: the curve jumps
    at the edges of its quadrants).
    """
    if Yt.shape[0] == 1:
        return np.argsort(Yt[0], kind="stable")
    codes, _ = morton_codes(np.ascontiguousarray(Yt[:2], dtype=np.float64))
    return np.argsort(codes, kind="stable")


def take_columns(Yt, order):
    """Yt[:, order] as a new C-contiguous array, row by row.

    NumPy's fancy indexing along the second axis of a (2, 10^6) array is
    several times slower (60 ms against 10 ms here) than indexing each row.
    """
    out = np.empty(Yt.shape, dtype=Yt.dtype)
    for k in range(Yt.shape[0]):
        np.take(Yt[k], order, out=out[k])
    return out


def put_columns(out, order, values):
    """out[:, order] = values, row by row (see :func:`take_columns`)."""
    for k in range(out.shape[0]):
        out[k][order] = values[k]


def permute_csr(indptr, indices, data, order, rooms=None, parallel=True):
    """CSR arrays of P[order][:, order]: row k is the old row order[k], with its
    column indices renumbered the same way.

    Parameters
    ----------
    indptr, indices, data : ndarray
        P as CSR.
    order : ndarray of int
        A permutation of P's rows.
    rooms : tuple of three :class:`~nbembed._memory.Room`, optional
        Where to write the result's indptr, indices and data (a renewed order
        of the same P~ then reuses the memory of the last one).
    parallel : bool
        False runs the kernel's serial twin, for a thread beside a running
        fit's (see :func:`~nbembed._kernels.variants.serial_twin`).

    Returns
    -------
    indptr, indices : ndarray
        Same dtypes as given.
    data : ndarray of float32
        In single precision, what the gradient kernels read; cast while copied, so
        that no single-precision copy of the whole of ``data`` is made first.
    """
    nnz = int(indptr[-1])
    shapes = ((indptr.size, indptr.dtype), (nnz, indices.dtype), (nnz, np.float32))
    out = new_arrays(shapes, rooms)
    permute = _permute_csr_into if parallel else _permute_csr_into_serial
    permute(indptr, indices, data, order, *out)
    return tuple(out)


@njit(**JIT_PARALLEL)
def _permute_csr_into(indptr, indices, data, order, new_indptr, new_indices, new_data):
    """:func:`permute_csr` into the given arrays.

    The rows are read in their own order and written to their new places:
    reading in the new order (rows from anywhere in memory) took 0.70 s
    instead of 0.44 s on 10^6 rows of 151 entries.
    """
    inverse = np.empty(order.size, dtype=indices.dtype)
    _renumber(indptr, order, inverse, new_indptr)
    for i in prange(order.size):
        _copy_row(indptr, indices, data, inverse, new_indptr, new_indices, new_data, i)


@njit(**JIT)
def _renumber(indptr, order, inverse, new_indptr):
    """``inverse`` of the permutation ``order``, and ``new_indptr``, the rows'
    bounds in the new order. Serial (a few milliseconds at 10^6 rows), so that
    the serial twin of :func:`_permute_csr_into` stays serial."""
    n = order.size
    for k in range(n):
        inverse[order[k]] = k
    new_indptr[0] = 0
    for k in range(n):
        new_indptr[k + 1] = new_indptr[k] + indptr[order[k] + 1] - indptr[order[k]]


@njit(**JIT)
def _copy_row(indptr, indices, data, inverse, new_indptr, new_indices, new_data, i):
    """Old row i to its place in the new order, its columns renumbered."""
    src = indptr[i]
    dst = new_indptr[inverse[i]]
    for t in range(indptr[i + 1] - src):
        new_indices[dst + t] = inverse[indices[src + t]]
        new_data[dst + t] = data[src + t]


@njit(**JIT_PARALLEL)
def _copy_rows(indptr, indices, data, order, inverse, new_indptr, new_indices, new_data,
               first, last):
    """Rows first to last - 1 of the new order, from their old places."""
    for k in prange(first, last):
        _copy_row(indptr, indices, data, inverse, new_indptr, new_indices, new_data, order[k])


class PermutationInPieces:
    """:func:`permute_csr`, a piece of the rows at a time.

    For a live run, where copying all of P~ at once (about a second at 10^6
    points) would stall one iteration: each :meth:`advance` copies the next of
    ``pieces`` equal ranges of rows, into memory of its own, while the run
    reads the last copy. A piece is a range of the *new* order, read from
    anywhere: a range of old rows would write all over the new memory, and the
    system's first writes to its pages (all of them then in the first piece)
    took a second at 10^6 points.

    Parameters
    ----------
    indptr, indices, data : ndarray
        P as CSR; they must not change until :attr:`done`.
    order : ndarray of int
        A permutation of P's rows.
    pieces : int
        Calls of :meth:`advance` until done.

    Attributes
    ----------
    order : ndarray
        ``order``.
    indptr, indices, data : ndarray
        The result, as :func:`permute_csr` returns it, once :attr:`done`.
    """

    def __init__(self, indptr, indices, data, order, pieces):
        n = order.size
        nnz = int(indptr[-1])
        self.order = order
        self._source = (indptr, indices, data)
        self._inverse = np.empty(n, dtype=indices.dtype)
        self.indptr = np.empty(indptr.size, dtype=indptr.dtype)
        _renumber(indptr, order, self._inverse, self.indptr)
        self.indices = np.empty(nnz, dtype=indices.dtype)
        self.data = np.empty(nnz, dtype=np.float32)
        self._bounds = np.linspace(0, n, max(int(pieces), 1) + 1).astype(np.int64)
        self._done_pieces = 0

    @property
    def done(self):
        """bool: Whether every row has been copied."""
        return self._done_pieces == self._bounds.size - 1

    def advance(self):
        """Copy the next piece of rows; return :attr:`done`."""
        if not self.done:
            first, last = self._bounds[self._done_pieces], self._bounds[self._done_pieces + 1]
            _copy_rows(*self._source, self.order, self._inverse, self.indptr, self.indices,
                       self.data, first, last)
            self._done_pieces += 1
        return self.done


_permute_csr_into_serial = serial_twin(_permute_csr_into)
