"""Saving fitted estimators (pickle, joblib, skops) and Explorer sessions.

Estimators: every estimator nbembed exports, fitted on a small sample, comes
back from each format with ``transform`` (and ``predict_proba`` / ``predict``
where it has them) giving the same numbers bit for bit. Sessions: an Explorer
saved and opened again holds the same method, positions, schedule point,
annotations, pins, sliders and colourings, goes on from there, and a file
that is damaged or does not fit the data given is refused.
"""

import contextlib
import copy
import importlib
import io
import json
import os
import pathlib
import pickle
import re
import threading
import time
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
    # Placing at another perplexity works on a shallow copy, which shares it.
    assert copy.copy(estimator._new_points)._data_t is estimator._new_points._data_t


# --------------------------------------------------------------------------- sessions

def blobs(n=60, seed=0):
    """Three well separated blobs in 3-D; point i is in blob i % 3."""
    rng = np.random.default_rng(seed)
    return np.tile(np.eye(3) * 10, (n // 3, 1)) + rng.normal(size=(n, 3))


def small_hssne(**params):
    return HSSNE(**{**dict(alpha=1.0, perplexity=10, max_iter=60, early_exaggeration_iter=20,
                           random_state=0), **params})


@pytest.fixture(scope="module")
def session():
    """The session module, where the widget can be made (anywidget and its bundle)."""
    pytest.importorskip("anywidget")
    from nbembed.widget import explorer
    if not explorer.BUNDLE.is_file():
        pytest.skip(f"the widget bundle is not built: {explorer.BUILD_COMMAND}")
    from nbembed.widget import session
    return session


@pytest.fixture
def explorers(session):
    """Make Explorers (paused, waited for) and stop them all afterwards; also stops
    those opened with ``open``."""
    from nbembed.widget import Explorer
    made = []

    def make(X, **kwargs):
        kwargs.setdefault("method", small_hssne())
        kwargs.setdefault("autostart", False)
        ex = Explorer(X, extra_iterations=20, **kwargs)
        made.append(ex)
        return ex.wait(timeout=120)

    def open(path, **kwargs):
        ex = session.load_session(path, **kwargs)
        made.append(ex)
        return ex.wait(timeout=120)

    make.open = open
    yield make
    for ex in made:
        ex.stop(timeout=30)


def test_a_session_comes_back_as_it_was_and_goes_on_from_there(explorers, session, tmp_path):
    X = blobs()
    y = np.arange(60) % 3
    rng = np.random.default_rng(1)
    ex = explorers(X, labels=np.where(np.arange(60) < 12, y, -1), class_names=["a", "b", "c"],
                   colors=np.array(["x", "y"])[np.arange(60) % 2],
                   data={"size": rng.normal(size=60)}, hover_text=[f"point {i}" for i in
                                                                   range(60)],
                   images=rng.integers(0, 255, size=(60, 4, 4), dtype=np.uint8))
    ex.step(30)
    ex.wait(timeout=120)
    ex.apply("must_link", [20, 23, 26])
    ex.apply("cannot_link", [21], other=[24])
    ex.apply("soft_label", [30, 33], new_class="d", confidence=0.5)
    ex.pin([5, 6], [[1.0, 2.0], [-1.0, 0.5]])
    ex.params = {"alpha": 0.7}
    ex.color_by = "size"
    ex.view = "pca"
    ex.selection = [1, 2, 40]
    ex.show_neighbours = True
    ex.wait(timeout=120)
    saved = dict(embedding=ex.embedding, iteration=ex.run.iteration, pinned=ex.run.pinned,
                 annotations=ex.annotations.to_json())
    assert ex.status == "paused" and saved["iteration"] == 30
    path = session.save_session(ex, tmp_path / "digits.npz")
    assert path == tmp_path / "digits.npz"

    back = explorers.open(path, X=X)
    assert type(back._method) is HSSNE and repr(back._method) == repr(ex._method)
    assert back.status == "paused"
    assert back.run.iteration == 30
    np.testing.assert_array_equal(back.embedding, saved["embedding"])
    assert back.annotations.to_json() == saved["annotations"]
    assert back.annotations.class_names == ["a", "b", "c", "d"]
    np.testing.assert_array_equal(back.pinned, [5, 6])
    np.testing.assert_array_equal(back.run.pinned, [5, 6])
    assert back.run.alpha == 0.7 and back.params["alpha"] == 0.7
    assert back.color_options == ex.color_options and back.color_by == "size"
    np.testing.assert_array_equal(back._user_values["user"], ex._user_values["user"])
    np.testing.assert_array_equal(back._user_values["size"], ex._user_values["size"])
    assert back.view == "pca" and back.show_neighbours and not back.show_forces
    assert back.hover_text == ex.hover_text
    assert back.image_shape == [4, 4] and back._images == ex._images
    np.testing.assert_array_equal(back.selection, [1, 2, 40])
    assert back._worker.extra_iterations == 20
    assert "prepare" not in vars(back._method)  # a restart starts afresh

    # It goes on from the saved positions after early exaggeration, with the pins held.
    assert back.run.phase != "early exaggeration"
    back.step(5)
    back.wait(timeout=120)
    assert back.run.iteration == 35
    Y = back.embedding
    np.testing.assert_array_equal(Y[[5, 6]], [[1.0, 2.0], [-1.0, 0.5]])
    extent = np.ptp(saved["embedding"], axis=0).max()
    assert np.abs(Y - saved["embedding"]).max() < 0.5 * extent
    assert np.ptp(Y, axis=0).max() > 0.5 * extent  # not a new start (1e-4 wide)
    assert not np.array_equal(Y, saved["embedding"])


def test_saving_a_session_again_before_its_run_is_prepared_keeps_the_positions(
        explorers, session, tmp_path, monkeypatch):
    X = blobs()
    ex = explorers(X)
    ex.step(25)
    ex.wait(timeout=120)
    first = session.save_session(ex, tmp_path / "first.npz")
    release = threading.Event()
    own_prepare = HSSNE.prepare

    def slow_prepare(self, *args, **kwargs):
        assert release.wait(60)
        return own_prepare(self, *args, **kwargs)

    monkeypatch.setattr(HSSNE, "prepare", slow_prepare)
    back = session.load_session(first, X=X)
    try:
        assert back.run is None  # still preparing
        second = session.save_session(back, tmp_path / "second.npz")
    finally:
        release.set()
    back.wait(timeout=120)
    back.stop(timeout=30)
    saved = [session.read_session(path) for path in (first, second)]
    assert saved[1][0]["run"] == saved[0][0]["run"]
    np.testing.assert_array_equal(saved[1][1]["run.embedding"], ex.embedding)
    with pytest.raises(TypeError, match="numeric"):
        session.load_session(first, X=[["a", "b", "c"]] * 60)


def test_saving_while_a_restart_is_prepared_says_the_pins_are_not_kept(
        explorers, session, tmp_path, monkeypatch):
    ex = explorers(blobs())
    ex.pin([3])
    ex.wait(timeout=120)
    release = threading.Event()
    own_prepare = HSSNE.prepare
    monkeypatch.setattr(HSSNE, "prepare",
                        lambda self, *a, **k: release.wait(60) and own_prepare(self, *a, **k))
    ex.restart()
    try:
        for _ in range(500):
            if ex.run is None:
                break
            time.sleep(0.01)
        assert ex.run is None
        with pytest.warns(UserWarning, match="pinned point"):
            path = session.save_session(ex, tmp_path / "s.npz")
    finally:
        release.set()
    document, _ = session.read_session(path)
    assert document["run"] is None and document["pinned"] is None
    assert json.loads(ex.annotations.to_json()) == document["annotations"]


def test_a_session_file_holds_no_pickle(explorers, session, tmp_path):
    ex = explorers(blobs(), method=small_hssne(random_state=np.random.RandomState(4),
                                               init=blobs()[:, :2]))
    path = session.save_session(ex, tmp_path / "s.npz", include_data=True)
    with np.load(path, allow_pickle=False) as archive:
        entries = {name: archive[name] for name in archive.files}
    assert all(a.dtype.kind in "biufUS" for a in entries.values())
    document = json.loads(entries["session"].tobytes())
    assert document["format"] == session.FORMAT_NAME
    assert document["version"] == session.FORMAT_VERSION
    back = explorers.open(path)
    np.testing.assert_array_equal(back._method.init, blobs()[:, :2])
    np.testing.assert_array_equal(back._method.random_state.get_state()[1],
                                  np.random.RandomState(4).get_state()[1])


@pytest.mark.parametrize("sparse", [False, True])
def test_a_finished_session_with_its_data_opens_finished_without_x(explorers, session,
                                                                   tmp_path, sparse):
    X = sp.csr_matrix(blobs()) if sparse else blobs()
    ex = explorers(X, method=small_hssne(max_iter=40, early_exaggeration_iter=10),
                   autostart=True)
    assert ex.status == "done"
    path = session.save_session(ex, tmp_path / "done.npz", include_data=True)
    back = explorers.open(path)
    assert back.status == "done" and back.run.iteration == 40
    np.testing.assert_array_equal(back.embedding, ex.embedding)
    assert sp.issparse(back._X) == sparse
    np.testing.assert_array_equal(sp.csr_matrix(back._X).toarray(),
                                  sp.csr_matrix(X).toarray())


def test_mbed_goes_on_in_the_middle_of_its_annealing(explorers, session, tmp_path):
    y = np.arange(60) % 3
    ex = explorers(blobs(), method=Mbed(n_classes=3, n_anneal=3, n_iter_init=2, max_iter=30,
                                        random_state=0),
                   labels=np.where(np.arange(60) < 9, y, -1))
    ex.step(15)
    ex.wait(timeout=120)
    assert ex.run.anneal_step is not None
    ex.color_by = "predicted"
    path = session.save_session(ex, tmp_path / "mbed.npz")
    back = explorers.open(path, X=blobs())
    for name in ("iteration", "schedule_position", "anneal_step", "radius", "current_lambda",
                 "lambda_"):
        assert getattr(back.run, name) == getattr(ex.run, name), name
    assert back.run.live_parameters == ex.run.live_parameters  # the slider's range in r
    assert back.param_specs == ex.param_specs
    np.testing.assert_array_equal(back.embedding, ex.embedding)
    assert back.color_by == "predicted"


def test_parametric_embedding_keeps_its_class_positions_and_pins(explorers, session, tmp_path):
    P = posteriors(np.arange(60) % 3)
    ex = explorers(P, method=ParametricEmbedding(max_iter=50, random_state=0))
    ex.step(10)
    ex.wait(timeout=120)
    ex.run.pin_classes([1])
    path = session.save_session(ex, tmp_path / "pe.npz")
    back = explorers.open(path, X=P)
    np.testing.assert_array_equal(back.embedding, ex.embedding)
    np.testing.assert_array_equal(back.run.anchors, ex.run.anchors)
    np.testing.assert_array_equal(back.run.pinned_classes, [1])


def test_spectral_and_precomputed_sessions(explorers, session, tmp_path):
    X, y = blobs(), np.arange(60) % 3
    ex = explorers(X, method=SpectralSSDR(n_neighbors=5), labels=np.where(y < 9, y, -1),
                   autostart=True)
    back = explorers.open(session.save_session(ex, tmp_path / "spectral.npz"), X=X)
    assert back.status == "done"
    np.testing.assert_array_equal(back.embedding, ex.embedding)

    shown = explorers(X[:, :2], method="precomputed")
    back = explorers.open(session.save_session(shown, tmp_path / "shown.npz"), X=X[:, :2])
    np.testing.assert_array_equal(back.embedding, X[:, :2])


def test_opening_checks_the_data_against_the_saved_fingerprint(explorers, session, tmp_path):
    X = blobs()
    path = session.save_session(explorers(X), tmp_path / "s.npz")
    with pytest.raises(session.SessionError, match="include_data=False"):
        session.load_session(path)
    with pytest.raises(session.SessionError, match="shape"):
        session.load_session(path, X=X[:50])
    changed = X.copy()
    changed[7, 1] += 1e-9
    with pytest.raises(session.SessionError, match="not the data"):
        session.load_session(path, X=changed)
    with pytest.raises(session.SessionError, match="not the data"):
        session.load_session(path, X=X[::-1])
    with pytest.raises(session.SessionError, match="dense array"):
        session.load_session(path, X=sp.csr_matrix(X))
    # The same values in another dtype and container are the same data.
    back = explorers.open(path, X=X.tolist())
    assert back.run is not None


def rewritten(path, change, name="changed.npz"):
    """A copy of session ``path`` whose document and arrays ``change(document, arrays)``
    edited in place."""
    with np.load(path, allow_pickle=False) as archive:
        arrays = {key: archive[key] for key in archive.files}
    document = json.loads(arrays.pop("session").tobytes())
    change(document, arrays)
    out = pathlib.Path(path).with_name(name)
    text = json.dumps(document).encode()
    with open(out, "wb") as file:
        np.savez(file, session=np.frombuffer(text, dtype=np.uint8), **arrays)
    return out


class _RunsCode:
    """Unpickling this creates a file: the proof that a loader ran code."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (pathlib.Path.touch, (pathlib.Path(self.marker),))


def test_damaged_and_foreign_files_are_refused_without_running_code(explorers, session,
                                                                    tmp_path):
    X = blobs()
    good = session.save_session(explorers(X), tmp_path / "good.npz")
    data = good.read_bytes()
    SessionError = session.SessionError

    def refused(path, match, **kwargs):
        with pytest.raises(SessionError, match=match):
            session.load_session(path, X=X, **kwargs)

    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(data[:len(data) // 2])
    refused(truncated, "not an nbembed session file|damaged")
    flipped = bytearray(data)
    at = data.index(b'"format"') + 3
    flipped[at] ^= 0x20
    (tmp_path / "flipped.npz").write_bytes(bytes(flipped))
    refused(tmp_path / "flipped.npz", "damaged")
    (tmp_path / "notes.txt").write_text("not a session")
    refused(tmp_path / "notes.txt", "not an nbembed session file")
    np.save(tmp_path / "one.npy", np.zeros(3))
    refused(tmp_path / "one.npy", "one array")
    np.savez(tmp_path / "other.npz", x=np.zeros(3))
    refused(tmp_path / "other.npz", "no 'session' entry")
    marker = tmp_path / "code-ran"
    (tmp_path / "evil.npz").write_bytes(pickle.dumps(_RunsCode(marker)))
    refused(tmp_path / "evil.npz", "not an nbembed session file")
    assert not marker.exists()
    with pytest.raises(FileNotFoundError):
        session.load_session(tmp_path / "absent.npz", X=X)

    def set_entry(key, value):
        return lambda document, arrays: document.__setitem__(key, value)

    refused(rewritten(good, set_entry("version", 99)), "Upgrade nbembed")
    refused(rewritten(good, set_entry("format", "something else")), "not an nbembed session")
    refused(rewritten(good, set_entry("method", {"name": "os.system", "params": {}})),
            "not one of nbembed's")
    refused(rewritten(good, lambda d, a: d["annotations"].__setitem__("n_samples", 61)),
            "annotations")
    refused(rewritten(good, lambda d, a: a.pop("run.embedding")), "incomplete")
    refused(rewritten(good, lambda d, a: a.__setitem__("run.embedding", np.zeros((60, 3)))),
            "dimension")
    refused(rewritten(good, lambda d, a: d.pop("display")), "lacks the entry 'display'")
    refused(rewritten(good, lambda d, a: d["method"]["params"].__setitem__(
        "perplexity", {"$code": "print"})), "unknown form")
    with pytest.raises(TypeError, match="annotations"):
        session.load_session(good, X=X, annotations=None)


def test_saving_refuses_what_a_session_cannot_hold_and_keeps_the_old_file(explorers, session,
                                                                          tmp_path):
    from nbembed.widget.precomputed import PrecomputedRun

    class OwnMethod:
        def prepare(self, X, y=None, annotations=None):
            return PrecomputedRun(X[:, :2])

    path = tmp_path / "s.npz"
    path.write_bytes(b"an older session")
    with pytest.raises(TypeError, match="OwnMethod"):
        session.save_session(explorers(blobs(), method=OwnMethod()), path)
    kernel = explorers(blobs(), method=SpectralSSDR(n_neighbors=5, kernel=lambda A, B: A @ B.T),
                       labels=np.arange(60) % 3)
    with pytest.raises(TypeError, match="kernel"):
        session.save_session(kernel, path)
    with pytest.raises(TypeError, match="include_data"):
        session.save_session(kernel, path, include_data="yes")
    assert path.read_bytes() == b"an older session"
    assert sorted(os.listdir(tmp_path)) == ["s.npz"]


def test_method_parameters_round_trip_through_a_document(session):
    methods = [spec.check_instance() for spec in REGISTRY] + [
        SNeRV(learning_metric=LearningMetric(n_components=2, cv=2)),
        HSSNE(init=np.arange(8.0).reshape(4, 2), random_state=np.random.RandomState(2),
              max_step_norm=np.inf, tol=np.float32(1e-4)),
        SpectralSSDR(kernel="rbf", kernel_params={"gamma": 0.5}),
    ]
    for method in methods:
        arrays = {}
        document = json.loads(json.dumps(session.method_to_document(method, arrays),
                                          allow_nan=False))
        back = session.method_from_document(document, arrays)
        assert type(back) is type(method)
        assert_same_params(back.get_params(deep=False), method.get_params(deep=False))


def assert_same_params(got, expected):
    """Parameters equal in value: arrays element by element, generators by their state,
    estimators by theirs; a NumPy scalar comes back as the Python number of its value."""
    assert got.keys() == expected.keys()
    for name, value in expected.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(got[name], value)
        elif isinstance(value, np.random.RandomState):
            assert str(got[name].get_state()) == str(value.get_state())
        elif hasattr(value, "get_params"):
            assert type(got[name]) is type(value)
            assert_same_params(got[name].get_params(deep=False), value.get_params(deep=False))
        else:
            assert got[name] == value and type(got[name]) is type(value) or \
                isinstance(value, np.generic) and got[name] == value.item(), name


def test_the_data_fingerprint_follows_values_not_containers(session):
    X = blobs()
    fingerprint = session.data_fingerprint(X)
    assert session.data_fingerprint(X.tolist()) == fingerprint
    assert session.data_fingerprint(np.asfortranarray(X)) == fingerprint
    assert session.data_fingerprint(X[:, ::-1]) != fingerprint
    assert session.data_fingerprint(X.reshape(90, 2)) != fingerprint
    S = sp.random(30, 8, density=0.3, random_state=0, format="coo")
    assert session.data_fingerprint(S) == session.data_fingerprint(S.tocsc())
    assert session.data_fingerprint(S) != session.data_fingerprint(S.toarray())
    with pytest.raises(TypeError, match="numeric"):
        session.data_fingerprint([["a", "b"]])


@pytest.mark.slow
def test_the_docs_page_runs(tmp_path, monkeypatch):
    """docs/saving.md's python blocks, in order, in one namespace."""
    pytest.importorskip("skops")
    text = (ROOT / "docs" / "saving.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks
    monkeypatch.chdir(tmp_path)
    namespace = {}
    try:
        for number, block in enumerate(blocks, 1):
            if "Explorer" in block or "session" in block:
                pytest.importorskip("anywidget")
            exec(compile(block, f"<docs/saving.md block {number}>", "exec"), namespace)
    finally:
        for value in namespace.values():
            if type(value).__name__ == "Explorer":
                value.stop(timeout=10)


def test_the_explorer_saves_and_opens_its_session_itself(explorers, tmp_path):
    from nbembed.widget import Explorer

    X = blobs()
    ex = explorers(X)
    ex.step(10)
    ex.wait(timeout=120)
    ex.apply("must_link", [1, 2, 3])
    path = ex.save(tmp_path / "mine.npz", include_data=True)
    back = Explorer.load(path)
    try:
        back.wait(timeout=120)
        np.testing.assert_array_equal(back.embedding, ex.embedding)
        assert back.annotations.to_json() == ex.annotations.to_json()
    finally:
        back.stop(timeout=30)
