"""Property-based tests: Annotations given bad or edge arguments refuse clearly and
change nothing; what they accept they keep, and undo gives back."""

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from _properties import BAD_VALUES, assert_clear_refusal  # noqa: E402
from nbembed import Annotations  # noqa: E402

N = 12

#: Selections of points, good and bad.
INDICES = st.one_of(
    st.lists(st.integers(-3, N + 3), max_size=6),
    st.lists(st.integers(0, N - 1), min_size=1, max_size=6),
    st.sampled_from([np.ones(N, bool), np.zeros(N, bool), np.ones(N - 1, bool), range(3),
                     {1, 2}, 3, -1, 2.5, np.nan, [0.5], [[1, 2]], "0", None, [10**30],
                     np.array([1, 2], dtype=np.uint8), [True, False]]),
    BAD_VALUES)
LABELS = st.one_of(st.integers(-2, 5), st.sampled_from([10**12, 2**63]), BAD_VALUES)
CONFIDENCES = st.one_of(st.floats(allow_nan=True, allow_infinity=True), BAD_VALUES)
PROBABILITIES = st.one_of(
    st.lists(st.one_of(st.floats(-1, 2), st.just(np.nan)), min_size=0, max_size=5),
    st.sampled_from([[0.5, 0.5], [1.0, 0.0, 0.0], [[0.2, 0.8]], [[0.5, 0.5], [0.5, 0.5]],
                     np.ones((2, 2, 2)), [np.inf, 0.0], [1e300, 1e300]]),
    BAD_VALUES)

OPERATIONS = st.one_of(
    st.tuples(st.just("set_labels"), INDICES, LABELS, CONFIDENCES),
    st.tuples(st.just("set_soft_labels"), INDICES, PROBABILITIES, CONFIDENCES),
    st.tuples(st.just("remove_labels"), INDICES),
    st.tuples(st.just("add_class"), st.one_of(st.text(max_size=3), BAD_VALUES)),
    st.tuples(st.just("add_must_link"), INDICES),
    st.tuples(st.just("add_cannot_link"), INDICES, INDICES),
    st.tuples(st.just("add_must_link_pairs"), st.one_of(
        st.lists(st.tuples(st.integers(-1, N), st.integers(-1, N)), max_size=3), BAD_VALUES)),
    st.tuples(st.just("add_cannot_link_pairs"), st.one_of(
        st.lists(st.tuples(st.integers(-1, N), st.integers(-1, N)), max_size=3), BAD_VALUES)),
    st.tuples(st.just("undo")),
    st.tuples(st.just("clear")),
)


def _apply(ann, operation):
    name, *args = operation
    return getattr(ann, name)(*args)


@given(operations=st.lists(OPERATIONS, max_size=12),
       fixed=st.one_of(st.none(), st.integers(1, 4)))
def test_operations_refuse_clearly_and_change_nothing_when_they_refuse(operations, fixed):
    ann = Annotations(N, n_classes=fixed)
    for operation in operations:
        before = ann.to_json()
        steps = len(ann)
        if operation[0] == "undo" and not steps:
            continue
        try:
            _apply(ann, operation)
        except Exception as err:  # noqa: BLE001 - the property is about every error
            assert_clear_refusal(err)
            assert ann.to_json() == before, f"{operation} changed the annotations and failed"
            assert len(ann) == steps
            continue
        if operation[0] != "undo" and ann.to_json() != before:
            # Nothing is lost: the change is one step that undo takes back.
            probe = ann.copy()
            probe.undo()
            assert probe.to_json() == before
        # What the annotations hold always survives a round trip through JSON.
        assert Annotations.from_json(ann.to_json()).to_json() == ann.to_json()


@given(n_samples=st.one_of(st.integers(-2, 5), st.sampled_from([10**12, 2**70]), BAD_VALUES),
       n_classes=st.one_of(st.none(), st.integers(-2, 5), st.sampled_from([10**12]),
                           BAD_VALUES),
       class_names=st.one_of(st.none(), st.lists(st.text(max_size=2), max_size=4),
                             BAD_VALUES))
def test_construction_refuses_clearly(n_samples, n_classes, class_names):
    try:
        ann = Annotations(n_samples, n_classes, class_names)
    except Exception as err:  # noqa: BLE001
        assert_clear_refusal(err)
        return
    assert ann.is_empty and ann.n_samples == n_samples


@given(text=st.one_of(st.text(max_size=40), st.sampled_from([
    "{", "[]", "null", '{"n_samples": 1e300}', '{"n_samples": 5, "n_classes": 1e9}',
    '{"n_samples": -1}', "[" * 5000 + "]" * 5000, '{"n_samples": 3, "labels": "x"}']),
    BAD_VALUES))
def test_from_json_refuses_clearly(text):
    try:
        Annotations.from_json(text)
    except Exception as err:  # noqa: BLE001
        assert_clear_refusal(err)
