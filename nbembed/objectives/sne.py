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


class SNEObjective(Objective):
    """sum_i KL(P_i || Q_i) over the transposed embedding Yt, shape (d, n).

    Parameters
    ----------
    P : ndarray (n, n) or scipy.sparse matrix
        Conditional input neighbourhoods, rows summing to one.
    """

    name = "SNE"

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

    def gradient(self, Yt, grad, exaggeration=1.0):
        """The gradient into ``grad``, the attraction multiplied by ``exaggeration``."""
        self.value_and_gradient(Yt, grad, exaggeration)
        return None
