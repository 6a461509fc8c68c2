"""What every fitted map shares (:func:`nbembed.fitted_map.fitted_map`).

A map knows the estimator it came from (``method``), the columns a chunk must
have, its output names; it pickles with a layout version that is checked on
load, and gives Dask a token of its content so that equal maps share one key.
"""

from __future__ import annotations

import hashlib
import pickle

import numpy as np
import scipy.sparse as sp

from ._validation import check_column_names

#: Version of the pickled state; a map pickled with another layout is refused.
STATE_VERSION = 1


class MapBase:
    """Common part of :class:`~nbembed.fitted_map.FittedMap` and
    :class:`~nbembed.fitted_map.ProjectionMap`.

    Subclasses set ``method``, ``n_features_in_``, ``accepts_sparse`` (and
    ``feature_names_in_`` for a fit on a DataFrame) and define
    ``n_components`` and ``transform``.
    """

    #: Input metric of the fit; "precomputed" when the rows are dissimilarities.
    metric = None
    #: Number of classes of a map that classifies (Mbed's); None otherwise.
    n_classes = None

    def get_feature_names_out(self, input_features=None):
        """Names of the output columns, as the estimator's: ``<method in lower case><i>``."""
        prefix = self.method.lower()
        return np.asarray([f"{prefix}{i}" for i in range(self.n_components)], dtype=object)

    def _check_columns(self, X, what="features"):
        """Refuse a DataFrame with other column names, then rows of another width
        (``what`` names the columns in the message); return the shape of ``X``."""
        check_column_names(self, X, owner=f"The fitted map of {self.method}")
        shape = X.shape if sp.issparse(X) else np.shape(X)
        if len(shape) == 2:
            self._check_width(shape[1], what)
        return shape

    def _check_width(self, width, what):
        if width != self.n_features_in_:
            kind = (" (the dissimilarities to the training points)"
                    if self.metric == "precomputed" else "")
            raise ValueError(f"X has {width} {what}, but the fitted map of {self.method} is "
                             f"expecting {self.n_features_in_} features as input{kind}.")

    def _check_classifies(self, what):
        if self.n_classes is None:
            raise ValueError(f"The fitted map of {self.method} places points but does not "
                             f"classify them: {what} needs a map of Mbed. Use transform.")

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_token", None)
        state["state_version"] = STATE_VERSION
        return state

    def __setstate__(self, state):
        state = dict(state)
        version = state.pop("state_version", None)
        if version != STATE_VERSION:
            raise ValueError(f"This fitted map was pickled in layout {version!r}, but this "
                             f"nbembed reads layout {STATE_VERSION}: make the map again with "
                             f"nbembed.fitted_map.fitted_map(estimator), and install the same "
                             f"nbembed everywhere the map is used.")
        self.__dict__.update(state)

    def __dask_tokenize__(self):
        """A name for the map's content: Dask gives equal maps one key."""
        token = getattr(self, "_token", None)
        if token is None:
            token = hashlib.sha256(pickle.dumps(self, protocol=5)).hexdigest()
            self._token = token
        return token
