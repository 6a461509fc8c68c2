"""Data with many exact copies of points: bandwidths are floored, embeddings keep their size."""

import numpy as np
import pytest

from nbembed import NeRV, SNeRV
from nbembed.affinity.perplexity import calibrate, conditional_probabilities


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
    assert np.all(np.isfinite(est.embedding_))
    assert est.embedding_[:30].std() > 0.1
    assert est.bandwidths_.min() > 1e-3
