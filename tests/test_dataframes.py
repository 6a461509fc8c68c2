"""pandas and polars DataFrames in and out of every estimator, and Mbed's class count."""

import functools
import importlib.util
import pathlib
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn import config_context
from sklearn.base import clone
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from nbembed import HSSNE, LPP, Annotations, Mbed
from nbembed.methods.registry import REGISTRY, get

LIBRARIES = ("pandas", "polars")
COLUMNS = ["height", "width", "depth", "mass"]
N_PER_CLASS = 30


@pytest.fixture(scope="module")
def data():
    return three_classes()


@functools.cache
def three_classes():
    """Three separated classes of 30 points in 4 features, their labels, and class
    posteriors (3 columns) for Parametric Embedding."""
    rng = np.random.default_rng(3)
    X = np.concatenate([rng.normal(4.0 * c, size=(N_PER_CLASS, 4)) for c in range(3)])
    y = np.repeat([0, 1, 2], N_PER_CLASS)
    scores = np.exp(-0.5 * (X[:, :1] - np.array([[0.0, 4.0, 8.0]])) ** 2)
    return X, y, scores / scores.sum(axis=1, keepdims=True)


def frame(library, values, columns):
    """A DataFrame of ``library``; a pandas one with an index of strings."""
    if library == "pandas":
        return pd.DataFrame(values, columns=columns,
                            index=[f"point{i}" for i in range(len(values))])
    pl = pytest.importorskip("polars")
    return pl.DataFrame(values, schema=list(columns), orient="row")


def series(library, values):
    if library == "pandas":
        return pd.Series(values, name="label")
    pl = pytest.importorskip("polars")
    return pl.Series("label", values)


def to_numpy(table):
    return table.to_numpy() if hasattr(table, "to_numpy") else np.asarray(table)


def quiet(call, *args):
    """``call(*args)`` with the convergence warnings of the tiny settings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.filterwarnings("ignore", message=".*max_iter.*")
        return call(*args)


def inputs(spec, data):
    X, y, P = data
    if spec.name == "pe":
        return P, y, [f"p_{k}" for k in range(P.shape[1])]
    return X, y, COLUMNS


# -- every estimator ----------------------------------------------------------------------------

TRANSFORMERS = [spec for spec in REGISTRY if hasattr(spec.cls, "transform")]
CLASSIFIERS = [spec for spec in REGISTRY if not hasattr(spec.cls, "transform")]


def test_every_registered_estimator_is_covered():
    assert {spec.name for spec in TRANSFORMERS + CLASSIFIERS} == \
        {spec.name for spec in REGISTRY}
    assert TRANSFORMERS and all(hasattr(spec.cls, "set_output") for spec in TRANSFORMERS)


@functools.cache
def fit_of_the_array(name):
    """The embedding of the estimator ``name`` fitted on the arrays, and its
    transform of the first 7 points."""
    spec = get(name)
    values, y, _ = inputs(spec, three_classes())
    est = quiet(spec.check_instance().fit, values, y)
    return est.embedding_, est.transform(values[:7])


@pytest.mark.parametrize("library", LIBRARIES)
@pytest.mark.parametrize("spec", TRANSFORMERS, ids=lambda spec: spec.name)
def test_frames_in_and_out_give_the_fit_of_the_array(spec, library, data):
    values, y, columns = inputs(spec, data)
    expected_fit, expected_new = fit_of_the_array(spec.name)

    X, labels = frame(library, values, columns), series(library, y)
    est = spec.check_instance().set_output(transform=library)
    Y = quiet(est.fit_transform, X, labels)
    names = [f"{spec.class_name.lower()}{i}" for i in range(expected_fit.shape[1])]
    assert type(Y).__module__.startswith(library) and list(Y.columns) == names
    assert list(est.get_feature_names_out()) == names
    np.testing.assert_allclose(to_numpy(Y), expected_fit)
    if library == "pandas":
        assert list(Y.index) == list(X.index)

    new = est.transform(X[:7])
    assert type(new).__module__.startswith(library) and list(new.columns) == names
    np.testing.assert_allclose(to_numpy(new), expected_new)
    assert isinstance(est.set_output(transform="default").transform(X[:7]), np.ndarray)


@functools.cache
def probabilities_of_the_array(name):
    spec = get(name)
    values, y, _ = inputs(spec, three_classes())
    return spec.check_instance().fit(values, y).predict_proba(values)


@pytest.mark.parametrize("library", LIBRARIES)
@pytest.mark.parametrize("spec", CLASSIFIERS, ids=lambda spec: spec.name)
def test_classifiers_fit_and_predict_on_frames(spec, library, data):
    values, y, columns = inputs(spec, data)
    expected = probabilities_of_the_array(spec.name)
    X = frame(library, values, columns)
    est = spec.check_instance().fit(X, series(library, y))
    np.testing.assert_allclose(est.predict_proba(X), expected)


@pytest.mark.parametrize("library", LIBRARIES)
@pytest.mark.parametrize("spec", REGISTRY, ids=lambda spec: spec.name)
def test_non_numeric_columns_are_named_with_the_fix(spec, library, data):
    values, y, columns = inputs(spec, data)
    X = frame(library, values, columns)
    if library == "pandas":
        X = X.assign(colour="red", kind=pd.Categorical(["a", "b", "c"] * N_PER_CLASS))
    else:
        import polars as pl
        X = X.with_columns(pl.lit("red").alias("colour"), pl.lit("a").alias("kind"))
    with pytest.raises(TypeError) as raised:
        spec.check_instance().fit(X, y)
    message = str(raised.value)
    assert "2 non-numeric column(s)" in message
    assert "'colour'" in message and "'kind'" in message and "'height'" not in message
    assert "drop those columns" in message and "encode them as numbers" in message


# -- errors --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def fitted(data):
    X, _, _ = data
    return HSSNE(perplexity=10.0, max_iter=60, random_state=0).fit(pd.DataFrame(X, columns=COLUMNS))


@pytest.mark.parametrize("library", LIBRARIES)
def test_transform_refuses_non_numeric_columns_and_names_missing_values(fitted, library, data):
    X, _, _ = data
    new = frame(library, X[:5], COLUMNS)
    if library == "pandas":
        with_text = new.assign(height=["tall"] * 5)
        with_gap = new.assign(width=[1.0, np.nan, 1.0, 1.0, 1.0])
    else:
        import polars as pl
        with_text = new.with_columns(pl.lit("tall").alias("height"))
        with_gap = new.with_columns(pl.Series("width", [1.0, None, 1.0, 1.0, 1.0]))
    with pytest.raises(TypeError, match=r"1 non-numeric column\(s\): 'height'"):
        fitted.transform(with_text)
    with pytest.raises(ValueError, match=r"NaN or infinity \(first at index \(1, 1\), "
                                         r"column 'width'\)"):
        fitted.transform(with_gap)


@pytest.mark.parametrize("library", LIBRARIES)
def test_new_points_need_the_fitted_column_names_as_in_scikit_learn(fitted, library, data):
    from nbembed.fitted_map import fitted_map
    X, _, _ = data
    assert isinstance(fitted.feature_names_in_, np.ndarray)
    assert list(fitted.feature_names_in_) == COLUMNS
    expected = fitted.transform(X[:5])  # arrays are taken by position
    assert np.array_equal(fitted.transform(frame(library, X[:5], COLUMNS)), expected)
    placer = fitted_map(fitted)
    assert list(placer.feature_names_in_) == COLUMNS
    cases = [
        (COLUMNS[::-1], "Feature names must be in the same order as they were in fit."),
        (COLUMNS[:3] + ["weight"], "Feature names unseen at fit time:\n- weight\n"
                                   "Feature names seen at fit time, yet now missing:\n- mass\n"),
        (COLUMNS[:3], "Feature names seen at fit time, yet now missing:\n- mass\n"),
    ]
    for columns, why in cases:
        new = frame(library, X[:5, :len(columns)], columns)
        message = "The feature names should match those that were passed during fit.\n" + why
        for place in (fitted.transform, placer.transform):
            with pytest.raises(ValueError, match=re.escape(message)) as error:
                place(new)
            assert "X[list(model.feature_names_in_)]" in str(error.value)
    # The fix the message gives works.
    shuffled = frame(library, X[:5, ::-1], COLUMNS[::-1])
    assert np.array_equal(fitted.transform(shuffled[list(fitted.feature_names_in_)]), expected)


def test_a_fit_on_an_array_forgets_the_column_names(data):
    X, _, _ = data
    model = HSSNE(perplexity=10.0, max_iter=30, random_state=0)
    quiet(model.fit, pd.DataFrame(X, columns=COLUMNS))
    assert hasattr(model, "feature_names_in_")
    quiet(model.fit, X)
    assert not hasattr(model, "feature_names_in_")
    quiet(model.fit, pd.DataFrame(X))  # names that are not text are not kept
    assert not hasattr(model, "feature_names_in_")


def test_pandas_extension_columns_are_numbers_and_their_gaps_are_found(data):
    X, _, _ = data
    numbers = pd.DataFrame(X[:, :2], columns=["a", "b"]).assign(
        count=pd.array(np.arange(len(X)), dtype="Int64"),
        flag=pd.array(np.arange(len(X)) % 2 == 0, dtype="boolean"))
    embedded = LPP(n_neighbors=5).fit(numbers).transform(numbers)
    expected = LPP(n_neighbors=5).fit(numbers.to_numpy(dtype=float)).transform(
        numbers.to_numpy(dtype=float))
    np.testing.assert_allclose(embedded, expected)
    numbers.loc[4, "count"] = pd.NA
    with pytest.raises(ValueError, match="column 'count'"):
        LPP(n_neighbors=5).fit(numbers)


def test_a_series_or_a_lazy_frame_as_X_says_what_to_pass(data):
    X, _, _ = data
    with pytest.raises(ValueError, match=r"got a pandas Series.*X.to_frame\(\)"):
        HSSNE().fit(pd.Series(X[:, 0]))
    pl = pytest.importorskip("polars")
    with pytest.raises(TypeError, match=r"polars LazyFrame.*X.collect\(\)"):
        HSSNE().fit(pl.DataFrame(X, schema=COLUMNS, orient="row").lazy())


@pytest.mark.parametrize("library", LIBRARIES)
def test_missing_labels_in_a_series_say_to_mark_them_with_minus_one(library, data):
    X, y, _ = data
    labels = [None if i == 5 else int(v) for i, v in enumerate(y)]
    if library == "pandas":
        labels = pd.Series(labels, dtype="Int64")
    else:
        labels = series(library, labels)
    for est in (LPP(n_neighbors=5), Mbed(max_iter=8, n_anneal=3, n_iter_init=2)):
        with pytest.raises(ValueError, match=r"1 missing label\(s\) \(the first at "
                                             r"position 5\); mark unlabelled points with -1"):
            est.fit(X, labels)


def test_set_output_refuses_an_unknown_container_and_a_missing_library(monkeypatch):
    with pytest.raises(ValueError, match="'default', 'pandas', 'polars' or None"):
        HSSNE().set_output(transform="arrow")
    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "polars" else found(name, *args))
    est = HSSNE()
    with pytest.raises(ImportError, match=r"needs polars, which is not installed.*"
                                          r"set_output\(transform='default'\)"):
        est.set_output(transform="polars")
    assert est.set_output(transform=None) is est


# -- scikit-learn's global configuration ------------------------------------------------------

@pytest.mark.parametrize("library", LIBRARIES)
def test_the_global_transform_output_applies_unless_set_output_chose(library, data):
    if library == "polars":
        pytest.importorskip("polars")
    X, _, _ = data
    with config_context(transform_output=library):
        Y = HSSNE(perplexity=10.0, max_iter=30, random_state=0).fit_transform(X)
        assert type(Y).__module__.startswith(library)
        assert list(Y.columns) == ["hssne0", "hssne1"]
        own = HSSNE(perplexity=10.0, max_iter=30, random_state=0).set_output(
            transform="default")
        assert isinstance(own.fit_transform(X), np.ndarray)
    assert isinstance(HSSNE(perplexity=10.0, max_iter=30, random_state=0).fit_transform(X),
                      np.ndarray)


@pytest.mark.parametrize("library", LIBRARIES)
def test_a_pipeline_passes_frames_through_and_names_the_embedding(library, data):
    if library == "polars":
        pytest.importorskip("polars")
    X, y, _ = data
    pipe = make_pipeline(StandardScaler(), LPP(n_neighbors=5)).set_output(transform=library)
    Y = pipe.fit_transform(pd.DataFrame(X, columns=COLUMNS), y)
    assert type(Y).__module__.startswith(library) and list(Y.columns) == ["lpp0", "lpp1"]
    np.testing.assert_allclose(
        to_numpy(Y), LPP(n_neighbors=5).fit_transform(StandardScaler().fit_transform(X)))


# -- Mbed counts its classes -------------------------------------------------------------------

def small_mbed(**params):
    return Mbed(n_anneal=3, n_iter_init=2, max_iter=12, sigma="quantile", random_state=0,
                **params)


def test_mbed_counts_the_classes_of_its_labels(data):
    X, y, _ = data
    counted = small_mbed().fit(X, pd.Series(y))
    given = small_mbed(n_classes=3).fit(X, y)
    assert counted.n_classes_ == given.n_classes_ == 3
    assert counted.membership_.shape == (len(X), 3) and counted.n_classes is None
    np.testing.assert_allclose(counted.embedding_, given.embedding_)
    assert clone(counted).n_classes is None and counted.max_classes is None


@pytest.mark.parametrize("labels, annotations, expected", [
    ("none", None, 2),
    ("unlabelled", None, 2),
    ("only class 0", None, 2),
    ("0 and 2", None, 3),
    ("soft, 4 columns", None, 4),
    ("none", 4, 4),
    ("0 and 2", 5, 5),
])
def test_mbed_counts_the_largest_label_soft_columns_and_annotated_classes(
        data, labels, annotations, expected):
    X, _, _ = data
    n = len(X)
    y = {"none": None,
         "unlabelled": np.full(n, -1),
         "only class 0": np.r_[0, np.full(n - 1, -1)],
         "0 and 2": np.r_[0, 2, np.full(n - 2, -1)],
         "soft, 4 columns": np.r_[[[0.5, 0.5, 0.0, 0.0]], np.zeros((n - 1, 4))]}[labels]
    notes = None
    if annotations is not None:
        notes = Annotations(n, n_classes=annotations)
        notes.set_labels([n - 1], annotations - 1)
    est = small_mbed()
    run = est.prepare(X, y, annotations=notes)
    assert est.n_classes_ == run.n_classes == expected


def test_mbed_keeps_an_explicit_n_classes_and_refuses_labels_beyond_it(data):
    X, y, _ = data
    assert small_mbed(n_classes=4).fit(X, y).n_classes_ == 4
    assert small_mbed(n_classes=4).max_classes == 4
    with pytest.raises(ValueError, match=r"outside \[0, n_classes\) = \[0, 2\)"):
        small_mbed(n_classes=2).fit(X, y)


def test_mbed_refuses_more_counted_classes_than_points(data):
    X, _, _ = data
    with pytest.raises(ValueError, match=r"n_classes = 8 \(counted in the labels\) is larger "
                                         r"than n_samples = 6"):
        small_mbed().fit(X[:6], np.array([0, 1, 2, 3, 4, 7]))


# -- the docs page ------------------------------------------------------------------------------

@pytest.mark.slow
def test_the_docs_page_runs_and_shows_what_it_prints(capsys):
    """docs/dataframes.md's python blocks, in order, in one namespace; its comments and
    its error message are what they print."""
    pytest.importorskip("polars")
    text = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "dataframes.md").read_text(
        encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 4
    namespace = {}
    for number, block in enumerate(blocks, 1):
        quiet(exec, compile(block, f"<docs/dataframes.md block {number}>", "exec"), namespace)
        printed = capsys.readouterr().out.split()
        for comment in re.findall(r"print\(.*\)\s+# (.*)", block):
            assert " ".join(printed) == " ".join(comment.split()), (number, printed)
    shown = re.search(r"```text\n(.*?)```", text, flags=re.S).group(1)
    assert " ".join(printed) == " ".join(shown.split())
