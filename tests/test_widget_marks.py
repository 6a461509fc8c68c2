"""The constraint marks the Explorer sends the browser (nbembed.widget.marks)."""

import numpy as np
import pytest

pytest.importorskip("anywidget")

from nbembed import Annotations  # noqa: E402
from nbembed.widget.marks import constraint_marks, decode_marks  # noqa: E402
from test_widget import FakeMethod, bundle, make_explorer, wait_for  # noqa: E402,F401


def test_marks_hold_labels_groups_and_cannot_links_and_follow_undo(make_explorer):
    ex = make_explorer(X=np.zeros((20, 2)))
    labels, groups, cannot = decode_marks(ex._marks, 20)
    assert (labels == -1).all() and (groups == 0).all() and cannot == []

    ex.apply("soft_label", [1, 2], new_class="a")
    ex.apply("must_link", [3, 4, 5])
    ex.apply("must_link", [10, 11])
    ex.apply("cannot_link", [3, 4], other=[12, 13, 14])
    ex.annotations.add_cannot_link_pairs([[0, 19]])
    ex.update_annotations()
    labels, groups, cannot = decode_marks(ex._marks, 20)
    assert np.flatnonzero(labels >= 0).tolist() == [1, 2] and labels[1] == 0
    assert groups[[3, 4, 5]].tolist() == [1, 1, 1] and groups[[10, 11]].tolist() == [2, 2]
    assert np.count_nonzero(groups) == 5
    assert [(a.tolist(), b.tolist()) for a, b in cannot] == [([3, 4], [12, 13, 14]),
                                                             ([0], [19])]

    ex.annotations.undo()  # the explicit pair
    ex.undo()  # the cannot-link
    ex.undo()  # the second group
    labels, groups, cannot = decode_marks(ex._marks, 20)
    assert cannot == [] and np.count_nonzero(groups) == 3
    assert np.flatnonzero(labels >= 0).tolist() == [1, 2]


def test_linked_groups_are_one_must_link_group():
    ann = Annotations(8)
    ann.add_must_link([0, 1])
    ann.add_must_link([1, 2])
    ann.add_must_link_pairs([[6, 7]])
    _, groups, _ = decode_marks(constraint_marks(ann, ann.to_labels()), 8)
    assert groups.tolist() == [1, 1, 1, 0, 0, 0, 2, 2]


def test_marks_grow_with_the_points_not_the_pairs():
    n = 200_000
    ann = Annotations(n)
    ann.add_must_link(np.arange(100_000))  # 5e9 pairs
    ann.add_cannot_link(np.arange(100_000, 150_000), np.arange(150_000, n))  # 2.5e9 pairs
    data = constraint_marks(ann, ann.to_labels())
    # labels, groups, the count, 3 offsets and each annotated point once
    assert len(data) == 4 * (2 * n + 1 + 3 + 100_000)
    _, groups, cannot = decode_marks(data, n)
    assert (groups[:100_000] == 1).all() and (groups[100_000:] == 0).all()
    assert len(cannot[0][0]) == len(cannot[0][1]) == 50_000


def test_cannot_link_groups_accessor():
    ann = Annotations(6)
    ann.add_cannot_link([0, 1], [2])
    ann.add_cannot_link_pairs([[4, 3], [5, 0]])
    assert [(a.tolist(), b.tolist()) for a, b in ann.cannot_link_groups()] == [([0, 1], [2])]
    full = ann.cannot_link_groups(include_pairs=True)
    assert [(a.tolist(), b.tolist()) for a, b in full] == [([0, 1], [2]), ([0], [5]), ([3], [4])]
    full[0][0][0] = 5  # copies: the annotations are unchanged
    assert ann.cannot_link_groups()[0][0].tolist() == [0, 1]
