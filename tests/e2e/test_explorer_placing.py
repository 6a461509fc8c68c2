"""Sample and place in JupyterLab: the live run shows a sample, the "Place rest"
button puts the other rows on the map, and the page draws them as a layer under
the points that lassos pass through."""

from .test_explorer_browser import CENTER, ROOT, click, lasso_select

N_ROWS = 6000
N_SAMPLE = 1500

CELLS = [f"""
from sklearn.datasets import make_blobs
from nbembed import HSSNE
from nbembed.widget import Explorer

X, y = make_blobs(n_samples={N_ROWS}, n_features=5, centers=4, random_state=0)
""", f"""
ex = Explorer(X, method=HSSNE(alpha=1.0, max_iter=300, random_state=0), labels=y,
              class_names=["a", "b", "c", "d"], sample={N_SAMPLE})
ex
"""]


def test_place_rest_draws_the_other_rows_under_the_live_points(lab):
    with lab.notebook("sample-and-place", CELLS) as nb:
        nb.wait_attr(ROOT, "data-n", f"(v) => v === '{N_SAMPLE}'",
                     what=f"the Explorer to show the {N_SAMPLE} sampled rows")
        nb.wait_attr(ROOT, "data-frame", "(v) => Number(v) >= 1", what="the first map drawn")
        assert nb.locator('button[data-action="place_rest"]').is_visible()
        status = nb.locator('[data-role="placed"]')
        assert f"{N_ROWS - N_SAMPLE:,} rows not placed" in status.text_content()
        nb.wait_attr(ROOT, "data-status", "(v) => v === 'done'", what="the run to end",
                     timeout=300)

        click(nb, "place_rest")
        rest = N_ROWS - N_SAMPLE
        nb.wait_attr(ROOT, "data-placed-shown", f"(v) => v === '{rest}'",
                     what=f"the page to draw the {rest} placed rows", timeout=300)
        assert nb.py_value("ex.placed.embedding.shape[0]") == rest
        assert f"{rest:,} rows placed" in status.text_content()

        # The placed rows are drawn, not selectable: a lasso selects live points only.
        lasso_select(nb, CENTER, n_points=N_SAMPLE)
        assert nb.py_value("ex.error") == ""
        assert not [line for line in lab.console if "pageerror" in line], lab.console
