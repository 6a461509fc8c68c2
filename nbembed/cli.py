"""The ``nbembed`` command: embed a data file, or open the quickstart notebook.

Examples::

    nbembed embed iris.csv --labels species          # iris_embedding.csv + .html
    nbembed embed data.npz --alpha 1.5 -o out.npy    # X (and y) from an .npz
    nbembed embed data.csv --labels cls --use-labels --rho 0.5
    nbembed embed iris.npy --force                   # replace iris_embedding.csv + .html
    nbembed demo --dir work                          # the quickstart in JupyterLab

``embed`` reads a CSV file with a header row, an ``.npy`` array, or an ``.npz``
file with the array ``X`` and optionally labels ``y``. It writes the embedding
(CSV or ``.npy``, by the extension of ``-o``) and an interactive HTML scatter
plot beside it. It never replaces existing files unless given ``--force``: it
stops before fitting and says how to go on. Labels colour the plot; with
``--use-labels`` the method also learns from them (semi-supervised; empty or -1
means unlabelled). Mistakes in the input are reported in one line, with exit
status 2, and where the command line can fix them the fix is written as it is
typed (``--drop NAME``); the estimators' Python wording (``pass
normalize=True``) is reworded the same way (``-p normalize=True``).

The methods are those of :data:`nbembed.methods.registry.REGISTRY`; each entry
names the command-line options (keys of :data:`OPTIONS`) its estimator takes,
and ``-p NAME=VALUE`` passes any other constructor parameter.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import csv
import importlib.util
import inspect
import pathlib
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass

import numpy as np

from ._validation import check_labels
from ._demo import demo_command, free_port, quickstart_notebook, running_as_root
from .methods.registry import REGISTRY


class CLIError(Exception):
    """A mistake in the command line or the input files, reported without a traceback."""


@dataclass(frozen=True)
class Option:
    """A command-line option that sets the estimator parameter of the same name."""

    type: type
    help: str


#: Options methods may take, by estimator parameter name (``max_iter`` is ``--max-iter``).
OPTIONS = {
    "alpha": Option(float, "tail heaviness: 0 Gaussian, 1 t-SNE, larger = heavier tails"),
    "perplexity": Option(float, "effective number of neighbours"),
    "rho": Option(float, "weight of the must-links made from --use-labels, in [0, 1] "
                         "(default: chosen from the labels)"),
    "max_iter": Option(int, "iteration budget of the fit"),
    "n_components": Option(int, "dimension of the embedding (the HTML plot needs 2)"),
    "n_classes": Option(int, "number of classes K"),
    "tradeoff": Option(float, "1 favours recall (no input neighbour missed), 0 precision"),
    "n_neighbors": Option(int, "neighbours per point"),
    "gamma": Option(float, "weight of the neighbourhood cost against the label cost"),
}


#: The methods by command-line name: the entries of
#: :data:`nbembed.methods.registry.REGISTRY` that offer command-line options.
METHODS = {spec.name: spec for spec in REGISTRY if spec.cli_options is not None}

#: File name of the notebook ``nbembed demo`` writes.
DEMO_NOTEBOOK = "nbembed-quickstart.ipynb"


@dataclass
class Labels:
    """Class labels of the points.

    Attributes
    ----------
    codes : ndarray of int64
        Class numbers, -1 for unlabelled points.
    names : list of str or None
        Class names by number, when the labels were not numbers.
    column : str
        Header of the label column in CSV output.
    """

    codes: np.ndarray
    names: list | None = None
    column: str = "label"

    @classmethod
    def from_values(cls, values, column="label"):
        """Labels from strings or numbers: integers are class numbers (-1 or
        an empty value unlabelled); anything else is a class name."""
        values = np.asarray(values)
        if values.dtype.kind in "iub":
            return cls(check_labels(values.astype(np.int64), values.shape[0], name=column),
                       None, column)
        text = ["" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v).strip()
                for v in values.tolist()]
        numbers = _as_integers([v for v in text if v])
        if numbers is not None:
            largest = max(numbers, key=abs, default=0)
            if abs(largest) >= 2**63:
                raise ValueError(f"{column} holds the class number {largest:g}, beyond 64-bit "
                                 f"integers; number the classes 0, 1, ... (-1 for unlabelled) "
                                 f"or name them.")
            codes = np.array([int(float(v)) if v else -1 for v in text], dtype=np.int64)
            return cls(check_labels(codes, codes.shape[0], name=column), None, column)
        names = sorted({v for v in text if v})
        index = {name: k for k, name in enumerate(names)}
        return cls(np.array([index.get(v, -1) for v in text], dtype=np.int64), names, column)

    @property
    def n_classes(self):
        return len(np.unique(self.codes[self.codes >= 0]))

    def output_values(self):
        """One value per point for CSV output: the name (empty if unlabelled) or number."""
        if self.names is None:
            return [str(c) for c in self.codes.tolist()]
        return [self.names[c] if c >= 0 else "" for c in self.codes.tolist()]


# --------------------------------------------------------------------------- reading

def read_input(path, *, label_column=None, label_file=None, drop=(), delimiter=None):
    """Read data and labels from a CSV, ``.npy`` or ``.npz`` file.

    Returns
    -------
    X : ndarray (n_samples, n_features)
    labels : Labels or None

    Raises
    ------
    CLIError
        Naming the file, line and column of what is wrong.
    """
    path = pathlib.Path(path)
    if not path.is_file():
        raise CLIError(f"{path} does not exist" if not path.exists() else
                       f"{path} is not a file")
    suffix = path.suffix.lower()
    labels = None
    if suffix in (".npy", ".npz"):
        if label_column:
            raise CLIError(f"--labels names CSV columns; {path.name} is a {suffix} file (an "
                           f".npz gives labels as the array 'y'; otherwise use --label-file "
                           f"FILE)")
        if drop:
            raise CLIError(f"--drop names CSV columns; {path.name} is a {suffix} file, whose "
                           f"columns are all features: leave out --drop")
        X, labels = _read_npz(path) if suffix == ".npz" else (_load_npy(path), None)
    else:
        if delimiter is None:
            delimiter = "\t" if suffix == ".tsv" else ","
        X, labels = _read_csv(path, label_column, drop, delimiter)
    if X.ndim != 2:
        raise CLIError(f"{path} must hold a 2-D array (points x features); got shape "
                       f"{X.shape}")
    if label_file is not None:
        labels = read_label_file(label_file, X.shape[0])
    return X, labels


def _load_npy(path):
    try:
        return np.load(path, allow_pickle=False)
    except ValueError as err:
        raise CLIError(f"{path} is not a readable .npy array: {err}") from None


def _read_npz(path):
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {key: data[key] for key in data.files}
    except (ValueError, OSError) as err:
        raise CLIError(f"{path} is not a readable .npz file: {err}") from None
    if "X" not in arrays:
        raise CLIError(f"{path} has no array 'X'; it has: {', '.join(arrays) or 'nothing'}")
    X = arrays["X"]
    labels = None
    if "y" in arrays:
        y = arrays["y"]
        if y.shape != (X.shape[0],):
            raise CLIError(f"{path}: y must have one label per row of X ({X.shape[0]}); got "
                           f"shape {y.shape}")
        labels = Labels.from_values(y, "y")
    return X, labels


def _read_csv(path, label_column, drop, delimiter):
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.reader(f, delimiter=delimiter)
            rows, lines = [], []
            for row in reader:
                if any(cell.strip() for cell in row):
                    rows.append(row)
                    lines.append(reader.line_num)
    except UnicodeDecodeError:
        raise CLIError(f"{path} is not a UTF-8 text file; give a CSV file with a header "
                       f"row, an .npy or an .npz file") from None
    except csv.Error as err:
        raise CLIError(f"{path}: {err}") from None
    if not rows:
        raise CLIError(f"{path} is empty")
    header = [name.strip() for name in rows[0]]
    if _as_floats(header) is not None:
        raise CLIError(f"{path} has no header row (its first line holds numbers); add a "
                       f"first line naming the columns")
    duplicates = sorted({name for name in header if header.count(name) > 1})
    if duplicates:
        raise CLIError(f"{path}: the header names column(s) {', '.join(duplicates)} more "
                       f"than once; give each column its own name")
    for name in ([label_column] if label_column else []) + list(drop):
        if name not in header:
            raise CLIError(f"column {name!r} not found in {path}; its columns are: "
                           f"{', '.join(header)}")
    body, lines = rows[1:], lines[1:]
    if not body:
        raise CLIError(f"{path} has a header but no data rows")
    for row, line in zip(body, lines):
        if len(row) != len(header):
            raise CLIError(f"{path}, line {line}: {len(row)} fields, but the header has "
                           f"{len(header)}")
    features = [k for k, name in enumerate(header) if name != label_column and name not in drop]
    if not features:
        raise CLIError(f"{path} has no feature columns left after --labels and --drop")
    cells = np.array(body, dtype=object)[:, features]
    try:
        X = cells.astype(np.float64)
    except ValueError:
        raise CLIError(_first_bad_cell(path, cells, [header[k] for k in features], lines,
                                       label_column)) from None
    labels = None
    if label_column:
        labels = Labels.from_values(np.array(body, dtype=object)[:, header.index(label_column)],
                                    label_column)
    return X, labels


def _first_bad_cell(path, cells, names, lines, label_column):
    for j, name in enumerate(names):
        for i, cell in enumerate(cells[:, j]):
            if _as_floats([cell]) is None:
                where = f"{path}, line {lines[i]}, column {name!r}"
                if not cell.strip():
                    return f"{where}: empty cell; fill in or remove missing values"
                fixes = _text_column_fixes(name, label_column)
                return f"{where}: {cell!r} is not a number ({fixes})"
    return f"{path}: non-numeric values"  # pragma: no cover - astype failed, so one exists


def _text_column_fixes(name, label_column):
    # quoted, so that a name such as "sepal length" can be pasted into the shell
    drop = f"to ignore it, pass --drop {shlex.quote(name)}"
    if label_column:
        return drop
    return f"if it holds the labels, pass --labels {shlex.quote(name)}; {drop}"


def read_label_file(path, n_samples):
    """Labels from an ``.npy`` array or a text file with one label per line.

    A text file with ``n_samples + 1`` lines has a header line, which names
    the label column in the output.
    """
    path = pathlib.Path(path)
    if not path.is_file():
        raise CLIError(f"label file {path} does not exist")
    if path.suffix.lower() == ".npy":
        values, column = _load_npy(path), "label"
        if values.ndim != 1:
            raise CLIError(f"label file {path} must hold a 1-D array; got shape {values.shape}")
    else:
        try:
            values = path.read_text(encoding="utf-8-sig").splitlines()
        except UnicodeDecodeError:
            raise CLIError(f"label file {path} is not a UTF-8 text file") from None
        column = "label"
        if len(values) == n_samples + 1:
            column, values = values[0].strip() or "label", values[1:]
    if len(values) != n_samples:
        raise CLIError(f"label file {path} has {len(values)} labels for {n_samples} points")
    return Labels.from_values(values, column)


def _as_floats(cells):
    try:
        return [float(cell) for cell in cells]
    except ValueError:
        return None


def _as_integers(cells):
    numbers = _as_floats(cells)
    if numbers is None or not all(np.isfinite(v) and v == int(v) for v in numbers):
        return None
    return numbers


# --------------------------------------------------------------------------- writing

#: First characters that make a spreadsheet read a cell as a formula.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(text):
    """``text`` with a leading ``'`` where a spreadsheet would run it as a formula.

    Numbers (``-1``, ``+2.5``) are kept as they are; any other text that
    starts with ``= + - @``, a tab or a carriage return is escaped.
    """
    if not text.startswith(FORMULA_STARTS):
        return text
    try:
        float(text)
        return text
    except ValueError:
        return "'" + text


def write_embedding(path, Y, labels=None):
    """Write the embedding as ``.npy`` or as CSV (columns y1, y2, ... and the labels;
    label text that a spreadsheet would run as a formula is escaped)."""
    path = pathlib.Path(path)
    if path.suffix.lower() == ".npy":
        np.save(path, Y)
        return path
    header = [f"y{k + 1}" for k in range(Y.shape[1])]
    values = None
    if labels is not None:
        header.append(spreadsheet_safe(labels.column))
        values = [spreadsheet_safe(v) for v in labels.output_values()]
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        for i, row in enumerate(Y.tolist()):
            writer.writerow([f"{v:.9g}" for v in row] + ([values[i]] if values else []))
    return path


def write_html(path, Y, labels=None, *, title=None, images=None, anchors=None, say=print):
    """Write the interactive scatter plot of a 2-D embedding as standalone HTML.

    ``anchors`` are extra positions such as Parametric Embedding's classes.
    Returns the path, or None after saying why nothing was written (bokeh
    missing, or an embedding that is not 2-D).
    """
    from .plotting import save_html, scatter

    if Y.shape[1] != 2:
        say(f"no HTML plot: the embedding has {Y.shape[1]} dimensions, the plot needs 2")
        return None
    try:
        fig = scatter(Y, None if labels is None else labels.codes, images=images, title=title,
                      class_names=None if labels is None else labels.names, anchors=anchors)
    except ImportError as err:
        say(f"no HTML plot: {err}")
        return None
    return save_html(fig, path)


# --------------------------------------------------------------------------- commands

def _embed(args):
    say = (lambda *a: None) if args.quiet else print
    method = METHODS[args.method]
    out = pathlib.Path(args.output) if args.output else \
        pathlib.Path(f"{pathlib.Path(args.input).stem}_embedding.csv")
    if out.suffix.lower() not in (".csv", ".npy"):
        raise CLIError(f"the output {out} must end in .csv or .npy, e.g. "
                       f"-o {shlex.quote(str(out.with_suffix('.csv')))}")
    html = None if args.no_html else pathlib.Path(args.html) if args.html else \
        out.with_suffix(".html")
    model = _estimator(args.method, method, args)
    if not args.force:
        refuse_to_overwrite(out, html, html_from_output=not args.html)

    X, labels = read_input(args.input, label_column=args.labels, label_file=args.label_file,
                           drop=args.drop, delimiter=args.delimiter)
    described = f", labels in {labels.column!r} ({labels.n_classes} classes)" if labels else ""
    say(f"read {args.input}: {X.shape[0]} points, {X.shape[1]} features{described}")
    y = _labels_for_fit(method, args, labels)

    fit_options = {}
    if not args.quiet and "callbacks" in inspect.signature(model.fit).parameters:
        from .optim import ProgressBar

        fit_options["callbacks"] = ProgressBar(desc=method.class_name)
    start = time.perf_counter()
    with estimator_errors_in_command_line_terms(method):
        model.fit(X, y, **fit_options)
        Y = model.embedding_ if hasattr(model, "embedding_") else model.transform(X)
    cost = getattr(model, "kl_divergence_", None)
    say(f"{method.class_name}: {getattr(model, 'n_iter_', '?')} iterations in "
        f"{time.perf_counter() - start:.1f} s" + ("" if cost is None else f", cost {cost:.4f}"))
    if labels is not None and np.count_nonzero(labels.codes >= 0) >= 2:
        from .metrics import homogeneity

        say(f"homogeneity (1-NN same class) = {homogeneity(Y, labels.codes):.3f}")

    out.parent.mkdir(parents=True, exist_ok=True)
    say(f"wrote {write_embedding(out, Y, labels)}")
    if html is not None:
        html.parent.mkdir(parents=True, exist_ok=True)
        title = f"{method.class_name} of {pathlib.Path(args.input).name}"
        anchors = getattr(model, "class_embedding_", None)
        if write_html(html, Y, labels, title=title, anchors=anchors, say=say):
            say(f"wrote {html}")
    return 0


def refuse_to_overwrite(out, html=None, *, html_from_output=True):
    """Stop before any work if the command would replace existing files.

    Parameters
    ----------
    out : pathlib.Path
        The embedding file (``-o``).
    html : pathlib.Path or None
        The HTML plot; None with ``--no-html``.
    html_from_output : bool, default=True
        Whether ``html`` is ``out`` with the extension ``.html`` (no
        ``--html``), so that another ``-o`` renames it too.

    Raises
    ------
    CLIError
        Naming the existing files and, in command-line form, the ways
        around them: ``--force``, another ``-o`` or ``--html``, ``--no-html``.
    """
    out_exists = out.exists()
    html_exists = html is not None and html.exists()
    if not (out_exists or html_exists):
        return
    existing = [path for path, exists in ((out, out_exists), (html, html_exists)) if exists]
    # each fix offered must on its own clear every clash
    renames = []
    if out_exists or html_from_output:
        renames.append(f"-o NEW_NAME{out.suffix}")
    if html_exists and not html_from_output:
        renames.append("--html NEW_NAME.html")
    fixes = [" ".join(renames)] if out_exists else renames + ["--no-html"]
    fixes.insert(0, "pass --force to replace " + ("it" if len(existing) == 1 else "them"))
    names = " and ".join(str(path) for path in existing)
    verb = "exists" if len(existing) == 1 else "exist"
    raise CLIError(f"{names} {verb}; {', or '.join(fixes)}")


def _estimator(name, method, args):
    cls = method.cls
    params = {key: getattr(args, key, None) for key in OPTIONS}
    params = {key: value for key, value in params.items() if value is not None}
    extra = [key for key in params if key not in method.cli_options]
    if extra:
        accepted = ", ".join(f"--{o.replace('_', '-')}" for o in method.cli_options) or "none"
        raise CLIError(f"--{extra[0].replace('_', '-')} does not apply to --method {name} "
                       f"(its options: {accepted}; others with -p NAME=VALUE)")
    params.update(_parse_param(text) for text in args.param)
    accepted = inspect.signature(cls).parameters
    if "random_state" in accepted:
        params.setdefault("random_state", args.seed)
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise CLIError(f"{cls.__name__} has no parameter {unknown[0]!r}; -p NAME=VALUE takes "
                       f"one of: {', '.join(accepted)}")
    with estimator_errors_in_command_line_terms(method):
        return cls(**params)


#: A Python value as estimators' messages write one after ``NAME=``: a quoted
#: string, ``...`` (any value), or a word or number such as True, 'exact', 1e-3.
PYTHON_VALUE = r"""'[^']*'|"[^"]*"|\.\.\.|[-+]?[\w.]*\w(?:[eE][-+]?\d+)?"""


@contextlib.contextmanager
def estimator_errors_in_command_line_terms(method):
    """Report an estimator's ValueError, TypeError or MemoryError (such as a
    dense matrix over the limit, with its alternatives) as a CLIError, its
    parameter hints reworded by :func:`command_line_wording`."""
    try:
        yield
    except (ValueError, TypeError, MemoryError) as err:
        raise CLIError(command_line_wording(str(err), method)) from None


def command_line_wording(message, method):
    """``message`` with the constructor parameters it names in command-line form.

    Estimators word their errors for Python (``pass normalize=True``). On the
    command line the parameters in ``method.cli_options`` are options
    (``--n-components 2``) and any other is set with ``-p`` (``-p
    normalize=True``). ``NAME=...`` becomes ``--name INT`` or ``-p NAME=VALUE``.
    Arguments of a call in the message, as in ``TruncatedSVD(n_components=50)``,
    are code and stay as they are.

    Parameters
    ----------
    message : str
        The estimator's error message.
    method : MethodSpec
        The method whose estimator raised it.

    Returns
    -------
    str
    """
    names = sorted(inspect.signature(method.cls).parameters, key=len, reverse=True)
    if not names:
        return message
    pattern = re.compile(rf"(?<![\w.])({'|'.join(map(re.escape, names))})=({PYTHON_VALUE})")

    def reword(match):
        if _inside_call(message, match.start()):
            return match.group(0)
        name, value = match.groups()
        if name in method.cli_options:
            value = OPTIONS[name].type.__name__.upper() if value == "..." else value
            return f"--{name.replace('_', '-')} {value}"
        return f"-p {name}={'VALUE' if value == '...' else value}"

    return pattern.sub(reword, message)


def _inside_call(text, index):
    """Whether ``text[index]`` lies between the brackets of a call such as ``f(...)``,
    rather than of a parenthetical remark."""
    depth = 0
    for k in range(index - 1, -1, -1):
        if text[k] == ")":
            depth += 1
        elif text[k] == "(":
            if depth == 0:
                return k > 0 and (text[k - 1].isalnum() or text[k - 1] == "_")
            depth -= 1
    return False


#: Longest value of ``-p NAME=VALUE``: no parameter needs more, and the parser of
#: Python literals recurses on nesting.
MAX_PARAM_CHARS = 200


def _parse_param(text):
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise CLIError(f"-p expects NAME=VALUE, e.g. -p early_exaggeration=8; got {text!r}")
    if len(value) > MAX_PARAM_CHARS:
        raise CLIError(f"-p {name.strip()}: the value is {len(value)} characters long; give a "
                       f"number, a word or a short Python literal (at most {MAX_PARAM_CHARS} "
                       f"characters)")
    try:
        value = ast.literal_eval(value.strip())
    except (ValueError, SyntaxError, RecursionError, MemoryError):
        value = value.strip()  # a plain word such as auto or fixed-point
    return name.strip(), value


def _labels_for_fit(method, args, labels):
    name = args.method
    if method.labels == "unused":
        if args.use_labels:
            raise CLIError(f"--method {name} does not use labels; drop --use-labels")
        return None
    if method.labels == "required" or args.use_labels:
        if labels is None:
            raise CLIError(f"--method {name} needs labels: give --labels COLUMN, --label-file "
                           f"FILE, or an .npz with y")
        return labels.codes
    return None


def _demo(args):
    folder = pathlib.Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / DEMO_NOTEBOOK
    if target.exists() and not args.force:
        print(f"{target} exists; opening it as it is (--force replaces it)")
    else:
        notebook = quickstart_notebook()
        if notebook is None:
            raise CLIError("the quickstart notebook is missing from this installation; "
                           "reinstall nbembed: pip install --force-reinstall nbembed")
        target.write_bytes(notebook.read_bytes())
        print(f"copied the quickstart notebook to {target}")
    if args.port is not None and not 0 < args.port < 65536:
        raise CLIError(f"--port must be between 1 and 65535; got {args.port} (leave --port "
                       f"out for a free one)")
    port = args.port or free_port()
    command = demo_command(target, port=port, no_browser=args.no_browser,
                           allow_root=args.allow_root or running_as_root())
    if args.dry_run:
        print(f"cd {shlex.quote(str(folder))} && {shlex.join(command)}")
        return 0
    if importlib.util.find_spec("jupyterlab") is None:
        raise CLIError('JupyterLab is not installed; install it with: pip install '
                       '"nbembed[widget]"')
    print(f"JupyterLab will serve {folder.resolve()} at http://localhost:{port}/lab; the "
          f"address with its access token is printed below. Ctrl+C stops it.", flush=True)
    return subprocess.call(command, cwd=folder)


def _compile(args):
    from . import _prebuilt
    from .precompile import GROUPS, precompile

    groups = args.only or list(GROUPS)
    if args.bundle is not None:
        destination = _prebuilt.BUNDLES if args.bundle == "" else pathlib.Path(args.bundle)
        print(f"compiling nbembed's kernels into bundles for the processor levels this "
              f"machine runs ({len(groups)} groups each, one after another; a few minutes "
              f"a level)", flush=True)
        _prebuilt.build(groups, destination=destination, say=lambda line: print(line, flush=True))
        return 0
    print(f"compiling nbembed's kernels into the disk cache ({len(groups)} groups, one "
          f"after another; a few minutes)", flush=True)
    level, _ = _prebuilt.choose()
    if level is not None:
        print(f"(this installation carries them compiled for {level.cpu}, which this machine "
              f"runs: the cache gets those, and only what they lack is compiled)", flush=True)
    start = time.perf_counter()
    reports = precompile(groups, say=lambda line: print(line, flush=True))
    total = sum(report["compiled"] for report in reports)
    print(f"done in {time.perf_counter() - start:.0f} s: {total} kernels compiled; the "
          f"next fits load them from the cache")
    return 0


# --------------------------------------------------------------------------- parser

def available_methods():
    """The ``--method`` choices: the names in :data:`METHODS`."""
    return list(METHODS)


def build_parser():
    """The argument parser of the ``nbembed`` command."""
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="nbembed", description="Semi-supervised non-linear embedding from the command line.")
    parser.add_argument("--version", action="version", version=f"nbembed {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    embed = commands.add_parser(
        "embed", help="embed a CSV, .npy or .npz file; write the embedding and an HTML plot",
        description="Embed the rows of INPUT and write the embedding and an interactive HTML "
                    "scatter plot. Labels colour the plot; with --use-labels the method also "
                    "learns from them (empty or -1 means unlabelled).")
    embed.set_defaults(run=_embed)
    embed.add_argument("input", metavar="INPUT",
                       help="CSV with a header row, .npy array, or .npz with X (and y)")
    methods = available_methods()
    embed.add_argument("--method", default="hssne", choices=methods, metavar="METHOD",
                       help="; ".join(f"{name}: {METHODS[name].description}" for name in methods)
                       + " (default: hssne)")
    source = embed.add_argument_group("labels and columns")
    which = source.add_mutually_exclusive_group()
    which.add_argument("--labels", metavar="COLUMN",
                       help="CSV column holding class labels (removed from the features)")
    which.add_argument("--label-file", metavar="FILE",
                       help=".npy array or text file with one label per line")
    source.add_argument("--use-labels", action="store_true",
                        help="let the method learn from the labels (semi-supervised); "
                             "without it they only colour the plot")
    source.add_argument("--drop", metavar="COLUMN", action="append", default=[],
                        help="CSV column to ignore (repeat for several)")
    source.add_argument("--delimiter", help="CSV field separator (default ',', tab for .tsv)")

    options = embed.add_argument_group("method options (omitted: the method's default)")
    for key, option in OPTIONS.items():
        users = ", ".join(n for n in methods if key in METHODS[n].cli_options)
        if not users:
            continue
        options.add_argument(f"--{key.replace('_', '-')}", dest=key, type=option.type,
                             metavar=option.type.__name__.upper(),
                             help=f"{option.help} [{users}]")
    options.add_argument("-p", "--param", metavar="NAME=VALUE", action="append", default=[],
                         help="any other estimator parameter, e.g. -p early_exaggeration=8")
    options.add_argument("--seed", type=int, default=0,
                         help="random_state, so that runs repeat (default: 0)")

    output = embed.add_argument_group("output")
    output.add_argument("-o", "--output", metavar="OUT",
                        help="embedding file, .csv or .npy (default: INPUT's name + "
                             "'_embedding.csv' in the current folder)")
    plot = output.add_mutually_exclusive_group()
    plot.add_argument("--html", metavar="PATH",
                      help="interactive plot (default: OUT with the extension .html)")
    plot.add_argument("--no-html", action="store_true", help="write no plot")
    output.add_argument("--force", action="store_true",
                        help="replace OUT and the plot if they exist (without it the command "
                             "stops before fitting)")
    output.add_argument("-q", "--quiet", action="store_true",
                        help="no progress bar and no messages (errors still show)")

    demo = commands.add_parser(
        "demo", help="copy the quickstart notebook to a folder and open it in JupyterLab",
        description="Copy the quickstart notebook (as nbembed-quickstart.ipynb) to a folder "
                    "and start JupyterLab on it.")
    demo.set_defaults(run=_demo)
    demo.add_argument("--dir", default=".", help="folder for the notebook (default: current)")
    demo.add_argument("--no-browser", action="store_true",
                      help="start JupyterLab without opening a browser")
    demo.add_argument("--force", action="store_true", help="replace an existing copy")
    demo.add_argument("--port", type=int, default=None,
                      help="port for JupyterLab (default: a free one)")
    demo.add_argument("--allow-root", action="store_true",
                      help="let JupyterLab run as root (added by itself when running as root)")
    demo.add_argument("--dry-run", action="store_true",
                      help="copy the notebook and print the JupyterLab command without "
                           "running it")

    from .precompile import GROUPS

    compile_ = commands.add_parser(
        "compile", help="compile the kernels now, so that no later fit waits for them",
        description="Compile nbembed's kernels into Numba's disk cache now (a few minutes), "
                    "so that the first fit after installing loads them instead of compiling "
                    "them. Run it again after upgrading nbembed or Numba.")
    compile_.set_defaults(run=_compile)
    compile_.add_argument("--only", metavar="GROUP", action="append", choices=list(GROUPS),
                          help="compile one group only (repeat for several): "
                               + "; ".join(f"{name}: {description}"
                                           for name, (_, description) in GROUPS.items()))
    compile_.add_argument("--bundle", metavar="FOLDER", nargs="?", const="",
                          help="instead, compile them for the x86-64-v4 and x86-64-v3 processor "
                               "levels (those this machine runs) into bundles that a wheel built "
                               "afterwards carries (a release step): in the package's _prebuilt "
                               "folder, or in FOLDER")
    return parser


def main(argv=None):
    """Run the ``nbembed`` command with ``argv`` (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success, 2 for a mistake in the command line or the input, 130
        when interrupted.
    """
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (CLIError, ValueError, TypeError, MemoryError, OSError) as err:
        print(f"nbembed {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("nbembed: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
