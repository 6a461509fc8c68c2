"""A fitted map: what placing new points needs, small and picklable.

:func:`fitted_map` takes a fitted neighbour-embedding estimator (HSSNE, SNE,
NeRV, SNeRV, Mbed) and returns a :class:`FittedMap`: the training data (or,
for ``metric="precomputed"``, only their number), their embedding, the
calibration of new points' neighbourhoods (perplexity or Mbed's width sigma,
the output kernel) and, for Mbed, the class directions and the lambda of the
selected annealing step. It carries none of the fit's history, affinities or
optimizer state, and leaves out of its pickle the transposed copy of the
training data that the neighbour search builds on first use. For SpectralSSDR
(and its presets) and ParametricEmbedding, which place a row by a formula of
that row, it returns a :class:`ProjectionMap`: the estimator without its
training embedding and history.

Placing a chunk of rows is pure: every row's position depends on the map and
that row alone (its neighbours among the training points, its start at their
weighted mean, its own descent against the fixed map), not on the rows placed
with it, their order or the number of threads; nothing random is drawn. So
chunks of a large array can be placed one at a time, in any order, on any
machine (with the same nbembed and CPU type), and joined: :mod:`nbembed.dask`
does that on a Dask cluster.

Examples
--------
>>> from sklearn.datasets import load_digits
>>> from nbembed import HSSNE
>>> from nbembed.fitted_map import fitted_map
>>> X, _ = load_digits(return_X_y=True)
>>> model = HSSNE(max_iter=250, random_state=0).fit(X[:300])
>>> placer = fitted_map(model)
>>> placer.transform(X[300:310]).shape
(10, 2)
"""

from __future__ import annotations

import copy

import numpy as np
import scipy.sparse as sp

from . import _config
from ._kernels.rows import cross_squared_distances
from ._map_base import STATE_VERSION, MapBase  # noqa: F401 (STATE_VERSION: the layout)
from .methods._new_points import NewPoints, check_new_points, check_placement_perplexity

#: Dense metrics whose scikit-learn distances come from a matrix product, which rounds
#: a row differently with the number of rows: the map computes them row by row.
ROW_BY_ROW_METRICS = ("cosine", "l2")
#: Caches built on first use, left out of the pickle.
CACHES = NewPoints.CACHES + ("_rows_t",)


class _RowByRowPlacement(NewPoints):
    """:class:`~nbembed.methods._new_points.NewPoints` whose dense cosine and "l2"
    distances do not depend on the other rows of the chunk.

    scikit-learn's cosine distance of dense rows, 1 - x.r / (||x|| ||r||), is a
    matrix product, whose rounding changes with the number of rows (by about
    1e-16, which the placement can grow to 1e-13): the estimator's ``transform``
    of a row then depends on the batch it came in. Here 1 - cos(x, r) is
    ||x / ||x|| - r / ||r|| ||^2 / 2, summed over the features in a fixed order,
    as the Euclidean distances are; "l2" is the square root of that sum
    without the normalization.
    """

    def _dissimilarities(self, X):
        if (self.metric not in ROW_BY_ROW_METRICS or self.distances is not None
                or sp.issparse(X) or sp.issparse(self.data)):
            return super()._dissimilarities(X)
        cosine = self.metric == "cosine"
        reference = getattr(self, "_rows_t", None)
        if reference is None:
            reference = np.ascontiguousarray(_row_by_row_input(self.data, cosine).T)
            self._rows_t = reference
        out = np.empty((X.shape[0], reference.shape[1]))
        with _config.KERNEL_LOCK:
            cross_squared_distances(_row_by_row_input(X, cosine), reference, out)
        if cosine:
            out *= 0.5
        else:
            np.sqrt(out, out=out)
        return out


def _row_by_row_input(X, unit):
    """Dense rows as contiguous float64, scaled to unit length when ``unit``."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    if unit:
        X = X / np.sqrt(np.sum(X * X, axis=1))[:, None]
    return X


class FittedMap(MapBase):
    """Places new rows against a fitted embedding; made by :func:`fitted_map`.

    Every row is placed independently of the others. The output for a chunk
    equals the estimator's ``transform`` of those rows bit for bit, and its
    ``predict``; two outputs differ by rounding only (about 1e-16 before the
    placement, up to 1e-12 after), where the estimator's result depends on the
    batch: ``predict_proba`` (a matrix product of the positions and Mbed's
    class directions) and ``transform`` of dense rows with ``metric="cosine"``
    or ``"l2"`` (scikit-learn's distances are a matrix product). The map
    computes those row by row.

    Attributes
    ----------
    method : str
        Name of the estimator's class.
    n_features_in_ : int
        Columns a chunk must have (with ``metric="precomputed"``: the number of
        training points, the rows being dissimilarities to them).
    accepts_sparse : bool
        Whether chunks may be scipy.sparse matrices (data rows with
        ``metric="euclidean"`` or ``"cosine"``).
    feature_names_in_ : ndarray of str
        The column names of the DataFrame the estimator was fitted on (only
        then): a DataFrame chunk must have these columns in this order.
    """

    def __init__(self, placer, *, method, n_features_in, accepts_sparse, directions=None,
                 lam=None, feature_names_in=None):
        self._placer = placer
        self.method = str(method)
        self.n_features_in_ = int(n_features_in)
        self.accepts_sparse = bool(accepts_sparse)
        self._directions = None if directions is None else np.array(directions, dtype=np.float64)
        self._lam = None if lam is None else float(lam)
        if feature_names_in is not None:
            self.feature_names_in_ = np.asarray(feature_names_in, dtype=object)

    @classmethod
    def from_estimator(cls, estimator, *, perplexity=None):
        """The map of a fitted estimator: see :func:`fitted_map`."""
        from .methods._base import EmbeddingEstimator

        keeps = getattr(type(estimator), "_keep_for_new_points", None)
        if not isinstance(estimator, EmbeddingEstimator) or \
                keeps is EmbeddingEstimator._keep_for_new_points:
            raise TypeError(f"fitted_map takes a fitted HSSNE, SNE, NeRV, SNeRV, Mbed, "
                            f"SpectralSSDR or ParametricEmbedding; got "
                            f"{type(estimator).__name__}.")
        placer = estimator._fitted_placement()
        placer = check_placement_perplexity(placer, perplexity, estimator)
        state = {k: v for k, v in placer.__dict__.items() if k not in CACHES}
        placer = _RowByRowPlacement.__new__(_RowByRowPlacement)
        placer.__dict__.update(state)
        # Set now, from the training data: otherwise every worker computes it again.
        placer.training_reach()
        directions = lam = None
        if hasattr(estimator, "directions_"):  # Mbed: memberships of placed points
            directions = estimator.directions_
            step = estimator.selected_step_
            lam = None if step is None else estimator.lambda_path_[step]
        return cls(placer, method=type(estimator).__name__,
                   n_features_in=estimator.n_features_in_,
                   accepts_sparse=estimator.accepts_sparse, directions=directions, lam=lam,
                   feature_names_in=getattr(estimator, "feature_names_in_", None))

    # -- description -----------------------------------------------------------------------
    @property
    def metric(self):
        """Input metric of the fit (str), or "precomputed"."""
        return self._placer.metric

    @property
    def n_components(self):
        """Dimension of the embedding (int)."""
        return self._placer.embedding.shape[1]

    @property
    def n_reference(self):
        """Number of training points (int)."""
        return self._placer.n_reference

    @property
    def n_classes(self):
        """Mbed's number of classes (int); None for methods that do not classify."""
        return None if self._directions is None else self._directions.shape[0]

    @property
    def embedding(self):
        """The fitted positions of the training points, (n_reference, n_components)."""
        return self._placer.embedding

    def __repr__(self):
        classes = "" if self.n_classes is None else f", n_classes={self.n_classes}"
        return (f"FittedMap(method={self.method!r}, n_reference={self.n_reference}, "
                f"n_features_in_={self.n_features_in_}, n_components={self.n_components}"
                f"{classes})")

    # -- placing rows ----------------------------------------------------------------------
    def _check(self, X):
        """``X`` validated as the estimator's ``transform`` does, or None for no rows."""
        shape = self._check_columns(X)
        if len(shape) == 2 and shape[0] == 0:
            return None
        return check_new_points(self, X)

    def transform(self, X):
        """Positions of new rows in the fitted map.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix (n_rows, n_features)
            New rows (sparse where the estimator took sparse data); with
            ``metric="precomputed"`` their dissimilarities to the training
            points. No rows give an empty result.

        Returns
        -------
        ndarray (n_rows, n_components)

        Raises
        ------
        ValueError
            For a wrong number of columns, NaN or infinity, or negative
            precomputed dissimilarities.

        Warns
        -----
        UserWarning
            For rows far outside the training data, as the estimator's
            ``transform`` (:meth:`far_from_training` says which).
        """
        X = self._check(X)
        if X is None:
            return np.empty((0, self.n_components))
        return self._placer.transform(X)

    def far_from_training(self, X):
        """Which rows lie far outside the training data.

        A row is far when its nearest training point is farther than any training
        point is from its 15th nearest neighbour (over up to 500 of them): its
        position then says little (``transform`` warns about such rows).

        Parameters
        ----------
        X : array-like or scipy.sparse matrix (n_rows, n_features)

        Returns
        -------
        ndarray of bool (n_rows,)
            All False where the map knows no such distance (fitted on
            dissimilarities without the training ones).
        """
        X = self._check(X)
        if X is None:
            return np.zeros(0, dtype=bool)
        reach = self._placer.training_reach()
        if reach is None:
            return np.zeros(X.shape[0], dtype=bool)
        dist, _ = self._placer.neighbours(X)
        return self._placer._nearest_distances(X, dist) > reach

    def memberships_at(self, Y):
        """Class memberships softmax_k(<w_k, y> / lambda) of positions ``Y`` (n, n_components).

        As Mbed's ``memberships_at``, with the score of each row summed over the
        components in a fixed order, so that a row's memberships do not depend
        on the rows with it (a matrix product may round differently with their
        number; the two agree to about 1e-15). Uniform when the fit stopped
        before its first annealing step.
        """
        self._check_classifies("memberships_at")
        from scipy.special import logsumexp

        Y = np.asarray(Y, dtype=np.float64)
        K = self._directions.shape[0]
        if self._lam is None:
            return np.full((Y.shape[0], K), 1.0 / K)
        scores = np.zeros((Y.shape[0], K))
        for c in range(Y.shape[1]):
            scores += Y[:, c:c + 1] * self._directions[:, c]
        scores /= self._lam
        return np.exp(scores - logsumexp(scores, axis=1, keepdims=True))

    def predict_proba(self, X):
        """Class probabilities of new rows where :meth:`transform` puts them (Mbed only).

        Parameters
        ----------
        X : array-like or scipy.sparse matrix (n_rows, n_features)

        Returns
        -------
        ndarray (n_rows, n_classes)
        """
        self._check_classifies("predict_proba")
        return self.memberships_at(self.transform(X))

    def predict(self, X):
        """The most probable class of each new row (argmax of :meth:`predict_proba`).

        Returns
        -------
        ndarray of int (n_rows,)
        """
        self._check_classifies("predict")
        return self.predict_proba(X).argmax(axis=1)

    # -- pickling --------------------------------------------------------------------------
    def __getstate__(self):
        state = super().__getstate__()
        placer = copy.copy(self._placer)
        # The transposed training data the dense neighbour search builds on first use: as
        # large as the data, and rebuilt on the worker's first chunk.
        for name in CACHES:
            placer.__dict__.pop(name, None)
        state["_placer"] = placer
        return state


class ProjectionMap(MapBase):
    """Places new rows by a formula of each row: the map of SpectralSSDR and of
    Parametric Embedding; made by :func:`fitted_map`.

    SpectralSSDR projects a row, A (phi(x) - mean) with phi its kernel PCA map
    or the identity; Parametric Embedding places an object's posteriors by
    Newton's method against the fixed class positions. Both are sums over
    the row's own features in a fixed order, so a row's output depends on that
    row alone and equals the estimator's ``transform`` bit for bit. The map
    holds the estimator without what its fit kept for inspection (the training
    embedding, the history, the parameter search).

    Attributes
    ----------
    method : str
        Name of the estimator's class.
    n_features_in_ : int
        Columns a chunk must have (Parametric Embedding: one per class).
    accepts_sparse : bool
        Whether chunks may be scipy.sparse matrices (SpectralSSDR).
    feature_names_in_ : ndarray of str
        The column names of the DataFrame the estimator was fitted on (only
        then).
    """

    #: What the fit keeps that placing rows does not need.
    LEFT_OUT = ("embedding_", "history_", "selection_results_", "membership_")

    def __init__(self, estimator):
        from .methods.spectral import SpectralSSDR

        self.method = type(estimator).__name__
        estimator = copy.copy(estimator)
        for name in self.LEFT_OUT:
            estimator.__dict__.pop(name, None)
        self._estimator = estimator
        self.n_features_in_ = int(estimator.n_features_in_)
        self.accepts_sparse = isinstance(estimator, SpectralSSDR)
        names = getattr(estimator, "feature_names_in_", None)
        if names is not None:
            self.feature_names_in_ = np.asarray(names, dtype=object)

    @property
    def n_components(self):
        """Dimension of the output (int)."""
        return self._estimator._n_features_out

    def __repr__(self):
        return (f"ProjectionMap(method={self.method!r}, n_features_in_={self.n_features_in_}, "
                f"n_components={self.n_components})")

    def transform(self, X):
        """Positions of new rows, as the estimator's ``transform``.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix (n_rows, n_features)
            New rows (Parametric Embedding: their class posteriors). No rows
            give an empty result.

        Returns
        -------
        ndarray (n_rows, n_components)

        Raises
        ------
        ValueError
            For a wrong number of columns, NaN or infinity, or (Parametric
            Embedding) rows that are not posteriors.
        """
        shape = self._check_columns(X)
        if len(shape) == 2 and shape[0] == 0:
            return np.empty((0, self.n_components))
        return self._estimator.transform(X)


def fitted_map(estimator, *, perplexity=None):
    """The fitted map of a fitted estimator: what placing new points needs.

    Parameters
    ----------
    estimator : HSSNE, SNE, NeRV, SNeRV, Mbed, SpectralSSDR (or a preset of it) or ParametricEmbedding
        Fitted (the neighbour embeddings on data, or on dissimilarities with
        ``metric="precomputed"``).
    perplexity : float, optional
        Perplexity of the new points' neighbourhoods, as in the estimator's
        ``transform(X, perplexity=...)``; by default the estimator's. Only for
        the neighbour embeddings.

    Returns
    -------
    FittedMap or ProjectionMap
        A :class:`ProjectionMap` for SpectralSSDR and ParametricEmbedding.

    Raises
    ------
    NotFittedError
        Before ``fit``.
    TypeError
        For an estimator that places new points some other way.
    ValueError
        For a fit on precomputed affinities, or a perplexity Mbed does not
        take or out of range.
    """
    from ._estimator import check_is_fitted
    from .methods.parametric import ParametricEmbedding
    from .methods.spectral import SpectralSSDR

    if not isinstance(estimator, (SpectralSSDR, ParametricEmbedding)):
        return FittedMap.from_estimator(estimator, perplexity=perplexity)
    check_is_fitted(estimator, "embedding_")
    if perplexity is not None:
        raise ValueError(f"{type(estimator).__name__} places new points by a projection, "
                         f"without neighbourhoods: fitted_map takes no perplexity for it.")
    return ProjectionMap(estimator)
