"""HSSNE: heavy-tailed symmetric SNE (Yang, Xu, King & Oja, NIPS 2009).

t-SNE (alpha = 1) and Gaussian symmetric SNE (alpha = 0) are special cases of
the power family H(tau) = (1 + alpha tau)^(-1/alpha). Must-links make it
semi-supervised: each linked point gives the share rho of its attraction to its
partners (or, as in the paper, P~ = (1 - rho) P + rho U).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from .. import _config
from .._kernels import hssne as kernels
from .._validation import check_number, check_option
from ..affinity import joint_probabilities, mix_must_links, must_link_matrix
from ..affinity.constraints import MIXINGS
from ..affinity.perplexity import METHODS as AFFINITY_METHODS
from ..affinity.perplexity import normalize_affinities
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


def resolve_optimizer(optimizer, alpha):
    """The optimizer "auto" stands for at this alpha.

    It is decided once, when a run is prepared: switching from gradient
    descent to the fixed-point update in the middle of a run moves points
    abruptly, which a live slider must not do.
    """
    if optimizer != "auto":
        return optimizer
    return "fixed-point" if alpha > AUTO_FIXED_POINT_ABOVE_ALPHA else "gradient"


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
                 dtype=np.float64, **schedule):
        super().__init__(Y0, **schedule)
        self.P = P
        self.links = links
        self.must_link_mixing = must_link_mixing
        self.dtype = np.dtype(dtype).type
        self.alpha = float(alpha)
        self.rho = float(rho)
        self._kernel = kernels.kernel_for(self.alpha)
        self._mix()

    def _mix(self):
        self.P_mixed = mix_must_links(self.P, self.links, self.rho, self.must_link_mixing)
        self._p_log_p = _p_log_p(self.P_mixed)
        # The gradient kernels run in self.dtype; the cost always in float64.
        if self.dtype is np.float64:
            self._P_kernel = self.P_mixed
        else:
            self._P_kernel = self.P_mixed.astype(self.dtype)

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
        if alpha is not None:
            self.alpha = alpha
            self._kernel = kernels.kernel_for(alpha)
        if rho is not None:
            self.rho = rho
            self._mix()

    def _gradient(self, Yt, exaggeration, grad):
        P = self._P_kernel
        Yt = Yt if self.dtype is np.float64 else Yt.astype(self.dtype)
        alpha = self.dtype(self.alpha)
        if sp.issparse(P):
            _, a_rowsum = kernels.hssne_sparse(Yt, P.indptr, P.indices, P.data, alpha,
                                               self._kernel, exaggeration, grad)
        else:
            _, a_rowsum = kernels.hssne_dense(Yt, P, alpha, self._kernel, exaggeration, grad)
        return a_rowsum

    def _cost(self, Yt):
        P = self.P_mixed
        z = kernels.hssne_z(Yt, self.alpha, self._kernel)
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
    n_iter : int, default=1000
        Iterations of the default schedule, early exaggeration included.
    early_exaggeration : float, default=12.0
    early_exaggeration_iter : int, default=250
    learning_rate : float or "auto", default="auto"
        Step size of the gradient optimizer; "auto" is
        max(n / early_exaggeration, 50), n / 12 by default (on digits it beat
        scikit-learn's n / 48 for alpha >= 1: KL 0.671 vs 0.683 at alpha = 1).
    fixed_point_momentum : float, default=0.95
        Heavy-ball momentum for the fixed-point optimizer, in [0, 1). 0 is the
        paper's parameter-free update. The momentum restarts whenever a step
        goes uphill.
    init : {"pca", "random"} or ndarray, default="pca"
    affinity : {"auto", "exact", "knn", "precomputed"}, default="auto"
        How P is built: all pairs, nearest neighbours (sparse), or given
        directly as ``X`` (a non-negative square matrix, symmetrized and
        normalized). "auto" is exact up to 5000 points.
    metric : str, default="euclidean"
        Input metric, or "precomputed" for a dissimilarity matrix ``X``.
    dtype : {"float64", "float32"}, default="float64"
        Precision of the gradient kernels. "float32" is about 2.4x faster on
        the O(n^2) repulsion with a relative error near 1e-6 in the gradient;
        the embedding, the optimizer state and the reported cost stay float64.
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
                 must_link_mixing="per-point", optimizer="auto", n_iter=1000, early_exaggeration=12.0,
                 early_exaggeration_iter=250, learning_rate="auto", fixed_point_momentum=0.95,
                 init="pca", affinity="auto", metric="euclidean", dtype="float64",
                 random_state=None, verbose=False):
        self.n_components = n_components
        self.alpha = alpha
        self.perplexity = perplexity
        self.rho = rho
        self.must_link_mixing = must_link_mixing
        self.optimizer = optimizer
        self.n_iter = n_iter
        self.early_exaggeration = early_exaggeration
        self.early_exaggeration_iter = early_exaggeration_iter
        self.learning_rate = learning_rate
        self.fixed_point_momentum = fixed_point_momentum
        self.init = init
        self.affinity = affinity
        self.metric = metric
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
            self, lambda exaggeration: max(n / exaggeration, 50.0))
        alpha = ALPHA.validate(self.alpha)
        rho = RHO.validate(self.rho)
        optimizer = check_option(self.optimizer, "optimizer", ("auto", "gradient", "fixed-point"))
        check_option(self.affinity, "affinity", AFFINITY_METHODS + ("precomputed",))
        fp_momentum = check_number(self.fixed_point_momentum, "fixed_point_momentum", low=0,
                                   high=1, high_open=True)
        mixing = check_option(self.must_link_mixing, "must_link_mixing", MIXINGS)
        dtype = check_option(self.dtype, "dtype", ("float64", "float32"))
        if self.verbose:
            enable_verbose_logging()

        if precomputed_affinity:
            P = normalize_affinities(X)
        else:
            P = joint_probabilities(X, self.perplexity, method=self.affinity,
                                    metric=self.metric)
        pairs, groups = semi_supervised_groups(y, annotations, n)
        links = must_link_matrix(n, pairs, groups)
        start = initial_embedding(X, self.init if init is None else init, n_components,
                                  self.random_state, metric=self.metric,
                                  precomputed_affinity=precomputed_affinity)
        self.n_features_in_ = X.shape[1]
        # A cost with a dense P takes one logarithm per pair, about 20 gradients.
        cost_every = 10 if sp.issparse(P) else 50
        return HSSNERun(P, links, start, alpha=alpha, rho=rho, must_link_mixing=mixing,
                        dtype=dtype, cost_every=cost_every,
                        optimizer=resolve_optimizer(optimizer, alpha),
                        fixed_point_momentum=fp_momentum, **schedule)

    def _store_fitted(self, run):
        super()._store_fitted(run)
        self.affinities_ = run.P
