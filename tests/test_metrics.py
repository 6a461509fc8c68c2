"""Tests for nbembed.metrics: hand-computed cases, brute-force references, sklearn."""

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from sklearn.manifold import trustworthiness as sk_trustworthiness

from nbembed.metrics import (continuity, homogeneity, knn_error,
                             neighbourhood_preservation, trustworthiness)

# Six points on a line; 8.0 is unlabelled.
LINE = np.array([[0.0], [1.0], [3.0], [7.0], [8.0], [20.0]])
LINE_Y = np.array([0, 0, 1, 1, -1, 1])


def reference_trust(X, Y, k):
    """Venna & Kaski's formula, literally, with full rank matrices (O(n^2) memory)."""
    n = X.shape[0]
    DX, DY = cdist(X, X), cdist(Y, Y)
    np.fill_diagonal(DX, np.inf)
    np.fill_diagonal(DY, np.inf)
    order_X = np.argsort(DX, axis=1)
    rank_X = np.empty((n, n), dtype=int)
    rank_X[np.arange(n)[:, None], order_X] = np.arange(1, n + 1)
    nbr_X, nbr_Y = order_X[:, :k], np.argsort(DY, axis=1)[:, :k]
    total = 0
    for i in range(n):
        for j in set(nbr_Y[i]) - set(nbr_X[i]):      # U_k(i)
            total += rank_X[i, j] - k
    return 1.0 - 2.0 / (n * k * (2 * n - 3 * k - 1)) * total


def reference_preservation(X, Y, k):
    DX, DY = cdist(X, X), cdist(Y, Y)
    np.fill_diagonal(DX, np.inf)
    np.fill_diagonal(DY, np.inf)
    nx, ny = np.argsort(DX, axis=1)[:, :k], np.argsort(DY, axis=1)[:, :k]
    return np.mean([len(set(a) & set(b)) / k for a, b in zip(nx, ny)])


@pytest.fixture
def data():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 10))
    Y = X @ rng.normal(size=(10, 2)) + 0.5 * rng.normal(size=(60, 2))
    return X, Y


# ------------------------------------------------------------------ homogeneity

def test_homogeneity_hand_computed():
    # Without 8.0: nearest of 0,1,3,7,20 is 1,0,1,3,7 -> 3 misses once: 4/5.
    assert homogeneity(LINE, LINE_Y) == pytest.approx(0.8, abs=0)
    # With 8.0 as a candidate: 3->1 misses, 7->8 and 20->8 hit an unlabelled point.
    assert homogeneity(LINE, LINE_Y, ignore_unlabelled=False) == pytest.approx(0.4, abs=0)


def test_homogeneity_all_same_and_all_different():
    assert homogeneity(LINE[:4], [2, 2, 2, 2]) == 1.0
    assert homogeneity(LINE[:4], [0, 1, 2, 3]) == 0.0


def test_homogeneity_duplicates_are_neighbours():
    Y = [[0.0], [0.0], [5.0], [5.0]]
    assert homogeneity(Y, [0, 0, 1, 1]) == 1.0
    assert homogeneity(Y, [0, 1, 0, 1]) == 0.0


def test_homogeneity_equals_one_minus_1nn_error(data):
    _, Y = data
    y = np.random.default_rng(2).integers(-1, 3, size=60)
    assert homogeneity(Y, y) == pytest.approx(1.0 - knn_error(Y, y, k=1), abs=1e-15)


# ------------------------------------------------------------------ knn_error

def test_knn_error_leave_one_out_hand_computed():
    # Labelled points 0,1,3,7,20 with classes 0,0,1,1,1.
    assert knn_error(LINE, LINE_Y, k=1) == pytest.approx(0.2, abs=0)
    # k=2: 0 -> {1:0, 3:1} tie -> nearest 0 ok; 1 -> ok; 3 -> {1,0} -> 0 wrong;
    # 7 -> {3:1, 1:0} tie -> 1 ok; 20 -> {7, 3} -> 1 ok.
    assert knn_error(LINE, LINE_Y, k=2) == pytest.approx(0.2, abs=0)
    # k=3: only 20 is right.
    assert knn_error(LINE, LINE_Y, k=3) == pytest.approx(0.8, abs=0)


def test_knn_error_class_tie_goes_to_nearest():
    # Test point at -0.1; train 0.0 (class 2) is nearer than 1.0 (class 1).
    Y = [[0.0], [1.0], [-0.1]]
    assert knn_error(Y, [2, 1, 2], k=2, train=[0, 1], test=[2]) == 0.0
    assert knn_error(Y, [2, 1, 1], k=2, train=[0, 1], test=[2]) == 1.0
    # Four voters 5,7,7,5 in order of distance: tie, nearest is class 5.
    Y = [[0.0], [1.0], [2.0], [3.0], [-0.5]]
    assert knn_error(Y, [5, 7, 7, 5, 5], k=4, train=[0, 1, 2, 3], test=[4]) == 0.0
    # A clear majority beats the nearest neighbour.
    assert knn_error(Y, [5, 7, 7, 7, 7], k=4, train=[0, 1, 2, 3], test=[4]) == 0.0


def test_knn_error_train_test_split():
    y = np.array([0, 0, 1, 1, 1, 1])
    # Train 0.0 (0), 3.0 (1), 8.0 (1); test 1.0 -> 0.0, 7.0 -> 8.0, 20.0 -> 8.0: all right.
    assert knn_error(LINE, y, train=[0, 2, 4], test=[1, 3, 5]) == 0.0
    # Now 1.0 is class 1 (predicted 0) and 7.0 is class 0 (predicted 1): two of three wrong.
    y_bad = np.array([0, 1, 1, 0, 1, 1])
    assert knn_error(LINE, y_bad, train=[0, 2, 4], test=[1, 3, 5]) == pytest.approx(2 / 3)
    # Boolean masks and a missing side defaulting to the labelled rest.
    mask = np.array([True, False, True, False, True, False])
    assert knn_error(LINE, y_bad, train=mask, test=~mask) == pytest.approx(2 / 3)
    assert knn_error(LINE, y_bad, train=[0, 2, 4]) == pytest.approx(2 / 3)
    assert knn_error(LINE, y_bad, test=[1, 3, 5]) == pytest.approx(2 / 3)


def test_knn_error_ignores_unlabelled_in_leave_one_out():
    y = LINE_Y.copy()
    with_unlabelled = np.vstack([LINE, [[7.5]]])
    assert knn_error(with_unlabelled, np.append(y, -1)) == knn_error(LINE, y)


# ------------------------------------------------------------------ trustworthiness / continuity

@pytest.mark.parametrize("k", [1, 5, 12, 29])
def test_trust_and_continuity_match_reference(data, k):
    X, Y = data
    assert trustworthiness(X, Y, k) == pytest.approx(reference_trust(X, Y, k), abs=1e-12)
    assert continuity(X, Y, k) == pytest.approx(reference_trust(Y, X, k), abs=1e-12)
    assert trustworthiness(X, Y, k) < 1.0 and continuity(X, Y, k) < 1.0


@pytest.mark.parametrize("k", [1, 5, 12, 29])
@pytest.mark.parametrize("metric", ["euclidean", "manhattan"])
def test_trustworthiness_matches_sklearn(data, k, metric):
    X, Y = data
    expected = sk_trustworthiness(X, Y, n_neighbors=k, metric=metric)
    assert trustworthiness(X, Y, k, metric=metric) == pytest.approx(expected, abs=1e-12)


def test_continuity_is_swapped_trustworthiness(data):
    X, Y = data
    assert continuity(X, Y, 7) == trustworthiness(Y, X, 7)


def test_precomputed_equals_features(data):
    X, Y = data
    D = cdist(X, X)
    assert trustworthiness(D, Y, 8, metric="precomputed") == pytest.approx(
        trustworthiness(X, Y, 8), abs=1e-12)
    assert continuity(D, Y, 8, metric="precomputed") == pytest.approx(
        continuity(X, Y, 8), abs=1e-12)
    assert neighbourhood_preservation(D, Y, 8, metric="precomputed") == pytest.approx(
        neighbourhood_preservation(X, Y, 8), abs=1e-12)
    assert np.all(np.diag(D) == 0)   # the input was not modified


@pytest.mark.parametrize("chunk_size", [1, 7, 59, 1000])
def test_chunked_equals_unchunked(data, chunk_size):
    X, Y = data
    assert trustworthiness(X, Y, 10, chunk_size=chunk_size) == trustworthiness(X, Y, 10)
    assert continuity(X, Y, 10, chunk_size=chunk_size) == continuity(X, Y, 10)


def test_perfect_embedding_scores_one(data):
    X, _ = data
    assert trustworthiness(X, X, 12) == 1.0
    assert continuity(X, X, 12) == 1.0
    assert neighbourhood_preservation(X, X, 12) == 1.0
    # A rotated, scaled, shifted copy keeps every neighbourhood.
    Q, _ = np.linalg.qr(np.random.default_rng(3).normal(size=(10, 10)))
    Z = 3.0 * X @ Q + 1.0
    assert trustworthiness(X, Z, 12) == pytest.approx(1.0, abs=1e-12)
    assert continuity(X, Z, 12) == pytest.approx(1.0, abs=1e-12)


def test_tied_distances_do_not_penalise_a_perfect_embedding():
    X = np.arange(20.0)[:, None]   # every inner point has two neighbours at each distance
    assert trustworthiness(X, X, 3) == 1.0
    assert continuity(X, X, 3) == 1.0


def test_reversed_line_is_perfect_and_scrambled_line_is_not():
    X = np.arange(30.0)[:, None] ** 1.1   # no ties
    assert trustworthiness(X, -X, 4) == pytest.approx(1.0, abs=1e-12)
    Y = np.random.default_rng(4).permutation(X)
    assert trustworthiness(X, Y, 4) < 0.8


# ------------------------------------------------------------------ neighbourhood_preservation

def test_neighbourhood_preservation_hand_computed():
    # Input neighbours 1, 0, 1; embedded neighbours 1, 2, 1 -> 2 of 3 kept.
    X, Y = [[0.0], [1.0], [3.0]], [[0.0], [2.0], [3.0]]
    assert neighbourhood_preservation(X, Y, k=1) == pytest.approx(2 / 3, abs=0)


@pytest.mark.parametrize("k", [1, 10, 40])
def test_neighbourhood_preservation_matches_reference(data, k):
    X, Y = data
    assert neighbourhood_preservation(X, Y, k) == pytest.approx(
        reference_preservation(X, Y, k), abs=1e-12)


# ------------------------------------------------------------------ invalid inputs

def test_invalid_shapes_and_values(data):
    X, Y = data
    for f in (trustworthiness, continuity, neighbourhood_preservation):
        with pytest.raises(ValueError, match="X has 60 samples but Y has 59"):
            f(X, Y[:-1], 5)
    Y_nan = Y.copy()
    Y_nan[3, 1] = np.nan
    with pytest.raises(ValueError, match="Y contains NaN"):
        trustworthiness(X, Y_nan, 5)
    with pytest.raises(ValueError, match="Y contains NaN"):
        homogeneity(Y_nan, np.zeros(60, dtype=int))
    with pytest.raises(ValueError, match="2-D"):
        knn_error(np.zeros(5), [0, 1, 0, 1, 0])
    with pytest.raises(ValueError, match="square"):
        trustworthiness(X, Y, 5, metric="precomputed")
    with pytest.raises(ValueError, match="negative"):
        trustworthiness(-cdist(X, X), Y, 5, metric="precomputed")


def test_invalid_k(data):
    X, Y = data
    with pytest.raises(ValueError, match=r"k = 30 is too large .* k < n_samples / 2"):
        trustworthiness(X, Y, 30)
    with pytest.raises(ValueError, match=r"k = 30 is too large"):
        continuity(X, Y, 30)
    with pytest.raises(ValueError, match=r"k must be in \[1, inf\)"):
        trustworthiness(X, Y, 0)
    with pytest.raises(ValueError, match=r"k = 60 is too large"):
        neighbourhood_preservation(X, Y, 60)
    with pytest.raises(ValueError, match=r"k = 5 is too large .* only 4 other"):
        knn_error(LINE, LINE_Y, k=5)
    with pytest.raises(ValueError, match=r"k = 4 is too large .* only 3 training"):
        knn_error(LINE, LINE_Y, k=4, train=[0, 1, 2], test=[3])
    with pytest.raises(ValueError, match="chunk_size must be in"):
        trustworthiness(X, Y, 5, chunk_size=0)
    with pytest.raises(TypeError, match="k must be an integer"):
        trustworthiness(X, Y, 2.5)


def test_invalid_labels_and_indices():
    with pytest.raises(ValueError, match="one label per sample"):
        homogeneity(LINE, [0, 1])
    with pytest.raises(ValueError, match="at least 2 labelled"):
        homogeneity(LINE, [0, -1, -1, -1, -1, -1])
    with pytest.raises(ValueError, match="at least 2 labelled"):
        knn_error(LINE, [-1, -1, -1, -1, -1, 3])
    with pytest.raises(ValueError, match="overlap"):
        knn_error(LINE, LINE_Y, train=[0, 1, 2], test=[2, 3])
    with pytest.raises(ValueError, match="train contains unlabelled"):
        knn_error(LINE, LINE_Y, train=[0, 4], test=[1])
    with pytest.raises(ValueError, match="test contains unlabelled"):
        knn_error(LINE, LINE_Y, train=[0, 1], test=[4])
    with pytest.raises(ValueError, match=r"indices outside \[0, 6\)"):
        knn_error(LINE, LINE_Y, train=[0, 6], test=[1])
    with pytest.raises(ValueError, match="selects no points"):
        knn_error(LINE, LINE_Y, train=[0, 1], test=[])
    with pytest.raises(ValueError, match="boolean mask must have shape"):
        knn_error(LINE, LINE_Y, train=[True, False], test=[1])


# -- KL divergence ------------------------------------------------------------------------
@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0, 1.7])
@pytest.mark.parametrize("sparse", [False, True])
def test_kl_divergence_matches_reference(alpha, sparse):
    import scipy.sparse as sp

    import reference as ref
    from nbembed.metrics import kl_divergence

    rng = np.random.default_rng(3)
    P = ref.joint_probabilities(rng.normal(size=(30, 4)), 6.0)
    Y = rng.normal(size=(30, 2))
    given = sp.csr_matrix(P * 3.0) if sparse else P * 3.0  # any scale
    assert kl_divergence(given, Y, alpha) == pytest.approx(ref.hssne_cost(P, Y, alpha), rel=1e-12)


def test_kl_divergence_rejects_bad_p():
    from nbembed.metrics import kl_divergence

    Y = np.zeros((3, 2))
    with pytest.raises(ValueError, match="shape"):
        kl_divergence(np.zeros((2, 2)), Y)
    with pytest.raises(ValueError, match="diagonal"):
        kl_divergence(np.eye(3), Y)
    with pytest.raises(ValueError, match="negative"):
        kl_divergence(-np.ones((3, 3)) + np.eye(3), Y)


@pytest.mark.parametrize("name", ["../x", "a/b", "..", "", "/etc"])
def test_benchmark_names_cannot_leave_the_data_folder(tmp_path, name):
    from nbembed.datasets import load_benchmark
    with pytest.raises(ValueError, match="one folder inside the data folder"):
        load_benchmark(name, data_home=tmp_path)
