"""The SNE cost (Hinton & Roweis, 2002): sum_i KL(P_i || Q_i).

Each point has its own input neighbourhood P_i and output neighbourhood Q_i
(Gaussian, unit width). The kernel is :func:`nbembed._kernels.sne.sne_gradient`,
which sums over the stored entries of M = P + P^T.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._kernels import sne as kernels
from .base import Objective
from .forces import Forces, all_pairs_rows, attraction_rows, point_rows

#: The terms of :meth:`SNEObjective.forces` and their legend labels.
FORCE_TERMS = (("attraction", "attraction to input neighbours"),
               ("repulsion", "repulsion from all points"))


class SNEObjective(Objective):
    """sum_i KL(P_i || Q_i) over the transposed embedding Yt, shape (d, n).

    Parameters
    ----------
    P : ndarray (n, n) or scipy.sparse matrix
        Conditional input neighbourhoods, rows summing to one.
    """

    name = "SNE"
    force_terms = FORCE_TERMS

    def __init__(self, P):
        P = sp.csr_matrix(P)
        self.P = P
        self.M = sp.csr_matrix(P + P.T)
        self.M.sort_indices()
        self._row_mass = np.asarray(P.sum(axis=1)).ravel()
        values = P.data[P.data > 0]
        self.p_log_p = float(np.sum(values * np.log(values)))

    def value_and_gradient(self, Yt, grad, exaggeration=1.0):
        M = self.M
        cross = kernels.sne_gradient(Yt, M.indptr, M.indices, M.data, self._row_mass,
                                     exaggeration, grad)
        return self.p_log_p + cross, None

    def value_terms(self, Yt):
        """(sum p log p + sum_ij p_{j|i} tau_ij, sum_i log Z_i): the cost split into
        the part early exaggeration multiplies and the normalizers'."""
        cost, _ = self.value_and_gradient(Yt, np.empty_like(Yt))
        M = self.M
        rows = np.repeat(np.arange(M.shape[0]), np.diff(M.indptr))
        diff = Yt[:, rows] - Yt[:, M.indices]
        attraction = self.p_log_p + 0.5 * float(np.sum(M.data * np.sum(diff * diff, axis=0)))
        return attraction, cost - attraction

    def gradient(self, Yt, grad, exaggeration=1.0):
        """The gradient into ``grad``, the attraction multiplied by ``exaggeration``."""
        self.value_and_gradient(Yt, grad, exaggeration)
        return None

    def forces(self, Yt, indices=None, exaggeration=1.0):
        """The gradient at Yt split into attraction and repulsion.

        dC/dy_i = 2 e sum_j (p_{j|i} + p_{i|j}) (y_i - y_j)
        - 2 sum_j (q_{j|i} + q_{i|j}) (y_i - y_j), the first term
        ``attraction`` (e the exaggeration), the second ``repulsion``; the
        normalizers Z_i come from the kernel's pass over all pairs. See
        :mod:`nbembed.objectives.forces` for the conventions.

        Returns
        -------
        Forces
        """
        Yt = np.ascontiguousarray(Yt, dtype=np.float64)
        Y = Yt.T
        rows = point_rows(indices, Y.shape[0])
        shift, z = kernels.sne_normalizers(Yt)
        attraction = 2.0 * exaggeration * attraction_rows(self.M, Y, rows, np.ones_like)
        repulsion = all_pairs_rows(
            Y, rows, lambda tau, block: (np.exp(shift[block, None] - tau) / z[block, None]
                                         + np.exp(shift[None, :] - tau) / z[None, :]))
        return Forces(dict(attraction=attraction, repulsion=-2.0 * repulsion),
                      dict(FORCE_TERMS), indices=None if indices is None else rows,
                      exaggeration=exaggeration)
