"""nbembed's own Euclidean distances against scikit-learn's."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import pairwise_distances as sklearn_distances

from nbembed._distances import pairwise_distances, squared_euclidean


@pytest.fixture(scope="module")
def X():
    return np.random.default_rng(0).normal(size=(150, 7))


def test_squared_euclidean_matches_sklearn(X):
    D = squared_euclidean(X)
    np.testing.assert_allclose(D, sklearn_distances(X, squared=True), rtol=1e-10, atol=1e-12)
    assert np.all(np.diag(D) == 0) and np.all(D >= 0)
    np.testing.assert_allclose(squared_euclidean(X[:10], X), D[:10], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("metric", ["euclidean", "cosine", "manhattan"])
@pytest.mark.parametrize("squared", [False, True])
def test_pairwise_distances_match_sklearn_for_any_metric_and_sparse_rows(X, metric, squared):
    expected = sklearn_distances(X, X[:20], metric=metric)
    expected = expected ** 2 if squared else expected
    for rows in (X, sp.csr_matrix(X)):
        got = pairwise_distances(rows, rows[:20], metric=metric, squared=squared)
        # sqrt of a rounding error of 1e-15 at a distance of zero is 3e-8
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-7)
