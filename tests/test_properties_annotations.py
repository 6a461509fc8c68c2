"""Property-based tests: Annotations given bad or edge arguments refuse clearly and
change nothing; what they accept they keep, and undo gives back."""

import json

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


# ------------------------------------------------------------------ idempotence

#: Valid additions only: what a user can do by lasso, import or from Python.
SELECTIONS = st.lists(st.integers(0, N - 1), min_size=2, max_size=6, unique=True)
PAIRS = st.lists(st.tuples(st.integers(0, N - 1), st.integers(0, N - 1))
                 .filter(lambda p: p[0] != p[1]), min_size=1, max_size=4)
ADDITIONS = st.one_of(
    st.tuples(st.just("set_labels"), SELECTIONS, st.integers(0, 3),
              st.sampled_from([1.0, 0.5])),
    st.tuples(st.just("set_soft_labels"), SELECTIONS, st.sampled_from([[0.3, 0.7, 0, 0],
                                                                       [0.1, 0.2, 0.7, 0]])),
    st.tuples(st.just("remove_labels"), SELECTIONS),
    st.tuples(st.just("add_must_link"), SELECTIONS),
    st.tuples(st.just("add_must_link_pairs"), PAIRS),
    st.tuples(st.just("add_cannot_link_pairs"), PAIRS),
    st.tuples(st.just("add_cannot_link"), SELECTIONS, SELECTIONS).filter(
        lambda op: not set(op[1]) & set(op[2])),
)


def _annotations(operations):
    ann = Annotations(N, n_classes=4)
    for operation in operations:
        _apply(ann, operation)
    return ann


@given(operations=st.lists(ADDITIONS, max_size=10))
def test_repeating_any_addition_changes_nothing(operations):
    ann = Annotations(N, n_classes=4)
    for operation in operations:
        _apply(ann, operation)
        text, steps, revision = ann.to_json(), len(ann), ann.revision
        _apply(ann, operation)
        assert ann.to_json() == text, f"repeating {operation} changed the annotations"
        assert len(ann) == steps and ann.revision == revision


@given(mine=st.lists(ADDITIONS, max_size=8), theirs=st.lists(ADDITIONS, max_size=8),
       repeats=st.integers(2, 5))
def test_merging_the_same_annotations_again_changes_nothing(mine, theirs, repeats):
    ann, other = _annotations(mine), _annotations(theirs)
    before = ann.to_json()
    ann.merge(Annotations.from_json(other.to_json()))
    once, steps = ann.to_json(), len(ann)
    counts = ann.counts()
    for _ in range(repeats):
        outcome = ann.merge(Annotations.from_json(other.to_json()))
        assert outcome["labels"] == outcome["constraints"] == 0
    # Nothing piles up, and one undo still takes back the whole first merge.
    assert ann.to_json() == once and len(ann) == steps and ann.counts() == counts
    if once != before:
        ann.undo()
        assert ann.to_json() == before


@given(operations=st.lists(ADDITIONS, max_size=10))
def test_importing_an_export_into_itself_changes_nothing(operations):
    ann = _annotations(operations)
    text, steps = ann.to_json(), len(ann)
    for _ in range(5):
        ann.merge(Annotations.from_json(ann.to_json()))
    assert ann.to_json() == text and len(ann) == steps


@given(mine=st.lists(ADDITIONS, max_size=8), theirs=st.lists(ADDITIONS, max_size=8))
def test_merging_keeps_every_constraint_and_reports_conflicts_as_before(mine, theirs):
    ann, other = _annotations(mine), _annotations(theirs)
    ann.merge(other)
    # Every pair either side linked is linked after the merge, and none other.
    for kind in ("must_link_pairs", "cannot_link_pairs"):
        expected = {tuple(p) for source in (_annotations(mine), other)
                    for p in getattr(source, kind)()}
        assert {tuple(p) for p in getattr(ann, kind)()} == expected
    # A conflict between the two is found as it would be without the deduplication.
    naive = _annotations(mine)
    for name in ("_must_link_groups", "_must_link_pairs", "_cannot_link_groups",
                 "_cannot_link_pairs"):
        getattr(naive, name).extend(getattr(other, name))
    naive._soft, naive._conf = ann._soft, ann._conf
    found, expected = ann.conflicts(), naive.conflicts()
    assert np.array_equal(found.cannot_link, expected.cannot_link)
    assert [c.tolist() for c in found.label_mismatch] == \
        [c.tolist() for c in expected.label_mismatch]


#: Small selections on few points, so that files repeat and nest them often.
NESTING = st.lists(st.integers(0, 5), min_size=1, max_size=4, unique=True)


@given(groups=st.lists(NESTING.filter(lambda g: len(g) >= 2), max_size=8),
       selections=st.lists(st.tuples(NESTING, NESTING).filter(
           lambda p: not set(p[0]) & set(p[1])), max_size=8))
def test_a_file_is_read_as_adding_its_constraints_one_by_one(groups, selections):
    """Files written by hand (or by other tools) may repeat or nest constraints."""
    one_by_one = Annotations(N)
    for group in groups:
        one_by_one.add_must_link(group)
    for a, b in selections:
        one_by_one.add_cannot_link(a, b)
    data = json.loads(Annotations(N).to_json())
    data["must_link_groups"] = [sorted(g) for g in groups]
    data["cannot_link_groups"] = [[sorted(a), sorted(b)] for a, b in selections]
    read = Annotations.from_json(json.dumps(data))
    assert read.to_json() == one_by_one.to_json()


@given(operations=st.lists(ADDITIONS, max_size=10), back=st.integers(0, 10))
def test_undo_then_redo_gives_the_same_annotations(operations, back):
    ann = _annotations(operations)
    text, steps = ann.to_json(), len(ann)
    undone = [ann.undo() for _ in range(min(back, steps))]
    assert ann.can_redo == len(undone)
    for _ in undone:
        assert ann.redo() is not None
    assert ann.to_json() == text and len(ann) == steps


STEPS = st.one_of(ADDITIONS, st.tuples(st.just("undo")), st.tuples(st.just("redo")),
                  st.tuples(st.just("clear")), st.tuples(st.just("add_points"), st.just(2)))


@given(operations=st.lists(STEPS, max_size=14), probes=st.lists(ADDITIONS, max_size=4))
def test_what_is_held_is_judged_the_same_after_undo_redo_and_clear(operations, probes):
    # The index of what is held is extended as constraints are added; a copy
    # builds its own from scratch, so both must find the same new parts.
    ann = Annotations(N, n_classes=4)
    # Probing with the additions made so far catches an index that still holds
    # a constraint that was undone or cleared.
    probes = probes + [op for op in operations if op[0] in ("add_must_link", "add_cannot_link",
                                                            "add_must_link_pairs",
                                                            "add_cannot_link_pairs")]
    for operation in operations:
        _apply(ann, operation)
        fresh = ann.copy()
        for probe in probes:
            a, b = ann.copy(), fresh.copy()
            a._membership, b._membership = ann._membership_index(), fresh._membership_index()
            _apply(a, probe)
            _apply(b, probe)
            assert a.to_json() == b.to_json(), f"after {operations}, {probe} differs"
