"""Where Mbed's annealing starts: the paper's restart near the origin, or label
spreading over the nearest-neighbour graph (for many classes, docs/mbed.md)."""

import warnings

import numpy as np
import pytest

from nbembed._folds import stratified_folds
from nbembed.affinity.label_spreading import CLASS_MASS_CANDIDATES, DEFAULT_SETTING, \
    SETTING_MARGIN, SHARE_ALPHA, SHARE_EVEN_WEIGHT, SHARE_NEIGHBORS, SPREAD_ALPHA, \
    SPREAD_ALPHA_CANDIDATES, SPREAD_GRAPHS, \
    SPREAD_NEIGHBOR_CANDIDATES, SPREAD_NEIGHBORS, SpreadSetting, choose_spreading, \
    class_shares, directed_knn_graph, knn_graph, nested_spreading, neighbor_graph, \
    spread_labels, spread_with
from nbembed.affinity.perplexity import nearest_neighbors
from nbembed.methods.mbed import Mbed
from test_mbed import blobs, small


def reference_spreading(W, T, alpha, n_steps, class_mass=True):
    """The closed form of n_steps spreading steps from F = T, dense, then the
    normalizations."""
    d = W.sum(axis=1)
    S = W / np.sqrt(np.outer(d, d))
    F = np.linalg.matrix_power(alpha * S, n_steps) @ T
    for t in range(n_steps):
        F += (1 - alpha) * np.linalg.matrix_power(alpha * S, t) @ T
    if class_mass:
        F /= F.sum(axis=0)
    return F / F.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("class_mass", [True, False])
def test_label_spreading_matches_its_closed_form(rng, class_mass):
    X = rng.normal(size=(30, 4))
    _, idx = nearest_neighbors(X, 5)
    graph = knn_graph(idx)
    T = np.zeros((30, 3))
    T[[0, 1, 2, 3], [0, 1, 2, 2]] = [1.0, 1.0, 0.5, 1.0]
    np.testing.assert_allclose(
        spread_labels(graph, T, alpha=0.9, n_steps=20, class_mass=class_mass),
        reference_spreading(graph.toarray(), T, 0.9, 20, class_mass), rtol=1e-10)


def test_label_spreading_fills_each_labelled_cluster(rng):
    X, y = blobs(rng, n_per=20, K=3, gap=8.0)
    X = np.vstack([X, 100.0 + rng.normal(size=(15, 5))])  # a cluster no label reaches
    targets = np.zeros((75, 3))
    targets[[0, 20, 40], [0, 1, 2]] = 1.0
    _, idx = nearest_neighbors(X, 10)
    graph = knn_graph(idx)
    assert (graph != graph.T).nnz == 0 and graph.diagonal().sum() == 0
    F = spread_labels(graph, targets)
    np.testing.assert_allclose(F.sum(axis=1), 1.0)
    np.testing.assert_array_equal(F[:60].argmax(axis=1), y)
    np.testing.assert_allclose(F[60:], 1.0 / 3)
    # class mass normalization: three labels for class 0 do not let it take over
    targets[[1, 2], 0] = 1.0
    np.testing.assert_array_equal(spread_labels(graph, targets)[:60].argmax(axis=1), y)


def test_annealing_starts_from_the_spread_labels(rng):
    X, y = blobs(rng, n_per=20, K=3, gap=8.0)
    partial = np.full(60, -1)
    partial[[0, 20, 40]] = [0, 1, 2]
    model = small(3, n_iter_init=0)
    run = model.prepare(X, partial)
    assert model.anneal_start_ == "labels"
    # every point starts in the region of its cluster's class, near r w_k
    np.testing.assert_array_equal(run.membership.argmax(axis=1), y)
    assert np.linalg.norm(run.embedding, axis=1).mean() > 0.3 * run.radius
    random = small(3, n_iter_init=0, anneal_start="random")
    run = random.prepare(X, partial)
    assert random.anneal_start_ == "random"
    assert run.embedding.std() == pytest.approx(1e-3 * run.radius, rel=0.3)


@pytest.mark.parametrize("K, labelled, expected", [
    (2, True, "random"), (3, False, "random"), (3, True, "labels")])
def test_automatic_anneal_start(rng, K, labelled, expected):
    X, y = blobs(rng, n_per=20, K=K)
    partial = np.where(np.arange(len(y)) % 10 == 0, y, -1) if labelled else None
    model = small(K, max_iter=30)
    model.fit(X, partial)
    assert model.anneal_start_ == expected
    same = small(K, max_iter=30, anneal_start=expected).fit(X, partial)
    np.testing.assert_array_equal(model.embedding_, same.embedding_)


def rings(rng, n_rings=4):
    """Concentric circles 0.35 apart with points about 0.1 apart along each: the six
    nearest neighbours of a point lie on its own ring, ten reach across."""
    X, y = [], []
    for k in range(n_rings):
        radius = 1.0 + 0.35 * k
        n = int(round(2 * np.pi * radius / 0.1))
        steps = np.arange(n) + rng.uniform(-0.1, 0.1, n)
        angle = rng.uniform(0, 2 * np.pi) + steps / n * 2 * np.pi
        X.append(radius * np.column_stack([np.cos(angle), np.sin(angle)]))
        y.append(np.full(n, k))
    return np.vstack(X), np.concatenate(y)


def dense_spreading(W, T, alpha, n_steps, class_mass=True):
    """The spreading steps on dense matrices (the closed form above is checked against
    spread_labels on a small graph; here it would cost minutes)."""
    d = W.sum(axis=1)
    S = W / np.sqrt(np.outer(d, d))
    F = T.copy()
    for _ in range(n_steps):
        F = alpha * S @ F + (1 - alpha) * T
    if class_mass:
        F /= F.sum(axis=0)
    total = F.sum(axis=1, keepdims=True)
    return np.divide(F, total, out=np.full_like(F, 1 / F.shape[1]), where=total > 0)


def dense_graph(X, k, graph):
    """The k-nearest-neighbour graph written out densely: W[i, j] = 1 where j is among
    i's k nearest ("directed"), or where either is among the other's ("symmetric")."""
    d = ((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)
    np.fill_diagonal(d, np.inf)
    W = np.zeros(d.shape)
    np.put_along_axis(W, np.argsort(d, axis=1, kind="stable")[:, :k], 1.0, axis=1)
    return W if graph == "directed" else np.maximum(W, W.T)


def reference_shares(X, targets):
    """The classes' shares of the unlabelled points, from the converged spreading
    (the closed form (1 - alpha)(I - alpha S)^-1 T) over the directed graph."""
    W = dense_graph(X, SHARE_NEIGHBORS, "directed")
    S = W / W.sum(axis=1, keepdims=True)
    F = (1 - SHARE_ALPHA) * np.linalg.solve(np.eye(len(W)) - SHARE_ALPHA * S, targets)
    unlabelled = targets.sum(axis=1) == 0
    spread = (F / F.sum(axis=1, keepdims=True))[unlabelled].mean(axis=0)
    return (1 - SHARE_EVEN_WEIGHT) * spread + SHARE_EVEN_WEIGHT / targets.shape[1]


def reference_missed(X, targets, folds, setting):
    """Which labelled points a setting misses while their fold is hidden, from a fresh
    dense graph and dense spreading."""
    labelled = np.flatnonzero(targets.sum(axis=1) > 0)
    W = dense_graph(X, setting.k, setting.graph)
    missed = np.zeros(targets.shape[0], dtype=bool)
    for fold in np.unique(folds):
        hidden = labelled[folds == fold]
        kept = targets.copy()
        kept[hidden] = 0.0
        F = dense_spreading(W, kept, setting.alpha, 200, setting.class_mass)
        missed[hidden] = F[hidden].argmax(axis=1) != targets[hidden].argmax(axis=1)
    return missed[labelled]


def weighted_class_error(missed, classes, shares=None):
    """The classes' fractions of labelled points missed, averaged with weights
    ``shares`` (equal where None)."""
    present = np.unique(classes)
    weights = np.ones(present.size) if shares is None else shares[present]
    return np.average([missed[classes == k].mean() for k in present], weights=weights)


def mean_class_error(missed, classes):
    """The mean over classes of the fraction of their labelled points missed."""
    return weighted_class_error(missed, classes)


def reference_table(X, targets, folds, neighbors, alphas, shares=None):
    """Every setting's held-out error, (graph, class mass normalization or not,
    alphas, neighbours), each class weighing its share."""
    classes = targets[targets.sum(axis=1) > 0].argmax(axis=1)
    return np.array([[[[weighted_class_error(
        reference_missed(X, targets, folds, SpreadSetting(g, k, a, m)), classes, shares)
        for k in neighbors] for a in alphas] for m in CLASS_MASS_CANDIDATES]
        for g in SPREAD_GRAPHS])


def reference_choice(balanced, shared, neighbors, alphas):
    """The start's k (symmetric graph, first alpha, normalized, every class alike; ties
    to more neighbours) and the labels' setting (smallest error by the shares; ties to
    the symmetric graph, more neighbours, the earlier alpha, no normalization)."""
    start = min(range(len(neighbors)), key=lambda c: (balanced[0, 0, 0, c], -neighbors[c]))
    g, m, a, c = min(np.ndindex(shared.shape), key=lambda i: (
        shared[i], i[0], -neighbors[i[3]], i[2], CLASS_MASS_CANDIDATES[i[1]]))
    return neighbors[start], SpreadSetting(SPREAD_GRAPHS[g], neighbors[c], alphas[a],
                                           CLASS_MASS_CANDIDATES[m])


def reference_nested_error(X, targets, folds, rng, candidates, alphas):
    """The held-out error of the choice made inside each fold, by brute force."""
    labelled = np.flatnonzero(targets.sum(axis=1) > 0)
    classes = targets[labelled].argmax(axis=1)
    missed = np.zeros(targets.shape[0], dtype=bool)
    for fold in np.unique(folds):
        inside = folds != fold
        hidden = labelled[~inside]
        kept = targets.copy()
        kept[hidden] = 0.0
        inner = stratified_folds(classes[inside], np.unique(folds).size, rng)
        shares = reference_shares(X, kept)
        balanced = reference_table(X, kept, inner, candidates, alphas)
        shared = reference_table(X, kept, inner, candidates, alphas, shares)
        _, setting = reference_choice(balanced, shared, list(candidates), alphas)
        W = dense_graph(X, setting.k, setting.graph)
        F = dense_spreading(W, kept, setting.alpha, 200, setting.class_mass)
        missed[hidden] = F[hidden].argmax(axis=1) != classes[~inside]
    return weighted_class_error(missed[labelled], classes, reference_shares(X, targets))


def assert_choice_matches(X, targets, folds, choice, alphas=SPREAD_ALPHA_CANDIDATES):
    """The table, the shares and both choices equal the brute-force ones."""
    neighbors = list(choice.neighbors)
    shares = reference_shares(X, targets)
    np.testing.assert_allclose(choice.shares, shares, atol=1e-9)
    shared = reference_table(X, targets, folds, neighbors, alphas, shares)
    assert choice.errors.shape == (2, 2, len(alphas), len(neighbors))
    np.testing.assert_allclose(choice.errors, shared, atol=1e-12)
    balanced = reference_table(X, targets, folds, neighbors, alphas)
    assert (choice.start_k, choice.setting) == reference_choice(balanced, shared, neighbors,
                                                                alphas)
    assert choice.error == shared[SPREAD_GRAPHS.index(choice.setting.graph),
                                  CLASS_MASS_CANDIDATES.index(choice.setting.class_mass),
                                  alphas.index(choice.setting.alpha),
                                  neighbors.index(choice.setting.k)]


def test_spreading_neighbours_chosen_on_held_out_labels(rng):
    X, y = rings(rng)
    targets = np.zeros((len(y), 4))
    labelled = np.flatnonzero(np.arange(len(y)) % 8 == 0)
    targets[labelled, y[labelled]] = 1.0
    folds = stratified_folds(y[labelled], 3, np.random.RandomState(1))
    _, idx = nearest_neighbors(X, 15)
    choice = choose_spreading(idx, targets, folds)
    np.testing.assert_array_equal(choice.neighbors, SPREAD_NEIGHBOR_CANDIDATES)
    assert_choice_matches(X, targets, folds, choice)
    # three and five neighbours follow the rings (ties go to more), ten jump across;
    # ties go to the symmetric graph, then to the first alpha, no normalization
    assert choice.start_k == 5
    assert choice.setting == SpreadSetting("symmetric", 5, SPREAD_ALPHA_CANDIDATES[0], False)
    assert np.all(choice.errors[0, 0, 0, :2] == 0) and choice.errors[0, 0, 0, -2] > 0.1
    assert choice.error == 0.0
    # the spread labels of the chosen setting classify every ring
    assert np.mean(spread_with(idx, targets, choice.setting).argmax(axis=1) != y) < 0.02
    # ties go to the larger number; candidates beyond the neighbours found are left out
    X, y = blobs(rng, n_per=30, K=3, gap=30.0)
    _, idx = nearest_neighbors(X, 7)
    choice = choose_spreading(idx, np.eye(3)[y], np.arange(len(y)) % 3)
    np.testing.assert_array_equal(choice.neighbors, [3, 5, 7])
    assert np.max(choice.errors) == 0 and choice.start_k == 7
    assert choice.setting == SpreadSetting("symmetric", 7, SPREAD_ALPHA_CANDIDATES[0], False)


def test_the_spread_labels_take_the_setting_that_missed_the_least(rng):
    # overlapping blobs, where the settings' errors differ
    X, y = blobs(rng, n_per=60, K=3, gap=2.5)
    y = np.where(y == 2, 0, y)
    targets = np.zeros((len(y), 2))
    labelled = np.flatnonzero(np.arange(len(y)) % 6 == 0)
    targets[labelled, y[labelled]] = 1.0
    folds = stratified_folds(y[labelled], 3, np.random.RandomState(2))
    _, idx = nearest_neighbors(X, 15)
    alphas = (0.99, 0.9, 0.5)
    choice = choose_spreading(idx, targets, folds, alphas=alphas)
    assert_choice_matches(X, targets, folds, choice, alphas)
    assert np.ptp(choice.errors) > 0.05


def reference_default_kept(X, targets, folds, table_best, shares):
    """Whether the default setting stays: the table's best must miss fewer held-out
    labels, each weighing its class's share over its class's count, by more than
    SETTING_MARGIN standard errors of the weighted mean paired difference."""
    classes = targets[targets.sum(axis=1) > 0].argmax(axis=1)
    w = shares[classes] / np.bincount(classes)[classes]
    d = (reference_missed(X, targets, folds, table_best).astype(float)
         - reference_missed(X, targets, folds, DEFAULT_SETTING))
    mean = np.average(d, weights=w)
    se = np.sqrt(np.sum(w ** 2 * (d - mean) ** 2)) / w.sum()
    return not -mean > SETTING_MARGIN * se


@pytest.mark.parametrize("case", ["rings", "noise"])
def test_the_spread_labels_keep_the_default_unless_the_table_clearly_beats_it(rng, case):
    if case == "rings":  # the symmetric graph of five neighbours follows the rings
        X, y = rings(rng)
        every = 8
    else:  # classes drawn at random: no setting tells them apart (on some draws
        # the best of forty still beats the default by two standard errors)
        noise = np.random.default_rng(1)
        X = noise.normal(size=(150, 4))
        y = noise.integers(0, 3, 150)
        every = 3
    K = y.max() + 1
    targets = np.zeros((len(y), K))
    labelled = np.flatnonzero(np.arange(len(y)) % every == 0)
    targets[labelled, y[labelled]] = 1.0
    folds = stratified_folds(y[labelled], 3, np.random.RandomState(1))
    _, idx = nearest_neighbors(X, 15)
    plain = choose_spreading(idx, targets, folds)
    choice = choose_spreading(idx, targets, folds, default=DEFAULT_SETTING)
    # the same table and start; the default is measured beside it
    np.testing.assert_array_equal(choice.errors, plain.errors)
    assert choice.start_k == plain.start_k
    classes = y[labelled]
    shares = reference_shares(X, targets)
    default_missed = reference_missed(X, targets, folds, DEFAULT_SETTING)
    assert choice.default_error == pytest.approx(
        weighted_class_error(default_missed, classes, shares), abs=1e-9)
    kept = reference_default_kept(X, targets, folds, plain.setting, shares)
    assert choice.setting == (DEFAULT_SETTING if kept else plain.setting)
    np.testing.assert_array_equal(
        choice.missed, reference_missed(X, targets, folds, choice.setting))
    assert kept == (case == "noise")
    if case == "rings":
        assert choice.error == 0.0 and choice.default_error > 0.1


def test_the_directed_graph_links_each_point_to_its_own_neighbours(rng):
    X = rng.normal(size=(40, 3))
    _, idx = nearest_neighbors(X, 5)
    W = directed_knn_graph(idx)
    np.testing.assert_array_equal(W.toarray(), dense_graph(X, 5, "directed"))
    np.testing.assert_array_equal(neighbor_graph(idx, 3, "symmetric").toarray(),
                                  dense_graph(X, 3, "symmetric"))
    # each step a point takes the mean of its own neighbours' scores
    T = np.zeros((40, 2))
    T[[0, 1], [0, 1]] = 1.0
    np.testing.assert_allclose(spread_labels(W, T, alpha=0.5, n_steps=30, class_mass=False),
                               dense_spreading(W.toarray(), T, 0.5, 30, False), rtol=1e-10)


def test_class_shares_follow_the_unlabelled_points_not_the_labels():
    # a class of 300 points and one of 40, 15 labels each: the labels are shared
    # half and half, the unlabelled points 285 to 25
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(0, 1, (300, 2)), rng.normal([6, 0], 1, (40, 2))])
    y = np.repeat([0, 1], [300, 40])
    targets = np.zeros((340, 2))
    labelled = np.concatenate([rng.choice(300, 15, replace=False),
                               300 + rng.choice(40, 15, replace=False)])
    targets[labelled, y[labelled]] = 1.0
    _, idx = nearest_neighbors(X, 10)
    shares = class_shares(idx, targets)
    np.testing.assert_allclose(shares, reference_shares(X, targets), atol=1e-9)
    # halfway between the unlabelled points' shares and equal ones
    np.testing.assert_allclose(shares, [(285 / 310 + 0.5) / 2, (25 / 310 + 0.5) / 2],
                               atol=0.01)
    # every point labelled: the labels' own shares
    np.testing.assert_allclose(class_shares(idx, np.eye(2)[y]), [300 / 340, 40 / 340])


def test_class_masses_are_normalized_where_a_class_has_few_labels():
    # Two overlapping classes of 150 points, one with 30 labels and one with 6:
    # spread as they are, the many labels swallow the other class; normalized,
    # each class keeps its share. The held-out error counts each class by its
    # estimated share of the unlabelled points, so the 6 labels' misses show and
    # the normalization is chosen.
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 1, (150, 2)), rng.normal([2.5, 0], 1, (150, 2))])
    y = np.repeat([0, 1], 150)
    labelled = np.concatenate([rng.choice(150, 30, replace=False),
                               150 + rng.choice(150, 6, replace=False)])
    targets = np.zeros((300, 2))
    targets[labelled, y[labelled]] = 1.0
    folds = stratified_folds(y[labelled], 3, np.random.RandomState(0))
    _, idx = nearest_neighbors(X, 15)
    choice = choose_spreading(idx, targets, folds)
    assert choice.setting.class_mass
    unlabelled = np.setdiff1d(np.arange(300), labelled)

    def error(class_mass):
        F = spread_with(idx, targets, choice.setting._replace(class_mass=class_mass))
        return np.mean(F[unlabelled].argmax(axis=1) != y[unlabelled])

    assert error(True) < min(0.2, error(False))


def test_nested_spreading_makes_the_choice_inside_each_fold(rng):
    X, y = blobs(rng, n_per=40, K=3, gap=3.0)
    targets = np.zeros((len(y), 3))
    labelled = np.flatnonzero(np.arange(len(y)) % 4 == 0)
    targets[labelled, y[labelled]] = 1.0
    folds = stratified_folds(y[labelled], 3, np.random.RandomState(0))
    _, idx = nearest_neighbors(X, 15)
    measured = nested_spreading(idx, targets, folds, np.random.RandomState(5))
    nested = measured.error
    reference = reference_nested_error(X, targets, folds, np.random.RandomState(5),
                                       SPREAD_NEIGHBOR_CANDIDATES, SPREAD_ALPHA_CANDIDATES)
    assert nested == pytest.approx(reference, abs=1e-9)
    # which labelled points the spreading that did not see their labels missed:
    # they make the error
    classes = y[labelled]
    assert measured.missed.shape == (labelled.size,) and measured.missed.dtype == bool
    shares = class_shares(idx, targets)
    assert nested == pytest.approx(weighted_class_error(measured.missed, classes, shares),
                                   abs=1e-12)
    # the smallest error of the plain choice never promises more than the nested one
    # can keep on the same folds
    assert choose_spreading(idx, targets, folds).error <= nested


def test_mbed_starts_from_the_spreading_graph_it_chose(rng):
    X, y = rings(rng)
    partial = np.where(np.arange(len(y)) % 8 == 0, y, -1)
    unlabelled = partial < 0
    model = small(4, n_iter_init=0)
    run = model.prepare(X, partial)
    assert model.anneal_start_ == "labels" and model.spread_neighbors_ == 5
    assert model.spread_alpha_ == SPREAD_ALPHA_CANDIDATES[0]
    assert (model.spread_graph_, model.spread_labels_neighbors_) == ("symmetric", 5)
    assert model.spread_cv_errors_.shape == (2, 2, len(SPREAD_ALPHA_CANDIDATES),
                                             len(SPREAD_NEIGHBOR_CANDIDATES))
    assert model.class_shares_.shape == (4,) and model.class_shares_.sum() == pytest.approx(1)
    assert np.mean(run.membership.argmax(axis=1)[unlabelled] != y[unlabelled]) < 0.02
    # a graph of ten neighbours and alpha fixed: no choice is made, and the start
    # mixes the rings
    fixed = small(4, n_iter_init=0, spread_neighbors=10, spread_alpha=0.99)
    run = fixed.prepare(X, partial)
    assert fixed.spread_neighbors_ == 10 and fixed.spread_cv_errors_ is None
    assert fixed.spread_class_mass_ is True  # nothing chosen: the spread labels normalize
    assert np.mean(run.membership.argmax(axis=1)[unlabelled] != y[unlabelled]) > 0.1
    # the number fixed, alpha "auto": alpha alone is chosen
    only_alpha = small(4, n_iter_init=0, spread_neighbors=10)
    only_alpha.prepare(X, partial)
    assert only_alpha.spread_cv_errors_.shape == (2, 2, len(SPREAD_ALPHA_CANDIDATES), 1)
    assert only_alpha.spread_neighbors_ == only_alpha.spread_labels_neighbors_ == 10
    # too few labels to validate on: ten neighbours and Zhou's alpha; no labels, no graph
    firsts = np.searchsorted(y, np.arange(4))
    few = small(4, max_iter=40).fit(X, np.where(np.isin(np.arange(len(y)), firsts), y, -1))
    assert few.spread_neighbors_ == SPREAD_NEIGHBORS and few.spread_cv_errors_ is None
    assert few.spread_alpha_ == SPREAD_ALPHA and few.spread_class_mass_
    assert few.spread_graph_ == "symmetric"
    assert small(4, max_iter=40).fit(X).spread_neighbors_ is None


def test_two_classes_compare_the_map_at_the_papers_width_with_the_spreading(rng):
    # Two rings: the paper's width (the median distance) reaches across them, the
    # graph of few neighbours follows each.
    X, y = rings(rng, n_rings=2)
    partial = np.where(np.arange(len(y)) % 8 == 0, y, -1)
    model = small(2).fit(X, partial)
    paper = small(2, sigma="quantile").fit(X, partial)
    assert model.anneal_start_ == "random" and model.sigma_ == paper.sigma_
    np.testing.assert_array_equal(model.sigma_candidates_, [paper.sigma_])
    assert model.sigma_cv_folds_.tolist() == [3]
    errors = model.labels_cv_errors_
    # both weigh each class by its estimated share of the unlabelled points
    assert errors["map"] > 0.3 and model.class_shares_ == pytest.approx([0.5, 0.5], abs=0.1)
    # the spreading's error is that of its choice made inside each fold: never
    # below the smallest of its table on the same folds
    assert np.nanmin(model.spread_cv_errors_) <= errors["spreading"] < errors["map"]
    assert model.labels_source_ == "spreading"
    assert np.mean(model.labels_[partial < 0] != y[partial < 0]) < 0.02
    # the same map either way: the choice touches labels_ only
    np.testing.assert_array_equal(model.embedding_, paper.embedding_)
    # the paper's width asked for: nothing is validated, the labels are the map's
    assert paper.sigma_candidates_ is None and paper.labels_cv_errors_ is None
    assert paper.labels_source_ == "map"


def test_two_classes_keep_the_map_where_it_clearly_classifies_better():
    # Two Gaussians in 50 dimensions, apart along one: the map's margin finds the
    # direction, while the nearest neighbours in 50 dimensions are mostly noise.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 50))
    y = np.repeat([0, 1], 60)
    X[y == 1, 0] += 3.3
    partial = np.where(np.arange(len(y)) % 6 == 0, y, -1)
    model = small(2).fit(X, partial)
    errors = model.labels_cv_errors_
    assert errors["map"] + 0.2 < errors["spreading"]
    assert model.labels_source_ == "map"
    np.testing.assert_array_equal(model.labels_, model.membership_.argmax(axis=1))
    unlabelled = partial < 0
    assert np.mean(model.labels_[unlabelled] != y[unlabelled]) < 0.1


def test_a_tie_keeps_the_spread_labels(rng):
    # Two well separated blobs: the map and the spreading classify every held-out
    # label; nothing says the map is better, so the spread labels stay.
    X, y = blobs(rng, n_per=40, K=2, gap=8.0)
    partial = np.where(np.arange(len(y)) % 5 == 0, y, -1)
    model = small(2).fit(X, partial)
    assert model.labels_cv_errors_ == {"map": 0.0, "spreading": 0.0}
    assert model.labels_source_ == "spreading"
    np.testing.assert_array_equal(model.labels_, y)


def test_two_classes_with_labels_of_one_compare_error_rates(rng):
    # labels of one class alone: the comparison runs and nothing divides by zero
    X, y = blobs(rng, n_per=40, K=2, gap=8.0)
    partial = np.where((np.arange(len(y)) % 5 == 0) & (y == 0), 0, -1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        model = small(2).fit(X, partial)
    assert model.labels_cv_errors_ is not None


def chosen_setting(model):
    """The spread labels' setting a fitted Mbed records."""
    return SpreadSetting(model.spread_graph_, model.spread_labels_neighbors_,
                         model.spread_alpha_, model.spread_class_mass_)


def test_labels_come_from_the_spreading_where_the_map_misses_held_out_labels(rng):
    # The rings: Gaussian neighbourhoods of any width candidate reach across rings,
    # while the graph of five neighbours follows them.
    X, y = rings(rng)
    partial = np.where(np.arange(len(y)) % 8 == 0, y, -1)
    unlabelled = partial < 0
    model = small(4).fit(X, partial)
    assert model.labels_source_ == "spreading"
    full = np.min(model.sigma_cv_errors_[model.sigma_cv_folds_ == 3])
    assert full > 0.4 and np.nanmin(model.spread_cv_errors_) == 0.0
    targets = np.zeros((len(y), 4))
    targets[~unlabelled, partial[~unlabelled]] = 1.0
    spread = spread_with(nearest_neighbors(X, 15)[1], targets, chosen_setting(model))
    spread = spread.argmax(axis=1)
    np.testing.assert_array_equal(model.labels_, spread)
    assert np.mean(model.labels_[unlabelled] != y[unlabelled]) < 0.02
    # the map and its memberships stay Mbed's, and miss most rings
    assert np.mean(model.membership_.argmax(axis=1)[unlabelled] != y[unlabelled]) > 0.3
    # a restart from the chosen settings (the Explorer's) keeps the spread labels
    again = model.with_chosen_settings()
    assert again.labels_from == "spreading" and again.sigma == model.sigma_
    assert again.spread_alpha == "auto"  # chosen again, cheaply; the start keeps 0.99
    assert model.labels_cv_errors_["spreading"] < model.labels_cv_errors_["map"]
    restarted = again.fit(X, partial)
    assert restarted.labels_source_ == "spreading"
    np.testing.assert_array_equal(restarted.labels_, spread)


def test_labels_where_the_map_classifies_as_well(rng):
    X, y = blobs(rng, n_per=30, K=3, gap=8.0)
    partial = np.where(np.arange(len(y)) % 5 == 0, y, -1)
    model = small(3).fit(X, partial)
    assert model.anneal_start_ == "labels" and model.sigma_cv_errors_ is not None
    # the map is not clearly better: the spread labels, which here are the map's
    assert model.labels_source_ == "spreading"
    np.testing.assert_array_equal(model.labels_, model.membership_.argmax(axis=1))
    # without a cross-validated sigma there is nothing to compare: the map's
    fixed = small(3, sigma=2.0).fit(X, partial)
    assert fixed.labels_source_ == "map"
    assert model.with_chosen_settings().labels_from == "spreading"
    assert fixed.with_chosen_settings().labels_from == "auto"  # nothing was compared


def test_labels_from_spreading_or_map_when_asked(rng):
    X, y = blobs(rng, n_per=30, K=3, gap=8.0)
    partial = np.where(np.arange(len(y)) % 5 == 0, y, -1)
    # a random start builds no graph for the annealing; the labels' graph is built anyway
    asked = small(3, sigma=2.0, anneal_start="random", labels_from="spreading").fit(X, partial)
    assert asked.labels_source_ == "spreading" and asked.spread_neighbors_ is not None
    targets = np.zeros((len(y), 3))
    targets[partial >= 0, partial[partial >= 0]] = 1.0
    spread = spread_with(nearest_neighbors(X, 15)[1], targets, chosen_setting(asked))
    np.testing.assert_array_equal(asked.labels_, spread.argmax(axis=1))
    X_rings, y_rings = rings(rng)
    rings_partial = np.where(np.arange(len(y_rings)) % 8 == 0, y_rings, -1)
    kept = small(4, labels_from="map").fit(X_rings, rings_partial)
    assert kept.labels_source_ == "map"
    np.testing.assert_array_equal(kept.labels_, kept.membership_.argmax(axis=1))
    assert kept.with_chosen_settings().labels_from == "map"


@pytest.mark.parametrize("params, match", [
    (dict(anneal_start="spectral"), "anneal_start"),
    (dict(spread_neighbors=0), "spread_neighbors"),
    (dict(spread_neighbors="many"), "spread_neighbors"),
    (dict(spread_alpha="fast"), "spread_alpha must be"),
    (dict(spread_alpha=1.0), "spread_alpha"),
    (dict(spread_alpha=0.0), "spread_alpha"),
    (dict(anneal_start="labels"), "no point is labelled"),
    (dict(labels_from="spread"), "labels_from"),
    (dict(labels_from="spreading"), 'labels_from="spreading" needs labelled points'),
])
def test_bad_anneal_start(rng, params, match):
    X, y = blobs(rng)
    labels = None if "anneal_start" in params or params.get("labels_from") == "spreading" else np.where(np.arange(len(y)) % 5 == 0, y, -1)
    with pytest.raises(ValueError, match=match):
        Mbed(2 if labels is None else 3, **params).fit(X, labels)
