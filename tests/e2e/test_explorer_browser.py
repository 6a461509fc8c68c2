"""The Explorer widget in JupyterLab, driven by a headless Chromium.

The first test checks the harness itself with a tiny inline widget, so a
failure there points at the browser / server set-up and not at the Explorer.
"""

import contextlib
import json

import pytest

from .conftest import draw_lasso

SMOKE_WIDGET = '''
import anywidget
import traitlets


class Counter(anywidget.AnyWidget):
    _esm = """
    function render({ model, el }) {
      const button = document.createElement("button");
      button.className = "smoke-counter";
      const show = () => {
        button.textContent = `count ${model.get("value")}`;
        button.dataset.value = model.get("value");
        button.dataset.echo = model.get("echo");
      };
      button.addEventListener("click", () => {
        model.set("value", model.get("value") + 1);
        model.save_changes();
      });
      model.on("change:value", show);
      model.on("change:echo", show);
      show();
      el.appendChild(button);
      return () => { model.off("change:value", show); model.off("change:echo", show); };
    }
    export default { render };
    """
    value = traitlets.Int(0).tag(sync=True)
    echo = traitlets.Int(0).tag(sync=True)


counter = Counter(value=3)
# Only the kernel can write echo: seeing it in the page proves the round trip.
counter.observe(lambda change: setattr(counter, "echo", 10 * change["new"]), "value")
counter
'''


def test_harness_inline_anywidget_round_trip(lab):
    with lab.notebook("smoke", [SMOKE_WIDGET]) as nb:
        nb.wait_attr(".smoke-counter", "data-value", "(v) => v === '3'",
                     what="the inline widget to render its initial value")
        nb.locator(".smoke-counter").click()
        nb.wait_attr(".smoke-counter", "data-echo", "(v) => v === '40'",
                     what="the kernel's observer to answer the browser's click")
        assert nb.py_value("counter.value") == 4
        assert "count 4" in nb.cell_output(0)


# ------------------------------------------------------------------ Explorer

N_POINTS = 500
ROOT = ".nbembed-explorer"


def explorer_cells(n_points, autostart, schedule=""):
    """An Explorer on the first ``n_points`` digits with named classes and no labels yet."""
    return [f"""
from sklearn.datasets import load_digits
from nbembed import HSSNE
from nbembed.widget import Explorer

X = load_digits().data[:{n_points}]
""", f"""
# A schedule far longer than any test and no convergence stop, so frames keep coming.
ex = Explorer(X, method=HSSNE(alpha=1.0, max_iter=100_000_000, tol=0, random_state=0{schedule}),
              class_names=[str(k) for k in range(10)], autostart={autostart})
ex
"""]


#: Lasso polygons as fractions of the plot box: two disjoint strips and a
#: large central area.
LEFT_STRIP = [(0.05, 0.05), (0.45, 0.05), (0.45, 0.95), (0.05, 0.95)]
RIGHT_STRIP = [(0.55, 0.05), (0.95, 0.05), (0.95, 0.95), (0.55, 0.95)]
CENTER = [(0.15, 0.15), (0.85, 0.15), (0.85, 0.85), (0.15, 0.85)]


@contextlib.contextmanager
def explorer(lab, stem, n_points=N_POINTS, autostart=True, schedule=""):
    """An Explorer on digits, drawn at least once.

    Without ``autostart`` the run is prepared and shown but never stepped:
    annotation scenarios need no optimizer (nor its compilation).
    """
    with lab.notebook(stem, explorer_cells(n_points, autostart, schedule)) as nb:
        nb.wait_attr(ROOT, "data-n", f"(v) => v === '{n_points}'",
                     what=f"the Explorer to render with data-n = {n_points}")
        nb.wait_attr(ROOT, "data-frame", "(v) => Number(v) >= 1",
                     what="the Explorer to draw its first frame (data-frame >= 1)")
        yield nb


def root_int(nb, name):
    return int(nb.attr(ROOT, name))


def click(nb, action):
    nb.locator(f'button[data-action="{action}"]').click()


def wait_paused(nb):
    nb.wait_attr(ROOT, "data-status", "(v) => v === 'paused'", what="data-status = paused")
    nb.wait_py("ex.status == 'paused'", what="ex.status = 'paused' in Python")


def lasso_select(nb, polygon, n_points=N_POINTS):
    """Lasso ``polygon`` with the lasso button; return the indices Python received
    (checked to be distinct points of the ``n_points`` shown)."""
    button = nb.locator('button[data-action="lasso"]')
    if button.get_attribute("aria-pressed") != "true":
        button.click()
        nb.wait_attr('button[data-action="lasso"]', "aria-pressed", "(v) => v === 'true'",
                     what="the lasso button to report aria-pressed = true")
    before = nb.py_value("ex.selection.tolist()")
    plot = nb.locator(".nbembed-plot")
    plot.scroll_into_view_if_needed()
    draw_lasso(nb.page, plot.bounding_box(), polygon)
    count = int(nb.wait_attr(ROOT, "data-selected", "(v) => Number(v) > 0",
                             what="data-selected > 0 after drawing a lasso"))
    nb.wait_py(f"len(ex.selection) == {count} and ex.selection.tolist() != {before}",
               what=f"ex.selection in Python to hold the {count} lassoed points")
    selection = nb.py_value("sorted(ex.selection.tolist())")
    assert len(set(selection)) == count and all(0 <= i < n_points for i in selection)
    return selection


def set_mode(nb, mode):
    nb.locator('select[data-role="mode"]').select_option(mode)


def wait_annotation_count(nb, count, steps=None):
    """Wait until the page shows ``count`` annotations; check Python made
    ``steps`` undo steps (one per annotation unless a new class was made)."""
    nb.wait_js("""([selector, count]) => {
      const el = document.querySelector(selector);
      return el && new RegExp('(^|\\\\D)' + count + '(\\\\D|$)').test(el.textContent);
    }""", [f'{nb.scope} [data-role="annotation-count"]', count],
               what=f"[data-role=annotation-count] to show {count}")
    assert nb.py_value("len(ex.annotations)") == (count if steps is None else steps)


@pytest.fixture(scope="class")
def live_run(lab):
    """A running Explorer shared by the tests of :class:`TestLiveRun`, so the
    optimizer's compilation is paid once; a short early exaggeration lets the
    layout settle early."""
    with explorer(lab, "live-run", schedule=", early_exaggeration_iter=100") as nb:
        yield nb


def ensure_running(nb):
    if nb.attr(ROOT, "data-status") != "running":
        click(nb, "resume")
    nb.wait_attr(ROOT, "data-status", "(v) => v === 'running'", what="data-status = running")


# Every frame the widget pushes, with the run's alpha and positions at that moment.
RECORD_FRAMES = """
frames = []
def record_frame(change):
    frames.append((change["new"], float(ex.run.get_params()["alpha"]), ex.embedding))
ex.observe(record_frame, names="iteration")
"""

CONTINUITY = """
import json
import numpy as np
ex.unobserve(record_frame, names="iteration")
first_new = next(k for k, f in enumerate(frames) if f[1] == {alpha})
(it_before, alpha_before, Y_before), (it_after, _, Y_after) = frames[first_new - 1], frames[first_new]
extent = float(np.ptp(Y_before, axis=0).max())
shift = float(np.linalg.norm(Y_after - Y_before, axis=1).max())
print(json.dumps(dict(it_before=it_before, it_after=it_after, alpha_before=alpha_before,
                      relative_shift=shift / extent)))
"""


class TestLiveRun:
    """The optimizer streams frames, pauses, resumes and takes a new alpha."""

    def test_frames_stream_and_pause_resume(self, live_run):
        nb = live_run
        ensure_running(nb)
        # 500 points settle within seconds at thousands of iterations a second, and a
        # restart (same seed) settles on the same picture again: on a busy machine before
        # the browser's next screenshot. So the restart is checked in Python (a new run)
        # and by frames streaming in, and the pixels on a change that stays.
        click(nb, "pause")
        wait_paused(nb)
        frame, version = root_int(nb, "data-frame"), root_int(nb, "data-version")
        old_run = nb.py_value("id(ex.run)")
        click(nb, "restart")
        nb.wait_py(f"ex.run is not None and id(ex.run) != {old_run}",
                   what="a new run after clicking restart")
        nb.wait_attr(ROOT, "data-frame", f"(v) => Number(v) >= {frame + 5}",
                     what="five more frames drawn while the optimizer runs")
        nb.wait_attr(ROOT, "data-version", f"(v) => Number(v) >= {version + 5}",
                     what="five more position updates received from Python")

        click(nb, "pause")
        wait_paused(nb)
        plot = nb.locator(".nbembed-plot")
        plot.scroll_into_view_if_needed()
        first = plot.screenshot()
        # A point pinned far outside the map widens the view: every pixel moves.
        nb.py("_Y = ex.embedding\nex.pin([0], [_Y.max(axis=0) + (_Y.max(axis=0) - _Y.min(axis=0))])")
        second = plot.screenshot()
        for _ in range(100):  # until the frame with the pin is drawn
            if second != first:
                break
            nb.page.wait_for_timeout(200)
            second = plot.screenshot()
        assert first != second, "the plot's pixels did not change after a point moved"
        nb.py("ex.unpin()")

        click(nb, "pause")
        wait_paused(nb)
        paused_at = nb.py_value("ex.run.iteration")
        nb.page.wait_for_timeout(300)  # nothing to await: checks that nothing happens
        assert nb.py_value("ex.run.iteration") == paused_at, "the run advanced while paused"

        click(nb, "resume")
        nb.wait_attr(ROOT, "data-status", "(v) => v === 'running'",
                     what="data-status = running after clicking resume")
        nb.wait_attr(ROOT, "data-iteration", f"(v) => Number(v) > {paused_at}",
                     what=f"data-iteration to pass {paused_at} after resuming")
        shown, attribute = nb.locator(ROOT).evaluate(
            "(root) => [root.querySelector('[data-role=\"iteration\"]').textContent,"
            " root.dataset.iteration]")
        assert shown.strip() == attribute, (shown, attribute)
        assert nb.py_value("ex.error") == ""

    def test_alpha_slider_changes_the_run_without_a_jump(self, live_run):
        nb = live_run
        ensure_running(nb)
        slider = nb.locator('input[type=range][data-param="alpha"]')
        assert (slider.get_attribute("min"), slider.get_attribute("max")) == ("0", "3")
        assert float(slider.get_attribute("step")) == 0.05
        assert nb.locator('input[type=range][data-param="rho"]').count() == 1
        nb.wait_attr(ROOT, "data-iteration", "(v) => Number(v) >= 250",
                     what="the run to pass iteration 250")
        nb.py(RECORD_FRAMES)
        nb.wait_py("len(frames) >= 2", what="the frame recorder to see two frames")

        slider.evaluate("""(s) => {
          s.value = '0.8';
          s.dispatchEvent(new Event('input', {bubbles: true}));
          s.dispatchEvent(new Event('change', {bubbles: true}));
        }""")
        nb.wait_js("(s) => /0\\.8/.test(document.querySelector(s).textContent)",
                   f'{nb.scope} [data-param-value="alpha"]',
                   what="the alpha value label to show 0.8")
        nb.wait_py("ex.run.get_params()['alpha'] == 0.8",
                   what="the run's alpha to become 0.8 in Python")
        assert nb.py_value("ex.params['alpha']") == 0.8
        nb.wait_py("any(f[1] == 0.8 for f in frames)",
                   what="a frame drawn with alpha = 0.8")
        jump = json.loads(nb.py(CONTINUITY.format(alpha=0.8)).strip().splitlines()[-1])
        assert jump["alpha_before"] == 1.0
        # A restart would reset the iteration count and move points by about
        # half the layout's extent; continuing from iteration 250 with
        # alpha = 0.8 moved them by 1-5% of it over 10-100 iterations
        # (measured without the widget).
        assert jump["it_after"] > jump["it_before"] >= 250, jump
        assert jump["relative_shift"] < 0.2, jump
        nb.wait_attr(ROOT, "data-iteration", f"(v) => Number(v) > {jump['it_after']}",
                     what="frames to keep coming after the change")


def test_lasso_must_link_reaches_the_kernel(lab):
    with explorer(lab, "must-link", autostart=False) as nb:
        wait_paused(nb)
        selection = lasso_select(nb, CENTER)
        assert len(selection) >= 2
        set_mode(nb, "must_link")
        click(nb, "apply")
        wait_annotation_count(nb, 1)
        assert nb.py_value("[g.tolist() for g in ex.annotations.must_link_groups()]") == \
            [selection]
        assert nb.py_value("int(ex.annotations.labelled_mask().sum())") == 0


def test_cannot_link_joins_two_selections(lab):
    with explorer(lab, "cannot-link", autostart=False) as nb:
        wait_paused(nb)
        set_mode(nb, "cannot_link")
        first = lasso_select(nb, LEFT_STRIP)
        click(nb, "apply")
        nb.wait_attr(ROOT, "data-pending-a", f"(v) => v === '{len(first)}'",
                     what=f"data-pending-a = {len(first)} (selection A) after the first apply")
        assert nb.py_value("len(ex.annotations)") == 0, "the first apply must only store A"
        second = lasso_select(nb, RIGHT_STRIP)
        assert not set(first) & set(second)
        click(nb, "apply")
        wait_annotation_count(nb, 1)
        pairs = nb.py_value("ex.annotations.cannot_link_pairs().tolist()")
        expected = sorted([min(a, b), max(a, b)] for a in first for b in second)
        assert pairs == expected


def test_soft_label_then_undo_removes_only_the_last_annotation(lab):
    with explorer(lab, "soft-label", autostart=False) as nb:
        wait_paused(nb)
        selection = lasso_select(nb, CENTER)
        set_mode(nb, "soft_label")
        options = nb.locator('select[data-role="class"]').evaluate(
            "(s) => [...s.options].map((o) => [o.value, o.textContent.trim()])")
        assert "__new__" in [value for value, _ in options]
        chosen = [value for value, text in options if text == "7" or value == "7"]
        assert chosen, f"no option for class '7' among {options}"
        nb.locator('select[data-role="class"]').select_option(chosen[0])
        confidence = nb.locator('input[data-role="confidence"]')
        confidence.fill("0.7")
        confidence.dispatch_event("change")
        click(nb, "apply")
        wait_annotation_count(nb, 1)
        labels = nb.py_value(f"ex.annotations.to_labels()[{selection}].tolist()")
        names = nb.py_value("ex.annotations.class_names")
        assert {names[k] for k in labels} == {"7"}
        assert nb.py_value(f"ex.annotations.confidences()[{selection}].tolist()") == \
            [0.7] * len(selection)
        assert nb.py_value("int(ex.annotations.labelled_mask().sum())") == len(selection)

        set_mode(nb, "must_link")
        click(nb, "apply")
        wait_annotation_count(nb, 2)
        click(nb, "undo")
        wait_annotation_count(nb, 1)
        assert nb.py_value("ex.annotations.must_link_groups()") == []
        assert nb.py_value("int(ex.annotations.labelled_mask().sum())") == len(selection)

        # A new class: creating it and labelling with it are one annotation.
        set_mode(nb, "soft_label")
        nb.locator('select[data-role="class"]').select_option("__new__")
        nb.locator('input[data-role="new-class"]').fill("wing")
        confidence.fill("1")
        confidence.dispatch_event("change")
        click(nb, "apply")
        wait_annotation_count(nb, 2, steps=3)
        assert nb.py_value("ex.annotations.class_names")[-1] == "wing"
        labels = nb.py_value(f"ex.annotations.to_labels()[{selection}].tolist()")
        assert set(labels) == {len(names)}
