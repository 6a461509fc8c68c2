"""What the user sees of annotations on the plot: outlines, links and the hover line.

Runs the built module in the bare fake-model page (see test_explorer_page.py).
"""

import numpy as np
import pytest

from nbembed import Annotations

from .test_explorer_page import ROOT, mount_explorer, three_clusters


@pytest.fixture
def annotated_explorer():
    from nbembed.widget import Explorer

    Y, (left, middle, right) = three_clusters()
    ann = Annotations(len(Y), class_names=["middle"])
    ann.set_labels(middle, 0)
    ann.add_must_link(left)
    ann.add_cannot_link(left, right)
    ex = Explorer(Y, method="precomputed", autostart=False, annotations=ann,
                  data={"x": Y[:, 0].astype(float)})
    ex.wait(timeout=30)
    yield ex, (left, middle, right)
    ex.close()


def painted_pixels(page, layer="nbembed-marks"):
    """How many pixels of a layer over the plot (the marks by default) are not transparent."""
    return page.evaluate(f"""() => {{
        const c = document.querySelector('{ROOT} canvas.{layer}');
        const data = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let k = 3; k < data.length; k += 4) n += data[k] > 0;
        return n;
    }}""")


def point_on_screen(page, ex, i):
    """Page pixel of point i, under the plot's initial camera."""
    from nbembed.widget.traits import decode_positions

    x, y = map(float, decode_positions(ex._positions)[i])
    box = page.locator(f"{ROOT} canvas.nbembed-canvas").bounding_box()
    aspect = box["width"] / box["height"]
    return (box["x"] + (x / aspect + 1) / 2 * box["width"],
            box["y"] + (1 - y) / 2 * box["height"])


def test_constraints_are_drawn_toggled_described_and_undone(widget_page, annotated_explorer):
    ex, (left, middle, right) = annotated_explorer
    page = widget_page.page
    mount_explorer(widget_page, ex)
    # Coloured by label: one group's links and one cannot-link line; the colour says
    # which points are labelled, so they get no outline.
    widget_page.wait_attr(ROOT, "data-marks-drawn", "(v) => v === '2'",
                          "the marks of a group and a cannot-link")
    assert painted_pixels(page) > 500

    page.mouse.move(*point_on_screen(page, ex, int(left[len(left) // 2])))
    tooltip = page.locator(f"{ROOT} .nbembed-tooltip")
    tooltip.wait_for(state="visible")
    assert "must-link group 1 · cannot-link 1 (A)" in tooltip.inner_text()
    page.mouse.move(*point_on_screen(page, ex, int(middle[0])))
    page.wait_for_function(f"""() => document.querySelector('{ROOT} .nbembed-tooltip')
                               .textContent.includes('middle · labelled')""")

    # Coloured by something else, each labelled point is outlined and named.
    ex.color_by = "x"
    widget_page.from_python(ex, ["color_by", "_codes", "palette", "legend", "legend_continuous"])
    widget_page.wait_attr(ROOT, "data-marks-drawn", f"(v) => v === '{1 + len(middle) + 1}'",
                          "the marks of 40 labels, a group and a cannot-link")
    page.mouse.move(*point_on_screen(page, ex, int(left[0])))
    page.mouse.move(*point_on_screen(page, ex, int(middle[0])))
    page.wait_for_function(f"""() => document.querySelector('{ROOT} .nbembed-tooltip')
                               .textContent.includes('label middle')""")

    checkbox = page.locator(f'{ROOT} input[data-role="show-marks"]')
    checkbox.uncheck()
    widget_page.wait_attr(ROOT, "data-marks-drawn", "(v) => v === '0'", "marks hidden")
    assert painted_pixels(page) == 0
    checkbox.check()
    widget_page.wait_attr(ROOT, "data-marks-drawn", "(v) => v === '42'", "marks shown again")

    ex.apply("must_link", middle[:5])
    ex.undo()
    ex.annotations.undo()  # the cannot-link, made before the Explorer
    ex.update_annotations()
    widget_page.from_python(ex, ["_marks"])
    widget_page.wait_attr(ROOT, "data-marks-drawn", "(v) => v === '41'",
                          "the cannot-link line gone after undo")
    assert widget_page.errors == []


def test_marks_follow_pan_and_zoom(widget_page, annotated_explorer):
    ex, _ = annotated_explorer
    page = widget_page.page
    mount_explorer(widget_page, ex)
    widget_page.wait_attr(ROOT, "data-marks-drawn", "(v) => Number(v) > 0", "marks drawn")
    before = page.locator(f"{ROOT} canvas.nbembed-marks").screenshot()
    box = page.locator(f"{ROOT} .nbembed-plot").bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.3, box["y"] + box["height"] * 0.5)
    page.mouse.wheel(0, -400)
    page.wait_for_timeout(300)
    after = page.locator(f"{ROOT} canvas.nbembed-marks").screenshot()
    assert before != after
    assert np.isfinite(painted_pixels(page))
