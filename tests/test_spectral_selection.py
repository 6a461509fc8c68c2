"""gamma, the Hadamard power and beta chosen by cross-validation on the labelled points."""

import numpy as np
import pytest

from nbembed import LPP, SELF, SSDNE, SSLFDA, Annotations
from nbembed.spectral import selection

from conftest import load_shared


@pytest.fixture
def two_moons_like():
    """Two elongated classes side by side, 12 labelled points."""
    rng = np.random.default_rng(3)
    t = rng.uniform(-3, 3, 300)
    X = np.column_stack([t, np.where(np.arange(300) < 150, 0.0, 1.0) + 0.08 * rng.normal(size=300),
                         0.3 * rng.normal(size=300)])
    y = (np.arange(300) >= 150).astype(int)
    partial = np.full(300, -1)
    labelled = np.concatenate([rng.choice(150, 6, replace=False),
                               150 + rng.choice(150, 6, replace=False)])
    partial[labelled] = y[labelled]
    return X, y, partial


def test_folds_deal_each_class_round_robin_and_keep_two_per_class():
    y = np.array([0] * 7 + [1] * 2 + [2] * 4)
    folds = selection.cv_folds(y, np.arange(len(y)))
    hidden = np.concatenate(folds)
    assert len(hidden) == len(set(hidden.tolist()))
    assert set(y[hidden].tolist()) == {0, 2}  # two points of class 1 cannot be hidden
    assert all(np.sum(y[np.setdiff1d(np.arange(13), f)] == c) >= 2 for f in folds for c in (0, 2))
    assert selection.cv_folds(np.array([0, 0, 1, 1]), np.arange(4)) == []


def test_margins_match_a_direct_computation():
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(700, 3))
    y = rng.integers(0, 3, 700)
    train, test = np.arange(0, 400), np.arange(400, 700)
    d = np.linalg.norm(Z[test][:, None] - Z[train][None], axis=2)
    same = y[test][:, None] == y[train][None]
    d_same = np.where(same, d, np.inf).min(1)
    d_other = np.where(same, np.inf, d).min(1)
    expected = (d_other - d_same) / (d_other + d_same)
    np.testing.assert_allclose(selection.one_nn_margins(Z, y, train, test), expected, atol=1e-9)
    right = y[train][np.argmin(d, axis=1)] == y[test]
    assert np.array_equal(selection.one_nn_margins(Z, y, train, test) > 0, right)


def test_ties_go_to_the_candidate_leaning_least_on_the_labels():
    key = selection.selection_key
    assert key(dict(gamma=100.0), 5, 0.1) > key(dict(gamma=1.0), 5, 3.0)
    assert key(dict(gamma=1.0), 6, 0.0) > key(dict(gamma=100.0), 5, 3.0)
    assert key(dict(hadamard_power=1.0), 5, 1.0) > key(dict(hadamard_power=4.0), 5, 1.0)
    assert key(dict(hadamard_power=4.0), 5, 1.5) > key(dict(hadamard_power=1.0), 5, 1.0)
    # beta: the larger wins a tie, no shrinkage last; gamma is looked at first
    assert key(dict(gamma=1.0, beta=0.01), 5, 0.0) > key(dict(gamma=1.0, beta=0.0), 5, 3.0)
    assert key(dict(gamma=10.0, beta=0.0), 5, 0.0) > key(dict(gamma=1.0, beta=0.5), 5, 3.0)
    assert key(dict(gamma=1.0, beta=0.0), 6, 0.0) > key(dict(gamma=1.0, beta=0.5), 5, 3.0)


def _grid_with_twin():
    """A twin (gamma = 0) and three semi-supervised candidates."""
    return [dict(gamma=0.0, beta=0.5)] + [dict(gamma=1.0, beta=b) for b in (0.0, 0.01, 0.1)]


def test_validated_count_scores_the_search_not_its_luckiest_candidate():
    candidates = _grid_with_twin()
    # Three folds. The twin is right on 3 hidden points of each; each
    # semi-supervised candidate gets one fold all right (4) by luck.
    n_correct = np.array([[3, 4, 3, 3],
                          [3, 3, 4, 3],
                          [3, 3, 3, 4]])
    margin = np.zeros(n_correct.shape)
    # Fold 0 is predicted by the choice of folds 1 and 2: candidates 2 and 3 tie
    # at 7 and the larger beta (3) wins, right on 3 there; fold 1 by candidate 3
    # (beats 1 on beta), 3 right; fold 2 by candidate 2 (beats 1), 3 right.
    assert selection.validated_count(candidates, n_correct, margin, [1, 2, 3]) == 9
    assert selection.validated_count(candidates, n_correct, margin, [0]) == 9
    best, validated = selection.choose(candidates, n_correct, margin)
    # Every semi-supervised candidate has 10 right against the twin's 9, but
    # the search scores no better than the twin: the tie keeps the twin.
    assert validated == dict(semi_supervised=9, supervised_twin=9)
    assert best == 0


def test_a_consistently_better_semi_supervised_candidate_is_chosen():
    candidates = _grid_with_twin()
    n_correct = np.array([[3, 4, 2, 3],
                          [3, 4, 3, 2],
                          [3, 4, 3, 3]])
    best, validated = selection.choose(candidates, n_correct, np.zeros(n_correct.shape))
    assert validated == dict(semi_supervised=12, supervised_twin=9)
    assert best == 1


def test_without_a_twin_the_whole_grid_is_searched():
    candidates = [dict(beta=b) for b in selection.BETAS]
    n_correct = np.array([[1, 2, 3, 2, 1], [2, 2, 3, 1, 1]])
    best, validated = selection.choose(candidates, n_correct, np.zeros(n_correct.shape))
    assert best == 2 and validated is None


def test_self_joins_the_twin_when_asked():
    names = ["gamma", "hadamard_power", "beta"]
    grid = selection.candidate_grid(names, 50, True, add_self=True)
    self_part = [c for c in grid if "label_cost" in c]
    assert grid[:len(grid) - len(self_part)] == selection.candidate_grid(names, 50, True)
    assert [c["beta"] for c in self_part] == list(selection.BETAS)
    assert all(c["gamma"] == 0 and c["hadamard_power"] == 1.0
               and c["label_cost"] == selection.SELF_LABEL_COST for c in self_part)
    # without beta among the chosen values SELF has nothing to offer
    assert not any("label_cost" in c for c in
                   selection.candidate_grid(["gamma", "hadamard_power"], 50, True, True))


def test_self_is_searched_only_for_another_label_cost_and_without_links(two_moons_like):
    X, _, partial = two_moons_like

    def searched_self(model):
        return any("label_cost" in p for p in model.selection_results_["params"])

    assert searched_self(SSDNE().fit(X, partial))
    assert not searched_self(SSLFDA().fit(X, partial))  # SELF is its own twin
    linked = Annotations.from_labels(partial)
    linked.add_must_link(np.flatnonzero(partial == 0)[:3])
    assert not searched_self(SSDNE().fit(X, annotations=linked))


def test_a_choice_of_self_is_self_until_links_arrive(two_moons_like):
    X, _, partial = two_moons_like
    # Two classes a line separates: the twin validates as well as the
    # semi-supervised candidates, and SELF's margins are the largest.
    run = SSDNE().prepare(X, partial)
    assert run.label_cost == selection.SELF_LABEL_COST and run.gamma == 0
    run.step()
    np.testing.assert_allclose(np.abs(run.embedding),
                               np.abs(SELF(beta=run.beta).fit(X, partial).embedding_),
                               rtol=1e-8, atol=1e-10)
    # New labels keep SELF; must-links, which SELF would ignore, bring back DNE's cost.
    relabelled = partial.copy()
    relabelled[np.flatnonzero(partial < 0)[:4]] = 0
    run.set_annotations(y=relabelled)
    assert run.label_cost == selection.SELF_LABEL_COST
    linked = Annotations.from_labels(partial)
    linked.add_must_link(np.flatnonzero(partial == 1)[:3])
    run.set_annotations(linked)
    assert run.label_cost is None
    fixed = SSDNE(gamma=run.gamma, hadamard_power=run.hadamard_power,
                  beta=run.beta).fit(X, annotations=linked)
    np.testing.assert_allclose(np.abs(run.embedding), np.abs(fixed.embedding_),
                               rtol=1e-8, atol=1e-10)


def test_the_grid_shrinks_for_large_problems():
    full = selection.candidate_grid(["gamma", "hadamard_power"], 50)
    small = selection.candidate_grid(["gamma", "hadamard_power"], 2000)
    assert len(full) == 18 and len(small) == 6
    assert [c["hadamard_power"] for c in full[:6]] == [1.0] * 6  # one power at a time
    assert len(selection.candidate_grid(["beta"], 10)) == len(selection.BETAS)
    joint = selection.candidate_grid(["gamma", "hadamard_power", "beta"], 50, True)
    twin = [c for c in joint if c["gamma"] == 0]
    assert len(joint) == 18 * len(selection.SEMI_SUPERVISED_BETAS) + len(twin)
    assert {c["beta"] for c in joint if c["gamma"] > 0} == set(selection.SEMI_SUPERVISED_BETAS)
    # the supervised twin: every beta SELF tries, and LFDA's 0, at one Hadamard power
    assert [c["beta"] for c in twin] == [0.0, *selection.BETAS]
    assert {c["hadamard_power"] for c in twin} == {1.0}
    fixed_beta = selection.candidate_grid(["gamma", "hadamard_power"], 50, True)
    assert [c for c in fixed_beta if c["gamma"] == 0] == [dict(hadamard_power=1.0, gamma=0.0)]


    assert 0.0 in {c["beta"] for c in selection.candidate_grid(["beta"], 50, True)}


def test_fallback_keeps_a_semi_supervised_learner_unshrunk():
    assert selection.fallback(["gamma", "hadamard_power", "beta"], True) == dict(
        gamma=1.0, hadamard_power=1.0, beta=0.0)
    assert selection.fallback(["beta"]) == dict(beta=0.5)


@pytest.mark.parametrize("estimator", [SSLFDA, SSDNE])
def test_auto_picks_the_best_scored_candidate_and_records_it(two_moons_like, estimator):
    X, y, partial = two_moons_like
    model = estimator().fit(X, partial)
    results = model.selection_results_
    chosen = model.selected_params_
    assert set(chosen) - {"label_cost"} == {"gamma", "hadamard_power", "beta"}
    assert results["n_hidden"] > 0
    best = results["params"].index(chosen)
    # The part searched: the semi-supervised candidates only when their validated
    # count beats the supervised twin's; within it, the most hidden points right.
    validated = results["validated"]
    semi = validated["semi_supervised"] > validated["supervised_twin"]
    assert (chosen["gamma"] > 0) == semi
    part = [i for i, p in enumerate(results["params"]) if (p["gamma"] > 0) == semi]
    assert results["n_correct"][best] == results["n_correct"][part].max()
    assert model.history_[-1]["gamma"] == chosen["gamma"]
    if "label_cost" in chosen:
        return  # SELF: see test_a_choice_of_self_is_self_until_links_arrive
    fixed = estimator(**chosen).fit(X, partial)
    np.testing.assert_allclose(model.embedding_, fixed.embedding_)
    assert fixed.selected_params_ == {} and fixed.selection_results_ is None


def test_auto_leaves_the_estimator_parameters_alone(two_moons_like):
    X, _, partial = two_moons_like
    model = SSDNE()
    model.fit(X, partial)
    assert model.get_params()["gamma"] == "auto"


def test_too_few_labels_fall_back_to_the_defaults(two_moons_like):
    X, y, _ = two_moons_like
    partial = np.full_like(y, -1)
    partial[[0, 1, 150, 151]] = y[[0, 1, 150, 151]]
    model = SSDNE().fit(X, partial)
    assert model.selected_params_ == {"gamma": 1.0, "hadamard_power": 1.0, "beta": 0.0}
    assert model.selection_results_["n_hidden"] == 0
    np.testing.assert_allclose(model.embedding_,
                               SSDNE(gamma=1.0, hadamard_power=1.0, beta=0.0)
                               .fit(X, partial).embedding_)


def test_few_labels_in_many_dimensions_choose_shrinkage():
    """BCI (117 noisy features) with 100 labels: SS-LFDA without shrinkage stays near
    chance, like LFDA; the cross-validation on the labelled points chooses beta > 0,
    which the unlabelled points confirm."""
    data = load_shared("ssl_bci")
    X, y = data["X"], data["y"]
    for labelled in data["idx_labeled_100"][:2]:
        partial = np.full_like(y, -1)
        partial[labelled] = y[labelled]
        hidden = np.setdiff1d(np.arange(len(y)), labelled)
        auto = SSLFDA().fit(X, partial)
        plain = SSLFDA(beta=0.0).fit(X, partial)
        assert auto.selected_params_["beta"] > 0

        def accuracy(model):
            margins = selection.one_nn_margins(model.embedding_, y, np.asarray(labelled), hidden)
            return np.mean(margins > 0)
        assert accuracy(auto) > accuracy(plain) + 0.1, (accuracy(auto), accuracy(plain))


def test_ss_lfda_without_its_neighbourhood_cost_is_self(two_moons_like):
    X, _, partial = two_moons_like
    for beta in (0.0, 0.3):
        np.testing.assert_allclose(SSLFDA(gamma=0.0, beta=beta).fit_transform(X, partial),
                                   SELF(beta=beta).fit_transform(X, partial), atol=1e-10)


def test_ss_lfda_drops_a_misleading_neighbourhood_cost_as_self_does():
    """Faces under 64 lights: the nearest faces share the light, not the person,
    so the neighbourhood cost pulls people together. The labels choose gamma = 0
    (the supervised twin, SELF), and SS-LFDA is no worse than SELF on the
    unlabelled faces (it was 14 points worse when gamma could not be 0)."""
    data = load_shared("yaleb_extended")
    people = data["y"] < 6
    # 2 x 2 pixel means (16 x 16 images) keep the eigenproblems small
    X = data["X"][people].reshape(-1, 16, 2, 16, 2).mean(axis=(2, 4)).reshape(-1, 256)
    y = data["y"][people]
    errors = {"SS-LFDA": [], "SELF": [], "LPP": []}
    for seed in range(2):
        rng = np.random.default_rng(seed)
        partial = np.full_like(y, -1)
        for person in np.unique(y):
            chosen = rng.choice(np.flatnonzero(y == person), 10, replace=False)
            partial[chosen] = person
        labelled, hidden = np.flatnonzero(partial >= 0), np.flatnonzero(partial < 0)

        def error(model):
            return np.mean(selection.one_nn_margins(model.embedding_, y, labelled, hidden) <= 0)
        ss = SSLFDA(n_components=10, hadamard_power=1.0).fit(X, partial)
        assert ss.selected_params_["gamma"] == 0.0, (seed, ss.selected_params_)
        errors["SS-LFDA"].append(error(ss))
        errors["SELF"].append(error(SELF(n_components=10).fit(X, partial)))
        errors["LPP"].append(error(LPP(n_components=10).fit(X)))
    mean = {name: np.mean(values) for name, values in errors.items()}
    print(mean)
    assert mean["SS-LFDA"] <= mean["SELF"] + 0.01
    assert mean["SS-LFDA"] < mean["LPP"] - 0.1


def test_self_and_lpp_choose_their_own_parameter(two_moons_like):
    X, _, partial = two_moons_like
    assert set(SELF().fit(X, partial).selected_params_) == {"beta"}
    assert LPP().fit(X).selected_params_ == {}
    star = LPP(hadamard_power="auto").fit(X, partial)
    assert star.selected_params_["hadamard_power"] in selection.POWERS
    assert LPP(hadamard_power="auto").fit(X).selected_params_ == {"hadamard_power": 1.0}


@pytest.mark.parametrize("value", ["Auto", "best", None])
def test_other_strings_are_refused(two_moons_like, value):
    X, _, partial = two_moons_like
    with pytest.raises((TypeError, ValueError), match="gamma"):
        SSDNE(gamma=value).fit(X, partial)


# -- the neighbourhood size ----------------------------------------------------------------
@pytest.mark.parametrize("estimator", [SSLFDA, SSDNE])
def test_auto_neighbourhood_size_is_the_best_scored_of_the_three(two_moons_like, estimator):
    X, _, partial = two_moons_like
    model = estimator(n_neighbors="auto").fit(X, partial)
    chosen = model.selected_params_
    assert set(chosen) - {"label_cost"} == {"gamma", "hadamard_power", "beta", "n_neighbors"}
    assert chosen["n_neighbors"] in selection.NEIGHBOR_COUNTS
    # Each size on its own: its choice scores no more hidden points right.
    chosen_correct = {}
    for k in selection.NEIGHBOR_COUNTS:
        results = estimator(n_neighbors=k).fit(X, partial).selection_results_
        chosen_correct[k] = results["n_correct"][results["chosen"]]
    assert chosen_correct[chosen["n_neighbors"]] == max(chosen_correct.values())
    # The same map as the chosen values given outright.
    if "label_cost" in chosen:
        fixed = SELF(beta=chosen["beta"]).fit(X, partial)
        np.testing.assert_allclose(np.abs(model.embedding_), np.abs(fixed.embedding_),
                                   rtol=1e-8, atol=1e-10)
    else:
        fixed = estimator(**chosen).fit(X, partial)
        np.testing.assert_allclose(model.embedding_, fixed.embedding_)
    assert model.get_params()["n_neighbors"] == "auto"


def test_auto_neighbourhood_size_without_labels_or_effect_is_the_default(two_moons_like):
    X, _, partial = two_moons_like
    assert LPP(n_neighbors="auto").fit(X).selected_params_ == {"n_neighbors": 7}
    few = np.full_like(partial, -1)
    few[[0, 1, 150, 151]] = 0, 0, 1, 1
    assert SSDNE(n_neighbors="auto").fit(X, few).selected_params_["n_neighbors"] == 7


class _Scored:
    """What best_neighbor_count reads of a run."""

    def __init__(self, k, n_correct, margin, gamma=1.0):
        self.n_neighbors = k
        self.selected_params = {"gamma": gamma}
        self.selection_results = dict(params=[{"gamma": gamma}], n_correct=np.array([n_correct]),
                                      margin=np.array([margin]), n_hidden=10, chosen=0)


def test_neighbourhood_size_ties_go_to_the_default():
    pick = selection.best_neighbor_count
    assert pick([_Scored(5, 8, 1.0), _Scored(7, 8, 1.0), _Scored(10, 8, 1.0)]).n_neighbors == 7
    assert pick([_Scored(5, 9, 0.5), _Scored(7, 8, 2.0), _Scored(10, 8, 3.0)]).n_neighbors == 5
    # Equal counts: the rule's next criteria (gamma, then the margin) come before k.
    assert pick([_Scored(5, 8, 1.0), _Scored(7, 8, 1.0), _Scored(10, 8, 2.0)]).n_neighbors == 10
    assert pick([_Scored(5, 8, 1.0, gamma=10.0), _Scored(7, 8, 3.0)]).n_neighbors == 5
    unscored = _Scored(10, 9, 1.0)
    unscored.selection_results = None
    assert pick([_Scored(5, 8, 1.0), unscored, _Scored(7, 8, 1.0)]).n_neighbors == 7


@pytest.mark.parametrize("value", ["Auto", "cv", 0])
def test_other_neighbourhood_sizes_are_refused(two_moons_like, value):
    X, _, partial = two_moons_like
    with pytest.raises((TypeError, ValueError), match="n_neighbors"):
        SSDNE(n_neighbors=value).fit(X, partial)
