"""The Explorer's sample mode and ``place``: rows put on the running map (no browser)."""

import numpy as np
import pytest

pytest.importorskip("anywidget")

from nbembed import HSSNE, SpectralSSDR  # noqa: E402
from nbembed.widget import Explorer  # noqa: E402
from nbembed.widget import placing  # noqa: E402
from nbembed.widget.growing import fitted_at  # noqa: E402
from nbembed.widget.messages import parse  # noqa: E402
from nbembed.widget.traits import FLOAT32, UINT32, decode  # noqa: E402
from test_widget import bundle, custom_msg, wait_for  # noqa: E402,F401
from test_widget_pins import explorer  # noqa: E402,F401


def blobs(n=300, seed=0):
    """Three well separated blobs in 3-D; row i is in blob i % 3."""
    rng = np.random.default_rng(seed)
    return np.tile(np.eye(3) * 10, (n // 3, 1)) + rng.normal(size=(n, 3))


def method():
    return HSSNE(alpha=1.0, perplexity=10, max_iter=60, early_exaggeration_iter=20,
                 random_state=0)


def test_a_sample_runs_live_and_every_per_row_argument_follows_it(explorer):
    X = blobs()
    labels = np.where(np.arange(300) < 30, np.arange(300) % 3, -1)
    ex = explorer(X, sample=90, labels=labels,
                  hover_text=[f"row {i}" for i in range(300)],
                  data={"size": np.arange(300.0)})
    rows = ex.sample_rows
    assert rows.shape == (90,) and np.all(np.diff(rows) > 0) and rows.max() < 300
    assert ex.n_points == 90 and ex.rest_count == 210
    np.testing.assert_array_equal(ex._X, X[rows])
    assert ex.hover_text == [f"row {i}" for i in rows]
    np.testing.assert_array_equal(ex.annotations.to_labels(), labels[rows])
    np.testing.assert_array_equal(ex._user_values["size"], rows.astype(float))
    # the same seed draws the same sample
    assert explorer(X, sample=90).sample_rows.tolist() == rows.tolist()


def test_place_rest_puts_every_other_row_where_transform_puts_it(explorer):
    X = blobs()
    ex = explorer(X, sample=90)
    ex.step(60)
    ex.wait(timeout=120)
    expected = fitted_at(ex._method, X[ex.sample_rows], ex.run).transform(
        np.delete(X, ex.sample_rows, axis=0))
    placed = ex.place_rest(wait=True, timeout=120)
    rest = np.setdiff1d(np.arange(300), ex.sample_rows)
    np.testing.assert_array_equal(placed.rows, rest)
    np.testing.assert_allclose(placed.embedding, expected, rtol=1e-12, atol=1e-12)
    assert placed.iteration == ex.run.iteration and ex.placed is placed
    assert ex.placed_count == 210 and ex.placing == ""
    # each placed row lands among its own blob's live points
    blob_of_live = ex.sample_rows % 3
    nearest = np.argmin(np.linalg.norm(placed.embedding[:, None] - ex.embedding[None],
                                       axis=2), axis=1)
    assert np.mean(blob_of_live[nearest] == rest % 3) > 0.95


def test_the_layer_is_each_rows_nearest_live_point_and_its_offset_on_the_page(explorer):
    X = blobs()
    ex = explorer(X, sample=120)
    placed = ex.place_rest(wait=True, timeout=120)
    refs = decode(ex._placed_refs, UINT32)
    offsets = decode(ex._placed_offsets, FLOAT32).reshape(-1, 2)
    assert refs.shape == (180,) and offsets.shape == (180, 2)
    live = ex.embedding
    distances = np.linalg.norm(placed.embedding[:, None] - live[None], axis=2)
    np.testing.assert_array_equal(refs, np.argmin(distances, axis=1))
    # what the page draws: the live point's position plus offset times frame_scale
    np.testing.assert_allclose(live[refs] + offsets, placed.embedding, atol=1e-5)
    assert ex.frame_scale > 0


def test_place_puts_any_rows_on_the_map_and_checks_them_first(explorer):
    X = blobs()
    ex = explorer(X[:150])
    placed = ex.place(X[150:], timeout=120)
    assert placed.rows is None and placed.embedding.shape == (150, 2)
    assert ex.placed_count == 150
    with pytest.raises(ValueError, match="features"):
        ex.place(X[150:, :2])
    with pytest.raises(ValueError, match="NaN"):
        ex.place(np.full((3, 3), np.nan))
    with pytest.raises(ValueError, match="sample="):
        ex.place_rest()
    assert ex.placed is placed  # nothing changed
    far = ex.place(np.vstack([X[:5], 1000 + X[:3]]), timeout=120)
    assert far.embedding.shape == (8, 2)
    assert "3 of the 8 placed rows lie far outside" in ex.notice


def test_methods_without_transform_and_bad_samples_are_refused(explorer, bundle):
    X = blobs()
    ex = explorer(X, method=SpectralSSDR(n_components=2, label_cost=None))
    with pytest.raises(ValueError, match="transform"):
        ex.place(X)
    for bad in (1, 2.5, True, "all"):
        with pytest.raises(ValueError, match="sample"):
            Explorer(X, method=method(), sample=bad, autostart=False)
    with pytest.raises(ValueError, match="labels="):
        from nbembed import Annotations
        Explorer(X, method=method(), sample=10, annotations=Annotations(300), autostart=False)


def test_the_page_asks_for_the_rest_with_a_message(explorer):
    assert parse({"type": "place_rest"}) == ("place_rest", {})
    X = blobs()
    ex = explorer(X, sample=90)
    ex._handle_msg(custom_msg({"type": "place_rest"}))
    wait_for(lambda: ex.placed_count == 210, timeout=120)
    assert ex.placed.rows.size == 210


def test_a_second_placement_replaces_the_first_and_the_shown_rows_are_bounded(
        explorer, monkeypatch):
    monkeypatch.setattr(placing, "PLACED_SHOWN_MAX", 50)
    X = blobs()
    ex = explorer(X, sample=90)
    first = ex.place(X[:120], timeout=120)
    assert first.shown.size == 50 and decode(ex._placed_refs, UINT32).size == 50
    second = ex.place(X[:10], timeout=120)
    assert ex.placed is second and second.shown.tolist() == list(range(10))
    assert ex.placed_count == 10 and decode(ex._placed_refs, UINT32).size == 10
