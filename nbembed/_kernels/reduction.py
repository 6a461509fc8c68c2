"""Sums whose result does not depend on the number of threads.

Inside a kernel compiled with ``parallel=True``, Numba turns an array
reduction such as ``rows.sum()`` into a parallel reduction: each thread adds
its own share and the shares are combined at the end, so the rounding, and
with it the whole run, changes with ``NUMBA_NUM_THREADS``. Parallel kernels
therefore write one partial result per row and add the rows with
:func:`ordered_sum`, a serial kernel that Numba leaves alone.
"""

from numba import njit

from .._config import JIT


@njit(**JIT)
def ordered_sum(values):
    """Sum of a one-dimensional array in a fixed order (independent of threads)."""
    total = 0.0
    for v in values:
        total += v
    return total
