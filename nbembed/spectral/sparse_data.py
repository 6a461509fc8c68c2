"""Sparse data rows in the spectral framework, never densified.

The framework works in an orthonormal basis of the span of the centred
training rows (:func:`nbembed.spectral.solver.data_basis`). For a sparse X
(n x D) that basis comes from whichever square matrix is smaller:

* D <= n: the D x D scatter X^T X - n mu mu^T. The rows stay sparse: the
  coordinates are held as :class:`SparseCoordinates`, whose quadratic forms
  X^T M X are sparse products until the D x D result, and neighbours are
  searched among the sparse rows.
* D > n (text: thousands of terms): the n x n centred Gram matrix, as kernel
  PCA with the linear kernel does. The coordinates are then dense but n x r
  with r < n, smaller than the n x D rows; the basis, as large as the
  densified rows, is kept implicit (:class:`ImplicitBasis`).

Either square matrix is refused above the memory limit before it is
allocated. An eigensolver resolves eigenvalues (squared singular values) down
to about 1e-14 of the largest, not the 1e-20 that the dense path's SVD
resolves, so directions of the centred rows with a variance below
:data:`EIGENVALUE_TOLERANCE` of the largest are dropped here, and so are
those within the rounding of the centring (see :func:`_kept_eigenvectors`).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from .._validation import check_allocation

#: Eigenvalues of the scatter or Gram matrix below this fraction of the
#: largest count as zero (as kernel PCA's do).
EIGENVALUE_TOLERANCE = 1e-10

NO_VARIANCE = ("X has no variance: all samples are identical, so there is no direction to "
               "project on.")


def _symmetric(M):
    return 0.5 * (M + M.T)


def _column_means(X):
    # Sum, then divide, as NumPy's mean of the dense rows does.
    return np.asarray(X.sum(axis=0)).ravel() / X.shape[0]


def _kept_eigenvectors(S, uncentred_trace):
    """Eigenvalues above the tolerance, descending, and their eigenvectors.

    ``S`` was centred by subtracting the mean's part from an uncentred matrix
    of trace ``uncentred_trace``; eigenvalues below size * eps * that trace
    (an eigensolver's error bound for it) are the rounding of that
    subtraction, not variance: identical rows give such values, not zeros.
    """
    lam, V = scipy.linalg.eigh(_symmetric(S))
    lam, V = lam[::-1], V[:, ::-1]
    rounding = S.shape[0] * np.finfo(np.float64).eps * uncentred_trace
    if not lam[0] > rounding:
        raise ValueError(NO_VARIANCE)
    keep = lam > max(lam[0] * EIGENVALUE_TOLERANCE, rounding)
    return lam[keep], V[:, keep]


def sparse_data_basis(X):
    """Mean, orthonormal basis and coordinates of the centred rows of a sparse X.

    Parameters
    ----------
    X : scipy.sparse.csr_matrix (n, D)

    Returns
    -------
    mean : ndarray (D,)
    basis : ndarray (D, r) or ImplicitBasis
    coordinates : SparseCoordinates or ndarray (n, r)
        (X - mean) @ basis; see the module's description for which.

    Raises
    ------
    MemoryError
        When the D x D or n x n matrix would exceed the memory limit.
    """
    n, n_features = X.shape
    mean = _column_means(X)
    if n_features <= n:
        check_allocation(8 * n_features * n_features,
                         what=f"The spectral framework's quadratic forms of a sparse X with "
                              f"{n_features} features",
                         array=f"a {n_features} x {n_features} array",
                         alternative="Reduce the features first (for example with "
                                     "sklearn.decomposition.TruncatedSVD)")
        second_moments = (X.T @ X).toarray()
        scatter = second_moments - n * np.outer(mean, mean)
        _, basis = _kept_eigenvectors(scatter, np.trace(second_moments))
        return mean, basis, SparseCoordinates(X, mean, basis)
    check_allocation(8 * n * n,
                     what=f"The spectral framework's Gram matrix of a sparse X with more "
                          f"features ({n_features}) than points ({n})",
                     array=f"a {n} x {n} array",
                     alternative="Subsample the training points, or reduce the features "
                                 "first (for example with sklearn.decomposition.TruncatedSVD)")
    gram = (X @ X.T).toarray()
    column_means = gram.mean(axis=0)
    centred = gram - column_means[None, :] - column_means[:, None] + column_means.mean()
    lam, U = _kept_eigenvectors(centred, np.trace(gram))
    root = np.sqrt(lam)
    return mean, ImplicitBasis(X, mean, U / root), U * root


class SparseCoordinates:
    """The coordinates (X - mean) @ basis of sparse rows, without the dense (n, r) array.

    Parameters
    ----------
    data : scipy.sparse.csr_matrix (n, D)
        The rows, not centred.
    mean : ndarray (D,)
    basis : ndarray (D, r)
        Orthonormal columns spanning the centred rows.

    Attributes
    ----------
    shape : tuple
        (n, r), as the dense coordinates' shape.
    """

    def __init__(self, data, mean, basis):
        self.data = data
        self.mean = mean
        self.basis = basis
        self._mean_coordinates = mean @ basis

    @property
    def shape(self):
        return self.data.shape[0], self.basis.shape[1]

    def __matmul__(self, M):
        """(X - mean) @ basis @ M, dense (n, k), for a dense M (r, k)."""
        BM = self.basis @ M
        return self.data @ BM - self.mean @ BM

    def quadratic_form(self, M):
        """C^T M C for the coordinates C and a sparse (n, n) M, symmetrized; (r, r).

        From the uncentred rows: C = (X - 1 mu^T) B, so
        C^T M C = B^T (X^T M X - X^T M 1 mu^T - mu 1^T M X + (1^T M 1) mu mu^T) B,
        with X^T M X a sparse product until B^T (X^T M X) B.
        """
        X, B = self.data, self.basis
        XtMX = X.T @ sp.csr_matrix(M @ X)
        row_sums = np.asarray(M.sum(axis=1)).ravel()
        column_sums = np.asarray(M.sum(axis=0)).ravel()
        left = B.T @ (X.T @ row_sums)      # B^T X^T M 1
        right = B.T @ (X.T @ column_sums)  # B^T X^T M^T 1
        v = self._mean_coordinates
        form = B.T @ (XtMX @ B) - np.outer(left, v) - np.outer(v, right) \
            + row_sums.sum() * np.outer(v, v)
        return _symmetric(form)

    def scatter(self, rows=None):
        """Total scatter of the coordinates of ``rows`` (all by default): X_s^T X_s - m mu_s mu_s^T
        in the basis; (r, r)."""
        Xs = self.data if rows is None else self.data[rows]
        w = _column_means(Xs) @ self.basis
        form = self.basis.T @ ((Xs.T @ Xs) @ self.basis) - Xs.shape[0] * np.outer(w, w)
        return _symmetric(form)


class ImplicitBasis:
    """The orthonormal basis (X - mean)^T W of the centred sparse rows' span, kept as W.

    W = U diag(lambda)^(-1/2) from the centred Gram matrix's eigenvectors U; the
    (D, r) basis itself would be as large as the densified rows.

    Parameters
    ----------
    data : scipy.sparse.csr_matrix (n, D)
    mean : ndarray (D,)
    weights : ndarray (n, r)
    """

    def __init__(self, data, mean, weights):
        self.data = data
        self.mean = mean
        self.weights = weights

    @property
    def shape(self):
        return self.data.shape[1], self.weights.shape[1]

    def expand(self, A):
        """A @ basis.T, (k, D): rows of A (k, r) as directions of the input features."""
        C = A @ self.weights.T
        return np.asarray(self.data.T @ C.T).T - np.outer(C.sum(axis=1), self.mean)


def distance_rows(X):
    """Rows with the pairwise distances of the coordinates ``X``: a
    :class:`SparseCoordinates`' sparse rows (the basis spans their differences),
    dense coordinates as they are."""
    return X.data if isinstance(X, SparseCoordinates) else X


def in_features(A, basis):
    """A @ basis.T: directions in the coordinates as directions of the input features."""
    return basis.expand(A) if isinstance(basis, ImplicitBasis) else A @ basis.T
