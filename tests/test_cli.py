"""The nbembed command: embed files, report bad input in one line, open the demo."""

import csv
import inspect
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest
from sklearn.datasets import load_iris

import nbembed
from nbembed.methods.registry import REGISTRY, MethodSpec
from nbembed import cli

ROOT = pathlib.Path(__file__).resolve().parents[1]
SPECIES = np.array(["setosa", "versicolor", "virginica"])


@pytest.fixture(scope="module")
def iris_csv(tmp_path_factory):
    X, y = load_iris(return_X_y=True)
    path = tmp_path_factory.mktemp("data") / "iris.csv"
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["sepal length", "sepal width", "species", "petal length",
                         "petal width"])
        for row, label in zip(X, SPECIES[y]):
            writer.writerow([*row[:2], label, *row[2:]])
    return path, X, y


def read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def test_embed_csv_with_a_label_column(iris_csv, tmp_path, capsys):
    path, X, y = iris_csv
    out = tmp_path / "emb.csv"
    code = cli.main(["embed", str(path), "--labels", "species", "--max-iter", "300", "-o", str(out)])
    assert code == 0
    header, rows = read_csv(out)
    assert header == ["y1", "y2", "species"]
    assert len(rows) == 150 and [r[2] for r in rows] == list(SPECIES[y])
    Y = np.array([[float(v) for v in r[:2]] for r in rows])
    assert np.all(np.isfinite(Y)) and Y.std(axis=0).min() > 0

    # the embedding used the four numeric columns: the same fit in Python agrees
    expected = nbembed.HSSNE(max_iter=300, random_state=0).fit_transform(X)
    np.testing.assert_allclose(Y, expected, rtol=1e-6, atol=1e-6)

    from test_plotting import html_points

    html = out.with_suffix(".html")
    np.testing.assert_allclose(html_points(html.read_text(encoding="utf-8")), Y, rtol=1e-6,
                               atol=1e-6)
    said = capsys.readouterr().out
    assert "150 points, 4 features" in said and "3 classes" in said and f"wrote {html}" in said


def test_embed_as_a_subprocess_writes_npy_and_html(iris_csv, tmp_path):
    path, X, _ = iris_csv
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    result = subprocess.run(
        [sys.executable, "-m", "nbembed.cli", "embed", str(path), "--labels", "species",
         "--method", "sne", "--max-iter", "60", "-o", "out.npy", "--html", "plot/p.html", "-q"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""  # --quiet
    assert np.load(tmp_path / "out.npy").shape == (150, 2)
    assert (tmp_path / "plot" / "p.html").stat().st_size > 0


def test_embed_npz_and_label_files(tmp_path):
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 1, (20, 5)), rng.normal(6, 1, (20, 5))])
    y = np.repeat([0, 1], 20)
    y[::4] = -1
    np.savez(tmp_path / "d.npz", X=X, y=y)
    assert cli.main(["embed", str(tmp_path / "d.npz"), "--perplexity", "5", "--max-iter", "100",
                     "-o", str(tmp_path / "d.csv"), "--no-html", "-q"]) == 0
    header, rows = read_csv(tmp_path / "d.csv")
    assert header == ["y1", "y2", "y"] and [int(r[2]) for r in rows] == y.tolist()
    assert not (tmp_path / "d.html").exists()

    names = ["", "b", "a"] * 13 + ["a"]
    (tmp_path / "labels.txt").write_text("\n".join(["kind"] + names) + "\n")
    assert cli.main(["embed", str(tmp_path / "d.npz"), "--label-file", str(tmp_path / "labels.txt"),
                     "--perplexity", "5", "--max-iter", "50", "-o", str(tmp_path / "e.csv"),
                     "--no-html", "-q"]) == 0
    header, rows = read_csv(tmp_path / "e.csv")
    assert header == ["y1", "y2", "kind"] and [r[2] for r in rows] == names


class Recorder:
    """A stand-in estimator that records how the command line called it."""

    calls = []

    def __init__(self, alpha=1.0, perplexity=30.0, max_iter=10, early_exaggeration=12.0,
                 random_state=None):
        self.params = dict(alpha=alpha, perplexity=perplexity, max_iter=max_iter,
                           early_exaggeration=early_exaggeration, random_state=random_state)

    def fit(self, X, y=None, callbacks=None):
        Recorder.calls.append(dict(self.params, X=X, y=y, callbacks=callbacks))
        self.embedding_ = X[:, :2].copy()
        return self


@pytest.fixture
def recorder(monkeypatch):
    Recorder.calls = []
    monkeypatch.setitem(cli.METHODS, "rec", MethodSpec("rec", Recorder, "neighbour embedding",
                                                       "records its calls",
                                                       cli_options=("alpha", "perplexity")))
    return Recorder


def test_options_labels_and_progress_reach_the_estimator(iris_csv, tmp_path, recorder):
    path, X, y = iris_csv
    out = str(tmp_path / "r.csv")
    base = ["embed", str(path), "--method", "rec", "--labels", "species", "-o", out, "--no-html"]
    assert cli.main(base + ["--alpha", "1.5", "-p", "early_exaggeration=4", "-p", "max_iter=7",
                            "--seed", "3", "--use-labels", "-q"]) == 0
    call = recorder.calls[-1]
    assert (call["alpha"], call["early_exaggeration"], call["max_iter"]) == (1.5, 4, 7)
    assert call["random_state"] == 3 and call["perplexity"] == 30.0  # untouched default
    np.testing.assert_array_equal(call["y"], y)  # species sorted = iris class numbers
    np.testing.assert_array_equal(call["X"], X)
    assert call["callbacks"] is None  # --quiet: no progress bar

    assert cli.main(base + ["--force"]) == 0  # the same output again
    call = recorder.calls[-1]
    assert call["y"] is None  # labels only colour the plot without --use-labels
    assert isinstance(call["callbacks"], nbembed.ProgressBar)


def test_method_choices_are_the_registry():
    offered = [spec.name for spec in REGISTRY if spec.cli_options is not None]
    assert cli.available_methods() == offered
    assert {"hssne", "sne", "mbed", "nerv", "snerv", "pe", "spectral", "lpp", "pca"} <= \
        set(offered)
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["embed", "x.csv", "--method", "learning-metric"])


def test_registered_options_are_parameters_of_the_estimators():
    for name in cli.available_methods():
        method = cli.METHODS[name]
        accepted = inspect.signature(method.cls).parameters
        assert set(method.cli_options) <= set(accepted), name
        assert set(method.cli_options) <= set(cli.OPTIONS), name
        assert method.labels in ("optional", "required", "unused"), name


def test_class_positions_are_drawn_as_anchors(tmp_path):
    if "pe" not in cli.available_methods():
        pytest.skip("nbembed.ParametricEmbedding is not available")
    posteriors = np.random.default_rng(0).dirichlet([0.3, 0.3, 0.3], size=60)
    np.save(tmp_path / "post.npy", posteriors)
    assert cli.main(["embed", str(tmp_path / "post.npy"), "--method", "pe",
                     "-o", str(tmp_path / "pe.npy"), "-q"]) == 0
    assert np.load(tmp_path / "pe.npy").shape == (60, 2)
    assert '"anchors"' in (tmp_path / "pe.html").read_text(encoding="utf-8")


BAD_CSV = {
    "text.csv": "a,b,kind\n1,2,x\n3,4,y\n5,6,x\n7,8,y\n9,10,x\n",
    "empty_cell.csv": "a,b\n1,2\n3,\n5,6\n7,8\n9,10\n",
    "ragged.csv": "a,b\n1,2\n3\n5,6\n7,8\n9,10\n",
    "no_header.csv": "1,2\n3,4\n5,6\n7,8\n9,10\n",
    "good.csv": "a,b,kind\n1,2,x\n3,4,y\n5,6,x\n7,8,y\n9,10,x\n",
    "twice.csv": "a,b,a\n1,2,3\n4,5,6\n",
    "two_text.csv": "a,site name,kind\n1,north,x\n3,south,y\n5,north,x\n7,east,y\n"
                    "9,west,x\n",
}


@pytest.mark.parametrize("args, message", [
    (["missing.csv"], "missing.csv does not exist"),
    (["good.csv", "--labels", "klass"], "column 'klass' not found in .*good.csv; its columns "
                                        "are: a, b, kind"),
    (["text.csv"], r"text.csv, line 2, column 'kind': 'x' is not a number \(if it holds the "
                   r"labels, pass --labels kind; to ignore it, pass --drop kind\)$"),
    (["two_text.csv", "--labels", "kind"],
     r"two_text.csv, line 2, column 'site name': 'north' is not a number \(to ignore it, "
     r"pass --drop 'site name'\)$"),
    (["empty_cell.csv"], "empty_cell.csv, line 3, column 'b': empty cell"),
    (["ragged.csv"], "ragged.csv, line 3: 1 fields, but the header has 2"),
    (["no_header.csv"], "no header row"),
    (["data.npy", "--labels", "kind"], "--labels names CSV columns.*otherwise use --label-file "
                                       "FILE"),
    (["data.npy", "--drop", "kind"], "--drop names CSV columns.*: leave out --drop$"),
    (["twice.csv"], "names column.s. a more than once; give each column its own name$"),
    (["only_y.npz"], "has no array 'X'; it has: y"),
    (["good.csv", "--drop", "kind", "--label-file", "short.txt"], "has 2 labels for 5 points"),
    (["good.csv", "--labels", "kind", "-o", "my out.txt"],
     "must end in .csv or .npy, e.g. -o 'my out.csv'$"),
    (["good.csv", "--labels", "kind", "--method", "sne", "--alpha", "2"],
     "--alpha does not apply to --method sne"),
    (["good.csv", "--labels", "kind", "-p", "colour=red"],
     "HSSNE has no parameter 'colour'; -p NAME=VALUE takes one of: n_components, alpha,"),
    (["good.csv", "--labels", "kind", "-p", "alpha"], "-p expects NAME=VALUE"),
    (["good.csv", "--labels", "kind", "--method", "sne", "--use-labels"],
     "does not use labels"),
    (["data.npy", "--use-labels"], "needs labels"),
    (["good.csv", "--labels", "kind", "--alpha", "-1"], r"alpha must be in \[0, inf\)"),
])
def test_bad_input_is_one_line_with_status_2(args, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name, text in BAD_CSV.items():
        (tmp_path / name).write_text(text)
    np.save(tmp_path / "data.npy", np.arange(10.0).reshape(5, 2))
    np.savez(tmp_path / "only_y.npz", y=np.arange(5))
    (tmp_path / "short.txt").write_text("1\n2\n")
    assert cli.main(["embed"] + args + ["--max-iter", "5", "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nbembed embed: error: ") and err.count("\n") == 1
    assert "Traceback" not in err
    assert re.search(message, err), err


def test_demo_copies_the_quickstart_and_builds_the_command(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "work"
    monkeypatch.setattr(cli, "running_as_root", lambda: False)
    assert cli.main(["demo", "--dir", str(folder), "--no-browser", "--dry-run",
                     "--port", "8901"]) == 0
    copy = folder / cli.DEMO_NOTEBOOK
    assert copy.read_bytes() == (ROOT / "notebooks" / "01-quickstart.ipynb").read_bytes()
    printed = capsys.readouterr().out
    assert (f"-m jupyterlab {cli.DEMO_NOTEBOOK} --ServerApp.port=8901 "
            f"--ServerApp.port_retries=0 --no-browser") in printed
    assert "--allow-root" not in printed

    copy.write_text("edited")  # a second demo keeps the user's copy unless --force
    launched = []
    monkeypatch.setattr(cli.subprocess, "call", lambda cmd, cwd: launched.append((cmd, cwd)) or 0)
    assert cli.main(["demo", "--dir", str(folder), "--port", "8902"]) == 0
    assert copy.read_text() == "edited"
    assert launched == [([sys.executable, "-m", "jupyterlab", cli.DEMO_NOTEBOOK,
                          "--ServerApp.port=8902", "--ServerApp.port_retries=0"], folder)]
    assert f"at http://localhost:8902/lab" in capsys.readouterr().out
    assert cli.main(["demo", "--dir", str(folder), "--force", "--dry-run"]) == 0
    assert copy.read_bytes() == (ROOT / "notebooks" / "01-quickstart.ipynb").read_bytes()
    assert cli.main(["demo", "--dir", str(folder), "--port", "0", "--dry-run"]) == 2
    assert capsys.readouterr().err == ("nbembed demo: error: --port must be between 1 and "
                                       "65535; got 0 (leave --port out for a free one)\n")


def test_demo_runs_as_root(tmp_path, capsys, monkeypatch):
    """JupyterLab refuses to start as root unless told; the demo tells it when it is root."""
    monkeypatch.setattr(cli, "running_as_root", lambda: True)
    assert cli.main(["demo", "--dir", str(tmp_path), "--dry-run"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("--allow-root")
    monkeypatch.setattr(cli, "running_as_root", lambda: False)
    assert cli.main(["demo", "--dir", str(tmp_path), "--dry-run", "--allow-root"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("--allow-root")


def test_packaged_quickstart_is_the_notebook_in_notebooks():
    """One source of truth: the copy shipped in the package (when built) is
    notebooks/01-quickstart.ipynb."""
    assert cli.quickstart_notebook().read_bytes() == \
        (ROOT / "notebooks" / "01-quickstart.ipynb").read_bytes()


def test_csv_output_escapes_label_text_a_spreadsheet_would_run(tmp_path):
    Y = np.zeros((4, 2))
    labels = cli.Labels.from_values(["=cmd|' /C calc'!A0", "+x", "a", "@sum(1)"], column="-k")
    cli.write_embedding(tmp_path / "out.csv", Y, labels)
    header, rows = read_csv(tmp_path / "out.csv")
    assert header[-1] == "'-k"
    assert sorted(r[2] for r in rows) == sorted(["'=cmd|' /C calc'!A0", "'+x", "a", "'@sum(1)"])
    numeric = cli.Labels.from_values(np.array([-1, 0, 1, 1]))
    cli.write_embedding(tmp_path / "n.csv", Y, numeric)
    assert [r[2] for r in read_csv(tmp_path / "n.csv")[1]] == ["-1", "0", "1", "1"]


def test_embed_refuses_to_overwrite_before_fitting(iris_csv, tmp_path, capsys, monkeypatch,
                                                   recorder):
    monkeypatch.chdir(tmp_path)
    path, _, _ = iris_csv
    csv_out, html_out = tmp_path / "iris_embedding.csv", tmp_path / "iris_embedding.html"
    csv_out.write_text("earlier embedding")
    html_out.write_text("earlier plot")
    base = ["embed", str(path), "--method", "rec", "--labels", "species", "-q"]

    assert cli.main(base) == 2
    err = capsys.readouterr().err
    assert err == ("nbembed embed: error: iris_embedding.csv and iris_embedding.html exist; "
                   "pass --force to replace them, or -o NEW_NAME.csv\n")
    assert recorder.calls == []  # stopped before fitting
    assert (csv_out.read_text(), html_out.read_text()) == ("earlier embedding", "earlier plot")

    # the plot alone, at the default path or at --html, is protected too
    assert cli.main(base + ["-o", "new.npy", "--html", "iris_embedding.html"]) == 2
    assert capsys.readouterr().err.endswith(
        "error: iris_embedding.html exists; pass --force to replace it, or "
        "--html NEW_NAME.html, or --no-html\n")
    (tmp_path / "new.html").write_text("earlier plot")
    assert cli.main(base + ["-o", "new.npy"]) == 2
    assert capsys.readouterr().err.endswith(
        "error: new.html exists; pass --force to replace it, or -o NEW_NAME.npy, or "
        "--no-html\n")
    assert recorder.calls == [] and not (tmp_path / "new.npy").exists()

    # with --no-html only the embedding matters
    assert cli.main(base + ["-o", "new.npy", "--no-html"]) == 0
    assert np.load(tmp_path / "new.npy").shape == (150, 2)
    assert (tmp_path / "new.html").read_text() == "earlier plot"


def test_embed_force_replaces_the_outputs(iris_csv, tmp_path, monkeypatch, recorder):
    monkeypatch.chdir(tmp_path)
    path, X, _ = iris_csv
    csv_out, html_out = tmp_path / "iris_embedding.csv", tmp_path / "iris_embedding.html"
    csv_out.write_text("earlier embedding")
    html_out.write_text("earlier plot")
    assert cli.main(["embed", str(path), "--method", "rec", "--labels", "species", "-q",
                     "--force"]) == 0
    assert len(recorder.calls) == 1
    header, rows = read_csv(csv_out)
    assert header == ["y1", "y2", "species"]
    np.testing.assert_allclose([[float(v) for v in r[:2]] for r in rows], X[:, :2])
    assert html_out.read_text(encoding="utf-8") != "earlier plot"


def test_overwrite_error_offers_fixes_that_each_clear_every_clash(tmp_path):
    out, html = tmp_path / "e.csv", tmp_path / "p.html"
    out.write_text("")
    html.write_text("")
    with pytest.raises(cli.CLIError, match=r"exist; pass --force to replace them, or "
                                           r"-o NEW_NAME.csv --html NEW_NAME.html$"):
        cli.refuse_to_overwrite(out, html, html_from_output=False)
    with pytest.raises(cli.CLIError, match=r"e.csv exists; pass --force to replace it, or "
                                           r"-o NEW_NAME.csv$"):
        cli.refuse_to_overwrite(out, None)
    cli.refuse_to_overwrite(tmp_path / "new.csv", tmp_path / "new.html")  # nothing to replace


def test_parametric_embedding_hint_is_the_option_that_fixes_it(tmp_path, capsys, monkeypatch):
    if "pe" not in cli.available_methods():
        pytest.skip("nbembed.ParametricEmbedding is not available")
    monkeypatch.chdir(tmp_path)
    counts = np.random.default_rng(0).integers(1, 5, size=(40, 3)).astype(float)
    np.save("counts.npy", counts)  # rows do not sum to 1: not posteriors until normalized
    assert cli.main(["embed", "counts.npy", "--method", "pe", "--max-iter", "20", "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nbembed embed: error: Rows of P must sum to 1") and \
        err.count("\n") == 1
    assert err.endswith("Divide each row by its sum, or pass -p normalize=True.\n")
    assert not list(tmp_path.glob("counts_embedding.*"))

    # the hint, taken as it is written, works
    assert cli.main(["embed", "counts.npy", "--method", "pe", "--max-iter", "20", "-q",
                     "-p", "normalize=True"]) == 0
    assert read_csv(tmp_path / "counts_embedding.csv")[0] == ["y1", "y2"]


@pytest.mark.parametrize("message, worded", [
    ("use repulsion='exact' for n_components=3.", "use -p repulsion='exact' for --n-components 3."),
    ("pass max_iter=... or init=...", "pass --max-iter INT or -p init=VALUE"),
    ("fitted on affinities (affinity='precomputed').",
     "fitted on affinities (-p affinity='precomputed')."),
    ("set tol=1e-5, alpha=-0.5 or verbose=True",
     "set -p tol=1e-5, --alpha -0.5 or -p verbose=True"),
    # code in the message, and names that are not parameters, stay as they are
    ("reduce X with TruncatedSVD(n_components=50).fit_transform(X), or colour=red",
     "reduce X with TruncatedSVD(n_components=50).fit_transform(X), or colour=red"),
    ("alpha must be in [0, inf), got -1.0.", "alpha must be in [0, inf), got -1.0."),
])
def test_estimator_messages_name_parameters_as_the_command_line_sets_them(message, worded):
    assert cli.command_line_wording(message, cli.METHODS["hssne"]) == worded
