"""The run protocol: a resumable optimization of an embedding.

``run = method.prepare(X, ...)`` builds one; ``run.step(n)`` advances it n
iterations and returns promptly; ``run.set_params(alpha=...)`` changes a live
parameter and continues from the current embedding. The widget and the
teaching notebooks talk to runs only through this interface.

A run follows the classic t-SNE schedule: ``exaggeration_iter`` iterations of
early exaggeration (attraction multiplied, momentum 0.5) with the gradient
optimizer, then the method's main optimizer. It checks every update for
non-finite values and, for the fixed-point optimizer, watches the cost: on
divergence it restores the last good embedding, damps the step and carries on,
so a user never sees NaN.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass

import numpy as np

from .. import _config
from .._validation import check_number
from .optimizers import FixedPoint, MomentumGains
from .protocol import Run

logger = logging.getLogger("nbembed")

#: A cost rise by more than this fraction between two checks of a fixed-point
#: run counts as divergence.
DIVERGENCE_RISE = 0.05


@dataclass(frozen=True)
class LiveParameter:
    """A parameter that may change while a run is going on.

    The accepted values form the interval from ``low`` to ``high``; each end
    is included unless ``low_open`` / ``high_open`` says otherwise, and an
    infinite end is always open. The run, the estimator that makes it and the
    Explorer's sliders all check values with :meth:`validate`, so they accept
    the same values.

    Attributes
    ----------
    name : str
    low, high : float
        Ends of the accepted interval (``high`` may be ``math.inf``).
    slider : tuple of float
        The range a slider should show by default (inside the interval).
    step : float
        Slider resolution.
    description : str
        One line for a tooltip.
    label : str
        Short display name (a Greek letter, say); defaults to ``name``.
    allows_auto : bool
        If True, ``None`` is accepted and means "let the method choose"
        (for example Mbed's annealed λ); a widget shows an "auto" toggle.
    low_open, high_open : bool
        Whether ``low`` / ``high`` itself is excluded: Mbed's λ lies in
        (0, inf), so ``low_open=True``.
    """

    name: str
    low: float
    high: float
    slider: tuple
    step: float
    description: str
    label: str = ""
    allows_auto: bool = False
    low_open: bool = False
    high_open: bool = False

    @property
    def display_name(self):
        return self.label or self.name

    @property
    def interval(self):
        """The accepted interval as text, such as ``"(0, inf)"``."""
        left = "(" if self.low_open or math.isinf(self.low) else "["
        right = ")" if self.high_open or math.isinf(self.high) else "]"
        return f"{left}{self.low:g}, {self.high:g}{right}"

    def validate(self, value):
        """Return ``value`` as a float (or None where automatic is allowed),
        or raise naming the accepted range.

        Raises
        ------
        TypeError
            For a value that is not a real number (or None where ``allows_auto``).
        ValueError
            For NaN or a value outside the interval.
        """
        if value is None and self.allows_auto:
            return None
        return check_number(value, self.name,
                            low=None if math.isinf(self.low) else self.low,
                            high=None if math.isinf(self.high) else self.high,
                            low_open=self.low_open, high_open=self.high_open)


class EmbeddingRun(Run):
    """The run of the SNE-family objectives (HSSNE and its special cases, SNE).

    The objective gives the gradient (with the attraction exaggerated on
    request, and the per-point step scales of the fixed-point update where it
    has them) and the cost; the run owns the schedule, the optimizers and
    the recovery from divergence. Its name, live parameters and annotation
    kinds are the objective's.

    Parameters
    ----------
    objective : Objective
        For example :class:`~nbembed.objectives.hssne.HSSNEObjective`.
    Y0 : ndarray (n, d)
        Initial embedding.
    n_iter : int
        Length of the default schedule (``fit`` runs this many iterations).
    optimizer : {"gradient", "fixed-point"}
        Main-phase optimizer.
    learning_rate : float
        Step size of the gradient optimizer.
    exaggeration_learning_rate : float, optional
        Its step size during early exaggeration; ``learning_rate`` by default.
    exaggeration : float
    exaggeration_iter : int
    momentum : tuple of float
        Momentum during and after early exaggeration.
    fixed_point_momentum : float
        Heavy-ball momentum of the accelerated fixed-point update (0 = eq. 14).
    cost_every : int
        Evaluate the cost every this many iterations (and at the end of every
        ``step`` call). The interval never depends on timing, so runs with
        the same inputs are identical.
    max_step_norm : float or None
        Longest step of a point per iteration of the gradient optimizer
        (see :class:`MomentumGains`).
    """

    def __init__(self, objective, Y0, *, n_iter, optimizer, learning_rate,
                 exaggeration_learning_rate=None,
                 exaggeration=12.0, exaggeration_iter=250, momentum=(0.5, 0.8),
                 fixed_point_momentum=0.0, cost_every=10, max_step_norm=None):
        self.objective = objective
        self.name = objective.name
        self.live_parameters = objective.live_parameters
        self.annotation_kinds = objective.annotation_kinds
        self._Yt = np.ascontiguousarray(np.asarray(Y0, dtype=np.float64).T)
        self._grad = np.empty_like(self._Yt)
        self.n_iter = int(n_iter)
        self.optimizer = optimizer
        self.exaggeration = float(exaggeration)
        self.exaggeration_iter = int(exaggeration_iter)
        self.momentum = momentum
        self.record_every = int(cost_every)
        self.iteration = 0
        self.history = []
        self.recoveries = 0
        self.learning_rates = (float(learning_rate if exaggeration_learning_rate is None
                                     else exaggeration_learning_rate), float(learning_rate))
        self._step_scale = 1.0  # halved by every recovery from divergence
        self._gradient_descent = MomentumGains(self._Yt.shape, learning_rate,
                                               max_step_norm=max_step_norm)
        self._fixed_point = FixedPoint(self._Yt.shape, momentum=fixed_point_momentum)
        self._good_Yt = self._Yt.copy()
        self._good_cost = None
        self._started = time.perf_counter()

    # -- state ---------------------------------------------------------------
    @property
    def embedding(self):
        """A copy of the current embedding, shape (n_samples, n_components)."""
        return self._Yt.T.copy()

    @property
    def n_samples(self):
        return self._Yt.shape[1]

    @property
    def cost(self):
        """The objective at the current embedding (computed now)."""
        with _config.KERNEL_LOCK:
            return float(self._cost(self._Yt))

    def get_params(self):
        """Current values of the live parameters (the objective's)."""
        return self.objective.get_params()

    def __getattr__(self, name):
        # The live parameters read as attributes, as on the other runs (run.alpha).
        if name in self.__dict__.get("live_parameters", {}):
            return getattr(self.objective, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # -- control -------------------------------------------------------------
    def set_params(self, **params):
        """Change live parameters and continue from the current embedding.

        Parameters
        ----------
        **params
            Names from ``live_parameters``.

        Returns
        -------
        self

        Raises
        ------
        ValueError, TypeError
            For an unknown name or a value outside its range; nothing changes.
        """
        checked = self.check_params(params)
        with _config.KERNEL_LOCK:
            self.objective.set_params(**checked)
            # The objective changed: old momentum and the divergence baseline
            # belong to the old objective.
            self._gradient_descent.reset()
            self._fixed_point.reset()
            self._good_cost = None
        return self

    def set_annotations(self, annotations=None, y=None):
        """Use these labels and constraints from the next iteration on; the
        embedding is kept.

        Parameters
        ----------
        annotations : Annotations, optional
        y : array-like of int, optional
            Labels with -1 for unlabelled points.

        Returns
        -------
        self
        """
        with _config.KERNEL_LOCK:
            self.objective.set_annotations(annotations, y)
            self._good_cost = None
        return self

    # -- internals -----------------------------------------------------------
    def _gradient(self, Yt, exaggeration, grad):
        self.objective.iteration = self.iteration
        return self.objective.gradient(Yt, grad, exaggeration)

    def _cost(self, Yt):
        self.objective.iteration = self.iteration
        return self.objective.value(Yt)

    def _schedule(self):
        if self.iteration < self.exaggeration_iter:
            return self.exaggeration, self.momentum[0], "gradient"
        return 1.0, self.momentum[1], self.optimizer

    def _iterate(self):
        exaggeration, momentum, optimizer = self._schedule()
        scales = self._gradient(self._Yt, exaggeration, self._grad)
        if optimizer == "fixed-point":
            self._fixed_point.step(self._Yt, self._grad, scales, exaggeration)
        else:
            exaggerated = self.iteration < self.exaggeration_iter
            self._gradient_descent.learning_rate = \
                self._step_scale * self.learning_rates[0 if exaggerated else 1]
            self._gradient_descent.step(self._Yt, self._grad, momentum)
        self._Yt -= self._Yt.mean(axis=1, keepdims=True)
        if not np.all(np.isfinite(self._Yt)):
            self._recover("non-finite embedding")
        return {}

    def _record(self, stats):
        cost = float(self._cost(self._Yt)) if np.all(np.isfinite(self._Yt)) else math.inf
        exaggeration, _, optimizer = self._schedule()
        watch = optimizer == "fixed-point" and self._good_cost is not None
        if not math.isfinite(cost) or (watch and cost > self._good_cost * (1 + DIVERGENCE_RISE)):
            self._recover(f"cost {cost:.4g}, last good {self._good_cost}")
            cost = float(self._cost(self._Yt))
        else:
            self._good_Yt[:] = self._Yt
            self._good_cost = cost if optimizer == "fixed-point" else None
        record = dict(iteration=self.iteration, cost=cost,
                      grad_norm=float(np.sqrt(np.sum(self._grad ** 2))) if self.iteration else
                      math.nan,
                      exaggeration=exaggeration, optimizer=optimizer,
                      seconds=time.perf_counter() - self._started, **self.get_params())
        self.history.append(record)
        logger.info("%s iteration %d: cost %.5f", self.name, self.iteration, cost)

    def _recover(self, reason):
        """Go back to the last good embedding and take smaller steps from there."""
        self.recoveries += 1
        logger.warning("%s diverged at iteration %d (%s); restored the last good embedding "
                       "and halved the step.", self.name, self.iteration, reason)
        self._Yt[:] = self._good_Yt
        self._fixed_point.reset()
        self._fixed_point.relaxation *= 0.5
        self._gradient_descent.reset()
        self._step_scale *= 0.5
