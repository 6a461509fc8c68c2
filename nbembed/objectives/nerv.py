"""NeRV's cost (Venna & Kaski, 2007): a tradeoff between the two KL divergences::

    E = tradeoff * sum_i KL(P_i || Q_i) + (1 - tradeoff) * sum_i KL(Q_i || P_i)

with conditional input neighbourhoods P_i and output neighbourhoods
q_ij proportional to exp(-beta_i ‖y_i - y_j‖²), of the same precisions beta_i.
The first divergence penalizes missed neighbours (recall; tradeoff = 1 is
SNE), the second false ones (precision). The kernel is
:func:`nbembed._kernels.nerv.nerv_gradient`.
"""

from __future__ import annotations

import numpy as np

from .._kernels import nerv as kernels
from ..optim import LiveParameter
from .base import Objective

TRADEOFF = LiveParameter("tradeoff", 0.0, 1.0, (0.0, 1.0), 0.05,
                         "0 favours precision (no false neighbours on the display), "
                         "1 recall (no missed neighbours; SNE)", label="tradeoff")


class NeRVObjective(Objective):
    """E over the transposed embedding Yt, shape (d, n).

    Parameters
    ----------
    P : ndarray (n, n)
        Conditional input neighbourhoods, rows summing to one.
    beta : ndarray (n,)
        Precisions 1 / sigma_i^2 of the input and the output neighbourhoods.
    tradeoff : float
        In [0, 1] (live).
    logP : ndarray (n, n), optional
        log P with zeros floored (computed from P when not given).

    Attributes
    ----------
    info of :meth:`value_and_gradient` : tuple of float
        (sum_i KL(P_i || Q_i), sum_i KL(Q_i || P_i)) at the point evaluated.
    """

    name = "NeRV"
    live_parameters = {"tradeoff": TRADEOFF}

    def __init__(self, P, beta, tradeoff, logP=None):
        self.tradeoff = float(tradeoff)
        self.use_neighbourhoods(P, beta, logP)

    def use_neighbourhoods(self, P, beta, logP=None):
        """Evaluate against these neighbourhoods from now on (a widening stage, say)."""
        self.P = P
        self.beta = beta
        self.logP = kernels.floored_log(P) if logP is None else logP
        positive = P[P > 0]
        self.p_log_p = float(np.sum(positive * np.log(positive)))

    def value_and_gradient(self, Yt, grad):
        cross, kl_qp = kernels.nerv_gradient(Yt, self.P, self.logP, self.beta, self.tradeoff,
                                             kernels.GRADIENT_CHUNKS, grad)
        recall = self.p_log_p + cross
        return self.tradeoff * recall + (1.0 - self.tradeoff) * kl_qp, (recall, kl_qp)
