"""Sphinx configuration of the nbembed documentation.

Build (warnings are errors)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

Before reading the sources this file generates three things, each ignored by
git and rewritten only when its content changes:

- ``notebooks/``: copies of ``../notebooks/*.ipynb``, rendered without being
  executed (the test suite executes them), each with the picture of its first
  figure after its title when ``docs/screenshots.py notebooks`` made one;
- ``_mathjax/``: the parts of MathJax the pages use, copied from the widget's
  JavaScript packages (``npm --prefix js ci``), so that formulas render
  without loading anything from the network;
- ``api/``: one reference page per public module of nbembed (no leading
  underscore in its dotted name, importable), each public object documented
  once, on the page of the module that defines it (see document_homes) and
  listed, with a link there, on the page of every package that exports it;
- the user guide's table of contents: every top-level page not placed by hand
  in ``index.md`` (so a new method's page appears without editing anything).
"""

import importlib
import inspect
import json
import pathlib
import pkgutil
import re
import sys

DOCS = pathlib.Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))  # document this checkout, installed or not

import nbembed  # noqa: E402

project = "nbembed"
author = "the nbembed developers"
copyright = "the nbembed developers"
release = nbembed.__version__
version = release

extensions = [
    "myst_nb",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
]
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
html_theme = "pydata_sphinx_theme"
html_title = "nbembed"
html_theme_options = {"navigation_with_keys": False, "header_links_before_dropdown": 4,
                      "show_toc_level": 2}

# Formulas are typeset by a local copy of MathJax (see copy_mathjax), served
# from _static/mathjax/; Sphinx's default would fetch it from the network.
html_static_path = ["_mathjax"]
mathjax_path = "mathjax/tex-mml-chtml.js"

# Markdown pages (MyST) and notebooks (myst-nb). Notebooks are shown as stored,
# without outputs: tests/test_notebooks.py executes every one of them.
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = "off"

# API reference: numpydoc renders the docstrings; the generated module pages
# list members explicitly, so numpydoc adds no member tables of its own.
autodoc_typehints = "none"
autodoc_member_order = "bysource"
autosummary_generate = False
numpydoc_show_class_members = False
numpydoc_xref_param_type = False
add_module_names = False

# Every cross-reference must resolve ...
nitpicky = True
nitpick_ignore_regex = [
    # ... except to other projects: the build stays offline, without intersphinx
    # inventories, so their names are plain text.
    (r"py:.*", r"(numpy|np|scipy|sklearn|bokeh|pandas|tqdm|traitlets|anywidget|ipywidgets|"
               r"importlib|collections|threading)(\..*)?"),
    # ... and to private modules and members, which are not part of the reference.
    (r"py:.*", r"([\w.]*\.)?_[a-zA-Z]\w*(\.[\w.]*)?"),
]

#: Top-level pages that index.md places by hand; every other top-level page
#: is listed in the user guide.
PLACED_PAGES = {"index", "installation", "quickstart", "api", "citations", "contributing"}
PLACED_PREFIXES = ("benchmarks",)
USER_GUIDE_MARKER = "<user-guide-pages>"
#: Replaced in api.md by the table of registered methods.
METHODS_MARKER = "<methods-table>"
#: Replaced in api.md by a summary of the package's other exports.
EXPORTS_MARKER = "<other-exports>"


def _write_if_changed(path, content):
    """Write bytes or text only when different, so incremental builds stay incremental."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    if not path.exists() or path.read_bytes() != data:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def _sync_folder(folder, files):
    """Make ``folder`` hold exactly ``files`` (name -> content)."""
    folder.mkdir(exist_ok=True)
    for old in folder.iterdir():
        if old.is_file() and old.name not in files:
            old.unlink()
    for name, content in files.items():
        _write_if_changed(folder / name, content)


# --------------------------------------------------------------------------- notebooks

#: Pictures of the notebooks' first figures, made by docs/screenshots.py from runs in JupyterLab.
NOTEBOOK_PICTURES = DOCS / "_static" / "screenshots" / "notebooks"


def with_picture(path):
    """The notebook at ``path``, with the picture of its first figure (if there is one)
    after its title cell: the notebooks are shown without outputs."""
    picture = NOTEBOOK_PICTURES / f"{path.stem}.png"
    if not picture.is_file():
        return path.read_bytes()
    notebook = json.loads(path.read_text(encoding="utf-8"))
    caption = ("The first figure this notebook draws, from a run in JupyterLab "
               "(`docs/screenshots.py notebooks`); the page shows the code without its outputs.")
    cell = {"cell_type": "markdown", "id": "picture-of-first-figure", "metadata": {},
            "source": [f"```{{figure}} ../_static/screenshots/notebooks/{picture.name}\n",
                       f":alt: The first figure of {path.name}\n", "\n", caption + "\n",
                       "```\n"]}
    notebook["cells"].insert(1, cell)
    return json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"


def copy_notebooks():
    sources = sorted((ROOT / "notebooks").glob("*.ipynb"))
    _sync_folder(DOCS / "notebooks", {p.name: with_picture(p) for p in sources})


# --------------------------------------------------------------------------- MathJax

MATHJAX = ROOT / "js" / "node_modules" / "mathjax" / "es5"
#: What tex-mml-chtml.js loads: itself, its fonts, the TeX extensions it
#: autoloads, and the menu's accessibility and output options.
MATHJAX_PARTS = ("tex-mml-chtml.js", "output/chtml", "input/tex/extensions",
                 "input/mml/extensions", "a11y", "ui", "adaptors")


def copy_mathjax():
    if not (MATHJAX / MATHJAX_PARTS[0]).is_file():
        raise RuntimeError(
            f"MathJax is missing from {MATHJAX.parent}: install the JavaScript packages "
            f"first (npm --prefix js ci). The documentation typesets formulas with this "
            f"local copy so that no page loads anything from the network.")
    target = DOCS / "_mathjax" / "mathjax"
    for part in MATHJAX_PARTS:
        source = MATHJAX / part
        for path in ([source] if source.is_file() else sorted(source.rglob("*"))):
            if path.is_file():
                _write_if_changed(target / path.relative_to(MATHJAX), path.read_bytes())


# --------------------------------------------------------------------------- user guide

def user_guide_pages():
    return sorted(p.stem for p in DOCS.glob("*.md")
                  if p.stem not in PLACED_PAGES and not p.stem.startswith(PLACED_PREFIXES))


def fill_user_guide(app, docname, source):
    if docname == "index":
        source[0] = source[0].replace(USER_GUIDE_MARKER, "\n".join(user_guide_pages()))
    elif docname == "api":
        source[0] = (source[0].replace(METHODS_MARKER, methods_table())
                     .replace(EXPORTS_MARKER, other_exports()))


def methods_table():
    """The methods of nbembed.methods.registry.REGISTRY as a MyST table, by kind."""
    from nbembed.methods.registry import KINDS, REGISTRY

    lines = []
    for kind, about in KINDS.items():
        specs = [spec for spec in REGISTRY if spec.kind == kind]
        if not specs:
            continue
        lines += [f"**{kind.capitalize()}.** {about}", "",
                  "| Estimator | CLI name | Labels | Live parameters | Description |",
                  "|---|---|---|---|---|"]
        for spec in specs:
            live = ", ".join(f"`{name}` {p.interval}" for name, p in spec.live_parameters.items())
            cli = f"`{spec.name}`" if spec.cli_options is not None else "–"
            lines.append(f"| {{class}}`~nbembed.{spec.class_name}` | {cli} | {spec.labels} | "
                         f"{live or '–'} | {spec.description} |")
        lines.append("")
    return "\n".join(lines)


def other_exports():
    """What ``nbembed.__all__`` offers besides the registered methods, as an
    autosummary table (each name's first docstring line, linked to its page)."""
    from nbembed.methods.registry import REGISTRY

    methods = {spec.class_name for spec in REGISTRY}
    names = [name for name in nbembed.__all__
             if name not in methods and not name.startswith("_")]
    return "\n".join(["```{eval-rst}", ".. autosummary::", "   :nosignatures:", ""]
                     + [f"   ~nbembed.{name}" for name in names] + ["```"])


def reread_index_when_pages_change(app, env, added, changed, removed):
    return ["index"] if added or removed else []


# --------------------------------------------------------------------------- API pages

def public_modules():
    """Importable public modules of nbembed, shallowest first."""
    names = ["nbembed"] + [
        info.name for info in pkgutil.walk_packages(nbembed.__path__, "nbembed.")
        if not any(part.startswith("_") for part in info.name.split("."))]
    modules = []
    for name in sorted(names, key=lambda n: (n.count("."), n)):
        try:
            module = importlib.import_module(name)
        except ImportError as err:
            if (err.name or "nbembed").split(".")[0] == "nbembed":
                raise
            # An optional dependency the docs environment lacks: install
            # nbembed[docs] (which includes every extra) to document it.
            print(f"nbembed docs: not documenting {name}: needs {err.name}")
            continue
        parent, _, leaf = name.rpartition(".")
        if parent and getattr(sys.modules[parent], leaf, module) is not module:
            continue  # hidden by an object of the same name, e.g. plotting.scatter
        modules.append(module)
    return modules


def public_members(module):
    """(name, object) the module offers: its ``__all__``, or else the classes
    and functions defined in it and the constants with a ``#:`` comment."""
    names = getattr(module, "__all__", None)
    if names is None:
        from sphinx.pycode import ModuleAnalyzer

        commented = {attr for scope, attr in
                     ModuleAnalyzer.for_module(module.__name__).find_attr_docs() if not scope}
        names = [name for name, obj in vars(module).items()
                 if name in commented or ((inspect.isclass(obj) or inspect.isfunction(obj))
                                          and obj.__module__ == module.__name__)]
    return [(name, getattr(module, name)) for name in names if not name.startswith("_")]


def _directive(name, obj):
    if inspect.isclass(obj):
        outside = [c.__name__ for c in obj.__mro__[1:]
                   if not c.__module__.startswith("nbembed")]
        lines = [f".. autoclass:: {name}", "   :members:"]
        if outside:
            lines.append(f"   :inherited-members: {', '.join(outside)}")
        return lines
    if inspect.isfunction(obj) or inspect.isbuiltin(obj):
        return [f".. autofunction:: {name}"]
    return [f".. autodata:: {name}", "   :no-value:"]


#: id of each documented class or function -> the name it is documented under.
DOCUMENTED = {}


def document_homes(modules):
    """Fill DOCUMENTED: each class and function is documented on the page of
    the module that defines it (``nbembed.methods.hssne.HSSNE``), where a reader
    of that module looks for it and where ``help()`` and tracebacks place it.
    An object defined in a private or undocumented module is documented by the
    first module that offers it, its shortest public name."""
    DOCUMENTED.clear()
    offered = {}
    for module in modules:
        for name, obj in public_members(module):
            if inspect.isclass(obj) or inspect.isfunction(obj):
                offered.setdefault(id(obj), []).append(f"{module.__name__}.{name}")
                defined = f"{obj.__module__}.{obj.__name__}"
                if f"{module.__name__}.{name}" == defined:
                    DOCUMENTED[id(obj)] = defined
    for key, names in offered.items():
        DOCUMENTED.setdefault(key, names[0])


def api_pages(modules):
    """Page text per module: its objects documented where document_homes
    places them, the others listed with a link to their documentation."""
    document_homes(modules)
    pages = {}
    for module in modules:
        modname = module.__name__
        table, bodies = [], []
        for name, obj in public_members(module):
            if inspect.isclass(obj) or inspect.isfunction(obj):
                home = DOCUMENTED[id(obj)]
            else:
                home = f"{modname}.{name}"
            if home == f"{modname}.{name}":
                table.append(f"   {name}")
                bodies += [""] + _directive(name, obj)
            else:
                # autosummary wants names below this module relative to it
                below = home.removeprefix(f"{modname}.")
                table.append(f"   ~{below}")
        children = [m.__name__ for m in modules
                    if m.__name__.rpartition(".")[0] == modname]
        lines = [modname, "=" * len(modname), "", f".. automodule:: {modname}", ""]
        if table:
            lines += [".. rubric:: Contents", "", ".. autosummary::", "   :nosignatures:",
                      ""] + table + [""]
        if children:
            lines += [".. rubric:: Submodules", ""]
            lines += [f"- :mod:`{child}`" for child in children] + [""]
        pages[f"{modname}.rst"] = "\n".join(lines + bodies) + "\n"
    return pages


def skip_metadata_request_methods(app, what, name, obj, skip, options):
    """scikit-learn adds set_<method>_request to every estimator class; its
    documentation covers them."""
    return True if re.fullmatch(r"set_\w+_request", name) else None


def resolve_alias(app, env, node, contnode):
    """Resolve a Python reference written with another name of a documented
    object: where it is defined (``nbembed.annotations.Annotations.undo``), or
    as Python would inside the docstring's own module (``MbedRun`` in a
    docstring of nbembed.methods.sne, shown on the page of nbembed.SNE).
    """
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip("~.")
    scopes = [node.get("py:module"), node.get("py:class")]
    scopes = [".".join(s for s in scopes if s)] + _docstring_scopes(node)
    candidates = [target] + [f"{scope}.{target}" for scope in scopes if scope]
    domain = env.get_domain("py")
    for name in candidates:
        documented = _documented_name(name)
        if documented and documented != target:
            found = domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"],
                                        documented, node, contnode)
            if found is not None:
                return found
    return None


def _docstring_scopes(node):
    """``a.b.c`` for a node from the docstring of ``a.b.c``, then ``a.b``, ``a``."""
    while node is not None and not node.source:
        node = node.parent
    match = re.search(r"docstring of ([\w.]+)", (node.source or "") if node else "")
    if not match:
        return []
    parts = match.group(1).split(".")
    return [".".join(parts[:k]) for k in range(len(parts), 0, -1)]


def _documented_name(dotted):
    """The documented name of ``dotted`` (or of its class, plus the member)."""
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        obj = _lookup(parts[:split])
        if obj is not None and id(obj) in DOCUMENTED:
            return ".".join([DOCUMENTED[id(obj)]] + parts[split:])
    return None


def _lookup(parts):
    for split in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attr in parts[split:]:
            obj = getattr(obj, attr, None)
        return obj
    return None


def generate(app=None, config=None):
    copy_notebooks()
    copy_mathjax()
    _sync_folder(DOCS / "api", api_pages(public_modules()))


def setup(app):
    app.connect("config-inited", generate)
    app.connect("source-read", fill_user_guide)
    app.connect("env-get-outdated", reread_index_when_pages_change)
    app.connect("autodoc-skip-member", skip_metadata_request_methods)
    app.connect("missing-reference", resolve_alias)
    return {"parallel_read_safe": True}
