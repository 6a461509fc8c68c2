"""HSSNE's must-link weight chosen on the labelled points (``rho="auto"``)."""

import time

import numpy as np
import pytest

from nbembed import HSSNE
from nbembed._folds import stratified_folds
from nbembed.methods.must_link_weight import RHO_CANDIDATES, RHO_DEFAULT, \
    cross_validate_rho, nearest_labelled_misses


def test_nearest_labelled_misses_are_those_of_the_nearest_visible_point(rng):
    Y = rng.normal(size=(40, 2))
    labels = rng.integers(0, 3, 40)
    visible, hidden = np.arange(0, 25), np.arange(25, 40)
    nearest = [visible[np.argmin(np.linalg.norm(Y[visible] - Y[h], axis=1))] for h in hidden]
    np.testing.assert_array_equal(nearest_labelled_misses(Y, labels, visible, hidden),
                                  labels[nearest] != labels[hidden])


def test_every_weight_is_validated_on_every_fold_and_ties_go_to_less_trust(rng):
    labels = np.full(60, -1)
    labels[:30] = np.repeat([0, 1, 2], [14, 10, 6])
    maps = {rho: rng.normal(size=(60, 2)) for rho in RHO_CANDIDATES}
    calls = []

    def embed(kept, rho):
        calls.append((rho, np.flatnonzero(kept >= 0)))
        return maps[rho]

    rho, candidates, errors = cross_validate_rho(embed, labels, np.random.RandomState(3))
    np.testing.assert_array_equal(candidates, RHO_CANDIDATES)
    assert RHO_CANDIDATES[0] == 0.0  # "ignore the labels" is a candidate
    # rho = 0 ignores the labels: one map for all folds, made without any
    unlinked = [kept for r, kept in calls if r == 0.0]
    assert len(unlinked) == 1 and unlinked[0].size == 0
    assert len(calls) == 1 + 2 * 3
    folds = stratified_folds(labels[:30], 3, np.random.RandomState(3))
    for c, r in enumerate(RHO_CANDIDATES):
        missed = np.zeros(30, dtype=bool)
        for fold in range(3):
            hidden, visible = np.flatnonzero(folds == fold), np.flatnonzero(folds != fold)
            missed[hidden] = nearest_labelled_misses(maps[r], labels, visible, hidden)
            if r > 0:  # the map of this fold was made with the other folds' labels only
                assert any(rr == r and np.array_equal(kept, visible) for rr, kept in calls)
        # every class counts alike: the mean of the classes' error rates
        per_class = [missed[labels[:30] == k].mean() for k in range(3)]
        assert errors[c] == pytest.approx(np.mean(per_class))
    assert rho == RHO_CANDIDATES[int(np.argmin(errors))]
    # equal maps: equal errors, and the weight that trusts the labels least wins
    rho, _, errors = cross_validate_rho(lambda kept, r: maps[0.0], labels,
                                        np.random.RandomState(3))
    assert np.ptp(errors) == 0 and rho == 0.0


def two_moons_with_labels(rng, n=160):
    from sklearn.datasets import make_moons

    X, y = make_moons(n, noise=0.08, random_state=0)
    X = np.hstack([X, 0.05 * rng.normal(size=(n, 3))])
    labels = np.full(n, -1)
    labels[rng.choice(n, 24, replace=False)] = 0
    labels[labels == 0] = y[labels == 0]
    return X, y, labels


def test_hssne_records_the_weight_it_chose_and_fixes_it_for_later_runs(rng):
    X, y, labels = two_moons_with_labels(rng)
    model = HSSNE(perplexity=10, max_iter=300, random_state=0).fit(X, labels)
    assert model.rho_ in RHO_CANDIDATES
    np.testing.assert_array_equal(model.rho_candidates_, RHO_CANDIDATES)
    assert model.rho_cv_errors_.shape == (3,) and np.all((model.rho_cv_errors_ >= 0)
                                                          & (model.rho_cv_errors_ <= 1))
    assert model.rho_ == RHO_CANDIDATES[int(np.argmin(model.rho_cv_errors_))]
    # the final map is the fit with that weight, and later runs keep it
    fixed = HSSNE(rho=model.rho_, perplexity=10, max_iter=300, random_state=0).fit(X, labels)
    np.testing.assert_array_equal(model.embedding_, fixed.embedding_)
    assert fixed.rho_ == model.rho_ and fixed.rho_cv_errors_ is None
    assert model.with_chosen_settings().rho == model.rho_
    assert HSSNE(rho=0.3).with_chosen_settings().rho == 0.3


@pytest.mark.parametrize("case", ["no labels", "too few labels", "one class", "too many points"])
def test_without_labels_to_validate_on_auto_is_the_default_weight(rng, monkeypatch, case):
    X, y, labels = two_moons_with_labels(rng)
    if case == "no labels":
        labels = None
    elif case == "too few labels":
        labels = np.where(np.isin(np.arange(len(y)), [0, 1, 2, 3, 4]), y, -1)
    elif case == "one class":
        labels = np.where((y == 0) & (np.arange(len(y)) % 5 == 0), 0, -1)
    else:
        monkeypatch.setattr("nbembed.methods.hssne.RHO_CV_MAX_N", len(y) - 1)
    model = HSSNE(perplexity=10, max_iter=100, random_state=0).fit(X, labels)
    assert model.rho_ == RHO_DEFAULT and model.rho_cv_errors_ is None


def test_the_explorer_starts_at_the_default_weight_without_a_search():
    live = HSSNE().with_live_settings()
    assert live.rho == RHO_DEFAULT == 0.5
    assert HSSNE(rho=0.2).with_live_settings().rho == 0.2


@pytest.mark.parametrize("rho, error, match", [
    ("high", ValueError, 'rho must be "auto" or a number in \\[0, 1\\]'),
    (1.5, ValueError, "rho must be in \\[0, 1\\]"),
])
def test_bad_rho(rng, rho, error, match):
    with pytest.raises(error, match=match):
        HSSNE(rho=rho).fit(rng.normal(size=(30, 3)))


#: How long the patched search sleeps before searching.
SEARCH_DELAY_S = 0.5


def test_the_search_is_timed_as_part_of_the_calibration(rng, monkeypatch):
    # A search made slow on purpose: a wall-clock lower bound holds on any machine
    # (a sleep never ends early), where comparing two phases' times does not.
    search, calls = HSSNE._choose_rho, []

    def slow_search(self, *args):
        calls.append(self.rho)
        time.sleep(SEARCH_DELAY_S)
        return search(self, *args)

    monkeypatch.setattr(HSSNE, "_choose_rho", slow_search)
    X, y, labels = two_moons_with_labels(rng)
    searched = HSSNE(perplexity=10, max_iter=50, random_state=0).fit(X, labels)
    assert calls == ["auto"]
    assert searched.timings_.calibration >= SEARCH_DELAY_S
    HSSNE(rho=searched.rho_, perplexity=10, max_iter=50, random_state=0).fit(X, labels)
    assert calls == ["auto"], "a given rho is not searched"
