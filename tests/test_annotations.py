"""Tests for nbembed.annotations."""

import json
import tracemalloc

import numpy as np
import pytest

from nbembed.annotations import Annotations, Conflicts

N = 20


def state(ann):
    """Everything observable about an Annotations object, for exact comparisons."""
    return {
        "n_samples": ann.n_samples,
        "n_classes": ann.n_classes,
        "class_names": ann.class_names,
        "labels": ann.to_labels().tolist(),
        "soft": ann.soft_label_matrix().tolist(),
        "confidences": ann.confidences().tolist(),
        "mask": ann.labelled_mask().tolist(),
        "groups": [g.tolist() for g in ann.must_link_groups()],
        "ml_pairs": ann.must_link_pairs().tolist(),
        "cl_pairs": ann.cannot_link_pairs().tolist(),
        "components": [c.tolist() for c in ann.must_link_components()],
        "is_empty": ann.is_empty,
        "repr": repr(ann),
        "json": ann.to_json(),
    }


def populated():
    ann = Annotations(N, class_names=["a", "b"])
    ann.set_labels([0, 1, 2], 0)
    ann.set_soft_labels([3, 4], [1 / 3, 2 / 3], confidence=0.7)
    ann.add_must_link([5, 6, 7])
    ann.add_must_link_pairs([[8, 9]])
    ann.add_cannot_link([10, 11], [12])
    ann.add_cannot_link_pairs([[13, 14]])
    return ann


# ------------------------------------------------------------------ construction

def test_empty_object():
    ann = Annotations(5)
    assert ann.n_samples == 5 and ann.n_classes == 0 and ann.class_names == []
    assert ann.is_empty and not ann and len(ann) == 0
    assert ann.to_labels().tolist() == [-1] * 5
    assert ann.soft_label_matrix().shape == (5, 0)
    assert ann.must_link_pairs().shape == (0, 2)
    assert ann.cannot_link_pairs().shape == (0, 2)
    assert ann.must_link_components() == []
    assert not ann.conflicts()
    assert ann.undo() is None


@pytest.mark.parametrize("kwargs, exc", [
    (dict(n_samples=0), ValueError),
    (dict(n_samples=2.0), TypeError),
    (dict(n_samples=3, n_classes=0), ValueError),
    (dict(n_samples=3, n_classes=2, class_names=["a"]), ValueError),
    (dict(n_samples=3, class_names=["a", "a"]), ValueError),
    (dict(n_samples=3, class_names=[1, 2]), TypeError),
    (dict(n_samples=3, class_names="ab"), TypeError),
])
def test_constructor_rejects(kwargs, exc):
    with pytest.raises(exc):
        Annotations(**kwargs)


def test_repr():
    assert repr(populated()) == ("Annotations(n_samples=20, n_classes=2, labelled=5, "
                                 "must_link_groups=1, must_link_pairs=1, "
                                 "cannot_link_groups=1, cannot_link_pairs=1)")


# ------------------------------------------------------------------------ labels

def test_set_labels_and_growth():
    ann = Annotations(N)
    ann.set_labels(np.array([3, 1, 3]), 2, confidence=0.5)
    assert ann.n_classes == 3
    assert ann.class_names == ["class 0", "class 1", "class 2"]
    y = ann.to_labels()
    assert y[[1, 3]].tolist() == [2, 2] and np.sum(y >= 0) == 2
    assert ann.confidences()[[1, 3]].tolist() == [0.5, 0.5]
    assert ann.soft_label_matrix()[1].tolist() == [0, 0, 1]
    assert ann.labelled_mask().sum() == 2


def test_set_labels_overwrites_and_remove():
    ann = Annotations(N, n_classes=2)
    ann.set_labels(range(5), 0)
    ann.set_labels([4, 5], 1)
    ann.remove_labels([0, 19])
    assert ann.to_labels()[:7].tolist() == [-1, 0, 0, 0, 1, 1, -1]
    assert ann.confidences()[0] == 0.0
    assert ann.soft_label_matrix()[0].tolist() == [0.0, 0.0]


@pytest.mark.parametrize("selection", [
    [2, 7], np.array([7, 2, 7], dtype=np.uint8), range(2, 8, 5), {2, 7},
    np.isin(np.arange(N), [2, 7]), [[2, 7]][0],
])
def test_selection_forms(selection):
    ann = Annotations(N)
    ann.set_labels(selection, 0)
    assert np.flatnonzero(ann.labelled_mask()).tolist() == [2, 7]


def test_scalar_index():
    ann = Annotations(N)
    ann.set_labels(np.int64(4), 1)
    assert np.flatnonzero(ann.labelled_mask()).tolist() == [4]


def test_soft_labels_per_point_rows_follow_index_order():
    ann = Annotations(N, n_classes=3)
    probs = np.array([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]])
    ann.set_soft_labels([9, 4], probs)
    soft = ann.soft_label_matrix()
    assert soft[9].tolist() == [0.2, 0.3, 0.5]
    assert soft[4].tolist() == [1.0, 0.0, 0.0]
    assert ann.to_labels()[[4, 9]].tolist() == [0, 2]


def test_soft_labels_renormalize_small_drift():
    ann = Annotations(N, n_classes=2)
    ann.set_soft_labels([0], [0.5, 0.5 + 5e-7])
    assert np.isclose(ann.soft_label_matrix()[0].sum(), 1.0, rtol=0, atol=1e-15)


def test_soft_labels_grow_classes():
    ann = Annotations(N)
    ann.set_soft_labels([0], [0.25, 0.25, 0.5])
    assert ann.n_classes == 3


def test_add_class():
    ann = Annotations(N, n_classes=2, class_names=["x", "y"])
    assert ann.add_class("z") == 2
    assert ann.add_class() == 3
    assert ann.class_names == ["x", "y", "z", "class 3"]
    ann.set_labels([0], 3)
    assert ann.soft_label_matrix().shape == (N, 4)
    with pytest.raises(ValueError, match="exists"):
        ann.add_class("x")
    with pytest.raises(TypeError):
        ann.add_class(5)


def test_default_names_avoid_taken_names():
    ann = Annotations(N, class_names=["class 1"])
    ann.set_labels([0], 1)
    assert len(set(ann.class_names)) == 2
    assert Annotations.from_json(ann.to_json()).class_names == ann.class_names


# ------------------------------------------------------------------ constraints

@pytest.mark.parametrize("g", [2, 3, 10, 57])
def test_must_link_pairs_of_group(g):
    ann = Annotations(100)
    ann.add_must_link(np.arange(100 - g, 100))
    pairs = ann.must_link_pairs()
    assert pairs.shape == (g * (g - 1) // 2, 2)
    assert np.all(pairs[:, 0] < pairs[:, 1])
    assert len(np.unique(pairs, axis=0)) == len(pairs)


def test_must_link_pairs_deduplicate_groups_and_pairs():
    ann = Annotations(N)
    ann.add_must_link([0, 1, 2])
    ann.add_must_link([1, 2, 3])
    ann.add_must_link_pairs([[2, 1], [5, 4], [4, 5]])
    assert ann.must_link_pairs().tolist() == [[0, 1], [0, 2], [1, 2], [1, 3], [2, 3], [4, 5]]
    assert [g.tolist() for g in ann.must_link_groups()] == [[0, 1, 2], [1, 2, 3]]


def test_components_merge_overlapping_groups():
    ann = Annotations(N)
    ann.add_must_link([10, 11])
    ann.add_must_link([0, 1, 2])
    ann.add_must_link([2, 3])
    ann.add_must_link_pairs([[11, 15], [17, 18]])
    comps = [c.tolist() for c in ann.must_link_components()]
    assert comps == [[0, 1, 2, 3], [10, 11, 15], [17, 18]]
    assert all(c.dtype == np.int64 for c in ann.must_link_components())


def test_cannot_link():
    ann = Annotations(N)
    ann.add_cannot_link([0, 5], [3, 1, 3])
    ann.add_cannot_link_pairs([[7, 6], [0, 1]])
    assert ann.cannot_link_pairs().tolist() == [[0, 1], [0, 3], [1, 5], [3, 5], [6, 7]]


def test_conflicts():
    ann = Annotations(N)
    ann.add_must_link([0, 1, 2])
    ann.add_must_link_pairs([[2, 3]])
    ann.add_cannot_link([0, 9], [3, 4])
    ann.add_cannot_link_pairs([[1, 2], [5, 6]])
    ann.set_labels([0, 3], 0)
    ann.add_must_link([7, 8])
    ann.set_labels([7], 0)
    ann.set_labels([8], 1)
    found = ann.conflicts()
    assert isinstance(found, Conflicts) and found
    assert found.cannot_link.tolist() == [[0, 3], [1, 2]]
    assert [p.tolist() for p in found.label_mismatch] == [[7, 8]]
    ann.set_labels([8], 0)
    assert [p.tolist() for p in ann.conflicts().label_mismatch] == []


def test_large_lasso_is_stored_as_a_group():
    n, g = 20000, 5000
    ann = Annotations(n)
    selection = np.random.default_rng(0).choice(n, g, replace=False)
    tracemalloc.start()
    try:
        ann.add_must_link(selection)
        ann.add_cannot_link(selection[:2500], selection[2500:])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * g * 8  # all pairs would need 12.5M x 16 bytes
    groups = ann.must_link_groups()
    assert len(groups) == 1 and groups[0].tolist() == sorted(selection.tolist())
    assert len(ann.to_json()) < 200_000
    comps = ann.must_link_components()
    assert len(comps) == 1 and len(comps[0]) == g


# --------------------------------------------------------------- invalid input

INVALID = [
    ("set_labels", ([N], 0), ValueError),
    ("set_labels", ([-1], 0), ValueError),
    ("set_labels", ([1.0, 2.0], 0), TypeError),
    ("set_labels", (["a"], 0), TypeError),
    ("set_labels", ([], 0), ValueError),
    ("set_labels", (np.zeros(N, bool), 0), ValueError),
    ("set_labels", (np.ones(N - 1, bool), 0), ValueError),
    ("set_labels", ([[1, 2]], 0), ValueError),
    ("set_labels", ([1], 2), ValueError),  # n_classes fixed at 2
    ("set_labels", ([1], -1), ValueError),
    ("set_labels", ([1], 1.0), TypeError),
    ("set_labels", ([1], 0, 0.0), ValueError),
    ("set_labels", ([1], 0, 1.5), ValueError),
    ("set_labels", ([1], 0, float("nan")), ValueError),
    ("set_labels", ([1], 0, "high"), TypeError),
    ("set_labels", ([1, N], 0), ValueError),
    ("set_soft_labels", ([1], [-0.5, 1.5]), ValueError),
    ("set_soft_labels", ([1], [0.5, 0.4]), ValueError),
    ("set_soft_labels", ([1], [1.0]), ValueError),
    ("set_soft_labels", ([1], [0.5, 0.25, 0.25]), ValueError),  # n_classes fixed
    ("set_soft_labels", ([1], [np.nan, 1.0]), ValueError),
    ("set_soft_labels", ([1], ["a", "b"]), TypeError),
    ("set_soft_labels", ([1, 2], [[0.5, 0.5]]), ValueError),
    ("set_soft_labels", ([1, 1], [[0.5, 0.5], [1.0, 0.0]]), ValueError),
    ("set_soft_labels", ([1], [0.5, 0.5], 0), ValueError),
    ("set_soft_labels", ([-2], [0.5, 0.5]), ValueError),
    ("remove_labels", ([-1],), ValueError),
    ("remove_labels", ([],), ValueError),
    ("add_must_link", ([3],), ValueError),
    ("add_must_link", ([3, 3],), ValueError),
    ("add_must_link", ([3, N],), ValueError),
    ("add_must_link", ([3, -4],), ValueError),
    ("add_must_link", (np.array([1.0, 2.0]),), TypeError),
    ("add_must_link_pairs", ([[1, 1]],), ValueError),
    ("add_must_link_pairs", ([[1, 2], [3, 3]],), ValueError),
    ("add_must_link_pairs", ([1, 2],), ValueError),
    ("add_must_link_pairs", ([[1, 2, 3]],), ValueError),
    ("add_must_link_pairs", ([[1, N]],), ValueError),
    ("add_must_link_pairs", ([[0.0, 1.0]],), TypeError),
    ("add_must_link_pairs", (np.empty((0, 2), int),), ValueError),
    ("add_cannot_link", ([1, 2], [2, 3]), ValueError),
    ("add_cannot_link", ([1, 2], []), ValueError),
    ("add_cannot_link", ([1, 2], [-3]), ValueError),
    ("add_cannot_link_pairs", ([[4, 4]],), ValueError),
    ("add_cannot_link_pairs", ([[-1, 4]],), ValueError),
    ("add_class", ("a",), ValueError),
]


@pytest.mark.parametrize("method, args, exc", INVALID,
                         ids=[f"{m}-{i}" for i, (m, _, _) in enumerate(INVALID)])
def test_invalid_input_raises_and_changes_nothing(method, args, exc):
    ann = Annotations(N, n_classes=2, class_names=["a", "b"])
    ann.set_labels([0, 1, 2], 1, confidence=0.5)
    ann.add_must_link([5, 6])
    before, history = state(ann), len(ann)
    with pytest.raises(exc):
        getattr(ann, method)(*args)
    assert state(ann) == before
    assert len(ann) == history


# -------------------------------------------------------------------------- undo

ACTIONS = [
    ("set_soft_labels", ([3, 16], [0.1, 0.9])),
    ("set_labels", ([0, 15], 1, 0.25)),
    ("set_soft_labels", ([16], [0.1, 0.2, 0.7], 0.3)),  # grows the classes
    ("set_labels", ([0, 15], 4)),  # grows the classes
    ("remove_labels", ([0, 3, 19],)),
    ("add_class", ("new",)),
    ("add_must_link", ([1, 15, 16],)),
    ("add_must_link_pairs", ([[15, 16], [1, 2]],)),
    ("add_cannot_link", ([17], [18, 19])),
    ("add_cannot_link_pairs", ([[2, 19]],)),
    ("clear", ()),
]


@pytest.mark.parametrize("method, args", ACTIONS, ids=[m for m, _ in ACTIONS])
def test_undo_restores_exact_state(method, args):
    ann = populated()
    before, history = state(ann), len(ann)
    getattr(ann, method)(*args)
    assert len(ann) == history + 1
    assert state(ann) != before
    description = ann.undo()
    assert isinstance(description, str) and description.startswith(method)
    assert state(ann) == before
    assert len(ann) == history


def test_undo_whole_history():
    ann = Annotations(N)
    snapshots = [state(ann)]
    for method, args in ACTIONS:
        getattr(ann, method)(*args)
        snapshots.append(state(ann))
    assert len(ann) == len(ACTIONS)
    for expected in reversed(snapshots[:-1]):
        assert ann.undo() is not None
        assert state(ann) == expected
    assert ann.undo() is None
    assert ann.is_empty and ann.n_classes == 0


def test_clear_keeps_classes():
    ann = populated()
    ann.clear()
    assert ann.is_empty and ann.class_names == ["a", "b"]
    assert ann.must_link_groups() == [] and ann.to_labels().max() == -1


def test_copy_is_independent():
    ann = populated()
    dup = ann.copy()
    before = state(ann)
    dup.set_labels([19], 0)
    dup.add_must_link([18, 19])
    dup.undo()
    dup.undo()
    dup.undo()
    assert state(ann) == before
    assert len(dup) == len(ann) - 1


# -------------------------------------------------------------------------- JSON

def test_json_round_trip_is_exact():
    ann = Annotations(N, n_classes=3)
    awkward = np.array([1 / 3, 1 / 3, 1 / 3])
    ann.set_soft_labels([0, 1], awkward, confidence=1 / 7)
    ann.set_soft_labels([2], [0.1, 0.2, 0.7])
    ann.set_soft_labels([4, 3], [[np.pi / 10, 1 - np.pi / 10, 0.0], [2 / 3, 0.0, 1 / 3]])
    ann.set_labels([5], 2, confidence=0.1 + 0.2)
    ann.add_must_link([6, 7, 8])
    ann.add_must_link_pairs([[9, 10]])
    ann.add_cannot_link([11], [12, 13])
    ann.add_cannot_link_pairs([[14, 15], [16, 17]])
    text = ann.to_json()
    back = Annotations.from_json(text)
    assert np.array_equal(back.soft_label_matrix(), ann.soft_label_matrix())
    assert np.array_equal(back.confidences(), ann.confidences())
    assert back.soft_label_matrix()[0].tolist() == [1 / 3] * 3
    assert back.confidences()[5] == 0.1 + 0.2
    assert state(back) == state(ann)
    assert back.to_json() == text
    assert len(back) == 0  # the undo history is not serialized
    with pytest.raises(ValueError):  # n_classes stays fixed
        back.set_labels([0], 3)


def test_json_round_trip_of_grown_classes_and_empty():
    for ann in (Annotations(3), populated(), Annotations.from_labels([2, -1, 0])):
        back = Annotations.from_json(ann.to_json())
        assert state(back) == state(ann)
    grown = Annotations.from_json(Annotations(3).to_json())
    grown.set_labels([0], 5)  # n_classes not fixed: still grows
    assert grown.n_classes == 6


def edited(**changes):
    data = json.loads(populated().to_json())
    data.update(changes)
    return json.dumps(data)


def edited_labels(**changes):
    data = json.loads(populated().to_json())
    data["labels"].update(changes)
    return json.dumps(data)


MALFORMED = [
    "",
    "{not json",
    "[1, 2]",
    edited(format="other"),
    edited(version=2),
    edited(extra=1),
    edited(n_samples=0),
    edited(n_samples=10 ** 8),  # a tiny file must not allocate gigabytes
    edited(n_samples=5_000_000, n_classes=20, n_classes_fixed=False,
           class_names=[f"c{k}" for k in range(20)]),
    "[" * 100_000 + "]" * 100_000,  # nested beyond the parser's recursion limit
    edited(n_samples=4),  # indices out of range
    edited(n_classes=3),
    edited(class_names=["a", "a"]),
    edited(n_classes_fixed="yes"),
    edited(must_link_groups=[[1]]),
    edited(must_link_groups=[[1, -2]]),
    edited(must_link_groups=[[1.5, 2]]),
    edited(must_link_pairs=[[[3, 3]]]),
    edited(cannot_link_groups=[[[1, 2], [2]]]),
    edited(cannot_link_groups=[[[1, 2]]]),
    edited(cannot_link_pairs=[[[1, 25]]]),
    edited(must_link_groups={"a": 1}),
    edited_labels(probabilities=[[1, 0], [0.5, 0.4], [1, 0], [0.5, 0.5], [0.5, 0.5]]),
    edited_labels(probabilities=[[1, 0], [-1, 2], [1, 0], [0.5, 0.5], [0.5, 0.5]]),
    edited_labels(probabilities=[[1, 0, 0]] * 5),
    edited_labels(confidence=[1, 1, 1, 0, 1]),
    edited_labels(confidence=[1, 1, 1, 1]),
    edited_labels(indices=[0, 1, 2, 3, 3]),
    edited_labels(indices=[0, 1, 2, 4, 3]),
    edited_labels(indices=[]),
]


@pytest.mark.parametrize("text", MALFORMED, ids=range(len(MALFORMED)))
def test_malformed_json_raises_value_error(text):
    with pytest.raises(ValueError, match="annotations"):
        Annotations.from_json(text)


def test_json_format_key():
    data = json.loads(Annotations(2).to_json())
    assert data["version"] == 1 and data["format"] == "nbembed.Annotations"


# ------------------------------------------------------------------- from_labels

def test_from_labels():
    y = np.array([-1, 0, 2, 2, -1])
    ann = Annotations.from_labels(y, confidence=0.5)
    assert ann.n_classes == 3 and ann.n_samples == 5 and len(ann) == 0
    assert ann.to_labels().tolist() == y.tolist()
    assert ann.confidences().tolist() == [0, 0.5, 0.5, 0.5, 0]
    assert ann.soft_label_matrix()[2].tolist() == [0, 0, 1]
    ann.set_labels([0], 3)  # not fixed: grows
    assert ann.n_classes == 4


def test_from_labels_fixed_and_unlabelled():
    ann = Annotations.from_labels([-1, -1, 1], n_classes=4)
    assert ann.n_classes == 4
    with pytest.raises(ValueError):
        ann.set_labels([0], 4)
    assert Annotations.from_labels([-1, -1]).n_classes == 0


@pytest.mark.parametrize("y, kwargs", [
    ([0, 3], dict(n_classes=3)),
    ([0, -2], {}),
    ([0.5, 1], {}),
    ([], {}),
    ([[0, 1]], {}),
    ([0, 1], dict(confidence=0)),
])
def test_from_labels_rejects(y, kwargs):
    with pytest.raises(ValueError):
        Annotations.from_labels(y, **kwargs)


def test_add_points_keeps_every_annotation_and_the_undo_history():
    ann = Annotations(5, class_names=["a", "b"])
    ann.set_labels([0, 1], 1, confidence=0.5)
    ann.add_must_link([2, 3])
    before = ann.to_json()
    ann.add_points(3)
    assert ann.n_samples == 8 and len(ann) == 2
    assert ann.to_labels().tolist() == [1, 1, -1, -1, -1, -1, -1, -1]
    assert ann.confidences()[:2].tolist() == [0.5, 0.5]
    ann.set_labels([7], 0)
    ann.add_cannot_link([7], [0])
    ann.undo()
    ann.undo()
    ann.undo()  # the must-link, made before the points were added
    assert ann.must_link_groups() == [] and ann.to_labels()[:2].tolist() == [1, 1]
    assert json.loads(before)["labels"] == json.loads(ann.to_json())["labels"]
    with pytest.raises(ValueError):
        ann.add_points(0)
    assert ann.n_samples == 8


def test_constraints_on_added_points_are_judged_against_every_point():
    ann = Annotations(5)
    ann.add_must_link([0, 1, 2])
    ann.add_cannot_link([0], [3])
    ann.add_points(3)
    ann.add_must_link_pairs([[1, 2], [2, 6]])  # (1, 2) is in the group already
    ann.add_cannot_link_pairs([[0, 3], [3, 7]])  # (0, 3) is across the selections
    assert ann.must_link_pairs(groups=False).tolist() == [[2, 6]]
    assert ann.cannot_link_pairs(groups=False).tolist() == [[3, 7]]
    ann.add_must_link([5, 6, 7])
    ann.add_must_link([6, 7])  # within the new group
    assert len(ann.must_link_groups()) == 2


# ------------------------------------------------------------ bounded history

def test_the_undo_history_keeps_the_latest_steps_within_its_limits(monkeypatch):
    from nbembed.annotations import history

    monkeypatch.setattr(history, "MAX_UNDO_STEPS", 5)
    ann = Annotations(N, n_classes=2)
    for k in range(12):
        ann.set_labels([k % N], k % 2)
    assert len(ann) == 5 and ann.history_position == 12 and ann.revision == 12
    while ann.undo() is not None:
        pass
    assert ann.history_position == 7 and ann.revision == 17
    assert ann.to_labels()[:7].tolist() == [0, 1, 0, 1, 0, 1, 0]  # what was forgotten stays
    monkeypatch.setattr(history, "MAX_UNDO_BYTES", 1)
    ann.set_labels(range(N), 1)
    ann.set_labels(range(N), 0)
    assert len(ann) == 1  # at least the last step is kept, whatever its size


def test_repeated_lassos_leave_the_annotations_as_they_are():
    ann = Annotations(N)
    for _ in range(50):
        ann.add_must_link([1, 2, 3])
        ann.add_must_link([2, 3])          # within the group
        ann.add_must_link_pairs([[3, 1]])  # within the group
        ann.set_labels([4, 5], 0)
        ann.add_cannot_link([6], [7, 8])
        ann.add_cannot_link([8], [6])      # across the same selections
    assert ann.counts() == dict(labelled=2, must_link_groups=1, must_link_pairs=0,
                                cannot_link_groups=1, cannot_link_pairs=0)
    assert len(ann) == 3 and ann.revision == 3


def test_redo_makes_every_undone_step_again_until_the_next_change():
    ann = Annotations(N)
    snapshots = [state(ann)]
    for method, args in ACTIONS:
        getattr(ann, method)(*args)
        snapshots.append(state(ann))
    for _ in ACTIONS:
        ann.undo()
    assert ann.redo() is not None and state(ann) == snapshots[1]
    for expected in snapshots[2:]:
        assert ann.redo() is not None
        assert state(ann) == expected
    assert ann.redo() is None
    for expected in reversed(snapshots[:-1]):  # and undone again
        ann.undo()
        assert state(ann) == expected
    ann.redo()
    ann.add_must_link([0, 1])  # a new change: nothing to redo any more
    assert ann.can_redo == 0 and ann.redo() is None
