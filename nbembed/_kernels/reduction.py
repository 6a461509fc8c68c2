"""Sums whose result does not depend on the number of threads.

Inside a kernel compiled with ``parallel=True``, Numba turns an array
reduction such as ``rows.sum()`` into a parallel reduction: each thread adds
its own share and the shares are combined at the end, so the rounding, and
with it the whole run, changes with ``NUMBA_NUM_THREADS``. Parallel kernels
therefore write one partial result per row and add the rows with
:func:`ordered_sum`, a serial kernel that Numba leaves alone.

A second rule keeps a sum independent of where its arrays lie in memory. LLVM
vectorizes a loop that stores into one array while reading another only after
a run-time check that the two are far enough apart (a few hundred bytes);
otherwise the loop runs one element at a time. With re-association allowed
(``fastmath``) the two versions add a sum's terms in different orders, so a
loop that both stores into an array and sums into a scalar can give a result 1
ulp off depending on the heap: on which thread allocated its scratch arrays,
what was freed before. Such a loop is written as two: one that stores, one
that sums and stores nothing (a loop without stores needs no check, so its
order depends only on its length). ``tests/test_sums_in_loops.py`` holds every
kernel to it.
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
