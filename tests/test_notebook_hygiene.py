"""The stored notebooks and the generated API pages are fit to publish.

Outputs and execution counts of the notebooks are checked by
tests/test_notebooks.py (test_notebook_is_stored_clean).
"""

import importlib.util
import inspect
import json
import pathlib
import warnings

import pytest

import nbembed

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_valid_and_every_cell_has_an_id(path):
    nbformat = pytest.importorskip("nbformat")

    stored = json.loads(path.read_text(encoding="utf-8"))
    missing = [i for i, cell in enumerate(stored["cells"]) if "id" not in cell]
    assert not missing, (f"{path.name}: cells {missing} have no id; "
                         f"nbformat.validator.normalize adds them")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nbformat warns of what it will later refuse
        nbformat.validate(nbformat.read(path, as_version=nbformat.NO_CONVERT))


def docs_conf():
    """docs/conf.py as a module, without running Sphinx."""
    pytest.importorskip("sphinx")
    spec = importlib.util.spec_from_file_location("nbembed_docs_conf", ROOT / "docs" / "conf.py")
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    return conf


def test_exports_are_documented_on_the_page_of_their_module():
    """A reader of nbembed.methods.hssne finds HSSNE there; the package's page
    lists it too, linking there."""
    conf = docs_conf()
    pages = conf.api_pages(conf.public_modules())
    exported = [(f"nbembed.{name}", getattr(nbembed, name)) for name in nbembed.__all__
                if inspect.isclass(getattr(nbembed, name))]
    assert exported
    for dotted, obj in exported:
        page = pages[f"{obj.__module__}.rst"]
        assert f"\n.. autoclass:: {obj.__name__}\n" in page, f"{dotted} not on its module's page"
        listed = f"~{obj.__module__.removeprefix('nbembed.')}.{obj.__name__}"
        assert f"\n   {listed}\n" in pages["nbembed.rst"], f"{dotted} not listed on nbembed's page"
