"""The cost of new points placed against a fixed map (the estimators' ``transform``).

Every new point i has its own term

    E_i = lambda KL(P_i || Q_i) + (1 - lambda) KL(Q_i || P~_i),

P_i its input neighbourhood over its nearest reference points and Q_i its
output neighbourhood over all reference points, with the method's output
kernel (see :mod:`nbembed._kernels.placement`). The reference points do not
move and the new points do not see each other, so the terms are independent:
a point lands where it lands whatever else is placed with it.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _config
from .._kernels.nerv import P_FLOOR
from .._kernels.placement import placement_cost_gradient
from .base import Objective


class PlacementObjective(Objective):
    """sum_i E_i over the transposed positions of the new points, shape (d, m).

    Parameters
    ----------
    reference : ndarray (n, d)
        The fitted embedding (held fixed).
    indices : ndarray of int (m, k)
        Each new point's reference neighbours.
    P : ndarray (m, k)
        p_{j|i} over them, rows summing to one.
    precision : ndarray (m,), optional
        b_i of the output kernel H(b_i tau); ones by default.
    alpha : float
        Tail heaviness of the output kernel (0: Gaussian, 1: Student t).
    tradeoff : float
        lambda in [0, 1]: 1 is sum_i KL(P_i || Q_i) (HSSNE, SNE, Mbed); NeRV's
        tradeoff otherwise.
    """

    name = "placement"

    def __init__(self, reference, indices, P, precision=None, *, alpha=0.0, tradeoff=1.0):
        self.reference_t = np.ascontiguousarray(np.asarray(reference, dtype=np.float64).T)
        self.indices = np.ascontiguousarray(indices, dtype=np.int64)
        self.P = np.ascontiguousarray(P, dtype=np.float64)
        m = self.P.shape[0]
        self.precision = np.ones(m) if precision is None else \
            np.ascontiguousarray(precision, dtype=np.float64)
        self.alpha = float(alpha)
        self.tradeoff = float(tradeoff)

    @property
    def n_points(self):
        return self.P.shape[0]

    def start(self):
        """The p-weighted mean of each point's reference neighbours, shape (d, m).

        Summed neighbour by neighbour in the same order for every point: a
        matrix product (einsum) rounds differently with the number of points,
        and a point's start, then its place, would depend on the batch it
        came in."""
        R = self.reference_t
        start = np.zeros((R.shape[0], self.P.shape[0]))
        for c in range(self.P.shape[1]):
            start += self.P[:, c] * R[:, self.indices[:, c]]
        return start

    def point_costs(self, Yt, grad, active=None):
        """E_i of every point and its gradient into ``grad``.

        Parameters
        ----------
        Yt : ndarray (d, m)
        grad : ndarray (d, m)
            Output; columns of inactive points are left as they are.
        active : ndarray of bool (m,), optional
            Points to evaluate (default all); the others get cost and scale 0.

        Returns
        -------
        costs, scales : ndarray (m,)
            E_i, and sum_j p_ij g_ij (the attraction's curvature, for the
            fixed-point step).
        """
        m = self.n_points
        active = np.ones(m, dtype=bool) if active is None else active
        costs = np.zeros(m)
        scales = np.zeros(m)
        with _config.KERNEL_LOCK:
            placement_cost_gradient(self.reference_t, Yt, self.indices, self.P, self.precision,
                                    self.alpha, self.tradeoff, math.log(P_FLOOR), active,
                                    grad, costs, scales)
        return costs, scales

    def value_and_gradient(self, Yt, grad):
        costs, _ = self.point_costs(Yt, grad)
        return float(np.sum(costs)), costs
