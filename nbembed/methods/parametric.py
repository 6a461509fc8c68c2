"""Parametric Embedding (Iwata, Saito, Ueda, Stromsten, Griffiths & Tenenbaum, 2007).

Objects and classes are embedded together from class posteriors p(c_k | x_n):
the embedding's own posteriors, a unit-variance Gaussian mixture centred on the
class positions phi_k, should match them (see :mod:`nbembed._kernels.parametric`
for the objective and its derivatives).

The optimization is the paper's alternation. Given the class positions Phi,
every object's problem is strictly convex and independent of the others: damped
Newton steps solve all of them (in parallel, O(n K) per sweep). The class
positions then take one L-BFGS step on F(Phi) = min_R J(R, Phi), whose gradient
is dJ/dPhi at the solved R (the envelope theorem); the step length comes from
a strong Wolfe line search, each trial re-solving R from the current one. The
step is :class:`~nbembed.optim.descent.LineSearchDescent` with L-BFGS
directions (:mod:`nbembed.optim.directions`) and the search of
:mod:`nbembed.optim.line_search` with scipy's usual constants (``LINE_SEARCH``).
One such round is one iteration of the run.

Pinned objects (``run.pin``) are left out of the Newton solves; pinned classes
(``run.pin_classes``) have their rows of dJ/dPhi zeroed, so the L-BFGS step
moves only the free ones. Objects that are not pinned are solved exactly in
every round: ``run.move`` of a free object only changes the start of its
solve, which ends where its optimum for the current classes is.
"""

from __future__ import annotations

import logging
import math
import warnings

import numpy as np

from .. import _config
from .._estimator import check_is_fitted
from .._kernels import parametric as kernels
from .._row_products import project
from .._validation import check_data, check_new_data, check_number, check_option, \
    check_random_state
from ..objectives.parametric import ETA_PHI, ETA_R, MAX_NEWTON, NEWTON_TOL, ParametricObjective
from ..optim import LineSearchRun
from ..optim.directions import LBFGS
from ..optim.line_search import WolfeSettings
from ..optim.pinning import Pins
from ..posteriors import check_posteriors, check_priors
from ._base import EmbeddingEstimator, enable_verbose_logging, pinned_start

logger = logging.getLogger("nbembed")

#: Curvature pairs kept by the L-BFGS step for Phi. Phi has K d numbers (20
#: for ten classes in 2-D); with at least that many pairs the estimate can hold
#: curvature in every direction. Measured with eta_phi = 50: 10 pairs took 108 and 136
#: rounds at n = 10^4 and 10^5, 40 pairs 62 and 86.
LBFGS_MEMORY = 40
#: The line search for Phi: sufficient decrease 1e-4, curvature 0.9, trial steps
#: at most doubling, at most 20 solves of R per round (scipy's usual settings).
#: A search from steepest descent first tries a move of length at most 1.
LINE_SEARCH = WolfeSettings(c1=1e-4, c2=0.9, max_evaluations=20, growth=2.0)
#: Standard deviation of the random class positions at the start.
INIT_CLASS_SCALE = 1.0
#: ``eta_phi="auto"`` is this times n: the paper's eta_phi = 50 for its 5000
#: web pages. The data term grows with n and the class term does not, so a
#: fixed eta_phi squeezes the classes into the object cloud for small n and
#: lets them drift apart for large n; a weight proportional to n keeps the
#: balance of the paper's experiment (docs/parametric-embedding.md).
AUTO_ETA_PHI_PER_OBJECT = 0.01


class ParametricEmbeddingRun(LineSearchRun):
    """A resumable Parametric Embedding optimization.

    One iteration is one round of the alternation: every object solved by
    Newton's method for the current class positions, then one L-BFGS step
    for the class positions (on :class:`~nbembed.objectives.parametric.ParametricObjective`).
    Built by :meth:`ParametricEmbedding.prepare`.

    Parameters
    ----------
    objective : ParametricObjective
        The cost, with the given class posteriors and the starting objects
        (only a warm start: R is solved exactly).
    Phi0 : ndarray (n_classes, n_components)
        Starting class positions.
    tol : float
        Converged when ‖dJ/dPhi‖ / n_samples <= tol.
    n_iter : int
        Most rounds of the default schedule.
    annotations : Annotations, optional
        Soft labels blended into the given posteriors.

    Attributes
    ----------
    converged : bool
        True once the class gradient is below ``tol`` or no step improves J.
    history : list of dict
        Per round: ``iteration``, ``cost`` (J), ``kl`` (mean KL divergence per
        object), ``grad_norm`` (‖dJ/dPhi‖ / n), ``newton_steps`` (mean per
        object over the round's solves), ``evaluations`` (solves of R in the
        round), ``step_length``, live parameters and ``seconds``.
    """

    def __init__(self, objective, Phi0, *, tol, n_iter, annotations=None):
        # The variables are Phi; every evaluation solves R for it.
        self._Phi = np.array(Phi0, dtype=np.float64, order="C")
        super().__init__(objective, self._Phi, LBFGS(LBFGS_MEMORY), n_iter=n_iter,
                         line_search=LINE_SEARCH, first_step="unit_length",
                         continued_step="unit")
        self.tol = float(tol)
        self.converged = False
        if annotations is not None:
            objective.set_annotations(annotations)

    # -- state ---------------------------------------------------------------
    @property
    def P(self):
        """The posteriors in use (the given ones with annotations blended in)."""
        return self.objective.P

    @property
    def embedding(self):
        """A copy of the object positions, shape (n_samples, n_components)."""
        return self.objective.R.copy()

    @property
    def n_samples(self):
        return self.objective.R.shape[0]

    @property
    def anchors(self):
        """A copy of the class positions phi_k, shape (n_classes, n_components)."""
        return self._Phi.copy()

    @property
    def membership(self):
        """The embedding's class posteriors p(c_k | r_n), shape (n_samples, n_classes)."""
        with _config.KERNEL_LOCK:
            return self.objective.membership(self._Phi)

    @property
    def done(self):
        return self.converged or self.iteration >= self.n_iter

    @property
    def cost(self):
        """J at the current positions (computed now if needed)."""
        with _config.KERNEL_LOCK:
            return self._objective()[0]

    # -- pinned objects and classes --------------------------------------------
    @property
    def pinned_classes(self):
        """Indices of the pinned classes, sorted, int64."""
        return self._class_pins.indices.copy()

    def pin_classes(self, indices, positions=None):
        """Hold class positions still (at ``positions``, or where they are).

        As :meth:`pin` for objects: ``indices`` are class indices and
        ``positions`` has shape (len(indices), n_components). Returns self.
        """
        return self._hold(self._class_pins, self._class_variables, indices, positions,
                          self._restart_descent)

    def unpin_classes(self, indices=None):
        """Let pinned classes move again (all of them by default). Returns self."""
        return self._release(self._class_pins, indices, self._restart_descent)

    def move_classes(self, indices, positions):
        """Place classes (pinned or not) at ``positions``; the run continues from
        there (the L-BFGS memory is cleared). Returns self."""
        return self._place(self._class_pins, self._class_variables, indices, positions,
                           self._restart_descent)

    @property
    def _class_pins(self):
        return self._pins_kept("_classes_held", lambda: Pins(self._Phi.shape[0], "class"))

    def _class_variables(self):
        return self._Phi.T

    def _point_variables(self):
        return self.objective.R.T

    def _mask_variables(self, grad):
        pinned = self._class_pins.indices
        if pinned.size:
            grad[pinned] = 0.0

    def _mask_forces(self, forces):
        super()._mask_forces(forces)
        forces.anchors.mask(self._class_pins.indices)

    def _pins_changed(self, indices):
        self.objective.frozen[:] = False
        self.objective.frozen[self._point_pins.indices] = True
        self._restart_descent()

    # -- internals -----------------------------------------------------------
    def _objective(self):
        """(J, dJ/dPhi) at the current R, which need not be solved yet."""
        if self._descent.f is not None:
            return self._descent.f, self._descent.g.reshape(self._Phi.shape)
        return self.objective.value_here(self._Phi)

    def _small(self, grad):
        return float(np.linalg.norm(grad)) <= self.tol * self.n_samples

    def _iterate(self):
        objective = self.objective
        before = objective.evaluations, objective.newton_steps
        stats = dict(step_length=0.0)
        if self._descent.evaluate():
            objective.accept(self._descent.info)
        if self._small(self._descent.g):
            self.converged = True
        else:
            result = self._descent.iterate()
            if result.moved:
                objective.accept(self._descent.info)
                stats["step_length"] = result.step_length
                self.converged = self._small(self._descent.g)
            else:
                # Not even a steepest-descent step lowers J: a minimum to rounding level.
                self.converged = True
        stats.update(evaluations=objective.evaluations - before[0],
                     newton_steps=objective.newton_steps - before[1])
        return stats

    def _record(self, stats):
        J, grad = self._objective()
        n = self.n_samples
        # PE has no early exaggeration; the key keeps callbacks written for the
        # SNE-family runs working.
        self._append_record(J, kl=self.objective.kl_per_object(J, self._Phi),
                            grad_norm=float(np.linalg.norm(grad)) / n,
                            newton_steps=stats.get("newton_steps", 0) / n,
                            evaluations=stats.get("evaluations", 0),
                            step_length=stats.get("step_length", 0.0),
                            converged=self.converged, exaggeration=1.0)


class ParametricEmbedding(EmbeddingEstimator):
    """Parametric Embedding: objects and classes embedded together from class posteriors.

    Finds object positions r_n and class positions phi_k such that the
    posteriors of a unit-variance Gaussian mixture centred on the classes,
    p(c_k | r_n) proportional to p(c_k) exp(-‖r_n - phi_k‖^2 / 2), match the
    given p(c_k | x_n). Minimizes

    J = -sum_n sum_k p(c_k | x_n) log p(c_k | r_n)
    + eta_r sum_n ‖r_n‖^2 + eta_phi sum_k ‖phi_k‖^2

    by alternating exact Newton solves for all objects with L-BFGS steps for
    the classes. Each round costs O(n K).

    Parameters
    ----------
    n_components : int, default=2
        Dimension of the embedding.
    eta_r : float, default=0.1
        Weight of the objects' pull toward the origin, > 0. It makes each
        object's problem strictly convex (a unique position given the
        classes) and bounds how far confident objects move out. Live.
    eta_phi : float or "auto", default="auto"
        Weight of the classes' pull toward the origin, >= 0. "auto" is
        0.01 n: the paper's 50 at its 5000 objects, and the same balance
        between the terms of J at any n. A fixed weight competes with a data
        term that grows with n: for a few hundred objects 50 squeezes the
        classes inside the object cloud, for very many it hardly holds them
        (and the rounds to converge grow). Live (as a number).
    tol : float, default=1e-6
        Stop when ‖dJ/dPhi‖ / n_samples <= tol (every object is solved to
        ‖dJ/dr_n‖ <= 1e-9 in every round).
    max_iter : int, default=500
        Most rounds of the alternation.
    init : "random" or ndarray (n_classes, n_components), default="random"
        Starting class positions: standard normal (as in the paper), or given.
        Object positions need no start: they are solved exactly.
    normalize : bool, default=False
        Divide each row of P by its sum instead of requiring rows that sum to 1
        (for non-negative scores such as counts); rows of zeros become uniform.
    random_state : int, RandomState or None
    verbose : bool, default=False
        Log J per round through the ``nbembed`` logger.

    Attributes
    ----------
    embedding_ : ndarray (n_samples, n_components)
        Object positions r_n.
    class_embedding_ : ndarray (n_classes, n_components)
        Class positions phi_k.
    membership_ : ndarray (n_samples, n_classes)
        The embedding's posteriors p(c_k | r_n).
    priors_ : ndarray (n_classes,)
    eta_r_, eta_phi_ : float
        The weights at the end of the run ("auto" resolved; live changes
        included). ``transform`` uses ``eta_r_``.
    objective_ : float
        J at the end.
    kl_divergence_ : float
        Mean over objects of KL(p(. | x_n) || p(. | r_n)).
    n_iter_ : int
        Rounds run.
    converged_ : bool
        True when the run ended settled at a minimum of its cost (its cost changed by at
        most 1e-5 of itself per iteration between the last two records, or the class
        gradient fell below ``tol``, or no step lowered J) and did not end with a cost
        more than 5% above the one it started from (which warns); False means more
        iterations may still change the embedding (raise ``max_iter``). See
        ``nbembed.optim.run.RunOutcome``.
    n_recoveries_ : int
        How often the optimization diverged and went back to its last good
        embedding (a ``RuntimeWarning`` says so after ``fit``).
    history_ : list of dict
    n_features_in_ : int
        Number of classes K.

    References
    ----------
    T. Iwata, K. Saito, N. Ueda, S. Stromsten, T. L. Griffiths, J. B. Tenenbaum.
    Parametric embedding for class visualization. Neural Computation 19, 2007.

    Examples
    --------
    >>> import numpy as np
    >>> from nbembed.methods.parametric import ParametricEmbedding
    >>> P = np.random.default_rng(0).dirichlet([0.3, 0.3, 0.3], size=200)
    >>> pe = ParametricEmbedding(random_state=0).fit(P)
    >>> pe.embedding_.shape, pe.class_embedding_.shape
    ((200, 2), (3, 2))
    """

    live_parameters = ParametricObjective.live_parameters
    annotation_kinds = ParametricObjective.annotation_kinds

    def __init__(self, n_components=2, *, eta_r=0.1, eta_phi="auto", tol=1e-6, max_iter=500,
                 init="random", normalize=False, random_state=None, verbose=False):
        self.n_components = n_components
        self.eta_r = eta_r
        self.eta_phi = eta_phi
        self.tol = tol
        self.max_iter = max_iter
        self.init = init
        self.normalize = normalize
        self.random_state = random_state
        self.verbose = verbose

    def _check_params(self):
        return dict(
            n_components=check_number(self.n_components, "n_components", low=1, integer=True),
            eta_r=ETA_R.validate(self.eta_r),
            eta_phi=(check_option(self.eta_phi, "eta_phi", ("auto",))
                     if isinstance(self.eta_phi, str) else ETA_PHI.validate(self.eta_phi)),
            tol=check_number(self.tol, "tol", low=0, low_open=True),
            max_iter=check_number(self.max_iter, "max_iter", low=0, integer=True),
        )

    def _class_start(self, P, n_components, R0, class_init, rng):
        K = P.shape[1]
        if class_init is not None:
            return self._checked_positions(class_init, (K, n_components), "class_init")
        if R0 is not None:
            # Each class starts at the posterior-weighted mean of its objects.
            weight = P.sum(axis=0)
            return (P.T @ R0) / np.where(weight > 0, weight, 1.0)[:, None]
        if isinstance(self.init, str):
            check_option(self.init, "init", ("random",))
            return INIT_CLASS_SCALE * rng.standard_normal((K, n_components))
        return self._checked_positions(self.init, (K, n_components), "init")

    @staticmethod
    def _checked_positions(value, shape, name):
        value = check_data(value, name=name)
        if value.shape != shape:
            raise ValueError(f"{name} must have shape {shape}; got {value.shape}.")
        return value.copy()

    def prepare(self, P, y=None, *, priors=None, annotations=None, init=None, class_init=None):
        """Check the posteriors and starting positions; return a resumable run.

        Parameters
        ----------
        P : array-like (n_samples, n_classes)
            Class posteriors p(c_k | x_n): non-negative, rows summing to 1.
        y : ignored
            Present for scikit-learn compatibility; labels reach Parametric
            Embedding through ``annotations`` (``Annotations.from_labels(y)``).
        priors : array-like (n_classes,), optional
            Class priors p(c_k) of the embedding's mixture; equal by default.
        annotations : Annotations, optional
            Soft labels blended into P (see :meth:`~nbembed.objectives.parametric.ParametricObjective.set_annotations`).
        init : ndarray (n_samples, n_components), optional
            Starting object positions; the classes then start at the
            posterior-weighted means of their objects.
        class_init : ndarray (n_classes, n_components), optional
            Starting class positions; overrides ``init`` and the ``init``
            parameter.

        Returns
        -------
        ParametricEmbeddingRun
        """
        params = self._check_params()
        P = check_posteriors(P, normalize=self.normalize)
        priors = check_priors(priors, P.shape[1])
        if self.verbose:
            enable_verbose_logging()
        rng = check_random_state(self.random_state)
        d = params["n_components"]
        R0 = None if init is None else self._checked_positions(init, (P.shape[0], d), "init")
        Phi0 = self._class_start(P, d, R0, class_init, rng)
        if R0 is None:
            R0 = P @ Phi0
        eta_phi = params["eta_phi"]
        if eta_phi == "auto":
            eta_phi = AUTO_ETA_PHI_PER_OBJECT * P.shape[0]
        self.n_features_in_ = P.shape[1]
        objective = ParametricObjective(P, R0, priors=priors, eta_r=params["eta_r"],
                                        eta_phi=eta_phi)
        return ParametricEmbeddingRun(objective, Phi0, tol=params["tol"],
                                      n_iter=params["max_iter"], annotations=annotations)

    def fit(self, P, y=None, *, priors=None, annotations=None, init=None, pinned=None,
            callbacks=None):
        """Embed the objects and classes of ``P``; return the fitted estimator.

        Parameters
        ----------
        P : array-like (n_samples, n_classes)
            Class posteriors p(c_k | x_n): non-negative, rows summing to 1
            (see :mod:`nbembed.posteriors` for ways to get them).
        y : ignored
            Present for scikit-learn compatibility.
        priors : array-like (n_classes,), optional
            Class priors p(c_k); equal by default.
        annotations : Annotations, optional
            Soft labels blended into P.
        init : ndarray (n_samples, n_components), optional
            Starting object positions (see :meth:`prepare`).
        pinned : array-like of int, optional
            Objects that stay at their ``init`` positions (``init`` must then
            be given); the classes and the other objects adapt to them.
        callbacks : callable or list of callables, optional
            Called as ``callback(run)`` after each round; True stops.

        Returns
        -------
        self
        """
        pins = pinned_start(pinned, init)
        run = self.prepare(P, y, priors=priors, annotations=annotations, init=init)
        if pins is not None:
            run.pin(*pins)
        run.run(callbacks)
        self._finish_fit(run)
        if not run.converged and run.history and run.iteration >= run.n_iter:
            from sklearn.exceptions import ConvergenceWarning
            warnings.warn(f"Parametric Embedding stopped after max_iter = {run.n_iter} rounds "
                          f"with |dJ/dPhi| / n = {run.history[-1]['grad_norm']:.3g} above tol "
                          f"= {run.tol:g}; raise max_iter or tol.", ConvergenceWarning,
                          stacklevel=2)
        return self

    def fit_transform(self, P, y=None, *, priors=None, annotations=None, init=None,
                      pinned=None, callbacks=None):
        """Fit and return the object positions ``embedding_``."""
        return self.fit(P, y, priors=priors, annotations=annotations, init=init,
                        pinned=pinned, callbacks=callbacks).embedding_

    def transform(self, P):
        """Place new objects with the class positions fixed.

        Each new object's position is the unique minimizer of its own term of
        J (a few Newton steps, O(K) each); objects of the fit get back their
        ``embedding_``.

        Parameters
        ----------
        P : array-like (n_new, n_classes)
            Class posteriors of the new objects.

        Returns
        -------
        ndarray (n_new, n_components)
        """
        check_is_fitted(self, "class_embedding_")
        P = check_new_data(P, name="P")
        K = self.class_embedding_.shape[0]
        if P.shape[1] != K:
            raise ValueError(f"X has {P.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {K} features as input (one column per class of the "
                             f"fit).")
        P = check_posteriors(P, normalize=self.normalize)
        Phi = self.class_embedding_
        R = project(P, Phi.T)  # the start; row by row, so no row depends on the others
        with _config.KERNEL_LOCK:
            kernels.solve(P, R, Phi, np.log(self.priors_), self.eta_r_, NEWTON_TOL, MAX_NEWTON)
        return R

    def _store_fitted(self, run):
        self.embedding_ = run.embedding
        self.class_embedding_ = run.anchors
        self.membership_ = run.membership
        self.priors_ = run.objective.priors.copy()
        self.eta_r_ = run.eta_r
        self.eta_phi_ = run.eta_phi
        last = run.history[-1] if run.history else None
        self.objective_ = last["cost"] if last else run.cost
        self.kl_divergence_ = last["kl"] if last else math.nan
        self.n_iter_ = run.iteration
        self.history_ = run.history
        self._n_features_out = self.embedding_.shape[1]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        return tags
