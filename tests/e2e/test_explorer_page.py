"""The Explorer's ES module in a bare page with a fake model (no Jupyter).

The page (fake_model.html) renders the module the Python widget would send
to JupyterLab (the built nbembed/widget/static/explorer.js), with the
widget's real initial state. Binary values reach the module as DataViews into
larger buffers and leave it the way JupyterLab puts them on the wire; what the
module sends is fed back to the Python widget with ``set_state``, as the
kernel would. This checks the codecs, lasso geometry and cleanup in seconds.
"""

import numpy as np
import pytest

from .conftest import draw_lasso

ROOT = ".nbembed-explorer"


# ------------------------------------------------------------------ harness

PROBE_ESM = """
function render({ model, el }) {
  const out = document.createElement("output");
  out.className = "probe";
  const show = () => {
    const view = model.get("values");
    const values = new Float32Array(view.buffer, view.byteOffset, view.byteLength / 4);
    out.dataset.values = Array.from(values).join(",");
    out.textContent = out.dataset.values;
  };
  out.addEventListener("click", () => {
    const reply = new Uint8Array(8);
    reply.set([1, 2, 3, 4, 5, 6, 7, 8]);
    model.set("reply", reply.subarray(0, 2));
    model.save_changes();
  });
  model.on("change:values", show);
  show();
  el.appendChild(out);
  return () => { model.off("change:values", show); out.remove(); };
}
export default { render };
"""


def probe_widget():
    import anywidget
    import traitlets

    class Probe(anywidget.AnyWidget):
        _esm = PROBE_ESM
        values = traitlets.Bytes().tag(sync=True)
        reply = traitlets.Bytes().tag(sync=True, from_json=lambda v, w: bytes(v))

    return Probe(values=np.array([1.5, -2.0, 3.0], dtype="<f4").tobytes())


def test_harness_buffers_travel_like_in_jupyterlab(widget_page):
    widget = probe_widget()
    widget_page.mount(widget, pad=8)
    widget_page.wait_attr(".probe", "data-values", "(v) => v === '1.5,-2,3'",
                          "the probe to decode a padded buffer")
    widget.values = np.array([4.0, 5.0], dtype="<f4").tobytes()
    widget_page.from_python(widget, ["values"])
    widget_page.wait_attr(".probe", "data-values", "(v) => v === '4,5'",
                          "the probe to redraw after a change from Python")
    widget_page.page.locator(".probe").click()
    widget_page.to_python(widget)
    # A subarray goes out as its whole buffer, as JupyterLab sends it.
    assert widget.reply == bytes([1, 2, 3, 4, 5, 6, 7, 8])
    result = widget_page.page.evaluate("() => window.harness.unmount()")
    assert result["modelHandlers"] == 0 and result["childElements"] == 0


# ------------------------------------------------------------------ Explorer

CLUSTER = 40


def three_clusters():
    """Two tall clusters at x = -1 and x = +1 and a compact one in between.

    Returns the positions and the indices of the left, middle and right
    clusters. Whatever the plot's aspect ratio and y direction, the left
    and right clusters fill most of its height at about a quarter of its
    width from either side, and the middle one stays near its centre.
    """
    rng = np.random.default_rng(0)
    jitter = rng.uniform(-0.05, 0.05, size=(3, CLUSTER))
    left = np.column_stack([-1 + jitter[0], np.linspace(-1, 1, CLUSTER)])
    middle = np.column_stack([jitter[1], rng.uniform(-0.15, 0.15, CLUSTER)])
    right = np.column_stack([1 + jitter[2], np.linspace(1, -1, CLUSTER)])
    order = rng.permutation(3 * CLUSTER)  # clusters interleaved in index order
    Y = np.vstack([left, middle, right])[np.argsort(order)]
    clusters = [np.sort(order[k * CLUSTER:(k + 1) * CLUSTER]) for k in range(3)]
    return Y, clusters


#: Lasso polygons as fractions of the plot box (y down).
LEFT_HALF = [(0.02, 0.02), (0.45, 0.02), (0.45, 0.98), (0.02, 0.98)]
#: A U around the outer thirds: concave, its notch holds the middle cluster.
U_SHAPE = [(0.02, 0.02), (0.40, 0.02), (0.40, 0.80), (0.60, 0.80), (0.60, 0.02),
           (0.98, 0.02), (0.98, 0.98), (0.02, 0.98)]


@pytest.fixture
def explorer_on_clusters():
    from nbembed.widget import Explorer

    Y, clusters = three_clusters()
    ex = Explorer(Y, method="precomputed", autostart=False)
    ex.wait(timeout=30)
    yield ex, Y, clusters
    ex.close()


def mount_explorer(widget_page, ex, pad=8):
    widget_page.mount(ex, pad=pad)
    n = len(ex.embedding)
    widget_page.wait_attr(ROOT, "data-n", f"(v) => v === '{n}'",
                          f"the Explorer root with data-n = {n}")
    widget_page.wait_attr(ROOT, "data-frame", "(v) => Number(v) >= 1",
                          "the first frame drawn (data-frame >= 1)")


def lasso(widget_page, ex, polygon, *, with_button):
    """Lasso ``polygon``; return the selection Python holds after the page's messages."""
    page = widget_page.page
    if with_button:
        page.locator(f'{ROOT} button[data-action="lasso"]').click()
        widget_page.wait_attr(f'{ROOT} button[data-action="lasso"]', "aria-pressed",
                              "(v) => v === 'true'", "aria-pressed = true on the lasso button")
    box = page.locator(f"{ROOT} .nbembed-plot").bounding_box()
    draw_lasso(page, box, polygon, modifiers=() if with_button else ("Shift",))
    count = widget_page.wait_attr(ROOT, "data-selected", "(v) => Number(v) > 0",
                                  "data-selected > 0 after the lasso")
    widget_page.to_python(ex)
    selection = ex.selection.tolist()
    assert len(selection) == int(count), (count, selection)
    return selection


def decode_positions(ex):
    from nbembed.widget.traits import decode_positions

    return decode_positions(ex._positions)


@pytest.mark.parametrize("pad", [8, 3], ids=["aligned-offset", "unaligned-offset"])
def test_positions_decode_from_a_view_into_a_larger_buffer(widget_page, explorer_on_clusters,
                                                           pad):
    ex, _, (left, _, _) = explorer_on_clusters
    mount_explorer(widget_page, ex, pad=pad)
    assert widget_page.errors == []
    # Decoding from the start of the buffer instead would shift every
    # coordinate and read 0xff bytes (NaN), so the left cluster would not
    # be where the lasso is.
    assert lasso(widget_page, ex, LEFT_HALF, with_button=False) == left.tolist()


def test_concave_lasso_selects_exactly_the_points_inside(widget_page, explorer_on_clusters):
    ex, _, (left, middle, right) = explorer_on_clusters
    mount_explorer(widget_page, ex)
    selection = lasso(widget_page, ex, U_SHAPE, with_button=True)
    assert selection == sorted(left.tolist() + right.tolist())
    assert not set(selection) & set(middle.tolist())

    widget_page.page.locator(f'{ROOT} button[data-action="clear-selection"]').click()
    widget_page.wait_attr(ROOT, "data-selected", "(v) => v === '0'",
                          "data-selected = 0 after clear-selection")
    widget_page.to_python(ex)
    assert ex.selection.tolist() == []


def swap_and_draw(widget_page, ex, a, b):
    """Swap the clusters ``a`` and ``b`` (positions as the worker sends them) and wait
    until the page has drawn them."""
    from nbembed.widget.traits import encode_positions

    frame = int(widget_page.page.locator(ROOT).get_attribute("data-frame"))
    normalized = decode_positions(ex)
    swapped = normalized.copy()
    swapped[a], swapped[b] = normalized[b], normalized[a]
    ex._positions = encode_positions(swapped)
    widget_page.from_python(ex, ["_positions"])
    widget_page.wait_attr(ROOT, "data-frame", f"(v) => Number(v) > {frame}",
                          "a frame drawn with the new positions")


def test_new_positions_from_python_are_drawn_and_used(widget_page, explorer_on_clusters):
    ex, _, (left, middle, right) = explorer_on_clusters
    mount_explorer(widget_page, ex)
    version = int(widget_page.page.locator(ROOT).get_attribute("data-version"))
    swap_and_draw(widget_page, ex, left, middle)
    widget_page.wait_attr(ROOT, "data-version", f"(v) => Number(v) > {version}",
                          "data-version to count the new positions")
    assert lasso(widget_page, ex, U_SHAPE, with_button=True) == \
        sorted(middle.tolist() + right.tolist())


def test_hover_finds_the_points_after_new_colours_and_after_a_move(widget_page,
                                                                  explorer_on_clusters):
    """New colours keep the plot's spatial index (the points did not move); a move
    after them builds it again, or hovering would find the points where they were."""
    from nbembed.widget.traits import encode

    from .test_explorer_marks import point_on_screen

    ex, _, (left, middle, _) = explorer_on_clusters
    mount_explorer(widget_page, ex)
    page = widget_page.page
    root = page.locator(ROOT)
    tooltip = page.locator(f"{ROOT} .nbembed-tooltip-text")

    def hover(i):
        page.mouse.move(0, 0)
        page.mouse.move(*point_on_screen(page, ex, i))
        widget_page.wait_attr(f"{ROOT} .nbembed-tooltip", "hidden", "(v) => v === null",
                              f"the tooltip of point {i}")
        return tooltip.inner_text().split(" · ")[0]

    frame = int(root.get_attribute("data-frame"))
    ex._codes = encode(np.arange(len(ex.embedding)) % 3, np.uint16)
    widget_page.from_python(ex, ["_codes"])
    widget_page.wait_attr(ROOT, "data-frame", f"(v) => Number(v) > {frame}",
                          "a frame drawn with the new colours")
    i = int(left[len(left) // 2])
    assert hover(i) == f"#{i}"
    swap_and_draw(widget_page, ex, left, middle)
    j = int(middle[len(middle) // 2])
    assert hover(j) == f"#{j}"
    assert widget_page.errors == []


#: At least INDEX_IN_WORKER_FROM in js/src/scatter.js: a worker indexes the points.
N_CROWD = 60_000


def test_hover_on_a_large_map_finds_a_moved_point_once_its_index_is_built(widget_page):
    """From 50 000 points the plot draws new positions with the newest index a
    worker has built, which may be a frame behind; once the points stay put it
    draws them again with their own, and hovering finds the points where they are."""
    from nbembed.widget import Explorer

    from .test_explorer_marks import point_on_screen

    rng = np.random.default_rng(0)
    crowd = rng.normal([-0.5, 0.0], 0.1, size=(N_CROWD - 1, 2))
    Y = np.vstack([crowd, [[0.8, 0.8]]])  # the last point alone, top right
    ex = Explorer(Y, method="precomputed", autostart=False)
    try:
        ex.wait(timeout=60)
        mount_explorer(widget_page, ex)
        page = widget_page.page
        canvas = f"{ROOT} canvas.nbembed-canvas"
        widget_page.wait_attr(canvas, "data-index-worker", "(v) => v === 'running'",
                              "the worker's first index")
        page.evaluate(f"""() => {{
            const canvas = document.querySelector('{canvas}');
            window.indexStates = [];
            new MutationObserver(() => window.indexStates.push(canvas.dataset.index))
                .observe(canvas, {{attributes: true, attributeFilter: ['data-index']}});
        }}""")
        lonely, j = N_CROWD - 1, 17
        swap_and_draw(widget_page, ex, [lonely], [j])  # j is alone now, top right
        widget_page.wait_attr(canvas, "data-index", "(v) => v === 'current'",
                              "the moved points drawn again with their own index")
        # The frame with the move was drawn with the index of the points before it.
        assert page.evaluate("() => window.indexStates")[:2] == ["behind", "current"]
        tooltip = page.locator(f"{ROOT} .nbembed-tooltip-text")
        page.mouse.move(0, 0)
        page.mouse.move(*point_on_screen(page, ex, j))
        widget_page.wait_attr(f"{ROOT} .nbembed-tooltip", "hidden", "(v) => v === null",
                              f"the tooltip of point {j}")
        assert tooltip.inner_text().split(" · ")[0] == f"#{j}"
        assert widget_page.errors == []
    finally:
        ex.close()


def test_cleanup_removes_the_dom_and_every_listener(widget_page, explorer_on_clusters):
    ex, _, _ = explorer_on_clusters
    mount_explorer(widget_page, ex)
    page = widget_page.page
    # Exercise the listeners a session adds: hover, lasso mode, a drag, a wheel.
    plot = page.locator(f"{ROOT} .nbembed-plot")
    box = plot.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.wheel(0, -200)
    page.locator(f'{ROOT} button[data-action="fit"]').click()  # the zoom may hide the left half
    lasso(widget_page, ex, LEFT_HALF, with_button=True)
    result = page.evaluate("() => window.harness.unmount()")
    assert result["renderCleanupIsFunction"], "render must return a cleanup function"
    assert result["childElements"] == 0, result
    assert result["canvases"] == 0, result
    assert result["modelHandlers"] == 0, result
    assert result["leftoverListeners"] == [], result
    assert result["resizeObservers"] == 0 and result["intervals"] == 0, result
    assert result["animationFramesAfterCleanup"] == 0, result
    assert widget_page.errors == []


def test_a_stream_of_frames_is_animated_and_ends_on_the_last_frame(widget_page,
                                                                   explorer_on_clusters):
    """Frames that follow each other are moved to over most of the time between
    them (data-animated counts the frames drawn with an animation); once drawn,
    the lasso works on the last frame's positions."""
    import time

    from nbembed.widget.traits import encode_positions

    ex, _, (left, middle, right) = explorer_on_clusters
    mount_explorer(widget_page, ex)
    normalized = decode_positions(ex)
    swapped = normalized.copy()
    swapped[left], swapped[middle] = normalized[middle], normalized[left]
    frame = int(widget_page.page.locator(ROOT).get_attribute("data-frame"))
    for positions in (swapped, normalized, swapped):
        ex._positions = encode_positions(positions)
        widget_page.from_python(ex, ["_positions"])
        time.sleep(0.2)
    widget_page.wait_attr(ROOT, "data-frame", f"(v) => Number(v) >= {frame + 2}",
                          "the frames drawn")
    widget_page.wait_attr(ROOT, "data-animated", "(v) => Number(v) > 0",
                          "a frame drawn with an animation")
    assert lasso(widget_page, ex, U_SHAPE, with_button=True) == \
        sorted(middle.tolist() + right.tolist())
