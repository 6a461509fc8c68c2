"""AnnData integration: nbembed.tl (scanpy-style functions), the Explorer on an
AnnData, and labels written back to ``obs``."""

import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

ad = pytest.importorskip("anndata")
pd = pytest.importorskip("pandas")

from nbembed import HSSNE, SSLFDA, Annotations, Mbed  # noqa: E402
from nbembed import tl  # noqa: E402
from nbembed.datasets import load_digits  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
DIGIT_NAMES = np.array(["zero", "one", "two", "three"])
FAST_HSSNE = dict(max_iter=60, early_exaggeration_iter=20, perplexity=10.0)
FAST_MBED = dict(max_iter=30, n_anneal=4, n_iter_init=4, sigma="quantile")


def make_adata(sparse=False):
    """120 digits 0-3 as an AnnData: obs "digit" (categorical, with an unused
    category), "partial" (every other cell missing), obsm "X_pca"."""
    X, y = load_digits()
    keep = np.flatnonzero(y < 4)[:120]
    X, y = X[keep], y[keep]
    adata = ad.AnnData(sp.csr_matrix(X) if sparse else X)
    adata.obs_names = [f"cell{i}" for i in range(len(y))]
    adata.var_names = [f"px{j}" for j in range(X.shape[1])]
    adata.obs["digit"] = pd.Categorical(DIGIT_NAMES[y], categories=[*DIGIT_NAMES, "unused"])
    partial = pd.Series(DIGIT_NAMES[y], index=adata.obs_names, dtype=object)
    partial.iloc[1::2] = None
    adata.obs["partial"] = pd.Categorical(partial, categories=DIGIT_NAMES)
    centred = X - X.mean(axis=0)
    adata.obsm["X_pca"] = centred @ np.linalg.svd(centred, full_matrices=False)[2][:10].T
    return adata


@pytest.fixture
def adata():
    return make_adata()


def partial_codes(adata):
    """The labels of obs["partial"] as nbembed's class numbers (-1 unlabelled), numbered
    in the order of its categories (not alphabetically)."""
    index = {name: k for k, name in enumerate(DIGIT_NAMES)}
    values = adata.obs["partial"].astype(object)
    return np.array([index.get(v, -1) for v in values]), list(DIGIT_NAMES)


# --------------------------------------------------------------------------- tl functions

def test_hssne_writes_the_estimators_embedding_and_its_facts(adata):
    assert tl.hssne(adata, use_rep="X_pca", **FAST_HSSNE) is None
    model = HSSNE(random_state=0, **FAST_HSSNE).fit(adata.obsm["X_pca"])
    np.testing.assert_allclose(adata.obsm["X_hssne"], model.embedding_)
    record = adata.uns["hssne"]
    assert record["params"]["max_iter"] == 60 and record["params"]["perplexity"] == 10.0
    assert record["params"]["use_rep"] == "X_pca" and record["params"]["method"] == "HSSNE"
    assert record["params"]["random_state"] == 0
    assert record["n_iter"] == model.n_iter_
    assert record["kl_divergence"] == pytest.approx(model.kl_divergence_)
    assert record["converged"] == model.converged_


def test_copy_returns_a_new_anndata_and_leaves_the_input_alone(adata):
    before = set(adata.obsm), set(adata.uns), list(adata.obs.columns)
    out = tl.hssne(adata, use_rep="X_pca", copy=True, key_added="mine", **FAST_HSSNE)
    assert out is not adata
    assert (set(adata.obsm), set(adata.uns), list(adata.obs.columns)) == before
    assert out.obsm["mine"].shape == (adata.n_obs, 2) and "mine" in out.uns
    assert "X_hssne" not in out.obsm


@pytest.mark.parametrize("sparse", [False, True])
def test_use_rep_none_embeds_adata_x_dense_or_sparse(sparse):
    adata = make_adata(sparse=sparse)
    tl.hssne(adata, **FAST_HSSNE)
    expected = HSSNE(random_state=0, **FAST_HSSNE).fit_transform(adata.X)
    np.testing.assert_allclose(adata.obsm["X_hssne"], expected)
    assert adata.uns["hssne"]["params"]["use_rep"] == "X"


def test_semi_supervised_labels_come_from_obs_with_missing_cells_unlabelled(adata):
    tl.embed(adata, "sslfda", labels_key="partial")
    codes, _ = partial_codes(adata)
    assert (codes == -1).sum() == adata.n_obs // 2
    expected = SSLFDA().fit_transform(adata.X, codes)
    np.testing.assert_allclose(adata.obsm["X_sslfda"], expected)
    assert adata.uns["sslfda"]["params"]["labels_key"] == "partial"
    assert "objective" in adata.uns["sslfda"]


def test_mbed_writes_its_predictions_as_a_categorical_obs_column(adata):
    tl.mbed(adata, use_rep="X_pca", labels_key="partial", **FAST_MBED)
    codes, names = partial_codes(adata)
    model = Mbed(n_classes=4, random_state=0, **FAST_MBED).fit(adata.obsm["X_pca"], codes)
    predicted = adata.obs["mbed"]
    assert isinstance(predicted.dtype, pd.CategoricalDtype)
    assert list(predicted.cat.categories) == names
    np.testing.assert_array_equal(predicted.cat.codes.to_numpy(), model.labels_)
    np.testing.assert_allclose(adata.obsm["mbed_membership"], model.membership_)
    np.testing.assert_allclose(adata.obsm["X_mbed"], model.embedding_)
    assert adata.uns["mbed"]["params"]["n_classes"] == 4
    assert "sigma" in adata.uns["mbed"]


def test_mbed_names_classes_beyond_the_labelled_ones(adata):
    tl.mbed(adata, use_rep="X_pca", labels_key="partial", n_classes=5, key_added="m5",
            **FAST_MBED)
    assert list(adata.obs["m5"].cat.categories) == [*DIGIT_NAMES, "class 4"]
    assert adata.obsm["m5_membership"].shape == (adata.n_obs, 5)


def test_an_estimator_is_fitted_in_place_under_its_method_name(adata):
    model = HSSNE(random_state=1, **FAST_HSSNE)
    tl.embed(adata, model, use_rep="X_pca")
    np.testing.assert_allclose(adata.obsm["X_hssne"], model.embedding_)
    assert adata.uns["hssne"]["params"]["random_state"] == 1


def test_annotations_are_passed_to_the_fit(adata):
    ann = Annotations(adata.n_obs)
    ann.add_must_link([0, 1, 2, 3])
    tl.hssne(adata, use_rep="X_pca", annotations=ann, **FAST_HSSNE)
    expected = HSSNE(random_state=0, **FAST_HSSNE).fit(adata.obsm["X_pca"],
                                                         annotations=ann).embedding_
    np.testing.assert_allclose(adata.obsm["X_hssne"], expected)
    plain = HSSNE(random_state=0, **FAST_HSSNE).fit_transform(adata.obsm["X_pca"])
    assert not np.allclose(adata.obsm["X_hssne"], plain)


def test_the_results_survive_an_h5ad_round_trip(adata, tmp_path):
    pytest.importorskip("h5py")
    tl.mbed(adata, use_rep="X_pca", labels_key="partial", **FAST_MBED)
    adata.write_h5ad(tmp_path / "cells.h5ad")
    back = ad.read_h5ad(tmp_path / "cells.h5ad")
    assert back.uns["mbed"]["params"]["labels_key"] == "partial"
    assert list(back.obs["mbed"]) == list(adata.obs["mbed"])
    np.testing.assert_allclose(back.obsm["X_mbed"], adata.obsm["X_mbed"])


@pytest.mark.parametrize("call, error, words", [
    (lambda a: tl.hssne(a, use_rep="X_umap"), KeyError, ["X_umap", "'X_pca'"]),
    (lambda a: tl.hssne(a, use_rep=3), TypeError, ["use_rep"]),
    (lambda a: tl.hssne(a, labels_key="cell_type"), KeyError, ["cell_type", "'digit'"]),
    (lambda a: tl.hssne(a, labels_key=["digit"]), TypeError, ["labels column"]),
    (lambda a: tl.hssne(a.X), TypeError, ["AnnData", "ndarray"]),
    (lambda a: tl.sne(a, labels_key="digit"), ValueError, ["sne", "labels_key"]),
    (lambda a: tl.snerv(a), ValueError, ["snerv", "labels_key"]),
    (lambda a: tl.hssne(a, perplexty=5), TypeError, ["perplexty", "perplexity"]),
    (lambda a: tl.embed(a, "umap"), ValueError, ["'umap'", "hssne"]),
    (lambda a: tl.embed(a, "learning-metric", labels_key="digit"), ValueError, ["metric"]),
    (lambda a: tl.embed(a, HSSNE(), alpha=2.0), TypeError, ["set_params"]),
    (lambda a: tl.hssne(a, key_added=""), TypeError, ["key_added"]),
    (lambda a: tl.hssne(a, annotations=np.zeros(3)), TypeError, ["Annotations"]),
])
def test_bad_arguments_fail_clearly_and_change_nothing(adata, call, error, words):
    before = set(adata.obsm), set(adata.uns)
    with pytest.raises(error) as info:
        call(adata)
    for word in words:
        assert word in str(info.value)
    assert (set(adata.obsm), set(adata.uns)) == before


def test_a_labels_column_without_labels_or_without_classes_is_refused(adata):
    adata.obs["none"] = pd.Categorical([None] * adata.n_obs, categories=["a"])
    with pytest.raises(ValueError, match="labels no cell"):
        tl.hssne(adata, labels_key="none")
    adata.obs["size"] = np.linspace(0.5, 3.7, adata.n_obs)
    with pytest.raises(TypeError, match="not whole numbers"):
        tl.hssne(adata, labels_key="size")
    adata.X = None
    with pytest.raises(ValueError, match="adata.X is None"):
        tl.hssne(adata)


# --------------------------------------------------------------------------- labels in obs

def test_labels_from_obs_follow_the_categories_and_drop_unused_ones(adata):
    codes, names = tl.labels_from_obs(adata, "digit")
    assert names == list(DIGIT_NAMES)
    np.testing.assert_array_equal(np.asarray(DIGIT_NAMES)[codes], adata.obs["digit"].astype(str))


def test_labels_from_obs_of_numbers_strings_and_missing_values(adata):
    n = adata.n_obs
    numbers = np.where(np.arange(n) % 3 == 0, np.nan, np.arange(n) % 2)
    adata.obs["number"] = numbers
    codes, names = tl.labels_from_obs(adata, "number")
    assert names == ["0", "1"]
    np.testing.assert_array_equal(codes, np.where(np.isnan(numbers), -1, numbers).astype(int))
    adata.obs["text"] = np.where(np.arange(n) % 2 == 0, "b", "a").astype(object)
    adata.obs.loc[adata.obs_names[:5], "text"] = None
    codes, names = tl.labels_from_obs(adata, "text")
    assert names == ["a", "b"] and (codes[:5] == -1).all() and (codes[5:] >= 0).all()
    adata.obs["mixed"] = pd.Series([1, "1"] * (n // 2), index=adata.obs_names, dtype=object)
    with pytest.raises(ValueError, match="coincide"):
        tl.labels_from_obs(adata, "mixed")


def test_annotations_to_obs_writes_classes_as_categories_and_unlabelled_as_missing(adata):
    ann = Annotations(adata.n_obs, class_names=["B cells", "T cells", "empty"])
    ann.set_labels([0, 1, 2], 1)
    ann.set_labels([5], 0)
    assert tl.annotations_to_obs(adata, ann, "mine") is None
    column = adata.obs["mine"]
    assert list(column.cat.categories) == ["B cells", "T cells", "empty"]
    assert list(column.iloc[[0, 1, 2, 5]]) == ["T cells"] * 3 + ["B cells"]
    assert column.isna().sum() == adata.n_obs - 4
    back = tl.annotations_from_obs(adata, "mine")
    np.testing.assert_array_equal(back.to_labels()[[0, 5, 7]], [1, 0, -1])
    assert back.class_names == ["B cells", "T cells"]  # "empty" labels no cell


def test_annotations_to_obs_copy_and_errors(adata):
    ann = Annotations.from_labels(np.r_[0, 1, -np.ones(adata.n_obs - 2, dtype=int)])
    out = tl.annotations_to_obs(adata, ann, copy=True)
    assert "nbembed_labels" in out.obs and "nbembed_labels" not in adata.obs
    with pytest.raises(ValueError, match="for 3 points"):
        tl.annotations_to_obs(adata, Annotations(3))
    with pytest.raises(TypeError, match="Annotations"):
        tl.annotations_to_obs(adata, ann.to_labels())
    with pytest.raises(TypeError, match="key"):
        tl.annotations_to_obs(adata, ann, key=None)


def test_importing_nbembed_does_not_import_anndata():
    code = ("import sys, nbembed, nbembed.widget\n"
            "nbembed.tl.hssne\n"
            "assert 'anndata' not in sys.modules, 'anndata was imported'\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr


# --------------------------------------------------------------------------- Explorer

@pytest.fixture
def explorers():
    pytest.importorskip("anywidget")
    from nbembed.widget import explorer

    if not explorer.BUNDLE.is_file():
        pytest.skip(f"the widget bundle is not built ({explorer.BUILD_COMMAND})")
    made = []

    def make(X, **kwargs):
        from test_widget import FakeMethod

        ex = explorer.Explorer(X, method=kwargs.pop("method", FakeMethod()), **kwargs)
        made.append(ex)
        return ex

    yield make
    for ex in made:
        ex.stop(timeout=10)


class RecordingMethod:
    """Records the data the Explorer prepares its run with."""

    def __init__(self):
        from test_widget import FakeMethod

        self.fake = FakeMethod()
        self.seen = []

    def prepare(self, X, y=None, annotations=None, init=None):
        self.seen.append(X)
        return self.fake.prepare(np.zeros((X.shape[0], 1)), y, annotations=annotations)


def legend_of(ex):
    return {entry["name"]: entry["count"] for entry in ex.legend}


def test_the_explorer_embeds_use_rep_and_colours_by_an_obs_column(adata, explorers):
    from test_widget import wait_for

    method = RecordingMethod()
    ex = explorers(adata, use_rep="X_pca", color="digit", method=method)
    wait_for(lambda: method.seen and ex.legend)
    assert method.seen[0] is adata.obsm["X_pca"]
    assert ex.n_points == adata.n_obs
    assert ex.color_by == "digit" and "digit" in ex.color_options
    assert legend_of(ex) == adata.obs["digit"].value_counts()[list(DIGIT_NAMES)].to_dict()


def test_the_explorer_colours_by_a_gene_and_shows_missing_values(adata, explorers):
    from test_widget import wait_for

    ex = explorers(adata, color=["px20", "partial"])
    assert ex.color_options == ["label", "px20", "partial"] and ex.color_by == "px20"
    wait_for(lambda: ex.legend)
    assert ex.legend_continuous
    ex.color_by = "partial"
    wait_for(lambda: "NA" in legend_of(ex))
    assert legend_of(ex)["NA"] == adata.obs["partial"].isna().sum()


def test_the_explorer_starts_from_an_obs_column_of_labels_and_writes_labels_back(
        adata, explorers):
    ex = explorers(adata, use_rep="X_pca", labels="partial")
    codes, names = partial_codes(adata)
    assert ex.annotations.class_names == names
    np.testing.assert_array_equal(ex.annotations.to_labels(), codes)
    ex.apply("soft_label", [1, 3], new_class="new kind")
    ex.labels_to_obs(adata, key="lassoed")
    column = adata.obs["lassoed"]
    assert list(column.cat.categories) == [*names, "new kind"]
    assert list(column.iloc[[1, 3]]) == ["new kind"] * 2
    labelled = codes >= 0
    assert list(column[labelled]) == list(adata.obs["partial"][labelled])
    assert column.isna().sum() == (~labelled).sum() - 2


def test_the_explorer_takes_a_sparse_adata_x(explorers):
    method = RecordingMethod()
    adata = make_adata(sparse=True)
    ex = explorers(adata, method=method, autostart=False)
    ex.wait()
    assert sp.issparse(method.seen[0])


def test_colour_names_a_column_of_data_without_anndata(explorers):
    values = np.arange(40) % 3
    ex = explorers(np.zeros((40, 3)), data={"group": values}, color="group")
    assert ex.color_by == "group"


@pytest.mark.parametrize("X, kwargs, error, words", [
    ("array", dict(use_rep="X_pca"), TypeError, ["use_rep", "AnnData"]),
    ("array", dict(labels="digit"), TypeError, ["obs column"]),
    ("array", dict(color="group"), KeyError, ["group"]),
    ("adata", dict(use_rep="X_tsne"), KeyError, ["X_tsne"]),
    ("adata", dict(color="CD3E"), KeyError, ["CD3E", "var_names"]),
    ("adata", dict(color="label"), ValueError, ["built-in"]),
    ("adata", dict(labels="digit", class_names=["a"]), ValueError, ["class_names"]),
    ("adata", dict(labels="nothing"), KeyError, ["nothing"]),
])
def test_the_explorer_refuses_bad_anndata_arguments(adata, explorers, X, kwargs, error, words):
    X = adata if X == "adata" else np.zeros((adata.n_obs, 3))
    with pytest.raises(error) as info:
        explorers(X, **kwargs)
    for word in words:
        assert word in str(info.value)


# --------------------------------------------------------------------------- docs

@pytest.mark.slow
def test_the_docs_page_runs(tmp_path, monkeypatch):
    """docs/anndata.md's python blocks, in order, in one namespace (on the first 400
    digits, so that its fits take seconds)."""
    import nbembed.datasets

    text = (ROOT / "docs" / "anndata.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks
    X, y = load_digits()
    monkeypatch.setattr(nbembed.datasets, "load_digits", lambda: (X[:400], y[:400]))
    monkeypatch.chdir(tmp_path)
    namespace = {}
    try:
        for number, block in enumerate(blocks, 1):
            if "Explorer" in block:
                pytest.importorskip("anywidget")
            exec(compile(block, f"<docs/anndata.md block {number}>", "exec"), namespace)
    finally:
        for value in namespace.values():
            if type(value).__name__ == "Explorer":
                value.stop(timeout=10)
