"""HSSNE: heavy-tailed symmetric SNE (Yang, Xu, King & Oja, NIPS 2009).

t-SNE (alpha = 1) and Gaussian symmetric SNE (alpha = 0) are special cases of
the power family H(tau) = (1 + alpha tau)^(-1/alpha). Must-links make it
semi-supervised: each linked point gives the share rho of its attraction to its
partners (or, as in the paper, P~ = (1 - rho) P + rho U).
"""

from __future__ import annotations

import scipy.sparse as sp

from .._estimator import copy_with
from .._validation import check_labels, check_number, check_option, check_random_state, \
    series_values
from ..affinity import joint_probabilities, must_links_from
from ..affinity.constraints import MIXINGS, MUST_LINK_NEIGHBORS, strongest_neighbors
from ..affinity.perplexity import METHODS as AFFINITY_METHODS
from ..affinity.perplexity import NEIGHBORS, normalize_affinities
from ..objectives.hssne import ALPHA, REPULSIONS, RHO, HSSNEObjective, affinity_dtype, \
    resolve_repulsion
from ..optim import EmbeddingRun
from ..optim.timings import timed
from ._base import EmbeddingEstimator, check_common_params, enable_verbose_logging, \
    initial_embedding, validate_input
from ._new_points import perplexity_new_points
from .must_link_weight import RHO_CV_MAX_N, RHO_DEFAULT, can_cross_validate, cross_validate_rho

#: ``optimizer="auto"`` uses the accelerated fixed-point update above this alpha
#: and gradient descent up to it: on digits gradient descent ended about 1% lower
#: for alpha <= 1, the fixed-point update 3% lower at alpha = 2 (docs/hssne.md).
AUTO_FIXED_POINT_ABOVE_ALPHA = 1.0

#: Largest step of ``learning_rate="auto"`` during early exaggeration, unless
#: n / (4 early_exaggeration) is larger (see :func:`auto_learning_rates`).
EXAGGERATED_STEP_CAP = 1000.0


def auto_learning_rates(n, exaggeration):
    """The steps of ``learning_rate="auto"``: (during early exaggeration, after).

    After: max(n / exaggeration, 50), n / 12 by default (on digits it beat
    scikit-learn's n / 48 for alpha >= 1). During: the same while it is at
    most 1000 (up to 12 000 points with the default exaggeration 12), then
    1000 until n / (4 exaggeration) (scikit-learn's and openTSNE's rule) is
    larger. With the large step of the main phase the
    exaggerated phase overshoots at large n: on the 50-D mixture of
    benchmarks/bench_scale.py, 750 iterations ended at KL 3.5274 / 3.4504 /
    3.7949 instead of 3.5607 / 3.4582 / 3.8011 (20 000 points, alpha = 0.5 /
    1 / 2). A smaller step from fewer points on helped that mixture but not
    USPS (9298 digits, alpha = 1: 1.6070 with 200 against 1.5932 with n / 12).
    """
    after = max(n / exaggeration, 50.0)
    return max(n / (4.0 * exaggeration), min(after, EXAGGERATED_STEP_CAP)), after


def resolve_optimizer(optimizer, alpha):
    """The optimizer "auto" stands for at this alpha.

    It is decided once, when a run is prepared: switching from gradient
    descent to the fixed-point update in the middle of a run moves points
    abruptly, which a live slider must not do.
    """
    if optimizer != "auto":
        return optimizer
    return "fixed-point" if alpha > AUTO_FIXED_POINT_ABOVE_ALPHA else "gradient"


#: Iterations between two evaluations of the cost with a sparse P of up to
#: ``COST_EVERY_MAX_N`` points; five times as many with more points or a dense P,
#: ten times as many with a dense P of ``SPARSER_DENSE_COST_MIN_N`` points or more
#: or a sparse one of more than ``SPARSEST_COST_MIN_N``. At 70 000 points one
#: evaluation took 103 ms against 74 ms for an iteration, so every 10 iterations
#: the cost was a tenth of the fit; at 10^6 points one took 0.9-2 s.
COST_EVERY = 10
COST_EVERY_MAX_N = 50_000
SPARSEST_COST_MIN_N = 500_000
SPARSER_DENSE_COST_MIN_N = 1000


#: Fewest points for which ``dtype="auto"`` runs the gradient kernels in single
#: precision (2.4x faster on the exact path, 1.5x on the attraction of an
#: approximate one). On 178 standardized wine samples, 20 random
#: starts gave a 1-NN homogeneity of 0.958 in float32 against 0.962 in float64
#: (standard errors 0.001 and 0.002), for a saving of milliseconds.
SINGLE_PRECISION_MIN_N = 1000


def cost_interval(P):
    """Iterations between two evaluations of the cost.

    A cost with a dense P takes one logarithm per pair (every other pair with
    the symmetric sum), about 20 single-precision gradients at 1797 points; with
    a sparse one, one logarithm per stored entry, which at 10^6 points costs as
    much as two or three whole iterations (0.75 s). Those get fewer records.
    """
    if not sp.issparse(P):
        return (10 if P.shape[0] >= SPARSER_DENSE_COST_MIN_N else 5) * COST_EVERY
    if P.shape[0] > SPARSEST_COST_MIN_N:
        return 10 * COST_EVERY
    if P.shape[0] > COST_EVERY_MAX_N:
        return 5 * COST_EVERY
    return COST_EVERY


class HSSNE(EmbeddingEstimator):
    """Heavy-tailed symmetric stochastic neighbour embedding.

    Minimizes KL(P~ || Q) with Q_ij proportional to
    H(||y_i - y_j||^2) = (1 + alpha ||y_i - y_j||^2)^(-1/alpha).

    Parameters
    ----------
    n_components : int, default=2
        Dimension of the embedding.
    alpha : float, default=1.0
        Tail heaviness, alpha >= 0: 0 is Gaussian symmetric SNE, 1 is t-SNE,
        larger values give heavier tails (tighter, better separated clusters).
        Equivalent to t-SNE with ``dof = 1 / alpha`` degrees of freedom. Live.
    perplexity : float, default=30.0
        Effective number of neighbours of the input Gaussians.
    rho : float or "auto", default="auto"
        Weight of the must-links, in [0, 1]: the share of a linked point's
        attraction that goes to its partners (``must_link_mixing="per-point"``),
        or of all attraction (``"global"``). 0 ignores must-links. Only matters
        when must-links are given. Live. "auto" chooses among 0, 0.25 and 0.5
        by 3-fold cross-validation on the labels ``y`` (each fold's labels
        hidden in turn, the map made without them, each hidden point
        classified by its nearest visible labelled point; the fewest errors
        win, ties going to the smaller weight): labels that would not make the
        map better are ignored. It costs 7 extra maps, and is done up to 10 000
        points with at least 6 labels in 2 classes; otherwise, and in the
        Explorer (where ρ is a slider), "auto" is 0.5. ``rho_`` is the
        weight used (see docs/hssne.md).
    must_link_mixing : {"per-point", "global"}, default="per-point"
        How must-links enter P~. "global" is the paper's
        P~ = (1 - rho) P + rho u / sum(u); "per-point" moves the share rho of
        each linked point's own mass to its partners, so small lasso groups
        are not over-weighted and adding one group leaves the others alone
        (see :mod:`nbembed.affinity.constraints`).
    must_link_neighbors : int, default=5
        Every must-link group (a labelled class, a lasso) also takes in its
        members' mutual neighbours: the unlabelled points among a member's
        this many strongest input neighbours (largest P_ij) that have the
        member among theirs and no other group's member, so that a linked
        point moves with its neighbourhood instead of being pulled out of it.
        Explicit pairs link their two points only. 0 links the members alone,
        as the paper does (see docs/hssne.md).
    optimizer : {"auto", "gradient", "fixed-point"}, default="auto"
        Main-phase optimizer after early exaggeration (which always uses
        gradient descent, as in the paper). "gradient" is t-SNE's momentum +
        gains descent; "fixed-point" the paper's update (eq. 14) with
        heavy-ball momentum and divergence recovery. "auto" uses "gradient"
        for alpha <= 1 and "fixed-point" for heavier tails, decided when the
        run is prepared (a live change of alpha keeps the optimizer): on
        digits gradient descent ended about 1% lower for alpha <= 1, the
        fixed-point update 3% lower at alpha = 2.
    max_iter : int, default=750
        Iterations of the default schedule, early exaggeration included (250
        exaggerated and 500 more, openTSNE's schedule). 1000 lowers the final
        KL by 1-4% more on most sets; on six sets from 1797 to 70 000 points
        (alpha = 0.5, 1 and 2) the maps' 10-NN accuracy and trustworthiness
        were the same at 750 to within 0.0006 (docs/hssne.md, "How many
        iterations").
    tol : float, default=1e-5
        Stop before ``max_iter`` once the run has converged: after early
        exaggeration, when the cost changed by at most ``tol`` of itself per
        iteration over each of the last two recording intervals (at least 100
        iterations; the cost is recorded every 50 or 100 iterations with an
        exact P, every 10, 50 (above 50 000 points) or 100 (above 500 000) with a
        sparse one).
        ``n_iter_`` then says where it stopped and ``converged_`` is True. 0 always runs
        ``max_iter`` iterations. On the 1797 digits the cost still falls by
        5e-5 per iteration at 1000 iterations for alpha = 1 (no early stop);
        at alpha = 0.5 it stops near 600 (docs/hssne.md, "Stopping early").
    early_exaggeration : float, default=12.0
    early_exaggeration_iter : int, default=250
    learning_rate : float or "auto", default="auto"
        Step size of the gradient optimizer; "auto" is
        max(n / early_exaggeration, 50), n / 12 by default (on digits it beat
        scikit-learn's n / 48 for alpha >= 1: KL 0.671 vs 0.683 at alpha = 1),
        and during early exaggeration the same up to 12 000 points (with the
        default exaggeration), then max(n / (4 early_exaggeration), 1000),
        which ended lower at 20 000 and 70 000 points
        (:func:`auto_learning_rates`). Where a step diverges (in any phase) the
        run goes back to its last good embedding and halves it; with "auto"
        that is part of choosing the step (on a few hundred points or fewer,
        "auto"'s floor of 50 can overshoot early exaggeration) and ``fit``
        does not warn unless the run could not recover.
    max_step_norm : float or None, default=5.0
        Longest step a point may take in one iteration of the gradient
        optimizer; longer ones are shortened. With the large steps of big
        data sets a few points otherwise jump tens to hundreds of units out
        (at 10^6 points 0.01% of them, while the rest lay within 5 units),
        and the grid of the approximate repulsion has to cover them. None
        removes the limit (openTSNE has the same safeguard, also 5 by
        default).
    fixed_point_momentum : float, default=0.95
        Heavy-ball momentum for the fixed-point optimizer, in [0, 1). 0 is the
        paper's parameter-free update. The momentum restarts whenever a step
        goes uphill.
    init : {"pca", "random"} or ndarray, default="pca"
    affinity : {"auto", "exact", "knn", "precomputed"}, default="auto"
        How P is built: all pairs, nearest neighbours (sparse), or given
        directly as ``X`` (a non-negative square matrix, symmetrized and
        normalized). "auto" is exact up to 5000 points, kNN above (memory
        O(n k) with k = 3 * perplexity neighbours per point).
    neighbors : {"auto", "exact", "approximate"}, default="auto"
        How the nearest neighbours of the kNN P are found: exact, or
        approximate (nearest-neighbour descent: nbembed's own for dense
        Euclidean rows; sparse rows and other metrics need the optional
        package pynndescent). "auto" is exact while it compares at most 4e11
        coordinates, n^2 times the features, and for dense Euclidean rows also
        while they hold at most 1e7 entries, n times the features (about
        200 000 points in 50 dimensions, 22 000 in 784; see
        :mod:`nbembed.affinity.perplexity`).
    metric : str, default="euclidean"
        Input metric: any of :func:`sklearn.metrics.pairwise_distances`
        ("cosine", ``1 - x.y / (||x|| ||y||)``, suits tf-idf rows; no row may then be
        all zeros), or "precomputed" for a dissimilarity matrix ``X``. A
        scipy.sparse ``X`` (CSR, CSC or COO, any float dtype) works with
        "euclidean" and "cosine": distances come from its stored entries and
        ``X`` is never densified (``init="pca"`` then uses ARPACK).
    repulsion : {"auto", "exact", "barnes-hut", "fft"}, default="auto"
        How the repulsion (the sum over all pairs) is computed each iteration:
        exactly, O(n^2); by a Barnes-Hut quadtree with opening angle
        ``theta``, O(n log n); or by FFT-accelerated interpolation on a grid,
        O(n + grid). The approximate ones need ``n_components`` <= 2 and sum the
        attraction over the stored entries of a sparse P. "auto" is exact with
        a dense P (``affinity="exact"``, the default up to 5000 points) and up
        to 2000 points; above, a grid of at most 4 nodes per point, as fine
        as that allows (node spacing 0.1 to 0.25), and Barnes-Hut once the
        embedding is too wide for it (:func:`~nbembed.objectives.hssne.adaptive_grid_spacing`,
        docs/scale.md).
    theta : float, default=0.5
        Barnes-Hut opening angle, >= 0: a cell of side s whose centre of mass
        lies at distance r from a point is used as a whole (to second order)
        when s < theta r. 0 is exact (and slow). Relative error of the
        repulsion about 0.3% at 0.5, 1-2% at 0.8.
    fft_nodes : int, default=3
        Interpolation nodes per grid box and dimension (the grid of
        ``repulsion="fft"`` and of the compact phases of "auto").
    fft_box_size : float, default=1.0
        Largest side of a grid box. The accuracy is set by the node spacing
        fft_box_size / fft_nodes: relative error of the repulsion about 3% at
        1/3 (openTSNE's default grid), 1% at 1/4, 0.4% at 1/6.
    fft_min_boxes : int, default=50
        Fewest grid boxes per dimension (small embeddings get smaller boxes).
    dtype : {"auto", "float64", "float32"}, default="auto"
        Precision of the gradient kernels. "float32" is about 2.4x faster on
        the O(n^2) repulsion with a relative error near 1e-6 in the gradient;
        the embedding, the optimizer state and the reported cost stay float64.
        The approximate repulsion always runs in float64 (only the attraction
        follows ``dtype`` there). "auto": float32 from ``SINGLE_PRECISION_MIN_N``
        points on (on the 1797 digits, five starts each, the mean final KL was
        0.7316 / 0.6724 / 1.2233 against float64's 0.7325 / 0.6748 / 1.2233 at
        alpha = 0.5 / 1 / 2: the same within the spread the optimization itself
        has), float64 otherwise (below that size an iteration takes well under a
        millisecond in float64 anyway).
    random_state : int, RandomState or None
    verbose : bool, default=False
        Log the cost through the ``nbembed`` logger.

    Attributes
    ----------
    embedding_ : ndarray (n_samples, n_components)
    kl_divergence_ : float
        KL(P~ || Q) at the end.
    n_iter_ : int
    converged_ : bool
        True when the run ended settled at a minimum of its cost (its cost changed by at
        most 1e-5 of itself per iteration between the last two records), did not end
        with a cost more than 5% above the one it started from (which warns) and did not
        end diverged (two or more recoveries from divergence with no step accepted
        since, or most steps shortened to ``max_step_norm``, which warns too); False
        means more iterations may still change the embedding (raise ``max_iter``), or a
        smaller ``learning_rate`` is needed. See
        ``nbembed.optim.run.RunOutcome``.
    n_recoveries_ : int
        How often the optimization diverged (a non-finite value, or a rise of the
        cost its steps descend: the exaggerated one during early exaggeration) and
        went back to its last good embedding, halving the step. With a
        ``learning_rate`` given as a number a ``RuntimeWarning`` says so after
        ``fit``.
    history_ : list of dict
        Cost and diagnostics recorded during the run.
    affinities_ : ndarray or scipy.sparse.csr_matrix
        The input P (before mixing in must-links); float64, or float32 from
        50 000 points on with float32 kernels (what the gradient reads there).
    rho_ : float
        The must-link weight used (``rho``, or what "auto" chose).
    rho_candidates_, rho_cv_errors_ : ndarray or None
        The weights ``rho="auto"`` compared and the fraction of labelled
        points each misclassified while hidden (None when nothing was compared).
    timings_ : nbembed.optim.timings.FitTimings
        Where the last fit's time went, measured with ``time.perf_counter``:
        wall-clock seconds of ``neighbors`` (the neighbour search, or the
        pairwise distances of an exact P; 0 with ``affinity="precomputed"``),
        ``calibration`` (the perplexity bandwidths, the symmetrization into P
        and mixing in the must-links; with ``rho="auto"``, the maps that chose
        it), ``initialization`` (the start),
        ``early_exaggeration`` and ``main`` (the iterations, with their cost
        checks and the callbacks), the iterations ``n_iter_early`` and
        ``n_iter_main`` of the last two, and ``ms_per_iteration_main``;
        ``timings_.as_dict()`` gives them all in that order. Input validation
        is in no phase. See :class:`nbembed.optim.timings.FitTimings`.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Column names of the DataFrame fitted on (only then); ``transform``
        refuses a DataFrame whose columns differ, and takes arrays by position.

    References
    ----------
    Z. Yang, I. King, Z. Xu, E. Oja. Heavy-tailed symmetric stochastic neighbor
    embedding. NIPS 2009.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from nbembed import HSSNE
    >>> X, y = load_iris(return_X_y=True)
    >>> Y = HSSNE(alpha=1.0, random_state=0).fit_transform(X)
    >>> Y.shape
    (150, 2)
    """

    live_parameters = HSSNEObjective.live_parameters
    annotation_kinds = HSSNEObjective.annotation_kinds
    accepts_sparse = True

    def __init__(self, n_components=2, *, alpha=1.0, perplexity=30.0, rho="auto",
                 must_link_mixing="per-point", must_link_neighbors=MUST_LINK_NEIGHBORS,
                 optimizer="auto", max_iter=750, tol=1e-5,
                 early_exaggeration=12.0, early_exaggeration_iter=250, learning_rate="auto",
                 max_step_norm=5.0,
                 fixed_point_momentum=0.95, init="pca", affinity="auto", neighbors="auto",
                 metric="euclidean", repulsion="auto", theta=0.5, fft_nodes=3, fft_box_size=1.0,
                 fft_min_boxes=50, dtype="auto", random_state=None, verbose=False):
        self.n_components = n_components
        self.alpha = alpha
        self.perplexity = perplexity
        self.rho = rho
        self.must_link_mixing = must_link_mixing
        self.must_link_neighbors = must_link_neighbors
        self.optimizer = optimizer
        self.max_iter = max_iter
        self.tol = tol
        self.early_exaggeration = early_exaggeration
        self.early_exaggeration_iter = early_exaggeration_iter
        self.learning_rate = learning_rate
        self.max_step_norm = max_step_norm
        self.fixed_point_momentum = fixed_point_momentum
        self.init = init
        self.affinity = affinity
        self.neighbors = neighbors
        self.metric = metric
        self.repulsion = repulsion
        self.theta = theta
        self.fft_nodes = fft_nodes
        self.fft_box_size = fft_box_size
        self.fft_min_boxes = fft_min_boxes
        self.dtype = dtype
        self.random_state = random_state
        self.verbose = verbose

    def prepare(self, X, y=None, annotations=None, init=None):
        """Build P and the starting embedding; return a resumable run.

        Parameters are those of :meth:`fit`.

        Returns
        -------
        EmbeddingRun
            With an :class:`~nbembed.objectives.hssne.HSSNEObjective`.
        """
        precomputed_affinity = self.affinity == "precomputed"
        X = validate_input(X, min_samples=4, metric=self.metric,
                           precomputed_affinity=precomputed_affinity, sparse_rows=True)
        n = X.shape[0]
        n_components, schedule = check_common_params(
            self, lambda exaggeration: auto_learning_rates(n, exaggeration))
        alpha = ALPHA.validate(self.alpha)
        if isinstance(self.rho, str) and self.rho != "auto":
            raise ValueError(f'rho must be "auto" or a number in [0, 1]; got {self.rho!r}.')
        rho = None if isinstance(self.rho, str) else RHO.validate(self.rho)
        optimizer = check_option(self.optimizer, "optimizer", ("auto", "gradient", "fixed-point"))
        check_option(self.affinity, "affinity", AFFINITY_METHODS + ("precomputed",))
        max_step_norm = None if self.max_step_norm is None else check_number(
            self.max_step_norm, "max_step_norm", low=0, low_open=True)
        fp_momentum = check_number(self.fixed_point_momentum, "fixed_point_momentum", low=0,
                                   high=1, high_open=True)
        tol = check_number(self.tol, "tol", low=0)
        mixing = check_option(self.must_link_mixing, "must_link_mixing", MIXINGS)
        # below the number of points, so that small data sets keep the default
        link_neighbors = min(n - 1, check_number(self.must_link_neighbors, "must_link_neighbors",
                                                 low=0, integer=True))
        dtype = check_option(self.dtype, "dtype", ("auto", "float64", "float32"))
        check_option(self.neighbors, "neighbors", NEIGHBORS)
        repulsion = check_option(self.repulsion, "repulsion", REPULSIONS)
        # A combination that cannot work fails before the affinities are computed.
        resolve_repulsion(repulsion, n, n_components, warn=False)
        approximation = dict(
            theta=check_number(self.theta, "theta", low=0),
            fft_nodes=check_number(self.fft_nodes, "fft_nodes", low=2, high=10, integer=True),
            fft_box_size=check_number(self.fft_box_size, "fft_box_size", low=0, low_open=True),
            fft_min_boxes=check_number(self.fft_min_boxes, "fft_min_boxes", low=1,
                                       integer=True))
        if self.verbose:
            enable_verbose_logging()
        self.rho_candidates_ = self.rho_cv_errors_ = None

        if dtype == "auto":
            dtype = "float32" if n >= SINGLE_PRECISION_MIN_N else "float64"
        timings = dict(neighbors=0.0)  # stays 0 with precomputed affinities: no search
        if precomputed_affinity:
            with timed(timings, "calibration"):
                P = normalize_affinities(X)
        else:
            P = joint_probabilities(X, self.perplexity, method=self.affinity,
                                    metric=self.metric, neighbors=self.neighbors,
                                    random_state=self.random_state, timings=timings,
                                    dtype=affinity_dtype(n, dtype))
        with timed(timings, "calibration"):
            neighbor_index = (strongest_neighbors(P, link_neighbors) if link_neighbors and (
                y is not None or annotations is not None) else None)
            links = must_links_from(y, annotations, n, neighbor_index)
        with timed(timings, "initialization"):
            start = initial_embedding(X, self.init if init is None else init, n_components,
                                      self.random_state, metric=self.metric,
                                      precomputed_affinity=precomputed_affinity)
        self.n_features_in_ = X.shape[1]

        def objective_with(links, rho):
            # The objective mixes the must-links into P and casts it to its dtype.
            return HSSNEObjective(P, links, n_components=n_components, alpha=alpha, rho=rho,
                                  must_link_mixing=mixing, must_link_neighbors=link_neighbors,
                                  neighbor_index=neighbor_index, dtype=dtype,
                                  repulsion=repulsion, **approximation)

        def run_of(objective):
            return EmbeddingRun(objective, start.copy(), cost_every=cost_interval(P),
                                max_step_norm=max_step_norm,
                                optimizer=resolve_optimizer(optimizer, alpha),
                                fixed_point_momentum=fp_momentum, tol=tol,
                                preparation=timings, **schedule)

        def embed(labels, rho):
            run = run_of(objective_with(must_links_from(labels, annotations, n, neighbor_index),
                                        rho))
            run.run()
            return run.embedding

        with timed(timings, "calibration"):
            self.rho_ = rho if rho is not None else self._choose_rho(y, n, embed)
            objective = objective_with(links, self.rho_)
        return run_of(objective)  # after the timed block, so that its time is counted

    def _choose_rho(self, y, n, embed):
        """``rho="auto"``: the weight chosen by cross-validation on the labels ``y``, or
        ``RHO_DEFAULT`` without labels to validate on or above ``RHO_CV_MAX_N`` points
        (see :mod:`nbembed.methods.must_link_weight`)."""
        labels = None if y is None else check_labels(series_values(y), n)
        if labels is None or not can_cross_validate(labels) or n > RHO_CV_MAX_N:
            return RHO_DEFAULT
        rho, self.rho_candidates_, self.rho_cv_errors_ = cross_validate_rho(
            embed, labels, check_random_state(self.random_state))
        return rho

    def with_chosen_settings(self):
        """A copy with ``rho`` fixed at ``rho_`` when it was "auto" (see
        ``EmbeddingEstimator.with_chosen_settings``); ``self`` otherwise."""
        if not isinstance(self.rho, str) or not hasattr(self, "rho_"):
            return self
        return copy_with(self, rho=self.rho_)

    def with_live_settings(self):
        """For the Explorer, where ρ is a slider: ``rho="auto"`` becomes
        ``RHO_DEFAULT`` instead of a search before the first frame."""
        return copy_with(self, rho=RHO_DEFAULT) if isinstance(self.rho, str) else self

    def _store_fitted(self, run):
        super()._store_fitted(run)
        self.affinities_ = run.objective.P
        self.timings_ = run.timings

    def _keep_for_new_points(self, X, run):
        if self.affinity == "precomputed":
            return None
        return perplexity_new_points(self, X, alpha=run.objective.alpha)
