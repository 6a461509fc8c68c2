"""What every embedding estimator shares: the scikit-learn contract on top of
the run protocol, input handling and initialization."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import ArpackError, eigsh

from .._estimator import Transformer, check_is_fitted
from .._validation import check_cosine_rows, check_data, check_dense_allowed, check_metric, \
    check_number, check_option, check_random_state, check_sparse_metric, \
    check_square_nonnegative, record_column_names
from ..optim.callbacks import as_list
from ..optim.embedding_run import MOSTLY_SHORTENED
from ..optim.pinning import check_indices
from ._new_points import check_new_points, check_placement_perplexity

#: Standard deviation of the first coordinate of a PCA or random start, as in
#: scikit-learn and openTSNE: small, so early exaggeration can form clusters.
INIT_SCALE = 1e-4


class EmbeddingEstimator(Transformer):
    """Base class: ``fit`` is ``prepare`` + the default schedule.

    Subclasses define ``prepare`` (returning a run), the class attributes
    ``live_parameters`` (name -> :class:`~nbembed.optim.LiveParameter`) and
    ``annotation_kinds`` (which parts of :class:`~nbembed.Annotations` they use),
    and ``_store_fitted(run)``.
    """

    live_parameters: dict = {}
    annotation_kinds: tuple = ()
    #: Whether ``fit`` takes ``pinned`` (runs of gradient-based methods pin points).
    pinnable = True
    #: Whether ``fit`` and ``transform`` take a scipy.sparse X of data rows
    #: (with ``metric="euclidean"`` or ``"cosine"``).
    accepts_sparse = False

    def fit(self, X, y=None, *, annotations=None, init=None, pinned=None, callbacks=None):
        """Embed ``X`` and return the fitted estimator.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix, (n_samples, n_features) or (n_samples, n_samples)
            Data, or a square matrix when ``metric="precomputed"`` or
            ``affinity="precomputed"``. Sparse data rows where the estimator
            takes them (HSSNE, SNE, Mbed, NeRV), with ``metric="euclidean"`` or
            ``"cosine"``.
        y : array-like of int (n_samples,), optional
            Class labels with -1 for unlabelled points (semi-supervised).
        annotations : Annotations, optional
            Labels and constraints made by hand.
        init : ndarray (n_samples, n_components), optional
            Initial embedding; overrides the ``init`` parameter.
        pinned : array-like of int, optional
            Points that stay at their ``init`` positions (``init``, or the
            ``init`` parameter, must then be an array); see
            :meth:`~nbembed.optim.ObjectiveRun.pin`.
        callbacks : callable or list of callables, optional
            Called as ``callback(run)`` after each iteration; see
            :mod:`nbembed.optim.callbacks`. Those with an
            ``on_prepare(estimator)`` method hear first that the run is being
            prepared (neighbours, affinities).

        Returns
        -------
        self
        """
        if pinned is not None and not self.pinnable:
            raise ValueError(f"{type(self).__name__} does not take pinned: it solves for the "
                             f"whole embedding at once instead of moving points step by "
                             f"step. Use a gradient-based method to pin points.")
        pins = pinned_start(pinned, getattr(self, "init", None) if init is None else init)
        callbacks = as_list(callbacks)
        for cb in callbacks:
            if hasattr(cb, "on_prepare"):
                cb.on_prepare(self)
        run = self.prepare(X, y, annotations=annotations, init=init)
        if pins is not None:
            run.pin(*pins)
        run.run(callbacks)
        self._finish_fit(run)
        self._new_points = self._keep_for_new_points(X, run)
        record_column_names(self, X)
        return self

    def with_chosen_settings(self):
        """The estimator to prepare further runs on the same data with.

        Where ``prepare`` chose a setting by an expensive search on the data
        (Mbed's cross-validated ``sigma``), the returned copy has it fixed, so
        that restarting an interactive run or adding points to it does not
        search again and keeps the same setting. Here: ``self``.

        Returns
        -------
        EmbeddingEstimator
        """
        return self

    def with_live_settings(self):
        """The estimator an interactive session (the Explorer) starts from.

        Where a setting is chosen by a search that the session's own controls
        make moot (HSSNE's ``rho="auto"``, which a slider sets there), the
        copy returned has that setting at its default, so the first frame does
        not wait for the search. Here: ``self``.

        Returns
        -------
        EmbeddingEstimator
        """
        return self

    def _finish_fit(self, run):
        """Store what the finished run produced and how it ended; warn if it diverged.

        Runs of an objective (every gradient-based method) give the fitted
        attributes ``converged_`` (:attr:`nbembed.optim.run.RunOutcome.converged`)
        and ``n_recoveries_`` (recoveries from divergence).
        """
        self._store_fitted(run)
        if hasattr(run, "outcome"):
            self.converged_ = run.outcome().converged
            self.n_recoveries_ = run.recoveries
            warn_about_divergence(run, self.get_params(deep=False))

    def _keep_for_new_points(self, X, run):
        """The :class:`~nbembed.methods._new_points.NewPoints` that ``transform``
        places new points with, or None where they cannot be placed."""
        return None

    def transform(self, X, *, perplexity=None):
        """Place new points against the fitted map without moving it.

        Each new point gets an input neighbourhood over its nearest training
        points (calibrated to a perplexity, or with Mbed's fitted width),
        starts at the weighted mean of their positions and minimizes its own
        cost against the fixed ``embedding_`` with the method's output kernel.
        New points do not interact: each lands where it would alone. A training
        point lands near, not exactly at, its fitted position. A new point stays
        inside the map's bounding box enlarged on every side by half its
        largest extent (``MAP_MARGIN``). See docs/arrange.md ("New points").

        Parameters
        ----------
        X : array-like or scipy.sparse matrix (n_new, n_features)
            New data; with ``metric="precomputed"``, their dissimilarities to
            the training points, shape (n_new, n_train). Sparse or dense
            whichever the training data were, where the estimator takes sparse
            data and its metric is "euclidean" or "cosine".
        perplexity : float, optional
            Perplexity of the new points' neighbourhoods, over 3 * perplexity
            training neighbours (NeRV and SNeRV: over all training points).
            By default the smaller of 5 and the fitted perplexity for HSSNE and
            SNE (a new point belongs with its closest training points; at the
            fit's 30, a point between two clusters is pulled to their mean),
            the fitted ``n_neighbors`` for NeRV and SNeRV. Mbed places points
            with its fitted width sigma and takes no perplexity.

        Returns
        -------
        ndarray (n_new, n_components)

        Raises
        ------
        NotFittedError
            Before ``fit``.
        ValueError
            For a wrong number of features, NaN or infinity, a fit on
            precomputed affinities, negative precomputed dissimilarities, or a
            perplexity that is not in [1, number of training points).

        Warns
        -----
        UserWarning
            For new points far outside the training data (their nearest training
            point farther than any training point's 15th nearest neighbour),
            with their number.
        """
        new_points = check_placement_perplexity(self._fitted_placement(), perplexity, self)
        return new_points.transform(check_new_points(self, X))

    def _fitted_placement(self):
        """What places new points next to this fitted map (a ``NewPoints``).

        Raises ``ValueError`` for a fit on precomputed affinities, which relate
        no new point to the training points.
        """
        check_is_fitted(self, "embedding_")
        new_points = getattr(self, "_new_points", None)
        if new_points is None:
            raise ValueError(f"{type(self).__name__} cannot place new points: it was fitted on "
                             f"precomputed affinities (affinity='precomputed'), which relate "
                             f"no new point to the training points. Fit it on data, or on "
                             f"dissimilarities with metric='precomputed'.")
        return new_points

    def _store_fitted(self, run):
        """Copy what a finished run produced into the fitted attributes."""
        self.embedding_ = run.embedding
        self.kl_divergence_ = run.history[-1]["cost"] if run.history else run.cost
        self.n_iter_ = run.iteration
        self.history_ = run.history
        self._n_features_out = self.embedding_.shape[1]

    def fit_transform(self, X, y=None, *, annotations=None, init=None, pinned=None,
                      callbacks=None):
        """Fit and return the embedding ``embedding_``."""
        return self.fit(X, y, annotations=annotations, init=init, pinned=pinned,
                        callbacks=callbacks).embedding_

    @classmethod
    def get_live_parameters(cls):
        """The parameters a running embedding accepts through ``run.set_params``."""
        return dict(cls.live_parameters)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64"]
        tags.input_tags.pairwise = getattr(self, "metric", None) == "precomputed" or \
            getattr(self, "affinity", None) == "precomputed"
        tags.input_tags.sparse = self.accepts_sparse
        return tags


def warn_about_divergence(run, params):
    """Warn (``RuntimeWarning``) about how a run diverged; ``params`` (the
    estimator's) decide the advice.

    A run that ended diverged (:attr:`nbembed.optim.run.RunOutcome.diverged`:
    it could not recover, ended at a non-finite cost, or most of its steps were
    shortened to ``max_step_norm``) warns that its embedding is the last good
    one, or how it wandered; one that diverged on its way and
    recovered (runs count their ``recoveries``) warns that the result may be
    poor, unless the method chose its step (``learning_rate="auto"``, whose
    halving on divergence is part of the choice); one that ended with a
    higher cost than it started with warns too.
    """
    fix = _divergence_advice(run, params)
    stacklevel = 4  # the user's call of fit
    outcome = run.outcome()
    if outcome.diverged:
        good = getattr(run, "good_iteration", None)
        shortened = getattr(run, "shortened_share", 0.0)
        if shortened > MOSTLY_SHORTENED and not run.recovering:
            what = (f"{shortened:.0%} of its steps were longer than max_step_norm and were "
                    f"shortened to it, so it wandered instead of descending")
        elif not run.recovering:
            what = f"it ended with a non-finite cost ({outcome.end_cost})"
        else:
            kept = ("its start: no step was ever accepted" if good == 0
                    else "the last good one" if good is None
                    else f"the last good one, from iteration {good}")
            what = (f"it went back to its last good embedding and halved the step "
                    f"{run.recoveries} time(s), and no step since was accepted, so the "
                    f"embedding returned is {kept}")
        warnings.warn(f"{run.name} diverged and did not recover: {what}. converged_ is "
                      f"False. {fix}, then fit again.", RuntimeWarning, stacklevel=stacklevel)
    elif run.recoveries and not getattr(run, "auto_learning_rate", False):
        warnings.warn(f"{run.name} diverged {run.recoveries} time(s) and went back to its last "
                      f"good embedding each time, halving the step; the result may be poor. "
                      f"{fix}.", RuntimeWarning, stacklevel=stacklevel)
    if outcome.ended_worse and not outcome.diverged:
        warnings.warn(f"{run.name} diverged: it ended with a higher cost ({outcome.end_cost:.4g}) "
                      f"than it started with ({outcome.start_cost:.4g}), so the embedding is "
                      f"worse than its start. {fix}, then fit again.", RuntimeWarning,
                      stacklevel=stacklevel)


def _divergence_advice(run, params):
    """What to change after a divergence, from the estimator's ``params``."""
    rate = params.get("learning_rate")
    if "learning_rate" not in params:
        fix = "Check the data's scale and the parameters"
    elif isinstance(rate, str):
        chosen = getattr(run, "learning_rates", None)
        fix = ("Pass a learning_rate smaller than the one 'auto' chose "
               f"({chosen[-1]:g})" if chosen else "Pass a smaller learning_rate")
    else:
        fix = f"Use a smaller learning_rate than {rate:g} (or the default 'auto')"
    if "max_step_norm" in params and params["max_step_norm"] is None:
        fix += " and keep max_step_norm at its default"
    return fix


def pinned_start(pinned, init):
    """The indices and positions ``fit(pinned=...)`` pins, checked before any work.

    Parameters
    ----------
    pinned : array-like of int or None
    init : ndarray (n_samples, n_components), str or None
        The start the pinned points keep.

    Returns
    -------
    (indices, positions) or None
        None when ``pinned`` is None.

    Raises
    ------
    ValueError, TypeError
        Without an init array, or for indices out of range or repeated.
    """
    if pinned is None:
        return None
    if init is None or isinstance(init, str):
        raise ValueError(f"pinned needs the positions of the pinned points: pass init as an "
                         f"array of shape (n_samples, n_components); got init={init!r}.")
    init = check_data(init, name="init")
    indices = check_indices(pinned, init.shape[0], name="pinned")
    return indices, init[indices]


def enable_verbose_logging():
    """Show the ``nbembed`` logger's INFO messages (cost per check) on stderr."""
    logger = logging.getLogger("nbembed")
    logger.setLevel(logging.INFO)
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("[nbembed] %(message)s"))
        logger.addHandler(handler)


def validate_input(X, *, min_samples, metric="euclidean", precomputed_affinity=False,
                   sparse_rows=False):
    """Check data or a precomputed square matrix; return it as float64.

    Data rows may be a scipy.sparse matrix (returned as CSR) when ``sparse_rows``
    and the metric is one of ``SPARSE_METRICS``; with ``metric="cosine"`` no row
    may be all zeros.
    """
    check_metric(metric)
    square = metric == "precomputed" or precomputed_affinity
    if sparse_rows and not square:
        check_sparse_metric(X, metric)
    X = check_data(X, min_samples=min_samples, allow_sparse=square or sparse_rows)
    if square:
        name = "precomputed affinities" if precomputed_affinity else "precomputed dissimilarities"
        check_square_nonnegative(X, name=f"X ({name})", zero_diagonal=not precomputed_affinity)
    elif metric == "cosine":
        check_cosine_rows(X)
    return X


def initial_embedding(X, init, n_components, random_state, *, metric="euclidean",
                      precomputed_affinity=False):
    """Starting positions, shape (n_samples, n_components).

    ``init="pca"`` projects on the leading principal components (for
    precomputed dissimilarities: classical MDS, which is PCA for Euclidean
    distances; for precomputed affinities: random) and rescales so the first
    coordinate has standard deviation 1e-4; a sparse X is not densified (see
    :func:`_principal_components`). ``"random"`` draws from N(0, 1e-4^2). An
    array is used as given.
    """
    n = X.shape[0]
    rng = check_random_state(random_state)
    if not isinstance(init, str):
        Y = check_data(init, name="init")
        if Y.shape != (n, n_components):
            raise ValueError(f"init must have shape (n_samples, n_components) = "
                             f"{(n, n_components)}; got {Y.shape}.")
        return Y.copy()
    check_option(init, "init", ("pca", "random"))
    if init == "random" or precomputed_affinity:
        return INIT_SCALE * rng.standard_normal((n, n_components))
    if metric == "precomputed":
        Y = _classical_mds(X, n_components, rng)
    else:
        Y = _principal_components(X, n_components, rng)
    std = Y[:, 0].std()
    if not std > 0:
        return INIT_SCALE * rng.standard_normal((n, n_components))
    return Y / std * INIT_SCALE


#: Largest n * d^2 for which the start's principal components come from the
#: d x d covariance matrix (exact, a few milliseconds for the 1797 x 64 digits,
#: where scikit-learn's randomized solver took 0.2 s); beyond it, randomized SVD.
COVARIANCE_PCA_MAX_WORK = 2e9


def _covariance_pca(X, k):
    """Projections of X on its k leading principal components, by an eigensolver
    on the covariance; each component's largest loading is made positive."""
    centred = X - X.mean(axis=0)
    values, vectors = np.linalg.eigh(centred.T @ centred)
    top = vectors[:, np.argsort(values)[::-1][:k]]
    largest = np.argmax(np.abs(top), axis=0)
    top *= np.sign(top[largest, np.arange(k)])
    return centred @ top


def _principal_components(X, n_components, rng):
    """The projections of ``X`` on its leading principal components, (n, n_components),
    zero beyond the rank PCA can give. A sparse X stays sparse: ARPACK finds the
    components of the implicitly centred matrix."""
    n = X.shape[0]
    Y = np.zeros((n, n_components))
    if not sp.issparse(X):
        k = min(n_components, *X.shape)
        d = X.shape[1]
        if d <= n and n * d * d <= COVARIANCE_PCA_MAX_WORK:
            Y[:, :k] = _covariance_pca(X, k)
        else:
            from sklearn.decomposition import PCA
            Y[:, :k] = PCA(n_components=k, svd_solver="full" if n < 500 else "randomized",
                           random_state=rng).fit_transform(X)
        return Y
    # ARPACK needs k < min(n, n_features), and fails on a centred matrix of zeros.
    k = min(n_components, min(X.shape) - 1)
    if k < 1 or (X.max(axis=0) != X.min(axis=0)).nnz == 0:  # every row the same
        return Y
    from sklearn.decomposition import PCA
    try:
        Y[:, :k] = PCA(n_components=k, svd_solver="arpack", random_state=rng).fit_transform(X)
    except ArpackError as err:
        raise ValueError(f"init='pca' on sparse X failed: the eigensolver did not converge "
                         f"({err}). Pass init='random' or an init array.") from None
    return Y


def _classical_mds(D, n_components, rng):
    if sp.issparse(D):
        check_dense_allowed(D.shape[0], what="init='pca' on sparse precomputed dissimilarities",
                            alternative="Use init='random' or pass an init array")
        D = D.toarray()
    B = -0.5 * D * D
    B -= B.mean(axis=0, keepdims=True)
    B -= B.mean(axis=1, keepdims=True)
    if not np.any(B):  # every dissimilarity zero: no shape to start from
        return np.zeros((D.shape[0], n_components))
    k = min(n_components, D.shape[0] - 2)
    try:
        vals, vecs = eigsh(B, k=k, which="LA", v0=rng.uniform(-1, 1, D.shape[0]))
    except ArpackError as err:
        raise ValueError(f"init='pca' on precomputed dissimilarities failed: the eigensolver "
                         f"did not converge ({err}). Pass init='random' or an init array.") \
            from None
    order = np.argsort(vals)[::-1]
    Y = np.zeros((D.shape[0], n_components))
    Y[:, :k] = vecs[:, order] * np.sqrt(np.maximum(vals[order], 0))
    return Y


def check_common_params(est, auto_learning_rate):
    """Validate the parameters every SNE-family estimator shares.

    Parameters
    ----------
    est : estimator
        With ``n_components``, ``max_iter``, ``early_exaggeration``,
        ``early_exaggeration_iter`` and ``learning_rate``.
    auto_learning_rate : callable
        ``auto_learning_rate(exaggeration)``, the step size for
        ``learning_rate="auto"``: one number, or a pair (during early
        exaggeration, after).

    Returns
    -------
    n_components : int
    schedule : dict
        Keyword arguments for :class:`~nbembed.optim.EmbeddingRun`.
    """
    n_components = check_number(est.n_components, "n_components", low=1, integer=True)
    max_iter = check_number(est.max_iter, "max_iter", low=0, integer=True)
    exaggeration = check_number(est.early_exaggeration, "early_exaggeration", low=0,
                                low_open=True)
    exaggeration_iter = check_number(est.early_exaggeration_iter, "early_exaggeration_iter",
                                     low=0, integer=True)
    if isinstance(est.learning_rate, str) and est.learning_rate == "auto":
        rates = auto_learning_rate(exaggeration)
        during, after = rates if isinstance(rates, tuple) else (rates, rates)
    else:
        during = after = check_number(est.learning_rate, "learning_rate", low=0, low_open=True)
    return n_components, dict(n_iter=max_iter, exaggeration=exaggeration,
                              exaggeration_iter=exaggeration_iter, learning_rate=after,
                              exaggeration_learning_rate=during,
                              auto_learning_rate=isinstance(est.learning_rate, str))
