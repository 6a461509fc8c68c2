"""Property-based tests: every public estimator, given bad or edge data, labels or
parameters, either refuses with a clear nbembed error and unchanged parameters, or
gives a finite result."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

hypothesis = pytest.importorskip("hypothesis")

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from _properties import BAD_VALUES, assert_clear_refusal, data_matrices, labels_for, \
    logging_kept, same_params  # noqa: E402
from nbembed.methods.registry import REGISTRY  # noqa: E402

IDS = [spec.name for spec in REGISTRY]


def _good_data(spec, n=24):
    rng = np.random.default_rng(0)
    if spec.name == "pe":
        return rng.dirichlet(np.ones(3), size=n), None
    X = np.vstack([rng.normal(0, 1, (n // 2, 3)), rng.normal(4, 1, (n - n // 2, 3))])
    return X, np.repeat([0, 1], [n // 2, n - n // 2])


def _fit_or_refuse(est, X, y):
    """Fit; a refusal must be clear and leave the parameters alone, a fit finite."""
    before = est.get_params(deep=False)
    with warnings.catch_warnings(), logging_kept():
        warnings.simplefilter("ignore")
        try:
            est.fit(X, y)
        except Exception as err:  # noqa: BLE001 - the property is about every error
            assert_clear_refusal(err)
            assert same_params(before, est.get_params(deep=False))
            return
    assert same_params(before, est.get_params(deep=False))
    embedding = getattr(est, "embedding_", None)
    if embedding is not None:
        assert np.all(np.isfinite(embedding))


@pytest.mark.parametrize("spec", REGISTRY, ids=IDS)
@given(data=st.data())
def test_bad_data_is_refused_clearly_or_embedded_finitely(spec, data):
    X = data.draw(data_matrices())
    n = len(X) if np.ndim(X) else 0
    _, y_good = _good_data(spec, max(n, 2))
    y = None if y_good is None else y_good[:n]
    if spec.name == "pe" and np.ndim(X) == 2 and X.size and X.dtype.kind in "biuf":
        X = np.abs(X)  # posteriors: only the scale and the shape stay bad
    _fit_or_refuse(spec.cls(**spec.check_params), X, y)


#: Estimators that take sparse data rows, and the metrics they take them with.
SPARSE = [(spec, metric) for spec in REGISTRY if getattr(spec.cls, "accepts_sparse", False)
          for metric in ("euclidean", "cosine")]
SPARSE_IDS = [f"{spec.name}-{metric}" for spec, metric in SPARSE]


def _as_sparse(data, X):
    """``X`` as a sparse matrix of a drawn format, where it can be one (2-D numbers)."""
    if np.ndim(X) != 2 or X.dtype.kind not in "biufc":
        return X
    return sp.coo_matrix(X).asformat(data.draw(st.sampled_from(["csr", "csc", "coo"])))


@pytest.mark.parametrize("spec, metric", SPARSE, ids=SPARSE_IDS)
@given(data=st.data())
def test_bad_sparse_data_is_refused_clearly_or_embedded_finitely(spec, metric, data):
    X = _as_sparse(data, data.draw(data_matrices()))
    n = X.shape[0] if np.ndim(X) else 0
    _, y_good = _good_data(spec, max(n, 2))
    _fit_or_refuse(spec.cls(**{**spec.check_params, "metric": metric}), X, y_good[:n])


@pytest.mark.parametrize("spec", [s for s in REGISTRY if s.labels != "unused"],
                         ids=[s.name for s in REGISTRY if s.labels != "unused"])
@given(data=st.data())
def test_bad_labels_are_refused_clearly(spec, data):
    X, _ = _good_data(spec)
    y = data.draw(labels_for(len(X)))
    _fit_or_refuse(spec.cls(**spec.check_params), X, y)


@pytest.mark.parametrize("spec", REGISTRY, ids=IDS)
@given(data=st.data())
def test_bad_parameter_values_are_refused_clearly(spec, data):
    names = sorted(spec.cls().get_params(deep=False))
    name = data.draw(st.sampled_from(names))
    value = data.draw(BAD_VALUES)
    params = {**spec.check_params, name: value}
    try:
        est = spec.cls(**params)
    except Exception as err:  # noqa: BLE001
        assert_clear_refusal(err)
        return
    X, y = _good_data(spec)
    _fit_or_refuse(est, X, y)


#: Estimators that take new data once fitted, and the method that does.
NEW_DATA = [(spec, method) for spec in REGISTRY
            for method in ("transform", "predict_proba") if hasattr(spec.cls, method)]
_FITTED = {}


def _fitted(spec):
    if spec.name not in _FITTED:
        with warnings.catch_warnings(), logging_kept():
            warnings.simplefilter("ignore")
            _FITTED[spec.name] = spec.cls(**spec.check_params).fit(*_good_data(spec))
    return _FITTED[spec.name]


@pytest.mark.parametrize("spec, method", NEW_DATA,
                         ids=[f"{spec.name}-{method}" for spec, method in NEW_DATA])
@given(data=st.data())
def test_fitted_estimators_refuse_bad_new_data_clearly(spec, method, data):
    est = _fitted(spec)
    X = data.draw(data_matrices(max_features=4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = getattr(est, method)(X)
        except Exception as err:  # noqa: BLE001
            if "features, but" in str(err):
                return  # scikit-learn's own check of the number of features, kept on purpose
            assert_clear_refusal(err)
            return
    assert np.all(np.isfinite(out))


@pytest.mark.parametrize("spec, metric", SPARSE, ids=SPARSE_IDS)
@given(data=st.data())
def test_fitted_estimators_refuse_bad_sparse_new_data_clearly(spec, metric, data):
    X, y = _good_data(spec)
    key = f"sparse-{spec.name}-{metric}"
    if key not in _FITTED:
        with warnings.catch_warnings(), logging_kept():
            warnings.simplefilter("ignore")
            _FITTED[key] = spec.cls(**{**spec.check_params, "metric": metric}).fit(
                sp.csr_matrix(X), y)
    new = _as_sparse(data, data.draw(data_matrices(max_features=4)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = _FITTED[key].transform(new)
        except Exception as err:  # noqa: BLE001
            if "features, but" in str(err):
                return
            assert_clear_refusal(err)
            return
    assert np.all(np.isfinite(out))
