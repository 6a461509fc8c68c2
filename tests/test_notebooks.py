"""Every notebook in notebooks/ runs top to bottom in a fresh kernel."""

import json
import os
import pathlib
import re

import pytest
from e2e.conftest import missing_browser_reason

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

#: Per-cell limit; the whole notebook should take well under two minutes.
CELL_TIMEOUT = 300

#: BokehJS's notebook loader lists the scripts and style sheets it fetches in
#: ``js_urls = [...]`` / ``css_urls = [...]``; with ``INLINE`` resources both are empty.
_LOADER_LISTS = re.compile(r"(?:js|css)_urls\s*=\s*\[([^\]]*)\]")


def network_resources(nb):
    """URLs that the outputs of the executed notebook ``nb`` would fetch when shown."""
    urls = set()
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            for value in output.get("data", {}).values():
                text = value if isinstance(value, str) else json.dumps(value)
                for listed in _LOADER_LISTS.finditer(text):
                    urls.update(re.findall(r"https?://[^\"'\s]+", listed.group(1)))
    return sorted(urls)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path):
    if missing_browser_reason() is None:
        # The stronger check runs instead: every notebook in JupyterLab with the
        # network refused (each notebook takes up to a minute; running it twice
        # was a sixth of the suite).
        pytest.skip("run in JupyterLab by tests/e2e/test_notebooks_offline.py")
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")

    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    # The kernel starts in tmp_path (files the notebook writes land there) and
    # imports nbembed from this checkout, installed or not.
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [
        str(pathlib.Path(p).resolve()) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    client.execute(env=env)

    errors = [out for cell in nb.cells if cell.cell_type == "code"
              for out in cell.get("outputs", []) if out.get("output_type") == "error"]
    assert not errors  # nbclient raises on errors already; this guards allow_errors
    assert not network_resources(nb), \
        "outputs load from the network; use output_notebook(nbembed.plotting.notebook_resources())"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_stored_clean(path):
    """Stored without outputs, with the python3 kernel named, so diffs stay readable and
    no kernel picker appears."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None, \
                f"{path.name} has outputs; clear them before committing"


def test_quickstart_notebook_exists():
    assert (ROOT / "notebooks" / "01-quickstart.ipynb").is_file()


def test_network_resources_finds_what_a_cdn_loader_would_fetch():
    nbformat = pytest.importorskip("nbformat")

    def shown(javascript):
        output = nbformat.v4.new_output("display_data",
                                        data={"application/javascript": javascript})
        return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(outputs=[output])])

    cdn = shown('const js_urls = ["https://cdn.example.org/bokeh.min.js"];\n'
                'const css_urls = ["https://cdn.example.org/b.css"];')
    assert network_resources(cdn) == ["https://cdn.example.org/b.css",
                                      "https://cdn.example.org/bokeh.min.js"]
    assert network_resources(shown("const js_urls = [];\nconst css_urls = [];")) == []
