"""The scikit-learn contract of nbembed's own estimator base, and what it is for:
importing nbembed and fitting on dense Euclidean data never imports scikit-learn."""

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from sklearn import config_context
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.utils import get_tags

from nbembed import HSSNE, LPP, SNE, LearningMetric, Mbed, NeRV, SNeRV
from nbembed._estimator import copy_with

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FIT_WITHOUT_SKLEARN = r"""
import importlib, json, sys
import numpy as np
import nbembed
rng = np.random.default_rng(0)
X = np.concatenate([rng.normal(size=(60, 5)), rng.normal(4.0, size=(60, 5))])
y = np.repeat([0, 1], 60)
imported_by = {}
for name, fit in [
        ("import", lambda: None),
        ("HSSNE", lambda: nbembed.HSSNE(max_iter=60, random_state=0).fit_transform(X)),
        ("HSSNE alpha=0.5", lambda: nbembed.HSSNE(alpha=0.5, max_iter=60,
                                                   random_state=0).fit_transform(X)),
        ("SNE", lambda: nbembed.SNE(max_iter=60, random_state=0).fit_transform(X)),
        ("NeRV", lambda: nbembed.NeRV(max_iter=5, random_state=0).fit_transform(X)),
        ("HSSNE transform", lambda: nbembed.HSSNE(max_iter=60, random_state=0).fit(X)
         .transform(X[:5] + 0.1)),
        ("widget quality", lambda: importlib.import_module("nbembed.widget.quality"))]:
    fit()
    imported_by[name] = "sklearn" in sys.modules
print(json.dumps(imported_by))
"""


def test_importing_and_fitting_on_dense_euclidean_data_leaves_sklearn_unimported():
    done = subprocess.run([sys.executable, "-c", FIT_WITHOUT_SKLEARN], cwd=REPO,
                          capture_output=True, text=True, check=True)
    imported_by = json.loads(done.stdout.strip().splitlines()[-1])
    assert imported_by == dict.fromkeys(imported_by, False)


LIGHT_IMPORTS = r"""
import json, sys
import nbembed.plotting.notebook  # what the Jupyter server extension loads at start
heavy = [m for m in ("numba", "nbembed.methods", "nbembed.optim", "nbembed.widget", "bokeh")
         if m in sys.modules]
import nbembed
names = {name: isinstance(getattr(nbembed, name), type) for name in nbembed.__all__}
print(json.dumps([heavy, names]))
"""


def test_the_package_imports_its_names_on_first_use():
    done = subprocess.run([sys.executable, "-c", LIGHT_IMPORTS], cwd=REPO,
                          capture_output=True, text=True, check=True)
    heavy, names = json.loads(done.stdout.strip().splitlines()[-1])
    assert heavy == []
    assert names == {**dict.fromkeys(names, True), "__version__": False}  # classes, and the version
    import nbembed
    from nbembed.methods.registry import REGISTRY
    assert nbembed.ESTIMATOR_NAMES == tuple(spec.class_name for spec in REGISTRY)
    assert set(nbembed.__all__) <= set(dir(nbembed))
    with pytest.raises(AttributeError, match="no attribute 'HSNE'"):
        nbembed.HSNE


def test_get_and_set_params_reach_a_nested_estimator():
    est = SNeRV(learning_metric=LearningMetric(n_pieces=4))
    params = est.get_params()
    assert params["learning_metric__n_pieces"] == 4 and params["tradeoff"] == est.tradeoff
    assert est.set_params(tradeoff=0.3, learning_metric__n_pieces=6) is est
    assert est.tradeoff == 0.3 and est.learning_metric.n_pieces == 6
    with pytest.raises(ValueError, match="'perplexityy' is not a parameter of HSSNE"):
        HSSNE().set_params(perplexityy=5)


def test_repr_shows_the_parameters_that_differ_from_their_defaults():
    assert repr(HSSNE()) == "HSSNE()"
    assert repr(HSSNE(alpha=0.5, init="random")) == "HSSNE(alpha=0.5, init='random')"
    assert repr(HSSNE(init=np.zeros((4, 2)))) == "HSSNE(init=<array of shape (4, 2)>)"
    assert "learning_metric=LearningMetric(n_pieces=4)" in \
        repr(SNeRV(learning_metric=LearningMetric(n_pieces=4)))


def test_sklearn_clone_and_copy_with_give_equal_unfitted_copies():
    est = SNeRV(tradeoff=0.2, learning_metric=LearningMetric(n_pieces=3))
    for copy in (clone(est), copy_with(est)):
        assert copy is not est and copy.learning_metric is not est.learning_metric
        assert repr(copy) == repr(est)
    assert copy_with(est, tradeoff=0.7).tradeoff == 0.7


def test_tags_say_transformer_or_classifier():
    assert get_tags(HSSNE()).transformer_tags is not None
    assert get_tags(HSSNE(metric="precomputed")).input_tags.pairwise
    tags = get_tags(LearningMetric())
    assert tags.estimator_type == "classifier" and tags.target_tags.required


def test_not_fitted_is_sklearns_error():
    with pytest.raises(NotFittedError, match="This HSSNE instance is not fitted yet"):
        HSSNE().transform(np.zeros((2, 3)))
    with pytest.raises(NotFittedError):
        HSSNE().get_feature_names_out()


@pytest.fixture(scope="module")
def blobs():
    rng = np.random.default_rng(1)
    X = np.concatenate([rng.normal(size=(40, 4)), rng.normal(5.0, size=(40, 4))])
    return X, np.repeat([0, 1], 40)


def test_set_output_pandas_names_the_columns_and_keeps_the_index(blobs):
    X, _ = blobs
    frame = pd.DataFrame(X, index=[f"row{i}" for i in range(len(X))])
    est = HSSNE(max_iter=50, random_state=0).set_output(transform="pandas")
    Y = est.fit_transform(frame)
    assert isinstance(Y, pd.DataFrame)
    assert list(Y.columns) == ["hssne0", "hssne1"] and list(Y.index) == list(frame.index)
    np.testing.assert_array_equal(Y.to_numpy(), est.embedding_)
    assert isinstance(est.set_output(transform="default").transform(X[:3]), np.ndarray)
    with config_context(transform_output="pandas"):
        assert isinstance(SNE(max_iter=30, random_state=0).fit_transform(X), pd.DataFrame)
    with pytest.raises(ValueError, match="'default', 'pandas', 'polars' or None"):
        est.set_output(transform="arrow")


def test_a_pipeline_and_grid_search_take_the_estimators(blobs):
    X, y = blobs
    pipe = make_pipeline(LPP(n_components=2), KNeighborsClassifier(3))
    search = GridSearchCV(pipe, {"lpp__n_neighbors": [5, 10]}, cv=2).fit(X, y)
    assert search.best_score_ > 0.9
    assert LearningMetric(cv=2, random_state=0).fit(X, y).score(X, y) > 0.9


def test_mbed_and_nerv_copy_their_settings_with_the_own_base():
    rng = np.random.default_rng(2)
    X = np.concatenate([rng.normal(6.0 * c, size=(20, 4)) for c in range(3)])
    est = Mbed(n_classes=3, max_iter=40, random_state=0).fit(X, np.repeat([0, 1, 2], 20))
    chosen = est.with_chosen_settings()
    assert est.sigma_candidates_ is not None and chosen is not est
    assert chosen.sigma == est.sigma_ and chosen.n_classes == 3 and est.sigma == "auto"
    assert SNeRV(max_iter=3, random_state=0,
                 learning_metric=LearningMetric(cv=2)).fit(X, np.repeat([0, 1, 2], 20)) \
        .embedding_.shape == (60, 2)
