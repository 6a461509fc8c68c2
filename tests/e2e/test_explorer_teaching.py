"""Teaching mode in the browser: the read-outs panel and the Step control.

Runs the built module in the bare fake-model page (see test_explorer_page.py),
with a fake run that only drifts, so no kernel is compiled.
"""

import numpy as np

from test_widget import FakeMethod, wait_for

from .test_explorer_page import ROOT, mount_explorer, three_clusters


def readout(page, key):
    return page.locator(f'{ROOT} [data-readout="{key}"]').inner_text()


def send_messages(widget_page, ex):
    """Hand the custom messages the page sent to the widget, as the kernel would."""
    sent = widget_page.page.evaluate("() => window.harness.fake.sent.splice(0)")
    for message in sent:
        ex._on_browser_message(ex, message["content"], [])
    return [m["content"] for m in sent]


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
            widget_page.from_python(ex, ["quality"])
            it = ex.quality["iteration"]
            widget_page.wait_attr(ROOT, "data-quality-iteration", f"(v) => v === '{it}'",
                                  f"the read-outs of iteration {it}")
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
        assert send_messages(widget_page, ex) == [{"type": "step", "n": 1}]
        ex.wait(timeout=30)
        assert ex.run.iteration == start + 1
        page.locator(f'{ROOT} input[data-role="step-count"]').fill("4")
        button.click()
        send_messages(widget_page, ex)
        ex.wait(timeout=30)
        assert ex.run.iteration == start + 5
        assert wait_for(lambda: ex.iteration == start + 5)
        widget_page.from_python(ex, ["iteration", "status"])
        widget_page.wait_attr(ROOT, "data-iteration", f"(v) => v === '{start + 5}'",
                              "the iteration after two steps")
        assert ex.status == "paused"
    finally:
        ex.close()
