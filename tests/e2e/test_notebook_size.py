"""A notebook that shows a bokeh figure stays small when saved, and the figure
still renders with every request outside the Jupyter server refused.

The notebooks set bokeh up with ``output_notebook(notebook_resources())``: with
nbembed's server extension enabled (as ``pip install`` does, through
jupyter-config/), BokehJS comes from the Jupyter server and the saved output
holds only a loader. ``bokeh.resources.INLINE`` stored 8 MB in every saved
notebook instead.

This module starts its own server, with the extension enabled by the
configuration file the package installs, so it checks that file too. The same
check runs in Notebook 7 when the ``notebook`` package is installed.
"""

import importlib.util
import json
import os

import pytest

from .conftest import (_FIND_PANEL, CANVAS_HELPERS, REPO_ROOT, JupyterLab, LabServer, Notebook,
                       route_offline)

#: The setup the shipped notebooks use, and one figure.
CELLS = [
    "from bokeh.io import output_notebook, show\n"
    "from nbembed.plotting import notebook_resources, scatter\n"
    "output_notebook(notebook_resources(), hide_banner=True)",
    "import numpy as np\n"
    "rng = np.random.default_rng(0)\n"
    "show(scatter(rng.normal(size=(300, 2)), labels=rng.integers(0, 3, 300)))",
]

#: INLINE stored about 8 MB; the loader and a figure of 300 points need far less.
MAX_SAVED_BYTES = 300_000

BOKEHJS_PATH = "/nbembed/bokehjs/static/js/bokeh.min.js"

#: JavaScript: painted canvases of the bokeh figures in ``scope`` (BokehJS draws
#: into shadow roots) and the text of the notebook's error outputs.
_STATE = """(scope) => {""" + CANVAS_HELPERS + """
  const roots = [...document.querySelectorAll(scope + ' [data-root-id]')];
  const errors = [...document.querySelectorAll(scope + ' .jp-OutputArea-output[data-mime-type=' +
                                               '"application/vnd.jupyter.stderr"]')];
  return {figures: roots.length, painted: roots.filter((r) => canvases(r).some(painted)).length,
          errors: errors.map((e) => e.innerText)};
}"""

_SAVE = _FIND_PANEL + "async (path) => { await findPanel(path).context.save(); }"


@pytest.fixture(scope="module")
def server(browser_context, tmp_path_factory):
    """A server with nbembed's extension enabled by the file pip installs, and with
    Notebook 7's page exposing ``window.jupyterapp`` as JupyterLab's does."""
    base = tmp_path_factory.mktemp("bokehjs-server")
    config = base / "state" / "config"
    config.mkdir(parents=True)
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"JupyterNotebookApp": {"expose_app_in_browser": True}}))
    config_path = os.pathsep.join(
        p for p in (str(REPO_ROOT / "jupyter-config"), os.environ.get("JUPYTER_CONFIG_PATH"))
        if p)
    with LabServer(base / "notebooks", base / "state",
                   env={"JUPYTER_CONFIG_PATH": config_path}) as lab_server:
        yield lab_server


@pytest.fixture
def offline_page(browser_context, server):
    """A fresh page whose requests outside the server are refused; yields the page,
    the refused URLs and every URL it requested."""
    page = browser_context.new_page()
    refused, requested = [], []
    route_offline(page, server.url, refused, requested)
    try:
        yield page, refused, requested
    finally:
        page.close()


def run_save_and_measure(lab, name, page, refused, requested):
    notebook = Notebook(lab, name)
    try:
        notebook.wait_kernel_idle()
        notebook.run_all()
        notebook.wait_js(f"(scope) => {{ const s = ({_STATE})(scope); "
                         f"return s.errors.length || (s.figures && s.painted === s.figures); }}",
                         notebook.scope, what="the figure to be painted")
        state = page.evaluate(_STATE, notebook.scope)
        assert not state["errors"], state["errors"]
        assert notebook.py_value("notebook_resources().mode") == "server"
        page.evaluate(_SAVE, name)
    finally:
        notebook.close()
    saved = lab.server.root_dir / name
    size = saved.stat().st_size
    assert size < MAX_SAVED_BYTES, f"{name} saved as {size} bytes"
    outputs = [o for cell in json.loads(saved.read_text())["cells"] for o in cell["outputs"]]
    assert any("bokehjs_exec" in key for o in outputs for key in o.get("data", {})), \
        "the saved notebook has no bokeh figure"
    assert refused == [], f"fetched from the network: {refused}"
    assert any(BOKEHJS_PATH in url for url in requested), \
        "BokehJS was not loaded from the Jupyter server"
    missing = [line for line in lab.console if "BokehJS" in line and "missing" in line]
    assert not missing, missing


def open_page(browser_context, server, page, app_path, stem, app_name):
    """Write a notebook of :data:`CELLS`, open it at ``app_path`` + its name and
    check the page is ``app_name``; return the :class:`JupyterLab` helper and the name."""
    lab = JupyterLab(browser_context, server)
    lab.page = page
    page.on("console", lambda msg: lab.console.append(f"[{msg.type}] {msg.text}"))
    name = lab.write(stem, CELLS)
    page.goto(f"{server.url}/{app_path}{name}?reset&token={server.token}")
    page.wait_for_function("() => window.jupyterapp !== undefined")
    assert page.evaluate("() => window.jupyterapp.name") == app_name
    page.wait_for_function(_FIND_PANEL + "(path) => { try { return !!findPanel(path); } "
                           "catch (e) { return false; } }", arg=name)
    return lab, name


def test_jupyterlab_renders_bokeh_offline_and_saves_a_small_notebook(browser_context, server,
                                                                     offline_page):
    page, refused, requested = offline_page
    lab, name = open_page(browser_context, server, page, "lab/tree/", "lab", "JupyterLab")
    run_save_and_measure(lab, name, page, refused, requested)


@pytest.mark.skipif(importlib.util.find_spec("notebook") is None,
                    reason="Notebook 7 (the notebook package) is not installed")
def test_notebook7_renders_bokeh_offline_and_saves_a_small_notebook(browser_context, server,
                                                                    offline_page):
    page, refused, requested = offline_page
    lab, name = open_page(browser_context, server, page, "notebooks/", "notebook7",
                          "Jupyter Notebook")
    run_save_and_measure(lab, name, page, refused, requested)
