"""The KPCA trick: kernel PCA coordinates as input for a linear learner.

Kernel PCA on the n training points gives every point finite coordinates
(one per component with a non-zero eigenvalue, at most n) whose inner products
are the centred kernel values. A linear learner run on those coordinates is the
kernelized learner, without any kernel formulas; new points are mapped with the
same kernel PCA.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from .._validation import check_dense_allowed, check_option

KERNELS = ("rbf", "poly", "linear")

#: Kernel PCA components with an eigenvalue below this fraction of the largest
#: one count as zero.
EIGENVALUE_TOLERANCE = 1e-10

#: Points used to pick the default RBF width (median heuristic).
MEDIAN_SAMPLE = 1000


class KernelPCAMap:
    """Kernel PCA on training points, with the map for new points.

    Parameters
    ----------
    kernel : {"rbf", "poly", "linear"} or callable
        A callable is called as ``kernel(X, Y)`` and must return the kernel
        matrix of shape (len(X), len(Y)).
    kernel_params : dict, optional
        Keyword arguments of :func:`sklearn.metrics.pairwise.pairwise_kernels`
        (``gamma``, ``degree``, ``coef0``) or of the callable. For ``"rbf"``
        without ``gamma``, gamma = 1 / median squared distance between
        training points.

    Attributes
    ----------
    params_ : dict
        The kernel parameters used.
    eigenvalues_ : ndarray (m,)
        Kept eigenvalues of the centred kernel matrix, descending.
    n_components_ : int
    """

    def __init__(self, kernel, kernel_params=None):
        self.kernel = kernel
        self.kernel_params = kernel_params

    def _kernel(self, X, Y):
        if callable(self.kernel):
            K = np.asarray(self.kernel(X, Y, **self.params_), dtype=np.float64)
            if K.shape != (X.shape[0], Y.shape[0]):
                raise ValueError(f"kernel(X, Y) must return an array of shape "
                                 f"{(X.shape[0], Y.shape[0])}; got {K.shape}.")
            return K
        from sklearn.metrics.pairwise import pairwise_kernels
        return pairwise_kernels(X, Y, metric=self.kernel, **self.params_)

    def fit_transform(self, X):
        """Fit kernel PCA on ``X``; return its coordinates, shape (n, m)."""
        if not callable(self.kernel):
            check_option(self.kernel, "kernel", KERNELS)
        n = X.shape[0]
        check_dense_allowed(n, what="The KPCA trick's kernel matrix",
                            alternative="Subsample the training points")
        params = dict(self.kernel_params or {})
        if self.kernel == "rbf" and params.get("gamma") is None:
            params["gamma"] = 1.0 / _median_squared_distance(X)
        self.params_ = params
        self.X_fit_ = X.copy()
        K = self._kernel(X, X)
        if not np.all(np.isfinite(K)):
            raise ValueError("The kernel matrix contains NaN or infinity; check the kernel and "
                             "kernel_params.")
        K = 0.5 * (K + K.T)
        self.column_means_ = K.mean(axis=0)
        self.total_mean_ = float(self.column_means_.mean())
        Kc = K - self.column_means_[None, :] - self.column_means_[:, None] + self.total_mean_
        lam, V = scipy.linalg.eigh(Kc)
        lam, V = lam[::-1], V[:, ::-1]
        if not lam[0] > 0:
            raise ValueError("The centred kernel matrix has no positive eigenvalue: in the "
                             "kernel's feature space all training points coincide.")
        keep = lam > lam[0] * EIGENVALUE_TOLERANCE
        self.eigenvalues_ = lam[keep]
        self._projection = V[:, keep] / np.sqrt(self.eigenvalues_)
        self.n_components_ = int(keep.sum())
        return V[:, keep] * np.sqrt(self.eigenvalues_)

    def transform(self, X):
        """Kernel PCA coordinates of new points, shape (len(X), m)."""
        K = self._kernel(X, self.X_fit_)
        Kc = K - self.column_means_[None, :] - K.mean(axis=1, keepdims=True) + self.total_mean_
        return Kc @ self._projection


def _median_squared_distance(X):
    step = max(1, X.shape[0] // MEDIAN_SAMPLE)
    S = X[::step]
    sq = np.sum(S * S, axis=1)
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * S @ S.T, 0.0)
    positive = d2[np.triu_indices(S.shape[0], k=1)]
    positive = positive[positive > 0]
    return float(np.median(positive)) if positive.size else 1.0
