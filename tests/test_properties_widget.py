"""Property-based tests: no sequence of messages from the browser, however
malformed, stops the Explorer's run or loses an annotation."""

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
pytest.importorskip("anywidget")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from _properties import BAD_VALUES  # noqa: E402
from nbembed import Annotations  # noqa: E402
from nbembed.widget.explorer import Explorer  # noqa: E402
from nbembed.widget.traits import UINT32, encode, encode_selection  # noqa: E402
from test_widget import FakeMethod, bundle, custom_msg, update_msg  # noqa: E402, F401

N = 30

JUNK = st.one_of(BAD_VALUES, st.text(max_size=4), st.integers(-5, N + 5),
                 st.floats(allow_nan=True, allow_infinity=True),
                 st.lists(st.integers(-2, 3), max_size=3), st.dictionaries(
                     st.text(max_size=3), st.integers(), max_size=2))
SELECTION_BYTES = st.one_of(
    st.lists(st.integers(0, N + 3), max_size=8).map(
        lambda idx: bytes(encode(np.array(idx, dtype=np.int64), UINT32))),
    # bitmasks, for this map's N points or another number, and cut or padded ones
    st.tuples(st.sets(st.integers(0, N - 1)), st.sampled_from([N, N - 1, N + 9])).map(
        lambda s: encode_selection(sorted(i for i in s[0] if i < s[1]), s[1])),
    st.binary(max_size=9).map(lambda tail: b"\xff\xff\xff\xff" + tail),
    st.binary(max_size=9))
APPLY = st.fixed_dictionaries(
    {"type": st.just("apply"),
     "mode": st.one_of(st.sampled_from(["soft_label", "must_link", "cannot_link"]), JUNK),
     "label": st.one_of(st.integers(-1, 4), st.just("__new__"), JUNK),
     "confidence": st.one_of(st.floats(0, 1.5), JUNK)},
    optional={"new_class": st.one_of(st.text(max_size=3), JUNK)})
CUSTOM = st.one_of(
    st.builds(lambda t: {"type": t}, st.sampled_from(
        ["pause", "resume", "undo", "cancel_pending", "explode", "", "apply"])),
    APPLY, JUNK)
MESSAGES = st.one_of(
    st.tuples(st.just("custom"), CUSTOM, st.lists(SELECTION_BYTES, max_size=2)),
    st.tuples(st.just("update"), st.one_of(
        st.fixed_dictionaries({"params": st.dictionaries(
            st.sampled_from(["alpha", "lambda_", "beta", ""]), JUNK, max_size=2)}),
        st.fixed_dictionaries({"_selection": SELECTION_BYTES}),
        st.dictionaries(st.sampled_from(
            ["color_by", "view", "frame_rate", "cost", "_esm", "status", "annotation_json"]),
            JUNK, max_size=2)), st.just([])),
    st.tuples(st.just("raw"), JUNK, st.just([])),
)


@pytest.fixture(scope="module")
def explorer(bundle):  # noqa: F811 - the fixture of test_widget
    labels = np.r_[[0, 1], -np.ones(N - 2, int)]
    ex = Explorer(np.zeros((N, 2)), method=FakeMethod(), labels=labels)
    ex.wait(iteration=1)
    yield ex
    ex.stop(timeout=10)


def _send(ex, kind, content, buffers):
    if kind == "custom":
        ex._handle_msg(custom_msg(content, buffers))
    elif kind == "update":
        ex._handle_msg(update_msg(content))
    else:
        ex._handle_msg({"content": content, "buffers": []})


@settings(suppress_health_check=list(HealthCheck))
@given(messages=st.lists(MESSAGES, max_size=15))
def test_no_message_stops_the_run_or_loses_an_annotation(explorer, messages):
    ex = explorer
    for kind, content, buffers in messages:
        before = ex.annotations.to_json()
        steps = len(ex.annotations)
        undo = kind == "custom" and isinstance(content, dict) and content.get("type") == "undo"
        _send(ex, kind, content, buffers)
        after = ex.annotations
        if undo:
            assert len(after) == max(steps - 1, 0)
            continue
        if after.to_json() != before:
            # A change is one step, and undo gives back what was there.
            assert len(after) == steps + 1
            probe = after.copy()
            probe.undo()
            assert probe.to_json() == before
        else:
            assert len(after) == steps
        assert Annotations.from_json(after.to_json()).to_json() == after.to_json()
        assert ex._worker.alive
        assert ex.status in ("running", "paused", "idle", "preparing")
    ex.resume()
    assert ex._worker.alive
