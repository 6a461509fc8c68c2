"""Products of data rows whose result for a row depends on that row alone.

A matrix product's blocking, and with it its rounding, changes with the number
of rows and of threads: one row multiplied in two batches can differ in its
last bits. The transforms that are products (a linear projection, a kernel
against the training points) use these instead, summing over the features in
a fixed order, so that placing rows chunk by chunk (:mod:`nbembed.dask`) gives
each row the same result in any chunk, on any worker and thread count.
"""

from __future__ import annotations

import numpy as np

from . import _config
from ._kernels.rows import cross_squared_distances, project_rows


def project(X, components, shift=None):
    """(X - shift) @ components.T, row by row.

    Parameters
    ----------
    X : ndarray (m, D), dense
    components : ndarray (r, D)
    shift : ndarray (D,), optional
        Subtracted from every row first; zero by default.

    Returns
    -------
    ndarray (m, r), float64
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    components_t = np.ascontiguousarray(np.asarray(components, dtype=np.float64).T)
    shift = (np.zeros(X.shape[1]) if shift is None
             else np.ascontiguousarray(shift, dtype=np.float64))
    out = np.empty((X.shape[0], components_t.shape[1]))
    with _config.KERNEL_LOCK:
        project_rows(X, shift, components_t, out)
    return out


def squared_distances(X, R):
    """||x_i - r_j||^2 for rows of dense ``X`` (m, D) and ``R`` (n, D), row by row.

    Returns
    -------
    ndarray (m, n), float64
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    reference_t = np.ascontiguousarray(np.asarray(R, dtype=np.float64).T)
    out = np.empty((X.shape[0], reference_t.shape[1]))
    with _config.KERNEL_LOCK:
        cross_squared_distances(X, reference_t, out)
    return out
