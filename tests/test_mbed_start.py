"""Where Mbed's annealing starts: the paper's restart near the origin, or label
spreading over the nearest-neighbour graph (for many classes, docs/mbed.md)."""

import warnings

import numpy as np
import pytest

from nbembed._folds import stratified_folds
from nbembed.affinity.label_spreading import CLASS_MASS_CANDIDATES, SPREAD_ALPHA, \
    SPREAD_ALPHA_CANDIDATES, SPREAD_NEIGHBOR_CANDIDATES, SPREAD_NEIGHBORS, choose_spreading, \
    knn_graph, nested_spreading, spread_labels
from nbembed.affinity.perplexity import nearest_neighbors
from nbembed.methods.mbed import Mbed, spreading_classifies_better, spreading_ranks_better
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
    return F / F.sum(axis=1, keepdims=True)


def reference_held_out_error(X, targets, folds, k, alpha, class_mass):
    """One candidate's held-out error, from a fresh graph and dense spreading."""
    labelled = np.flatnonzero(targets.sum(axis=1) > 0)
    _, idx = nearest_neighbors(X, k)
    W = knn_graph(idx).toarray()
    missed = np.zeros(targets.shape[0], dtype=bool)
    for fold in np.unique(folds):
        hidden = labelled[folds == fold]
        kept = targets.copy()
        kept[hidden] = 0.0
        F = dense_spreading(W, kept, alpha, 200, class_mass)
        missed[hidden] = F[hidden].argmax(axis=1) != targets[hidden].argmax(axis=1)
    return mean_class_error(missed[labelled], targets[labelled].argmax(axis=1))


def mean_class_error(missed, classes):
    """The mean over classes of the fraction of their labelled points missed."""
    return np.mean([missed[classes == k].mean() for k in np.unique(classes)])


def reference_spread_choice(X, targets, folds, candidates, alphas):
    """Every candidate's held-out error, (class mass normalization or not,
    alphas, candidates)."""
    return np.array([[[reference_held_out_error(X, targets, folds, k, alpha, class_mass)
                       for k in candidates] for alpha in alphas]
                     for class_mass in CLASS_MASS_CANDIDATES])


def reference_choice(errors, candidates, alphas):
    """The two-step choice, written out: k at the first alpha with the
    normalization (ties to more neighbours), then the alpha and normalization
    on that graph (ties to no normalization, then the earlier alpha)."""
    c = min(range(len(candidates)), key=lambda c: (errors[0, 0, c], -candidates[c]))
    m, a = min(((m, a) for m in range(2) for a in range(len(alphas))),
               key=lambda ma: (errors[ma[0], ma[1], c], CLASS_MASS_CANDIDATES[ma[0]], ma[1]))
    return candidates[c], alphas[a], CLASS_MASS_CANDIDATES[m]


def assert_table_matches(errors, reference, k, compared):
    """The measured entries equal the reference; the other alphas are measured on
    the chosen graph only."""
    c = list(compared).index(k)
    measured = np.zeros(errors.shape, dtype=bool)
    measured[:, 0, :] = measured[:, :, c] = True
    np.testing.assert_array_equal(np.isnan(errors), ~measured)
    np.testing.assert_allclose(errors[measured], reference[measured], atol=1e-12)


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
        errors = reference_spread_choice(X, kept, inner, candidates, alphas)
        k, alpha, class_mass = reference_choice(errors, candidates, alphas)
        _, idx = nearest_neighbors(X, k)
        F = dense_spreading(knn_graph(idx).toarray(), kept, alpha, 200, class_mass)
        missed[hidden] = F[hidden].argmax(axis=1) != classes[~inside]
    return mean_class_error(missed[labelled], classes)


def test_spreading_neighbours_chosen_on_held_out_labels(rng):
    X, y = rings(rng)
    targets = np.zeros((len(y), 4))
    labelled = np.flatnonzero(np.arange(len(y)) % 8 == 0)
    targets[labelled, y[labelled]] = 1.0
    folds = stratified_folds(y[labelled], 3, np.random.RandomState(1))
    _, idx = nearest_neighbors(X, 15)
    choice = choose_spreading(idx, targets, folds)
    k, alpha, compared, errors = choice.k, choice.alpha, choice.neighbors, choice.errors
    np.testing.assert_array_equal(compared, SPREAD_NEIGHBOR_CANDIDATES)
    assert errors.shape == (2, len(SPREAD_ALPHA_CANDIDATES), len(compared))
    assert_table_matches(
        errors, reference_spread_choice(X, targets, folds, compared, SPREAD_ALPHA_CANDIDATES),
        k, compared)
    # three and five neighbours follow the rings (ties go to more), ten jump across;
    # ties go to no class mass normalization, then to the first alpha
    assert k == 5 and alpha == SPREAD_ALPHA_CANDIDATES[0] and not choice.class_mass
    assert np.all(errors[0, 0, :2] == 0) and errors[0, 0, -2] > 0.1
    assert choice.error == 0.0
    # the spread scores of the chosen graph classify every ring
    scores = spread_labels(knn_graph(idx[:, :k]), targets, alpha=alpha, class_mass=False)
    assert np.mean(scores.argmax(axis=1) != y) < 0.02
    # ties go to the larger number; candidates beyond the neighbours found are left out
    X, y = blobs(rng, n_per=30, K=3, gap=30.0)
    _, idx = nearest_neighbors(X, 7)
    choice = choose_spreading(idx, np.eye(3)[y], np.arange(len(y)) % 3)
    np.testing.assert_array_equal(choice.neighbors, [3, 5, 7])
    assert np.nanmax(choice.errors) == 0 and choice.k == 7
    assert choice.alpha == SPREAD_ALPHA_CANDIDATES[0] and not choice.class_mass


def test_the_spreading_chooses_the_graph_at_the_first_alpha_then_alpha(rng):
    # overlapping blobs, where the candidates' errors differ: the graph has the
    # smallest error at the first alpha (ties to more neighbours), alpha the
    # smallest on that graph (ties to the earlier)
    X, y = blobs(rng, n_per=60, K=3, gap=2.5)
    y = np.where(y == 2, 0, y)
    targets = np.zeros((len(y), 2))
    labelled = np.flatnonzero(np.arange(len(y)) % 6 == 0)
    targets[labelled, y[labelled]] = 1.0
    folds = stratified_folds(y[labelled], 3, np.random.RandomState(2))
    _, idx = nearest_neighbors(X, 15)
    alphas = (0.99, 0.9, 0.5)
    choice = choose_spreading(idx, targets, folds, alphas=alphas)
    reference = reference_spread_choice(X, targets, folds, choice.neighbors, alphas)
    assert_table_matches(choice.errors, reference, choice.k, choice.neighbors)
    assert (choice.k, choice.alpha, choice.class_mass) == reference_choice(
        reference, list(choice.neighbors), alphas)
    m = CLASS_MASS_CANDIDATES.index(choice.class_mass)
    assert choice.error == choice.errors[m, alphas.index(choice.alpha),
                                         list(choice.neighbors).index(choice.k)]


def test_class_masses_are_normalized_where_a_class_has_few_labels():
    # Two overlapping classes of 150 points, one with 30 labels and one with 6:
    # spread as they are, the many labels swallow the other class; normalized,
    # each class keeps its share. The held-out error counts every class alike,
    # so the 6 labels' misses show and the normalization is chosen.
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
    assert choice.class_mass
    graph = knn_graph(idx[:, :choice.k])
    unlabelled = np.setdiff1d(np.arange(300), labelled)

    def error(class_mass):
        F = spread_labels(graph, targets, alpha=choice.alpha, class_mass=class_mass)
        return np.mean(F[unlabelled].argmax(axis=1) != y[unlabelled])

    assert error(True) < 0.15 and error(False) > 0.4


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
    assert nested == pytest.approx(reference, abs=1e-12)
    # each labelled point's probabilities from the spreading that did not see its
    # label: rows of a distribution whose misses make the error
    classes = y[labelled]
    assert measured.held_out.shape == (labelled.size, 3)
    np.testing.assert_allclose(measured.held_out.sum(axis=1), 1.0)
    assert nested == pytest.approx(
        mean_class_error(measured.held_out.argmax(axis=1) != classes, classes), abs=1e-12)
    # the smallest error of the plain choice never promises more than the nested one
    # can keep on the same folds, and here promises less
    assert choose_spreading(idx, targets, folds).error <= nested


def test_mbed_starts_from_the_spreading_graph_it_chose(rng):
    X, y = rings(rng)
    partial = np.where(np.arange(len(y)) % 8 == 0, y, -1)
    unlabelled = partial < 0
    model = small(4, n_iter_init=0)
    run = model.prepare(X, partial)
    assert model.anneal_start_ == "labels" and model.spread_neighbors_ == 5
    assert model.spread_alpha_ == SPREAD_ALPHA_CANDIDATES[0]
    assert model.spread_cv_errors_.shape == (2, len(SPREAD_ALPHA_CANDIDATES),
                                             len(SPREAD_NEIGHBOR_CANDIDATES))
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
    assert only_alpha.spread_cv_errors_.shape == (2, len(SPREAD_ALPHA_CANDIDATES), 1)
    # too few labels to validate on: ten neighbours and Zhou's alpha; no labels, no graph
    firsts = np.searchsorted(y, np.arange(4))
    few = small(4, max_iter=40).fit(X, np.where(np.isin(np.arange(len(y)), firsts), y, -1))
    assert few.spread_neighbors_ == SPREAD_NEIGHBORS and few.spread_cv_errors_ is None
    assert few.spread_alpha_ == SPREAD_ALPHA and few.spread_class_mass_
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
    assert errors["map"] == model.sigma_cv_errors_[0]
    # the spreading's error is that of its choice made inside each fold: never
    # below the smallest of its table on the same folds
    assert np.nanmin(model.spread_cv_errors_) <= errors["spreading"] < errors["map"]
    # two classes: the areas under the ROC curve of the held-out labels decide
    areas = model.labels_cv_auc_
    assert areas["spreading"] > 0.95 and areas["map"] < areas["spreading"]
    assert model.labels_source_ == "spreading"
    assert np.mean(model.labels_[partial < 0] != y[partial < 0]) < 0.02
    # the same map either way: the choice touches labels_ only
    np.testing.assert_array_equal(model.embedding_, paper.embedding_)
    # the paper's width asked for: nothing is validated, the labels are the map's
    assert paper.sigma_candidates_ is None and paper.labels_cv_errors_ is None
    assert paper.labels_cv_auc_ is None
    assert paper.labels_source_ == "map"


def test_spreading_classifies_better_when_it_missed_fewer_held_out_labels():
    assert spreading_classifies_better(0.15, 0.05)
    assert spreading_classifies_better(0.26, 0.25)
    # a tie keeps the map, and so does a map that missed fewer
    assert not spreading_classifies_better(0.1, 0.1)
    assert not spreading_classifies_better(0.0, 0.0)
    assert not spreading_classifies_better(0.05, 0.15)


def test_spreading_ranks_better_when_its_area_is_larger():
    assert spreading_ranks_better(0.7, 0.9)
    # a tie keeps the map, and so does a map that ranks better
    assert not spreading_ranks_better(0.8, 0.8)
    assert not spreading_ranks_better(1.0, 1.0)
    assert not spreading_ranks_better(0.9, 0.7)


def test_two_classes_keep_the_map_where_it_ranks_the_held_out_labels_better(rng):
    # Two well separated blobs: the map ranks every held-out label right, and a
    # tie of the areas keeps it.
    X, y = blobs(rng, n_per=40, K=2, gap=8.0)
    partial = np.where(np.arange(len(y)) % 5 == 0, y, -1)
    model = small(2).fit(X, partial)
    assert model.labels_cv_auc_["map"] == 1.0
    assert model.labels_cv_auc_["map"] >= model.labels_cv_auc_["spreading"]
    assert model.labels_source_ == "map"
    np.testing.assert_array_equal(model.labels_, model.membership_.argmax(axis=1))


def test_two_classes_with_labels_of_one_compare_error_rates(rng):
    # no area under the ROC curve without labels of both classes: the error
    # rates decide, as with more classes, and nothing divides by zero
    X, y = blobs(rng, n_per=40, K=2, gap=8.0)
    partial = np.where((np.arange(len(y)) % 5 == 0) & (y == 0), 0, -1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        model = small(2).fit(X, partial)
    assert model.labels_cv_auc_ is None and model.labels_cv_errors_ is not None


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
    _, idx = nearest_neighbors(X, model.spread_neighbors_)
    spread = spread_labels(knn_graph(idx), targets, alpha=model.spread_alpha_,
                           class_mass=model.spread_class_mass_).argmax(axis=1)
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


def test_labels_come_from_the_map_where_it_classifies_as_well(rng):
    X, y = blobs(rng, n_per=30, K=3, gap=8.0)
    partial = np.where(np.arange(len(y)) % 5 == 0, y, -1)
    model = small(3).fit(X, partial)
    assert model.anneal_start_ == "labels" and model.sigma_cv_errors_ is not None
    assert model.labels_source_ == "map"
    assert model.labels_cv_auc_ is None  # more than two classes: the error rates decide
    np.testing.assert_array_equal(model.labels_, model.membership_.argmax(axis=1))
    # without a cross-validated sigma there is nothing to compare: the map's
    fixed = small(3, sigma=2.0).fit(X, partial)
    assert fixed.labels_source_ == "map"
    assert model.with_chosen_settings().labels_from == "map"
    assert fixed.with_chosen_settings().labels_from == "auto"  # nothing was compared


def test_labels_from_spreading_or_map_when_asked(rng):
    X, y = blobs(rng, n_per=30, K=3, gap=8.0)
    partial = np.where(np.arange(len(y)) % 5 == 0, y, -1)
    # a random start builds no graph for the annealing; the labels' graph is built anyway
    asked = small(3, sigma=2.0, anneal_start="random", labels_from="spreading").fit(X, partial)
    assert asked.labels_source_ == "spreading" and asked.spread_neighbors_ is not None
    targets = np.zeros((len(y), 3))
    targets[partial >= 0, partial[partial >= 0]] = 1.0
    _, idx = nearest_neighbors(X, asked.spread_neighbors_)
    np.testing.assert_array_equal(
        asked.labels_, spread_labels(knn_graph(idx), targets, alpha=asked.spread_alpha_,
                                     class_mass=asked.spread_class_mass_).argmax(axis=1))
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
