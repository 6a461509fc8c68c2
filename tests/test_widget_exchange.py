"""Export, import and colouring by user columns in the Explorer (no browser)."""

import json

import numpy as np
import pytest

pytest.importorskip("anywidget")

from nbembed import Annotations  # noqa: E402
from nbembed.widget.traits import UINT16, decode  # noqa: E402
from test_widget import (FakeComm, FakeMethod, FakeRun, bundle, custom_msg, make_explorer,  # noqa: E402,F401
                         update_msg, wait_for)


def sent_messages(comm, kind):
    return [data["content"] for data, _ in comm.sent
            if data.get("method") == "custom" and data["content"].get("type") == kind]


def test_export_sends_the_annotations_json(make_explorer):
    ex = make_explorer(X=np.zeros((12, 2)))
    ex.apply("must_link", [1, 2, 3])
    ex.comm = comm = FakeComm()
    ex._handle_msg(custom_msg({"type": "export_annotations"}))
    (message,) = sent_messages(comm, "annotations_json")
    assert message["filename"] == "annotations.json"
    assert Annotations.from_json(message["text"]).to_json() == ex.annotations.to_json()


def test_import_merges_as_one_undoable_action(make_explorer):
    ex = make_explorer(X=np.zeros((12, 2)), class_names=["a"])
    ex.apply("soft_label", [0, 1], label=0)
    saved = Annotations(12, class_names=["b", "a"])
    saved.set_labels([5, 6], 0)
    saved.add_cannot_link([7], [8, 9])
    ex._handle_msg(custom_msg({"type": "import_annotations", "text": saved.to_json()}))
    assert ex.annotations.class_names == ["a", "b"]
    assert ex.annotations.to_labels()[[0, 1, 5, 6]].tolist() == [0, 0, 1, 1]
    assert ex.annotation_summary == "4 labelled · 1 cannot-link group pair"
    assert ex.annotation_count == 2
    ex.undo()
    assert ex.annotations.class_names == ["a"]
    assert ex.annotation_summary == "2 labelled"


@pytest.mark.parametrize("text, reason", [
    ("not json", "not valid JSON"),
    (json.dumps({"format": "other"}), "not a JSON object with format"),
    (Annotations(5).to_json(), "annotations of 5 points"),
    (None, "needs the file's text"),
])
def test_a_bad_import_gives_a_notice_and_changes_nothing(make_explorer, text, reason):
    ex = make_explorer(X=np.zeros((12, 2)))
    ex.apply("must_link", [1, 2, 3])
    before = ex.annotations.to_json()
    ex._handle_msg(custom_msg({"type": "import_annotations", "text": text}))
    assert reason in ex.notice and ex.notice.startswith("Ignored a message from the browser")
    assert ex.annotations.to_json() == before and len(ex.annotations) == 1
    ex.undo()  # the earlier action is still the one undone
    assert ex.annotations.is_empty


class OneClassRun(FakeRun):
    max_classes = 1  # as Mbed's n_classes=1


class OneClassMethod(FakeMethod):
    max_classes = 1

    def prepare(self, X, y=None, annotations=None, init=None):
        return OneClassRun(len(X))


def test_import_respects_the_methods_class_limit(make_explorer):
    ex = make_explorer(X=np.zeros((12, 2)), method=OneClassMethod(), class_names=["a"])
    saved = Annotations(12, class_names=["b"])
    saved.set_labels([3], 0)
    with pytest.raises(ValueError, match="set up for 1"):
        ex.import_annotations(saved.to_json())
    assert ex.annotations.is_empty


def test_colour_by_user_columns(make_explorer):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"kind": ["x", "y"] * 6, "score": np.linspace(0.0, 1.0, 12)})
    ex = make_explorer(X=np.zeros((12, 2)), data=frame, autostart=False)
    ex.wait()
    assert ex.color_options == ["label", "kind", "score"]
    ex.color_by = "kind"
    assert [e["name"] for e in ex.legend] == ["x", "y"] and not ex.legend_continuous
    assert decode(ex._codes, UINT16)[:4].tolist() == [0, 1, 0, 1]
    ex.color_by = "score"
    assert ex.legend_continuous
    codes = decode(ex._codes, UINT16)
    assert codes[0] == 0 and codes[-1] == codes.max() and np.all(np.diff(codes.astype(int)) >= 0)

    ex.color_by_values("size", pd.Series([1.0] * 11 + [np.nan]))
    assert ex.color_by == "size" and ex.color_options[-1] == "size"
    assert decode(ex._codes, UINT16)[-1] == len(ex.palette) - 1  # NaN is grey
    ex.color_by_values("score", np.zeros(12), show=False)  # replaced, still shown
    assert ex.color_by == "size" and ex.color_options.count("score") == 1

    for name, values, error in [("label", np.zeros(12), ValueError),
                                ("z", np.zeros(11), ValueError),
                                ("", np.zeros(12), TypeError)]:
        with pytest.raises(error):
            ex.color_by_values(name, values)
    assert ex.color_options == ["label", "kind", "score", "size"]


def test_browser_cannot_pick_an_unknown_colouring(make_explorer):
    ex = make_explorer(X=np.zeros((12, 2)), data={"kind": np.arange(12) % 3})
    ex._handle_msg(update_msg({"color_by": "nonexistent"}))
    assert ex.color_by == "label" and "color_by" in ex.notice
