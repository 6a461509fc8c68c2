"""Running a shipped notebook does not store BokehJS in it.

``output_notebook(INLINE)`` wrote 8 MB of BokehJS into every saved notebook.
The notebooks call ``output_notebook(notebook_resources())`` instead, which
loads BokehJS from the Jupyter server where nbembed's server extension serves
it. tests/e2e/test_notebook_size.py checks the whole path in a browser.
"""

import json
import logging
import pathlib
import re
import types

import pytest

from nbembed.plotting import notebook

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SERVER_CONFIG = ROOT / "jupyter-config" / "jupyter_server_config.d" / "nbembed.json"

_OUTPUT_NOTEBOOK = re.compile(r"output_notebook\(([^)]*\)?)")


def code(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_loads_bokehjs_from_the_server(path):
    source = code(path)
    assert "INLINE" not in source, \
        f"{path.name}: INLINE resources store all of BokehJS (8 MB) in the saved notebook"
    for call in _OUTPUT_NOTEBOOK.finditer(source):
        assert call.group(1).startswith("notebook_resources()"), \
            f"{path.name}: call output_notebook(notebook_resources(), ...), not {call.group(0)}"


def test_some_notebook_shows_bokeh_figures():
    assert any(_OUTPUT_NOTEBOOK.search(code(path)) for path in NOTEBOOKS)


@pytest.fixture
def served(monkeypatch):
    """The kernel environment a server running the extension sets up."""
    bokeh = pytest.importorskip("bokeh")
    monkeypatch.setenv(notebook.URL_VARIABLE, "/user/ann/nbembed/bokehjs/")
    monkeypatch.setenv(notebook.VERSION_VARIABLE, bokeh.__version__)
    return bokeh


def test_resources_point_at_the_server(served):
    resources = notebook.notebook_resources()
    assert resources.mode == "server"
    assert resources.js_files[0] == (f"/user/ann/nbembed/bokehjs/static/js/bokeh.min.js"
                                     f"?v={served.__version__}")
    assert resources.js_raw == ['Bokeh.set_log_level("info");']


def test_inline_without_the_extension_or_with_another_bokeh(served, monkeypatch):
    monkeypatch.setenv(notebook.VERSION_VARIABLE, "0.0.1")
    assert notebook.notebook_resources().mode == "inline"
    monkeypatch.delenv(notebook.URL_VARIABLE)
    monkeypatch.delenv(notebook.VERSION_VARIABLE)
    assert notebook.notebook_resources().mode == "inline"


def stored_by_output_notebook(resources, monkeypatch):
    """Bytes of the outputs ``output_notebook(resources)`` publishes (as a notebook saves them)."""
    import bokeh.io.notebook

    published = []
    monkeypatch.setattr(bokeh.io.notebook, "publish_display_data",
                        lambda data, *args, **kwargs: published.append(data))
    bokeh.io.notebook.load_notebook(resources, hide_banner=True)
    return len(json.dumps(published))


def test_the_loader_stored_in_the_notebook_is_small(served, monkeypatch):
    from bokeh.resources import INLINE

    assert stored_by_output_notebook(notebook.notebook_resources(), monkeypatch) < 50_000
    assert stored_by_output_notebook(INLINE, monkeypatch) > 2_000_000  # what it replaces


def test_the_package_enables_the_server_extension():
    config = json.loads(SERVER_CONFIG.read_text())
    assert config == {"ServerApp": {"jpserver_extensions": {"nbembed.plotting": True}}}
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    shared = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["shared-data"]
    assert shared[str(SERVER_CONFIG.relative_to(ROOT))] == \
        "etc/jupyter/jupyter_server_config.d/nbembed.json"


def test_the_extension_serves_bokehjs_below_the_base_url(served, monkeypatch):
    pytest.importorskip("jupyter_server")
    from jupyter_server.extension.utils import validate_extension
    from tornado.httputil import HTTPHeaders, HTTPServerRequest, RequestStartLine
    from tornado.web import Application

    validate_extension("nbembed.plotting")  # raises when jupyter_server cannot load it
    app = Application(base_url="/user/bob/")
    monkeypatch.delenv(notebook.URL_VARIABLE)  # restored after the test
    notebook._load_jupyter_server_extension(types.SimpleNamespace(
        web_app=app, log=logging.getLogger(__name__)))

    url = notebook.notebook_resources().js_files[0]
    assert url.startswith("/user/bob/nbembed/bokehjs/static/js/bokeh.min.js?v=")
    request = HTTPServerRequest(start_line=RequestStartLine("GET", url, "HTTP/1.1"),
                                headers=HTTPHeaders(Host="127.0.0.1"))
    found = app.find_handler(request)
    folder = pathlib.Path(found.handler_kwargs["path"])
    assert (folder / found.path_args[0].decode()).is_file()
