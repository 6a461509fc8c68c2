"""NeRV and SNeRV: neighbour retrieval visualizers (Venna & Kaski 2007; Peltonen,
Aidos & Kaski 2009).

NeRV embeds so that retrieving each point's neighbours from the display trades
precision against recall: with input neighbourhoods P_i and output
neighbourhoods Q_i of the same width sigma_i it minimizes

    E = tradeoff * sum_i KL(P_i || Q_i) + (1 - tradeoff) * sum_i KL(Q_i || P_i).

tradeoff = 1 is SNE (recall); tradeoff = 0 maximizes smoothed precision.
SNeRV is NeRV on distances of a supervised learning metric
(``LearningMetric`` in :mod:`nbembed.affinity.learning_metric`).

The run (``NeRVRun``) is a plain :class:`~nbembed.optim.Run` rather than
an :class:`~nbembed.optim.EmbeddingRun`: the SNE-family schedule there (early
exaggeration, momentum and gains) multiplies an attraction that NeRV's
precision term does not have, and the paper optimizes with conjugate
gradients, which need a line search. Each iteration here is one quasi-Newton
(L-BFGS, the default) or conjugate-gradient step with a strong Wolfe line
search, done by :class:`~nbembed.optim.descent.LineSearchDescent` (directions
in :mod:`nbembed.optim.directions`, the search in
:mod:`nbembed.optim.line_search`) with NeRV's settings below; see
docs/nerv.md for the measurements behind the default.
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np
from sklearn.base import clone
from sklearn.metrics import pairwise_distances

from .. import _config
from .._kernels import nerv as kernels
from .._kernels.perplexity import conditional_probabilities as calibrate
from .._validation import check_dense_allowed, check_labels, check_number, check_option
from ..affinity import conditional_probabilities
from ..affinity.learning_metric import LearningMetric
from ..optim import LiveParameter, Run
from ..optim.descent import LineSearchDescent, make_directions
from ..optim.line_search import WolfeSettings
from ._base import EmbeddingEstimator, enable_verbose_logging, initial_embedding, \
    validate_input

logger = logging.getLogger("nbembed")

TRADEOFF = LiveParameter("tradeoff", 0.0, 1.0, (0.0, 1.0), 0.05,
                         "0 favours precision (no false neighbours on the display), "
                         "1 recall (no missed neighbours; SNE)", label="tradeoff")

#: The default optimizer and the alternative (docs/nerv.md compares them).
OPTIMIZERS = ("lbfgs", "cg")

#: Function evaluations allowed in one line search: a step stays within a few
#: gradient evaluations, so ``step(1)`` returns promptly.
MAX_LINE_SEARCH_EVALUATIONS = 12

#: Past pairs kept by L-BFGS.
LBFGS_MEMORY = 10

#: Line searches of the two optimizers: quasi-Newton steps need only a loose
#: search (curvature constant 0.9), conjugacy a fairly exact one (0.1). Trial
#: steps grow at most fourfold.
LINE_SEARCHES = {
    "lbfgs": WolfeSettings(c1=1e-4, c2=0.9, max_evaluations=MAX_LINE_SEARCH_EVALUATIONS,
                           growth=4.0),
    "cg": WolfeSettings(c1=1e-4, c2=0.1, max_evaluations=MAX_LINE_SEARCH_EVALUATIONS,
                        growth=4.0),
}

#: Widening starts where the neighbourhoods hold this many times n_neighbors
#: effective neighbours (at most a quarter of the points).
WIDENING_NEIGHBORS_FACTOR = 16.0


# --------------------------------------------------------------------------- the run

def widening_stages(sq_distances, n_neighbors, n_start):
    """Precisions of the widening stages: effective neighbours halving from n_start.

    Each stage is calibrated like the final neighbourhoods (every row gets
    the same entropy), so dense and sparse regions widen alike. Returns a list
    of (effective neighbours, beta) from the widest stage on; empty when
    n_start is not clearly above n_neighbors.
    """
    stages = []
    k = float(n_start)
    while k > 1.5 * n_neighbors:
        with _config.KERNEL_LOCK:
            _, beta = calibrate(sq_distances, math.log(k), True)
        stages.append((k, beta))
        k /= 2.0
    return stages


class NeRVRun(Run):
    """A resumable NeRV optimization (the run protocol of :mod:`nbembed.optim.protocol`).

    Each iteration is one L-BFGS or conjugate-gradient step with a strong Wolfe
    line search (usually one or two cost-and-gradient evaluations). The cost is
    known at every iteration, so every iteration is recorded in ``history``
    with ``cost``, both divergences (``recall_divergence`` = sum_i
    KL(P_i || Q_i), ``precision_divergence`` = sum_i KL(Q_i || P_i)),
    ``tradeoff`` and ``effective_neighbors``. A step is only taken if it lowers the
    cost and the new embedding is finite, so no NaN ever reaches ``embedding``.

    Widening: the first ``anneal_iter`` iterations use broader neighbourhoods,
    in stages of equal length whose effective number of neighbours halves
    from stage to stage (``stages``). Broad neighbourhoods first arrange the
    global layout, narrow ones then refine it, which avoids the poor local
    minima of a start at the final widths (docs/nerv.md). A stage change
    alters the objective: the cost is re-evaluated and recorded, and the
    search directions restart.

    Parameters
    ----------
    P : ndarray (n, n)
        Conditional input neighbourhoods, rows summing to one.
    beta : ndarray (n,)
        1 / sigma_i^2, used in the input and the output space.
    Y0 : ndarray (n, d)
        Starting embedding.
    tradeoff : float
    n_iter : int
        Length of the default schedule.
    optimizer : {"lbfgs", "cg"}
    n_neighbors : float, optional
        The effective number of neighbours P was calibrated with (for display).
    sq_distances : ndarray (n, n), optional
        Squared input distances, needed for widening.
    stages : list of (float, ndarray), optional
        Effective neighbours and precisions of the widening stages, widest first
        (see ``widening_stages``).
    anneal_iter : int
        Iterations spent in the widening stages.
    widening_neighbors : float, optional
        The effective number of neighbours the stages start from (kept to
        rebuild them for new neighbourhoods).
    """

    name = "NeRV"
    live_parameters = {"tradeoff": TRADEOFF}
    annotation_kinds = ()

    def __init__(self, P, beta, Y0, *, tradeoff, n_iter, optimizer="lbfgs", n_neighbors=None,
                 sq_distances=None, stages=(), anneal_iter=0, widening_neighbors=None):
        self.tradeoff = float(tradeoff)
        self.n_neighbors = n_neighbors
        self.widening_neighbors = widening_neighbors
        self.n_iter = int(n_iter)
        self.optimizer = optimizer
        self.iteration = 0
        self.history = []
        self._Yt = np.ascontiguousarray(np.asarray(Y0, dtype=np.float64).T)
        # The first search moves the points by about 1% of the embedding's spread;
        # a search restarted from steepest descent first tries the last move's length.
        self._descent = LineSearchDescent(
            self._objective, self._Yt.reshape(-1), make_directions(optimizer, LBFGS_MEMORY),
            line_search=LINE_SEARCHES[optimizer], first_step="relative", first_move=0.01,
            continued_step="unit" if optimizer == "lbfgs" else "previous_move",
            restart_with_previous_move=True)
        self._started = time.perf_counter()
        self._set_neighbourhoods(P, beta, sq_distances, stages, anneal_iter)

    # -- objective -----------------------------------------------------------
    def _set_neighbourhoods(self, P, beta, sq_distances=None, stages=(), anneal_iter=0):
        """The final neighbourhoods (and the widening stages); evaluates the cost."""
        self.P = np.ascontiguousarray(P, dtype=np.float64)
        self.beta = np.ascontiguousarray(beta, dtype=np.float64)
        self.sq_distances = sq_distances
        self.stages = list(stages) if sq_distances is not None else []
        self.anneal_iter = int(anneal_iter) if self.stages else 0
        self.stage = None
        self._follow_schedule(force=True)

    def _stage_at(self, iteration):
        """Index of the widening stage at ``iteration``, or -1 for the final widths."""
        if iteration >= self.anneal_iter:
            return -1
        return min(iteration * len(self.stages) // self.anneal_iter, len(self.stages) - 1)

    @property
    def effective_neighbors(self):
        """The effective number of neighbours of the current neighbourhoods."""
        return self.n_neighbors if self.stage == -1 else self.stages[self.stage][0]

    def _follow_schedule(self, force=False):
        """Switch to the neighbourhoods of the current stage; True if they changed."""
        stage = self._stage_at(self.iteration)
        if stage == self.stage and not force:
            return False
        if stage == -1:
            self._P, self._beta = self.P, self.beta
            self._logP = kernels.floored_log(self.P)
            self.sq_distances = None          # widening is over: free n^2 floats
        else:
            self._beta = self.stages[stage][1]
            self._P = np.empty_like(self.P)
            self._logP = np.empty_like(self.P)
            with _config.KERNEL_LOCK:
                kernels.widened_neighbourhoods(self.sq_distances, self._beta, 1.0,
                                               math.log(kernels.P_FLOOR), self._P, self._logP)
        positive = self._P[self._P > 0]
        self._p_log_p = float(np.sum(positive * np.log(positive)))
        self.stage = stage
        self._evaluate_here()
        return True

    def _evaluate(self, Yt, grad):
        """Cost at ``Yt``; ``grad`` receives its gradient. Holds the kernel lock."""
        with _config.KERNEL_LOCK:
            cross, kl_qp = kernels.nerv_gradient(Yt, self._P, self._logP, self._beta,
                                                 self.tradeoff, kernels.GRADIENT_CHUNKS, grad)
        recall = self._p_log_p + cross
        self._divergences = (recall, kl_qp)
        return self.tradeoff * recall + (1.0 - self.tradeoff) * kl_qp

    def _objective(self, x):
        """(cost, gradient, divergences) at the flat embedding ``x``."""
        grad = np.empty_like(self._Yt)
        cost = self._evaluate(x.reshape(self._Yt.shape), grad)
        return cost, grad.reshape(-1), self._divergences

    def _evaluate_here(self):
        """The objective changed: evaluate it here and restart the search directions."""
        self._descent.reset()
        self._descent.evaluate()

    def rescale(self):
        """Multiply the embedding by the factor that minimizes the current cost.

        Used on a PCA or random start, whose size is arbitrary whereas the
        output widths are the input's.
        """
        scratch = np.empty_like(self._Yt)
        Y0 = self._Yt.T.copy()
        with _config.KERNEL_LOCK:
            factor = best_scale(lambda Y: self._evaluate(np.ascontiguousarray(Y.T), scratch),
                                Y0, 1.0 / np.sqrt(self._beta))
            self._Yt *= factor
            self._evaluate_here()
        return factor

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
        """The objective at the current embedding."""
        return float(self._descent.f)

    @property
    def divergences(self):
        """(sum_i KL(P_i || Q_i), sum_i KL(Q_i || P_i)) at the current embedding."""
        return tuple(float(v) for v in self._descent.info)

    # -- control -------------------------------------------------------------
    def set_params(self, **params):
        """Change ``tradeoff`` and continue from the current embedding.

        The search direction restarts from the steepest descent of the new
        cost; the embedding does not move until the next ``step``.

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
            if "tradeoff" in checked:
                self.tradeoff = checked["tradeoff"]
            self._evaluate_here()
            if self.history:
                self._record(dict(evaluations=1))
        return self

    # -- internals -----------------------------------------------------------
    def _iterate(self):
        """One line-search step; returns its cost evaluations and the length of the move.

        When even a steepest-descent step finds no lower cost the run is
        converged for this objective: later iterations cost nothing until the
        objective changes (``set_params``, a widening stage, new annotations).
        """
        result = self._descent.iterate()
        return dict(evaluations=result.evaluations, step_length=result.step_length)

    def _after_iteration(self):
        if self._follow_schedule():
            # The objective changed at a widening stage: record its cost here.
            self._record(dict(evaluations=1))

    def _record(self, stats):
        recall, precision = self._descent.info
        record = dict(iteration=self.iteration, cost=float(self._descent.f),
                      tradeoff=self.tradeoff, effective_neighbors=self.effective_neighbors,
                      recall_divergence=float(recall),
                      precision_divergence=float(precision),
                      grad_norm=float(np.sqrt(np.sum(self._descent.g ** 2))),
                      step_length=stats.get("step_length", 0.0),
                      evaluations=stats.get("evaluations", 0),
                      seconds=time.perf_counter() - self._started)
        self.history.append(record)
        logger.info("%s iteration %d: cost %.5f", self.name, self.iteration, record["cost"])


# --------------------------------------------------------------------------- estimators

def best_scale(cost_at, Y0, sigma):
    """The factor c minimizing ``cost_at(c * Y0)``, by a coarse grid and golden sections.

    A PCA or MDS start has the right shape but an arbitrary size, whereas
    NeRV's output neighbourhoods have the input's widths sigma_i. The grid
    spans factors 2^-4 ... 2^12 around the scale where the first coordinate's
    spread equals the median sigma.
    """
    spread = float(np.std(Y0[:, 0])) or 1.0
    base = float(np.median(sigma)) / spread
    logs = np.log(base) + np.log(2.0) * np.arange(-4, 13)
    costs = np.array([cost_at(np.exp(t) * Y0) for t in logs])
    k = int(np.argmin(costs))
    lo, hi = logs[max(k - 1, 0)], logs[min(k + 1, len(logs) - 1)]
    golden = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = hi - golden * (hi - lo), lo + golden * (hi - lo)
    fa, fb = cost_at(np.exp(a) * Y0), cost_at(np.exp(b) * Y0)
    for _ in range(12):
        if fa < fb:
            hi, b, fb = b, a, fa
            a = hi - golden * (hi - lo)
            fa = cost_at(np.exp(a) * Y0)
        else:
            lo, a, fa = a, b, fb
            b = lo + golden * (hi - lo)
            fb = cost_at(np.exp(b) * Y0)
    candidates = [(costs[k], logs[k]), (fa, a), (fb, b)]
    return float(np.exp(min(candidates)[1]))


class _NeRVEstimator(EmbeddingEstimator):
    """What NeRV and SNeRV share: calibration, the starting layout and the run."""

    live_parameters = NeRVRun.live_parameters

    def _check_params(self, n):
        n_components = check_number(self.n_components, "n_components", low=1, integer=True)
        tradeoff = TRADEOFF.validate(self.tradeoff)
        max_iter = check_number(self.max_iter, "max_iter", low=0, integer=True)
        anneal_iter = check_number(self.anneal_iter, "anneal_iter", low=0, integer=True)
        optimizer = check_option(self.optimizer, "optimizer", OPTIMIZERS)
        if self.verbose:
            enable_verbose_logging()
        return n_components, tradeoff, max_iter, anneal_iter, optimizer

    @staticmethod
    def _check_n_neighbors(n_neighbors, n):
        n_neighbors = check_number(n_neighbors, "n_neighbors", low=1, low_open=True)
        if n_neighbors >= n - 1:
            raise ValueError(
                f"n_neighbors = {n_neighbors:g} is too large for n_samples = {n}: the "
                f"effective number of neighbours must be less than n_samples - 1 = {n - 1}. "
                f"Use a smaller n_neighbors, e.g. {max(2.0, min(20.0, (n - 1) / 3)):.0f}.")
        return n_neighbors

    @staticmethod
    def _squared_distances(data, metric):
        check_dense_allowed(data.shape[0], what="NeRV's neighbourhoods",
                            alternative="NeRV is exact over all pairs; embed a subsample")
        if metric == "precomputed":
            return np.square(data)
        if metric == "euclidean":
            D2 = pairwise_distances(data, metric="euclidean", squared=True)
            np.fill_diagonal(D2, 0.0)
            return np.maximum(D2, 0.0)
        return np.square(pairwise_distances(data, metric=metric))

    def _make_run(self, data, metric, n_neighbors, init, run_class=None, **extra):
        n = data.shape[0]
        n_components, tradeoff, max_iter, anneal_iter, optimizer = self._check_params(n)
        n_neighbors = self._check_n_neighbors(n_neighbors, n)
        D2 = self._squared_distances(data, metric)
        # The calibration kernel writes exp(-b d^2), b = 1 / (2 sigma^2) in t-SNE's
        # notation; it is NeRV's precision 1 / sigma_i^2 in exp(-d^2 / sigma_i^2).
        P, beta = conditional_probabilities(np.sqrt(D2), n_neighbors, method="exact",
                                            metric="precomputed")
        n_start = min((n - 1) / 4.0, WIDENING_NEIGHBORS_FACTOR * n_neighbors)
        anneal_iter = min(anneal_iter, max_iter // 3)
        stages = widening_stages(D2, n_neighbors, n_start) if anneal_iter else []
        if not stages:
            anneal_iter, D2 = 0, None
        given = init if init is not None else self.init
        Y0 = initial_embedding(data, given, n_components, self.random_state, metric=metric)
        run = (run_class or NeRVRun)(P, beta, Y0, tradeoff=tradeoff, n_iter=max_iter,
                                     optimizer=optimizer, n_neighbors=n_neighbors,
                                     sq_distances=D2, stages=stages, anneal_iter=anneal_iter,
                                     widening_neighbors=n_start, **extra)
        if isinstance(given, str):
            run.rescale()
        return run

    def _store_fitted(self, run):
        super()._store_fitted(run)
        self.cost_ = run.cost
        self.recall_divergence_, self.precision_divergence_ = run.divergences
        self.affinities_ = run.P
        self.bandwidths_ = 1.0 / np.sqrt(run.beta)


class NeRV(_NeRVEstimator):
    """Neighbour retrieval visualizer: a tunable tradeoff between precision and recall.

    Minimizes

        tradeoff * sum_i KL(P_i || Q_i) + (1 - tradeoff) * sum_i KL(Q_i || P_i)

    where p_ij = exp(-d_ij^2 / sigma_i^2) / sum_k exp(-d_ik^2 / sigma_i^2) are input
    neighbourhoods with sigma_i set so that every P_i has the entropy
    log(n_neighbors), and q_ij the same Gaussian neighbourhoods on the display,
    with the same sigma_i. Exact over all pairs: O(n^2) time and memory.

    Parameters
    ----------
    n_components : int, default=2
        Dimension of the embedding.
    tradeoff : float, default=0.5
        In [0, 1]. 1 is SNE (maximizes smoothed recall: input neighbours stay
        neighbours on the display); 0 maximizes smoothed precision (display
        neighbours were input neighbours). Live: ``run.set_params(tradeoff=...)``.
    n_neighbors : float, default=20
        Effective number of neighbours (the perplexity), 1 < n_neighbors < n_samples - 1.
    metric : str, default="euclidean"
        Input metric (any of :func:`sklearn.metrics.pairwise_distances`), or
        "precomputed" for a square matrix of dissimilarities ``X``.
    optimizer : {"lbfgs", "cg"}, default="lbfgs"
        Search directions: limited-memory BFGS, or Polak-Ribiere conjugate
        gradients as in the paper; both with a Wolfe line search.
    max_iter : int, default=300
        Optimizer iterations of the default schedule.
    anneal_iter : int, default=100
        Iterations (at most a third of ``max_iter``) with widened neighbourhoods
        at the start: stages whose effective number of neighbours halves from
        min(n / 4, 16 * n_neighbors) down to ``n_neighbors``, against poor local
        minima (see ``NeRVRun``). 0 starts at the final widths.
    init : {"pca", "random"} or ndarray, default="pca"
        Starting layout. For "pca" (classical MDS with ``metric="precomputed"``)
        and "random", the size is then chosen to minimize the cost along the
        ray (the output widths are the input's sigma_i, so size matters); an
        array is used as given.
    random_state : int, RandomState or None
    verbose : bool, default=False
        Log the cost of every iteration through the ``nbembed`` logger.

    Attributes
    ----------
    embedding_ : ndarray (n_samples, n_components)
    cost_ : float
        The final cost.
    kl_divergence_ : float
        The final cost as the last history record has it (the same weighted sum
        of KL divergences; the name all nbembed estimators share).
    recall_divergence_, precision_divergence_ : float
        sum_i KL(P_i || Q_i) and sum_i KL(Q_i || P_i) at the end.
    affinities_ : ndarray (n_samples, n_samples)
        The conditional input neighbourhoods P.
    bandwidths_ : ndarray (n_samples,)
        sigma_i.
    n_iter_ : int
    history_ : list of dict
    n_features_in_ : int

    References
    ----------
    J. Venna, S. Kaski. Nonlinear dimensionality reduction as information
    retrieval. AISTATS 2007.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from nbembed.methods.nerv import NeRV
    >>> X, _ = load_iris(return_X_y=True)
    >>> Y = NeRV(tradeoff=0.3, max_iter=20, random_state=0).fit_transform(X)
    >>> Y.shape
    (150, 2)
    """

    annotation_kinds = NeRVRun.annotation_kinds

    def __init__(self, n_components=2, *, tradeoff=0.5, n_neighbors=20, metric="euclidean",
                 optimizer="lbfgs", max_iter=300, anneal_iter=100, init="pca", random_state=None,
                 verbose=False):
        self.n_components = n_components
        self.tradeoff = tradeoff
        self.n_neighbors = n_neighbors
        self.metric = metric
        self.optimizer = optimizer
        self.max_iter = max_iter
        self.anneal_iter = anneal_iter
        self.init = init
        self.random_state = random_state
        self.verbose = verbose

    def prepare(self, X, y=None, annotations=None, init=None):
        """Calibrate the neighbourhoods and the start; return a resumable ``NeRVRun``.

        Parameters are those of ``fit``; ``y`` and ``annotations`` are ignored.
        """
        X = validate_input(X, min_samples=4, metric=self.metric)
        if not isinstance(self.metric, str):
            raise TypeError(f"metric must be a string such as 'euclidean' or 'precomputed'; "
                            f"got {self.metric!r}.")
        self.n_features_in_ = X.shape[1]
        return self._make_run(X.toarray() if hasattr(X, "toarray") else X, self.metric,
                              self.n_neighbors, init)


# --------------------------------------------------------------------------- SNeRV

def metric_targets(y, annotations, n_samples):
    """Keyword arguments for ``LearningMetric.fit`` from labels and annotations.

    Hand-made labels (hard or soft, weighted by their confidence) take
    precedence over ``y`` where both label a point.
    """
    if annotations is None:
        if y is None:
            raise ValueError("SNeRV requires y to be passed, but the target y is None: pass "
                             "class labels (-1 for unlabelled points) or annotations with "
                             "labels.")
        return dict(y=y)
    if annotations.n_samples != n_samples:
        raise ValueError(f"annotations are for {annotations.n_samples} samples but X has "
                         f"{n_samples}.")
    soft = annotations.soft_label_matrix()
    weights = annotations.confidences()
    if y is not None:
        y = check_labels(y, n_samples)
        width = max(soft.shape[1], int(y.max()) + 1)
        soft = np.pad(soft, ((0, 0), (0, width - soft.shape[1])))
        fill = (weights == 0) & (y >= 0)
        soft[fill, y[fill]] = 1.0
        weights = np.where(fill, 1.0, weights)
    return dict(soft_labels=soft, sample_weight=weights)


#: Fewest effective neighbours ``n_neighbors="auto"`` gives (NeRV's default). With
#: many Gaussians the paper's 0.5 n / K falls below what a 2-D map needs to keep a
#: class together: 1500 USPS digits, 80 Gaussians, 9.4 neighbours, twice the
#: held-out error of 20 or 40 (docs/nerv.md).
AUTO_NEIGHBORS_FLOOR = 20.0


def auto_neighbors(n_samples, n_mixture_components):
    """The paper's effective number of neighbours, 0.5 n / K, raised to at least
    ``AUTO_NEIGHBORS_FLOOR`` and kept at most (n - 1) / 3 (and below n - 1 for tiny n)."""
    upper = max((n_samples - 1) / 3.0, 1.5)
    rule = 0.5 * n_samples / n_mixture_components
    return float(min(max(rule, AUTO_NEIGHBORS_FLOOR), upper))


class SNeRVRun(NeRVRun):
    """A resumable SNeRV optimization: NeRV on learning-metric distances.

    ``set_annotations`` re-fits the learning metric on the new labels,
    recomputes all distances and neighbourhoods, and continues from the
    current embedding. That takes as long as the metric's fit and the O(n^2)
    distances (seconds at n = 1000, more with model selection); the run's
    state is swapped only at the end, so a worker stepping the run meanwhile
    is not blocked.
    """

    name = "SNeRV"
    annotation_kinds = ("labels", "soft_labels")

    def __init__(self, P, beta, Y0, *, X, learning_metric, **kwargs):
        super().__init__(P, beta, Y0, **kwargs)
        self.X = X
        self.learning_metric = learning_metric

    def set_annotations(self, annotations=None, y=None):
        """Re-fit the learning metric on these labels; continue from the current embedding.

        Parameters
        ----------
        annotations : Annotations, optional
            Hard and soft labels (with their confidence as weight).
        y : array-like of int, optional
            Labels with -1 for unlabelled points.

        Returns
        -------
        self
        """
        metric = clone(self.learning_metric).fit(
            self.X, **metric_targets(y, annotations, self.X.shape[0]))
        D = metric.pairwise_distances(self.X)
        P, beta = conditional_probabilities(D, self.n_neighbors, method="exact",
                                            metric="precomputed")
        widening = self.iteration < self.anneal_iter
        D2 = np.square(D) if widening else None
        stages = widening_stages(D2, self.n_neighbors, self.widening_neighbors) \
            if widening else []
        with _config.KERNEL_LOCK:
            self.learning_metric = metric
            self._set_neighbourhoods(P, beta, D2, stages, self.anneal_iter if widening else 0)
            if self.history:
                self._record(dict(evaluations=1))
        return self


class SNeRV(_NeRVEstimator):
    """Supervised neighbour retrieval visualizer: NeRV in a learning metric.

    The learning metric (``LearningMetric``) is fitted
    to the labelled points; every point, labelled or not, is then embedded by
    NeRV from the learning-metric distances. Points whose class distributions
    are alike come close; class borders are stretched.

    Parameters
    ----------
    n_components : int, default=2
    tradeoff : float, default=0.1
        Precision (0) vs recall (1), as in ``NeRV``; the paper used 0.1 and
        0.3. Live.
    n_neighbors : float or "auto", default="auto"
        Effective number of neighbours; "auto" is the paper's 0.5 n / K with K
        the number of Gaussians of the fitted metric, but at least 20 and at
        most (n - 1) / 3.
    learning_metric : LearningMetric or None, default=None
        Settings of the metric (cloned before fitting); None uses
        ``LearningMetric(random_state=random_state)``, which chooses its
        number of Gaussians and width by 3-fold validation likelihood.
    optimizer : {"lbfgs", "cg"}, default="lbfgs"
    max_iter : int, default=300
    anneal_iter : int, default=100
        Widening iterations, as in ``NeRV``.
    init : {"pca", "random"} or ndarray, default="pca"
        "pca" is classical MDS of the learning-metric distances, sized to
        minimize the cost.
    random_state : int, RandomState or None
    verbose : bool, default=False

    Attributes
    ----------
    embedding_ : ndarray (n_samples, n_components)
    learning_metric_ : LearningMetric
        The fitted metric.
    n_neighbors_ : float
        The effective number of neighbours used.
    cost_, recall_divergence_, precision_divergence_, affinities_, bandwidths_,
    n_iter_, history_, n_features_in_
        As in ``NeRV``.

    References
    ----------
    J. Peltonen, H. Aidos, S. Kaski. Supervised nonlinear dimensionality
    reduction by neighbor retrieval. ICASSP 2009.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from nbembed.affinity.learning_metric import LearningMetric
    >>> from nbembed.methods.nerv import SNeRV
    >>> X, y = load_iris(return_X_y=True)
    >>> y_partial = y.copy()
    >>> y_partial[1::2] = -1                  # half of the points unlabelled
    >>> model = SNeRV(learning_metric=LearningMetric(n_components=6, sigma=0.5),
    ...               max_iter=20, random_state=0).fit(X, y_partial)
    >>> model.embedding_.shape
    (150, 2)
    """

    annotation_kinds = SNeRVRun.annotation_kinds

    def __init__(self, n_components=2, *, tradeoff=0.1, n_neighbors="auto",
                 learning_metric=None, optimizer="lbfgs", max_iter=300, anneal_iter=100,
                 init="pca", random_state=None, verbose=False):
        self.n_components = n_components
        self.tradeoff = tradeoff
        self.n_neighbors = n_neighbors
        self.learning_metric = learning_metric
        self.optimizer = optimizer
        self.max_iter = max_iter
        self.anneal_iter = anneal_iter
        self.init = init
        self.random_state = random_state
        self.verbose = verbose

    def prepare(self, X, y=None, annotations=None, init=None):
        """Fit the learning metric, calibrate, and return a resumable ``SNeRVRun``.

        Parameters
        ----------
        X : array-like (n_samples, n_features)
        y : array-like (n_samples,)
            Class labels, -1 for unlabelled points. At least two classes.
        annotations : Annotations, optional
            Hand-made hard or soft labels (override ``y`` where both exist).
        init : ndarray (n_samples, n_components), optional

        Returns
        -------
        SNeRVRun
        """
        X = validate_input(X, min_samples=4)
        n = X.shape[0]
        self._check_params(n)
        if self.learning_metric is None:
            template = LearningMetric(random_state=self.random_state)
        elif isinstance(self.learning_metric, LearningMetric):
            template = self.learning_metric
        else:
            raise TypeError(f"learning_metric must be a LearningMetric or None; got "
                            f"{type(self.learning_metric).__name__}.")
        metric = clone(template).fit(X, **metric_targets(y, annotations, n))
        if isinstance(self.n_neighbors, str) and self.n_neighbors == "auto":
            n_neighbors = auto_neighbors(n, metric.n_components_)
        else:
            n_neighbors = self._check_n_neighbors(self.n_neighbors, n)
        D = metric.pairwise_distances(X)
        self.n_features_in_ = X.shape[1]
        return self._make_run(D, "precomputed", n_neighbors, init, run_class=SNeRVRun, X=X,
                              learning_metric=metric)

    def _store_fitted(self, run):
        super()._store_fitted(run)
        self.learning_metric_ = run.learning_metric
        self.n_neighbors_ = run.n_neighbors

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.pairwise = False
        return tags
