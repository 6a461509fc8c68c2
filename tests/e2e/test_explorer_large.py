"""The Explorer at 2 * 10^5 points in JupyterLab: the map draws, frames arrive,
hovering searches an index a worker built, and a lasso of about half the points
labels them and is undone.

The points are 2-D clusters: their exact neighbour search (the run's
preparation) takes seconds, so the test spends its time on the browser's
side of a large map, which the small maps of the other tests never reach:
compact frames, a selection sent as a bitmask, annotations of 10^5 points.
"""

from .conftest import draw_lasso
from .test_explorer_browser import CENTER, ROOT, click, set_mode, wait_annotation_count, \
    wait_paused

N_LARGE = 200_000

#: The first run compiles the kernels of the large-map path (grid repulsion,
#: spatial order) unless an earlier one cached them: a minute on an idle two-core
#: machine, several while other tests run beside it.
FIRST_ITERATION_TIMEOUT_S = 600.0

CELLS = [f"""
from sklearn.datasets import make_blobs
from nbembed import HSSNE
from nbembed.widget import Explorer

X, y = make_blobs(n_samples={N_LARGE}, n_features=2, centers=8, random_state=0)
""", """
ex = Explorer(X, method=HSSNE(alpha=1.0, max_iter=100_000_000, tol=0, random_state=0),
              colors=y, class_names=["a", "b"])
ex
"""]


def test_a_large_map_streams_and_a_large_lasso_labels_it(lab):
    with lab.notebook("large-map", CELLS) as nb:
        nb.wait_attr(ROOT, "data-n", f"(v) => v === '{N_LARGE}'",
                     what=f"the Explorer to render with data-n = {N_LARGE}")
        nb.wait_attr(ROOT, "data-frame", "(v) => Number(v) >= 1",
                     what="the first map drawn")
        nb.wait_attr(ROOT, "data-iteration", "(v) => Number(v) >= 1",
                     what="the run's first iteration drawn", timeout=FIRST_ITERATION_TIMEOUT_S)
        # Every frame the kernel sends is an iteration the page can show.
        nb.wait_attr(ROOT, "data-iteration", "(v) => Number(v) >= 3",
                     what="frames of iterations 1-3 drawn")
        click(nb, "pause")
        wait_paused(nb)
        # Hover searches an index built off the page's main thread, here too (a
        # page may forbid workers), and brought up to date once the points stay put.
        canvas = f"{ROOT} canvas.nbembed-canvas"
        nb.wait_attr(canvas, "data-index-worker", "(v) => v === 'running'",
                     what="the spatial index built in a worker")
        nb.wait_attr(canvas, "data-index", "(v) => v === 'current'",
                     what="the paused map's own spatial index")

        nb.locator('button[data-action="lasso"]').click()
        plot = nb.locator(".nbembed-plot")
        plot.scroll_into_view_if_needed()
        draw_lasso(nb.page, plot.bounding_box(), CENTER)
        count = int(nb.wait_attr(ROOT, "data-selected", "(v) => Number(v) > 0",
                                 what="data-selected > 0 after drawing a lasso"))
        assert count > N_LARGE // 10, f"the lasso over half the plot caught {count} points"
        nb.wait_py(f"len(ex.selection) == {count}",
                   what=f"ex.selection in Python to hold the {count} lassoed points")
        distinct, low, high = nb.py_value(
            "[len(set(ex.selection.tolist())), int(ex.selection.min()), int(ex.selection.max())]")
        assert distinct == count and 0 <= low <= high < N_LARGE

        set_mode(nb, "soft_label")
        nb.locator('select[data-role="class"]').select_option("a")
        click(nb, "apply")
        wait_annotation_count(nb, 1)
        assert nb.py_value("int(ex.annotations.labelled_mask().sum())") == count
        assert nb.py_value("int(ex.annotations.labelled_mask()[ex.selection].sum())") == count
        click(nb, "undo")
        wait_annotation_count(nb, 0)
        assert nb.py_value("int(ex.annotations.labelled_mask().sum())") == 0
        assert nb.py_value("ex.error") == ""
