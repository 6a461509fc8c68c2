"""Python-side tests of the Explorer widget (no browser): traits, binary
round-trips, the background worker, and messages from the browser.

The widget needs its JavaScript bundle; the ``bundle`` fixture builds it once
with npm when it is missing and skips the widget tests when npm is absent.
"""

import contextlib
import dataclasses
import logging
import math
import pathlib
import shutil
import subprocess
import threading
import time

import numpy as np
import pytest

pytest.importorskip("anywidget")

import traitlets  # noqa: E402
from _waiting import wait_for  # noqa: E402

from nbembed import HSSNE, Annotations  # noqa: E402
from nbembed.optim import LiveParameter  # noqa: E402
from nbembed.optim.callbacks import as_list, call_all  # noqa: E402
from nbembed.optim.protocol import Run  # noqa: E402
from nbembed.widget import explorer as explorer_module  # noqa: E402
from nbembed.widget import controls, messages, palette  # noqa: E402
from nbembed.widget.annotating import ActionLog, selection_indices, unused_notice  # noqa: E402
from nbembed.widget.explorer import BundleMissingError, Explorer  # noqa: E402
from nbembed.widget.traits import BOUNDS_BYTES, FLOAT32, POSITION_STEPS, \
    SELECTION_MASK_HEADER, UINT16, UINT32, bytes_from_json, decode, decode_positions, \
    decode_selection, encode, encode_positions, encode_selection, positions_nbytes  # noqa: E402
from nbembed.widget.view import EXTENT, PlaneView, normalize  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bundle():
    """Make sure the widget's JavaScript bundle exists (built once with npm)."""
    if not explorer_module.BUNDLE.is_file():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("the widget bundle is not built and npm is not installed; build it with "
                        f"`{explorer_module.BUILD_COMMAND}`")
        js = ROOT / "js"
        if not (js / "node_modules").is_dir():
            subprocess.run([npm, "ci"], cwd=js, check=True, timeout=600)
        subprocess.run([npm, "run", "build"], cwd=js, check=True, timeout=300)
    return explorer_module.BUNDLE


# --------------------------------------------------------------------------- fakes

ALPHA = LiveParameter("alpha", 0.0, math.inf, (0.0, 3.0), 0.05, "Tail heaviness", label="α")
LAMBDA = LiveParameter("lambda_", 0.0, 1.0, (0.0, 1.0), 0.05, "Mixing", label="λ",
                       allows_auto=True)


class FakeRun(Run):
    """A run protocol implementation whose steps only sleep and drift."""

    name = "fake"
    live_parameters = {"alpha": ALPHA, "lambda_": LAMBDA}
    annotation_kinds = ("labels", "must_link")

    def __init__(self, n, *, n_iter=10**9, seconds_per_iteration=2e-4, fail_at=None,
                 nan_from=None, d=2, seed=0, classes=0):
        self.n_iter = n_iter
        self.iteration = 0
        self.history = []
        self.even_steps = False
        self.alpha = 1.0
        self.lambda_ = 0.5
        self.seconds_per_iteration = seconds_per_iteration
        self.fail_at = fail_at
        self.nan_from = nan_from
        self._Y = np.random.default_rng(seed).normal(size=(n, d))
        self.received = []
        self.param_calls = []
        self.in_step = False
        self.classes = classes
        self.on_iteration = None  # called inside step() after each iteration
        self.step_calls = []  # (iterations asked, iterations done)

    @property
    def membership(self):
        if not self.classes:
            return None
        M = np.zeros((len(self._Y), self.classes))
        M[np.arange(len(self._Y)), np.arange(len(self._Y)) % self.classes] = 1.0
        return M

    @property
    def anchors(self):
        return self._Y[:self.classes] * 10 if self.classes else None

    @property
    def embedding(self):
        if self.nan_from is not None and self.iteration >= self.nan_from:
            return np.full_like(self._Y, np.nan)
        return self._Y.copy()

    def step(self, n=1, callbacks=None, record_last=True):
        self.in_step = True
        before = self.call_start = self.iteration
        self.call_size = n
        try:
            for _ in range(n):
                time.sleep(self.seconds_per_iteration)
                self.iteration += 1
                if self.fail_at is not None and self.iteration >= self.fail_at:
                    raise FloatingPointError("the fake run diverged")
                if self.on_iteration is not None:
                    self.on_iteration(self)
                if callbacks and call_all(as_list(callbacks), self):
                    break
            self.step_calls.append((n, self.iteration - before))
            self._Y *= 1.0001
            self.history.append({"iteration": self.iteration, "cost": 1.0 / self.iteration})
        finally:
            self.in_step = False
        return self

    def set_params(self, **params):
        assert not self.in_step
        for name, value in params.items():
            if name not in self.live_parameters:
                raise ValueError(f"{name!r} is not a live parameter")
            setattr(self, name, self.live_parameters[name].validate(value))
        self.param_calls.append(dict(params))
        return self

    def set_annotations(self, annotations=None, y=None):
        assert not self.in_step
        self.received.append(annotations.to_json())
        return self


class FakeMethod:
    def __init__(self, **run_kwargs):
        self.run_kwargs = run_kwargs
        self.prepared = []

    def prepare(self, X, y=None, annotations=None, init=None):
        self.prepared.append(annotations.to_json())
        run = FakeRun(len(X), **self.run_kwargs)
        self.run_kwargs.pop("fail_at", None)  # a restart gets a healthy run
        return run


class FakeComm:
    """Records what the widget sends, as a kernel comm would carry it."""

    kernel = object()
    comm_id = "fake-comm"

    def __init__(self):
        self.sent = []

    def on_msg(self, callback):
        pass

    def send(self, data=None, buffers=None):
        self.sent.append((data, buffers))

    def close(self, *args, **kwargs):
        pass


@pytest.fixture
def make_explorer(bundle):
    made = []

    def make(X=None, method=None, **kwargs):
        X = np.zeros((40, 3)) if X is None else X
        ex = Explorer(X, method=FakeMethod() if method is None else method, **kwargs)
        made.append(ex)
        return ex

    yield make
    for ex in made:
        ex.stop(timeout=10)


def update_msg(state, buffers=()):
    """A comm message carrying a state update from the browser."""
    state = dict(state)
    paths, bufs = [], []
    for key, value in list(state.items()):
        if isinstance(value, (bytes, memoryview)):
            paths.append([key])
            bufs.append(memoryview(value))
            state[key] = None
    return {"content": {"data": {"method": "update", "state": state, "buffer_paths": paths}},
            "buffers": bufs}


def custom_msg(content, buffers=()):
    return {"content": {"data": {"method": "custom", "content": content}},
            "buffers": [memoryview(b) for b in buffers]}


# --------------------------------------------------------------------------- codecs


def test_binary_round_trips():
    Y = np.array([[1.5, -2.0], [3e7, 0.25]])
    assert np.array_equal(decode(encode(Y, FLOAT32), FLOAT32).reshape(2, 2), Y.astype(np.float32))
    codes = np.array([0, 65535, 7])
    assert decode(memoryview(encode(codes, UINT16)), UINT16).tolist() == [0, 65535, 7]
    idx = np.array([4_000_000_000, 0])
    assert decode(bytearray(encode(idx, UINT32)), UINT32).tolist() == idx.tolist()
    assert bytes_from_json(memoryview(b"abc")) == b"abc"
    assert bytes_from_json(None) == b""
    with pytest.raises(ValueError, match="not a multiple of 4"):
        decode(b"1234567", UINT32)
    with pytest.raises(TypeError, match="binary data"):
        bytes_from_json([1, 2, 3])


def exact_decoding(data):
    """Positions decoded in float64 from the bounds and codes, without the float32 rounding."""
    bounds = np.frombuffer(data, dtype="<f8", count=4)
    codes = np.frombuffer(data, dtype=UINT16, offset=BOUNDS_BYTES).reshape(-1, 2)
    low, high = bounds[:2], bounds[2:]
    return low + codes * ((high - low) / POSITION_STEPS), low, high


def test_positions_round_trip_within_half_a_step_per_axis():
    rng = np.random.default_rng(3)
    P = np.column_stack([rng.uniform(-0.95, 0.95, 5000), rng.normal(0.1, 0.02, 5000)])
    data = encode_positions(P)
    assert isinstance(data, bytes) and len(data) == positions_nbytes(5000) == 32 + 4 * 5000
    decoded = decode_positions(memoryview(data))
    assert decoded.dtype == FLOAT32 and decoded.shape == P.shape
    exact, low, high = exact_decoding(data)
    assert np.array_equal(low, P.min(axis=0)) and np.array_equal(high, P.max(axis=0))
    half_step = (high - low) / POSITION_STEPS / 2
    error = np.abs(exact - P)
    assert np.all(error <= half_step * (1 + 1e-9))
    assert np.all(error.max(axis=0) > half_step / 2)  # rounded to 16 bits, not kept
    # What the browser draws: the same float64 values rounded to float32.
    assert np.array_equal(decoded, exact.astype(np.float32))
    # The extremes are the bounds.
    assert decoded[P[:, 0].argmin(), 0] == np.float32(low[0])
    assert decoded[P[:, 1].argmax(), 1] == np.float32(high[1])


def test_positions_sharing_a_coordinate_decode_it_exactly():
    P = np.array([[0.3, -0.7], [0.3, 0.2], [0.3, 0.95]])
    decoded = decode_positions(encode_positions(P))
    assert np.all(decoded[:, 0] == np.float32(0.3))
    assert np.allclose(decoded[:, 1], P[:, 1], atol=0.5 * 1.65 / POSITION_STEPS + 1e-7)
    one = decode_positions(encode_positions([[-0.25, 0.125]]))
    assert one.tolist() == [[-0.25, 0.125]]


def test_positions_refuse_non_finite_values_and_wrong_shapes():
    for bad in (np.nan, np.inf, -np.inf):
        with pytest.raises(ValueError, match="finite"):
            encode_positions([[0.0, 1.0], [bad, 0.5]])
    with pytest.raises(ValueError, match="more than float64"):
        encode_positions([[-1e308, 0.0], [1e308, 1.0]])
    with pytest.raises(ValueError, match=r"shape \(n, 2\)"):
        encode_positions(np.zeros((4, 3)))
    empty = encode_positions(np.zeros((0, 2)))
    assert len(empty) == positions_nbytes(0) and decode_positions(empty).shape == (0, 2)
    assert decode_positions(b"").shape == (0, 2)


def test_malformed_positions_are_refused():
    good = encode_positions([[0.0, 0.0], [1.0, 2.0]])
    with pytest.raises(ValueError, match="bytes"):
        decode_positions(good[:20])
    with pytest.raises(ValueError, match="bytes"):
        decode_positions(good[:-2])
    for bounds in ([0.0, np.nan, 1.0, 1.0], [1.0, 0.0, 0.0, 1.0], [-1e308, 0.0, 1e308, 1.0],
                   [0.0, 0.0, np.inf, 1.0]):
        with pytest.raises(ValueError, match="bounds"):
            decode_positions(np.array(bounds, "<f8").tobytes() + good[BOUNDS_BYTES:])


def test_selection_codec_picks_the_shorter_format_and_matches_the_browser():
    # The bytes of js/tests/codecs.test.js: 3 indices of 12 points go as a bitmask.
    assert encode_selection([0, 9, 10], 12) == bytes(
        [0xFF, 0xFF, 0xFF, 0xFF, 12, 0, 0, 0, 0x01, 0x06])
    assert encode_selection([3, 7], 1000) == encode([3, 7], UINT32)
    rng = np.random.default_rng(0)
    for n in (1, 7, 8, 9, 100, 1_000_000):
        for k in sorted({0, 1, n // 40, n // 3, n}):
            idx = np.sort(rng.choice(n, size=k, replace=False))
            data = encode_selection(idx, n)
            assert len(data) == min(4 * k, SELECTION_MASK_HEADER + (n + 7) // 8)
            np.testing.assert_array_equal(decode_selection(data, n=n), idx)
    # A lasso of 10^5 points in a map of 10^6: 125 kB instead of 400 kB.
    assert len(encode_selection(np.arange(0, 1_000_000, 10), 1_000_000)) == 125_008


def test_selection_codec_refuses_malformed_bitmasks():
    mask = encode_selection([0, 9, 10], 12)
    with pytest.raises(ValueError, match="bitmask of 12 points; the map has 13"):
        decode_selection(mask, n=13)
    with pytest.raises(ValueError, match="takes 2 bytes after its header; it has 1"):
        decode_selection(mask[:-1])
    with pytest.raises(ValueError, match="bits set past its last point"):
        decode_selection(mask[:-1] + bytes([0x16]))
    with pytest.raises(ValueError, match="without its number of points"):
        decode_selection(mask[:6])


def test_the_browser_may_send_a_selection_as_a_bitmask(make_explorer):
    ex = make_explorer()
    ex.set_state({"_selection": memoryview(encode_selection(np.arange(0, 40, 2), 40))})
    assert ex.selection.tolist() == list(range(0, 40, 2))
    ex.set_state({"_selection": memoryview(encode_selection(np.arange(0, 41, 2), 41))})
    assert ex.selection.tolist() == list(range(0, 40, 2))  # for another map: refused
    assert "41 points; the map has 40" in ex.notice
    method, kwargs = messages.parse({"type": "toggle_pins"},
                                    [memoryview(encode_selection(np.arange(30), 40))])
    assert method == "toggle_pins" and kwargs["indices"].tolist() == list(range(30))
    ex.selection = np.arange(25)  # kept as the shorter bitmask for the browser
    assert len(ex._selection) == SELECTION_MASK_HEADER + 5
    assert ex.selection.tolist() == list(range(25))


def test_set_state_accepts_memoryviews_and_keeps_the_rest_of_the_update(make_explorer):
    ex = make_explorer()
    sel = memoryview(encode([5, 1, 5, 3], UINT32))
    ex.set_state({"_selection": sel, "view": "pca"})
    assert ex.selection.tolist() == [1, 3, 5]
    assert ex.view == "pca"
    # one bad value is ignored with a warning; the other values of the update stay
    ex.set_state({"_selection": memoryview(b"\x01\x02\x03"), "view": "class-plane"})
    assert ex.selection.tolist() == [1, 3, 5]
    assert ex.view == "class-plane"
    assert "_selection" in ex.notice
    ex.set_state({"_selection": memoryview(encode([40], UINT32))})  # out of range
    assert ex.selection.tolist() == [1, 3, 5]
    assert "outside [0, 40)" in ex.notice
    ex.set_state({"iteration": 999})  # read-only from the browser
    assert ex.iteration != 999 and "read-only" in ex.notice
    # inherited traits too: the browser must not replace the widget's code or model
    esm, model_name = ex._esm, ex._model_name
    ex.set_state({"_esm": "export default {}", "_model_name": "X", "view": "pca"})
    assert (ex._esm, ex._model_name, ex.view) == (esm, model_name, "pca")
    assert "read-only" in ex.notice


# --------------------------------------------------------------------------- traits


def test_trait_validation(make_explorer):
    ex = make_explorer()
    wait_for(lambda: ex.param_specs)
    with pytest.raises(traitlets.TraitError, match="color_by"):
        ex.color_by = "predicted"  # the fake run has no membership
    with pytest.raises(traitlets.TraitError, match="view"):
        ex.view = "tsne"
    for bad in (0, 61, -1):
        with pytest.raises(traitlets.TraitError, match="frame_rate"):
            ex.frame_rate = bad
    with pytest.raises(traitlets.TraitError, match="not a live parameter"):
        ex.params = {"beta": 1.0}
    with pytest.raises(traitlets.TraitError, match="alpha must be in"):
        ex.params = {"alpha": -1.0}
    with pytest.raises(traitlets.TraitError, match="alpha must be finite"):
        ex.params = {"alpha": math.inf}  # JSON could not carry it to the browser
    with pytest.raises(traitlets.TraitError, match="alpha must be a real number"):
        ex.params = {"alpha": None}  # alpha has no automatic value
    ex.params = {"lambda_": None}  # allows auto
    assert ex.params == {"alpha": 1.0, "lambda_": None}
    ex.params = {"alpha": 2.0}  # a partial dict keeps the other values
    assert ex.params == {"alpha": 2.0, "lambda_": None}
    specs = {s["name"]: s for s in ex.param_specs}
    assert specs["alpha"] == {"name": "alpha", "label": "α", "low": 0.0, "high": None,
                              "low_open": False, "high_open": True,
                              "min": 0.0, "max": 3.0, "step": 0.05,
                              "description": "Tail heaviness", "allows_auto": False}
    assert specs["lambda_"]["allows_auto"] is True
    wait_for(lambda: ex.run.alpha == 2.0 and ex.run.lambda_ is None)


def test_constructor_checks(bundle):
    X = np.zeros((10, 2))
    with pytest.raises(ValueError, match="labels must be 1-D"):
        Explorer(X, method=FakeMethod(), labels=[0, 1])
    with pytest.raises(ValueError, match="annotations are for 5 points"):
        Explorer(X, method=FakeMethod(), annotations=Annotations(5))
    with pytest.raises(ValueError, match="class_names"):
        Explorer(X, method=FakeMethod(), annotations=Annotations(10, class_names=["a"]),
                 class_names=["b"])
    with pytest.raises(TypeError, match="prepare"):
        Explorer(X, method=object())
    with pytest.raises(ValueError, match="method must be one of"):
        Explorer(X, method="tsne")
    with pytest.raises(ValueError, match="images must have shape"):
        Explorer(X, method=FakeMethod(), images=np.zeros((9, 8, 8)))
    with pytest.raises(ValueError, match="hover_text"):
        Explorer(X, method=FakeMethod(), hover_text=["a"])
    with pytest.raises(ValueError, match="colors"):
        Explorer(X, method=FakeMethod(), colors=np.zeros(3))
    with pytest.raises(ValueError, match="view must be one of"):
        Explorer(X, method=FakeMethod(), view="umap")


def test_missing_bundle_says_how_to_build(monkeypatch, bundle):
    monkeypatch.setattr(explorer_module, "BUNDLE", pathlib.Path("/nonexistent/explorer.js"))
    with pytest.raises(BundleMissingError, match=r"npm --prefix js ci && npm --prefix js run"):
        Explorer(np.zeros((5, 2)), method="precomputed")


def test_labels_images_and_user_colors(make_explorer):
    y = np.array([0, 1, -1, 2] * 10)
    images = np.arange(40 * 4 * 3, dtype=float).reshape(40, 4, 3)
    ex = make_explorer(labels=y, class_names=["a", "b", "c"], images=images,
                       colors=np.linspace(0, 1, 40), hover_text=[f"p{i}" for i in range(40)])
    assert ex.annotations.to_labels().tolist() == y.tolist()
    assert ex.image_shape == [4, 3]
    pixels = decode(ex._images, np.uint8)
    assert pixels.size == images.size and pixels.min() == 0 and pixels.max() == 255
    assert ex.color_by == "user"  # the default when colors are given
    ex.wait(iteration=1)
    wait_for(lambda: len(ex._codes) == 80)
    codes = decode(ex._codes, UINT16)
    assert codes[0] == 0 and codes[-1] == palette.RAMP_STEPS - 1 and np.all(np.diff(codes) >= 0)
    ex.color_by = "label"
    assert [e["name"] for e in ex.legend] == ["a", "b", "c", "unlabelled"]
    assert [e["count"] for e in ex.legend] == [10, 10, 10, 10]
    assert decode(ex._codes, UINT16).tolist() == np.where(y >= 0, y, 3).tolist()


def test_predicted_classes_and_anchors(make_explorer):
    ex = make_explorer(X=np.zeros((30, 2)), method=FakeMethod(classes=3))
    ex.pause()
    ex.wait()
    assert ex.color_options == ["label", "predicted", "confidence"]
    ex.color_by = "predicted"
    codes = decode(ex._codes, UINT16).tolist()
    assert codes == [i % 3 for i in range(30)] + [0, 1, 2]  # anchors take their class colour
    assert [e["count"] for e in ex.legend] == [10, 10, 10]
    anchors = decode(ex._anchors, FLOAT32).reshape(-1, 2)
    points = decode_positions(ex._positions)
    assert anchors.shape == (3, 2)
    # points and anchors share one transform p' = s p + t into the plot
    Y = ex.embedding
    s, t0 = np.polyfit(Y[:, 0], points[:, 0], 1)
    t1 = np.mean(points[:, 1] - s * Y[:, 1])
    assert np.allclose(anchors, s * (10 * Y[:3]) + [t0, t1], atol=1e-4)
    assert np.isclose(np.abs(np.vstack([points, anchors])).max(), EXTENT, atol=1e-6)


def test_positions_are_the_normalized_view_in_16_bits(make_explorer):
    ex = make_explorer(X=np.zeros((30, 2)), method=FakeMethod(d=3), view="pca")
    ex.pause()
    ex.wait()
    assert len(ex._positions) == positions_nbytes(30)
    P = decode_positions(ex._positions)
    assert P.shape == (30, 2) and ex.n_components == 3
    assert np.all(np.abs(P) <= EXTENT + 1e-6)
    Y = ex.embedding
    expected, _ = normalize(*PlaneView("pca")(Y), dtype=np.float64)
    half_step = np.ptp(expected, axis=0) / POSITION_STEPS / 2
    # |P| against |expected|: a fresh PlaneView may choose other signs.
    assert np.all(np.abs(np.abs(P) - np.abs(expected)) <= half_step + 1e-7)


def test_a_view_that_overflows_is_skipped_not_sent(make_explorer):
    from nbembed.widget import frames

    ex = make_explorer(autostart=False)
    wait_for(lambda: ex.run is not None and ex.frames_sent >= 1)
    sent, skipped, positions = ex.frames_sent, ex.skipped_frames, ex._positions
    huge = np.full(ex._snapshot.embedding.shape, 1.5e308)
    huge[0] = 1e308  # finite, but the centre of the box, (low + high) / 2, is not
    ex._snapshot = frames.Snapshot(huge, None, None, 1, None)
    with pytest.warns(RuntimeWarning, match="overflow"):
        ex._publish()
    assert (ex.frames_sent, ex.skipped_frames, ex._positions) == (sent, skipped + 1, positions)


def test_a_frame_is_one_message_with_all_its_traits(make_explorer):
    ex = make_explorer()
    ex.pause()
    ex.wait()
    comm = FakeComm()
    ex.comm = comm
    ex._snapshot.embedding = ex._snapshot.embedding + np.random.default_rng(99).normal(
        size=ex._snapshot.embedding.shape)
    ex._snapshot.iteration += 1
    ex._publish()
    updates = [data for data, _ in comm.sent if data["method"] == "update"]
    assert len(updates) == 1
    assert {"_positions", "iteration"} <= set(updates[0]["state"]) | \
        {p[0] for p in updates[0]["buffer_paths"]}


def _hold_first_encoding(monkeypatch):
    """Make the first frame's encoding wait until released; return (started, release)."""
    from nbembed.widget import frames

    started, release = threading.Event(), threading.Event()
    encode, calls = frames._encode_frame, []

    def held(*args):
        calls.append(1)
        if len(calls) == 1:
            started.set()
            assert release.wait(30), "the encoding was never released"
        return encode(*args)

    monkeypatch.setattr(frames, "_encode_frame", held)
    return started, release


def test_browser_messages_do_not_wait_for_a_frame_being_encoded(make_explorer, monkeypatch):
    ex = make_explorer()
    ex.pause()
    ex.wait()
    sent = ex.frames_sent
    started, release = _hold_first_encoding(monkeypatch)
    publisher = threading.Thread(target=ex._publish)
    publisher.start()
    try:
        assert started.wait(30)
        # What a message from the browser takes, while the frame is being encoded.
        assert ex._sync_lock.acquire(timeout=10)
        ex._sync_lock.release()
    finally:
        release.set()
        publisher.join(30)
    assert ex.frames_sent == sent + 1 and ex.frame_id == ex.frames_sent


def test_a_frame_overtaken_while_it_is_encoded_is_dropped(make_explorer, monkeypatch):
    ex = make_explorer()
    ex.pause()
    ex.wait()
    sent, old = ex.frames_sent, ex._snapshot
    started, release = _hold_first_encoding(monkeypatch)
    publisher = threading.Thread(target=ex._publish)
    publisher.start()
    try:
        assert started.wait(30)
        ex._snapshot = dataclasses.replace(old, embedding=old.embedding * 2.0,
                                           iteration=old.iteration + 7)
        ex._publish()  # begun later, sent first
        assert ex.frames_sent == sent + 1 and ex.iteration == old.iteration + 7
        shown = ex._positions
    finally:
        release.set()
        publisher.join(30)
    # The older frame, finished last, did not overwrite the newer one.
    assert ex.frames_sent == sent + 1 and ex._positions == shown
    assert ex.iteration == old.iteration + 7


class HeldComm(FakeComm):
    """A comm whose first send waits until released, as a slow socket would."""

    def __init__(self):
        super().__init__()
        self.sending, self.release = threading.Event(), threading.Event()

    def send(self, data=None, buffers=None):
        if not self.sending.is_set():
            self.sending.set()
            assert self.release.wait(30), "the send was never released"
        super().send(data, buffers)


def _moved(ex, seed):
    """Give the paused Explorer's snapshot new positions and a later iteration."""
    snap = ex._snapshot
    ex._snapshot = dataclasses.replace(
        snap, embedding=snap.embedding + np.random.default_rng(seed).normal(
            size=snap.embedding.shape), iteration=snap.iteration + 1)


@contextlib.contextmanager
def _first_frame_on_its_way(make_explorer):
    """A paused Explorer whose next frame is being sent (held in the comm) from
    another thread; yields (explorer, comm, frames sent before), and releases the
    send on leaving."""
    ex = make_explorer()
    ex.pause()
    ex.wait()
    comm = ex.comm = HeldComm()
    sent = ex.frames_sent
    _moved(ex, 1)
    publisher = threading.Thread(target=ex._publish)
    publisher.start()
    try:
        assert comm.sending.wait(30)
        yield ex, comm, sent
    finally:
        comm.release.set()
        publisher.join(30)


def test_browser_messages_do_not_wait_for_a_frame_being_sent(make_explorer):
    with _first_frame_on_its_way(make_explorer) as (ex, comm, sent):
        # What a message from the browser takes, while the frame is on its way.
        assert ex._sync_lock.acquire(timeout=10)
        ex._sync_lock.release()
        assert ex.frames_sent == sent  # not counted before it is sent
    assert ex.frames_sent == sent + 1 and len(comm.sent) == 1


def test_frames_reach_the_browser_in_the_order_they_were_made(make_explorer):
    with _first_frame_on_its_way(make_explorer) as (ex, comm, sent):
        _moved(ex, 2)
        second = threading.Thread(target=ex._publish)
        second.start()
        # The second frame's traits are set; it waits for the first to be sent.
        wait_for(lambda: ex._frames_numbered == sent + 2)
        assert ex.frame_id == sent + 2 and ex.frames_sent == sent
    second.join(30)
    frame_ids = [data["state"]["frame_id"] for data, _ in comm.sent]
    assert frame_ids == [sent + 1, sent + 2] and ex.frames_sent == sent + 2


def test_a_failing_send_does_not_stop_later_frames(make_explorer):
    class BrokenComm(FakeComm):
        def send(self, data=None, buffers=None):
            raise OSError("the socket is gone")

    ex = make_explorer()
    ex.pause()
    ex.wait()
    ex.comm = BrokenComm()
    sent = ex.frames_sent
    _moved(ex, 1)
    with pytest.raises(OSError):
        ex._publish()
    ex.comm = FakeComm()
    _moved(ex, 2)
    ex._publish()
    assert ex.frames_sent == sent + 2 and len(ex.comm.sent) == 1


# --------------------------------------------------------------------------- worker


def test_worker_throttles_frames_and_adapts_its_step(make_explorer):
    ex = make_explorer(method=FakeMethod(seconds_per_iteration=1e-3), frame_rate=10)
    ex.wait(iteration=5)
    start, frames = time.monotonic(), ex.frames_sent
    time.sleep(1.0)
    wait_for(lambda: ex.frames_sent - frames >= 2)  # on a busy machine it takes longer
    elapsed, sent = time.monotonic() - start, ex.frames_sent - frames
    assert sent <= 10 * elapsed + 2
    # About 30 ms per call at 1 ms per iteration (less where sleeps last longer).
    wait_for(lambda: ex._worker.k > 5)
    assert ex.status == "running"


def test_frames_keep_the_allowed_rate_on_average_between_step_calls(make_explorer,
                                                                    monkeypatch):
    from nbembed.widget import frames

    ex = make_explorer(frame_rate=8, autostart=False)
    clock = [1000.0]
    monkeypatch.setattr(frames.time, "monotonic", lambda: clock[0])
    ex._credit, ex._credit_time = 0.0, clock[0]
    # Step calls every 50 ms against a frame every 125 ms: waiting for a whole
    # interval after each frame would send one every third call (6.7/s); the
    # credit sends 8/s, never two in a row.
    allowed = []
    for _ in range(200):  # 10 s
        clock[0] += 0.05
        allowed.append(ex._frame_allowed(False))
    assert 79 <= sum(allowed) <= 80  # 80 but for rounding
    assert not any(a and b for a, b in zip(allowed, allowed[1:]))
    # After a long pause at most FRAME_CREDIT frames go back to back.
    clock[0] += 60.0
    burst = [ex._frame_allowed(False) for _ in range(5)]
    assert burst == [True] * int(frames.FRAME_CREDIT) + [False] * (5 - int(frames.FRAME_CREDIT))


def test_the_byte_limit_counts_only_what_a_frame_changes(make_explorer, monkeypatch):
    from nbembed.widget import frames

    ex = make_explorer(frame_rate=60, autostart=False)
    wait_for(lambda: ex.run is not None and ex.frames_sent >= 1)
    n = ex._n
    snap = ex._snapshot
    moved = snap.embedding + np.random.default_rng(7).normal(scale=0.1, size=snap.embedding.shape)
    ex._snapshot = frames.Snapshot(moved, snap.anchors, snap.membership, snap.iteration + 1,
                                   snap.cost)
    ex._publish()
    # New positions, 4 bytes a point and 32 of bounds; the same colours are not sent.
    assert ex._frame_bytes == 4 * n + 32
    monkeypatch.setattr(frames, "MAX_STREAM_BYTES_PER_SECOND", (4 * n + 32) * 10.0)
    assert ex._publish_interval() == pytest.approx(0.1)  # 10 such frames a second
    ex.color_by_values("parity", np.arange(n) % 2)
    assert ex._frame_bytes == n * 2  # new colours only
    ex._publish()
    assert ex._frame_bytes == 0
    assert ex._publish_interval() == pytest.approx(1 / 60)


def test_a_forced_frame_does_not_hold_back_the_next_one(make_explorer):
    ex = make_explorer(frame_rate=1, autostart=False)
    wait_for(lambda: ex.run is not None and ex.frames_sent >= 1)
    run = ex.run
    ex._on_step(run, False)
    sent = ex.frames_sent
    ex._on_step(run, False)
    assert ex.frames_sent == sent  # within the one-second interval of the last frame
    # A change sends a frame at once (force) with the iteration it was applied at; the
    # frame after it shows the first iteration under the change and must not wait.
    ex._on_step(run, True)
    run.iteration += 1
    ex._on_step(run, False)
    assert ex.frames_sent == sent + 2
    ex._on_step(run, False)
    assert ex.frames_sent == sent + 2  # the stream is throttled again


def test_the_explorer_asks_its_runs_for_even_steps(make_explorer, monkeypatch):
    monkeypatch.setattr(FakeRun, "prefer_even_steps",
                        lambda self: setattr(self, "even_steps", True), raising=False)
    ex = make_explorer()
    ex.wait(iteration=2)
    first = ex.run
    assert first.even_steps
    ex.restart()
    wait_for(lambda: ex.run is not None and ex.run is not first and ex.run.iteration > 0)
    assert ex.run.even_steps


def test_pause_resume_stop(make_explorer):
    ex = make_explorer()
    ex.wait(iteration=10)
    ex.pause()
    wait_for(lambda: ex.status == "paused")
    frozen = ex.run.iteration
    time.sleep(0.2)
    assert ex.run.iteration == frozen
    ex.resume()
    wait_for(lambda: ex.run.iteration > frozen)
    assert ex.stop(timeout=10)
    assert not ex._worker.alive
    stopped = ex.run.iteration
    time.sleep(0.2)
    assert ex.run.iteration == stopped
    ex.resume()  # starts the thread again with the same run
    wait_for(lambda: ex.run.iteration > stopped)
    first = ex.run
    ex.restart()
    wait_for(lambda: ex.run is not None and ex.run is not first and ex.run.iteration > 0)


class SlowToPrepare(FakeMethod):
    """Preparing takes a while, as computing neighbourhoods or compiling does."""

    def __init__(self, gate, **run_kwargs):
        super().__init__(**run_kwargs)
        self.gate = gate

    def prepare(self, X, y=None, annotations=None, init=None):
        self.gate.wait(30)
        self.prepared_with_init = init
        return super().prepare(X, y, annotations, init)


def test_status_tells_the_truth_through_the_browsers_buttons(make_explorer):
    gate = threading.Event()
    ex = make_explorer(method=SlowToPrepare(gate))
    wait_for(lambda: ex.status == "preparing")
    assert ex.run is None
    gate.set()
    wait_for(lambda: ex.status == "running" and ex.iteration > 0)
    ex._handle_msg(custom_msg({"type": "pause"}))
    wait_for(lambda: ex.status == "paused")
    ex._handle_msg(custom_msg({"type": "resume"}))
    wait_for(lambda: ex.status == "running")
    # stop() ends the thread; the Resume button starts it again and says so
    assert ex.stop(timeout=10) and ex.status == "paused"
    stopped = ex.run.iteration
    ex._handle_msg(custom_msg({"type": "resume"}))
    wait_for(lambda: ex.run.iteration > stopped + 5)
    assert ex.status == "running"
    ex._handle_msg(custom_msg({"type": "pause"}))
    wait_for(lambda: ex.status == "paused")


def test_a_large_first_preparation_shows_the_principal_component_map(make_explorer,
                                                                     monkeypatch):
    """While the first run of many points is prepared, the page gets the points on
    their leading principal components (the default start) as iteration 0."""
    from nbembed.methods._base import initial_embedding
    from nbembed.widget import preview

    monkeypatch.setattr(preview, "PREVIEW_MIN_N", 50)
    X = np.random.default_rng(0).normal(size=(60, 5)) * [5.0, 3.0, 1.0, 1.0, 1.0]
    gate = threading.Event()
    method = SlowToPrepare(gate)
    method.get_params = lambda: {"n_components": 2, "random_state": 0, "init": "pca"}
    ex = make_explorer(X=X, method=method)
    wait_for(lambda: ex.frames_sent >= 1)
    assert ex.status == "preparing" and ex.run is None and ex.iteration == 0
    shown = decode_positions(ex._positions)
    start = initial_embedding(X, "pca", 2, 0)
    for axis in range(2):
        assert abs(np.corrcoef(shown[:, axis], start[:, axis])[0, 1]) > 0.999
    gate.set()
    wait_for(lambda: ex.run is not None and ex.iteration > 0)
    assert ex.embedding.shape == (60, 2)
    assert method.prepared_with_init is not None  # the run starts from what was shown
    np.testing.assert_array_equal(method.prepared_with_init, start)


def test_no_preview_for_dissimilarities_or_affinities():
    from nbembed import HSSNE
    from nbembed.widget.preview import preview_positions

    X = np.random.default_rng(1).normal(size=(30, 4))
    assert preview_positions(X, HSSNE(metric="precomputed")) is None
    assert preview_positions(X, HSSNE(affinity="precomputed")) is None
    assert preview_positions(X[:2], HSSNE()) is None  # refused: the run will say why
    assert preview_positions(X, HSSNE(init="random")) is None  # the run starts elsewhere
    assert preview_positions(X, HSSNE(n_components=3)).shape == (30, 3)
    # the start of the run, which the preview then is
    method = HSSNE(perplexity=5, random_state=3)
    np.testing.assert_array_equal(preview_positions(X, method), method.prepare(X).embedding)


def test_a_restored_explorer_shows_what_its_annotations_hold(make_explorer):
    ann = Annotations.from_labels(np.r_[np.zeros(30, int), -np.ones(10, int)])
    ann.add_must_link(range(30, 36))
    ex = make_explorer(annotations=Annotations.from_json(ann.to_json()))
    assert ex.annotation_summary == "30 labelled · 1 must-link group"
    assert ex.annotation_count == 0  # nothing to undo yet
    ex.apply("must_link", [36, 37])
    wait_for(lambda: ex.annotation_count == 1)
    assert ex.annotation_summary == "30 labelled · 2 must-link groups"


def test_finished_run_idles_and_a_slider_resumes_it(make_explorer):
    ex = make_explorer(method=FakeMethod(n_iter=40), extra_iterations=25)
    wait_for(lambda: ex.status == "done" and ex.iteration == 40)
    assert ex.run.iteration == 40
    time.sleep(0.1)
    assert ex.run.iteration == 40  # idle
    ex.params = {"alpha": 0.5}
    wait_for(lambda: ex.run.iteration == 65 and ex.status == "done")
    assert ex.run.alpha == 0.5
    ex.resume()
    wait_for(lambda: ex.run.iteration == 90 and ex.status == "done")


def test_non_finite_snapshots_are_never_painted(make_explorer):
    ex = make_explorer(method=FakeMethod(nan_from=30))
    wait_for(lambda: ex.skipped_frames > 3)
    P = decode_positions(ex._positions)
    assert P.size and np.all(np.isfinite(P))
    assert np.all(np.isfinite(ex.embedding))
    assert ex.iteration < 30


def test_worker_errors_show_and_restart_recovers(make_explorer):
    ex = make_explorer(method=FakeMethod(fail_at=20))
    wait_for(lambda: ex.status == "error")
    assert ex.error == "FloatingPointError: the fake run diverged"
    ex.restart()
    wait_for(lambda: ex.status == "running" and ex.run is not None and ex.run.iteration > 25)
    assert ex.error == ""


def test_a_failing_prepare_shows_in_the_widget(make_explorer):
    class Broken:
        def prepare(self, X, y=None, annotations=None, init=None):
            raise ValueError("alpha must be in [0, inf), got -1.0.")

    ex = make_explorer(method=Broken())
    wait_for(lambda: ex.status == "error")
    assert ex.error == "ValueError: alpha must be in [0, inf), got -1.0."
    assert ex.run is None and ex.embedding is None
    with pytest.raises(RuntimeError, match="alpha must be in"):
        ex.wait(timeout=5)


def test_annotations_reach_the_run_between_steps(make_explorer):
    ex = make_explorer(labels=np.r_[np.zeros(5, int), -np.ones(35, int)])
    ex.wait(iteration=3)
    ex.apply("must_link", indices=[1, 2, 3])
    ex.selection = [10, 11]
    ex.apply("soft_label", new_class="new", confidence=0.5)
    wait_for(lambda: ex.run.received and ex.run.received[-1] == ex.annotations.to_json())
    assert ex.annotations.class_names == ["class 0", "new"]
    assert ex.annotation_count == 2
    assert ex.undo().startswith("set_labels")  # the new class goes with its labels
    assert ex.annotations.class_names == ["class 0"] and ex.annotation_count == 1
    wait_for(lambda: ex.run.received[-1] == ex.annotations.to_json())
    ex.apply("cannot_link", indices=[20, 21])
    assert ex.pending_a == 2 and "selection A" in ex.notice
    ex.apply("cannot_link", indices=[22])
    assert ex.pending_a == 0
    assert "does not use cannot-links" in ex.notice
    assert len(ex.annotations.cannot_link_pairs()) == 2
    with pytest.raises(ValueError, match="no class 7"):
        ex.apply("soft_label", indices=[1], label=7)


def test_restore_annotations_from_json(make_explorer):
    saved = Annotations(40, class_names=["x", "y"])
    saved.set_labels([0, 1], 1, confidence=0.75)
    saved.add_must_link([5, 6, 7])
    restored = Annotations.from_json(saved.to_json())
    method = FakeMethod()
    ex = make_explorer(method=method, annotations=restored)
    assert ex.annotations is restored
    wait_for(lambda: method.prepared)
    assert method.prepared[0] == saved.to_json()


# --------------------------------------------------------------------------- the message storm


def test_message_storm_loses_no_annotation(make_explorer, caplog):
    n = 60
    rng = np.random.default_rng(7)
    ex = make_explorer(X=np.zeros((n, 2)), labels=np.r_[[0, 1], -np.ones(n - 2, int)])
    ex.wait(iteration=2)
    truth = [ex.annotations.to_json()]
    selection = np.empty(0, dtype=np.int64)
    pending = None
    names = 0
    accepted = []

    def act(operation):
        ann = Annotations.from_json(truth[-1])
        try:
            operation(ann)
        except (ValueError, TypeError):
            return False
        if ann.to_json() != truth[-1]:  # what changes nothing is no step to undo
            truth.append(ann.to_json())
            accepted.append(1)
        return True

    def pick(options):
        return options[rng.integers(len(options))]

    def label_existing(k):
        def operation(a):
            if not k < a.n_classes:
                raise ValueError(f"no class {k}")
            a.set_labels(use, k, conf)
        return operation

    def random_indices():
        k = rng.integers(0, 6)
        return rng.integers(0, n, k)

    caplog.set_level(logging.WARNING)
    for step in range(1000):
        kind = pick(["params", "select", "apply", "apply", "undo", "junk", "control"])
        if kind == "params":
            value = pick([float(rng.uniform(0, 3)), -1.0, "x", None])
            name = pick(["alpha", "lambda_", "beta"])
            ex._handle_msg(update_msg({"params": {**ex.params, name: value}}))
        elif kind == "select":
            if rng.random() < 0.2:
                raw = bytes(rng.integers(0, 255, pick([3, 5, 7])).astype(np.uint8))
            else:
                raw = encode(rng.integers(0, n + 3, rng.integers(0, 8)), UINT32)
            ex._handle_msg(update_msg({"_selection": raw}))
            idx = np.frombuffer(raw, dtype=UINT32) if len(raw) % 4 == 0 else None
            if idx is not None and (not idx.size or idx.max() < n):
                selection = np.unique(idx.astype(np.int64))
        elif kind == "apply":
            mode = pick(["soft_label", "must_link", "cannot_link", "bogus"])
            content = {"type": "apply", "mode": mode}
            buffers = []
            use = selection
            if rng.random() < 0.5:
                if rng.random() < 0.15:
                    buffers = [b"\x00\x01\x02"]
                    use = None
                else:
                    idx = random_indices()
                    buffers = [encode(idx, UINT32)]
                    use = idx
            conf = pick([float(rng.uniform(0.01, 1.0)), 1.0, 0.0, 1.5])
            label = pick([0, 1, 2, 5, "__new__", True, "abc"])
            content["confidence"] = conf
            content["label"] = label
            if label == "__new__":
                names += 1
                content["new_class"] = pick([f"c{names}", "class 0", ""])
            ex._handle_msg(custom_msg(content, buffers))
            if mode == "bogus" or use is None:
                continue
            if mode == "soft_label":
                if not 0 < conf <= 1 or label is True or label == "abc":
                    continue
                if label == "__new__":
                    if not content["new_class"]:
                        continue
                    act(lambda a: a.set_labels(use, a.add_class(content["new_class"]), conf))
                else:
                    act(label_existing(label))
            elif mode == "must_link":
                act(lambda a: a.add_must_link(use))
            elif pending is None:
                if len(use):
                    pending = np.unique(use)
            elif act(lambda a: a.add_cannot_link(pending, use)):
                pending = None
        elif kind == "undo":
            ex._handle_msg(custom_msg({"type": "undo"}))
            if len(truth) > 1:
                truth.pop()
        elif kind == "control":
            action = pick(["pause", "resume", "cancel_pending"])
            ex._handle_msg(custom_msg({"type": action}))
            if action == "cancel_pending":
                pending = None
        else:
            junk = rng.integers(4)
            if junk == 0:
                ex._handle_msg(custom_msg(["not", "an", "object"]))
            elif junk == 1:
                ex._handle_msg(custom_msg({"type": "explode"}))
            elif junk == 2:
                ex._handle_msg(update_msg({"color_by": "nothing"}))
            else:
                ex._handle_msg(update_msg({"cost": "high"}))
        assert ex.annotations.to_json() == truth[-1], f"message {step} ({kind})"
        assert ex.selection.tolist() == selection.tolist()
        assert ex.pending_a == (0 if pending is None else len(pending))

    assert len(accepted) > 50  # the storm did change the annotations, often
    assert ex._worker.alive and ex.status in ("running", "paused")
    assert not [r for r in caplog.records if "Exception" in r.getMessage()]
    ex.resume()
    wait_for(lambda: ex.run.received and ex.run.received[-1] == truth[-1])
    assert ex.annotation_count == len(truth) - 1


def test_real_hssne_run_gets_slider_and_lasso_changes(bundle):
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    ex = Explorer(X, method=HSSNE(alpha=1.0, max_iter=80, early_exaggeration_iter=20,
                                  random_state=0), extra_iterations=30)
    try:
        ex.wait(iteration=5, timeout=120)
        ex._handle_msg(update_msg({"params": {"alpha": 0.5, "rho": 0.8}}))
        ex._handle_msg(update_msg({"_selection": encode(np.flatnonzero(y == 0)[:20], UINT32)}))
        ex._handle_msg(custom_msg({"type": "apply", "mode": "must_link"}))
        wait_for(lambda: ex.run.alpha == 0.5 and ex.run.rho == 0.8, timeout=60)
        assert len(ex.annotations.must_link_groups()) == 1
        ex.wait(timeout=120)
        assert ex.status == "done" and ex.error == ""
        Y = ex.embedding
        assert Y.shape == (150, 2) and np.all(np.isfinite(Y))
        assert ex.iteration >= 80
    finally:
        assert ex.stop(timeout=60)


@pytest.mark.parametrize("options", [{}, dict(affinity="knn", repulsion="fft")])
def test_a_large_hssne_run_takes_a_lasso_worked_out_aside(bundle, monkeypatch, options):
    """Runs from ANNOTATIONS_ASIDE_MIN_N points link a lasso in the annotations
    thread (with a sparse P, mixing P~ and its spatial-order copy there too); the
    links and P~ the run ends with are those of the annotations."""
    from sklearn.datasets import load_iris

    from nbembed.affinity.constraints import (MUST_LINK_NEIGHBORS, mix_must_links,
                                              must_links_from, strongest_neighbors)
    from nbembed.objectives import hssne as hssne_module

    monkeypatch.setattr(hssne_module, "ANNOTATIONS_ASIDE_MIN_N", 100)
    monkeypatch.setattr(hssne_module, "LOCAL_ORDER_MIN_N", 100)
    taken_up = []
    take_up = hssne_module.HSSNEObjective._take_up
    monkeypatch.setattr(hssne_module.HSSNEObjective, "_take_up",
                        lambda self, mixed: taken_up.append(take_up(self, mixed)))
    X, y = load_iris(return_X_y=True)
    ex = Explorer(X, method=HSSNE(alpha=1.0, max_iter=60, early_exaggeration_iter=20,
                                  random_state=0, **options), extra_iterations=30)
    try:
        ex.wait(iteration=5, timeout=120)
        assert ex.run.annotations_aside
        for group in (np.flatnonzero(y == 0)[:20], np.flatnonzero(y == 2)[5:30]):
            ex._handle_msg(update_msg({"_selection": encode(group, UINT32)}))
            ex._handle_msg(custom_msg({"type": "apply", "mode": "must_link"}))
        ex.wait(timeout=120)
        assert ex.status == "done" and ex.error == ""
        objective = ex.run.objective
        neighbors = strongest_neighbors(objective.P, MUST_LINK_NEIGHBORS)
        expected = must_links_from(None, ex.annotations, len(X), neighbors)
        links = objective.links
        assert (links != expected).nnz == 0 and links.nnz == expected.nnz > 0
        want = mix_must_links(objective.P, expected, objective.rho)
        got = objective.P_mixed
        assert abs(got - want).max() == 0 and (got.nnz == want.nnz if options else True)
        assert bool(taken_up) == bool(options)  # mixed aside with a sparse P only
    finally:
        assert ex.stop(timeout=60)


def test_slider_specs_carry_open_and_closed_ends():
    from nbembed.methods.mbed_run import LAMBDA

    spec = controls.param_spec(LAMBDA)
    assert (spec["low"], spec["low_open"], spec["high"], spec["high_open"]) == \
        (0.0, True, None, True)
    assert spec["min"] > 0  # a slider never offers the excluded end
    at_zero = LiveParameter("lambda_", 0.0, math.inf, (0.0, 2.0), 0.1, "", low_open=True)
    assert controls.param_spec(at_zero)["min"] == pytest.approx(0.1)
    assert LAMBDA.interval == "(0, inf)" and ALPHA.interval == "[0, inf)"
    with pytest.raises(ValueError, match=r"lambda_ must be in \(0, inf\), got 0.0"):
        LAMBDA.validate(0.0)
    assert LAMBDA.validate(None) is None


OPEN_LAMBDA = LiveParameter("lambda_", 0.0, 1.0, (0.05, 1.0), 0.05, "Mixing", label="λ",
                            allows_auto=True, low_open=True)


class OpenLambdaRun(FakeRun):
    live_parameters = {"alpha": ALPHA, "lambda_": OPEN_LAMBDA}


class OpenLambdaMethod(FakeMethod):
    """Its prepare waits for ``release``, so the browser can talk to a widget with no run."""

    live_parameters = OpenLambdaRun.live_parameters

    def __init__(self, **run_kwargs):
        super().__init__(**run_kwargs)
        self.release = threading.Event()

    def prepare(self, X, y=None, annotations=None, init=None):
        assert self.release.wait(30)
        self.prepared.append(annotations.to_json())
        return OpenLambdaRun(len(X), **self.run_kwargs)


class UndeclaredMethod(OpenLambdaMethod):
    live_parameters = None  # declares nothing; its run would


@pytest.mark.parametrize("started", [False, True], ids=["before the run", "with the run"])
def test_browser_slider_values_the_run_would_refuse_never_reach_it(make_explorer, started):
    method = OpenLambdaMethod()
    ex = make_explorer(method=method)
    if started:
        method.release.set()
        wait_for(lambda: ex.run is not None and ex.param_specs)
        wait_for(lambda: ex.params == {"alpha": 1.0, "lambda_": 0.5})
    else:
        assert ex.run is None and ex._adopted is None
    before = dict(ex.params)
    for bad in ({"lambda_": 0.0}, {"lambda_": -0.5}, {"alpha": math.nan}, {"alpha": math.inf},
                {"beta": 1.0}, {"alpha": "fast"}, {"alpha": None}):
        ex.notice = ""
        ex._handle_msg(update_msg({"params": {**ex.params, **bad}}))
        assert ex.params == before, bad
        assert "Ignored an update of 'params'" in ex.notice, bad
    ex._handle_msg(update_msg({"params": {**ex.params, "lambda_": 0.25}}))
    assert ex.params["lambda_"] == 0.25
    method.release.set()
    wait_for(lambda: ex.run is not None and ex.run.lambda_ == 0.25)
    rejected = [c for c in ex.run.param_calls if c.get("lambda_") in (0.0, -0.5)
                or "beta" in c or c.get("alpha") != c.get("alpha")]
    assert not rejected


def test_a_method_without_declared_live_parameters_refuses_values_before_its_run(make_explorer):
    method = UndeclaredMethod()
    ex = make_explorer(method=method)
    ex._handle_msg(update_msg({"params": {"alpha": 2.0}}))
    assert ex.params == {} and "declares no live parameters" in ex.notice
    method.release.set()
    wait_for(lambda: ex.param_specs)
    ex._handle_msg(update_msg({"params": {"alpha": 2.0}}))  # its run declares alpha
    assert ex.params["alpha"] == 2.0


def test_real_mbed_lambda_zero_is_refused_in_the_widget(bundle):
    from nbembed import Mbed

    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-3, 1, (20, 3)), rng.normal(3, 1, (20, 3))])
    ex = Explorer(X, method=Mbed(n_anneal=3, n_iter_init=2, max_iter=30, random_state=0),
                  autostart=False)
    try:
        # Refused by the estimator's declaration or, once prepared, by the run.
        ex._handle_msg(update_msg({"params": {"lambda_": 0.0}}))
        assert ex.params.get("lambda_") != 0.0 and "lambda_ must be in (0, inf)" in ex.notice
        ex._handle_msg(update_msg({"params": {"lambda_": 1.5}}))
        assert ex.params == {"lambda_": 1.5}
    finally:
        assert ex.stop(timeout=60)


def test_the_must_link_weight_is_marked_idle_until_there_are_must_links(make_explorer):
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-3, 1, (30, 3)), rng.normal(3, 1, (30, 3))])
    ex = make_explorer(X, method=HSSNE(perplexity=5, random_state=0))
    wait_for(lambda: "rho" in ex.idle_params, timeout=120)
    assert "no must-links" in ex.idle_params["rho"]
    ex.annotations.add_must_link([0, 1, 2])
    ex.update_annotations()
    wait_for(lambda: ex.idle_params == {}, timeout=120)
    ex.annotations.undo()
    ex.update_annotations()
    wait_for(lambda: "rho" in ex.idle_params, timeout=120)


def test_real_mbed_automatic_lambda_is_shown_and_manual_continues_from_it(bundle):
    """The slider of an automatic lambda shows the annealed value, and switching
    to manual (the browser sends that value) holds lambda where it was."""
    from nbembed import Mbed

    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-3, 1, (20, 3)), rng.normal(3, 1, (20, 3))])
    ex = Explorer(X, method=Mbed(n_anneal=5, n_iter_init=5, max_iter=400, random_state=0))
    try:
        wait_for(lambda: ex.params == {"lambda_": None}
                 and ex.param_values.get("lambda_") is not None)
        assert ex.stop(timeout=60)
        annealed = ex.run.current_lambda
        assert ex.param_values == {"lambda_": annealed}
        ex._handle_msg(update_msg({"params": {"lambda_": ex.param_values["lambda_"]}}))
        ex.resume()
        wait_for(lambda: ex.run.lambda_ == annealed)
        assert ex.run.current_lambda == annealed
    finally:
        assert ex.stop(timeout=60)


def test_real_mbed_refuses_a_class_beyond_n_classes_and_keeps_running(bundle):
    from nbembed import Mbed

    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-3, 1, (20, 3)), rng.normal(3, 1, (20, 3))])
    ex = Explorer(X, method=Mbed(n_classes=2, n_anneal=3, n_iter_init=2, max_iter=30,
                                 random_state=0))
    try:
        for name, points in (("left", [0, 1]), ("right", [20, 21])):
            ex.selection = points
            ex._handle_msg(custom_msg({"type": "apply", "mode": "soft_label",
                                       "label": "__new__", "new_class": name}))
        assert ex.annotations.class_names == ["left", "right"]
        ex.selection = [5, 6]
        ex._handle_msg(custom_msg({"type": "apply", "mode": "soft_label",
                                   "label": "__new__", "new_class": "third"}))
        assert "set up for 2 classes" in ex.notice and "n_classes=3" in ex.notice
        assert ex.annotations.class_names == ["left", "right"]
        ex.wait(timeout=60)
        assert ex.status == "done" and not ex.error
        ex.restart()
        ex.wait(timeout=60)
        assert ex.status == "done" and not ex.error
    finally:
        assert ex.stop(timeout=60)


def test_real_mbed_counting_its_classes_starts_again_for_a_new_class(bundle):
    from nbembed import Mbed

    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-3, 1, (20, 3)), rng.normal(3, 1, (20, 3)),
                   rng.normal(0, 1, (20, 3)) + [0, 8, 0]])
    ex = Explorer(X, method=Mbed(n_anneal=3, n_iter_init=2, max_iter=30, random_state=0))
    try:
        for name, points in (("left", [0, 1]), ("right", [20, 21])):
            ex.selection = points
            ex._handle_msg(custom_msg({"type": "apply", "mode": "soft_label",
                                       "label": "__new__", "new_class": name}))
        ex.wait(timeout=60)
        assert ex.run.max_classes == 2
        ex.selection = [40, 41]
        ex._handle_msg(custom_msg({"type": "apply", "mode": "soft_label",
                                   "label": "__new__", "new_class": "third"}))
        assert ex.annotations.class_names == ["left", "right", "third"]
        assert "3 classes now" in ex.notice and "starts again" in ex.notice
        ex.wait(timeout=60)
        assert ex.status == "done" and not ex.error
        assert ex.run.max_classes == 3
        assert ex.undo() is not None and ex.annotations.n_classes == 2
        ex.wait(timeout=60)
        assert ex.status == "done" and not ex.error
    finally:
        assert ex.stop(timeout=60)


class HeldScheduleRun(FakeRun):
    """Counts its schedule apart from its iterations, as Mbed does while lambda is held."""

    def __init__(self, n, **kwargs):
        super().__init__(n, **kwargs)
        self.held = 0

    @property
    def remaining(self):
        return max(0, self.n_iter - (self.iteration - self.held))

    @property
    def done(self):
        return self.remaining == 0


class TenAtATime:
    """A step sizer that asks for 10 iterations a call whatever the calls took, so that
    a test of what caps ``k`` does not depend on how fast the machine sleeps."""

    k = 10
    step_seconds = 0.01

    def update(self, k, elapsed):
        return self.k

    def reset(self):
        pass


def test_worker_sizes_steps_by_what_the_run_says_remains():
    from nbembed.widget.worker import RunWorker

    run = HeldScheduleRun(10, n_iter=200, seconds_per_iteration=1e-4)
    run.iteration = run.held = 150  # 150 iterations under a held parameter, none scheduled
    done = threading.Event()
    worker = RunWorker(lambda: run, on_step=lambda r, force: None,
                       on_status=lambda status, error: status == "done" and done.set(),
                       on_warning=lambda message: None)
    worker._sizer = TenAtATime()
    worker.start()
    try:
        assert done.wait(30)
    finally:
        assert worker.stop(timeout=10)
    assert run.iteration - run.held == 200 and run.remaining == 0
    # Capped by the run's own count, not by n_iter - iteration (negative here, which
    # would have meant one iteration a call).
    assert [asked for asked, _ in run.step_calls] == [10] * 20


def test_mbed_run_counts_its_schedule_apart_from_held_iterations():
    from nbembed import Mbed

    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-3, 1, (15, 3)), rng.normal(3, 1, (15, 3))])
    run = Mbed(n_anneal=3, n_iter_init=2, max_iter=12, random_state=0).prepare(X)
    run.step(4)
    assert run.remaining == 8
    run.set_params(lambda_=1.0)
    run.step(20)
    assert run.iteration == 24 and run.remaining == 8 and not run.done
    run.set_params(lambda_=None)
    run.run()
    assert run.done and run.remaining == 0 and run.iteration == 32


# --------------------------------------------------------------------------- pieces


def test_messages_parse():
    assert messages.parse({"type": "undo"}) == ("undo", {})
    method, kwargs = messages.parse(
        {"type": "apply", "mode": "soft_label", "label": 2, "confidence": 0.5},
        [memoryview(encode([3, 1], UINT32))])
    assert method == "apply" and kwargs["label"] == 2 and kwargs["confidence"] == 0.5
    assert kwargs["indices"].tolist() == [3, 1]
    _, kwargs = messages.parse({"type": "apply", "mode": "soft_label", "label": "__new__",
                                "new_class": " x ", "confidence": 1})
    assert kwargs["new_class"] == "x" and "indices" not in kwargs
    for bad in ([], {"type": 1}, {"type": "apply", "mode": "x"},
                {"type": "apply", "mode": "soft_label", "label": True, "confidence": 1},
                {"type": "apply", "mode": "soft_label", "label": 0, "confidence": 0},
                {"type": "apply", "mode": "soft_label", "label": 0, "confidence": float("nan")},
                {"type": "apply", "mode": "soft_label", "label": "__new__", "confidence": 1}):
        with pytest.raises(messages.MessageError):
            messages.parse(bad)
    with pytest.raises(messages.MessageError, match="multiple of 4"):
        messages.parse({"type": "apply", "mode": "must_link"}, [b"12345"])


def test_action_log_groups_and_rolls_back():
    ann = Annotations(10)
    log = ActionLog(ann)

    def new_class_and_labels():
        ann.set_labels([1, 2], ann.add_class("a"))

    log.record(new_class_and_labels)
    ann.add_must_link([3, 4])  # made directly: one action
    assert len(log) == 2
    with pytest.raises(ValueError):
        log.record(lambda: ann.set_labels([], ann.add_class("b")))
    assert ann.class_names == ["a"] and len(log) == 2
    log.undo()
    log.undo()
    assert ann.is_empty and ann.class_names == [] and log.undo() is None
    assert selection_indices(np.array([True, False] * 5), 10).tolist() == [0, 2, 4, 6, 8]
    assert unused_notice("cannot_link", ("labels",), "M").startswith("M does not use")
    assert unused_notice("soft_label", ("labels",), "M", confidence=1.0) == ""


def test_plane_view_is_stable_and_sensible():
    rng = np.random.default_rng(1)
    Y = rng.normal(size=(200, 4)) * [5, 2, 0.5, 0.1]
    view = PlaneView("pca")
    first, _ = view(Y)
    assert np.allclose(np.abs(first[:, 0]), np.abs(Y[:, 0] - Y[:, 0].mean()), atol=0.8)
    # a slightly changed embedding must not flip or swap the axes
    for _ in range(10):
        Y = Y + rng.normal(scale=0.01, size=Y.shape)
        again, _ = view(Y)
        assert np.corrcoef(first[:, 0], again[:, 0])[0, 1] > 0.99
        assert np.corrcoef(first[:, 1], again[:, 1])[0, 1] > 0.99
    # the class plane separates the classes
    labels = np.repeat([0, 1, 2], 50)
    Z = rng.normal(size=(150, 5))
    Z[labels == 1, 3] += 20
    Z[labels == 2, 4] += 20
    P, _ = PlaneView("class-plane")(Z, labels)
    means = np.array([P[labels == c].mean(axis=0) for c in range(3)])
    assert np.min(np.linalg.norm(means[:, None] - means[None], axis=2) + np.eye(3) * 99) > 10
    few = PlaneView("class-plane")
    few(Z, np.zeros(150, int))
    assert "needs at least two" in few.note
    flat, anchors = PlaneView("first-two")(Y[:, :1], anchors=np.ones((2, 1)))
    assert flat.shape == (200, 2) and anchors.shape == (2, 2)
    P, A = normalize(np.array([[0.0, 0], [4, 2]]), np.array([[2.0, 10]]))
    assert np.isclose(np.abs(np.vstack([P, A])).max(), EXTENT) and P.dtype == np.float32


def test_palette_codes():
    c = palette.by_class(np.array([0, -1, 1, 1]), ["a", "b"])
    assert c.codes.tolist() == [0, 2, 1, 1] and len(c.palette) == 3
    assert [e["count"] for e in c.legend] == [1, 2, 1]
    c = palette.with_anchors(c, 3, 2)
    assert c.codes.tolist()[-3:] == [0, 1, 3] and c.palette[-1] == palette.ANCHOR_COLOR
    v = palette.by_values(np.array(["x", "y", "x"]))
    assert v.codes.tolist() == [0, 1, 0] and [e["name"] for e in v.legend] == ["x", "y"]
    assert len(palette.categorical_colors(30)) == len(set(palette.categorical_colors(30))) == 30


def test_threads_do_not_deadlock_under_concurrent_changes(make_explorer):
    ex = make_explorer()
    ex.wait(iteration=2)
    errors = []

    def hammer():
        try:
            for i in range(200):
                ex.params = {"alpha": 0.5 + (i % 10) / 10}
                ex.view = "pca" if i % 2 else "first-two"
        except Exception as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=hammer) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors and not any(t.is_alive() for t in threads)
    wait_for(lambda: ex.run.alpha == ex.params["alpha"])


def test_a_resume_while_the_pause_settles_never_reports_done():
    from nbembed.widget.worker import RunWorker

    run = FakeRun(10, seconds_per_iteration=1e-3)  # never done: n_iter is 10**9
    statuses = []
    armed, entered, release = threading.Event(), threading.Event(), threading.Event()

    def on_step(run, force):
        # Hold the worker where it has decided to idle but not yet said how.
        if force and armed.is_set() and not entered.is_set():
            entered.set()
            release.wait(30)

    worker = RunWorker(lambda: run, on_step=on_step,
                       on_status=lambda status, error: statuses.append(status),
                       on_warning=lambda message: None)
    worker.start()
    try:
        wait_for(lambda: run.iteration > 5)
        armed.set()
        worker.pause()
        assert entered.wait(30)
        worker.resume()
        held_at = run.iteration
        release.set()
        wait_for(lambda: run.iteration > held_at + 2)
    finally:
        release.set()
        assert worker.stop(timeout=10)
    assert "done" not in statuses
    assert "paused" in statuses


def test_a_queued_change_ends_the_step_call_after_the_current_iteration():
    from nbembed.widget.worker import RunWorker

    run = FakeRun(10, seconds_per_iteration=1e-3)
    worker = RunWorker(lambda: run, on_step=lambda run, force: None,
                       on_status=lambda status, error: None, on_warning=lambda message: None)

    def change_once_inside_a_call(run):
        # The first iteration of a call of several, from iteration 200 on.
        if (run.iteration >= 200 and not run.param_calls and not worker.has_pending_params
                and run.iteration == run.call_start + 1 and run.call_size >= 2):
            worker.set_params(alpha=0.5)
    run.on_iteration = change_once_inside_a_call
    worker.start()
    try:
        wait_for(lambda: run.param_calls)
    finally:
        worker.stop()
    assert run.param_calls == [{"alpha": 0.5}]
    # The call in which the change was queued ended after that first iteration.
    asked, taken = next(call for call in run.step_calls if call[1] < call[0])
    assert taken == 1 and asked >= 2  # (stop() may cut the last call too)


def test_step_sizer_amortizes_a_fixed_cost_per_call():
    from nbembed.widget.worker import MAX_STEP_SECONDS, StepSizer

    # A large fixed cost: calls as long as MAX_STEP_SECONDS allows (0.1 s: 7 iterations).
    for per_call, per_iteration, expected in ((0.072, 0.0036, 7), (0.006, 0.0003, 80),
                                              (0.0, 0.001, 30)):
        sizer = StepSizer(step_seconds=0.03)
        sizer.update(1, 20.0)  # the first call compiles: ignored
        for _ in range(30):
            k = sizer.k
            sizer.update(k, per_call + per_iteration * k)
        assert abs(sizer.k - expected) <= 0.1 * expected, (per_call, sizer.k)
        assert per_call + per_iteration * sizer.k <= MAX_STEP_SECONDS + 1e-9


def test_step_sizer_keeps_one_iteration_a_call_when_one_is_already_too_long():
    from nbembed.widget.worker import MAX_STEP_SECONDS, StepSizer

    # Every iteration the run completes should reach the page, so a call never
    # takes two when one already lasts longer than any call may.
    sizer = StepSizer(step_seconds=0.03)
    sizer.update(1, 20.0)  # the first call compiles: ignored
    for _ in range(50):
        assert sizer.k == 1
        sizer.update(1, 3 * MAX_STEP_SECONDS)
    assert sizer.k == 1
