"""HSSNE: heavy-tailed symmetric SNE (Yang, Xu, King & Oja, NIPS 2009).

t-SNE (alpha = 1) and Gaussian symmetric SNE (alpha = 0) are special cases of
the power family H(tau) = (1 + alpha tau)^(-1/alpha). Must-links make it
semi-supervised: each linked point gives the share rho of its attraction to its
partners (or, as in the paper, P~ = (1 - rho) P + rho U).
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from .. import _config
from .._kernels import hssne as kernels
from .._kernels.barnes_hut import barnes_hut_repulsion
from .._kernels.interpolation import grid_shift, interpolation_repulsion
from .._kernels.locality import morton_order, permute_csr
from .._validation import check_number, check_option
from ..affinity import joint_probabilities, mix_must_links, must_link_matrix
from ..affinity.constraints import MIXINGS
from ..affinity.perplexity import METHODS as AFFINITY_METHODS
from ..affinity.perplexity import NEIGHBORS, normalize_affinities
from ..optim import EmbeddingRun, LiveParameter
from ._base import EmbeddingEstimator, check_common_params, enable_verbose_logging, \
    initial_embedding, semi_supervised_groups, validate_input

ALPHA = LiveParameter("alpha", 0.0, math.inf, (0.0, 3.0), 0.05,
                      "Tail heaviness: 0 Gaussian (SSNE), 1 t-SNE, larger = heavier tails",
                      label="α")
RHO = LiveParameter("rho", 0.0, 1.0, (0.0, 1.0), 0.05,
                    "Weight of the must-links in P~ = (1 - rho) P + rho U", label="ρ")

#: ``optimizer="auto"`` uses the accelerated fixed-point update above this alpha
#: and gradient descent up to it: on digits gradient descent ended about 1% lower
#: for alpha <= 1, the fixed-point update 3% lower at alpha = 2 (docs/hssne.md).
AUTO_FIXED_POINT_ABOVE_ALPHA = 1.0

REPULSIONS = ("auto", "exact", "barnes-hut", "fft")

#: The same limit for alphas without a closed-form kernel when P is sparse
#: (with a dense P the attraction costs an exp and a log per pair whatever the
#: repulsion). With alpha = 0.7 and a kNN P, Barnes-Hut took 3.6 / 11 / 24 ms an
#: iteration at 2000 / 5000 / 10 000 points, the exact sum 5.9 / 27 / 100 ms.
#: The alpha of a run can change (a slider), so "auto" is resolved again then.
EXACT_REPULSION_MAX_N_ANY_ALPHA = 2000

#: The "adaptive" repulsion (what "auto" picks for large n) chooses before every
#: evaluation between the FFT grid and Barnes-Hut. The grid costs
#: O(nodes log nodes + n) and the tree O(n log n) whatever the extent; with
#: single-precision transforms a grid of 4 nodes per point took 40 ms against the
#: tree's 55 at 70 000 points, 0.56 s against 1.1 s at 10^6 (docs/scale.md). So
#: the grid gets at most ``GRID_NODES_PER_POINT`` nodes per point: its node
#: spacing is the finest of ``GRID_SPACINGS`` that keeps within that budget
#: (relative error of the repulsion near 1e-3 at 0.1, below 1% at 0.2), and an
#: embedding too wide even for the coarsest gets the tree. openTSNE's spacing 1/3
#: (errors of 2-4%) was cheaper still, but on 70 000 USPS-like points it ended
#: 1% higher in KL at alpha = 0.5 and 1 even with the moving grid. A few fixed
#: spacings, not a continuous one, so that the kernel's spectrum is reused
#: between iterations.
GRID_SPACINGS = (0.1, 0.125, 0.16, 0.2)
GRID_NODES_PER_POINT = 4.0


def adaptive_grid_spacing(extent, n, min_nodes):
    """Node spacing of the "adaptive" repulsion's grid, or None for Barnes-Hut.

    Parameters
    ----------
    extent : float
        Largest side of the embedding's bounding box.
    n : int
        Number of points.
    min_nodes : int
        Fewest nodes per dimension of any grid.
    """
    budget = math.sqrt(GRID_NODES_PER_POINT * n)  # nodes per dimension
    if min_nodes > budget:
        return None
    for spacing in GRID_SPACINGS:
        if extent / spacing <= budget:
            return spacing
    return None


#: From this many points on, approximate runs number the points along the
#: embedding's Z-order curve, renewed every ``REORDER_EVERY`` iterations, so
#: that the sums over the stored entries of P read nearby memory
#: (:mod:`nbembed._kernels.locality`). Below it the embedding fits in the
#: processor's caches anyway.
LOCAL_ORDER_MIN_N = 50_000
REORDER_EVERY = 50


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


def resolve_repulsion(repulsion, n, n_components, alpha=1.0, sparse_affinities=False,
                      warn=True):
    """The repulsion "auto" stands for, or an error for a combination that cannot work."""
    if repulsion == "auto":
        limit = _config.EXACT_REPULSION_MAX_N
        if sparse_affinities and n_components <= 2 and not kernels.has_closed_form(alpha):
            limit = EXACT_REPULSION_MAX_N_ANY_ALPHA
        if n <= limit:
            return "exact"
        if n_components > 2:
            if warn:
                warnings.warn(
                    f"Approximate repulsion needs n_components <= 2; with {n_components} "
                    f"dimensions and n = {n} the exact O(n^2) repulsion is used, which is "
                    f"slow at this size.", stacklevel=4)
            return "exact"
        return "adaptive"
    if repulsion != "exact" and n_components > 2:
        raise ValueError(
            f"repulsion={repulsion!r} supports n_components=1 or 2 only (got {n_components}); "
            f"use repulsion='exact' (O(n^2) per iteration) for more dimensions.")
    return repulsion


#: Iterations between two evaluations of the cost with a sparse P of up to
#: ``COST_EVERY_MAX_N`` points; five times as many with a dense P or more points.
COST_EVERY = 10
COST_EVERY_MAX_N = 100_000


def cost_interval(P):
    """Iterations between two evaluations of the cost.

    A cost with a dense P takes one logarithm per pair, about 20 gradients; with a
    sparse one, one logarithm per stored entry, which at 10^6 points costs as
    much as two or three whole iterations (0.75 s), so there the cost is
    recorded less often.
    """
    if not sp.issparse(P) or P.shape[0] > COST_EVERY_MAX_N:
        return 5 * COST_EVERY
    return COST_EVERY


class LocalOrder(NamedTuple):
    """The points numbered along the embedding's Z-order curve, and P in that order.

    Point ``order[k]`` of the data is number k here. ``since`` is the iteration
    at which the order was made. P's values are kept in single precision (a
    relative rounding of 6e-8, far below the repulsion's error): this copy is
    the largest array of a run on 10^6 points.
    """

    order: np.ndarray
    since: int
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray


def _p_log_p(P):
    values = P.data if sp.issparse(P) else P[P > 0]
    return float(np.sum(values * np.log(values)))


class HSSNERun(EmbeddingRun):
    """A resumable HSSNE optimization (see :class:`~nbembed.optim.EmbeddingRun`).

    Live parameters: ``alpha`` and ``rho``; :meth:`set_annotations` replaces
    the constraints while running.
    """

    name = "HSSNE"
    live_parameters = {"alpha": ALPHA, "rho": RHO}
    annotation_kinds = ("must_link", "labels")

    def __init__(self, P, links, Y0, *, alpha, rho, must_link_mixing="per-point",
                 dtype=np.float64, repulsion="exact", theta=0.5, fft_nodes=3,
                 fft_box_size=1.0, fft_min_boxes=50, **schedule):
        super().__init__(Y0, **schedule)
        self.P = P
        self.links = links
        self.must_link_mixing = must_link_mixing
        self.dtype = np.dtype(dtype).type
        self.alpha = float(alpha)
        self.rho = float(rho)
        self.repulsion_option = repulsion
        self.repulsion = resolve_repulsion(repulsion, self.n_samples, self._Yt.shape[0],
                                           self.alpha, sp.issparse(P))
        self.theta = float(theta)
        self.fft_params = dict(n_nodes=int(fft_nodes), box_size=float(fft_box_size),
                               min_boxes=int(fft_min_boxes))
        self._fft_cache = {}
        self._repulsion_cache = None
        self._mix()

    def _mix(self):
        self.P_mixed = mix_must_links(self.P, self.links, self.rho, self.must_link_mixing)
        if self.repulsion != "exact" and not sp.issparse(self.P_mixed):
            # The approximate paths sum the attraction over stored entries only.
            self.P_mixed = sp.csr_matrix(self.P_mixed)
        self._p_log_p = _p_log_p(self.P_mixed)
        # The gradient kernels run in self.dtype; the cost always in float64.
        if self.dtype is np.float64:
            self._P_kernel = self.P_mixed
        else:
            self._P_kernel = self.P_mixed.astype(self.dtype)
        self._local = None

    def set_annotations(self, annotations=None, y=None):
        """Replace the must-links with those of ``annotations`` and labels ``y``.

        Takes effect at the next iteration; the embedding is kept.

        Parameters
        ----------
        annotations : Annotations, optional
        y : array-like of int, optional
            Labels with -1 for unlabelled points.

        Returns
        -------
        self
        """
        pairs, groups = semi_supervised_groups(y, annotations, self.n_samples)
        links = must_link_matrix(self.n_samples, pairs, groups)
        with _config.KERNEL_LOCK:
            self.links = links
            self._mix()
            self._good_cost = None
        return self

    def _apply_params(self, alpha=None, rho=None):
        remix = rho is not None
        if alpha is not None:
            self.alpha = alpha
            repulsion = resolve_repulsion(self.repulsion_option, self.n_samples,
                                          self._Yt.shape[0], alpha, sp.issparse(self.P),
                                          warn=False)
            remix |= repulsion != self.repulsion
            self.repulsion = repulsion
        if rho is not None:
            self.rho = rho
        if remix:
            self._mix()

    def _grid_spacing(self, Yt):
        """Node spacing of the "adaptive" grid for Yt, or None for Barnes-Hut."""
        extent = float((Yt.max(axis=1) - Yt.min(axis=1)).max())
        p = self.fft_params
        return adaptive_grid_spacing(extent, Yt.shape[1], p["min_boxes"] * p["n_nodes"])

    def _approximation(self, Yt):
        """Which approximation serves this embedding, "barnes-hut" or "fft"."""
        if self.repulsion != "adaptive":
            return self.repulsion
        return "barnes-hut" if self._grid_spacing(Yt) is None else "fft"

    def _grid_params(self, Yt):
        """The grid's parameters: as given, or the spacing "adaptive" chooses for Yt."""
        if self.repulsion != "adaptive":
            return self.fft_params
        return dict(self.fft_params, box_size=self._grid_spacing(Yt) * self.fft_params["n_nodes"])

    def _approximate_repulsion(self, Yt, repulsion=None):
        """Z, and the repulsive forces into ``repulsion`` (n, d) when given."""
        if Yt.shape[0] == 1:
            # A line is a plane with a zero second coordinate (no force along it).
            forces = None if repulsion is None else np.empty((Yt.shape[1], 2))
            z = self._approximate_repulsion(np.vstack([Yt, np.zeros_like(Yt)]), forces)
            if repulsion is not None:
                repulsion[:, 0] = forces[:, 0]
            return z
        if self._approximation(Yt) == "barnes-hut":
            return barnes_hut_repulsion(Yt, self.alpha, self.theta, repulsion)
        return interpolation_repulsion(Yt, self.alpha, repulsion=repulsion,
                                       shift=grid_shift(self.iteration),
                                       cache=self._fft_cache, **self._grid_params(Yt))

    def _repulsion_at(self, Yt):
        """Approximate Z and forces at Yt, reusing the last evaluation when nothing
        changed: the cost recorded after iteration k and the gradient of iteration
        k + 1 are taken at the same embedding, so the cost's Z comes for free."""
        # Which approximation serves Yt follows from Yt and the parameters in the key.
        key = (self.iteration, self.alpha, self.theta, tuple(self.fft_params.items()))
        cached = self._repulsion_cache
        if cached is not None and cached[0] == key and np.array_equal(cached[1], Yt):
            return cached[2], cached[3]
        forces = np.empty(Yt.shape[::-1])
        z = self._approximate_repulsion(Yt, forces)
        self._repulsion_cache = (key, Yt.copy(), z, forces)
        return z, forces

    def _local_order(self, Yt, renew=False):
        """The points' spatial order and P in it, or None where the data's order is used.

        ``renew`` computes the order again from Yt when it is missing or
        ``REORDER_EVERY`` iterations old.
        """
        if self.repulsion == "exact" or self.n_samples < LOCAL_ORDER_MIN_N:
            return None
        local = self._local
        if renew and (local is None or self.iteration - local.since >= REORDER_EVERY):
            order = morton_order(Yt)
            P = self.P_mixed
            local = self._local = None  # the old copy goes before the new one is made
            self._local = local = LocalOrder(
                order, self.iteration,
                *permute_csr(P.indptr, P.indices, P.data.astype(np.float32), order))
        return local

    def _gradient(self, Yt, exaggeration, grad):
        alpha = self.dtype(self.alpha)
        if self.repulsion != "exact":
            return self._approximate_gradient(Yt, alpha, exaggeration, grad)
        P = self._P_kernel
        Yk = Yt if self.dtype is np.float64 else Yt.astype(self.dtype)
        if sp.issparse(P):
            _, a_rowsum = kernels.hssne_sparse(Yk, P.indptr, P.indices, P.data, alpha,
                                               exaggeration, grad)
        else:
            _, a_rowsum = kernels.hssne_dense(Yk, P, alpha, exaggeration, grad)
        return a_rowsum

    def _in_local_order(self, Yt, P, renew=False):
        """(Yl, indptr, indices, data, order): the embedding and P's CSR arrays in
        the spatial order when there is one; else Yt and ``P`` as they are, with
        order None."""
        local = self._local_order(Yt, renew)
        if local is None:
            return Yt, P.indptr, P.indices, P.data, None
        return (np.ascontiguousarray(Yt[:, local.order]), local.indptr, local.indices,
                local.data, local.order)

    def _approximate_gradient(self, Yt, alpha, exaggeration, grad):
        """Attraction over the stored entries of P, repulsion approximate; in the
        spatial order when there is one, the results put back in the data's."""
        Yl, indptr, indices, data, order = self._in_local_order(Yt, self._P_kernel, renew=True)
        Yk = Yl if self.dtype is np.float64 else Yl.astype(self.dtype)
        attraction = np.empty(Yl.shape[::-1])
        a_rowsum = kernels.hssne_attraction(Yk, indptr, indices, data, alpha, attraction)
        z, repulsion = self._repulsion_at(Yl)
        if order is None:
            kernels.combine(grad, attraction, repulsion, exaggeration, z)
            return a_rowsum
        grad_l = np.empty_like(grad)
        kernels.combine(grad_l, attraction, repulsion, exaggeration, z)
        grad[:, order] = grad_l
        a_rowsum_data_order = np.empty_like(a_rowsum)
        a_rowsum_data_order[order] = a_rowsum
        return a_rowsum_data_order

    def _cost(self, Yt):
        if self.repulsion != "exact":
            # P_mixed is sparse on the approximate paths.
            Yl, indptr, indices, data, _ = self._in_local_order(Yt, self.P_mixed)
            z = self._repulsion_at(Yl)[0]
            p_log_h = kernels.sparse_p_log_h(Yl, indptr, indices, data, self.alpha)
        else:
            P = self.P_mixed
            z = kernels.hssne_z(Yt, self.alpha)
            if sp.issparse(P):
                p_log_h = kernels.sparse_p_log_h(Yt, P.indptr, P.indices, P.data, self.alpha)
            else:
                p_log_h = kernels.dense_p_log_h(Yt, P, self.alpha)
        return self._p_log_p - p_log_h + (math.log(z) if z > 0 else math.inf)


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
    rho : float, default=0.5
        Weight of the must-links, in [0, 1]: the share of a linked point's
        attraction that goes to its partners (``must_link_mixing="per-point"``),
        or of all attraction (``"global"``). 0 ignores must-links. Only matters
        when must-links are given. Live.
    must_link_mixing : {"per-point", "global"}, default="per-point"
        How must-links enter P~. "global" is the paper's
        P~ = (1 - rho) P + rho u / sum(u); "per-point" moves the share rho of
        each linked point's own mass to its partners, so small lasso groups
        are not over-weighted and adding one group leaves the others alone
        (see :mod:`nbembed.affinity.constraints`).
    optimizer : {"auto", "gradient", "fixed-point"}, default="auto"
        Main-phase optimizer after early exaggeration (which always uses
        gradient descent, as in the paper). "gradient" is t-SNE's momentum +
        gains descent; "fixed-point" the paper's update (eq. 14) with
        heavy-ball momentum and divergence recovery. "auto" uses "gradient"
        for alpha <= 1 and "fixed-point" for heavier tails, decided when the
        run is prepared (a live change of alpha keeps the optimizer): on
        digits gradient descent ended about 1% lower for alpha <= 1, the
        fixed-point update 3% lower at alpha = 2.
    max_iter : int, default=1000
        Iterations of the default schedule, early exaggeration included.
    early_exaggeration : float, default=12.0
    early_exaggeration_iter : int, default=250
    learning_rate : float or "auto", default="auto"
        Step size of the gradient optimizer; "auto" is
        max(n / early_exaggeration, 50), n / 12 by default (on digits it beat
        scikit-learn's n / 48 for alpha >= 1: KL 0.671 vs 0.683 at alpha = 1),
        and during early exaggeration the same up to 12 000 points (with the
        default exaggeration), then max(n / (4 early_exaggeration), 1000),
        which ended lower at 20 000 and 70 000 points
        (:func:`auto_learning_rates`).
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
        How the nearest neighbours of the kNN P are found: exact (scikit-learn)
        or approximate (nearest-neighbour descent, needs the optional package
        pynndescent). "auto" is exact up to 50 000 points (see
        :mod:`nbembed.affinity.perplexity`).
    metric : str, default="euclidean"
        Input metric, or "precomputed" for a dissimilarity matrix ``X``.
    repulsion : {"auto", "exact", "barnes-hut", "fft"}, default="auto"
        How the repulsion (the sum over all pairs) is computed each iteration:
        exactly, O(n^2); by a Barnes-Hut quadtree with opening angle
        ``theta``, O(n log n); or by FFT-accelerated interpolation on a grid,
        O(n + grid). The approximate ones need ``n_components`` <= 2 and sum the
        attraction over the stored entries of a sparse P. "auto" is exact up
        to 10 000 points (2000 for an alpha without a closed-form kernel,
        i.e. other than 0, 0.5, 1 and 2, when P is sparse; decided again when
        alpha changes); above, a grid of at most 4 nodes per point, as fine
        as that allows (node spacing 0.1 to 0.2), and Barnes-Hut once the
        embedding is too wide for it (:func:`adaptive_grid_spacing`,
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
    dtype : {"float64", "float32"}, default="float64"
        Precision of the gradient kernels. "float32" is about 2.4x faster on
        the O(n^2) repulsion with a relative error near 1e-6 in the gradient;
        the embedding, the optimizer state and the reported cost stay float64.
        The approximate repulsion always runs in float64.
    random_state : int, RandomState or None
    verbose : bool, default=False
        Log the cost through the ``nbembed`` logger.

    Attributes
    ----------
    embedding_ : ndarray (n_samples, n_components)
    kl_divergence_ : float
        KL(P~ || Q) at the end.
    n_iter_ : int
    history_ : list of dict
        Cost and diagnostics recorded during the run.
    affinities_ : ndarray or scipy.sparse.csr_matrix
        The input P (before mixing in must-links).
    n_features_in_ : int

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

    live_parameters = HSSNERun.live_parameters
    annotation_kinds = HSSNERun.annotation_kinds

    def __init__(self, n_components=2, *, alpha=1.0, perplexity=30.0, rho=0.5,
                 must_link_mixing="per-point", optimizer="auto", max_iter=1000,
                 early_exaggeration=12.0, early_exaggeration_iter=250, learning_rate="auto",
                 max_step_norm=5.0,
                 fixed_point_momentum=0.95, init="pca", affinity="auto", neighbors="auto",
                 metric="euclidean", repulsion="auto", theta=0.5, fft_nodes=3, fft_box_size=1.0,
                 fft_min_boxes=50, dtype="float64", random_state=None, verbose=False):
        self.n_components = n_components
        self.alpha = alpha
        self.perplexity = perplexity
        self.rho = rho
        self.must_link_mixing = must_link_mixing
        self.optimizer = optimizer
        self.max_iter = max_iter
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
        HSSNERun
        """
        precomputed_affinity = self.affinity == "precomputed"
        X = validate_input(X, min_samples=4, metric=self.metric,
                           precomputed_affinity=precomputed_affinity)
        n = X.shape[0]
        n_components, schedule = check_common_params(
            self, lambda exaggeration: auto_learning_rates(n, exaggeration))
        alpha = ALPHA.validate(self.alpha)
        rho = RHO.validate(self.rho)
        optimizer = check_option(self.optimizer, "optimizer", ("auto", "gradient", "fixed-point"))
        check_option(self.affinity, "affinity", AFFINITY_METHODS + ("precomputed",))
        max_step_norm = None if self.max_step_norm is None else check_number(
            self.max_step_norm, "max_step_norm", low=0, low_open=True)
        fp_momentum = check_number(self.fixed_point_momentum, "fixed_point_momentum", low=0,
                                   high=1, high_open=True)
        mixing = check_option(self.must_link_mixing, "must_link_mixing", MIXINGS)
        dtype = check_option(self.dtype, "dtype", ("float64", "float32"))
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

        if precomputed_affinity:
            P = normalize_affinities(X)
        else:
            P = joint_probabilities(X, self.perplexity, method=self.affinity,
                                    metric=self.metric, neighbors=self.neighbors,
                                    random_state=self.random_state)
        pairs, groups = semi_supervised_groups(y, annotations, n)
        links = must_link_matrix(n, pairs, groups)
        start = initial_embedding(X, self.init if init is None else init, n_components,
                                  self.random_state, metric=self.metric,
                                  precomputed_affinity=precomputed_affinity)
        self.n_features_in_ = X.shape[1]
        return HSSNERun(P, links, start, alpha=alpha, rho=rho, must_link_mixing=mixing,
                        dtype=dtype, repulsion=repulsion, cost_every=cost_interval(P),
                        max_step_norm=max_step_norm,
                        optimizer=resolve_optimizer(optimizer, alpha),
                        fixed_point_momentum=fp_momentum, **approximation, **schedule)

    def _store_fitted(self, run):
        super()._store_fitted(run)
        self.affinities_ = run.P
