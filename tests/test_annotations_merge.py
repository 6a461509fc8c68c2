"""Annotations.merge: adding saved annotations to live ones, as one undoable step."""

import numpy as np
import pytest

from nbembed import Annotations


def test_merge_maps_classes_by_name_and_appends_constraints():
    live = Annotations(10, class_names=["cat", "dog"])
    live.set_labels([0, 1], 1)
    live.add_must_link([2, 3])
    saved = Annotations(10, class_names=["bird", "cat"])
    saved.set_labels([1, 4], 1, confidence=0.5)  # cat
    saved.set_soft_labels([5], [0.25, 0.75])
    saved.add_must_link([6, 7, 8])
    saved.add_cannot_link_pairs([[0, 9]])
    live.merge(saved)

    assert live.class_names == ["cat", "dog", "bird"]
    assert live.to_labels().tolist() == [1, 0, -1, -1, 0, 0, -1, -1, -1, -1]
    assert np.allclose(live.soft_label_matrix()[5], [0.75, 0, 0.25])
    assert live.confidences()[[0, 1, 4]].tolist() == [1.0, 0.5, 0.5]
    assert [g.tolist() for g in live.must_link_groups()] == [[2, 3], [6, 7, 8]]
    assert live.cannot_link_pairs().tolist() == [[0, 9]]

    before = Annotations(10, class_names=["cat", "dog"])
    before.set_labels([0, 1], 1)
    before.add_must_link([2, 3])
    assert live.undo().startswith("merge: 3 label(s), 2 constraint(s)")
    assert live.to_json() == before.to_json()


def test_merge_refuses_other_data():
    live = Annotations(10)
    with pytest.raises(ValueError, match="for 5 points"):
        live.merge(Annotations(5))
    with pytest.raises(TypeError, match="Annotations"):
        live.merge({"labels": []})
    assert len(live) == 0
