"""Move mode in a real browser: drag a point with the mouse, find it pinned in Python.

Runs the built module in the bare fake-model page (see test_explorer_page.py)
with a real HSSNE run in this process; the page's messages are handed to the
widget as the kernel would.
"""

import time

import numpy as np
import pytest

from .test_explorer_marks import point_on_screen
from .test_explorer_page import ROOT, mount_explorer
from .test_explorer_toolbar import click


@pytest.fixture
def explorer():
    from nbembed import HSSNE
    from nbembed.widget import Explorer

    rng = np.random.default_rng(0)
    X = np.repeat(np.eye(3) * 6, 20, axis=0) + rng.normal(size=(60, 3))
    ex = Explorer(X, method=HSSNE(alpha=1.0, perplexity=10, max_iter=40,
                                  early_exaggeration_iter=10, random_state=0),
                  autostart=False, extra_iterations=10)
    ex.wait(timeout=120)
    yield ex
    ex.close()


def lonely_point(page, ex):
    """A point with no other within 15 pixels, and its page pixel."""
    pixels = np.array([point_on_screen(page, ex, i) for i in range(len(ex.embedding))])
    gaps = np.linalg.norm(pixels[:, None] - pixels[None], axis=-1)
    np.fill_diagonal(gaps, np.inf)
    i = int(np.argmax(gaps.min(axis=1)))
    assert gaps[i].min() > 15, "no isolated point to grab"
    return i, pixels[i]


def shown_at(page, pixel):
    """The normalized coordinates the plot shows at a page pixel (initial camera)."""
    box = page.locator(f"{ROOT} canvas.nbembed-canvas").bounding_box()
    aspect = box["width"] / box["height"]
    return np.array([((pixel[0] - box["x"]) / box["width"] * 2 - 1) * aspect,
                     1 - (pixel[1] - box["y"]) / box["height"] * 2])


def test_dragging_a_point_pins_it_where_it_was_dropped(widget_page, explorer):
    ex = explorer
    page = widget_page.page
    mount_explorer(widget_page, ex)
    frame = ex.frame_id
    i, start = lonely_point(page, ex)
    before = ex.embedding

    click(page, "move")
    widget_page.wait_attr(ROOT, "data-mode", "(v) => v === 'move'", "move mode on")
    box = page.locator(f"{ROOT} .nbembed-plot").bounding_box()
    target = (box["x"] + box["width"] * 0.85, box["y"] + box["height"] * 0.15)
    page.mouse.move(*start)
    page.mouse.down()
    page.mouse.move(*target, steps=8)
    page.mouse.up()
    widget_page.wait_attr(ROOT, "data-drops", "(v) => v === '1'", "the drop sent")

    messages = widget_page.commands_to_python(ex)
    assert [m["type"] for m in messages] == ["drop"] and messages[0]["indices"] == [i]
    assert i in ex.pinned
    run = ex.wait(timeout=120).run
    assert run.pinned.tolist() == [i]

    display = ex._display_maps[frame]
    expected = display.center + shown_at(page, target) / display.scale
    pixel = 1.5 * 2 / box["height"] / display.scale  # 1.5 pixels in embedding units
    np.testing.assert_allclose(ex.embedding[i], expected, atol=pixel)
    dropped = ex.embedding[i]
    ex.resume()  # the map settles around the pinned point, which stays
    after = ex.wait(timeout=120).embedding
    others = np.delete(np.arange(len(before)), i)
    assert not np.array_equal(after[others], before[others])
    np.testing.assert_array_equal(after[i], dropped)

    # The pin is drawn, and Unpin all lets it go.
    widget_page.from_python(ex, ["_pinned", "_positions", "frame_id"])
    widget_page.wait_attr(ROOT, "data-pins-drawn", "(v) => v === '1'", "the pin drawn")
    click(page, "unpin-all")
    widget_page.commands_to_python(ex)
    assert ex.pinned.size == 0
    assert ex.wait(timeout=120).run.pinned.size == 0
    assert widget_page.errors == []


# ------------------------------------------------------------------ in JupyterLab

LAB_CELLS = ["""
import numba
import numpy as np
from sklearn.datasets import load_digits
from nbembed import HSSNE
from nbembed.widget import Explorer
from nbembed.widget.traits import decode_positions

X = load_digits().data[:300]
# The endless run keeps one core busy, not both: on a two-core machine the browser
# otherwise got too little time to draw (one frame in 60 s in one run).
numba.set_num_threads(1)
""", """
ex = Explorer(X, method=HSSNE(alpha=1.0, max_iter=100_000_000, tol=0, random_state=0))
ex
"""]


def shown_frame(nb, timeout=60.0):
    """The frame the browser shows once it is Python's last one (the run paused)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        frame = nb.py_value("ex.frame_id")
        if nb.attr(ROOT, "data-frame-id") == str(frame):
            return frame
        nb.page.wait_for_timeout(100)
    raise AssertionError(f"the browser did not show Python's frame {frame}")


def test_a_point_dragged_in_jupyterlab_is_pinned_in_the_kernel(lab):
    with lab.notebook("move", LAB_CELLS) as nb:
        # 300 points settle within a second: the run may send its last new positions
        # before the view exists (later frames repeat them), so one drawn frame is all
        # there may be.
        nb.wait_attr(ROOT, "data-frame", "(v) => Number(v) >= 1", what="a frame drawn")
        nb.wait_py("ex.iteration > 50", what="the run under way")
        nb.locator('button[data-action="pause"]').click()
        nb.wait_py("ex.status == 'paused'", what="the run paused")
        frame = shown_frame(nb)
        shown = np.array(nb.py_value("decode_positions(ex._positions).tolist()"))
        box = nb.locator(f"{ROOT} canvas.nbembed-canvas").bounding_box()
        aspect = box["width"] / box["height"]
        pixels = np.column_stack([box["x"] + (shown[:, 0] / aspect + 1) / 2 * box["width"],
                                  box["y"] + (1 - shown[:, 1]) / 2 * box["height"]])
        gaps = np.linalg.norm(pixels[:, None] - pixels[None], axis=-1)
        np.fill_diagonal(gaps, np.inf)
        i = int(np.argmax(gaps.min(axis=1)))

        nb.locator('button[data-action="move"]').click()
        nb.wait_attr(ROOT, "data-mode", "(v) => v === 'move'", what="move mode on")
        target = (box["x"] + 0.1 * box["width"], box["y"] + 0.1 * box["height"])
        nb.page.mouse.move(*pixels[i])
        nb.page.mouse.down()
        nb.page.mouse.move(*target, steps=8)
        nb.page.mouse.up()
        nb.wait_py(f"{i} in ex.pinned and ex.run is not None and {i} in ex.run.pinned",
                   what="the dropped point pinned in the kernel")
        dropped_at = np.array([((target[0] - box["x"]) / box["width"] * 2 - 1) * aspect,
                               1 - (target[1] - box["y"]) / box["height"] * 2])
        expected = nb.py_value(f"(ex._display_maps[{frame}].center + "
                               f"np.array({dropped_at.tolist()}) / "
                               f"ex._display_maps[{frame}].scale).tolist()")
        pixel = nb.py_value(f"3 / {box['height']} / ex._display_maps[{frame}].scale")
        np.testing.assert_allclose(nb.py_value(f"ex.embedding[{i}].tolist()"), expected,
                                   atol=pixel)  # within 1.5 pixels

        # Resumed, the map re-settles around the pinned point, which stays.
        at = nb.py_value(f"ex.embedding[{i}].tolist()")
        before = nb.py_value("ex.iteration")
        nb.locator('button[data-action="resume"]').click()
        nb.wait_py(f"ex.iteration > {before} + 20", what="the run going on")
        assert nb.py_value(f"ex.embedding[{i}].tolist()") == at
        nb.wait_attr(ROOT, "data-pins-drawn", "(v) => v === '1'", what="the pin drawn")
