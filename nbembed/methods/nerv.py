"""NeRV and SNeRV: neighbour retrieval visualizers (Venna & Kaski 2007; Peltonen,
Aidos & Kaski 2009).

NeRV embeds so that retrieving each point's neighbours from the display trades
precision against recall: with input neighbourhoods P_i and output
neighbourhoods Q_i of the same width sigma_i it minimizes

    E = tradeoff * sum_i KL(P_i || Q_i) + (1 - tradeoff) * sum_i KL(Q_i || P_i).

tradeoff = 1 is SNE (recall); tradeoff = 0 maximizes smoothed precision.
SNeRV is NeRV on distances of a supervised learning metric
(``LearningMetric`` in :mod:`nbembed.affinity.learning_metric`), optionally with
a Euclidean term added (``SupervisedDistances``).

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
import numbers

import numpy as np
import scipy.sparse as sp

from .._distances import pairwise_distances
from .._estimator import copy_with
from .._validation import check_auto_or_number, check_dense_allowed, check_number, check_option, \
    check_repeated_rows
from ..affinity import conditional_probabilities
from ..affinity.learning_metric import LearningMetric
from ..affinity.widening import widening_stages
from ..objectives.nerv import TRADEOFF, NeRVObjective
from ._base import EmbeddingEstimator, enable_verbose_logging, initial_embedding, \
    validate_input
from ._new_points import NewPoints, precomputed_reach
from .nerv_run import OPTIMIZERS, NeRVRun, SNeRVRun, SupervisedDistances, \
    choose_euclidean_weight, metric_targets

logger = logging.getLogger("nbembed")

#: Widening starts where the neighbourhoods hold this many times n_neighbors
#: effective neighbours (at most a quarter of the points).
WIDENING_NEIGHBORS_FACTOR = 16.0


# --------------------------------------------------------------------------- estimators

class _NeRVEstimator(EmbeddingEstimator):
    """What NeRV and SNeRV share: calibration, the starting layout and the run."""

    live_parameters = NeRVObjective.live_parameters

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
        D2 = pairwise_distances(data, metric=metric, squared=True)
        np.fill_diagonal(D2, 0.0)
        return np.maximum(D2, 0.0)

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
        run = (run_class or NeRVRun)(NeRVObjective(P, beta, tradeoff), Y0, n_iter=max_iter,
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

    def _keep_for_new_points(self, X, run):
        # NeRV's neighbourhoods span all points: p over every training point, and
        # the new point's own calibrated precision in its output kernel too.
        learned = getattr(run, "distances", None)
        metric = "euclidean" if learned is not None else self.metric
        data = validate_input(X, min_samples=4, metric=metric, sparse_rows=learned is None)
        return NewPoints(None if metric == "precomputed" else data, self.embedding_,
                         n_neighbors=data.shape[0], perplexity=run.n_neighbors, metric=metric,
                         distances=learned, tradeoff=run.objective.tradeoff,
                         input_precision=True,
                         reach=precomputed_reach(data) if metric == "precomputed" else None)


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
        Input metric (any of :func:`sklearn.metrics.pairwise_distances`;
        "cosine" needs rows that are not all zeros), or "precomputed" for a
        square matrix of dissimilarities ``X``. A scipy.sparse ``X`` (CSR, CSC
        or COO, any float dtype) works with "euclidean" and "cosine" and is
        never densified (``init="pca"`` then uses ARPACK).
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
    converged_ : bool
        True when the run ended settled at a minimum of its cost (its cost changed by at
        most 1e-5 of itself per iteration between the last two records, or no step
        lowered it any more) and did not end with a cost more than 5% above the one it
        started from (which warns); False means more iterations may still change the
        embedding (raise ``max_iter``). See ``nbembed.optim.run.RunOutcome``.
    n_recoveries_ : int
        How often the optimization diverged and went back to its last good
        embedding (a ``RuntimeWarning`` says so after ``fit``).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Column names of the DataFrame fitted on (only then); ``transform``
        refuses a DataFrame whose columns differ, and takes arrays by position.

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

    annotation_kinds = NeRVObjective.annotation_kinds
    accepts_sparse = True

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
        X = validate_input(X, min_samples=4, metric=self.metric, sparse_rows=True)
        if not isinstance(self.metric, str):
            raise TypeError(f"metric must be a string such as 'euclidean' or 'precomputed'; "
                            f"got {self.metric!r}.")
        check_repeated_rows(X, metric=self.metric, stacklevel=3)
        self.n_features_in_ = X.shape[1]
        return self._make_run(X, self.metric, self.n_neighbors, init)


# --------------------------------------------------------------------------- SNeRV

#: Fewest effective neighbours ``n_neighbors="auto"`` gives (NeRV's default). With
#: many Gaussians the paper's 0.5 n / K falls below what a 2-D map needs to keep a
#: class together: 1500 USPS digits, 80 Gaussians, 9.4 neighbours, twice the
#: held-out error of 20 or 40 (docs/nerv.md).
AUTO_NEIGHBORS_FLOOR = 20.0


#: Default weight of the Euclidean term in SNeRV's distances (``SupervisedDistances``):
#: "auto", none (the paper's SNeRV) unless the learning metric classifies held-out
#: labelled points clearly worse than their nearest neighbours in the input, then the input's
#: distances alone (``choose_euclidean_weight``). Fixed weights of 0.1 and 0.3
#: changed the test errors of benchmarks/snerv_reproduce.py in both directions, by
#: about as much (docs/nerv.md).
EUCLIDEAN_WEIGHT = "auto"


def auto_neighbors(n_samples, n_mixture_components):
    """The paper's effective number of neighbours, 0.5 n / K, raised to at least
    ``AUTO_NEIGHBORS_FLOOR`` and kept at most (n - 1) / 3 (and below n - 1 for tiny n)."""
    upper = max((n_samples - 1) / 3.0, 1.5)
    rule = 0.5 * n_samples / n_mixture_components
    return float(min(max(rule, AUTO_NEIGHBORS_FLOOR), upper))


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
        Settings of the metric (cloned before fitting; one without a
        ``random_state`` gets this estimator's); None uses
        ``LearningMetric(random_state=random_state)``, which chooses its
        number of Gaussians and width by 3-fold validation likelihood.
    euclidean_weight : float or "auto", default="auto"
        Weight w >= 0 of a Euclidean term in the squared distances,
        d^2 = d_L^2 + w (s_L / s_E) ||x - z||^2 with s_L, s_E the median
        squared learning-metric and Euclidean distances over the pairs of
        points (``SupervisedDistances``). The learning metric is nearly zero
        inside class regions; the term orders neighbours there by the input.
        0 is the paper's SNeRV; docs/nerv.md has measurements with 0.1;
        ``math.inf`` uses the Euclidean distances alone (an unsupervised NeRV).
        "auto" decides from the labels: 0 unless the metric's classifier
        clearly misclassifies more held-out labelled points than 5 nearest
        labelled neighbours in the input do on the same folds of its validation
        (a paired sign test, ``nerv_run.FALLBACK_Z``), then inf (a map cannot
        place points better than its metric classifies them).
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
    euclidean_weight_ : float
        The weight of the Euclidean term used (what "auto" chose; inf: the
        input's distances alone). ``learning_metric_.validation_error_`` and
        ``knn_validation_error_`` are the errors it compared.
    n_neighbors_ : float
        The effective number of neighbours used.
    cost_, recall_divergence_, precision_divergence_, affinities_, bandwidths_,
    n_iter_, converged_, n_recoveries_, history_, n_features_in_
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
                 learning_metric=None, euclidean_weight=EUCLIDEAN_WEIGHT, optimizer="lbfgs",
                 max_iter=300, anneal_iter=100, init="pca", random_state=None, verbose=False):
        self.n_components = n_components
        self.tradeoff = tradeoff
        self.n_neighbors = n_neighbors
        self.learning_metric = learning_metric
        self.euclidean_weight = euclidean_weight
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
        if sp.issparse(X):
            raise TypeError("SNeRV does not take a sparse X: its learning metric fits Gaussian "
                            "mixtures to dense feature vectors. Reduce X to a few dense "
                            "dimensions first (for example sklearn.decomposition.TruncatedSVD("
                            "n_components=50).fit_transform(X)), or use NeRV, which takes "
                            "sparse X with metric='euclidean' or 'cosine'.")
        X = validate_input(X, min_samples=4)
        n = X.shape[0]
        self._check_params(n)
        setting = self._check_euclidean_weight()
        check_repeated_rows(X, stacklevel=3)
        if self.learning_metric is None:
            template = LearningMetric(random_state=self.random_state)
        elif isinstance(self.learning_metric, LearningMetric):
            template = self.learning_metric
        else:
            raise TypeError(f"learning_metric must be a LearningMetric or None; got "
                            f"{type(self.learning_metric).__name__}.")
        metric = copy_with(template)
        if metric.random_state is None:
            # A given metric without a seed of its own takes this one, so that
            # random_state makes the whole fit reproducible (its k-means start).
            metric.set_params(random_state=self.random_state)
        metric = metric.fit(X, **metric_targets(y, annotations, n))
        if isinstance(self.n_neighbors, str) and self.n_neighbors == "auto":
            n_neighbors = auto_neighbors(n, metric.n_components_)
        else:
            n_neighbors = self._check_n_neighbors(self.n_neighbors, n)
        weight = choose_euclidean_weight(setting, metric)
        if math.isinf(weight) and setting == "auto":
            logger.info("SNeRV: the learning metric misclassified %.3f of the held-out "
                        "labelled points, 5 nearest neighbours in the input %.3f; the map "
                        "uses the input's distances.", metric.validation_error_,
                        metric.knn_validation_error_)
        distances, D = SupervisedDistances.fit_distances(metric, X, weight)
        self.n_features_in_ = X.shape[1]
        return self._make_run(D, "precomputed", n_neighbors, init, run_class=SNeRVRun, X=X,
                              distances=distances, euclidean_setting=setting)

    def _check_euclidean_weight(self):
        """``euclidean_weight`` checked: "auto" or a number >= 0 (inf allowed)."""
        weight = self.euclidean_weight
        if isinstance(weight, numbers.Real) and math.isinf(weight) and weight > 0:
            return math.inf
        return check_auto_or_number(weight, "euclidean_weight", "a number >= 0", low=0)

    def _store_fitted(self, run):
        super()._store_fitted(run)
        self.learning_metric_ = run.learning_metric
        self.euclidean_weight_ = run.euclidean_weight
        self.n_neighbors_ = run.n_neighbors

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.pairwise = False
        return tags
