"""Saving fitted estimators (pickle, joblib, skops) and Explorer sessions.

Estimators: every estimator nbembed exports, fitted on a small sample, comes
back from each format with ``transform`` (and ``predict_proba`` / ``predict``
where it has them) giving the same numbers bit for bit. Sessions: an Explorer
saved and opened again holds the same method, positions, schedule point,
annotations, pins, sliders and colourings, goes on from there, and a file
that is damaged or does not fit the data given is refused.
"""

import contextlib
import importlib
import io
import json
import os
import pathlib
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from nbembed import HSSNE, SNeRV, Mbed, ParametricEmbedding, SpectralSSDR
from nbembed.affinity.learning_metric import LearningMetric
from nbembed.methods.registry import REGISTRY
from nbembed.persistence import trusted_types

ROOT = pathlib.Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- estimators

def iris_sample(n=60, seed=0):
    from sklearn.datasets import load_iris
    X, y = load_iris(return_X_y=True)
    rows = np.random.default_rng(seed).choice(len(X), n, replace=False)
    return X[rows], y[rows]


def posteriors(y, n_classes=3):
    """Class posteriors leaning to ``y``: what Parametric Embedding embeds."""
    P = np.full((len(y), n_classes), 0.1)
    P[np.arange(len(y)), y] = 0.8
    return P / P.sum(axis=1, keepdims=True)


def estimator_cases():
    """(name, unfitted estimator, X, y, new points) for every exported estimator and a
    few fits that store other things (sparse data and a kNN P, a kernel PCA map)."""
    X, y = iris_sample()
    X_new = X[:8] + 0.05
    cases = []
    for spec in REGISTRY:
        if spec.name == "pe":
            cases.append((spec.name, spec.check_instance(), posteriors(y), None,
                          posteriors(y[:8])[::-1]))
        else:
            labels = None if spec.labels == "unused" else y
            cases.append((spec.name, spec.check_instance(), X, labels, X_new))
    cases.append(("hssne-sparse-knn", HSSNE(perplexity=5, affinity="knn", max_iter=40,
                                            early_exaggeration_iter=10, random_state=0),
                  sp.csr_matrix(X), None, sp.csr_matrix(X_new)))
    cases.append(("spectral-rbf", SpectralSSDR(kernel="rbf", n_neighbors=5), X, y, X_new))
    return cases


CASES = {name: case for name, *case in estimator_cases()}

#: Methods whose outputs must survive saving, where the estimator has them.
OUTPUTS = ("transform", "predict_proba", "predict")


def outputs(estimator, X_new):
    return {name: getattr(estimator, name)(X_new) for name in OUTPUTS
            if hasattr(estimator, name)}


@pytest.fixture(scope="module")
def fitted():
    """Each case fitted once: name -> (estimator, new points, its outputs on them)."""
    made = {}
    for name, (estimator, X, y, X_new) in CASES.items():
        with quiet():
            estimator.fit(X, y)
            made[name] = (estimator, X_new, outputs(estimator, X_new))
    return made


@contextlib.contextmanager
def quiet():
    """Fits of a few dozen iterations may warn that they did not converge."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def assert_same(loaded, original, X_new, expected):
    assert type(loaded) is type(original)
    assert repr(loaded) == repr(original)
    if hasattr(original, "embedding_"):
        np.testing.assert_array_equal(loaded.embedding_, original.embedding_)
    with quiet():
        got = outputs(loaded, X_new)
    assert got.keys() == expected.keys() and got
    for name, values in expected.items():
        assert got[name].dtype == values.dtype, name
        np.testing.assert_array_equal(got[name], values, err_msg=name)


def dumped_with(fmt, estimator):
    if fmt == "pickle":
        return pickle.loads(pickle.dumps(estimator))
    joblib = pytest.importorskip("joblib")
    buffer = io.BytesIO()
    joblib.dump(estimator, buffer)
    buffer.seek(0)
    return joblib.load(buffer)


@pytest.mark.parametrize("fmt", ["pickle", "joblib"])
@pytest.mark.parametrize("name", list(CASES))
def test_fitted_estimators_round_trip_bit_for_bit(fitted, name, fmt):
    estimator, X_new, expected = fitted[name]
    assert_same(dumped_with(fmt, estimator), estimator, X_new, expected)


@pytest.mark.parametrize("name", list(CASES))
def test_fitted_estimators_round_trip_through_skops_with_trusted_types(fitted, name):
    skops_io = pytest.importorskip("skops.io")
    estimator, X_new, expected = fitted[name]
    data = skops_io.dumps(estimator)
    untrusted = set(skops_io.get_untrusted_types(data=data))
    assert untrusted, "skops trusts nbembed's types by default: trusted_types is not needed"
    assert untrusted <= set(trusted_types()), untrusted - set(trusted_types())
    assert_same(skops_io.loads(data, trusted=trusted_types()), estimator, X_new, expected)


def test_skops_refuses_nbembed_estimators_without_the_trusted_types(fitted):
    skops_io = pytest.importorskip("skops.io")
    estimator, _, _ = fitted["hssne"]
    with pytest.raises(Exception, match="Untrusted types"):
        skops_io.loads(skops_io.dumps(estimator))


def test_trusted_types_name_every_estimator_and_only_classes():
    names = trusted_types()
    assert names == sorted(set(names))
    for spec in REGISTRY:
        assert f"{spec.cls.__module__}.{spec.cls.__qualname__}" in names
    for name in names:
        module, _, attribute = name.rpartition(".")
        assert isinstance(getattr(importlib.import_module(module), attribute), type), name


def test_unfitted_estimators_round_trip():
    for spec in REGISTRY:
        estimator = spec.check_instance()
        loaded = pickle.loads(pickle.dumps(estimator))
        assert repr(loaded) == repr(estimator)


def test_a_saved_estimator_leaves_out_the_copy_transform_builds(fitted):
    """transform keeps a transposed copy of the training data for its neighbour search;
    saving it would double the file, so it is built again after loading."""
    estimator, X_new, expected = fitted["hssne"]
    assert getattr(estimator._new_points, "_data_t", None) is not None
    loaded = pickle.loads(pickle.dumps(estimator))
    assert "_data_t" not in vars(loaded._new_points)
    np.testing.assert_array_equal(loaded.transform(X_new), expected["transform"])
