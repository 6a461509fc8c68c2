"""Errors that used to come from scikit-learn, numpy or the Python parser now come
from nbembed, naming the parameter and the fix."""

import csv

import numpy as np
import pytest
import scipy.sparse as sp

from nbembed import HSSNE, Annotations, LearningMetric, NeRV, SpectralSSDR
from nbembed import cli


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(60, 3)), np.arange(60) % 2


@pytest.mark.parametrize("seed", ["x", -1, 2**40, 1.5, [1]])
@pytest.mark.parametrize("cls", [HSSNE, LearningMetric])
def test_a_bad_random_state_is_named(cls, seed, data):
    with pytest.raises(ValueError, match=r"random_state must be None, an integer"):
        cls(random_state=seed).fit(*data)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("metric", ["euclidian", None, 3, ["cosine"]])
@pytest.mark.parametrize("cls", [HSSNE, NeRV])
def test_a_bad_metric_is_named(cls, metric, data, sparse):
    X, y = data
    with pytest.raises(ValueError, match=r"metric must be 'precomputed', a callable or"):
        cls(metric=metric).fit(sp.csr_matrix(X) if sparse else X, y)


def test_strings_are_refused_by_nbembed(data):
    X, y = data
    for est in (SpectralSSDR(n_neighbors=3), LearningMetric(), HSSNE()):
        with pytest.raises(TypeError, match=r"X holds <U\d+ values, not numbers"):
            est.fit(X.astype(str), y)


def test_an_eigenproblem_that_overflows_names_its_parameters_and_a_live_change_is_undone(data):
    with pytest.raises(ValueError, match="hadamard_power = 1e\\+300"):
        SpectralSSDR(n_neighbors=3, hadamard_power=1e300).fit(*data)
    run = SpectralSSDR(n_neighbors=3).prepare(*data)
    run.step()
    before = run.hadamard_power
    with pytest.raises(ValueError, match="not finite"):
        run.set_params(hadamard_power=1e300)
    assert run.hadamard_power == before


@pytest.mark.parametrize("args", [(10**12,), (10**6, 10**7), (10, 10**12), (10**9, 1000)])
def test_annotations_too_large_for_memory_are_a_memory_error_from_nbembed(args):
    with pytest.raises(MemoryError, match=r"Annotations of \d+ points and \d+ classes would "
                                          r"need .* NBEMBED_MAX_DENSE_BYTES"):
        Annotations(*args)


def test_labels_and_soft_labels_that_would_not_fit_change_nothing():
    ann = Annotations(10)
    ann.set_labels([1], 0)
    before = ann.to_json()
    with pytest.raises(MemoryError, match="Annotations of 10 points"):
        ann.set_labels([0], 10**12)
    assert ann.to_json() == before


def test_many_repeated_class_names_are_refused_at_once():
    with pytest.raises(ValueError, match=r"class names must be distinct; repeated: \['a'\]"):
        Annotations(10, class_names=["a"] * 10**6)


def test_cli_refuses_nested_and_long_parameter_values(tmp_path, capsys):
    path = tmp_path / "data.npz"
    np.savez(path, X=np.random.default_rng(0).normal(size=(60, 3)))
    out = str(tmp_path / "out.csv")
    for value in ("[" * 100000, "-" * 100000 + "1"):
        assert cli.main(["embed", str(path), "-q", "--no-html", "-o", out, "-p",
                         f"perplexity={value}"]) == 2
        assert "-p perplexity: the value is 100" in capsys.readouterr().err


def test_cli_refuses_class_numbers_beyond_64_bits(tmp_path, capsys):
    path = tmp_path / "data.csv"
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["a", "b", "label"])
        writer.writerows([[i, 2 * i, 10**30] for i in range(30)])
    assert cli.main(["embed", str(path), "--labels", "label", "--use-labels", "-q",
                     "--no-html", "-o", str(tmp_path / "out.csv")]) == 2
    assert "label holds the class number 1e+30, beyond 64-bit integers" in \
        capsys.readouterr().err


@pytest.mark.parametrize("bad, message", [
    (np.full((3, 3), np.nan), "contains NaN or infinity"),
    (np.zeros((0, 3)), "is empty"),
    (np.zeros(3), "Reshape your data"),
    (np.zeros((3, 3)).astype(str), "not numbers"),
    (np.full((3, 3), 1e200), "would overflow"),
])
def test_fitted_spectral_learners_and_the_metric_check_new_data_themselves(bad, message, data):
    for est in (SpectralSSDR(n_neighbors=3).fit(*data), LearningMetric().fit(*data)):
        method = est.transform if hasattr(est, "transform") else est.predict_proba
        with pytest.raises((ValueError, TypeError), match=message) as raised:
            method(bad)
        assert "/nbembed/" in raised.traceback[-1].path.as_posix()
