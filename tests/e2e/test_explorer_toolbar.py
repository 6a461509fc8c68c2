"""The toolbar's files and search in a real browser: Export and Import of
annotations, a PNG of the view, the search box, and the colour bar.

Runs the built module in the bare fake-model page (see test_explorer_page.py);
custom messages are carried between the page and the Python widget by hand,
as the kernel would.
"""

import io
import json
import pathlib

import numpy as np
import pytest

from nbembed import Annotations

from .test_explorer_page import ROOT, mount_explorer, three_clusters


@pytest.fixture
def explorer():
    from nbembed.widget import Explorer

    Y, clusters = three_clusters()
    ann = Annotations(len(Y), class_names=["left"])
    ann.set_labels(clusters[0], 0)
    ex = Explorer(Y, method="precomputed", autostart=False, annotations=ann,
                  hover_text=[f"item {i}" for i in range(len(Y))],
                  data={"height": Y[:, 1].astype(float)})
    ex.wait(timeout=30)
    replies = []
    ex.send = lambda content, buffers=None: replies.append(content)
    yield ex, clusters, replies
    ex.close()


def click(page, action):
    page.locator(f'{ROOT} button[data-action="{action}"]').click()


def test_export_then_import_round_trips_and_a_bad_file_changes_nothing(widget_page, explorer,
                                                                       tmp_path):
    ex, (left, middle, right), replies = explorer
    page = widget_page.page
    mount_explorer(widget_page, ex)

    click(page, "export")
    assert widget_page.commands_to_python(ex) == [{"type": "export_annotations"}]
    (reply,) = replies
    with page.expect_download() as info:
        page.evaluate("(content) => window.harness.fake.customFromPython(content, [])", reply)
    download = info.value
    assert download.suggested_filename == "annotations.json"
    saved = Annotations.from_json(pathlib.Path(download.path()).read_text(encoding="utf-8"))
    assert saved.to_json() == ex.annotations.to_json()

    # Import other annotations of the same points: merged, one Undo reverts it.
    other = Annotations(ex.annotations.n_samples, class_names=["middle"])
    other.add_must_link(middle)
    good = tmp_path / "good.json"
    good.write_text(other.to_json())
    page.locator(f'{ROOT} input[data-role="import-file"]').set_input_files(str(good))
    widget_page.wait_for_command()
    widget_page.commands_to_python(ex)
    assert ex.annotations.class_names == ["left", "middle"]
    assert ex.annotation_summary == f"{len(left)} labelled · 1 must-link group"

    before = ex.annotations.to_json()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "something else"}))
    page.locator(f'{ROOT} input[data-role="import-file"]').set_input_files(str(bad))
    widget_page.wait_for_command()
    widget_page.commands_to_python(ex)
    assert ex.annotations.to_json() == before
    assert "cannot read annotations" in ex.notice
    widget_page.from_python(ex, ["notice"])
    page.wait_for_function(f"""() => document.querySelector('{ROOT} [data-role="notice"]')
                               .textContent.includes('cannot read annotations')""")
    ex.undo()
    assert ex.annotation_summary == f"{len(left)} labelled"
    assert widget_page.errors == []


def test_png_of_the_view_holds_the_points_and_the_marks(widget_page, explorer):
    from PIL import Image

    ex, (left, middle, right), _ = explorer
    ex.annotations.add_cannot_link(middle[:5], right[:5])
    ex.update_annotations()
    page = widget_page.page
    mount_explorer(widget_page, ex)
    widget_page.wait_attr(ROOT, "data-marks-drawn", "(v) => Number(v) > 0", "marks drawn")
    with page.expect_download() as info:
        click(page, "png")
    download = info.value
    assert download.suggested_filename == "nbembed-explorer.png"
    data = pathlib.Path(download.path()).read_bytes()
    image = np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).astype(int)
    box = page.locator(f"{ROOT} canvas.nbembed-canvas").bounding_box()
    assert image.shape[1] >= box["width"] - 2  # device pixels, at least the CSS size
    # The blue of the labelled class, and the red cannot-link line of the marks layer.
    red = ((image[:, :, 0] > 150) & (image[:, :, 1] < 80) & (image[:, :, 2] < 80)).sum()
    blue = ((image[:, :, 2] > 150) & (image[:, :, 0] < 80)).sum()
    assert red > 50 and blue > 50, (red, blue)
    assert widget_page.errors == []


def test_search_selects_by_index_and_by_hover_text(widget_page, explorer):
    ex, _, _ = explorer
    page = widget_page.page
    mount_explorer(widget_page, ex)
    search = page.locator(f'{ROOT} input[data-role="search"]')
    search.fill("item 1")  # item 1, item 10..19, item 100..119
    search.press("Enter")
    widget_page.wait_attr(ROOT, "data-selected", "(v) => v === '31'", "31 matches")
    widget_page.to_python(ex)
    assert ex.selection.tolist() == [1] + list(range(10, 20)) + list(range(100, 120))
    search.fill("7, 3")
    search.press("Enter")
    widget_page.wait_attr(ROOT, "data-selected", "(v) => v === '2'", "two indices")
    widget_page.to_python(ex)
    assert ex.selection.tolist() == [3, 7]


def test_a_numeric_column_gets_a_colour_bar(widget_page, explorer):
    ex, _, _ = explorer
    page = widget_page.page
    mount_explorer(widget_page, ex)
    page.locator(f'{ROOT} select[data-role="color-by"]').select_option("height")
    widget_page.to_python(ex)
    assert ex.color_by == "height" and ex.legend_continuous
    widget_page.from_python(ex, ["legend", "legend_continuous", "palette", "_codes"])
    bar = page.locator(f'{ROOT} [data-role="colorbar"]')
    bar.wait_for(state="visible")
    assert "linear-gradient" in bar.locator(".nbembed-colorbar").get_attribute("style")
    assert page.locator(f"{ROOT} .nbembed-legend-entry").count() == 0
