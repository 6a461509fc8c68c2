"""Each row's strongest entries: the k columns of a square affinity matrix (dense
or CSR) with the largest values, for the neighbours a must-link group takes in
(:func:`nbembed.affinity.constraints.strongest_neighbors`)."""

import numpy as np
from numba import njit, prange

from .._config import JIT, JIT_PARALLEL
from .variants import serial_twin


@njit(**JIT)
def _clear(columns, values, i):
    for c in range(columns.shape[1]):
        columns[i, c] = -1
        values[i, c] = 0.0


@njit(**JIT)
def _offer(columns, values, i, j, v):
    """Put column ``j`` of value ``v`` into row i's running top list (``columns[i]``,
    ``values[i]``), kept largest first with ties to the smaller column, if it
    belongs there: off the diagonal, positive, and above the list's last."""
    last = columns.shape[1] - 1
    if j == i or not v > 0.0 or (columns[i, last] >= 0 and (
            v < values[i, last] or (v == values[i, last] and j > columns[i, last]))):
        return
    pos = last
    while pos > 0 and (columns[i, pos - 1] < 0 or v > values[i, pos - 1]
                       or (v == values[i, pos - 1] and j < columns[i, pos - 1])):
        columns[i, pos] = columns[i, pos - 1]
        values[i, pos] = values[i, pos - 1]
        pos -= 1
    columns[i, pos] = j
    values[i, pos] = v


@njit(**JIT_PARALLEL)
def strongest_in_csr(indptr, indices, data, out, values):
    """``out[i]``: the columns of row i's largest positive entries off the
    diagonal, largest first, ties to the smaller column; -1 where the row has
    fewer than ``out.shape[1]``. ``values`` (same shape, float64) is work space."""
    for i in prange(indptr.shape[0] - 1):
        _clear(out, values, i)
        for t in range(indptr[i], indptr[i + 1]):
            _offer(out, values, i, indices[t], np.float64(data[t]))


@njit(**JIT_PARALLEL)
def strongest_in_dense(P, out, values):
    """:func:`strongest_in_csr` for a dense square matrix."""
    for i in prange(P.shape[0]):
        _clear(out, values, i)
        for j in range(P.shape[1]):
            _offer(out, values, i, j, np.float64(P[i, j]))


strongest_in_csr_serial = serial_twin(strongest_in_csr)
strongest_in_dense_serial = serial_twin(strongest_in_dense)
