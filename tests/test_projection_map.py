"""ProjectionMap: the fitted map of SpectralSSDR and Parametric Embedding, pure row by row."""

import pickle

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_digits
from sklearn.exceptions import NotFittedError
from sklearn.metrics.pairwise import pairwise_kernels

from nbembed import SSLFDA, ParametricEmbedding, SpectralSSDR
from nbembed.fitted_map import ProjectionMap, fitted_map
from nbembed.spectral.kpca import KernelPCAMap


@pytest.fixture(scope="module")
def digits():
    """400 digits to fit, 4 per class labelled, and 160 new rows."""
    X, y = load_digits(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(X))
    X, y = X[order], y[order]
    partial = np.full(400, -1)
    for c in range(10):
        first = np.flatnonzero(y[:400] == c)[:4]
        partial[first] = c
    return X[:400], partial, X[400:560]


@pytest.fixture(scope="module")
def posteriors():
    rng = np.random.default_rng(4)
    return rng.dirichlet(np.full(5, 0.4), size=200), rng.dirichlet(np.full(5, 0.4), size=90)


def _in_chunks(place, X, sizes):
    """``place`` of ``X`` a chunk at a time, the chunks in reverse order."""
    bounds = np.cumsum([0, *sizes])
    pieces = {i: place(X[a:b]) for i, (a, b) in
              reversed(list(enumerate(zip(bounds[:-1], bounds[1:]))))}
    return np.concatenate([pieces[i] for i in range(len(sizes))])


def _pure(placer, X):
    """The output for all rows at once; checked equal chunk by chunk and on one thread."""
    whole = placer.transform(X)
    assert np.array_equal(_in_chunks(placer.transform, X, [1, 7, X.shape[0] - 8]), whole)
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        assert np.array_equal(placer.transform(X), whole)
    finally:
        numba.set_num_threads(threads)
    return whole


@pytest.mark.parametrize("kernel", [None, "rbf", "poly", "linear"])
def test_spectral_map_places_as_the_estimator_row_by_row(digits, kernel):
    X, partial, X_new = digits
    model = SpectralSSDR(n_components=3, kernel=kernel).fit(X, partial)
    placer = fitted_map(model)
    assert isinstance(placer, ProjectionMap) and placer.n_components == 3
    whole = _pure(placer, X_new)
    assert np.array_equal(whole, model.transform(X_new))
    # The row-by-row sums agree with the matrix products they replace.
    if kernel is None:
        expected = (X_new - model.mean_) @ model.components_.T
    else:
        kpca = model.kernel_pca_
        K = pairwise_kernels(X_new, kpca.X_fit_, metric=kernel, **kpca.params_)
        Kc = K - kpca.column_means_ - K.mean(axis=1, keepdims=True) + kpca.total_mean_
        expected = (Kc @ kpca._projection - model.mean_) @ model.components_.T
    np.testing.assert_allclose(whole, expected, rtol=1e-9, atol=1e-9 * np.abs(expected).max())


def test_kernel_pca_rows_match_scikit_learn_kernels(digits):
    X, _, X_new = digits
    for kernel, params in [("rbf", {"gamma": 1e-3}), ("poly", {}),
                           ("poly", {"gamma": 0.01, "coef0": 2.0, "degree": 2}),
                           ("linear", {})]:
        kpca = KernelPCAMap(kernel, params)
        kpca.fit_transform(X[:100])
        np.testing.assert_allclose(kpca._kernel_rows(X_new),
                                   pairwise_kernels(X_new, X[:100], metric=kernel, **params),
                                   rtol=1e-12)


def test_sparse_spectral_map_is_pure_and_takes_sparse_chunks(digits):
    X, partial, X_new = digits
    model = SSLFDA(n_components=2).fit(sp.csr_matrix(X), partial)
    placer = fitted_map(model)
    assert placer.method == "SSLFDA" and placer.accepts_sparse
    whole = placer.transform(sp.csr_matrix(X_new))
    assert np.array_equal(whole, model.transform(sp.csr_matrix(X_new)))
    chunks = [placer.transform(sp.csr_matrix(X_new[a:a + 50])) for a in range(0, 160, 50)]
    assert np.array_equal(np.concatenate(chunks), whole)


def test_parametric_map_places_as_the_estimator_row_by_row(posteriors):
    P, P_new = posteriors
    model = ParametricEmbedding(random_state=0).fit(P)
    placer = fitted_map(model)
    assert placer.method == "ParametricEmbedding" and placer.n_features_in_ == 5
    whole = _pure(placer, P_new)
    assert np.array_equal(whole, model.transform(P_new))
    # Newton's method from the old start P @ Phi reaches the same positions.
    np.testing.assert_allclose(whole, model.transform(P_new), atol=1e-12)


def test_the_map_is_small_pickles_and_leaves_the_estimator_alone(digits):
    X, partial, X_new = digits
    model = SpectralSSDR(n_components=2).fit(X, partial)
    placer = fitted_map(model)
    assert hasattr(model, "embedding_") and hasattr(model, "history_")
    again = pickle.loads(pickle.dumps(placer))
    assert np.array_equal(again.transform(X_new), placer.transform(X_new))
    assert len(pickle.dumps(placer)) < min(4000, len(pickle.dumps(model)) / 3)
    assert placer.__dask_tokenize__() == fitted_map(model).__dask_tokenize__()
    assert repr(placer) == "ProjectionMap(method='SpectralSSDR', n_features_in_=64, " \
                           "n_components=2)"
    assert list(placer.get_feature_names_out()) == ["spectralssdr0", "spectralssdr1"]


def test_bad_input_and_requests_are_refused(digits, posteriors):
    X, partial, X_new = digits
    with pytest.raises(NotFittedError):
        fitted_map(SpectralSSDR())
    with pytest.raises(NotFittedError):
        fitted_map(ParametricEmbedding())
    model = SpectralSSDR(n_components=2).fit(X, partial)
    with pytest.raises(ValueError, match="takes no perplexity"):
        fitted_map(model, perplexity=10)
    placer = fitted_map(model)
    with pytest.raises(ValueError, match="X has 63 features, but the fitted map of "
                                         "SpectralSSDR is expecting 64"):
        placer.transform(X_new[:, 1:])
    bad = X_new.copy()
    bad[3, 5] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        placer.transform(bad)
    assert placer.transform(X_new[:0]).shape == (0, 2)
    pe = fitted_map(ParametricEmbedding(random_state=0).fit(posteriors[0]))
    with pytest.raises(ValueError, match="sum"):
        pe.transform(posteriors[1] * 2.0)
    assert not hasattr(placer, "predict") and placer.n_classes is None


def test_map_saved_with_skops_loads_with_the_trusted_types(digits, posteriors):
    skops_io = pytest.importorskip("skops.io")
    from nbembed.persistence import trusted_types

    X, partial, X_new = digits
    for model, rows in [(SpectralSSDR(n_components=2, kernel="rbf").fit(X, partial), X_new),
                        (ParametricEmbedding(random_state=0).fit(posteriors[0]), posteriors[1])]:
        placer = fitted_map(model)
        data = skops_io.dumps(placer)
        assert set(skops_io.get_untrusted_types(data=data)) <= set(trusted_types())
        copy = skops_io.loads(data, trusted=trusted_types())
        assert np.array_equal(copy.transform(rows), placer.transform(rows))
