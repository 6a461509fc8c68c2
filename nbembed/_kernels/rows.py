"""Row-at-a-time helpers for the exact O(n^2) kernels.

A kernel that needs all pairs (i, j) of one row writes that row's squared
distances into a buffer first: one loop over the dimensions, each a
contiguous loop over j, so it vectorizes for any number of dimensions.
"""

from numba import njit, prange

from .._config import JIT, JIT_PARALLEL


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


@njit(**JIT_PARALLEL)
def cross_squared_distances(X, Rt, out):
    """out[i, j] = ||x_i - r_j||^2 for rows x_i of ``X`` (m, D) and columns r_j of ``Rt`` (D, n).

    Every entry is summed over the dimensions in the same order, so a row does
    not depend on the other rows (a matrix product's blocking, and with it its
    rounding, changes with m).
    """
    for i in prange(X.shape[0]):
        row = out[i]
        row[:] = 0.0
        for f in range(Rt.shape[0]):
            add_squared_differences(X[i, f], Rt[f], row)


@njit(**JIT)
def add_squared_differences(a, values, out):
    """out[j] += (a - values[j])^2 for every j: one dimension of a row of squared
    distances, vectorized over j."""
    for j in range(values.shape[0]):
        diff = a - values[j]
        out[j] += diff * diff


@njit(**JIT_PARALLEL)
def project_rows(X, shift, Ct, out):
    """out[i] = (x_i - shift) @ Ct for rows x_i of ``X`` (m, D), ``shift`` (D,), ``Ct`` (D, r).

    Each output row is summed over the D inputs in order, so it depends on its
    own row alone (a matrix product's blocking, and with it its rounding,
    changes with m and the number of threads).
    """
    for i in prange(X.shape[0]):
        row = out[i]
        row[:] = 0.0
        for f in range(Ct.shape[0]):
            add_scaled(X[i, f] - shift[f], Ct[f], row)


@njit(**JIT)
def add_scaled(a, values, out):
    """out[j] += a * values[j] for every j, vectorized over j."""
    for j in range(values.shape[0]):
        out[j] += a * values[j]
