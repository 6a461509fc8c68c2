"""What every objective offers the optimizers and runs.

An objective is one cost of a method and its gradient, evaluated at variables
the run owns and passes in: for point embeddings the transposed positions,
shape (d, n), the layout the kernels read. It knows nothing of iterations,
schedules or optimizers. Runs change it through :meth:`Objective.set_params`
(the live parameters) and through what the method's schedule needs (NeRV's
neighbourhood widths, Mbed's lambda, ...).
"""

from __future__ import annotations

import numpy as np


class Objective:
    """Base class of the costs in :mod:`nbembed.objectives`.

    Subclasses implement :meth:`value_and_gradient`; first-order optimizers
    that evaluate the cost less often than the gradient use :meth:`gradient`
    and :meth:`value`, which objectives with cheaper separate evaluations
    override.

    Attributes
    ----------
    name : str
        The method's name, shown in logs and in the widget.
    live_parameters : dict
        Name -> :class:`~nbembed.optim.LiveParameter` of the parameters
        :meth:`set_params` accepts.
    annotation_kinds : tuple of str
        The parts of :class:`~nbembed.Annotations` the cost uses.
    iteration : int
        The run's iteration count, set by first-order runs before every
        evaluation (approximations that vary with it read it).
    """

    name = "objective"
    live_parameters: dict = {}
    annotation_kinds: tuple = ()
    #: (name, legend label) of the terms :meth:`forces` returns, in order.
    force_terms: tuple = ()
    iteration = 0

    def value_and_gradient(self, x, grad):  # pragma: no cover - abstract
        """The cost at ``x``; its gradient is written into ``grad`` (x's shape).

        Returns
        -------
        cost : float
        info : object or None
            What else the evaluation found at ``x`` (parts of the cost, state
            solved for x), kept by line-search runs for the accepted point.
        """
        raise NotImplementedError

    def value(self, x):
        """The cost at ``x``."""
        return self.value_and_gradient(x, np.empty_like(x))[0]

    def value_terms(self, x):
        """The cost at ``x`` split into its attraction and the rest, or None.

        ``attraction + rest`` is :meth:`value`, and ``exaggeration * attraction
        + rest`` is, up to a constant, the cost whose gradient :meth:`gradient`
        gives with that ``exaggeration``: what a run descends during early
        exaggeration, and so what it watches for divergence there.

        Returns
        -------
        (attraction, rest) : tuple of float, or None
            None for objectives without an attraction to exaggerate.
        """
        return None

    def gradient(self, x, grad, exaggeration=1.0):
        """Write the gradient at ``x`` into ``grad``.

        ``exaggeration`` multiplies the attraction (early exaggeration) in
        objectives that have one. Returns the per-point scale of the
        fixed-point update where the objective has one, else None.
        """
        if exaggeration != 1.0:
            raise ValueError(f"{self.name} has no attraction to exaggerate.")
        self.value_and_gradient(x, grad)
        return None

    def forces(self, x, indices=None):  # pragma: no cover - abstract
        """The gradient at ``x`` split into its terms, a
        :class:`~nbembed.objectives.forces.Forces` (rows: the points ``indices``,
        all by default)."""
        raise NotImplementedError(f"{self.name} does not split its gradient into terms.")

    def line_search_function(self, shape):
        """``fun(flat) -> (cost, gradient, info)`` over flat variables of ``shape``,
        the form :class:`~nbembed.optim.descent.LineSearchDescent` minimizes."""
        def fun(flat):
            grad = np.empty(shape)
            cost, info = self.value_and_gradient(flat.reshape(shape), grad)
            return cost, grad.reshape(-1), info
        return fun

    def set_annotations(self, annotations=None, y=None):
        """Use these labels and constraints from now on (objectives that read
        none ignore them)."""

    #: Whether work that would stall one evaluation is spread over several, where
    #: the objective has such work (the HSSNE spatial order's renewal); set for
    #: live runs.
    spread_renewals = False

    #: Whether the objective has a ``prepare_annotations`` worth a thread of its own
    #: (see :meth:`nbembed.objectives.hssne.HSSNEObjective.prepare_annotations`);
    #: runs call it only then.
    annotations_aside = False

    def get_params(self):
        """Current values of the live parameters."""
        return {name: getattr(self, name) for name in self.live_parameters}

    def idle_params(self):
        """The live parameters that change nothing now, each with the reason."""
        return {}

    def set_params(self, **checked):
        """Use these (already validated) live parameter values."""
        for name, value in checked.items():
            setattr(self, name, value)
