"""nbembed.plotting: scatter figures, standalone HTML and diagnostics figures."""

import base64
import json
import re
import struct
import sys
import zlib

import numpy as np
import pytest

pytest.importorskip("bokeh")

from bokeh.document import Document  # noqa: E402
from bokeh.models import (BoxAnnotation, ColumnDataSource, GlyphRenderer, HoverTool,  # noqa: E402
                          Label, LassoSelectTool, PanTool, Span, WheelZoomTool)
from bokeh.palettes import Category10  # noqa: E402

import nbembed  # noqa: E402
from nbembed import HSSNE  # noqa: E402
from nbembed.datasets import load_digits  # noqa: E402
from nbembed.plotting import (cost_curve, lambda_path, precision_recall, save_html,  # noqa: E402
                              scatter)
from nbembed.plotting.scatter import UNLABELLED, UNLABELLED_COLOR, _png_bytes  # noqa: E402


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits()
    return X[:120], y[:120]


@pytest.fixture(scope="module")
def fitted(digits):
    X, _ = digits
    return HSSNE(max_iter=150, early_exaggeration_iter=60, random_state=0).fit(X)


def glyph_renderers(fig):
    return [r for r in fig.renderers if isinstance(r, GlyphRenderer)]


def tool(fig, kind):
    found = [t for t in fig.toolbar.tools if isinstance(t, kind)]
    assert len(found) == 1, f"expected one {kind.__name__}"
    return found[0]


def point_source(fig):
    sources = {id(r.data_source): r.data_source for r in glyph_renderers(fig)}
    return next(s for s in sources.values() if "index" in s.data)


# --------------------------------------------------------------------------- scatter

def test_scatter_one_renderer_and_legend_item_per_class(rng):
    Y = rng.normal(size=(90, 2))
    labels = np.array([0, 1, 2, -1, 4] * 18)
    fig = scatter(Y, labels, title="t")

    items = fig.legend[0].items
    assert [item.label.value for item in items] == [UNLABELLED, "0", "1", "2", "4"]
    assert len(glyph_renderers(fig)) == 5
    assert fig.legend[0].click_policy == "hide"
    # colours follow the class number (class 3 is absent, 4 keeps its colour)
    colors = [item.renderers[0].glyph.fill_color for item in items]
    assert colors == [UNLABELLED_COLOR] + [Category10[10][k] for k in (0, 1, 2, 4)]
    # every class renderer filters the one shared source by its class name
    source = point_source(fig)
    for item in items:
        assert item.renderers[0].data_source is source
        assert item.renderers[0].view.filter.group == item.label.value
    expected = np.where(labels == -1, UNLABELLED, labels.astype(str))
    assert list(source.data["label"]) == list(expected)
    np.testing.assert_array_equal(source.data["x"], Y[:, 0])
    np.testing.assert_array_equal(source.data["y"], Y[:, 1])
    assert fig.title.text == "t"


def test_scatter_tools_hover_lasso_pan_zoom(rng):
    fig = scatter(rng.normal(size=(20, 2)), [0, 1] * 10, hover={"score": np.arange(20.0)})
    hover = tool(fig, HoverTool)
    tool(fig, LassoSelectTool)
    assert fig.toolbar.active_drag is tool(fig, PanTool)
    assert fig.toolbar.active_scroll is tool(fig, WheelZoomTool)
    assert set(hover.renderers) == set(glyph_renderers(fig))
    assert ("score", "@{hover_0}") in hover.tooltips
    np.testing.assert_array_equal(point_source(fig).data["hover_0"], np.arange(20.0))


def test_scatter_string_labels_and_class_names(rng):
    Y = rng.normal(size=(6, 2))
    fig = scatter(Y, ["b", "a", "", "a", "b", None])
    assert [i.label.value for i in fig.legend[0].items] == [UNLABELLED, "a", "b"]
    assert list(point_source(fig).data["label"]) == ["b", "a", UNLABELLED, "a", "b", UNLABELLED]

    fig = scatter(Y, [0, 1, 1, 0, -1, 1], class_names=["zero", "one"])
    assert [i.label.value for i in fig.legend[0].items] == [UNLABELLED, "zero", "one"]
    with pytest.raises(ValueError, match="class_names has 1 names"):
        scatter(Y, [0, 1, 1, 0, 0, 1], class_names=["zero"])


def test_scatter_without_labels_has_no_legend(rng):
    fig = scatter(rng.normal(size=(10, 2)))
    assert len(glyph_renderers(fig)) == 1
    assert not fig.legend


def test_scatter_images_in_tooltip_are_the_images(digits):
    X, y = digits
    images = X.reshape(-1, 8, 8)
    fig = scatter(np.column_stack([X[:, 10], X[:, 20]]), y, images=images)
    template = tool(fig, HoverTool).tooltips
    assert isinstance(template, str) and "@image{safe}" in template
    uris = point_source(fig).data["image"]
    assert len(uris) == len(X)
    pixels = decode_png(base64.b64decode(uris[5].split(",", 1)[1]))
    # grey levels 0..16 scaled to 0..255 over all images together
    np.testing.assert_array_equal(pixels, np.round(images[5] / images.max() * 255))


def test_png_encoder_round_trips_rgb(rng):
    rgb = rng.integers(0, 256, size=(3, 5, 3), dtype=np.uint8)
    np.testing.assert_array_equal(decode_png(_png_bytes(rgb)), rgb)


def test_scatter_anchors_take_class_colours(rng):
    fig = scatter(rng.normal(size=(30, 2)), [0, 1, 2] * 10, anchors=rng.normal(size=(3, 2)))
    items = fig.legend[0].items
    assert [i.label.value for i in items] == ["0", "1", "2", "anchors"]
    anchor_source = items[-1].renderers[0].data_source
    assert list(anchor_source.data["color"]) == list(Category10[10][:3])
    assert list(anchor_source.data["name"]) == ["0", "1", "2"]
    assert items[-1].renderers[0].glyph.marker == "diamond"


@pytest.mark.parametrize("kwargs, message", [
    (dict(Y=np.zeros((5, 3))), "2 columns"),
    (dict(labels=[0, 1]), "one entry per point"),
    (dict(labels=[0, -2, 0, 0, 0]), "-1"),
    (dict(hover={"a": [1, 2]}), r"hover\['a'\]"),
    (dict(images=np.zeros((5, 64))), "height, width"),
    (dict(anchors=np.zeros((2, 2)), anchor_names=["a"]), "one name per anchor"),
])
def test_scatter_rejects_bad_input_clearly(kwargs, message):
    kwargs = {"Y": np.arange(10.0).reshape(5, 2), **kwargs}
    with pytest.raises(ValueError, match=message):
        scatter(**kwargs)


def test_missing_bokeh_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "bokeh", None)
    with pytest.raises(ImportError, match=re.escape('pip install "nbembed[plot]"')):
        scatter(np.zeros((3, 2)))


def test_save_html_holds_the_points(tmp_path, rng):
    Y = rng.normal(size=(25, 2))
    path = save_html(scatter(Y, [0, 1, 2, 3, 4] * 5, title="five"), tmp_path / "plot.html")
    text = path.read_text(encoding="utf-8")
    assert "<title>five</title>" in text
    assert "cdn.bokeh.org" not in text  # standalone: BokehJS inline
    np.testing.assert_allclose(html_points(text), Y)


# --------------------------------------------------------------------------- diagnostics

def test_cost_curve_of_a_fit(fitted):
    fig = cost_curve(fitted)
    line = next(r for r in glyph_renderers(fig) if r.glyph.__class__.__name__ == "Line")
    np.testing.assert_allclose(line.data_source.data["cost"],
                               [h["cost"] for h in fitted.history_])
    boxes = [a for a in fig.center if isinstance(a, BoxAnnotation)]
    assert [(b.left, b.right) for b in boxes] == [(0, 60)]
    assert not [a for a in fig.center if isinstance(a, Span)]
    # a bare history only bounds the phase by its records (taken every 50 here)
    box = next(a for a in cost_curve(fitted.history_).center if isinstance(a, BoxAnnotation))
    first_after = min(h["iteration"] for h in fitted.history_ if h["iteration"] >= 60)
    assert (box.left, box.right) == (0, first_after)


def test_cost_curve_marks_live_parameter_changes(digits):
    run = HSSNE(max_iter=120, early_exaggeration_iter=40, random_state=0).prepare(digits[0])
    run.step(70)
    run.set_params(alpha=2.0)
    run.step(30)
    fig = cost_curve(run)
    spans = [a for a in fig.center if isinstance(a, Span)]
    assert [s.location for s in spans] == [70]
    assert "α = 2" in [a.text for a in fig.center if isinstance(a, Label)]
    line = next(r for r in glyph_renderers(fig) if r.glyph.__class__.__name__ == "Line")
    np.testing.assert_allclose(line.data_source.data["alpha"],
                               [h["alpha"] for h in run.history])


def test_cost_curve_compares_runs_and_rejects_bad_input(fitted):
    fig = cost_curve({"first": fitted, "second": fitted.history_})
    assert [i.label.value for i in fig.legend[0].items] == ["first", "second"]
    with pytest.raises(ValueError, match="fit it first"):
        cost_curve(HSSNE())
    with pytest.raises(ValueError, match="'iteration' and 'cost'"):
        cost_curve([{"iteration": 0}])
    with pytest.raises(ValueError, match="empty"):
        cost_curve([])


def test_lambda_path_of_an_mbed_fit(digits):
    Mbed = getattr(nbembed, "Mbed", None)
    if Mbed is None:
        pytest.skip("nbembed.Mbed is not available")
    X, y = digits
    keep = y < 2
    mbed = Mbed(n_classes=2, n_anneal=5, max_iter=50, random_state=0).fit(X[keep], y[keep])
    fig = lambda_path(mbed)
    source = point_source_by(fig, "criterion")
    np.testing.assert_allclose(source.data["lam"], mbed.lambda_path_)
    np.testing.assert_allclose(source.data["criterion"], mbed.criterion_path_)
    spans = [a for a in fig.center if isinstance(a, Span)]
    assert [s.location for s in spans] == [mbed.selected_step_]


def test_lambda_path_from_arrays_and_errors():
    path = dict(lambda_path_=np.geomspace(20, 0.2, 6), criterion_path_=[1, 3, 2, 5, 4, 0],
                selected_step_=3)
    fig = lambda_path(path)
    star = next(r for r in glyph_renderers(fig) if getattr(r.glyph, "marker", None) == "star")
    assert list(star.data_source.data["x"]) == [3] and list(star.data_source.data["y"]) == [5]
    assert fig.extra_y_scales["lambda"].__class__.__name__ == "LogScale"
    with pytest.raises(ValueError, match="selected_step_"):
        lambda_path({**path, "selected_step_": 6})
    with pytest.raises(ValueError, match="one entry per annealing step"):
        lambda_path({**path, "criterion_path_": [1, 2]})
    with pytest.raises(ValueError, match="lambda_path_"):
        lambda_path(object())


def test_precision_recall_of_real_embeddings(digits):
    X, _ = digits
    precision, recall, names = [], [], []
    for alpha in (0.5, 1.0, 2.0):
        Y = HSSNE(alpha=alpha, max_iter=150, early_exaggeration_iter=60, random_state=0) \
            .fit_transform(X)
        p, r = retrieval(X, Y, k_input=10, k_retrieved=5)
        precision.append(p)
        recall.append(r)
        names.append(f"α = {alpha:g}")
    fig = precision_recall(precision, recall, labels=names)
    source = point_source_by(fig, "precision")
    np.testing.assert_allclose(source.data["precision"], precision)
    np.testing.assert_allclose(source.data["recall"], recall)
    assert list(source.data["label"]) == names
    assert fig.x_range.start == 0 and fig.y_range.start == 0
    with pytest.raises(ValueError, match="same length"):
        precision_recall([0.5], [0.5, 0.6])
    with pytest.raises(ValueError, match="one entry per point"):
        precision_recall([0.5], [0.5], labels=["a", "b"])


# --------------------------------------------------------------------------- helpers

def point_source_by(fig, column):
    return next(r.data_source for r in glyph_renderers(fig) if column in r.data_source.data)


def retrieval(X, Y, k_input, k_retrieved):
    """Mean precision and recall of retrieving k_retrieved embedded neighbours
    when the k_input input neighbours are relevant."""
    def neighbours(Z, k):
        d = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
        np.fill_diagonal(d, np.inf)
        return np.argsort(d, axis=1)[:, :k]
    relevant, retrieved = neighbours(X, k_input), neighbours(Y, k_retrieved)
    hits = np.array([len(set(a) & set(b)) for a, b in zip(relevant, retrieved)])
    return hits.mean() / k_retrieved, hits.mean() / k_input


def decode_png(data):
    """Pixels of an 8-bit, non-interlaced PNG written with filter type 0."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, payload = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert crc == zlib.crc32(kind + payload) & 0xFFFFFFFF
        chunks[kind] = chunks.get(kind, b"") + payload
        pos += 12 + length
    width, height, depth, color_type = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    channels = {0: 1, 2: 3, 6: 4}[color_type]
    raw = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), dtype=np.uint8)
    rows = raw.reshape(height, 1 + width * channels)
    assert depth == 8 and np.all(rows[:, 0] == 0)
    pixels = rows[:, 1:].reshape(height, width, channels)
    return pixels[..., 0] if channels == 1 else pixels


def html_points(text):
    """The (x, y) columns of the scatter's data source in a standalone HTML file."""
    match = re.search(r'<script type="application/json" id="[^"]+">\s*(.*?)\s*</script>',
                      text, re.S)
    docs = json.loads(match.group(1))
    doc = Document.from_json(next(iter(docs.values())))
    sources = [m for m in doc.models if isinstance(m, ColumnDataSource) and "index" in m.data]
    assert len(sources) == 1
    data = sources[0].data
    return np.column_stack([data["x"], data["y"]])
