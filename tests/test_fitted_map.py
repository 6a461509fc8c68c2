"""FittedMap: what placing new points needs, picklable, and pure chunk by chunk."""

import pickle
import warnings

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError
from sklearn.metrics import pairwise_distances

from _placement import digits, hssne, mbed  # noqa: F401

from nbembed import HSSNE, SNE, Mbed, NeRV, SpectralSSDR
from nbembed.fitted_map import STATE_VERSION, FittedMap, fitted_map
from nbembed.methods import _new_points as new_points


def _in_chunks(place, X, sizes):
    """``place`` of ``X`` a chunk at a time, the chunks of the given sizes in reverse order."""
    bounds = np.cumsum([0, *sizes])
    assert bounds[-1] == X.shape[0]
    pieces = {i: place(X[a:b]) for i, (a, b) in reversed(list(enumerate(zip(bounds[:-1],
                                                                              bounds[1:]))))}
    return np.concatenate([pieces[i] for i in range(len(sizes))])


# -- the same output as the estimator -------------------------------------------------------------
def test_transform_equals_the_estimators_bit_for_bit(hssne, digits):
    X_new = digits[2]
    placer = fitted_map(hssne)
    assert np.array_equal(placer.transform(X_new), hssne.transform(X_new))
    assert placer.n_features_in_ == 64 and placer.n_components == 2
    assert placer.n_reference == 300 and placer.n_classes is None
    assert placer.metric == "euclidean"
    assert list(placer.get_feature_names_out()) == list(hssne.get_feature_names_out())
    assert "HSSNE" in repr(placer)


def test_each_row_depends_on_that_row_alone(hssne, digits, monkeypatch):
    X_new = digits[2]
    placer = fitted_map(hssne)
    Y = placer.transform(X_new)
    assert np.array_equal(_in_chunks(placer.transform, X_new, [1] * 10 + [37, 0, 100, 93]), Y)
    order = np.random.default_rng(1).permutation(len(X_new))
    assert np.array_equal(placer.transform(X_new[order]), Y[order])
    monkeypatch.setattr(new_points, "NEIGHBOUR_BLOCK", 500)  # blocks of 33 rows
    assert np.array_equal(placer.transform(X_new), Y)
    monkeypatch.undo()
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        single = placer.transform(X_new)
    finally:
        numba.set_num_threads(threads)
    assert np.array_equal(single, Y)


def test_placement_perplexity_of_the_map(hssne, digits):
    X_new = digits[2][:40]
    wide = fitted_map(hssne, perplexity=20)
    assert np.array_equal(wide.transform(X_new), hssne.transform(X_new, perplexity=20))
    assert not np.allclose(wide.transform(X_new), fitted_map(hssne).transform(X_new))


@pytest.mark.parametrize("make", [
    lambda: SNE(perplexity=15, max_iter=150, random_state=0),
    lambda: NeRV(n_neighbors=15, max_iter=30, anneal_iter=10, random_state=0),
    lambda: Mbed(n_classes=4, affinity="knn", n_neighbors=40, max_iter=60, random_state=0),
], ids=["SNE", "NeRV", "Mbed-knn"])
def test_other_methods(make, digits):
    X, _, X_new = digits
    model = make().fit(X)
    placer = pickle.loads(pickle.dumps(fitted_map(model)))
    Y = placer.transform(X_new[:60])
    assert np.array_equal(Y, model.transform(X_new[:60]))
    assert np.array_equal(_in_chunks(placer.transform, X_new[:60], [7, 23, 30]), Y)


def test_mbed_classifies_rows_alone(mbed, digits):
    X_new = digits[2]
    placer = fitted_map(mbed)
    assert placer.n_classes == 3
    assert np.array_equal(placer.transform(X_new), mbed.transform(X_new))
    proba = placer.predict_proba(X_new)
    # Mbed's own memberships are a matrix product, which rounds with the batch.
    np.testing.assert_allclose(proba, mbed.predict_proba(X_new), rtol=0, atol=1e-13)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.array_equal(placer.predict(X_new), mbed.predict(X_new))
    assert np.array_equal(_in_chunks(placer.predict_proba, X_new, [1, 2, 3, 34, 200]), proba)
    np.testing.assert_allclose(placer.memberships_at(mbed.embedding_), mbed.membership_,
                               atol=1e-12)


def test_mbed_stopped_before_annealing_gives_uniform_memberships(digits):
    X = digits[0][:60]
    model = Mbed(n_classes=3, max_iter=12, n_iter_init=10, n_anneal=3, random_state=0)
    model.fit(X, callbacks=lambda run: run.iteration >= 5)
    assert model.selected_step_ is None
    proba = fitted_map(model).predict_proba(digits[2][:5])
    np.testing.assert_array_equal(proba, np.full((5, 3), 1 / 3))


# -- input the estimators take ---------------------------------------------------------------------
def test_sparse_rows(digits):
    X, _, X_new = digits
    model = HSSNE(perplexity=10, max_iter=150, random_state=0).fit(sp.csr_matrix(X))
    placer = fitted_map(model)
    rows = sp.csr_matrix(X_new[:50])
    Y = placer.transform(rows)
    assert np.array_equal(Y, model.transform(rows))
    assert np.array_equal(_in_chunks(placer.transform, rows, [1, 9, 40]), Y)


@pytest.mark.parametrize("metric", ["cosine", "l2"])
def test_dense_metrics_of_matrix_products_are_computed_row_by_row(metric, digits):
    """scikit-learn's cosine distance is a matrix product: the estimator's transform of a
    row changes in the last bits with the batch. The map's does not, and stays within
    rounding of the estimator's."""
    X, _, X_new = digits
    model = HSSNE(perplexity=10, metric=metric, max_iter=150, random_state=0).fit(X)
    placer = fitted_map(model)
    Y = placer.transform(X_new)
    alone = np.vstack([placer.transform(X_new[i:i + 1]) for i in range(len(X_new))])
    assert np.array_equal(alone, Y)
    np.testing.assert_allclose(Y, model.transform(X_new), rtol=0, atol=1e-9)


def test_precomputed_dissimilarities(digits):
    X, _, X_new = digits
    model = SNE(perplexity=15, metric="precomputed", max_iter=100, random_state=0)
    model.fit(pairwise_distances(X))
    placer = pickle.loads(pickle.dumps(fitted_map(model)))
    D = pairwise_distances(X_new[:50], X)
    assert np.array_equal(placer.transform(D), model.transform(D))
    with pytest.raises(ValueError, match="dissimilarities to the training points"):
        placer.transform(X_new[:5])


# -- pickling ------------------------------------------------------------------------------------
def test_pickled_map_is_small_and_places_the_same(hssne, digits):
    X, _, X_new = digits
    placer = fitted_map(hssne)
    before = pickle.dumps(placer)
    Y = placer.transform(X_new)  # builds the transposed copy of the training data
    after = pickle.dumps(placer)
    assert len(after) == len(before)
    # The training data and their embedding, hardly more.
    assert len(after) < X.nbytes + hssne.embedding_.nbytes + 20_000
    assert len(after) < len(pickle.dumps(hssne)) / 3
    copy = pickle.loads(after)
    assert np.array_equal(copy.transform(X_new), Y)
    assert copy.__dask_tokenize__() == placer.__dask_tokenize__()


def test_map_saved_with_skops_loads_with_the_trusted_types(mbed, digits):
    skops_io = pytest.importorskip("skops.io")
    from nbembed.persistence import trusted_types
    placer = fitted_map(mbed)
    data = skops_io.dumps(placer)
    assert set(skops_io.get_untrusted_types(data=data)) <= set(trusted_types())
    copy = skops_io.loads(data, trusted=trusted_types())
    assert np.array_equal(copy.transform(digits[2]), placer.transform(digits[2]))
    assert np.array_equal(copy.predict_proba(digits[2]), placer.predict_proba(digits[2]))


def test_dask_token_names_the_content(hssne):
    assert fitted_map(hssne).__dask_tokenize__() == fitted_map(hssne).__dask_tokenize__()
    assert fitted_map(hssne, perplexity=10).__dask_tokenize__() != \
        fitted_map(hssne).__dask_tokenize__()


def test_a_map_pickled_in_another_layout_is_refused(hssne):
    state = fitted_map(hssne).__getstate__()
    assert state["state_version"] == STATE_VERSION
    state["state_version"] = STATE_VERSION + 1
    blank = FittedMap.__new__(FittedMap)
    with pytest.raises(ValueError, match="make the map again"):
        blank.__setstate__(state)


# -- far rows and bad input --------------------------------------------------------------------
def test_far_rows_are_flagged_and_warned_about(hssne, digits):
    X, _, X_new = digits
    placer = fitted_map(hssne)
    far = X_new[:4] + 500.0
    rows = np.vstack([X_new[:6], far])
    flags = placer.far_from_training(rows)
    assert flags.dtype == bool and flags.tolist() == [False] * 6 + [True] * 4
    with pytest.warns(UserWarning, match="4 of the 10 new points lie far outside"):
        placer.transform(rows)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        placer.transform(X_new[:6])
    assert placer.far_from_training(X_new[:0]).shape == (0,)


def test_no_rows_give_an_empty_result(hssne, mbed):
    assert fitted_map(hssne).transform(np.empty((0, 64))).shape == (0, 2)
    assert fitted_map(mbed).predict_proba(np.empty((0, 64))).shape == (0, 3)
    assert fitted_map(mbed).predict(np.empty((0, 64))).shape == (0,)


def test_bad_input_is_refused_clearly(hssne, digits):
    placer = fitted_map(hssne)
    X_new = digits[2][:5]
    with pytest.raises(ValueError, match="X has 10 features, but the fitted map of HSSNE is "
                                         "expecting 64"):
        placer.transform(X_new[:, :10])
    with pytest.raises(ValueError, match="X has 10 features"):
        placer.transform(np.empty((0, 10)))
    bad = X_new.copy()
    bad[3, 7] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        placer.transform(bad)
    with pytest.raises(ValueError, match="2-D"):
        placer.transform(X_new[0])
    with pytest.raises(ValueError, match="does not classify"):
        placer.predict(X_new)


def test_estimators_without_a_map_are_refused(digits):
    X = digits[0][:60]
    with pytest.raises(NotFittedError):
        fitted_map(HSSNE())
    A = np.exp(-pairwise_distances(X) ** 2 / 2000.0)
    affinities = HSSNE(affinity="precomputed", perplexity=5, max_iter=30, random_state=0).fit(A)
    with pytest.raises(ValueError, match="affinity='precomputed'"):
        fitted_map(affinities)
    with pytest.raises(NotFittedError):
        fitted_map(SpectralSSDR())
    with pytest.raises(TypeError, match="fitted_map takes a fitted HSSNE"):
        fitted_map(X)
    mbed = Mbed(n_classes=3, max_iter=40, random_state=0).fit(X)
    with pytest.raises(ValueError, match="fixed width sigma"):
        fitted_map(mbed, perplexity=5)
