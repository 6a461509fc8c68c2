"""The Explorer's layout from 600 px wide to a full screen, in a real browser.

At every size the plot must fill its space and show every point: the lasso
around the whole plot must select all of them. Runs the built module in the
bare fake-model page (see test_explorer_page.py).
"""

import pytest

from .conftest import draw_lasso
from .test_explorer_page import ROOT, explorer_on_clusters, mount_explorer  # noqa: F401

WHOLE_PLOT = [(0.005, 0.005), (0.995, 0.005), (0.995, 0.995), (0.005, 0.995)]


def mount_full_width(widget_page, ex):
    """Mount the Explorer in the page's host, made as wide as the window (the
    harness fixes it at 960 px), as a notebook's output area is."""
    mount_explorer(widget_page, ex)
    widget_page.page.evaluate("() => { document.getElementById('host').style.width = 'auto'; }")


def lasso_everything(widget_page, ex):
    page = widget_page.page
    page.locator(f'{ROOT} button[data-action="clear-selection"]').click()
    widget_page.wait_attr(ROOT, "data-selected", "(v) => v === '0'", "nothing selected")
    box = page.locator(f"{ROOT} .nbembed-plot").bounding_box()
    draw_lasso(page, box, WHOLE_PLOT, modifiers=("Shift",))
    widget_page.wait_attr(ROOT, "data-selected", "(v) => Number(v) > 0", "a selection")
    widget_page.to_python(ex)
    return len(ex.selection)


def plot_box(page):
    return page.locator(f"{ROOT} .nbembed-plot").bounding_box()


@pytest.mark.parametrize("size", [(600, 1200), (600, 700), (1920, 1080)],
                         ids=["narrow-tall", "narrow", "full-hd"])
def test_every_point_is_in_view_at_any_size(widget_page, explorer_on_clusters, size):
    explorer = explorer_on_clusters[0]
    page = widget_page.page
    page.set_viewport_size({"width": size[0], "height": size[1]})
    mount_full_width(widget_page, explorer)
    narrow = size[0] < 760
    widget_page.wait_attr(ROOT, "data-layout", f"(v) => v === '{'narrow' if narrow else 'wide'}'",
                          "the layout for this width")
    box = plot_box(page)
    # The plot takes the whole width, less the side panel when there is room for it.
    assert box["width"] >= size[0] - (40 if narrow else 280), box
    assert box["height"] >= 320
    side = page.locator(f"{ROOT} .nbembed-side").bounding_box()
    assert (side["y"] >= box["y"] + box["height"]) == narrow
    assert lasso_everything(widget_page, explorer) == 120
    assert widget_page.errors == []


def test_resizing_refits_the_plot(widget_page, explorer_on_clusters):
    explorer = explorer_on_clusters[0]
    page = widget_page.page
    page.set_viewport_size({"width": 1400, "height": 900})
    mount_full_width(widget_page, explorer)
    wide = plot_box(page)
    page.set_viewport_size({"width": 600, "height": 1200})
    widget_page.wait_attr(ROOT, "data-layout", "(v) => v === 'narrow'", "the narrow layout")
    page.wait_for_function(f"""() => document.querySelector('{ROOT} canvas.nbembed-canvas')
                               .getBoundingClientRect().width < {wide['width'] - 100}""")
    canvas = page.locator(f"{ROOT} canvas.nbembed-canvas").bounding_box()
    assert canvas["width"] <= 600 and canvas["height"] > canvas["width"]
    assert lasso_everything(widget_page, explorer) == 120
    page.set_viewport_size({"width": 1920, "height": 1080})
    widget_page.wait_attr(ROOT, "data-layout", "(v) => v === 'wide'", "the wide layout")
    page.wait_for_function(f"""() => document.querySelector('{ROOT} canvas.nbembed-canvas')
                               .getBoundingClientRect().width > {wide['width']}""")
    assert lasso_everything(widget_page, explorer) == 120
    assert widget_page.errors == []
