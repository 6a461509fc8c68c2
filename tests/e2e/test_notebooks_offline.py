"""The shipped notebooks in a real JupyterLab with every request outside the
Jupyter server blocked: nothing is fetched from a network, no figure stays
blank, and every figure fits the width of the notebook.
"""

import json
import pathlib

import pytest

from .conftest import _ANSI, _FIND_PANEL, CANVAS_HELPERS, REPO_ROOT, route_offline

NOTEBOOKS = sorted((REPO_ROOT / "notebooks").glob("*.ipynb"))

#: A notebook runs in well under two minutes on two cores; leave room for a busy machine.
RUN_TIMEOUT_S = 400

#: JavaScript: the notebook has run (every code cell executed) or a cell failed.
_RAN = _FIND_PANEL + """(path) => {
  const code = findPanel(path).content.widgets.filter((w) => w.model.type === 'code');
  for (const [index, w] of code.entries()) {
    const error = w.model.outputs.toJSON().find((o) => o.output_type === 'error');
    if (error) return {failed: index, error: error.ename + ': ' + error.evalue,
                       traceback: (error.traceback || []).join('\\n')};
  }
  return code.every((w) => w.model.executionCount !== null) ? {failed: null} : false;
}"""

#: JavaScript: every bokeh document shown in the notebook, with the box it is drawn in,
#: the box of its output area and how many of its canvases were painted. BokehJS renders
#: into shadow roots, so canvases are searched through them.
_FIGURES = """(scope) => {""" + CANVAS_HELPERS + """
  return [...document.querySelectorAll(scope + ' [data-root-id]')].map((root) => {
    const drawn = root.firstElementChild;
    const box = drawn ? drawn.getBoundingClientRect() : null;
    const area = root.closest('.jp-OutputArea-output').getBoundingClientRect();
    return {root: root.getAttribute('data-root-id'),
            drawn: box ? {left: box.left, right: box.right, height: box.height} : null,
            area: {left: area.left, right: area.right},
            painted: canvases(root).filter(painted).length};
  });
}"""


def code_cells(path):
    notebook = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    return ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code"]


@pytest.fixture
def offline(lab):
    """The shared page with every request outside the Jupyter server refused;
    yields the list of refused URLs."""
    page = lab._ensure_page()
    refused = []
    guard = route_offline(page, lab.server.url, refused)
    try:
        yield refused
    finally:
        try:
            page.unroute("**/*", guard)
        except Exception as exc:
            # A page whose renderer was killed (a hung test, BrowserStopped) has no
            # routes left to remove; any other error is the teardown's own.
            if "Target crashed" not in str(exc):
                raise


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_works_offline_and_fits(lab, offline, path):
    with lab.notebook(path.stem, code_cells(path)) as nb:
        ran = nb.wait_js(_RAN, nb.path, what=f"every cell of {path.name} to run",
                         timeout=RUN_TIMEOUT_S)
        assert ran["failed"] is None, (f"{path.name}, code cell {ran['failed']}: {ran['error']}"
                                       f"\n{_ANSI.sub('', ran['traceback'])}")
        # BokehJS draws after the output is attached; give it a moment to paint.
        nb.wait_js(f"(scope) => ({_FIGURES})(scope).every((f) => f.painted > 0)", nb.scope,
                   what=f"every figure of {path.name} painted", timeout=30)
        figures = nb.page.evaluate(_FIGURES, nb.scope)
    assert offline == [], f"{path.name} fetched from the network: {offline}"
    for figure in figures:
        assert figure["drawn"] and figure["drawn"]["height"] > 0, f"blank figure: {figure}"
        assert figure["drawn"]["right"] <= figure["area"]["right"] + 1, \
            f"{path.name}: a figure is wider than the notebook: {figure}"
