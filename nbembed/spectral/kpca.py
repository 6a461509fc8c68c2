"""The KPCA trick: kernel PCA coordinates as input for a linear learner.

Kernel PCA on the n training points gives every point finite coordinates
(one per component with a non-zero eigenvalue, at most n) whose inner products
are the centred kernel values. A linear learner run on those coordinates is the
kernelized learner, without any kernel formulas; new points are mapped with the
same kernel PCA.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from .._row_products import project, squared_distances
from .._validation import check_dense_allowed, check_option

KERNELS = ("rbf", "poly", "linear")

#: The parameters each named kernel takes (those of
#: :func:`sklearn.metrics.pairwise.pairwise_kernels`).
KERNEL_PARAMS = {"rbf": ("gamma",), "poly": ("gamma", "degree", "coef0"), "linear": ()}

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
        matrix of shape (len(X), len(Y)). The named kernels take sparse rows
        as they are; a callable gets them as given (a scipy.sparse matrix
        where the data are sparse).
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
        params = check_kernel_params(self.kernel, self.kernel_params)
        n = X.shape[0]
        check_dense_allowed(n, what="The KPCA trick's kernel matrix",
                            alternative="Subsample the training points")
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
        """Kernel PCA coordinates of new points, shape (len(X), m).

        Each row's coordinates depend on that row alone: a named kernel of dense
        rows is summed over the features in a fixed order, and so is the
        projection (see :mod:`nbembed._row_products`).
        """
        K = self._kernel_rows(X)
        Kc = K - self.column_means_[None, :] - K.mean(axis=1, keepdims=True) + self.total_mean_
        return project(Kc, self._projection.T)

    def _kernel_rows(self, X):
        """The kernel of new rows and the training points, row by row where it can be."""
        if callable(self.kernel) or sp.issparse(X) or sp.issparse(self.X_fit_):
            return self._kernel(X, self.X_fit_)  # sparse products already go row by row
        if self.kernel == "rbf":
            K = squared_distances(X, self.X_fit_)
            K *= -self.params_["gamma"]
            return np.exp(K, out=K)
        K = project(X, self.X_fit_)
        if self.kernel == "poly":  # scikit-learn's defaults where a parameter is not given
            gamma = self.params_.get("gamma")
            K *= 1.0 / X.shape[1] if gamma is None else gamma
            K += self.params_.get("coef0", 1)
            K **= self.params_.get("degree", 3)
        return K


def check_kernel_params(kernel, kernel_params):
    """Check ``kernel_params`` against ``kernel``; return them as a new dict.

    For a named kernel: only its own keys (``KERNEL_PARAMS``); gamma (rbf,
    poly) None or a finite number > 0, degree (poly) an integer >= 1, coef0
    (poly) a finite number. For a callable kernel any keys, passed on as
    they are.

    Parameters
    ----------
    kernel : {"rbf", "poly", "linear"} or callable
    kernel_params : dict or None

    Returns
    -------
    dict

    Raises
    ------
    TypeError
        If ``kernel_params`` is not a dict (or None), or a value is not a number.
    ValueError
        For an unknown kernel, a key the kernel does not take, or a value out of range.
    """
    if kernel_params is None:
        params = {}
    elif isinstance(kernel_params, Mapping):
        params = dict(kernel_params)
    else:
        raise TypeError(f"kernel_params must be a dict or None; got "
                        f"{type(kernel_params).__name__} {kernel_params!r}. Pass for example "
                        f"kernel_params={{'gamma': 0.1}}.")
    if callable(kernel):
        return params
    check_option(kernel, "kernel", KERNELS)
    accepted = KERNEL_PARAMS[kernel]
    unknown = [key for key in params if key not in accepted]
    if unknown:
        takes = (f"takes only {', '.join(repr(k) for k in accepted)}" if accepted else
                 "takes no parameters")
        raise ValueError(f"kernel_params has {', '.join(repr(k) for k in unknown)}, which "
                         f"kernel={kernel!r} does not take: it {takes}. Remove "
                         f"{'it' if len(unknown) == 1 else 'them'}, or pass a callable "
                         f"kernel for other parameters.")
    if params.get("gamma") is not None:
        _check_kernel_number(params["gamma"], "gamma", kernel, positive=True,
                             meaning="the inverse squared width"
                             if kernel == "rbf" else "the scale of x . y")
    if "degree" in params:
        degree = params["degree"]
        if isinstance(degree, bool) or not isinstance(degree, numbers.Integral) \
                or degree < 1:
            raise ValueError(f"kernel_params['degree'] = {degree!r} for kernel='poly' must be "
                             f"an integer >= 1 (the power of gamma x . y + coef0); pass for "
                             f"example degree=2 or 3.")
    if "coef0" in params:
        _check_kernel_number(params["coef0"], "coef0", kernel, positive=False,
                             meaning="the constant added to gamma x . y")
    return params


def _check_kernel_number(value, key, kernel, *, positive, meaning):
    """Refuse a kernel parameter that is not a finite number (> 0 if ``positive``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"kernel_params[{key!r}] must be a number ({meaning}); got "
                        f"{type(value).__name__} {value!r}.")
    bad = not math.isfinite(value) or (positive and value <= 0)
    if bad:
        need = "a finite number > 0" if positive else "a finite number"
        default = (" or leave it out for the default" if key == "gamma" else "")
        raise ValueError(f"kernel_params[{key!r}] = {value!r} for kernel={kernel!r} must be "
                         f"{need} ({meaning}); pass such a value{default}.")


def _median_squared_distance(X):
    step = max(1, X.shape[0] // MEDIAN_SAMPLE)
    S = X[::step]
    if sp.issparse(S):  # the sample's rows stay sparse; only its m x m products are dense
        sq = np.asarray(S.multiply(S).sum(axis=1)).ravel()
        inner = (S @ S.T).toarray()
    else:
        sq = np.sum(S * S, axis=1)
        inner = S @ S.T
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * inner, 0.0)
    positive = d2[np.triu_indices(S.shape[0], k=1)]
    positive = positive[positive > 0]
    return float(np.median(positive)) if positive.size else 1.0
