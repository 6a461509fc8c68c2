"""Mbed: large-margin non-linear embedding (Zien & Quinonero Candela, ICML 2005).

SNE with fixed class boundaries: K class directions w_k at equal angles split
the embedding into regions, memberships m_ik = softmax_k(<w_k, y_i> / lambda)
say which region a point is in, and the cost

    C - (A + B) + D

adds to the SNE term C a margin A (minus the mean entropy of the
memberships: points leave the boundaries), a balance B (entropy of the mean
membership, or -KL(mbar || prior)) and, for labelled points, D = sum KL(T_i || M_i).
Algorithm 1 of the paper anneals lambda from 20 r to 0.2 r (r the radius of
a crude SNE embedding) with conjugate-gradient steps in between, and returns
the annealing step whose embedding separates its classes best (Fisher's
criterion for K = 2, the Hotelling-Lawley trace for K > 2). The conjugate
gradients are :class:`~nbembed.optim.descent.LineSearchDescent` with
Polak-Ribiere+ directions and the constants of ``minimize.m`` (see
``LINE_SEARCH``). With K > 2 classes and labels the annealing starts from
spread labels and the input width sigma is chosen by cross-validation on the
labelled points, where the paper's wide neighbourhoods merge similar classes.
See docs/mbed.md.
"""

from __future__ import annotations

import logging
from typing import NamedTuple, Optional

import numpy as np
import scipy.sparse as sp

from .. import _config
from .._distances import pairwise_distances
from .._estimator import check_is_fitted, copy_with
from .._folds import class_balanced_weights, clearly_fewer_misses, error_rate, \
    stratified_folds
from .._kernels import mbed as kernels
from .._validation import check_annotations, check_auto_or_number, check_dense_allowed, \
    check_labels, check_number, check_option, check_random_state, series_values
from ..affinity.fixed_width import default_sigma, input_neighbourhoods, sampled_sigma, \
    sparse_input_neighbourhoods
from ..affinity.label_spreading import DEFAULT_SETTING, SPREAD_ALPHA, \
    SPREAD_ALPHA_CANDIDATES, SPREAD_NEIGHBOR_CANDIDATES, SPREAD_NEIGHBORS, NestedSpreading, \
    SpreadingChoice, SpreadSetting, choose_spreading, class_shares, knn_graph, \
    nested_spreading, spread_labels, spread_with
from ..affinity.perplexity import NEIGHBORS, nearest_neighbors
from ..objectives.mbed import SUM_TOLERANCE, MbedObjective, label_inputs
from ._base import EmbeddingEstimator, enable_verbose_logging, validate_input
from ._new_points import NewPoints, precomputed_reach
from .mbed_run import MbedRun

logger = logging.getLogger("nbembed")

#: Standard deviation of the start of the crude SNE embedding (Algorithm 1, line 2).
SNE_INIT_SCALE = 0.1
#: Neighbours per point of the sparse input neighbourhoods (``affinity="knn"``).
KNN_NEIGHBORS = 90
AFFINITIES = ("auto", "exact", "knn")
REPULSIONS = ("auto", "exact", "fft")
#: Up to this many points ``repulsion="auto"`` computes the output normalizers
#: Z_i exactly over all pairs; above it (with n_components <= 2) on the grid.
EXACT_NORMALIZERS_MAX_N = 10_000
ANNEAL_STARTS = ("auto", "random", "labels")
SIGMA_RULES = ("auto", "quantile", "cv")
LABELS_FROM = ("auto", "map", "spreading")
#: Candidates of ``sigma="cv"``, as factors of the 1/K quantile (the first, the
#: paper's width, wins ties).
SIGMA_FACTORS = (1.0, 1.0 / 2, 1.0 / 4, 1.0 / 8)
#: Folds of the labelled points in ``sigma="cv"``.
SIGMA_CV_FOLDS = 3
#: Each cross-validation run is the schedule cut after this many annealing steps.
SIGMA_CV_STEPS = 5
#: Candidates that go on to the other folds after the first (successive halving).
SIGMA_CV_KEEP = 2


#: Standard errors by which the map must miss fewer held-out labels than the
#: spread labels for ``labels_from="auto"`` to keep the map's labels
#: (:func:`~nbembed._folds.clearly_fewer_misses`): the one-standard-error rule.
MAP_MARGIN = 1.0


class _Spreading(NamedTuple):
    """How ``prepare`` spreads the labels, kept for the length of one ``prepare``."""

    indices: np.ndarray  # each point's nearest neighbours, nearest first
    setting: SpreadSetting  # the spread labels' graph, k, alpha and class mass
    choice: Optional[SpreadingChoice]  # the held-out table, where it was searched
    nested: Optional[NestedSpreading]  # that choice made inside each fold, where asked


# -- inputs ---------------------------------------------------------------------------------

def check_class_prior(prior, n_classes):
    """A class prior as log pi, or None."""
    if prior is None:
        return None
    pi = np.asarray(prior, dtype=np.float64)
    if pi.shape != (n_classes,):
        raise ValueError(f"class_prior must have one entry per class, shape ({n_classes},); "
                         f"got shape {pi.shape}.")
    if not np.all(np.isfinite(pi)) or np.any(pi <= 0):
        raise ValueError(f"class_prior must be a probability distribution with positive "
                         f"entries; got {pi.tolist()}.")
    if abs(pi.sum() - 1.0) > SUM_TOLERANCE:
        raise ValueError(f"class_prior must sum to 1 (a probability distribution); it sums "
                         f"to {pi.sum():.6g}.")
    return np.log(pi / pi.sum())


# -- the estimator ----------------------------------------------------------------------------

class Mbed(EmbeddingEstimator):
    """Large-margin non-linear embedding with (soft) labels (Mbed).

    Embeds points by SNE while fixed class boundaries push them into K
    regions, away from the boundaries and in balanced numbers; labelled points
    are pulled into their class. The result is an embedding and, for every
    point, class probabilities: a clustering without labels, a transductive
    classification with some.

    Parameters
    ----------
    n_classes : int or None, default=None
        K >= 2, the number of classes (clusters). None counts them in the
        labels: one more than the largest label of ``y`` (or its number of
        columns for soft labels) or the number of classes of
        ``annotations``, whichever is larger, and at least 2; 2 when nothing
        is labelled. The number used is ``n_classes_``.
    n_components : int or None, default=None
        Embedding dimension d, at least K - 1; None is K (the paper's choice).
    n_anneal : int, default=20
        p, the number of steps of Algorithm 1: the initial SNE plus p - 1
        annealing steps (at least 3).
    max_iter : int, default=500
        Conjugate-gradient iterations (line searches) in all.
    n_iter_init : int, default=10
        Of those, for the crude SNE embedding that sets the radius r; the
        rest are spread evenly over the annealing steps.
    class_prior : array-like of shape (K,) or None, default=None
        Known class proportions pi: the balance term becomes -KL(mbar || pi)
        instead of the entropy of the mean membership.
    label_weight : float, default=1.0
        Factor on the label term D (1 in the paper).
    anneal_start : {"auto", "random", "labels"}, default="auto"
        Where the annealing starts. "random": the paper's restart, every point
        near the origin (N(0, (1e-3 r)^2)). "labels": point i near
        r * sum_k f_ik w_k, with f_i its class probabilities after label
        spreading over the ``spread_neighbors``-nearest-neighbour graph (Zhou
        et al., 2004), so each class starts in its own region; needs labels. "auto" is
        "labels" for K > 2 classes with at least one labelled point and
        "random" otherwise: with many classes the random restart leaves whole
        clusters in the wrong region before the labels weigh anything (see
        docs/mbed.md), for two classes it already finds the paper's optimum.
    spread_neighbors : "auto" or int, default="auto"
        Neighbours per point of the graph the labels spread over for
        ``anneal_start="labels"`` and ``labels_from``. "auto" chooses among 3,
        5, 7, 10 and 15 by cross-validation on the labelled points (the folds
        of ``sigma="cv"``: each fold's labels are hidden in turn, spread from
        the others, and classified by their scores): for the start, on the
        symmetric graph, every class's labels weighing alike (ties go to
        more neighbours); for the spread labels of ``labels_from`` together
        with the graph (symmetric, or directed: each point hears its own
        neighbours only), ``spread_alpha`` and the class mass normalization,
        each class's labels weighing its estimated share of the unlabelled
        points (``class_shares_``). With fewer than 6 labelled points it is 10
        (symmetric). Few neighbours follow classes that are thin manifolds,
        many bridge gaps in sparse data (docs/mbed.md).
    spread_alpha : "auto" or float, default="auto"
        Weight of the neighbours against a point's own label in each step of
        the spreading, in (0, 1): near 1 the labels travel far along the graph.
        "auto" starts the annealing with 0.99 (Zhou et al.'s; the graph is
        the one that spreads best at 0.99) and spreads the labels for
        ``labels_from`` with 0.99 or 0.9, chosen with the graph (see
        ``spread_neighbors``; 0.99 with fewer than 6 labelled points). With
        both "auto", the spread labels keep scikit-learn's ``LabelSpreading``
        defaults (the directed 7-nearest-neighbour graph, alpha 0.2, no class
        mass normalization) unless the table's best setting missed fewer
        held-out labels by more than two standard errors. A number is used
        for both. The same cross-validation decides whether the
        spread labels divide each class's scores by their total (class mass
        normalization; the start always does). With both ``spread_neighbors``
        and ``spread_alpha`` fixed nothing is cross-validated and the spread
        labels normalize too, on the symmetric graph.
    labels_from : {"auto", "map", "spreading"}, default="auto"
        Where ``labels_`` come from. "map": the map's memberships (argmax of
        ``membership_``). "spreading": the labels spread over the
        ``spread_neighbors`` graph (needs labelled points). "auto":
        "spreading" unless cross-validation of the map and of the spreading,
        on the same folds, says the map clearly classifies held-out labels
        better: it missed fewer by more than ``MAP_MARGIN`` standard errors
        of the paired difference (``labels_cv_errors_``). It runs with at
        least 6 labelled points when sigma, ``spread_neighbors`` and
        ``spread_alpha`` are "auto" and, with K > 2, the labels start the
        annealing (with two classes the map is then validated at the paper's
        width); else "map". The map, its memberships and ``predict`` are
        Mbed's in every case.
    metric : str, default="euclidean"
        Input metric for ``sklearn.metrics.pairwise_distances`` ("cosine",
        ``1 - x.y / (||x|| ||y||)``, suits tf-idf rows; no row may then be all zeros),
        or "precomputed" for a matrix of dissimilarities (non-negative, zero
        diagonal, not necessarily a metric). A scipy.sparse ``X`` (CSR, CSC or
        COO, any float dtype) works with "euclidean" and "cosine" and is never
        densified; see docs/sparse.md.
    sigma : {"auto", "quantile", "cv"} or float, default="auto"
        Width of the input neighbourhoods exp(-d_ij^2 / sigma^2).
        "quantile" is the paper's: the 1/K quantile of all pairwise
        dissimilarities (with ``affinity="knn"``, of those among 700 random
        points). "cv" chooses among that quantile times 1, 1/2, 1/4 and 1/8
        by cross-validation on the labelled points: they are split into 3
        folds (stratified by class), a fold's labels are hidden and Mbed,
        run through its first 5 annealing steps, classifies them. Every
        width is tried on the first fold, the two with the fewest errors
        there on the other two folds as well; of those the width with the
        lowest error rate wins, ties going to the wider. The 8 runs cost
        about 2.3 fits, so a fit takes about 3.3 times as long.
        "auto" is "cv" for K > 2 classes with at least 6 labelled points and
        "quantile" otherwise: with many classes the paper's wide
        neighbourhoods merge similar classes (see docs/mbed.md).
    affinity : {"auto", "exact", "knn"}, default="auto"
        Input neighbourhoods over all pairs (dense, the paper's), or over the
        ``n_neighbors`` nearest neighbours of each point (sparse, memory
        O(n k)). The neighbourhoods are wide (sigma is a quantile of all
        distances), so truncating them changes the objective: each point then
        attracts its nearest neighbours only. "auto" is exact up to 5000
        points (``nbembed._config.DENSE_AFFINITY_MAX_N``).
    n_neighbors : int or None, default=None
        Neighbours per point for ``affinity="knn"``; None is min(n - 1, 90).
    neighbors : {"auto", "exact", "approximate"}, default="auto"
        How the nearest neighbours are found (see :class:`~nbembed.HSSNE`).
    repulsion : {"auto", "exact", "fft"}, default="auto"
        How the normalizers Z_i = sum_j exp(-||y_i - y_j||^2) of the output
        neighbourhoods and their gradient are computed: over all pairs, O(n^2)
        per evaluation, or by FFT-accelerated interpolation on a grid of node
        spacing 0.1, O(n + grid) (``n_components`` <= 2 only). "auto" is exact
        up to 10 000 points (as for HSSNE, see docs/scale.md).
    random_state : int, RandomState or None
    verbose : bool, default=False
        Log the radius and each annealing step through the ``nbembed`` logger.

    Attributes
    ----------
    n_classes_ : int
        K, the number of classes: ``n_classes``, or the number counted in the labels.
    embedding_ : ndarray (n_samples, n_components)
        The embedding of the selected annealing step.
    membership_ : ndarray (n_samples, n_classes)
        Class probabilities m_ik at the selected step.
    labels_ : ndarray (n_samples,)
        argmax of ``membership_``; the spread labels of the start instead when
        ``labels_source_`` is "spreading".
    labels_source_ : {"map", "spreading"}
        Where ``labels_`` come from: ``labels_from``, or with "auto" what the
        cross-validation chose (see ``labels_from``).
    step_embeddings_ : ndarray (n_anneal - 1, n_samples, n_components)
        The embedding at the end of every annealing step.
    step_memberships_ : ndarray (n_anneal - 1, n_samples, n_classes)
    lambda_path_ : ndarray (n_anneal - 1,)
        lambda of every annealing step.
    criterion_path_ : ndarray (n_anneal - 1,)
        Margin criterion of every step (Fisher's J for K = 2, the
        Hotelling-Lawley trace for K > 2).
    selected_step_ : int
        Index of the step with the largest criterion (the paper's step
        ``selected_step_ + 2``); after the paper's random restart with labelled
        points, the largest among the steps that misclassify the fewest of them
        (see ``MbedRun.selected_step``).
    sne_embedding_ : ndarray (n_samples, n_components)
        The crude SNE embedding that set the radius.
    radius_ : float
    sigma_ : float
        The width used.
    sigma_candidates_ : ndarray or None
        The widths ``sigma="cv"`` compared; the paper's width alone where it
        was only validated, for ``labels_from`` (two classes); None without
        cross-validation.
    sigma_cv_errors_ : ndarray or None
        Their cross-validation errors: the weighted fraction of labelled
        points misclassified while their labels were hidden, over the folds
        each was tried on (weights: the labels' confidences, every class's
        total made equal, so a class with few labels counts as much as one
        with many).
    sigma_cv_folds_ : ndarray of int or None
        On how many folds each candidate was tried (3, or 1 for those
        dropped after the first fold).
    anneal_start_ : str
        "random" or "labels": how the annealing started.
    spread_neighbors_ : int or None
        Neighbours per point of the symmetric graph the annealing starts from
        (None when nothing spread).
    spread_graph_ : {"symmetric", "directed"} or None
        The graph of the spread labels (``labels_from``): the symmetric union
        of the nearest-neighbour relations, or each point to its own nearest
        neighbours.
    spread_labels_neighbors_ : int or None
        Its neighbours per point.
    spread_alpha_ : float or None
        The alpha of the spread labels (None when nothing spread).
    spread_class_mass_ : bool or None
        Whether the spread labels normalize the class masses (None when
        nothing spread).
    spread_cv_errors_ : ndarray or None
        The cross-validation errors of the spread labels' settings, shape
        (2, 2, alphas, neighbours): the symmetric then the directed graph;
        with then without class mass normalization; alpha 0.99 and 0.9; 3,
        5, 7, 10, 15 neighbours (those below n); each class's labels weighing
        its share in ``class_shares_``. None where nothing was chosen.
    spread_default_cv_error_ : float or None
        The cross-validation error of the default the table's best had to
        beat (scikit-learn's ``LabelSpreading`` defaults; see
        ``spread_alpha``), None where there was no default.
    class_shares_ : ndarray (n_classes,) or None
        Each class's estimated share of the unlabelled points, which weighs
        its held-out labels in the choices of ``labels_from``: the mean class
        probabilities of the unlabelled points after the labels spread over
        the directed 7-nearest-neighbour graph with alpha 0.2 (the defaults of
        scikit-learn's ``LabelSpreading``), without class mass normalization,
        halfway to equal shares (see
        :func:`~nbembed.affinity.label_spreading.class_shares`).
    labels_cv_errors_ : dict or None
        What ``labels_from="auto"`` compared: the error rates on held-out
        labels of the map (``"map"``) and of the spread labels
        (``"spreading"``), each class weighing its share in
        ``class_shares_``. The map's is that of the chosen width; the
        spreading's that of its chosen setting when the width was chosen
        among several too, else that of the choice made inside each fold
        (:func:`~nbembed.affinity.label_spreading.nested_spreading`), so
        that both are measured alike. None where nothing was compared.
    directions_ : ndarray (n_classes, n_components)
        The class directions w_k.
    cost_ : float
        The objective at the end of the run.
    history_ : list of dict
    n_iter_ : int
    converged_, n_recoveries_
        As in ``NeRV``: whether the run settled, and how often it diverged and
        recovered.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Column names of the DataFrame fitted on (only then); ``transform``
        refuses a DataFrame whose columns differ, and takes arrays by position.

    References
    ----------
    A. Zien, J. Quinonero Candela. Large margin non-linear embedding. ICML 2005.

    Examples
    --------
    >>> import numpy as np
    >>> from nbembed.methods.mbed import Mbed
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(-3, 1, (40, 5)), rng.normal(3, 1, (40, 5))])
    >>> model = Mbed(n_classes=2, max_iter=100, random_state=0).fit(X)
    >>> model.embedding_.shape, model.membership_.shape
    ((80, 2), (80, 2))
    """

    live_parameters = MbedRun.live_parameters
    annotation_kinds = MbedObjective.annotation_kinds
    accepts_sparse = True

    def __init__(self, n_classes=None, n_components=None, *, n_anneal=20, max_iter=500,
                 n_iter_init=10, class_prior=None, label_weight=1.0, anneal_start="auto",
                 spread_neighbors="auto", spread_alpha="auto", labels_from="auto",
                 metric="euclidean", sigma="auto", affinity="auto", n_neighbors=None,
                 neighbors="auto", repulsion="auto", random_state=None, verbose=False):
        self.n_classes = n_classes
        self.n_components = n_components
        self.n_anneal = n_anneal
        self.max_iter = max_iter
        self.n_iter_init = n_iter_init
        self.class_prior = class_prior
        self.label_weight = label_weight
        self.anneal_start = anneal_start
        self.spread_neighbors = spread_neighbors
        self.spread_alpha = spread_alpha
        self.labels_from = labels_from
        self.metric = metric
        self.sigma = sigma
        self.affinity = affinity
        self.n_neighbors = n_neighbors
        self.neighbors = neighbors
        self.repulsion = repulsion
        self.random_state = random_state
        self.verbose = verbose

    @property
    def max_classes(self):
        """Most classes annotations may use: ``n_classes``; None (no limit) when the
        classes are counted in the labels of each fit."""
        return self.n_classes

    def _resolve_n_classes(self, y, annotations, n):
        """K: ``n_classes``, or counted in the labels (see the class docstring)."""
        if self.n_classes is not None:
            return check_number(self.n_classes, "n_classes", low=2, integer=True)
        counts = []
        if y is not None:
            if y.ndim == 2:
                counts.append(y.shape[1])
            else:
                labels = check_labels(y, n)
                counts.append(int(labels.max(initial=-1)) + 1)
        if annotations is not None:
            counts.append(check_annotations(annotations, n).n_classes)
        return max([2, *counts])  # two clusters when nothing is labelled

    def _check_params(self, n, K):
        if K > n:
            source = "" if self.n_classes is not None else " (counted in the labels)"
            raise ValueError(f"n_classes = {K}{source} is larger than n_samples = {n}; there "
                             f"must be at least as many points as classes.")
        d = K if self.n_components is None else check_number(
            self.n_components, "n_components", low=max(1, K - 1), integer=True)
        n_anneal = check_number(self.n_anneal, "n_anneal", low=3, integer=True)
        n_iter_init = check_number(self.n_iter_init, "n_iter_init", low=0, integer=True)
        n_iter = check_number(self.max_iter, "max_iter", low=n_iter_init + n_anneal - 1,
                              integer=True)
        label_weight = check_number(self.label_weight, "label_weight", low=0)
        log_prior = check_class_prior(self.class_prior, K)
        return K, d, dict(n_iter=n_iter, n_iter_init=n_iter_init, n_anneal=n_anneal), \
            dict(label_weight=label_weight, log_prior=log_prior)

    def prepare(self, X, y=None, annotations=None, init=None):
        """Build the neighbourhoods and the start; return a resumable :class:`MbedRun`.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix, (n_samples, n_features) or (n_samples, n_samples)
            Data (sparse with ``metric="euclidean"`` or ``"cosine"``), or
            dissimilarities with ``metric="precomputed"``.
        y : array-like or pandas or polars Series, optional
            Hard labels (n_samples,) with -1 for unlabelled points, or soft
            labels (n_samples, n_classes) with rows summing to 1 (all zero for
            unlabelled points).
        annotations : Annotations, optional
            Hard and soft labels; a label's confidence weights its term.
        init : ndarray (n_samples, n_components), optional
            Start of the initial SNE (default: N(0, 0.1^2)).

        Returns
        -------
        MbedRun
        """
        X = validate_input(X, min_samples=4, metric=self.metric, sparse_rows=True)
        n = X.shape[0]
        y = None if y is None else series_values(y)
        K = self._resolve_n_classes(y, annotations, n)
        K, d, schedule, label_terms = self._check_params(n, K)
        if self.verbose:
            enable_verbose_logging()
        affinity = check_option(self.affinity, "affinity", AFFINITIES)
        if affinity == "auto":
            affinity = "exact" if n <= _config.DENSE_AFFINITY_MAX_N else "knn"
        check_option(self.neighbors, "neighbors", NEIGHBORS)
        repulsion = self._resolve_repulsion(n, d)
        soft, weights = label_inputs(y, annotations, n, K)
        rule = self._resolve_sigma_rule(K, weights)
        labels_from = check_option(self.labels_from, "labels_from", LABELS_FROM)
        if labels_from == "spreading" and not np.any(weights > 0):
            raise ValueError('labels_from="spreading" needs labelled points to spread; got '
                             'none. Pass labels (-1 for unlabelled points) or use '
                             'labels_from="map".')
        distances = self._all_distances(X) if affinity == "exact" else None
        if rule == "number":
            self.sigma_ = check_number(self.sigma, "sigma", low=0, low_open=True)
        elif distances is not None:
            self.sigma_ = default_sigma(distances, K)
        else:
            self.sigma_ = sampled_sigma(X, K, self.metric, self.random_state)
        if distances is None:
            distances = self._neighbour_distances(X)
        rng = check_random_state(self.random_state)
        if init is None:
            start = SNE_INIT_SCALE * rng.standard_normal((n, d))
        else:
            start = np.asarray(init, dtype=np.float64)
            if start.shape != (n, d):
                raise ValueError(f"init must have shape (n_samples, n_components) = {(n, d)}; "
                                 f"got {start.shape}.")
            if not np.all(np.isfinite(start)):
                raise ValueError("init contains NaN or infinity.")
        noise = rng.standard_normal((d, n))
        self.n_features_in_ = X.shape[1]
        self.n_classes_ = K
        directions = kernels.simplex_directions(K, d)
        self.anneal_start_ = self._resolve_anneal_start(K, weights)
        spreading_searched = "auto" in (self._resolve_spread_neighbors(n),
                                        self._resolve_spread_alpha())
        labelled = np.flatnonzero(weights > 0)
        # one draw of folds for both choices, so that sigma's does not depend on the start's
        folds = (stratified_folds(soft[labelled].argmax(axis=1), SIGMA_CV_FOLDS, rng)
                 if labelled.size >= 2 * SIGMA_CV_FOLDS else None)
        # Two classes: the map at the paper's width is validated too, so that
        # labels_from="auto" can compare it with the spread labels.
        validate_map = (rule == "quantile" and self.sigma == "auto" and labels_from == "auto"
                        and folds is not None and spreading_searched)
        self.spread_neighbors_ = self.spread_alpha_ = self.spread_cv_errors_ = None
        self.spread_class_mass_ = self.spread_default_cv_error_ = None
        self.spread_graph_ = self.spread_labels_neighbors_ = self.class_shares_ = None
        # A start from the chosen alpha made the map worse (docs/mbed.md): the
        # start keeps Zhou et al.'s unless alpha is fixed.
        start_alpha = SPREAD_ALPHA if self.spread_alpha == "auto" else self._resolve_spread_alpha()
        graph = spreading = None
        if self.anneal_start_ == "labels" or validate_map:
            graph, spreading = self._spread_graph(X, soft * weights[:, None], folds,
                                                  nested_rng=rng if validate_map else None)
        latest = {}  # the neighbourhoods of the last width: the folds of a candidate share them

        def run_for(sigma, label_weights):
            """An MbedRun with input width ``sigma`` and these label weights."""
            if latest.get("sigma") != sigma:
                latest.clear()  # one n x n matrix at a time
                latest.update(sigma=sigma, neighbourhoods=self._neighbourhoods(distances, sigma))
            M, p_log_p = latest["neighbourhoods"]
            centres = None
            if self.anneal_start_ == "labels":
                centres = spread_labels(graph, soft * label_weights[:, None],
                                        alpha=start_alpha) @ directions
            objective = MbedObjective(M, p_log_p, directions=directions, soft_labels=soft,
                                      label_weights=label_weights, repulsion=repulsion,
                                      **label_terms)
            return MbedRun(objective, start.copy(), noise, anneal_start=centres, **schedule)

        self.sigma_candidates_ = self.sigma_cv_errors_ = self.sigma_cv_folds_ = None
        map_held_out = None
        if rule == "cv":
            map_held_out = self._cross_validate_sigma(run_for, soft, weights, folds,
                                                      SIGMA_FACTORS)
        elif validate_map:
            map_held_out = self._cross_validate_sigma(run_for, soft, weights, folds, (1.0,))
        self._choose_labels_source(labels_from, X, spreading, map_held_out, soft, weights,
                                   folds)
        return run_for(self.sigma_, weights)

    def _labels_source_is_searched(self):
        """Whether "auto" ``labels_from`` compared the cross-validated map and spreading."""
        return (getattr(self, "sigma_cv_errors_", None) is not None and
                getattr(self, "spread_cv_errors_", None) is not None)

    def _choose_labels_source(self, labels_from, X, spreading, map_held_out, soft, weights,
                              folds):
        """Set ``labels_source_`` (and the spread labels) from ``labels_from``: with
        "auto", "spreading" unless the cross-validation of both the map (the
        chosen sigma) and the spreading (the chosen setting), on the same folds,
        says the map clearly classifies better: it missed fewer held-out labels,
        each class weighing its estimated share of the unlabelled points, by
        more than ``MAP_MARGIN`` standard errors.

        ``spreading`` is what ``_spread_graph`` returned (None if it has not
        run) and ``map_held_out`` the chosen width's held-out class
        memberships (None if no width was validated)."""
        self.labels_source_ = "map"
        self.labels_cv_errors_ = None
        self._spread_labels = None
        if labels_from == "map":
            return
        if labels_from == "auto":
            if not self._labels_source_is_searched():
                return
            classes = soft[weights > 0].argmax(axis=1)
            map_missed = map_held_out.argmax(axis=1) != classes
            # like with like: the best of several widths against the best of
            # several spreadings, a single width against the spreading's choice
            # made inside each fold
            rival = (spreading.nested if len(self.sigma_candidates_) == 1
                     else spreading.choice)
            scoring = spreading.choice.weights
            map_error = float(error_rate(scoring @ map_missed, scoring.sum()))
            self.labels_cv_errors_ = {"map": map_error, "spreading": rival.error}
            if clearly_fewer_misses(map_missed, rival.missed, scoring, MAP_MARGIN):
                return
            logger.info("Mbed: held-out labels were missed %.1f%% of the time in the map "
                        "and %.1f%% by spreading them; labels_ are the spread labels.",
                        100 * map_error, 100 * rival.error)
        if spreading is None:  # nothing spread yet
            _, spreading = self._spread_graph(X, soft * weights[:, None], folds)
        self.labels_source_ = "spreading"
        self._spread_labels = spread_with(spreading.indices, soft * weights[:, None],
                                          spreading.setting).argmax(axis=1)

    def with_chosen_settings(self):
        """A copy with ``sigma`` fixed at ``sigma_``, ``spread_neighbors`` at
        ``spread_neighbors_`` and ``labels_from`` at ``labels_source_`` where
        ``prepare`` chose them by cross-validation; ``self`` if it chose none
        (see ``EmbeddingEstimator.with_chosen_settings``)."""
        chosen = {}
        if getattr(self, "sigma_candidates_", None) is not None:
            chosen["sigma"] = self.sigma_
        if getattr(self, "spread_cv_errors_", None) is not None:
            chosen["spread_neighbors"] = self.spread_neighbors_
        if self.labels_from == "auto" and self._labels_source_is_searched():
            chosen["labels_from"] = self.labels_source_
        return copy_with(self, **chosen) if chosen else self

    def _resolve_sigma_rule(self, n_classes, label_weights):
        """"number", "quantile" or "cv": how ``sigma`` is set."""
        if not isinstance(self.sigma, str):
            return "number"
        rule = check_option(self.sigma, "sigma", SIGMA_RULES)
        n_labelled = int(np.count_nonzero(label_weights > 0))
        if rule == "cv" and n_labelled < 2 * SIGMA_CV_FOLDS:
            raise ValueError(f'sigma="cv" needs at least {2 * SIGMA_CV_FOLDS} labelled points '
                             f'({SIGMA_CV_FOLDS} folds of two); got {n_labelled}. Use '
                             f'sigma="quantile" or a number.')
        if rule == "auto":
            return "cv" if n_classes > 2 and n_labelled >= 2 * SIGMA_CV_FOLDS else "quantile"
        return rule

    def _cross_validate_sigma(self, run_for, soft, weights, folds, factors):
        """Set ``sigma_`` to the candidate that best classifies held-out labelled points.

        The candidates are ``sigma_`` times ``factors``; a single one is only
        validated (its error is the map's, for ``labels_from``).

        A candidate runs with a fold's labels hidden through the first
        ``SIGMA_CV_STEPS`` annealing steps (where the margin criterion of a
        full run usually chooses with many classes); the step with the
        largest criterion among them classifies the hidden points. Every
        candidate runs on the first fold; the ``SIGMA_CV_KEEP`` with the
        fewest errors there (ties to the wider) run on the other folds too,
        and the one with the lowest error rate over all folds wins. Errors
        weigh by the labels' confidences, every class's total made equal (as
        the spreading's, so that ``labels_from`` compares like with like).

        Returns the chosen candidate's class memberships of the held-out
        points, in the order of the labelled points.
        """
        labelled = np.flatnonzero(weights > 0)
        classes = soft.argmax(axis=1)
        scoring = class_balanced_weights(weights, classes)
        candidates = self.sigma_ * np.array(factors)
        wrong = np.zeros(len(candidates))
        tested = np.zeros(len(candidates))
        held_out = np.zeros((len(candidates), labelled.size, soft.shape[1]))

        def validate(c, fold):
            hidden = labelled[folds == fold]
            kept = weights.copy()
            kept[hidden] = 0.0
            run = run_for(candidates[c], kept)
            ends = run.schedule.step_ends
            run.step(int(ends[min(SIGMA_CV_STEPS, len(ends)) - 1]))
            memberships = run.step_memberships[run.selected_step][hidden]
            held_out[c, folds == fold] = memberships
            wrong[c] += scoring[hidden] @ (memberships.argmax(axis=1) != classes[hidden])
            tested[c] += scoring[hidden].sum()

        for c in range(len(candidates)):
            validate(c, 0)
        kept = np.sort(np.argsort(error_rate(wrong, tested), kind="stable")[:SIGMA_CV_KEEP])
        for c in kept:
            for fold in range(1, SIGMA_CV_FOLDS):
                validate(c, fold)
        rates = error_rate(wrong, tested)
        self.sigma_candidates_ = candidates
        self.sigma_cv_errors_ = rates
        self.sigma_cv_folds_ = np.where(np.isin(np.arange(len(candidates)), kept),
                                        SIGMA_CV_FOLDS, 1)
        chosen = kept[np.argmin(rates[kept])]
        self.sigma_ = float(candidates[chosen])
        logger.info("Mbed: sigma %.4g by cross-validation (candidates %s, errors %s).",
                    self.sigma_, np.round(candidates, 4), np.round(self.sigma_cv_errors_, 3))
        return held_out[chosen]

    def _resolve_anneal_start(self, n_classes, label_weights):
        mode = check_option(self.anneal_start, "anneal_start", ANNEAL_STARTS)
        labelled = bool(np.any(label_weights > 0))
        if mode == "labels" and not labelled:
            raise ValueError('anneal_start="labels" spreads the labels, but no point is '
                             'labelled; pass labels (y or annotations) or use '
                             'anneal_start="random".')
        if mode == "auto":
            return "labels" if n_classes > 2 and labelled else "random"
        return mode

    def _resolve_spread_neighbors(self, n):
        """``spread_neighbors`` checked: "auto" or a number of neighbours below n."""
        return check_auto_or_number(self.spread_neighbors, "spread_neighbors",
                                    "a number of neighbours", low=1, high=n - 1, integer=True)

    def _resolve_spread_alpha(self):
        """``spread_alpha`` checked: "auto" or a number in (0, 1)."""
        return check_auto_or_number(self.spread_alpha, "spread_alpha", "a number in (0, 1)",
                                    low=0, high=1, low_open=True, high_open=True)

    def _spread_graph(self, X, targets, folds, nested_rng=None):
        """The symmetric nearest-neighbour graph the annealing starts from; sets
        ``spread_neighbors_`` and the spread labels' setting (``spread_graph_``,
        ``spread_labels_neighbors_``, ``spread_alpha_``, ``spread_class_mass_``).

        They are ``spread_neighbors`` and ``spread_alpha``, or where "auto"
        the candidates that best spread held-out labels (``folds``,
        :func:`~nbembed.affinity.label_spreading.choose_spreading`; with both
        "auto" the spread labels keep ``DEFAULT_SETTING`` unless the best
        clearly beats it; without folds, too few labels, ``SPREAD_NEIGHBORS``
        and ``SPREAD_ALPHA`` on the symmetric graph, class masses normalized).
        With ``nested_rng`` the error of that choice made inside each fold is
        kept too, for ``labels_from``.

        Returns the graph and a :class:`_Spreading`: what spreading the labels
        with that setting and comparing it with the map need. They are
        returned, not kept on the estimator, so that each ``prepare`` works on
        its own."""
        n = X.shape[0]
        k = self._resolve_spread_neighbors(n)
        alpha = self._resolve_spread_alpha()
        choose = folds is not None and "auto" in (k, alpha)
        choice = nested = None
        neighbours = ((SPREAD_NEIGHBOR_CANDIDATES if choose else (SPREAD_NEIGHBORS,))
                      if k == "auto" else (k,))
        alphas = (SPREAD_ALPHA_CANDIDATES if choose else (SPREAD_ALPHA,)) if alpha == "auto" \
            else (alpha,)
        _, idx = nearest_neighbors(X, min(n - 1, max(neighbours)), metric=self.metric,
                                   neighbors=self.neighbors, random_state=self.random_state)
        if choose:
            default = DEFAULT_SETTING if k == alpha == "auto" else None
            choice = choose_spreading(idx, targets, folds, neighbours, alphas, default)
            k, setting = choice.start_k, choice.setting
            self.spread_cv_errors_ = choice.errors
            self.spread_default_cv_error_ = choice.default_error
            self.class_shares_ = choice.shares
            if nested_rng is not None:
                nested = nested_spreading(
                    idx, targets, folds, nested_rng, neighbours, alphas, default, choice.shares)
        else:
            k = min(n - 1, neighbours[0])
            setting = SpreadSetting("symmetric", k, alphas[0], True)
            self.class_shares_ = class_shares(idx, targets)
        self.spread_neighbors_ = k
        self.spread_graph_, self.spread_labels_neighbors_ = setting.graph, setting.k
        self.spread_alpha_, self.spread_class_mass_ = setting.alpha, setting.class_mass
        logger.info("Mbed: the start spreads the labels over the %d-nearest-neighbour graph; "
                    "the spread labels over the %s %d-nearest-neighbour graph, alpha %g, "
                    "%s class mass normalization.", k, setting.graph, setting.k,
                    setting.alpha, "with" if setting.class_mass else "without")
        return knn_graph(idx[:, :k]), _Spreading(idx, setting, choice, nested)

    def _resolve_repulsion(self, n, d):
        repulsion = check_option(self.repulsion, "repulsion", REPULSIONS)
        if repulsion == "fft" and d > 2:
            raise ValueError(f"repulsion='fft' supports n_components=1 or 2 only (got {d}); "
                             f"use repulsion='exact' (O(n^2) per evaluation) for more "
                             f"dimensions.")
        if repulsion == "auto":
            return "fft" if n > EXACT_NORMALIZERS_MAX_N and d <= 2 else "exact"
        return repulsion

    def _all_distances(self, X):
        """Dissimilarities over all pairs (the paper's): an n x n array."""
        check_dense_allowed(X.shape[0], what="Mbed's neighbourhoods over all pairs",
                            alternative='Use affinity="knn" (sparse, memory O(n k))')
        if self.metric == "precomputed":
            return np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)
        return pairwise_distances(X, metric=self.metric)

    def _neighbour_distances(self, X):
        """Each point's nearest neighbours and their dissimilarities, (n, k) each."""
        n = X.shape[0]
        k = min(n - 1, KNN_NEIGHBORS) if self.n_neighbors is None else check_number(
            self.n_neighbors, "n_neighbors", low=1, high=n - 1, integer=True)
        return nearest_neighbors(X, k, metric=self.metric, neighbors=self.neighbors,
                                 random_state=self.random_state)

    @staticmethod
    def _neighbourhoods(distances, sigma):
        """P + P^T of width ``sigma`` (dense from all distances, CSR from the
        neighbours') and sum p log p."""
        P = (input_neighbourhoods(distances, sigma) if isinstance(distances, np.ndarray) else
             sparse_input_neighbourhoods(*distances, sigma))
        positive = P.data[P.data > 0] if sp.issparse(P) else P[P > 0]
        p_log_p = float(np.sum(positive * np.log(positive)))
        return (sp.csr_matrix(P + P.T) if sp.issparse(P) else P + P.T), p_log_p

    def _store_fitted(self, run):
        step = run.selected_step
        if step is None:  # stopped before the first annealing step ended
            self.embedding_ = run.embedding
            membership = run.membership
            self.membership_ = (membership if membership is not None else
                                np.full((run.n_samples, run.n_classes), 1.0 / run.n_classes))
        else:
            self.embedding_ = run.step_embeddings[step]
            self.membership_ = run.step_memberships[step]
        self.labels_ = self.membership_.argmax(axis=1)
        if getattr(self, "labels_source_", "map") == "spreading":
            self.labels_ = self._spread_labels
        self.selected_step_ = step
        shape = (0, run.n_samples)
        self.step_embeddings_ = (np.array(run.step_embeddings) if run.step_embeddings else
                                 np.empty(shape + (run.directions.shape[1],)))
        self.step_memberships_ = (np.array(run.step_memberships) if run.step_memberships else
                                  np.empty(shape + (run.n_classes,)))
        self.lambda_path_ = np.array(run.lambda_path)
        self.criterion_path_ = np.array(run.criterion_path)
        self.sne_embedding_ = run.sne_embedding
        self.radius_ = run.radius
        self.directions_ = run.directions
        self.cost_ = run.history[-1]["cost"] if run.history else run.cost
        self.history_ = run.history
        self.n_iter_ = run.iteration
        self._n_features_out = self.embedding_.shape[1]

    def _keep_for_new_points(self, X, run):
        # The SNE part places a new point: p of the fitted width sigma over the
        # fit's neighbourhood (all points, or the k nearest), Gaussian output.
        X = validate_input(X, min_samples=4, metric=self.metric, sparse_rows=True)
        n = X.shape[0]
        k = n if self.affinity == "exact" or (
            self.affinity == "auto" and n <= _config.DENSE_AFFINITY_MAX_N) else \
            (min(n - 1, KNN_NEIGHBORS) if self.n_neighbors is None else self.n_neighbors)
        return NewPoints(None if self.metric == "precomputed" else X, self.embedding_,
                         n_neighbors=k, sigma=self.sigma_, metric=self.metric,
                         reach=precomputed_reach(X) if self.metric == "precomputed" else None)

    def predict_proba(self, X):
        """Class probabilities of new points: their memberships where ``transform`` puts them.

        m_k = softmax_k(<w_k, y> / lambda) with the class directions
        ``directions_`` and the lambda of the selected annealing step, as
        ``membership_`` of the training points (uniform if the fit stopped
        before the first annealing step).

        Parameters
        ----------
        X : array-like (n_new, n_features)

        Returns
        -------
        ndarray (n_new, n_classes)
        """
        return self.memberships_at(self.transform(X))

    def predict(self, X):
        """The most probable class of each new point (argmax of :meth:`predict_proba`).

        Parameters
        ----------
        X : array-like (n_new, n_features)

        Returns
        -------
        ndarray of int (n_new,)
        """
        return self.predict_proba(X).argmax(axis=1)

    def memberships_at(self, Y):
        """Memberships m_ik of positions ``Y`` (n, n_components) in the fitted map."""
        check_is_fitted(self, "embedding_")
        Y = np.asarray(Y, dtype=np.float64)
        if self.selected_step_ is None:
            return np.full((Y.shape[0], self.directions_.shape[0]),
                           1.0 / self.directions_.shape[0])
        lam = self.lambda_path_[self.selected_step_]
        return np.exp(kernels.log_membership(Y, self.directions_, lam))
