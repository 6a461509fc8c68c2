"""The spectral framework's run: one generalized eigenproblem behind the run protocol.

The estimators of :mod:`nbembed.methods.spectral` build the graphs and return a
:class:`SpectralRun`; its live parameters (gamma, the Hadamard power) and new
annotations re-solve at once, reusing the neighbourhood graph.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .. import _config
from .._validation import check_annotations, check_labels
from ..affinity import knn_graphs
from ..affinity.constraints import spectral_link_pairs
from ..optim import LiveParameter, Run
from ..optim.callbacks import call_all
from ..spectral import costs, selection, solver

GAMMA = LiveParameter("gamma", 0.0, math.inf, (0.0, 5.0), 0.05,
                      "Weight of the neighbourhood cost (unlabelled data) against the label "
                      "cost", label="γ")
HADAMARD_POWER = LiveParameter("hadamard_power", 0.0, math.inf, (0.0, 8.0), 0.25,
                               "Element-wise power r of the neighbourhood cost: r > 1 "
                               "strengthens strong links relative to weak ones",
                               label="Hadamard power")

_TINY = np.finfo(np.float64).tiny

#: Hadamard powers whose neighbourhood matrices a run keeps, so a slider
#: moving back and forth re-solves without rebuilding them.
NEIGHBOR_CACHE_SIZE = 8


def merge_labels(y, annotations, n):
    """Labels from ``y`` and ``annotations`` (annotated points win), and the
    annotations' must-link and cannot-link pairs (large selections joined by a
    bounded sample of their pairs; see
    :func:`~nbembed.affinity.constraints.spectral_link_pairs`).

    Parameters
    ----------
    y : array-like of int (n,) or None
        Class labels, -1 for unlabelled points.
    annotations : Annotations or None
    n : int
        Number of samples.

    Returns
    -------
    labels : ndarray of int (n,)
    must_links, cannot_links : ndarray (m, 2) or None
        None without annotations.
    """
    labels = np.full(n, -1, dtype=np.int64) if y is None else check_labels(y, n)
    must = cannot = None
    if annotations is not None:
        check_annotations(annotations, n)
        annotated = annotations.to_labels()
        labels = np.where(annotated >= 0, annotated, labels)
        must, cannot = spectral_link_pairs(annotations)
    return labels, must, cannot


class SpectralRun(Run):
    """A one-shot spectral solve that follows the run protocol.

    ``step`` solves the eigenproblem (``n_iter = 1``); further steps do
    nothing. ``set_params(gamma=..., hadamard_power=...)`` and
    ``set_annotations`` re-solve at once when the run has been solved, reusing
    the neighbourhood graph; each new solution's axes are flipped to match the
    previous embedding, so a slider does not mirror the picture.

    Attributes
    ----------
    X : ndarray (n, r) or SparseCoordinates
        The training points in an orthonormal basis of their centred span
        (sparse rows with that basis: see :mod:`nbembed.spectral.sparse_data`).
    feature_map : tuple or None
        (mean, basis, kernel PCA map or None) taking inputs to those
        coordinates: (phi(x) - mean) @ basis (the basis of sparse rows with
        more features than points is an ``ImplicitBasis``).
    components : ndarray (n_components, r) or None
        A in the basis of the training data's span (None before the solve).
    eigenvalues : ndarray or None
    ridge : float or None
        The absolute ridge eps added to the constraint matrix.
    neighbor_weight : float
        The multiplier of C^u in the cost (gamma times the relative scale).
    constraint_weight : float
        The multiplier of X^T D_{C^u} X added to the constraint with
        ``constraint="label+neighbor"``.
    """

    n_iter = 1

    def __init__(self, coords, *, name, label_cost, neighbor_graph, labels, must_links,
                 cannot_links, n_components, n_neighbors, gamma, hadamard_power, gamma_scale,
                 beta, reg, axis_scaling, constraint, scales=None, init=None,
                 feature_map=None):
        self.name = name
        self.scales = scales
        self.X = coords
        self.feature_map = feature_map
        self.label_kind = label_cost
        self.neighbor_graph = neighbor_graph
        self.n_components = n_components
        self.n_neighbors = n_neighbors
        self.gamma = gamma
        self.hadamard_power = hadamard_power
        self.gamma_scale = gamma_scale
        self.beta = beta
        self.reg = reg
        self.axis_scaling = axis_scaling
        self.constraint = constraint
        self.iteration = 0
        self.history = []
        self.components = self.eigenvalues = self.ridge = None
        self.neighbor_weight = self.constraint_weight = 0.0
        self._neighbor_cache = {}
        self._total_scatter = None
        self.label_cost = None
        self._wants_self_cost = False
        self.live_parameters = {}
        if neighbor_graph is not None:
            if label_cost is not None:
                self.live_parameters["gamma"] = GAMMA
            self.live_parameters["hadamard_power"] = HADAMARD_POWER
        self.annotation_kinds = () if label_cost is None else \
            ("labels",) if label_cost == "lfda" else ("labels", "must_link", "cannot_link")
        self._set_labels(labels, must_links, cannot_links)
        n = coords.shape[0]
        self._Z = np.zeros((n, n_components)) if init is None else np.array(init, dtype=float)
        self._started = time.perf_counter()

    # -- state ---------------------------------------------------------------
    @property
    def embedding(self):
        """A copy of the embedding (``init`` or zeros before the solve)."""
        return self._Z.copy()

    @property
    def cost(self):
        """tr(A M_C A^T) at the current solution (NaN before the solve)."""
        with _config.KERNEL_LOCK:
            if self.components is None:
                return math.nan
            M_C, _ = self._matrices()
            A = self.components
            return float(np.trace(A @ M_C @ A.T))

    # -- control -------------------------------------------------------------
    def _advance(self, n, callbacks, record_last=True):
        # Solve the first time n >= 1; later steps do nothing (nothing to record).
        if n > 0 and self.iteration < self.n_iter:
            with _config.KERNEL_LOCK:
                self._solve()
                self.iteration = 1
            call_all(callbacks, self)

    def set_params(self, **params):
        """Change ``gamma`` and/or ``hadamard_power``; re-solve if solved.

        Raises
        ------
        ValueError, TypeError
            For an unknown name or a value outside its range; nothing changes.
        """
        checked = self.check_params(params)
        with _config.KERNEL_LOCK:
            before = {name: getattr(self, name) for name in checked}
            for name, value in checked.items():
                setattr(self, name, value)
            if self.iteration:
                try:
                    self._solve()
                except ValueError:
                    for name, value in before.items():
                        setattr(self, name, value)
                    raise
        return self

    def set_annotations(self, annotations=None, y=None):
        """Use these labels (and, for DNE and MFA, must- and cannot-links).

        Re-solves at once if the run has been solved. Labels from
        ``annotations`` win over ``y`` where both label a point.

        Raises
        ------
        ValueError
            When the labels cannot define the label cost (see
            :func:`nbembed.spectral.costs.check_labels_for_cost`); the run
            keeps its previous labels.
        """
        if self.label_kind is None:
            return self
        labels, must, cannot = merge_labels(y, annotations, self.X.shape[0])
        built = self._label_cost(labels, must, cannot)
        uses_self = self.label_cost == selection.SELF_LABEL_COST and must is None \
            and cannot is None
        self_cost = self._self_label_cost(labels) if uses_self else None
        with _config.KERNEL_LOCK:
            self.labels = labels
            self._links = (must, cannot)
            self._label, self._M_label, self._label_scatter = built
            # SELF ignores links: with links (or labels SELF cannot use) the
            # run returns to its own label cost.
            self._self_cost = self_cost
            self._wants_self_cost = self_cost is not None
            self.label_cost = selection.SELF_LABEL_COST if self_cost is not None else None
            if self.iteration:
                self._solve()
        return self

    # -- internals -----------------------------------------------------------
    def _label_cost(self, labels, must, cannot, kind=None):
        kind = kind or self.label_kind
        if kind is None:
            return None, None, 0.0
        if kind == "lfda":
            must = cannot = None
        label = costs.label_cost(self.X, labels, kind, self.n_neighbors, must, cannot,
                                 scales=self.scales)
        return label, costs.laplacian_form(self.X, label.cost), \
            costs.weighted_scatter(self.X, label.cost)

    def _set_labels(self, labels, must, cannot):
        self.labels = labels
        self._links = (must, cannot)
        self._label, self._M_label, self._label_scatter = self._label_cost(labels, must, cannot)
        self._self_cost = self._self_label_cost(labels) if self._wants_self_cost else None

    def _self_label_cost(self, labels):
        """SELF's label cost (LFDA's) for these labels; None where LFDA cannot use them
        (fewer than two labelled classes, or a class too large for its dense weights)."""
        try:
            return self._label_cost(labels, None, None, kind=selection.SELF_LABEL_COST)
        except (ValueError, MemoryError):
            return None

    def select_parameters(self, names):
        """Choose ``names`` by cross-validation on the labelled points; set and return them.

        Candidates come from :func:`nbembed.spectral.selection.candidate_grid`
        and are scored by :func:`nbembed.spectral.selection.cross_validate`
        (hide a fold of the labels, solve, predict the hidden points by 1-NN).
        The run keeps its labels and is left unsolved as it was.

        Parameters
        ----------
        names : iterable of str
            Among "gamma", "hadamard_power" and "beta".

        Returns
        -------
        chosen : dict
            The values set; those of :func:`nbembed.spectral.selection.fallback`
            when too few points are labelled to hide any.
        results : dict
            Every candidate's score (see ``cross_validate``).
        """
        labels = self.labels
        must, cannot = self._links

        def set_labels(hidden):
            self._set_labels(hidden, must, cannot)

        def solve(candidate):
            self.label_cost = None
            for name, value in candidate.items():
                setattr(self, name, value)
            return self.X @ self._axes(*self._matrices())[0].T

        semi_supervised = self._label is not None and self.neighbor_graph is not None
        # SELF joins the twin of a learner with another label cost, unless
        # links were given (SELF ignores them) or LFDA cannot use the labels.
        eligible = (semi_supervised and self.label_kind != selection.SELF_LABEL_COST
                    and must is None and cannot is None)
        self_cost = self._self_label_cost(labels) if eligible else None
        add_self = self_cost is not None
        candidates = selection.candidate_grid(names, self.X.shape[1], semi_supervised, add_self)
        with _config.KERNEL_LOCK:
            self._wants_self_cost = add_self  # the folds build SELF's cost for their labels
            try:
                best, results = selection.cross_validate(solve, set_labels, labels, candidates)
            finally:
                self.label_cost = None
                self._wants_self_cost = False
                self._set_labels(labels, must, cannot)
            chosen = best if best is not None else selection.fallback(names, semi_supervised)
            for name, value in chosen.items():
                setattr(self, name, value)
            if self.label_cost is not None:  # the choice fell on SELF
                self._wants_self_cost = True
                self._self_cost = self_cost
        return chosen, results

    def _neighbor_forms(self):
        """(Laplacian form, degree form, weighted scatter) of (C^u)^(o r), cached by r."""
        r = self.hadamard_power
        if r not in self._neighbor_cache:
            if len(self._neighbor_cache) >= NEIGHBOR_CACHE_SIZE:
                self._neighbor_cache.pop(next(iter(self._neighbor_cache)))
            W = knn_graphs.hadamard_power(self.neighbor_graph, r)
            L = costs.laplacian_form(self.X, W)
            self._neighbor_cache[r] = (L, costs.degree_form(self.X, W), float(np.trace(L)))
        return self._neighbor_cache[r]

    def _matrices(self):
        """The cost and constraint matrices M_C, M_B in the data basis."""
        dim = self.X.shape[1]
        identity = np.eye(dim)
        label, M_label, label_scatter = self._label, self._M_label, self._label_scatter
        if self.label_cost is not None:
            label, M_label, label_scatter = self._self_cost
        if label is not None:
            M_C = M_label.copy()
            M_B = identity if label.constraint is None else label.constraint
            self.neighbor_weight = self.constraint_weight = 0.0
            if self.neighbor_graph is not None:
                L_u, D_u, scatter_u = self._neighbor_forms()
                self.neighbor_weight = self.constraint_weight = self.gamma
                if self.gamma_scale == "relative":
                    if label_scatter > 0 and scatter_u > 0:
                        self.neighbor_weight *= label_scatter / scatter_u
                    self.constraint_weight *= np.trace(M_B) / max(np.trace(D_u), _TINY)
                M_C = M_C + self.neighbor_weight * L_u
                if self.constraint == "label+neighbor":
                    M_B = M_B + self.constraint_weight * D_u
        elif self.neighbor_graph is not None:
            M_C, M_B, _ = self._neighbor_forms()
            self.neighbor_weight = 1.0
        else:
            M_C, M_B = np.zeros((dim, dim)), identity
        if self.beta > 0:
            if self._total_scatter is None:
                self._total_scatter = costs.scatter(self.X)
            M_C = (1.0 - self.beta) * M_C + self.beta * identity
            M_B = (1.0 - self.beta) * M_B + self.beta * self._total_scatter
        return M_C, M_B

    def _axes(self, M_C, M_B):
        """The solution A (n_components, r), scaled as ``axis_scaling`` says, its
        eigenvalues and the ridge."""
        if not (np.all(np.isfinite(M_C)) and np.all(np.isfinite(M_B))):
            raise ValueError(
                f"{self.name}'s eigenproblem is not finite: the neighbourhood weights raised to "
                f"hadamard_power = {self.hadamard_power:g} and weighted by gamma = "
                f"{self.gamma:g} under- or overflow. Use a hadamard_power and a gamma on the "
                f"order of 1 (the sliders go to {HADAMARD_POWER.slider[1]:g} and "
                f"{GAMMA.slider[1]:g}).")
        A, mu, eps = solver.solve(M_C, M_B, self.n_components, self.reg)
        if self.axis_scaling == "unit":
            A = A / np.linalg.norm(A, axis=1, keepdims=True)
        return A, mu, eps

    def _solve(self):
        M_C, M_B = self._matrices()
        A, mu, eps = self._axes(M_C, M_B)
        Z = self.X @ A.T
        signs = solver.align(Z, self._Z) if self.iteration else solver.orient(Z)
        self.components = A * signs[:, None]
        self.eigenvalues, self.ridge = mu, eps
        self._Z = Z * signs
        self.history.append(dict(iteration=1, cost=float(np.trace(A @ M_C @ A.T)),
                                 neighbor_weight=self.neighbor_weight,
                                 constraint_weight=self.constraint_weight,
                                 seconds=time.perf_counter() - self._started,
                                 **self.get_params()))
