"""The framework's solver: a regularized generalized symmetric eigenproblem.

minimize tr(A M_C A^T) subject to A (M_B + eps I) A^T = I is solved by the
eigenvectors of M_C a = mu (M_B + eps I) a with the smallest mu
(``scipy.linalg.eigh``). Everything here works in an orthonormal basis of the
span of the centred training data, so directions along which the training
data do not vary (constant features, more features than points) never enter.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from .sparse_data import sparse_data_basis

#: Singular values of the centred data below this fraction of the largest one
#: count as zero: those directions carry no training variance.
RANK_TOLERANCE = 1e-10


def data_basis(F):
    """Mean and orthonormal basis of the span of the centred rows of ``F``.

    A sparse ``F`` is not densified: see
    :func:`nbembed.spectral.sparse_data.sparse_data_basis`.

    Returns
    -------
    mean : ndarray (D,)
    basis : ndarray (D, r)
        Orthonormal columns, r = numerical rank of F - mean
        (an :class:`~nbembed.spectral.sparse_data.ImplicitBasis` for a sparse
        F with more columns than rows).
    coordinates : ndarray (n, r)
        (F - mean) @ basis: the data in that basis (distances unchanged); a
        :class:`~nbembed.spectral.sparse_data.SparseCoordinates` for a sparse F
        with at most as many columns as rows.
    """
    if sp.issparse(F):
        return sparse_data_basis(F)
    mean = F.mean(axis=0)
    Fc = F - mean
    _, s, Vt = np.linalg.svd(Fc, full_matrices=False)
    if s.size == 0 or not s[0] > 0:
        raise ValueError("X has no variance: all samples are identical, so there is no "
                         "direction to project on.")
    rank = int(np.sum(s > s[0] * RANK_TOLERANCE))
    basis = Vt[:rank].T
    return mean, basis, Fc @ basis


def constraint_ridge(M_B, reg):
    """The ridge eps = reg * (mean eigenvalue of M_B) added to the constraint.

    Relative to M_B's own scale, so rescaling the data does not change the
    solution.
    """
    scale = float(np.trace(M_B)) / M_B.shape[0]
    return reg * scale if scale > 0 else reg


def solve(M_C, M_B, n_components, reg):
    """Bottom ``n_components`` generalized eigenvectors of (M_C, M_B + eps I).

    Parameters
    ----------
    M_C : ndarray (r, r)
        Symmetric cost matrix (may be indefinite).
    M_B : ndarray (r, r)
        Symmetric positive semi-definite constraint matrix.
    n_components : int
    reg : float
        Relative ridge, see :func:`constraint_ridge`.

    Returns
    -------
    A : ndarray (n_components, r)
        Rows a_k with A (M_B + eps I) A^T = I.
    mu : ndarray (n_components,)
        The eigenvalues, ascending: mu_k = a_k^T M_C a_k.
    eps : float
        The absolute ridge used.
    """
    eps = constraint_ridge(M_B, reg)
    B = M_B + eps * np.eye(M_B.shape[0])
    try:
        mu, V = scipy.linalg.eigh(M_C, B, subset_by_index=[0, n_components - 1])
    except np.linalg.LinAlgError as err:
        raise np.linalg.LinAlgError(
            f"The constraint matrix is singular (not positive definite), so the generalized "
            f"eigenproblem has no solution; increase reg (now {reg!r}) to regularize it. "
            f"({err})") from err
    return V.T, mu, eps


def orient(Z):
    """Signs (+1/-1) per axis making each axis' largest-magnitude value positive.

    Eigenvectors are defined up to sign; this makes fits reproducible.
    """
    idx = np.argmax(np.abs(Z), axis=0)
    signs = np.sign(Z[idx, np.arange(Z.shape[1])])
    signs[signs == 0] = 1.0
    return signs


def align(Z, previous):
    """Signs per axis that best match a previous embedding of the same points."""
    signs = np.sign(np.sum(Z * previous, axis=0))
    signs[signs == 0] = 1.0
    return signs
