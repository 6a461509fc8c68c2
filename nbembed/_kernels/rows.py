"""Row-at-a-time helpers for the exact O(n^2) kernels.

A kernel that needs all pairs (i, j) of one row writes that row's squared
distances into a buffer first: one loop over the dimensions, each a
contiguous loop over j, so it vectorizes for any number of dimensions.
"""

from numba import njit

from .._config import JIT


@njit(**JIT)
def row_squared_distances(Yt, i, buf, self_value):
    """buf[j] = ||y_i - y_j||^2 for every j, and buf[i] = self_value.

    ``Yt`` is the transposed embedding (d, n). ``self_value`` stands in for
    the pair (i, i): a huge finite number makes exp(-buf[i]) vanish without a
    branch inside the callers' loops over j (a branch there stops
    vectorization).
    """
    d, n = Yt.shape
    for j in range(n):
        buf[j] = 0.0
    for k in range(d):
        yk = Yt[k]
        a = yk[i]
        for j in range(n):
            diff = a - yk[j]
            buf[j] += diff * diff
    buf[i] = self_value
