"""The scikit-learn estimator contract, without importing scikit-learn.

Importing scikit-learn takes about a second (it imports scipy.stats, and pandas
where installed), which a fresh process would pay before its first embedding
even where the fit never calls scikit-learn. The classes here give nbembed's
estimators what scikit-learn's ``clone``, ``Pipeline``, ``GridSearchCV`` and
``set_output`` rely on: parameters from the constructor's signature, tags,
feature names and output containers. scikit-learn is imported only when one
of its own functions asks (tags, a not-fitted error), and its global
configuration (``transform_output``) is read only once something imported it.
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import inspect
import sys

import numpy as np

from ._validation import table_kind

#: Longest shown form of one parameter's value in an estimator's repr.
REPR_VALUE_CHARS = 60

#: What ``set_output(transform=...)`` accepts: a NumPy array or a data frame.
OUTPUT_KINDS = ("default", "pandas", "polars")


class Estimator:
    """Parameters are the constructor's arguments, stored under their own names.

    ``get_params``, ``set_params`` and the repr follow scikit-learn's
    conventions, so that its ``clone`` and model selection work unchanged.
    """

    @classmethod
    def _get_param_names(cls):
        signature = inspect.signature(cls.__init__)
        names = []
        for name, parameter in signature.parameters.items():
            if name == "self" or parameter.kind == parameter.VAR_KEYWORD:
                continue
            if parameter.kind == parameter.VAR_POSITIONAL:
                raise TypeError(f"{cls.__name__}.__init__ must not take *args: every "
                                f"parameter needs a name.")
            names.append(name)
        return sorted(names)

    def get_params(self, deep=True):
        """Get this estimator's parameters.

        Parameters
        ----------
        deep : bool, default=True
            Also return the parameters of parameters that are estimators, as
            ``name__parameter``.

        Returns
        -------
        dict
        """
        params = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                params.update((f"{name}__{key}", inner)
                              for key, inner in value.get_params().items())
            params[name] = value
        return params

    def set_params(self, **params):
        """Set parameters (``name__parameter`` for those of a parameter that is an estimator).

        Returns
        -------
        self

        Raises
        ------
        ValueError
            For a name that is not a parameter.
        """
        valid = self.get_params(deep=True)
        nested = {}
        for key, value in params.items():
            name, _, inner = key.partition("__")
            if name not in valid:
                raise ValueError(f"{name!r} is not a parameter of {type(self).__name__}; its "
                                 f"parameters are {sorted(self._get_param_names())}.")
            if inner:
                nested.setdefault(name, {})[inner] = value
            else:
                setattr(self, name, value)
                valid[name] = value
        for name, inner_params in nested.items():
            valid[name].set_params(**inner_params)
        return self

    def __repr__(self):
        defaults = {name: parameter.default for name, parameter
                    in inspect.signature(type(self).__init__).parameters.items()}
        shown = [f"{name}={_short_repr(value)}"
                 for name, value in self.get_params(deep=False).items()
                 if _differs(value, defaults.get(name, inspect.Parameter.empty))]
        return f"{type(self).__name__}({', '.join(shown)})"

    def __sklearn_tags__(self):
        from sklearn.utils import Tags, TargetTags
        return Tags(estimator_type=None, target_tags=TargetTags(required=False))


def _differs(value, default):
    if default is inspect.Parameter.empty or value is default:
        return default is inspect.Parameter.empty
    if _is_nan(value) and _is_nan(default):
        return False
    return type(value) is not type(default) or repr(value) != repr(default)


def _is_nan(value):
    return isinstance(value, float) and value != value


def _short_repr(value):
    if isinstance(value, np.ndarray):
        return f"<array of shape {value.shape}>"
    text = repr(value)
    if isinstance(value, Estimator) or len(text) <= REPR_VALUE_CHARS:
        return text
    return text[:REPR_VALUE_CHARS - 3] + "..."


class Transformer(Estimator):
    """An estimator with ``transform``: feature names ``<class name><i>`` and ``set_output``.

    The ``transform`` and ``fit_transform`` of every subclass return, once
    ``set_output(transform="pandas")`` was called (or scikit-learn's
    ``set_config(transform_output="pandas")``), a pandas DataFrame with those
    names as columns and the index of a pandas input; with "polars", a polars
    DataFrame with those columns.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in ("transform", "fit_transform"):
            method = cls.__dict__.get(name)
            if method is not None and not getattr(method, "_wraps_output", False):
                setattr(cls, name, _with_output_container(method))

    def get_feature_names_out(self, input_features=None):
        """Names of the embedding's columns: the class name in lower case and a number.

        Parameters
        ----------
        input_features : ignored
            Accepted for scikit-learn's pipelines.

        Returns
        -------
        ndarray of str objects (n_components,)
        """
        check_is_fitted(self, "_n_features_out")
        prefix = type(self).__name__.lower()
        return np.asarray([f"{prefix}{i}" for i in range(self._n_features_out)], dtype=object)

    def set_output(self, *, transform=None):
        """Choose what ``transform`` and ``fit_transform`` return.

        Without a choice here, scikit-learn's global ``transform_output``
        (``sklearn.set_config`` or ``sklearn.config_context``) decides.

        Parameters
        ----------
        transform : {"default", "pandas", "polars"} or None
            "default": a NumPy array; "pandas" or "polars": a DataFrame of that
            library with the columns of :meth:`get_feature_names_out` (pandas:
            with the index of a pandas input); None: leave the setting unchanged.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            For another value.
        ImportError
            If the chosen library is not installed.
        """
        if transform is None:
            return self
        if transform not in OUTPUT_KINDS:
            raise ValueError(f"set_output(transform=...) must be 'default', 'pandas', 'polars' "
                             f"or None; got {transform!r}.")
        if transform != "default":
            _require(transform)
        self._transform_output = transform
        return self

    def _output_kind(self):
        chosen = getattr(self, "_transform_output", None)
        if chosen is not None:
            return chosen
        sklearn = sys.modules.get("sklearn")  # not imported: nobody set its configuration
        return sklearn.get_config()["transform_output"] if sklearn is not None else "default"

    def __sklearn_tags__(self):
        from sklearn.utils import TransformerTags
        tags = super().__sklearn_tags__()
        tags.transformer_tags = TransformerTags()
        return tags


def _with_output_container(method):
    @functools.wraps(method)
    def wrapped(self, X, *args, **kwargs):
        Y = method(self, X, *args, **kwargs)
        kind = self._output_kind()
        if kind == "default":
            return Y
        if kind not in OUTPUT_KINDS:
            raise ValueError(f"{type(self).__name__} returns NumPy arrays, pandas or polars "
                             f"DataFrames; transform_output={kind!r} is not supported.")
        _require(kind)
        columns = list(self.get_feature_names_out())
        if kind == "polars":
            import polars as pl
            return pl.DataFrame(np.asarray(Y), schema=columns, orient="row")
        import pandas as pd
        index = X.index if table_kind(X)[0] == "pandas" else None
        return pd.DataFrame(Y, index=index, columns=columns)

    wrapped._wraps_output = True
    return wrapped


def _require(library):
    """Raise an ImportError that says how to get ``library`` (pandas or polars) if it is
    missing; looked up without importing it."""
    if importlib.util.find_spec(library) is None:
        raise ImportError(f"transform output {library!r} needs {library}, which is not "
                          f"installed; install it (pip install {library}) or choose "
                          f"set_output(transform='default') for NumPy arrays.")


class Classifier(Estimator):
    """An estimator with ``predict``: ``score`` is the accuracy."""

    def score(self, X, y, sample_weight=None):
        """Mean accuracy of ``predict(X)`` against ``y``.

        Parameters
        ----------
        X : array-like (n_samples, n_features)
        y : array-like (n_samples,)
        sample_weight : array-like (n_samples,), optional

        Returns
        -------
        float
        """
        correct = np.asarray(self.predict(X)) == np.asarray(y)
        return float(np.average(correct, weights=sample_weight))

    def __sklearn_tags__(self):
        from sklearn.utils import ClassifierTags
        tags = super().__sklearn_tags__()
        tags.estimator_type = "classifier"
        tags.classifier_tags = ClassifierTags()
        tags.target_tags.required = True
        return tags


def check_is_fitted(estimator, attribute):
    """Raise scikit-learn's ``NotFittedError`` if ``estimator`` lacks ``attribute``."""
    if not hasattr(estimator, attribute):
        from sklearn.exceptions import NotFittedError
        raise NotFittedError(f"This {type(estimator).__name__} instance is not fitted yet. "
                             f"Call 'fit' with appropriate arguments before using this "
                             f"estimator.")


def copy_with(estimator, **params):
    """A new, unfitted estimator of the same class with the same parameters but ``params``.

    Parameters that are estimators are copied the same way, others deep-copied,
    as scikit-learn's ``clone`` does.
    """
    own = {name: copy_with(value) if isinstance(value, Estimator) else copy.deepcopy(value)
           for name, value in estimator.get_params(deep=False).items()}
    own.update(params)
    return type(estimator)(**own)
