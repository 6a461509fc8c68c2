"""SNE: asymmetric stochastic neighbour embedding (Hinton & Roweis, NIPS 2002).

Each point has its own input neighbourhood P_i (Gaussian with a perplexity-
calibrated width) and output neighbourhood Q_i (Gaussian, unit width); the cost
is sum_i KL(P_i || Q_i). It is the base of Mbed's neighbourhood term.
"""

from __future__ import annotations

from .._validation import check_option, check_repeated_rows
from ..affinity import conditional_probabilities
from ..affinity.perplexity import METHODS as AFFINITY_METHODS
from ..objectives.sne import SNEObjective
from ..optim import EmbeddingRun
from ._base import EmbeddingEstimator, check_common_params, enable_verbose_logging, \
    initial_embedding, validate_input
from ._new_points import perplexity_new_points


class SNE(EmbeddingEstimator):
    """Stochastic neighbour embedding with Gaussian input and output kernels.

    Parameters
    ----------
    n_components : int, default=2
    perplexity : float, default=30.0
    max_iter : int, default=1000
    early_exaggeration : float, default=4.0
    early_exaggeration_iter : int, default=100
    learning_rate : float or "auto", default="auto"
        "auto" is 0.25: the per-point gradients of SNE do not shrink with n the
        way those of symmetric SNE do. It overshoots early exaggeration, where
        the run halves it by itself (see ``HSSNE``; ``n_recoveries_`` counts it).
    init : {"pca", "random"} or ndarray, default="pca"
    affinity : {"auto", "exact", "knn"}, default="auto"
    metric : str, default="euclidean"
        Input metric, as in ``HSSNE``: any of
        :func:`sklearn.metrics.pairwise_distances` (``"cosine"`` for tf-idf
        rows, say), or "precomputed" for a dissimilarity matrix ``X``. A
        scipy.sparse ``X`` works with "euclidean" and "cosine" and is never
        densified.
    random_state : int, RandomState or None
    verbose : bool, default=False
        Log the cost through the ``nbembed`` logger.

    Attributes
    ----------
    embedding_ : ndarray (n_samples, n_components)
    kl_divergence_ : float
        sum_i KL(P_i || Q_i) at the end.
    n_iter_ : int
    converged_, n_recoveries_
        As in ``HSSNE``: whether the run settled, and how often it diverged and
        recovered.
    history_ : list of dict
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Column names of the DataFrame fitted on (only then); ``transform``
        refuses a DataFrame whose columns differ, and takes arrays by position.

    References
    ----------
    G. Hinton, S. Roweis. Stochastic neighbor embedding. NIPS 2002.
    """

    accepts_sparse = True

    def __init__(self, n_components=2, *, perplexity=30.0, max_iter=1000, early_exaggeration=4.0,
                 early_exaggeration_iter=100, learning_rate="auto", init="pca",
                 affinity="auto", metric="euclidean", random_state=None, verbose=False):
        self.n_components = n_components
        self.perplexity = perplexity
        self.max_iter = max_iter
        self.early_exaggeration = early_exaggeration
        self.early_exaggeration_iter = early_exaggeration_iter
        self.learning_rate = learning_rate
        self.init = init
        self.affinity = affinity
        self.metric = metric
        self.random_state = random_state
        self.verbose = verbose

    def prepare(self, X, y=None, annotations=None, init=None):
        """Build the conditional P and the start; return a resumable run
        (an :class:`~nbembed.optim.EmbeddingRun` of an
        :class:`~nbembed.objectives.sne.SNEObjective`)."""
        X = validate_input(X, min_samples=4, metric=self.metric, sparse_rows=True)
        n_components, schedule = check_common_params(self, lambda exaggeration: 0.25)
        check_option(self.affinity, "affinity", AFFINITY_METHODS)
        check_repeated_rows(X, metric=self.metric, stacklevel=3)
        if self.verbose:
            enable_verbose_logging()
        P, _ = conditional_probabilities(X, self.perplexity, method=self.affinity,
                                         metric=self.metric)
        start = initial_embedding(X, self.init if init is None else init, n_components,
                                  self.random_state, metric=self.metric)
        self.n_features_in_ = X.shape[1]
        return EmbeddingRun(SNEObjective(P), start, optimizer="gradient", **schedule)

    def _keep_for_new_points(self, X, run):
        return perplexity_new_points(self, X, alpha=0.0)
