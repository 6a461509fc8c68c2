"""Teaching mode in the browser: the read-outs panel and the Step control.

Runs the built module in the bare fake-model page (see test_explorer_page.py),
with a fake run that only drifts, so no kernel is compiled.
"""

import numpy as np
import pytest

from test_widget import FakeMethod, wait_for

from .test_explorer_marks import painted_pixels, point_on_screen
from .test_explorer_page import ROOT, mount_explorer, three_clusters


def readout(page, key):
    return page.locator(f'{ROOT} [data-readout="{key}"]').inner_text()


def test_readouts_follow_the_run(widget_page):
    from nbembed.widget import Explorer

    Y, (left, middle, right) = three_clusters()
    y = np.full(len(Y), -1)
    y[left[:10]], y[right[:10]] = 0, 1
    ex = Explorer(Y, method=FakeMethod(seconds_per_iteration=1e-3), labels=y)
    try:
        assert ex.wait(iteration=1, timeout=30)
        mount_explorer(widget_page, ex)
        page = widget_page.page
        seen = []
        for _ in range(2):
            previous = ex.quality.get("iteration", 0)
            assert wait_for(lambda: ex.quality.get("iteration", 0) > previous)
            # Read before sending: the read-outs may move on meanwhile, never back.
            it = ex.quality["iteration"]
            widget_page.from_python(ex, ["quality"])
            widget_page.wait_attr(ROOT, "data-quality-iteration", f"(v) => Number(v) >= {it}",
                                  f"the read-outs of iteration {it} or later")
            seen.append(it)
            for key in ("trustworthiness", "continuity", "knn_accuracy"):
                assert 0.0 <= float(readout(page, key)) <= 1.0
        assert seen[1] > seen[0]
        points = page.locator(f'{ROOT} [data-sparkline="continuity"] polyline').get_attribute(
            "points")
        assert len(points.split()) >= 2
    finally:
        ex.close()


def test_step_button_advances_exactly_the_asked_iterations(widget_page):
    from nbembed.widget import Explorer

    Y, _ = three_clusters()
    ex = Explorer(Y, method=FakeMethod(), autostart=False)
    try:
        ex.wait(timeout=30)
        mount_explorer(widget_page, ex)
        page = widget_page.page
        button = page.locator(f'{ROOT} button[data-action="step"]')
        widget_page.from_python(ex, ["status"])
        start = ex.run.iteration
        button.click()
        assert widget_page.commands_to_python(ex) == [{"type": "step", "n": 1}]
        ex.wait(timeout=30)
        assert ex.run.iteration == start + 1
        page.locator(f'{ROOT} input[data-role="step-count"]').fill("4")
        button.click()
        widget_page.commands_to_python(ex)
        ex.wait(timeout=30)
        assert ex.run.iteration == start + 5
        assert wait_for(lambda: ex.iteration == start + 5)
        widget_page.from_python(ex, ["iteration", "status"])
        widget_page.wait_attr(ROOT, "data-iteration", f"(v) => v === '{start + 5}'",
                              "the iteration after two steps")
        assert ex.status == "paused"
    finally:
        ex.close()


@pytest.fixture
def paused_hssne_on_clusters():
    from nbembed import HSSNE
    from nbembed.widget import Explorer

    Y, clusters = three_clusters()
    ex = Explorer(Y, method=HSSNE(alpha=1.0, max_iter=100, random_state=0), autostart=False)
    ex.wait(timeout=120)
    yield ex, clusters
    ex.close()


def test_force_arrows_appear_for_a_selected_point(widget_page, paused_hssne_on_clusters):
    ex, (left, _, _) = paused_hssne_on_clusters
    ex.selection = [int(left[0])]
    mount_explorer(widget_page, ex)
    page = widget_page.page
    page.locator(f'{ROOT} input[data-role="show-forces"]').check()
    widget_page.to_python(ex)
    assert ex.show_forces
    assert wait_for(lambda: ex.forces.get("points") == [int(left[0])])
    # a term that does not push (no must-links: that term is zero) gets no arrow
    n_terms = sum(any(v != 0 for v in term["vectors"][0]) for term in ex.forces["terms"])
    assert n_terms >= 2
    widget_page.from_python(ex, ["forces", "phase"])
    widget_page.wait_attr(ROOT, "data-arrows-drawn", f"(v) => v === '{n_terms}'",
                          f"{n_terms} arrows, one per non-zero force term")
    legend = page.locator(f'{ROOT} [data-role="forces-legend"]').inner_text()
    assert all(term["label"] in legend for term in ex.forces["terms"])
    assert page.locator(f'{ROOT} [data-role="phase"]').inner_text() == "(early exaggeration)"
    assert painted_pixels(page, "nbembed-arrows") > 50


def test_hovering_draws_input_and_output_neighbours(widget_page, paused_hssne_on_clusters):
    ex, (_, middle, _) = paused_hssne_on_clusters
    mount_explorer(widget_page, ex)
    page = widget_page.page
    page.locator(f'{ROOT} input[data-role="show-neighbours"]').check()
    i = int(middle[len(middle) // 2])
    page.mouse.move(*point_on_screen(page, ex, i))
    page.wait_for_function("() => window.harness.fake.wire.some((m) => 'hovered' in m)")
    widget_page.to_python(ex)
    assert ex.show_neighbours and ex.hovered == i
    assert wait_for(lambda: ex.neighbours.get("point") == i)
    n_lines = len(ex.neighbours["input"]) + len(ex.neighbours["output"])
    assert n_lines == 20
    widget_page.from_python(ex, ["neighbours"])
    widget_page.wait_attr(ROOT, "data-neighbours-drawn", f"(v) => v === '{n_lines}'",
                          "lines to 10 input and 10 output neighbours")
    legend = page.locator(f'{ROOT} [data-role="forces-legend"]').inner_text()
    assert "input neighbours" in legend and "output neighbours" in legend
