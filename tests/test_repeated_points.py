"""Data with many exact copies of points: bandwidths are floored, embeddings keep their size,
the copies are reported and data without spread refused."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import pairwise_distances

from nbembed import HSSNE, SNE, NeRV, SNeRV
from nbembed._validation import count_repeated_rows
from nbembed.affinity.learning_metric import LearningMetric
from nbembed.affinity.perplexity import calibrate, conditional_probabilities, \
    joint_probabilities


@pytest.fixture(scope="module")
def half_duplicates():
    """60 points: 30 distinct ones and 30 exact copies of the first."""
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 1, (15, 4)), rng.normal(4, 1, (15, 4))])
    X = np.vstack([X, np.repeat(X[:1], 30, axis=0)])
    y = np.concatenate([np.repeat([0, 1], 15), np.zeros(30, dtype=int)])
    return X, y


def test_a_point_with_more_copies_than_the_perplexity_gets_the_nearest_distinct_distance():
    X = np.array([[0.0], [0.0], [0.0], [0.0], [2.0], [5.0]])
    sq = (X - X.T) ** 2
    P, beta = calibrate(sq, 2.0, skip_diagonal=True)
    # Rows 0-3 each have 3 copies, more than the perplexity 2: sigma^2 = 1 / beta is the
    # squared distance to the nearest distinct point, 4.
    np.testing.assert_allclose(beta[:4], 0.25)
    expected = np.exp(-0.25 * sq[0])
    expected[0] = 0.0
    np.testing.assert_allclose(P[0], expected / expected.sum())
    # The others reach the perplexity as before.
    assert np.all(beta[4:] < 10.0)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert np.all(np.isfinite(P)) and np.all(np.isfinite(beta))


def test_identical_points_only_give_uniform_neighbourhoods():
    P, beta = calibrate(np.zeros((5, 5)), 2.0, skip_diagonal=True)
    np.testing.assert_allclose(P, (1 - np.eye(5)) / 4)
    np.testing.assert_allclose(beta, 1.0)


def test_knn_neighbourhoods_of_copies_are_floored_too(half_duplicates):
    X, _ = half_duplicates
    _, beta = conditional_probabilities(X, 5.0, method="knn", n_neighbors=40)
    assert beta.max() < 1e6


@pytest.mark.parametrize("cls", [NeRV, SNeRV])
def test_nerv_does_not_collapse_on_half_exact_duplicates(cls, half_duplicates):
    X, y = half_duplicates
    est = cls(n_neighbors=5.0, max_iter=30, random_state=0).fit(X, y)
    Y = est.embedding_
    assert np.all(np.isfinite(Y))
    # Measured against the map's own scale: SNeRV's map takes the scale of its
    # learned distances, which a confident classifier makes small inside a class
    # (1e-4 with some library versions, above 0.1 with others). The two classes of
    # the distinct points lie apart, and no copy's bandwidth shrinks to nothing.
    spread = Y[:30].std()
    assert spread > 0
    assert np.linalg.norm(Y[:15].mean(axis=0) - Y[15:30].mean(axis=0)) > spread
    assert est.bandwidths_.min() > 0.1 * np.median(est.bandwidths_)


# -- copies are reported, data without spread refused -------------------------------------------
FITS = {
    "HSSNE": lambda: HSSNE(perplexity=5.0, max_iter=30, random_state=0),
    "SNE": lambda: SNE(perplexity=5.0, max_iter=30, random_state=0),
    "NeRV": lambda: NeRV(n_neighbors=5.0, max_iter=5, random_state=0),
    "SNeRV": lambda: SNeRV(n_neighbors=5.0, max_iter=5, random_state=0,
                           learning_metric=LearningMetric(n_components=4, sigma=1.0,
                                                          random_state=0)),
}


@pytest.mark.parametrize("name", list(FITS))
def test_many_exact_copies_are_reported(name, half_duplicates):
    X, y = half_duplicates
    with pytest.warns(UserWarning, match=r"30 of the 60 rows repeat an earlier row exactly "
                                         r"\(duplicates\).*placed at \(nearly\) the same spot"):
        FITS[name]().fit(X, y)


@pytest.mark.parametrize("name", list(FITS))
def test_data_without_spread_is_refused(name):
    X = np.tile([1.0, -2.0, 3.0], (20, 1))
    y = np.repeat([0, 1], 10)
    with pytest.raises(ValueError, match="X has no spread: all 20 rows of X are identical"):
        FITS[name]().fit(X, y)


def test_a_copy_or_two_goes_without_a_word():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(150, 4))
    X[100] = X[3]  # one row in 150, under REPEATED_ROWS_WARN_FRACTION
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        joint_probabilities(X, 5.0)
    assert count_repeated_rows(X) == (1, False)


def test_copies_among_precomputed_dissimilarities_and_sparse_rows(half_duplicates):
    X, _ = half_duplicates
    D = pairwise_distances(X, metric="manhattan")  # exact zeros between copies
    with pytest.warns(UserWarning, match="30 of the 60 points are at dissimilarity zero from "
                                         "an earlier point"):
        HSSNE(metric="precomputed", perplexity=5.0, max_iter=30, random_state=0).fit(D)
    with pytest.warns(UserWarning, match="30 of the 60 rows repeat"):
        HSSNE(perplexity=5.0, max_iter=30, random_state=0).fit(sp.csr_matrix(X))
    assert count_repeated_rows(sp.csr_matrix(D), "precomputed") == (30, False)


def test_copies_are_rows_equal_value_for_value():
    X = np.array([[0.0, 1.0], [-0.0, 1.0], [1.0, 0.0], [0.5, 0.5], [0.0, 1.0 + 1e-15]])
    # Rows 0 and 1 are equal (0.0 == -0.0); 2 and 3 only share their sum.
    assert count_repeated_rows(X) == (1, False)
    S = sp.csr_matrix(X)
    # A row with an explicit zero stored equals the one without it.
    with_stored_zero = sp.csr_matrix((np.r_[0.0, 1.0], np.r_[0, 1], np.r_[0, 2]), shape=(1, 2))
    assert count_repeated_rows(sp.vstack([S, with_stored_zero]).tocsr()) == (2, False)
    assert count_repeated_rows(np.ones((4, 2))) == (3, True)
    assert count_repeated_rows(np.zeros((4, 4)), "precomputed") == (3, True)
