#!/usr/bin/env python
"""Make the documentation's pictures from this checkout's own runs, offline.

* ``explorer.png`` and ``explorer-lasso.png``: the Explorer widget in
  JupyterLab on the digits, driven by the headless Chromium and the
  JupyterLab server of the browser tests (``tests/e2e/conftest.py``);
* ``notebooks/NAME.png``: the first figure of every notebook in ``notebooks/``,
  run in the same JupyterLab; the docs show it at the top of the notebook's page;
* ``quickstart.png``, the quickstart's figure, and one map per method page
  (``hssne.png``, ``mbed.png``, ...): the method run on scikit-learn's digits,
  drawn by :func:`nbembed.plotting.scatter` (the plot ``nbembed embed``
  writes) into an offline HTML page and photographed by the same browser.

Every run is seeded: the maps repeat pixel for pixel, the Explorer's pictures
up to a few hundred pixels (its read-outs sample the run as time allows).

Usage (from the repository root; needs /usr/bin/chromium, jupyterlab,
playwright and the built widget bundle)::

    PYTHONPATH=. python docs/screenshots.py               # every picture
    PYTHONPATH=. python docs/screenshots.py hssne mbed    # some of them

The PNGs go to ``docs/_static/screenshots/``; the pages show them with a
caption that says which run made them, so change both together.
"""

from __future__ import annotations

import argparse
import functools
import pathlib
import sys
import tempfile

import numpy as np

DOCS = pathlib.Path(__file__).resolve().parent
ROOT_DIR = DOCS.parent
OUT = DOCS / "_static" / "screenshots"
sys.path.insert(0, str(ROOT_DIR / "tests"))

from e2e.conftest import (  # noqa: E402  (the harness lives with the tests)
    JupyterLab, LabServer, chromium_context, missing_browser_reason)
from e2e.test_notebooks_offline import _RAN, code_cells  # noqa: E402

#: One device pixel per CSS pixel keeps the pictures small. The Explorer's
#: plot is 62% of the window's height: at this height the whole widget fits
#: in JupyterLab's notebook area, beside a plot as tall as its side panel.
VIEWPORT = {"width": 1100, "height": 1100}
EXPLORER = ".nbembed-explorer"
#: The Explorer's run is slower under load; its waits allow for that.
TIMEOUT_S = 300.0


def shrink(png):
    """Store ``png`` with a palette of 256 colours: a third of the bytes, and no
    visible difference for flat-coloured plots and widgets."""
    from PIL import Image  # Pillow comes with bokeh

    with Image.open(png) as image:
        small = image.convert("RGB").quantize(colors=256, dither=Image.Dither.NONE)
    small.save(png, optimize=True)


# ------------------------------------------------------------------ method maps

def digits():
    from nbembed.datasets import load_digits

    return load_digits()


def some_labels(y, per_class, classes, seed=0):
    """``per_class`` labels of each class drawn with ``seed``, -1 elsewhere."""
    rng = np.random.default_rng(seed)
    partial = np.full(y.size, -1)
    for c in classes:
        partial[rng.choice(np.flatnonzero(y == c), per_class, replace=False)] = c
    return partial


def panel(Y, labels, title, **kwargs):
    """One map as the scatter of ``nbembed embed`` draws it, without its toolbar."""
    from nbembed.plotting import scatter

    fig = scatter(Y, labels, title=title, width=440, height=400, **kwargs)
    fig.toolbar_location = None
    return fig


@functools.cache
def hssne_digits(alpha):
    """The digits embedded by HSSNE with ``alpha`` and the defaults otherwise."""
    from nbembed import HSSNE

    return HSSNE(alpha=alpha, random_state=0).fit_transform(digits()[0])


def quickstart_map():
    """The quickstart's figure, toolbar included."""
    from nbembed.plotting import scatter

    X, y = digits()
    return [scatter(hssne_digits(1.0), y, images=X.reshape(-1, 8, 8), title="digits")]


def hssne_map():
    y = digits()[1]
    return [panel(hssne_digits(alpha), y, f"HSSNE α = {alpha:g}") for alpha in (1.0, 2.0)]


def mbed_map():
    from nbembed.methods.mbed import Mbed

    X, y = digits()
    classes = np.array([2, 4, 8])
    keep = np.isin(y, classes)
    X, y = X[keep], y[keep]
    partial = np.full(y.size, -1)
    labelled = np.random.default_rng(0).choice(y.size, 50, replace=False)
    partial[labelled] = np.searchsorted(classes, y[labelled])
    figures = []
    for title, labels in (("Mbed without labels", None), ("Mbed, 50 labels", partial)):
        model = Mbed(n_classes=3, random_state=0).fit(X, labels)
        # The first two coordinates are the plane of the class directions.
        figures.append(panel(model.embedding_[:, :2], y, title))
    return figures


def nerv_map():
    from nbembed.methods.nerv import NeRV

    X, y = digits()
    keep = np.sort(np.random.default_rng(0).choice(y.size, 600, replace=False))
    X, y = X[keep], y[keep]
    return [panel(NeRV(tradeoff=tradeoff, n_neighbors=20, random_state=0).fit_transform(X),
                  y, f"NeRV tradeoff = {tradeoff:g}") for tradeoff in (1.0, 0.1)]


def parametric_map():
    from nbembed.methods.parametric import ParametricEmbedding
    from nbembed.posteriors import soft_nearest_neighbor_posteriors

    X, y = digits()
    keep = y < 5
    X, y = X[keep], y[keep]
    figures = []
    for per_class in (10, 100):
        posteriors = soft_nearest_neighbor_posteriors(X, some_labels(y, per_class, range(5)))
        pe = ParametricEmbedding(eta_phi="auto", random_state=0).fit(posteriors)
        fig = panel(pe.embedding_, y, f"PE, {per_class} labels per class",
                    anchors=pe.class_embedding_)
        fig.x_range.range_padding = 0.3  # room for the names of the outermost classes
        figures.append(fig)
    return figures


def spectral_map():
    from nbembed.methods.spectral_presets import PCA, SSLFDA

    X, y = digits()
    partial = some_labels(y, 10, range(10))
    return [panel(PCA(n_components=2).fit(X, partial).embedding_, y, "PCA"),
            panel(SSLFDA(n_components=2).fit(X, partial).embedding_, y,
                  "SS-LFDA, 10 labels per class")]


#: Picture name (its page's name) -> the figures it shows side by side.
MAPS = {"quickstart": quickstart_map, "hssne": hssne_map, "mbed": mbed_map, "nerv": nerv_map,
        "parametric-embedding": parametric_map, "spectral": spectral_map}


def photograph_figures(context, figures, png, workdir):
    """Write ``figures`` side by side to an offline HTML page and screenshot them."""
    from bokeh.layouts import row

    from nbembed.plotting import save_html

    html = save_html(row(*figures), pathlib.Path(workdir) / f"{png.stem}.html")
    page = context.new_page()
    try:
        page.goto(html.as_uri())
        page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0 &&"
                               " Bokeh.documents[0].is_idle")
        # the layout's own element (file_html wraps it in a box-less div)
        page.locator("[data-root-id] > *").first.screenshot(path=str(png))
        shrink(png)
    finally:
        page.close()


# --------------------------------------------------------------------- Explorer

EXPLORER_CELLS = ["""
from nbembed import HSSNE
from nbembed.datasets import load_digits
from nbembed.widget import Explorer

X, y = load_digits()
ex = Explorer(X, method=HSSNE(alpha=1.0, max_iter=1000, random_state=0), colors=y,
              images=X.reshape(-1, 8, 8))
ex
"""]


def wait_done(nb):
    nb.wait_attr(EXPLORER, "data-status", "(v) => v === 'done'",
                 what="the run to finish (data-status = done)", timeout=TIMEOUT_S)


def lasso_around(nb, members, margin=14.0):
    """A closed polygon in page pixels around the points ``members`` (as shown now)."""
    from scipy.spatial import ConvexHull

    # The kernel's Explorer sends positions normalized to the plot's initial
    # camera (as tests/e2e/test_explorer_marks.py's point_on_screen reads them).
    nb.py("from nbembed.widget.traits import decode_positions")
    positions = np.array(nb.py_value("decode_positions(ex._positions).tolist()"))
    box = nb.locator("canvas.nbembed-canvas").bounding_box()
    aspect = box["width"] / box["height"]
    pixels = np.column_stack([box["x"] + (positions[:, 0] / aspect + 1) / 2 * box["width"],
                              box["y"] + (1 - positions[:, 1]) / 2 * box["height"]])[members]
    centre = np.median(pixels, axis=0)
    # The class's core: its far stragglers would make the lasso cross other clusters.
    core = pixels[np.linalg.norm(pixels - centre, axis=1)
                  <= np.quantile(np.linalg.norm(pixels - centre, axis=1), 0.9)]
    hull = core[ConvexHull(core).vertices]
    outward = hull - centre
    return hull + margin * outward / np.linalg.norm(outward, axis=1, keepdims=True)


def explorer_shots(context, workdir):
    """``explorer.png`` when the run has ended, ``explorer-lasso.png`` drawing a lasso."""
    with LabServer(workdir / "notebooks", workdir / "state") as server:
        lab = JupyterLab(context, server)
        with lab.notebook("explorer", EXPLORER_CELLS) as nb:
            nb.page.evaluate("() => window.jupyterapp.shell.collapseLeft()")
            wait_done(nb)
            root = nb.locator(EXPLORER)
            root.evaluate("(el) => el.scrollIntoView({block: 'start'})")
            nb.page.mouse.move(0, 0)  # no tooltip
            root.screenshot(path=str(OUT / "explorer.png"))
            shrink(OUT / "explorer.png")

            # Label the zeros with the lasso, as a user would, then start on the sixes.
            nb.locator('button[data-action="lasso"]').click()
            y = np.array(nb.py_value("y.tolist()"))
            draw_polygon(nb, lasso_around(nb, np.flatnonzero(y == 0)))
            nb.wait_attr(EXPLORER, "data-selected", "(v) => Number(v) > 0",
                         what="a selection after the lasso")
            nb.locator('select[data-role="mode"]').select_option("soft_label")
            nb.locator('select[data-role="class"]').select_option("__new__")
            nb.locator('input[data-role="new-class"]').fill("zero")
            nb.locator('button[data-action="apply"]').click()
            nb.wait_py("len(ex.annotations) > 0", what="the label to reach the kernel")
            nb.locator('button[data-action="clear-selection"]').click()
            wait_done(nb)
            nb.wait_attr(EXPLORER, "data-marks-drawn", "(v) => Number(v) > 0",
                         what="the labelled points outlined")
            draw_polygon(nb, lasso_around(nb, np.flatnonzero(y == 6)), release=False)
            root.screenshot(path=str(OUT / "explorer-lasso.png"))
            shrink(OUT / "explorer-lasso.png")
            nb.page.mouse.up()


def draw_polygon(nb, points, release=True):
    """Drag along ``points`` (page pixels); without ``release`` stop just before closing."""
    page = nb.page
    page.mouse.move(*points[0])
    page.mouse.down()
    for x, y in (list(points[1:]) + [points[0]]) if release else points[1:]:
        page.mouse.move(x, y, steps=4)
    if release:
        page.mouse.up()


# -------------------------------------------------------------------- notebooks

NOTEBOOKS = sorted((ROOT_DIR / "notebooks").glob("*.ipynb"))
NOTEBOOK_OUT = OUT / "notebooks"
#: A notebook runs in well under two minutes on two cores; room for a busy machine.
NOTEBOOK_TIMEOUT_S = 600.0
#: What a figure is in a notebook's outputs: a bokeh document or an Explorer.
FIGURES = ("[data-root-id] > *", ".nbembed-explorer")


def notebook_shots(context, workdir):
    """``notebooks/NAME.png``: the first figure each notebook draws, run in JupyterLab.
    docs/conf.py shows it at the top of the notebook's page."""
    NOTEBOOK_OUT.mkdir(parents=True, exist_ok=True)
    with LabServer(workdir / "notebooks", workdir / "state") as server:
        lab = JupyterLab(context, server)
        for path in NOTEBOOKS:
            with lab.notebook(path.stem, code_cells(path)) as nb:
                nb.page.evaluate("() => window.jupyterapp.shell.collapseLeft()")
                ran = nb.wait_js(_RAN, nb.path, what=f"every cell of {path.name} to run",
                                 timeout=NOTEBOOK_TIMEOUT_S)
                if ran["failed"] is not None:
                    raise RuntimeError(f"{path.name}, code cell {ran['failed']}: {ran['error']}")
                figure = nb.page.locator(", ".join(f"{nb.scope} {f}" for f in FIGURES)).first
                if not figure.count():
                    print(f"{path.name} draws no figure", flush=True)
                    continue
                figure.evaluate("(el) => el.scrollIntoView({block: 'start'})")
                nb.page.wait_for_timeout(1000)  # BokehJS paints after attaching
                nb.page.mouse.move(0, 0)  # no tooltip
                png = NOTEBOOK_OUT / f"{path.stem}.png"
                figure.screenshot(path=str(png))
                shrink(png)
                print(f"made notebooks/{png.name}", flush=True)


# ------------------------------------------------------------------------- main

PICTURES = ["explorer", "notebooks", *MAPS]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pictures", nargs="*", metavar="PICTURE",
                        help=f"what to make, among {', '.join(PICTURES)} (default: all)")
    chosen = parser.parse_args(argv).pictures or PICTURES
    unknown = sorted(set(chosen) - set(PICTURES))
    if unknown:
        parser.error(f"no picture named {', '.join(unknown)}; choose among {', '.join(PICTURES)}")
    reason = missing_browser_reason()
    if reason:
        sys.exit(reason)
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = pathlib.Path(tmp)
        with chromium_context(workdir / "profile", viewport=VIEWPORT) as context:
            for name in chosen:
                if name == "explorer":
                    explorer_shots(context, workdir)
                elif name == "notebooks":
                    notebook_shots(context, workdir)
                else:
                    photograph_figures(context, MAPS[name](), OUT / f"{name}.png",
                                       workdir)
                print(f"made {name}", flush=True)
    for png in sorted(OUT.glob("*.png")):
        print(f"{png.relative_to(ROOT_DIR)}: {png.stat().st_size / 1024:.0f} kB")


if __name__ == "__main__":
    main()
