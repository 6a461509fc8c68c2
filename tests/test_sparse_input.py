"""Sparse data rows and the cosine metric: a scipy.sparse X gives what its dense
copy gives (to float64 rounding), is never densified, and bad sparse input is
refused clearly."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import pairwise_distances
from sklearn.preprocessing import normalize

from nbembed import HSSNE, SNE, Mbed, NeRV, SNeRV, SpectralSSDR, _config
from nbembed.affinity import knn_graphs
from nbembed.affinity.perplexity import conditional_probabilities, nearest_neighbors
from nbembed.datasets import make_tfidf_documents
from nbembed.methods._base import initial_embedding, validate_input
from nbembed.methods.spectral_presets import DNE, LFDA, LPP, MFA, PCA, SELF, SSDNE, SSLFDA, SSMFA
from nbembed.spectral.sparse_data import ImplicitBasis, SparseCoordinates, sparse_data_basis

EPS = np.finfo(np.float64).eps
#: Sparse and dense products add the same terms in different orders: squared
#: distances of rows of unit scale agree to a few hundred ulps, and P, a smooth
#: function of them with slopes of order 1 (beta d^2 ~ log perplexity), as well.
P_TOLERANCE = 1e3 * EPS
METRICS = ("euclidean", "cosine")


@pytest.fixture(scope="module")
def documents():
    """A small tf-idf set: 160 documents, 600 terms, two classes."""
    X, y = make_tfidf_documents(160, 600, topic_terms=100, topic_share=0.3, random_state=0)
    return X, y


def _formats(X):
    return {"csr": sp.csr_matrix(X), "csc": sp.csc_matrix(X), "coo": sp.coo_matrix(X),
            "csr_array": sp.csr_array(X), "float32": sp.csr_matrix(X, dtype=np.float32)}


def _no_densifying(monkeypatch, n_features):
    """Make densifying a sparse matrix of ``n_features`` columns (rows of X) fail the
    test; sparse n x n products and n x 1 norms may still become arrays."""
    for cls in (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.csr_array):
        for name in ("toarray", "todense"):
            original = getattr(cls, name)

            def refuse(self, *args, _original=original, **kwargs):
                assert self.shape[-1] != n_features, "rows of a sparse X were densified"
                return _original(self, *args, **kwargs)
            monkeypatch.setattr(cls, name, refuse)


# -- affinities --------------------------------------------------------------------------

@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("method", ["exact", "knn"])
def test_sparse_affinities_equal_the_dense_ones(documents, metric, method):
    X, _ = documents
    dense = X.toarray()
    P_dense, beta_dense = conditional_probabilities(dense, 12.0, method=method, metric=metric)
    for name, S in _formats(X).items():
        S = validate_input(S, min_samples=4, metric=metric, sparse_rows=True)  # as fit does
        assert sp.isspmatrix_csr(S) and S.dtype == np.float64
        P, beta = conditional_probabilities(S, 12.0, method=method, metric=metric)
        assert type(P) is type(P_dense), name
        P, Pd = (P.toarray(), P_dense.toarray()) if sp.issparse(P) else (P, P_dense)
        # float32 rows are other numbers than float64 rows: compare with their own copy.
        if name == "float32":
            Pd = conditional_probabilities(S.toarray(), 12.0, method=method, metric=metric)[0]
            Pd = Pd.toarray() if sp.issparse(Pd) else Pd
        np.testing.assert_allclose(P, Pd, rtol=0, atol=P_TOLERANCE, err_msg=name)
        if name != "float32":
            np.testing.assert_allclose(beta, beta_dense, rtol=1e3 * EPS, err_msg=name)


def test_repeated_sparse_rows_are_floored_as_the_dense_ones_are(documents):
    X, _ = documents
    X = sp.vstack([X[:40]] + [X[:1]] * 15).tocsr()  # row 0 with 15 copies
    P_sparse, beta_sparse = conditional_probabilities(X, 10.0, method="exact")
    P_dense, beta_dense = conditional_probabilities(X.toarray(), 10.0, method="exact")
    np.testing.assert_allclose(P_sparse, P_dense, rtol=0, atol=P_TOLERANCE)
    np.testing.assert_allclose(beta_sparse, beta_dense, rtol=1e-9)
    assert np.all(np.isfinite(beta_sparse))


@pytest.mark.parametrize("sparse", [False, True])
def test_cosine_is_half_the_squared_euclidean_distance_of_normalized_rows(documents, sparse):
    X, _ = documents
    X = X.multiply(np.arange(1, X.shape[0] + 1)[:, None]).tocsr()  # rows of other norms
    unit = normalize(X)
    data, unit = (X, unit) if sparse else (X.toarray(), unit.toarray())
    d_cos, i_cos = nearest_neighbors(data, 8, metric="cosine", neighbors="exact")
    d_euc, i_euc = nearest_neighbors(unit, 8, metric="euclidean", neighbors="exact")
    np.testing.assert_array_equal(i_cos, i_euc)
    np.testing.assert_allclose(d_cos, d_euc ** 2 / 2, rtol=0, atol=1e3 * EPS)


@pytest.mark.slow
@pytest.mark.parametrize("metric", METRICS)
def test_approximate_neighbours_search_sparse_rows(documents, metric, monkeypatch):
    pytest.importorskip("pynndescent")
    X, _ = documents
    exact_d, exact_i = nearest_neighbors(X, 10, metric=metric, neighbors="exact")
    _no_densifying(monkeypatch, X.shape[1])
    d, i = nearest_neighbors(X, 10, metric=metric, neighbors="approximate", random_state=0)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(i, exact_i)])
    assert recall > 0.95
    # pynndescent computes in single precision.
    np.testing.assert_allclose(np.sort(d, axis=1)[:, -1], exact_d[:, -1], atol=1e-5)


def test_pca_start_of_sparse_rows_equals_the_dense_one(documents):
    X, _ = documents
    sparse = initial_embedding(X, "pca", 2, 0)
    dense = initial_embedding(X.toarray(), "pca", 2, 0)
    np.testing.assert_allclose(sparse, dense, rtol=1e-8, atol=1e-8 * np.abs(dense).max())


# -- estimators -------------------------------------------------------------------------

@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("cls, params", [
    (Mbed, dict(max_iter=30, n_anneal=5)),
    (NeRV, dict(n_neighbors=10, max_iter=30, anneal_iter=10)),
], ids=["Mbed", "NeRV"])
def test_line_search_fits_of_sparse_rows_equal_the_dense_fits(documents, cls, params, metric,
                                                               monkeypatch):
    # Long runs amplify rounding: 80 iterations of Mbed move a dense fit by 1% of
    # its spread when X is multiplied by 1 + 1e-15, and the sparse fit as much.
    X, y = documents
    partial = np.where(np.arange(len(y)) < 10, y, -1)
    dense = cls(metric=metric, random_state=0, **params).fit(X.toarray(), partial)
    new_dense = dense.transform(X[:7].toarray())
    _no_densifying(monkeypatch, X.shape[1])
    model = cls(metric=metric, random_state=0, **params).fit(X.tocoo(), partial)
    scale = np.abs(dense.embedding_).max()
    np.testing.assert_allclose(model.embedding_, dense.embedding_, rtol=0, atol=1e-6 * scale)
    np.testing.assert_allclose(model.transform(X[:7]), new_dense, rtol=0, atol=1e-6 * scale)


@pytest.mark.parametrize("metric", METRICS)
# 160 points: HSSNE's "auto" step (50) overshoots early exaggeration, and the run would
# go back to its start; n / 12 takes the first iterations.
@pytest.mark.parametrize("cls, params", [(HSSNE, dict(learning_rate=13.0)),
                                         (SNE, dict(learning_rate=0.05))],
                         ids=["HSSNE", "SNE"])
def test_gradient_fits_of_sparse_rows_start_as_the_dense_fits(documents, cls, params, metric,
                                                              monkeypatch):
    # t-SNE's descent amplifies rounding: perturbing dense X by one part in 10^15
    # moves a 300-iteration embedding by O(1). What must agree is P, the start and
    # the first iterations.
    X, _ = documents
    params = dict(metric=metric, perplexity=12, max_iter=10, random_state=0, **params)
    dense = cls(**params).fit(X.toarray())
    _no_densifying(monkeypatch, X.shape[1])
    model = cls(**params).fit(X.tocsc())
    scale = np.abs(dense.embedding_).max()
    np.testing.assert_allclose(model.embedding_, dense.embedding_, rtol=0, atol=1e-7 * scale)


@pytest.mark.parametrize("metric", METRICS)
def test_transform_takes_sparse_or_dense_new_rows_alike(documents, metric):
    X, _ = documents
    model = HSSNE(metric=metric, perplexity=12, max_iter=100, random_state=0).fit(X)
    sparse = model.transform(X[:9])
    np.testing.assert_allclose(model.transform(X[:9].toarray()), sparse, rtol=0,
                               atol=1e-9 * np.abs(model.embedding_).max())
    # A new point lands on the same bits alone or in a batch.
    alone = np.vstack([model.transform(X[i:i + 1]) for i in range(9)])
    np.testing.assert_array_equal(alone, sparse)


def test_mbed_on_tfidf_rows_separates_the_two_classes(documents):
    X, y = documents
    labelled = np.zeros(len(y), dtype=bool)
    labelled[:6] = True  # three documents per class
    model = Mbed(2, metric="cosine", random_state=0).fit(X, np.where(labelled, y, -1))
    error = np.mean(model.labels_[~labelled] != y[~labelled])
    assert error < 0.1


# -- spectral learners -------------------------------------------------------------------

#: Spectral fits on sparse and dense rows agree to this, relative to the largest
#: coordinate, up to each axis' sign (measured: 6e-14 at most).
SPECTRAL_TOLERANCE = 1e-8
#: Fixed weights for the slower high-dimensional fits (no cross-validation).
FIXED = dict(gamma=1.0, hadamard_power=1.0, beta=0.1)


@pytest.fixture(scope="module")
def spectral_rows():
    """120 points of three classes in 40 dimensions, 20% of the entries non-zero,
    every fourth point labelled."""
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 40)
    X = rng.normal(size=(3, 40))[y] + rng.normal(size=(120, 40))
    X[rng.random(X.shape) > 0.2] = 0.0
    return sp.csr_matrix(X), y, np.where(np.arange(120) % 4 == 0, y, -1)


@pytest.fixture(scope="module")
def text_rows():
    """150 documents over 3000 terms, 1% of the entries non-zero, every fifth labelled."""
    X, y = make_tfidf_documents(150, 3000, topic_terms=300, topic_share=0.3, min_length=25,
                                max_length=45, random_state=0)
    return X, y, np.where(np.arange(150) % 5 == 0, y, -1)


def _no_dense_rows(monkeypatch, n_features):
    """Make densifying a sparse matrix of rows of X (``n_features`` columns, or that
    many rows: its transpose) fail the test; the D x D forms and n x n products may
    become arrays."""
    for cls in (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.csr_array, sp.csc_array):
        for name in ("toarray", "todense"):
            original = getattr(cls, name)

            def refuse(self, *args, _original=original, **kwargs):
                square = self.shape == (n_features, n_features)
                assert square or n_features not in self.shape, "rows of a sparse X were densified"
                return _original(self, *args, **kwargs)
            monkeypatch.setattr(cls, name, refuse)


def _assert_same_axes(Z, Z_dense):
    """Equal up to the sign of each axis, relative to the largest coordinate."""
    signs = np.sign(np.sum(Z * Z_dense, axis=0))
    np.testing.assert_allclose(Z * signs, Z_dense, rtol=0,
                               atol=SPECTRAL_TOLERANCE * np.abs(Z_dense).max())


def _fit_both(estimator, X, y, monkeypatch, new):
    """(sparse fit, its transform of ``new``) and the same for the densified rows."""
    from sklearn.base import clone
    dense = clone(estimator).fit(X.toarray(), y)
    dense_new = dense.transform(new.toarray())
    with monkeypatch.context() as patch:
        _no_dense_rows(patch, X.shape[1])
        model = clone(estimator).fit(X, y)
        sparse_new = model.transform(new)
    return (model, sparse_new), (dense, dense_new)


#: The semi-supervised presets choose gamma, r and beta by cross-validation; the
#: kernels' fits (in 119 kernel PCA coordinates) take fixed ones, to stay quick.
SPECTRAL_LEARNERS = [SSLFDA(), SSDNE(), SSMFA(), LPP(),
                     SpectralSSDR(kernel="rbf", gamma=1.0, hadamard_power=1.0),
                     SpectralSSDR(label_cost="dne", kernel="poly", kernel_params=dict(degree=2),
                                  gamma=1.0, hadamard_power=2.0)]
SPECTRAL_IDS = ["SS-LFDA", "SS-DNE", "SS-MFA", "LPP", "kernel-rbf", "kernel-poly"]


@pytest.mark.parametrize("estimator", SPECTRAL_LEARNERS, ids=SPECTRAL_IDS)
@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_spectral_fits_of_sparse_rows_equal_the_dense_fits(spectral_rows, estimator, fmt,
                                                           monkeypatch):
    X, _, partial = spectral_rows
    (model, new), (dense, dense_new) = _fit_both(estimator, X.asformat(fmt), partial,
                                                 monkeypatch, X[:9].asformat(fmt))
    _assert_same_axes(model.embedding_, dense.embedding_)
    _assert_same_axes(new, dense_new)
    assert model.selected_params_ == dense.selected_params_
    # The same map: sparse and dense new rows land alike, training rows on the embedding.
    scale = np.abs(dense.embedding_).max()
    np.testing.assert_allclose(model.transform(X[:9].toarray()), new, rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(new, model.embedding_[:9], rtol=0, atol=1e-8 * scale)


@pytest.mark.parametrize("cls", [LFDA, DNE, MFA, SELF, PCA])
def test_supervised_spectral_fits_of_sparse_rows_equal_the_dense_fits(spectral_rows, cls,
                                                                      monkeypatch):
    # Every point labelled: with the partial labels LFDA's and MFA's costs vanish on the
    # directions the labelled points do not span, and their axes there are arbitrary.
    X, y, _ = spectral_rows
    (model, new), (dense, dense_new) = _fit_both(cls(), X, y, monkeypatch, X[-5:])
    _assert_same_axes(model.embedding_, dense.embedding_)
    _assert_same_axes(new, dense_new)


@pytest.mark.parametrize("estimator", [SSLFDA(**FIXED), SSDNE(**FIXED), SSMFA(**FIXED), LPP(),
                                       SSLFDA(kernel="rbf", **FIXED)],
                         ids=["SS-LFDA", "SS-DNE", "SS-MFA", "LPP", "kernel-rbf"])
def test_spectral_fits_of_text_rows_equal_the_dense_fits(text_rows, estimator, monkeypatch):
    X, _, partial = text_rows
    (model, new), (dense, dense_new) = _fit_both(estimator, X, partial, monkeypatch, X[:7])
    _assert_same_axes(model.embedding_, dense.embedding_)
    _assert_same_axes(new, dense_new)
    if estimator.kernel is None:
        assert model.components_.shape == (2, 3000)


def test_spectral_learner_keeps_few_features_sparse_and_reduces_many(spectral_rows, text_rows,
                                                                     monkeypatch):
    searched = []
    original = knn_graphs.knn_distances

    def record(X, n_neighbors):
        searched.append(X)
        return original(X, n_neighbors)
    monkeypatch.setattr(knn_graphs, "knn_distances", record)
    X, _, partial = spectral_rows
    run = SSLFDA(**FIXED).prepare(X, partial)
    # D <= n: the rows stay sparse and their neighbours are searched among them.
    assert isinstance(run.X, SparseCoordinates) and run.X.shape == (120, 40)
    assert sp.issparse(searched[-1]) and searched[-1].shape == (120, 40)
    X, _, partial = text_rows
    run = SSLFDA(**FIXED).prepare(X, partial)
    # D > n: coordinates in the span of the 150 centred rows, dense but 150 x 149.
    assert isinstance(run.X, np.ndarray) and run.X.shape == (150, 149)
    assert isinstance(run.feature_map[1], ImplicitBasis)


def test_sparse_coordinates_give_the_forms_of_the_dense_coordinates(spectral_rows):
    X, _, _ = spectral_rows
    mean, basis, coords = sparse_data_basis(X)
    dense = (X.toarray() - mean) @ basis
    np.testing.assert_allclose(basis.T @ basis, np.eye(40), atol=1e-12)
    np.testing.assert_allclose(coords @ np.eye(40), dense, atol=1e-12)
    M = sp.random(120, 120, density=0.05, random_state=1, format="csr")  # not symmetric
    form = dense.T @ (M @ dense)
    np.testing.assert_allclose(coords.quadratic_form(M), (form + form.T) / 2, atol=1e-10)
    rows = np.arange(0, 120, 3)
    centred = dense[rows] - dense[rows].mean(axis=0)
    np.testing.assert_allclose(coords.scatter(rows), centred.T @ centred, atol=1e-10)


def test_implicit_basis_is_orthonormal_and_maps_the_rows(text_rows):
    X, _, _ = text_rows
    mean, basis, coords = sparse_data_basis(X)
    B = basis.expand(np.eye(basis.shape[1])).T  # the (D, r) basis, for this test only
    np.testing.assert_allclose(B.T @ B, np.eye(basis.shape[1]), atol=1e-8)
    np.testing.assert_allclose((X.toarray() - mean) @ B, coords, atol=1e-10)


@pytest.mark.parametrize("data, message", [
    ("spectral_rows", r"quadratic forms of a sparse X with 40 features would need a 40 x 40 "
                      r"array.*TruncatedSVD"),
    ("text_rows", r"Gram matrix of a sparse X with more features \(3000\) than points "
                  r"\(150\) would need a 150 x 150 array.*Subsample the training points"),
])
def test_spectral_learner_refuses_sparse_rows_beyond_the_memory_limit(request, data, message,
                                                                       monkeypatch):
    X, _, partial = request.getfixturevalue(data)
    monkeypatch.setattr(_config, "MAX_DENSE_BYTES", 8 * 30 * 30)
    with pytest.raises(MemoryError, match=message):
        SSDNE(**FIXED).fit(X, partial)


@pytest.mark.parametrize("shape", [(10, 4), (3, 10)], ids=["few-features", "many-features"])
def test_spectral_learner_refuses_identical_sparse_rows(shape):
    X = sp.csr_matrix(np.tile(np.arange(shape[1]) % 3, (shape[0], 1)).astype(float))
    with pytest.raises(ValueError, match="X has no variance: all samples are identical"):
        LPP(n_neighbors=2).fit(X)


# -- bad input --------------------------------------------------------------------------

@pytest.mark.parametrize("cls", [HSSNE, SNE, Mbed, NeRV])
def test_sparse_rows_need_a_metric_computed_on_sparse_rows(documents, cls):
    X, _ = documents
    with pytest.raises(TypeError, match=r"supported with metric='euclidean' or 'cosine' only; "
                                        r"got metric='manhattan'.*X.toarray\(\)"):
        cls(metric="manhattan").fit(X)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_sparse_entries_are_located(documents, bad):
    X, _ = documents
    X = X.copy()
    row = 17
    X.data[X.indptr[row] + 2] = bad
    column = X.indices[X.indptr[row] + 2]
    with pytest.raises(ValueError, match=rf"X contains NaN or infinity \(first at index "
                                         rf"\({row}, {column}\)\)"):
        HSSNE().fit(X)


@pytest.mark.parametrize("sparse", [False, True])
def test_cosine_refuses_rows_of_zeros(documents, sparse):
    X, _ = documents
    X = sp.vstack([X[:30], sp.csr_matrix((2, X.shape[1])), X[30:40]]).tocsr()
    data = X if sparse else X.toarray()
    with pytest.raises(ValueError, match=r"metric='cosine' is undefined for a row of all zeros"
                                         r".* 2 such row\(s\), the first is row 30"):
        Mbed(metric="cosine").fit(data)
    HSSNE(metric="euclidean", perplexity=5, max_iter=10).fit(data)  # fine for Euclidean
    model = HSSNE(metric="cosine", perplexity=5, max_iter=10).fit(data[:30])
    with pytest.raises(ValueError, match="row of all zeros"):
        model.transform(data[29:32])


def test_new_rows_with_other_features_are_refused(documents):
    X, _ = documents
    model = NeRV(n_neighbors=8, max_iter=5, metric="cosine").fit(X)
    with pytest.raises(ValueError, match=r"X has 599 features, but NeRV is expecting 600"):
        model.transform(X[:3, :599])
    with pytest.raises(ValueError, match=r"X has 599 features, but NeRV is expecting 600"):
        model.transform(X[:3, :599].toarray())


def test_estimators_without_sparse_rows_say_why(documents):
    X, y = documents
    with pytest.raises(TypeError, match=r"SNeRV does not take a sparse X.*TruncatedSVD"):
        SNeRV().fit(X, y)


def test_precomputed_dissimilarities_to_new_points_come_dense(documents):
    X, _ = documents
    D = pairwise_distances(X[:40], metric="cosine")
    model = HSSNE(metric="precomputed", perplexity=5, max_iter=10).fit(D)
    with pytest.raises(TypeError, match="sparse matrix, which is not supported here"):
        model.transform(sp.csr_matrix(D[:3]))
    assert model.transform(D[:3]).shape == (3, 2)


def test_complex_or_one_dimensional_sparse_input_is_refused(documents):
    X, _ = documents
    with pytest.raises(TypeError, match=r"sparse matrix of complex128 values"):
        HSSNE().fit(X.astype(np.complex128))
    with pytest.raises(ValueError, match=r"2-D sparse matrix"):
        HSSNE().fit(sp.coo_array(np.ones(5)))


# -- the synthetic text set ---------------------------------------------------------------

def test_tfidf_documents_are_seeded_unit_rows_of_two_classes():
    X, y = make_tfidf_documents(50, 400, topic_terms=60, min_length=5, max_length=9,
                                random_state=3)
    again, _ = make_tfidf_documents(50, 400, topic_terms=60, min_length=5, max_length=9,
                                    random_state=3)
    assert sp.isspmatrix_csr(X) and X.shape == (50, 400) and X.dtype == np.float64
    assert (X != again).nnz == 0
    np.testing.assert_allclose(np.asarray(X.multiply(X).sum(axis=1)).ravel(), 1.0)
    assert X.getnnz(axis=1).max() <= 9 and X.getnnz(axis=1).min() >= 1
    assert np.bincount(y).tolist() == [25, 25]


def test_tfidf_documents_words_come_from_the_class_topic_as_the_share_says():
    X, y = make_tfidf_documents(40, 300, topic_terms=100, topic_share=1.0, random_state=0)
    # With every word from the topic, the two classes share no term.
    terms = [set(X[y == c].indices) for c in (0, 1)]
    assert terms[0] and terms[1] and not terms[0] & terms[1]


@pytest.mark.parametrize("kwargs, message", [
    (dict(n_terms=100, topic_terms=60), r"n_terms must be in \[120, inf\)"),
    (dict(topic_share=1.5), r"topic_share must be in \[0, 1\]"),
    (dict(min_length=10, max_length=5), r"max_length must be in \[10, inf\)"),
    (dict(n_documents=1), r"n_documents must be in \[2, inf\)"),
])
def test_tfidf_documents_refuse_bad_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_tfidf_documents(**kwargs)
