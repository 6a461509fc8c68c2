"""The read-outs' rank-penalty kernels against the NumPy reference of nbembed.metrics."""

import numpy as np
import pytest
from sklearn.metrics import pairwise_distances

from nbembed._kernels.ranks import distance_rank_penalty, embedding_rank_penalty
from nbembed.metrics import _neighbours, _rank_penalty


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("k", [1, 5, 10])
def test_rank_penalties_match_the_reference_ties_included(seed, k):
    rng = np.random.default_rng(seed)
    # Integer coordinates: many tied distances, computed exactly both ways.
    X = rng.integers(0, 4, size=(90, 3)).astype(float)
    Y = rng.integers(0, 5, size=(90, 2)).astype(float)
    nbrs_in = np.ascontiguousarray(_neighbours(X, k), dtype=np.int64)
    nbrs_out = np.ascontiguousarray(_neighbours(Y, k), dtype=np.int64)
    D = pairwise_distances(X)
    expected_trust = _rank_penalty(D, "precomputed", nbrs_out, k, 17)
    expected_continuity = _rank_penalty(Y, "euclidean", nbrs_in, k, 17)
    assert expected_trust > 0 and expected_continuity > 0  # the data are far from perfect
    assert distance_rank_penalty(D, nbrs_out, k) == expected_trust
    assert embedding_rank_penalty(np.ascontiguousarray(Y.T), nbrs_in, k) == expected_continuity


def test_a_perfect_embedding_has_no_penalty():
    X = np.random.default_rng(3).normal(size=(50, 2))
    nbrs = np.ascontiguousarray(_neighbours(X, 5), dtype=np.int64)
    assert distance_rank_penalty(pairwise_distances(X), nbrs, 5) == 0
    assert embedding_rank_penalty(np.ascontiguousarray(X.T), nbrs, 5) == 0
