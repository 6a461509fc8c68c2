"""NeRV's and SNeRV's runs: one line-search step per iteration, widening first.

Each iteration is one quasi-Newton (L-BFGS, the default) or conjugate-gradient
step with a strong Wolfe line search on
:class:`~nbembed.objectives.nerv.NeRVObjective`, done by
:class:`~nbembed.optim.descent.LineSearchDescent` with NeRV's settings below
(docs/nerv.md has the measurements behind the default). The SNE-family
schedule (early exaggeration, momentum and gains) is not used: it multiplies
an attraction that NeRV's precision term does not have.
"""

from __future__ import annotations

import logging
import math

import numpy as np

from .. import _config
from .._distances import pairwise_distances
from .._estimator import copy_with
from .._validation import check_annotations, check_labels
from ..affinity import conditional_probabilities
from ..affinity.widening import widened_neighbourhoods, widening_stages
from ..objectives.nerv import NeRVObjective
from ..optim import LineSearchRun, Widening
from ..optim.descent import make_directions
from ..optim.line_search import WolfeSettings

logger = logging.getLogger("nbembed")

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


class NeRVRun(LineSearchRun):
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
    objective : NeRVObjective
        The cost at the final neighbourhoods (kept as ``P`` and ``beta``).
    Y0 : ndarray (n, d)
        Starting embedding.
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
    live_parameters = NeRVObjective.live_parameters
    annotation_kinds = ()

    def __init__(self, objective, Y0, *, n_iter, optimizer="lbfgs", n_neighbors=None,
                 sq_distances=None, stages=(), anneal_iter=0, widening_neighbors=None):
        self._Yt = np.ascontiguousarray(np.asarray(Y0, dtype=np.float64).T)
        # The first search moves the points by about 1% of the embedding's spread;
        # a search restarted from steepest descent first tries the last move's length.
        super().__init__(objective, self._Yt, make_directions(optimizer, LBFGS_MEMORY),
                         n_iter=n_iter, line_search=LINE_SEARCHES[optimizer],
                         first_step="relative", first_move=0.01,
                         continued_step="unit" if optimizer == "lbfgs" else "previous_move",
                         restart_with_previous_move=True)
        self.n_neighbors = n_neighbors
        self.widening_neighbors = widening_neighbors
        self.optimizer = optimizer
        with _config.KERNEL_LOCK:
            self._set_neighbourhoods(objective.P, objective.beta, sq_distances, stages,
                                     anneal_iter)

    # -- neighbourhoods --------------------------------------------------------
    def _set_neighbourhoods(self, P, beta, sq_distances=None, stages=(), anneal_iter=0):
        """The final neighbourhoods (and the widening stages); evaluates the cost."""
        self.P = np.ascontiguousarray(P, dtype=np.float64)
        self.beta = np.ascontiguousarray(beta, dtype=np.float64)
        self.sq_distances = sq_distances
        self.stages = list(stages) if sq_distances is not None else []
        self.anneal_iter = int(anneal_iter) if self.stages else 0
        self.widening = Widening(len(self.stages), self.anneal_iter)
        self.stage = None
        self._follow_schedule(force=True)

    @property
    def effective_neighbors(self):
        """The effective number of neighbours of the current neighbourhoods."""
        return self.n_neighbors if self.stage == -1 else self.stages[self.stage][0]

    def _follow_schedule(self, force=False):
        """Switch to the neighbourhoods of the current stage; True if they changed."""
        stage = self.widening.stage(self.iteration)
        if stage == self.stage and not force:
            return False
        if stage == -1:
            self.objective.use_neighbourhoods(self.P, self.beta)
            self.sq_distances = None          # widening is over: free n^2 floats
        else:
            beta = self.stages[stage][1]
            P, logP = widened_neighbourhoods(self.sq_distances, beta)
            self.objective.use_neighbourhoods(P, beta, logP)
        self.stage = stage
        self._descent.reset()
        self._watch_cost_from_here()
        return True

    def rescale(self):
        """Multiply the embedding by the factor that minimizes the current cost.

        Used on a PCA or random start, whose size is arbitrary whereas the
        output widths are the input's. Pinned points keep their positions.
        """
        Y0 = self._Yt.T.copy()
        with _config.KERNEL_LOCK:
            factor = best_scale(lambda Y: self.objective.value(np.ascontiguousarray(Y.T)),
                                Y0, 1.0 / np.sqrt(self.objective.beta))
            pinned = self._point_pins.indices
            held = self._Yt[:, pinned]
            self._Yt *= factor
            self._Yt[:, pinned] = held
            self._descent.reset()
        return factor

    # -- state ---------------------------------------------------------------
    @property
    def divergences(self):
        """(sum_i KL(P_i || Q_i), sum_i KL(Q_i || P_i)) at the current embedding."""
        with _config.KERNEL_LOCK:
            self._descent.evaluate()
            return tuple(float(v) for v in self._descent.info)

    # -- internals -----------------------------------------------------------
    def _phase_name(self):
        """"widening" while broader neighbourhoods are in use, else "final"."""
        return "final" if self.stage == -1 else "widening"

    def _objective_changed(self):
        """A new tradeoff: restart the search directions from steepest descent; the
        embedding does not move until the next ``step``."""
        super()._objective_changed()
        if self.history:
            self._record(dict(evaluations=1))

    def _schedule_changed(self):
        self._follow_schedule()

    def _after_iteration(self):
        if self._follow_schedule():
            # The objective changed at a widening stage: record its cost here.
            self._record(dict(evaluations=1))

    def _record(self, stats):
        cost, grad_norm = self._evaluated()
        recall, precision = self._descent.info
        self._append_record(cost, effective_neighbors=self.effective_neighbors,
                            recall_divergence=float(recall),
                            precision_divergence=float(precision), grad_norm=grad_norm,
                            step_length=stats.get("step_length", 0.0),
                            evaluations=stats.get("evaluations", 0))


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
    check_annotations(annotations, n_samples)
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


#: How clearly the learning metric must lose to nearest neighbours in the input
#: before ``euclidean_weight="auto"`` drops it: b - c >= FALLBACK_Z sqrt(b + c),
#: with b (c) the held-out labelled points only the metric (only the
#: neighbours) misclassified, a paired sign test at about 2.3% one-sided. On
#: iris and wine a plain comparison of the error rates dropped the metric in 4
#: of 20 folds where its test error was half of 5-NN's.
FALLBACK_Z = 2.0


def choose_euclidean_weight(setting, learning_metric):
    """The weight of the Euclidean term for ``SNeRV(euclidean_weight=setting)``.

    A number is used as it is. "auto" is 0 (the learning metric alone, the
    paper's SNeRV) unless the metric's classifier clearly misclassifies more
    held-out labelled points than their nearest labelled neighbours in the
    input do, on the same folds (``LearningMetric.validation_disagreements_``,
    ``FALLBACK_Z``); then ``math.inf``, the input's Euclidean distances alone,
    which makes SNeRV an unsupervised NeRV: a map in a metric that classifies
    worse than the input cannot place points better than the input does.
    Without a validation (K and sigma both given) "auto" is 0.
    """
    if not isinstance(setting, str):
        return float(setting)
    disagreements = getattr(learning_metric, "validation_disagreements_", None)
    if disagreements is None:
        return 0.0
    only_metric, only_neighbours = disagreements
    lost_by = only_metric - only_neighbours
    if lost_by > 0 and lost_by >= FALLBACK_Z * math.sqrt(only_metric + only_neighbours):
        return math.inf
    return 0.0


class SupervisedDistances:
    """Learning-metric distances with a Euclidean term, for points old and new.

    The squared distance is

        d^2(x, z) = d_L^2(x, z) + euclidean_weight * scale * ||x - z||^2

    with d_L the learning metric's distance. Build it with ``fit_distances``,
    which sets ``scale`` from the training points.

    Parameters
    ----------
    learning_metric : LearningMetric
        Fitted.
    euclidean_weight : float
        >= 0; 0 gives the learning metric's distances as they are, ``math.inf``
        the Euclidean distances alone.
    scale : float
        Makes the two terms commensurable (s_L / s_E of ``fit_distances``).
    """

    def __init__(self, learning_metric, euclidean_weight=0.0, scale=0.0):
        self.learning_metric = learning_metric
        self.euclidean_weight = float(euclidean_weight)
        self.scale = float(scale)

    @classmethod
    def fit_distances(cls, learning_metric, X, euclidean_weight):
        """The distances between the rows of ``X``, and the object that extends them.

        ``scale`` is s_L / s_E, the median squared learning-metric distance over the
        median squared Euclidean one between the rows of ``X``, so that
        ``euclidean_weight`` is free of units: at 1, the two terms are as large
        in a typical pair.

        The learning metric has rank at most n_classes - 1 and is nearly zero away
        from class borders, so inside a class region nearly every direction is
        short and which points are neighbours there depends on little more than
        small wiggles of the fitted posteriors. The Euclidean term orders them by
        the input instead; across a border the metric's distances still dominate.

        Parameters
        ----------
        learning_metric : LearningMetric
            Fitted.
        X : ndarray (n_samples, n_features)
        euclidean_weight : float

        Returns
        -------
        distances : SupervisedDistances
        D : ndarray (n_samples, n_samples)
            Symmetric, zero diagonal.
        """
        if math.isinf(euclidean_weight):
            return cls(learning_metric, math.inf, 1.0), pairwise_distances(X)
        D = learning_metric.pairwise_distances(X)
        if euclidean_weight == 0:
            return cls(learning_metric), D
        E2 = pairwise_distances(X, squared=True)
        upper = np.triu_indices(X.shape[0], 1)
        s_E = float(np.median(E2[upper]))
        scale = float(np.median(np.square(D[upper]))) / s_E if s_E > 0 else 0.0
        D = np.sqrt(np.square(D) + euclidean_weight * scale * E2)
        np.fill_diagonal(D, 0.0)
        return cls(learning_metric, euclidean_weight, scale), D

    def pairwise_distances(self, X, Y):
        """Distances between the rows of ``X`` and of ``Y``, shape (len(X), len(Y))."""
        if math.isinf(self.euclidean_weight):
            return pairwise_distances(X, Y)
        D = self.learning_metric.pairwise_distances(X, Y)
        if self.euclidean_weight * self.scale == 0:
            return D
        E2 = pairwise_distances(X, Y, squared=True)
        return np.sqrt(np.square(D) + self.euclidean_weight * self.scale * E2)


class SNeRVRun(NeRVRun):
    """A resumable SNeRV optimization: NeRV on learning-metric distances.

    ``set_annotations`` re-fits the learning metric on the new labels,
    recomputes all distances (with the same Euclidean weight) and
    neighbourhoods, and continues from the current embedding. That takes as
    long as the metric's fit and the O(n^2) distances (seconds at n = 1000,
    more with model selection); the run's state is swapped only at the end, so
    a worker stepping the run meanwhile is not blocked.

    Parameters
    ----------
    objective, Y0, **kwargs
        As in ``NeRVRun``.
    X : ndarray (n_samples, n_features)
        The points, for re-fitting the metric.
    distances : SupervisedDistances
        The input distances and the fitted metric they come from.
    """

    name = "SNeRV"
    annotation_kinds = ("labels", "soft_labels")

    def __init__(self, objective, Y0, *, X, distances, euclidean_setting=None, **kwargs):
        super().__init__(objective, Y0, **kwargs)
        self.name = type(self).name  # NeRV's cost, with labels that shape its distances
        self.annotation_kinds = type(self).annotation_kinds
        self.X = X
        self.distances = distances
        #: ``SNeRV.euclidean_weight`` as given ("auto" is decided again for new labels).
        self.euclidean_setting = (distances.euclidean_weight if euclidean_setting is None
                                  else euclidean_setting)

    @property
    def learning_metric(self):
        """The fitted ``LearningMetric``."""
        return self.distances.learning_metric

    @property
    def euclidean_weight(self):
        """The weight of the Euclidean term in the distances (``SupervisedDistances``)."""
        return self.distances.euclidean_weight

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
        metric = copy_with(self.learning_metric).fit(
            self.X, **metric_targets(y, annotations, self.X.shape[0]))
        weight = choose_euclidean_weight(self.euclidean_setting, metric)
        distances, D = SupervisedDistances.fit_distances(metric, self.X, weight)
        P, beta = conditional_probabilities(D, self.n_neighbors, method="exact",
                                            metric="precomputed")
        widening = self.iteration < self.anneal_iter
        D2 = np.square(D) if widening else None
        stages = widening_stages(D2, self.n_neighbors, self.widening_neighbors) \
            if widening else []
        with _config.KERNEL_LOCK:
            self.distances = distances
            self._set_neighbourhoods(P, beta, D2, stages, self.anneal_iter if widening else 0)
            if self.history:
                self._record(dict(evaluations=1))
        return self
