"""Parametric Embedding's cost (Iwata et al., 2007) as a function of the class positions::

    J(R, Phi) = sum_n KL(p(. | x_n) || p(. | r_n)) + eta_r ‖R‖² + eta_phi ‖Phi‖²

up to constants, where p(c_k | r_n) is the embedding's unit-variance Gaussian
mixture centred on the class positions phi_k. Given Phi, every object's
problem is strictly convex and independent of the others, so the objective
optimized over Phi is F(Phi) = min_R J(R, Phi): each evaluation solves R by
damped Newton steps from the objects' current positions, and dF/dPhi is
dJ/dPhi at the solved R (the envelope theorem). Pinned objects (``frozen``)
are constants of F: the minimum is over the free objects only, and the
envelope theorem holds as before. The kernels are in
:mod:`nbembed._kernels.parametric`.
"""

from __future__ import annotations

import math

import numpy as np

from .._kernels import parametric as kernels
from .._validation import check_annotations
from ..optim import LiveParameter
from ..posteriors import annotation_posteriors
from .base import Objective
from .forces import Forces, point_rows

ETA_R = LiveParameter("eta_r", 0.0, math.inf, (0.01, 1.0), 0.01,
                      "Pull of every object toward the origin (keeps each object's problem "
                      "strictly convex)", label="η_r", low_open=True)
ETA_PHI = LiveParameter("eta_phi", 0.0, math.inf, (0.0, 200.0), 1.0,
                        "Pull of the class positions toward the origin", label="η_φ")

#: An object's Newton solve stops when its gradient norm is below this.
NEWTON_TOL = 1e-9
#: Most Newton steps per object and solve (damped Newton on these strictly
#: convex problems takes a handful from a warm start).
MAX_NEWTON = 100

#: The terms of :meth:`ParametricObjective.forces` and their legend labels, for
#: the objects and (``anchors``) for the classes.
FORCE_TERMS = (("attraction", "attraction: toward the posteriors' classes"),
               ("repulsion", "repulsion: away from the display's classes"),
               ("origin", "regularization: toward the origin"))
CLASS_FORCE_TERMS = (("attraction", "attraction: toward the class's objects"),
                     ("repulsion", "repulsion: away from the objects the display gives it"),
                     ("origin", "regularization: toward the origin"))


def blend_annotations(P, annotations):
    """``P`` with the annotations' soft labels blended in (see
    :func:`~nbembed.posteriors.annotation_posteriors`); ``P`` if there are none."""
    if annotations is None:
        return P
    check_annotations(annotations, P.shape[0], data="P")
    return annotation_posteriors(annotations, P)


class ParametricObjective(Objective):
    """F(Phi) = min_R J(R, Phi) over the class positions Phi, shape (K, d).

    Parameters
    ----------
    P : ndarray (n, K)
        Class posteriors p(c_k | x_n).
    R : ndarray (n, d)
        Object positions: the warm start of every solve, replaced by the
        solution at the point a run accepts (:meth:`accept`).
    priors : ndarray (K,)
    eta_r, eta_phi : float
        Regularization weights (live).

    Attributes
    ----------
    evaluations, newton_steps : int
        Solves of R so far and the Newton steps they took (summed over objects).
    frozen : ndarray of bool (n,)
        Objects held where they are (pinned): F minimizes over the others only.
    """

    name = "Parametric Embedding"
    live_parameters = {"eta_r": ETA_R, "eta_phi": ETA_PHI}
    annotation_kinds = ("labels", "soft_labels")
    force_terms = FORCE_TERMS

    def __init__(self, P, R, *, priors, eta_r, eta_phi):
        self.R = np.array(R, dtype=np.float64, order="C")
        self.priors = np.asarray(priors, dtype=np.float64)
        self.log_prior = np.log(self.priors)
        self.eta_r = float(eta_r)
        self.eta_phi = float(eta_phi)
        self.evaluations = 0
        self.newton_steps = 0
        self.frozen = np.zeros(self.R.shape[0], dtype=np.bool_)
        self.P_given = P
        self.use_posteriors(P)

    def set_annotations(self, annotations=None, y=None):
        """Blend the soft labels of ``annotations`` into the given posteriors.

        A labelled object with probability vector T and confidence c gets
        ``c T + (1 - c) p``. ``y`` is ignored: hard labels reach Parametric
        Embedding through ``annotations`` (``Annotations.from_labels(y)``);
        None removes earlier annotations.
        """
        self.use_posteriors(blend_annotations(self.P_given, annotations))

    def use_posteriors(self, P):
        """Match these posteriors from now on."""
        self.P = np.ascontiguousarray(P)
        positive = self.P[self.P > 0]
        self.p_log_p = float(np.sum(positive * np.log(positive)))

    def solve(self, Phi, R, max_newton=MAX_NEWTON):
        """Solve R (in place) for Phi with at most ``max_newton`` Newton steps per
        object; return J, dJ/dPhi and the Newton steps taken."""
        cost, grad, steps, _ = kernels.solve(self.P, R, Phi, self.log_prior, self.eta_r,
                                             NEWTON_TOL, max_newton, self.frozen)
        return (cost + self.eta_phi * float(np.sum(Phi ** 2)), grad + 2.0 * self.eta_phi * Phi,
                steps)

    def value_and_gradient(self, Phi, grad):
        """F at ``Phi``, R solved from the current objects; ``info`` is that R."""
        R = self.R.copy()
        cost, grad[:], steps = self.solve(Phi, R)
        self.evaluations += 1
        self.newton_steps += steps
        return cost, R

    def accept(self, R):
        """Keep ``R`` (solved at the point a run moved to) as the objects' positions."""
        self.R = R

    def value_here(self, Phi):
        """(J, dJ/dPhi) at the current R, which need not be solved for Phi."""
        return self.solve(Phi, self.R.copy(), 0)[:2]

    def kl_per_object(self, J, Phi):
        """The mean KL divergence per object behind J."""
        data = J - self.eta_phi * float(np.sum(Phi ** 2)) - self.eta_r * float(np.sum(self.R ** 2))
        return (data + self.p_log_p) / self.P.shape[0]

    def membership(self, Phi):
        """p(c_k | r_n) of the current objects, shape (n, K)."""
        Q = np.empty(self.P.shape)
        kernels.membership(self.R, Phi, self.log_prior, Q)
        return Q

    def forces(self, Phi, indices=None):
        """The gradients of J at the current objects and ``Phi``, split into terms.

        For the objects (rows), dJ/dr_n = sum_k (p_nk - q_nk)(r_n - phi_k) + 2 eta_r r_n:

        - ``attraction``: sum_k p_nk (r_n - phi_k), toward the classes the
          given posteriors name;
        - ``repulsion``: -sum_k q_nk (r_n - phi_k), away from the classes the
          embedding's own posteriors name;
        - ``origin``: 2 eta_r r_n.

        ``anchors`` holds the same split of dJ/dphi_k for the classes:
        sum_n p_nk (phi_k - r_n), -sum_n q_nk (phi_k - r_n) and 2 eta_phi phi_k
        (all classes, whatever ``indices``). A solved object's terms cancel
        (its gradient is zero up to the solver's tolerance); a pinned one's
        need not. See :mod:`nbembed.objectives.forces` for the conventions.

        Returns
        -------
        Forces
        """
        R, P, Q = self.R, self.P, self.membership(Phi)
        rows = point_rows(indices, R.shape[0])
        objects = dict(attraction=P[rows].sum(axis=1)[:, None] * R[rows] - P[rows] @ Phi,
                       repulsion=Q[rows] @ Phi - Q[rows].sum(axis=1)[:, None] * R[rows],
                       origin=2.0 * self.eta_r * R[rows])
        classes = dict(attraction=P.sum(axis=0)[:, None] * Phi - P.T @ R,
                       repulsion=Q.T @ R - Q.sum(axis=0)[:, None] * Phi,
                       origin=2.0 * self.eta_phi * Phi)
        return Forces(objects, dict(FORCE_TERMS), indices=None if indices is None else rows,
                      anchors=Forces(classes, dict(CLASS_FORCE_TERMS)))
