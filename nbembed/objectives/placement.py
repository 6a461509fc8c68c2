"""The cost of new points placed against a fixed map (the estimators' ``transform``).

Every new point i has its own term

    E_i = lambda KL(P_i || Q_i) + (1 - lambda) KL(Q_i || P~_i),

P_i its input neighbourhood over its nearest reference points and Q_i its
output neighbourhood over all reference points, with the method's output
kernel (see :mod:`nbembed._kernels.placement`). The reference points do not
move and the new points do not see each other, so the terms are independent:
a point lands where it lands whatever else is placed with it.

Against a large two-dimensional map the repulsion of all reference points
costs O(n) per point and step. For a heavy-tailed kernel (alpha > 0) it is a
fixed function of the new point's position alone, so :class:`ReferenceField`
computes it once on a grid over the region new points are kept in (FFT
interpolation as in training, :mod:`nbembed._kernels.interpolation`) and
:class:`GridPlacementObjective` reads it off there: O(k) per point and step
for its k neighbours' attraction, and a few grid nodes for the rest.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import xlogy

from .. import _config
from .._kernels.nerv import P_FLOOR
from .._kernels.interpolation import KERNEL_H, KERNEL_HS, _charge_spectra, _convolve, \
    _kernel_spectra, gather, grid_layout, interpolation_weights, spread
from .._kernels.placement import neighbour_attraction, placement_cost_gradient
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
        # sum_j p log p of each row, added neighbour by neighbour (as start() sums):
        # a row's value does not depend on the rows placed with it.
        self.p_log_p = np.zeros(m)
        for c in range(self.P.shape[1]):
            self.p_log_p += xlogy(self.P[:, c], self.P[:, c])
        n = self.reference_t.shape[1]
        self.P_by_reference = np.zeros((0, 0))
        if self.P.shape[1] == n:
            # Every reference point is a neighbour: P in their order, read contiguously.
            self.P_by_reference = np.zeros((m, n))
            np.put_along_axis(self.P_by_reference, self.indices, self.P, axis=1)

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
            placement_cost_gradient(self.reference_t, Yt, self.indices, self.P,
                                    self.P_by_reference, self.p_log_p, self.precision,
                                    self.alpha, self.tradeoff, math.log(P_FLOOR), active,
                                    grad, costs, scales)
        return costs, scales

    def project(self, Yt):
        """Move positions ``Yt`` (d, m) back to where the cost is defined, in place:
        everywhere here."""

    def value_and_gradient(self, Yt, grad):
        costs, _ = self.point_costs(Yt, grad)
        return float(np.sum(costs)), costs


#: Interpolation nodes per box and dimension, box side and fewest boxes per
#: dimension of a :class:`ReferenceField`. Half the training grid's box side:
#: training moves its grid every step so that interpolation errors average out,
#: a placement reads one fixed field. On 597 digits placed against 1200 (alpha 1,
#: extent 133) the median distance to the exact placement fell from 0.017 to 0.0035.
FIELD_NODES, FIELD_BOX_SIZE, FIELD_MIN_BOXES = 3, 0.5, 50
#: Most boxes per dimension of a :class:`ReferenceField`: a wider region gets
#: wider boxes. Its four node grids then take 4 (3 x 400)^2 doubles (46 MB).
FIELD_MAX_BOXES = 400


class ReferenceField:
    """The kernel sums of a fixed two-dimensional map at any position in a box.

    For a position y and the reference points r_j, with H the power-family
    kernel (precision 1) and S its negative score, the sums::

        Z(y) = sum_j H(|y - r_j|^2),   F(y) = sum_j H S (y - r_j)

    are computed once on the nodes of a grid over the box ``[low, high]``
    (:mod:`nbembed._kernels.interpolation`) and interpolated from the nodes of
    y's box. Positions outside the box are read at the nearest point of the
    box. Every position is read independently of the others.

    Parameters
    ----------
    reference : ndarray (n, 2)
        The map; all of it inside the box.
    alpha : float
        Tail of the kernel, > 0 (a Gaussian's sums underflow far from the map).
    low, high : ndarray (2,)
        Corners of the box.
    """

    def __init__(self, reference, alpha, low, high, *, n_nodes=FIELD_NODES,
                 box_size=FIELD_BOX_SIZE, min_boxes=FIELD_MIN_BOXES,
                 max_boxes=FIELD_MAX_BOXES):
        if not alpha > 0:
            raise ValueError(f"ReferenceField needs a heavy-tailed kernel (alpha > 0); "
                             f"got alpha = {alpha!r}.")
        Rt = np.ascontiguousarray(np.asarray(reference, dtype=np.float64).T)
        if Rt.shape[0] != 2:
            raise ValueError(f"ReferenceField needs a two-dimensional map; got "
                             f"{Rt.shape[0]} dimensions.")
        self.low = np.asarray(low, dtype=np.float64).copy()
        self.high = np.asarray(high, dtype=np.float64).copy()
        corners = np.column_stack([self.low, self.high])
        self.lo, self.h, self.n_boxes = grid_layout(corners, n_nodes, box_size, min_boxes,
                                                    max_boxes=max_boxes)
        self.n_nodes = int(n_nodes)
        M = self.n_boxes * self.n_nodes
        #: Charges measured from the grid's middle keep the sums small.
        self.center = self.lo + 0.5 * self.n_boxes * self.h
        box, weights = interpolation_weights(Rt, self.lo, self.h, self.n_boxes, self.n_nodes)
        charges = np.vstack([np.ones(Rt.shape[1]), Rt - self.center[:, None]])
        grid = np.zeros((3, M, M))
        spread(box, weights, charges, self.n_boxes, grid)
        # One thread: the sums are then the same whatever the machine's thread count.
        spectra = _charge_spectra(grid, 1)
        _, kernel_spectra = _kernel_spectra(M, self.h / self.n_nodes, float(alpha),
                                            np.float64, 1, None)
        self.potentials = np.ascontiguousarray(_convolve(
            spectra, kernel_spectra, [(0, KERNEL_H), (0, KERNEL_HS), (1, KERNEL_HS),
                                      (2, KERNEL_HS)], 1))

    def clamp(self, Yt, out=None):
        """``Yt`` (2, m) moved to the nearest points of the box (into ``out`` if given)."""
        return np.clip(Yt, self.low[:, None], self.high[:, None], out=out)

    def sums(self, Yt):
        """Z and F at positions ``Yt`` (2, m) inside the box.

        Returns
        -------
        Z : ndarray (m,)
        F : ndarray (2, m)
        """
        Yt = np.ascontiguousarray(Yt, dtype=np.float64)
        box, weights = interpolation_weights(Yt, self.lo, self.h, self.n_boxes, self.n_nodes)
        values = np.empty((4, Yt.shape[1]))
        gather(box, weights, self.potentials, values)
        # sum_j K (y - r_j) = (y - c) sum_j K - sum_j K (r_j - c)
        forces = (Yt - self.center[:, None]) * values[1] - values[2:]
        return values[0], forces


class GridPlacementObjective(PlacementObjective):
    """:class:`PlacementObjective` (precision 1, tradeoff 1, alpha > 0) whose
    repulsion is read off a :class:`ReferenceField` instead of summed over all
    reference points.

    Parameters
    ----------
    reference, indices, P, alpha
        As for :class:`PlacementObjective`.
    field : ReferenceField
        Of ``reference`` and ``alpha``; :meth:`project` keeps points in its box.
    """

    name = "placement (grid)"

    def __init__(self, reference, indices, P, *, alpha, field):
        super().__init__(reference, indices, P, alpha=alpha)
        self.field = field

    def project(self, Yt):
        """Keep positions ``Yt`` (2, m) inside the field's box, in place: outside it the
        grid knows no repulsion, and the box is where a placed point ends anyway."""
        self.field.clamp(Yt, out=Yt)

    def point_costs(self, Yt, grad, active=None):
        m = self.n_points
        active = np.ones(m, dtype=bool) if active is None else active
        attraction = np.zeros_like(Yt)
        cross_entropy = np.zeros(m)
        scales = np.zeros(m)
        with _config.KERNEL_LOCK:
            neighbour_attraction(self.reference_t, Yt, self.indices, self.P, self.alpha, active,
                                 attraction, cross_entropy, scales)
            chosen = np.flatnonzero(active)
            Z, forces = self.field.sums(self.field.clamp(Yt[:, chosen]))
        Z = np.maximum(Z, np.finfo(np.float64).tiny)
        grad[:, chosen] = 2.0 * (attraction[:, chosen] - forces / Z)
        costs = np.zeros(m)
        costs[chosen] = cross_entropy[chosen] + np.log(Z)
        return costs, scales
