"""Pinning, moving and dropping points in the Explorer (no browser)."""

import json

import numpy as np
import pytest

pytest.importorskip("anywidget")

from nbembed import HSSNE, Annotations  # noqa: E402
from nbembed.widget import Explorer  # noqa: E402
from nbembed.widget.messages import MessageError, parse  # noqa: E402
from nbembed.widget.traits import UINT32, decode, encode  # noqa: E402
from nbembed.widget.view import DisplayMap, PlaneView, normalization  # noqa: E402
from test_widget import bundle, custom_msg, make_explorer, update_msg, wait_for  # noqa: E402,F401


def blobs(n=60, seed=0):
    """Three well separated blobs in 3-D; point i is in blob i % 3."""
    rng = np.random.default_rng(seed)
    return np.tile(np.eye(3) * 10, (n // 3, 1)) + rng.normal(size=(n, 3))


@pytest.fixture
def explorer(bundle):
    made = []

    def make(X=None, **kwargs):
        X = blobs() if X is None else X
        kwargs.setdefault("method", HSSNE(alpha=1.0, perplexity=10, max_iter=60,
                                          early_exaggeration_iter=20, random_state=0))
        ex = Explorer(X, autostart=False, extra_iterations=20, **kwargs)
        made.append(ex)
        ex.wait(timeout=120)
        return ex

    yield make
    for ex in made:
        ex.stop(timeout=30)


def settle(ex):
    ex.wait(timeout=120)
    return ex.run


# ------------------------------------------------------------------ messages

def test_drop_messages_are_checked_before_anything_changes():
    ok = {"type": "drop", "indices": [3, 4], "positions": [[0.1, -0.2], [0.5, 0.5]], "frame": 7}
    assert parse(ok) == ("drop", {"indices": [3, 4], "positions": [[0.1, -0.2], [0.5, 0.5]],
                                  "frame": 7})
    assert parse({"type": "toggle_pins"}) == ("toggle_pins", {})
    assert parse({"type": "unpin_all"}) == ("unpin_all", {})
    bad = [dict(ok, indices=[]), dict(ok, indices=[1.5, 2]), dict(ok, positions=[[0, 0]]),
           dict(ok, positions=[[0, None], [0, 0]]), dict(ok, positions=[[0, float("nan")],
                                                                         [0, 0]]),
           dict(ok, positions=[[0, 0, 0], [0, 0]]), dict(ok, frame=None),
           dict(ok, positions=[[True, 0], [0, 0]])]
    for content in bad:
        with pytest.raises(MessageError):
            parse(content)


def test_display_map_puts_a_dropped_point_where_it_was_shown():
    rng = np.random.default_rng(1)
    for d, view in [(2, "first-two"), (3, "first-two"), (3, "pca"), (1, "first-two")]:
        Y = rng.normal(size=(30, d))
        plane = PlaneView(view)
        points, _ = plane(Y)
        center, scale = normalization(points)
        display = DisplayMap(plane.plane, center, scale)
        shown = np.array([[0.3, -0.7], [-0.9, 0.2]])
        placed = display.place(Y[[4, 9]], shown)
        again = (plane(np.vstack([Y, placed]))[0][-2:] - center) * scale
        expected = shown if d > 1 else np.column_stack([shown[:, 0], [0.0, 0.0]])
        if view == "pca":  # the plane is recomputed with the new points: compare in the old one
            again = ((placed - display.origin) @ display.basis - center) * scale
        np.testing.assert_allclose(again, expected, atol=1e-12)
        # the coordinates across the plane are kept
        if d == 3 and view == "first-two":
            np.testing.assert_array_equal(placed[:, 2], Y[[4, 9], 2])


# ------------------------------------------------------------------ Explorer

def test_pin_unpin_and_pinned_through_the_explorer(explorer):
    ex = explorer()
    ex.pin([5, 2], [[1.0, 2.0], [3.0, 4.0]])
    assert ex.pinned.tolist() == [2, 5]
    run = settle(ex)
    assert run.pinned.tolist() == [2, 5]
    np.testing.assert_array_equal(ex.embedding[[5, 2]], [[1.0, 2.0], [3.0, 4.0]])
    assert decode(ex._pinned, UINT32).tolist() == [2, 5]
    ex.unpin([2])
    settle(ex)
    assert ex.pinned.tolist() == [5] and run.pinned.tolist() == [5]
    ex.unpin()
    settle(ex)
    assert ex.pinned.tolist() == [] and run.pinned.tolist() == []


@pytest.mark.parametrize("call, match", [
    (lambda ex: ex.pin([60]), "out of range"),
    (lambda ex: ex.pin([1, 1]), "repeat"),
    (lambda ex: ex.pin([1], [[0.0, np.nan]]), "NaN|finite"),
    (lambda ex: ex.pin([1, 2], [[0.0, 1.0]]), "shape"),
])
def test_bad_pins_are_refused_and_change_nothing(explorer, call, match):
    ex = explorer()
    ex.pin([7])
    settle(ex)
    before = ex.embedding
    with pytest.raises(ValueError, match=match):
        call(ex)
    settle(ex)
    assert ex.pinned.tolist() == [7] and ex.run.pinned.tolist() == [7]
    np.testing.assert_array_equal(ex.embedding, before)


def test_a_precomputed_map_refuses_pins(bundle):
    ex = Explorer(blobs()[:, :2], method="precomputed", autostart=False)
    try:
        ex.wait(timeout=30)
        with pytest.raises(ValueError, match="cannot pin"):
            ex.pin([0])
        ex._handle_msg(custom_msg({"type": "drop", "indices": [0], "positions": [[0, 0]],
                                   "frame": ex.frame_id}))
        assert ex.notice.startswith("Ignored a message from the browser") and ex.pinned.size == 0
    finally:
        ex.close()


def test_a_drop_from_the_browser_pins_the_point_where_it_was_dropped(explorer):
    ex = explorer()
    ex.resume()
    ex.wait(iteration=30, timeout=120)
    frame = ex.frame_id
    target = [[0.5, -0.25]]
    ex._handle_msg(custom_msg({"type": "drop", "indices": [11], "positions": target,
                               "frame": frame}))
    assert 11 in ex.pinned
    run = settle(ex)
    assert run.pinned.tolist() == [11]
    display = ex._display_maps[frame]
    expected = display.center + np.array(target[0]) / display.scale
    np.testing.assert_allclose(ex.embedding[11], expected, rtol=1e-9)
    assert run.iteration > 30  # the run went on around it


def test_a_bad_drop_gives_a_notice_and_changes_nothing(explorer):
    ex = explorer()
    before = ex.embedding
    for content in [{"type": "drop", "indices": [99], "positions": [[0, 0]],
                     "frame": ex.frame_id},
                    {"type": "drop", "indices": [1], "positions": [[0, 0]], "frame": -5},
                    {"type": "drop", "indices": [1, 2], "positions": [[0, 0]],
                     "frame": ex.frame_id}]:
        ex._handle_msg(custom_msg(content))
        assert ex.notice.startswith("Ignored a message from the browser"), ex.notice
    settle(ex)
    assert ex.pinned.size == 0 and ex.run.pinned.size == 0
    np.testing.assert_array_equal(ex.embedding, before)
    assert len(ex._log) == 0


def test_toggle_pins_the_selection_and_unpin_all_from_the_browser(explorer):
    ex = explorer()
    ex._handle_msg(update_msg({"_selection": encode([3, 4], UINT32)}))
    ex._handle_msg(custom_msg({"type": "toggle_pins"}))
    assert ex.pinned.tolist() == [3, 4]
    ex._handle_msg(custom_msg({"type": "toggle_pins"}))
    assert ex.pinned.tolist() == []
    ex.pin([1, 3])
    ex._handle_msg(custom_msg({"type": "toggle_pins"}))  # 4 was free: pin both
    assert ex.pinned.tolist() == [1, 3, 4]
    ex._handle_msg(custom_msg({"type": "unpin_all"}))
    assert ex.pinned.tolist() == []
    assert settle(ex).pinned.tolist() == []


def test_a_pin_message_pins_the_selection_it_carries(explorer):
    # A host may handle the message before the selection update sent ahead of it
    # (marimo merges what is queued while its kernel is busy): the browser's
    # selection travels with the message and wins over the one Python holds.
    ex = explorer()
    ex.selection = [1, 2]
    ex._handle_msg(custom_msg({"type": "toggle_pins"}, [encode([5, 7], UINT32)]))
    assert ex.pinned.tolist() == [5, 7]
    assert ex.selection.tolist() == [1, 2]
    for buffers in ([encode([5, 99], UINT32)], [b"\x01\x02\x03"],
                    [encode([5], UINT32), encode([7], UINT32)], [b""]):
        ex._handle_msg(custom_msg({"type": "toggle_pins"}, buffers))
        assert ex.notice.startswith("Ignored a message from the browser"), (buffers, ex.notice)
        assert ex.pinned.tolist() == [5, 7]
    assert settle(ex).pinned.tolist() == [5, 7]


def test_undo_reverts_a_drop_and_keeps_the_annotation_history(explorer):
    ex = explorer(class_names=["a"])
    ex.apply("soft_label", [0, 1], label=0)
    start = settle(ex).embedding
    ex.drop([8], [[0.2, 0.2]], ex.frame_id)
    settle(ex)
    assert ex.pinned.tolist() == [8]
    assert ex.undo() == "move 1 point(s)"
    run = settle(ex)
    assert ex.pinned.tolist() == [] and run.pinned.tolist() == []
    np.testing.assert_array_equal(run.embedding[8], start[8])
    assert ex.undo().startswith("set_labels")  # then the labels, as before
    assert ex.annotation_summary == "no annotations"


def test_pins_survive_sliders_annotations_and_restart(explorer):
    ex = explorer()
    ex.pin([0, 30], [[-5.0, 0.0], [5.0, 0.0]])
    ex._handle_msg(update_msg({"params": {"alpha": 0.5}}))
    ex.apply("must_link", [1, 2, 3])
    run = settle(ex)
    assert run.alpha == 0.5 and len(ex.annotations.must_link_groups()) == 1
    assert run.pinned.tolist() == [0, 30] and ex.pinned.tolist() == [0, 30]
    np.testing.assert_array_equal(ex.embedding[[0, 30]], [[-5.0, 0.0], [5.0, 0.0]])
    ex.restart()
    wait_for(lambda: ex.run is not None and ex.run is not run, timeout=60)
    ex.pause()
    new = settle(ex)
    assert new.pinned.tolist() == [0, 30]
    np.testing.assert_array_equal(new.embedding[[0, 30]], [[-5.0, 0.0], [5.0, 0.0]])


# ------------------------------------------------------------------ export / import

def test_pins_round_trip_through_export_and_import(explorer):
    ex = explorer(class_names=["a"])
    ex.apply("soft_label", [0, 1, 2], label=0)
    ex.pin([4, 9], [[1.5, -2.0], [0.25, 3.0]])
    settle(ex)
    sent = []
    ex.send = lambda content, buffers=None: sent.append(content)
    ex._handle_msg(custom_msg({"type": "export_annotations"}))
    text = sent[-1]["text"]
    assert text == ex.annotations_json()
    assert "2 pinned point(s)" in ex.notice
    data = json.loads(text)
    assert data["pinned"] == {"indices": [4, 9], "positions": [[1.5, -2.0], [0.25, 3.0]]}
    assert Annotations.from_json(text).to_json() == ex.annotations.to_json()

    fresh = explorer(class_names=["a"])
    fresh._handle_msg(custom_msg({"type": "import_annotations", "text": text}))
    run = settle(fresh)
    assert fresh.annotations.to_json() == ex.annotations.to_json()
    assert fresh.pinned.tolist() == [4, 9] and run.pinned.tolist() == [4, 9]
    np.testing.assert_array_equal(fresh.embedding[[4, 9]], [[1.5, -2.0], [0.25, 3.0]])


def test_one_undo_reverts_a_whole_import_with_pins(explorer):
    ex = explorer(class_names=["a"])
    ex.apply("must_link", [10, 11])
    saved = Annotations(60, class_names=["a", "b"])
    saved.set_labels([0, 1, 2], 1)
    saved.add_must_link([3, 4, 5])
    text = json.dumps({**json.loads(saved.to_json()),
                       "pinned": {"indices": [4, 9], "positions": [[1.5, -2.0], [0.25, 3.0]]}})
    before = ex.annotations.to_json()
    ex.import_annotations(text)
    settle(ex)
    assert ex.annotation_summary == "3 labelled · 2 must-link groups"
    assert ex.pinned.tolist() == [4, 9]
    ex.undo()
    run = settle(ex)
    assert ex.annotations.to_json() == before, "labels and links of the import stay after Undo"
    assert ex.pinned.size == 0 and run.pinned.size == 0
    ex.undo()  # the action before the import
    assert ex.annotations.is_empty


def test_redo_makes_an_undone_import_again_pins_included(explorer):
    ex = explorer(class_names=["a"])
    saved = Annotations(60, class_names=["a"])
    saved.set_labels([0, 1], 0)
    text = json.dumps({**json.loads(saved.to_json()),
                       "pinned": {"indices": [4], "positions": [[1.5, -2.0]]}})
    ex.import_annotations(text)
    after = ex.annotations.to_json()
    ex._handle_msg(custom_msg({"type": "undo"}))
    settle(ex)
    assert ex.annotations.is_empty and ex.pinned.size == 0 and ex.redo_count == 1
    ex._handle_msg(custom_msg({"type": "redo"}))
    run = settle(ex)
    assert ex.annotations.to_json() == after and ex.redo_count == 0
    assert ex.pinned.tolist() == [4] and run.pinned.tolist() == [4]
    np.testing.assert_array_equal(ex.embedding[4], [1.5, -2.0])
    assert ex.redo() is None and "Nothing to redo" in ex.notice
    ex.undo()
    ex.apply("must_link", [7, 8])  # a new action: the undone import cannot come back
    assert ex.redo() is None


def test_importing_a_file_again_adds_nothing(explorer):
    ex = explorer(class_names=["a"])
    saved = Annotations(60, class_names=["a"])
    saved.set_labels([0, 1], 0)
    saved.add_must_link([3, 4, 5])
    saved.add_cannot_link([6], [7, 8])
    for _ in range(5):
        ex.import_annotations(saved.to_json())
    assert ex.annotations.counts() == saved.counts()
    assert "Nothing new imported" in ex.notice
    ex.apply("must_link", [3, 5])
    assert "hold this must-link already" in ex.notice
    assert ex.annotations.counts() == saved.counts()
    ex.undo()
    assert ex.annotations.is_empty


def test_an_old_file_without_pins_still_imports_and_bad_pins_change_nothing(explorer):
    ex = explorer()
    old = Annotations(60, class_names=["a"])
    old.set_labels([1, 2], 0)
    ex.import_annotations(old.to_json())
    assert ex.annotation_summary == "2 labelled" and ex.pinned.size == 0
    before = ex.annotations.to_json()
    for pins in [{"indices": [1], "positions": [[0.0, 0.0, 0.0]]},
                 {"indices": [70], "positions": [[0.0, 0.0]]},
                 {"indices": [1]}]:
        text = json.dumps({**json.loads(old.to_json()), "pinned": pins})
        with pytest.raises(ValueError):
            ex.import_annotations(text)
    assert ex.annotations.to_json() == before and ex.pinned.size == 0


# ------------------------------------------------------------------ new points

def annotate_pin_and_step(ex):
    """Label points 0 and 1, link 2 and 3, pin 5, then step 40 iterations; the run."""
    ex.apply("soft_label", [0, 1], label=0)
    ex.apply("must_link", [2, 3])
    ex.pin([5], [[4.0, -4.0]])
    ex.step(40)
    run = settle(ex)
    assert run.iteration == 40
    return run


def test_add_points_places_them_and_keeps_indices_annotations_and_pins(explorer):
    X = blobs()
    # The annotations below join points of different blobs; linked alone (without
    # their neighbours) they leave the blobs apart, so the placement is checked on them.
    method = HSSNE(alpha=1.0, perplexity=10, max_iter=60, early_exaggeration_iter=20,
                   random_state=0, must_link_neighbors=0)
    ex = explorer(X=X[:45], class_names=["a", "b"], data={"size": np.arange(45.0)},
                  hover_text=[f"old {i}" for i in range(45)], method=method)
    old = annotate_pin_and_step(ex)
    before, iteration = old.embedding, old.iteration
    ann_before = ex.annotations.to_json()
    ex.selection = np.arange(30)  # stored as a bitmask of the 45 points
    ex.add_points(X[45:], labels=[1] * 5 + [-1] * 10, data={"size": np.arange(45.0, 60.0)},
                  hover_text=[f"new {i}" for i in range(15)])
    new = ex.run
    assert new is not old and ex.n_points == 60 and ex.embedding.shape == (60, 2)
    assert ex.selection.tolist() == list(range(30))
    assert new.iteration == iteration  # the schedule goes on, not from the start
    np.testing.assert_array_equal(ex.embedding[:45], before)  # not stepped yet: paused
    assert new.pinned.tolist() == [5] and ex.pinned.tolist() == [5]
    # the new points start where transform puts them: among their blob's points
    blob = np.arange(60) % 3
    Y = ex.embedding
    same = [np.mean(blob[np.argsort(np.linalg.norm(Y[:45] - Y[i], axis=1))[:5]] == blob[i])
            for i in range(45, 60)]
    assert np.mean(same) >= 0.6, same  # chance: 1/3
    labels = ex.annotations.to_labels()
    assert labels[:2].tolist() == [0, 0] and labels[45:50].tolist() == [1] * 5
    assert (labels[50:] == -1).all() and len(ex.annotations.must_link_groups()) == 1
    assert ex.hover_text[44] == "old 44" and ex.hover_text[59] == "new 14"
    ex.undo()  # the new points' labels
    assert ex.annotations.to_labels()[45:50].tolist() == [-1] * 5
    assert json.loads(ex.annotations.to_json())["labels"] == json.loads(ann_before)["labels"]
    ex.resume()
    ex.wait(timeout=120)
    np.testing.assert_array_equal(ex.embedding[5], [4.0, -4.0])
    assert ex.embedding.shape == (60, 2) and np.isfinite(ex.embedding).all()


def test_add_points_refuses_what_it_cannot_do_and_changes_nothing(explorer, bundle):
    X = blobs()
    ex = explorer(X=X[:45], data={"size": np.arange(45.0)})
    run = ex.run
    for kwargs, match in [(dict(X_new=X[45:, :2], data={"size": np.zeros(15)}), "features"),
                          (dict(X_new=np.full((2, 3), np.nan), data={"size": [0, 1]}), "NaN"),
                          (dict(X_new=X[45:]), "size"),
                          (dict(X_new=X[45:], data={"size": np.zeros(15)}, labels=[-2] * 15),
                           "labels")]:
        with pytest.raises(ValueError, match=match):
            ex.add_points(**kwargs)
    assert ex.run is run and ex.n_points == 45 and ex.annotations.n_samples == 45
    pre = Explorer(X, method="precomputed", autostart=False)
    try:
        with pytest.raises(ValueError, match="HSSNE, SNE, NeRV, SNeRV, Mbed"):
            pre.add_points(X[:2])
    finally:
        pre.close()


@pytest.mark.parametrize("method", ["nerv", "mbed", "hssne"])
def test_added_points_join_the_run_at_the_same_point_of_its_schedule(explorer, method):
    from nbembed import Mbed, NeRV

    X = blobs()
    est = {"nerv": NeRV(n_neighbors=10, max_iter=60, anneal_iter=20, random_state=0),
           "mbed": Mbed(n_classes=3, max_iter=200, random_state=0),
           "hssne": HSSNE(perplexity=10, max_iter=300, early_exaggeration_iter=30,
                          random_state=0)}[method]
    ex = explorer(X=X[:45], method=est)
    ex.resume()
    ex.wait(iteration=40, timeout=120)
    ex.pause()
    old = settle(ex)
    assert old.phase not in ("early exaggeration", "sne", "widening")
    ex.add_points(X[45:])
    new = ex.run
    assert new.iteration == old.iteration and new.phase == old.phase
    if method == "mbed":
        assert new.current_lambda == old.current_lambda and new.anneal_step == old.anneal_step
    ex.step(3)
    wait_for(lambda: ex.iteration >= old.iteration + 3, timeout=60)
    assert ex.run.phase == old.phase or ex.run.done


def test_the_examples_of_docs_arrange_run_with_the_explorer(bundle):
    import pathlib
    import re

    page = pathlib.Path(__file__).resolve().parents[1] / "docs" / "arrange.md"
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)
    assert sum("Explorer" in block for block in blocks) == 2
    namespace = {}
    for block in blocks:   # one session: later examples use earlier names
        exec(compile(block, str(page), "exec"), namespace)


def test_add_points_extends_the_images_or_asks_for_them(explorer):
    X = blobs()
    images = np.random.default_rng(0).uniform(size=(45, 4, 4))
    ex = explorer(X=X[:45], images=images)
    with pytest.raises(ValueError, match="images"):
        ex.add_points(X[45:])
    with pytest.raises(ValueError, match="shape"):
        ex.add_points(X[45:], images=np.zeros((15, 5, 5)))
    assert ex.n_points == 45
    ex.add_points(X[45:], images=np.full((15, 4, 4), 255, dtype=np.uint8))
    pixels = decode(ex._images, np.uint8).reshape(60, 4, 4)
    assert (pixels[45:] == 255).all() and ex.n_points == 60
    assert ex.hover_text == []  # no tooltips before, none made up


def test_a_failed_add_points_leaves_the_old_run_going(explorer, monkeypatch):
    X = blobs()
    ex = explorer(X=X[:45], class_names=["a"])
    ex.apply("soft_label", [0], label=0)
    run = ex.run

    def broken(*args, **kwargs):
        raise MemoryError("no room")

    monkeypatch.setattr(ex._method, "prepare", broken)
    with pytest.raises(RuntimeError, match="no room"):
        ex.add_points(X[45:], labels=[0] * 15)
    assert ex.run is run and ex.n_points == 45 and ex.annotations.n_samples == 45
    assert ex.status == "paused" and len(ex._log) == 1
    ex.step(5)
    wait_for(lambda: run.iteration >= 5, timeout=60)


def test_changes_made_before_step_all_come_before_its_iterations(explorer):
    """Annotations and a pin queued before ``step(n)`` are applied before any of its
    iterations, however the worker thread is timed: the map equals a run given the
    same changes and then stepped."""
    X = blobs()[:45]
    method = HSSNE(alpha=1.0, perplexity=10, max_iter=60, early_exaggeration_iter=20,
                   random_state=0)
    expected = None
    for _ in range(5):
        ex = explorer(X=X, method=method, class_names=["a", "b"])
        run = annotate_pin_and_step(ex)
        if expected is None:
            direct = method.prepare(X)
            direct.set_annotations(*ex._annotation_snapshot())
            direct.pin([5], [[4.0, -4.0]])
            direct.step(40)
            expected = direct.embedding
        np.testing.assert_array_equal(run.embedding, expected)
