"""Choosing gamma, the Hadamard power and beta from the labelled points alone.

A semi-supervised learner's weights are chosen by cross-validation on the
labelled points: each fold's labels are hidden, the learner is solved with the
others, and a 1-NN classifier on the remaining labelled points predicts the
hidden ones. The candidate with the most hidden points right wins. With a few
labels many candidates tie, and the ties go, in this order, to

1. the candidate that leans least on the labels: the larger gamma, then the
   larger beta (beta = 0 last): a handful of labels is a noisier guide than
   the neighbourhoods and the scatter of all points;
2. the larger summed 1-NN margin (how much nearer the nearest same-class
   labelled point is than the nearest other-class one);
3. the candidate nearest the defaults (gamma = 1, r = 1, beta = 0.5).

A semi-supervised learner (a label and a neighbourhood cost) chooses gamma, r
and beta on one grid. beta shrinks the label cost toward PCA as in SELF, and
how much shrinkage a learner needs depends on gamma: the neighbourhood cost
regularizes too, and with the relative gamma the cost's scale grows with it.
Its beta candidates, :data:`SEMI_SUPERVISED_BETAS`, include 0 (no shrinkage).
Its grid also holds its supervised twin, gamma = 0 (the label cost alone, which
with beta is SELF) at every beta SELF tries, so that the labels can choose to
drop the neighbourhood cost where it hurts: on faces under many lights the
nearest neighbours share the light, not the person. A learner whose label cost
is not LFDA's (SS-DNE, SS-MFA) also has SELF's candidates in its twin: with 20 labels of
ionosphere, DNE's cost alone erred on 21-23% of the unlabelled points at every
beta, SELF on 17.5%.

The best of many candidates scores better on the hidden labels than it will do
on new points (the winner's curse), and the semi-supervised part of the grid
has many times the twin's candidates. So the two parts are compared first by
a score that the choice has not seen (:func:`validated_count`): each fold is
predicted by the candidate that the other folds choose within that part. The
semi-supervised part must score more to be used; the winner within the chosen
part follows the order above.

The rule was compared with others on the shared benchmark sets; see
docs/spectral.md and docs/benchmarks-labels.md.
"""

from __future__ import annotations

import itertools

import numpy as np

#: Candidate values, from the labels toward the neighbourhoods of all points.
#: Up to gamma = 1000, where the semi-supervised learners come close to LPP*,
#: so the selection can fall back to the unsupervised learner.
GAMMAS = (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)
POWERS = (1.0, 2.0, 4.0)
#: SELF's beta, between LFDA (0) and PCA (1).
BETAS = (0.1, 0.3, 0.5, 0.7, 0.9)
#: beta next to gamma: none (the framework as written), or shrinkage on a log
#: scale up to an even mix. A little shrinkage goes a long way: with 100 BCI
#: labels SS-LFDA mostly chooses 0.01 with a small gamma.
SEMI_SUPERVISED_BETAS = (0.0, 0.01, 0.1, 0.5)
#: beta for the supervised twin (gamma = 0) of a semi-supervised learner: LFDA
#: and SELF's candidates.
SUPERVISED_TWIN_BETAS = (0.0,) + BETAS
#: Smaller grids where one solve is expensive (the KPCA trick on many points).
SMALL_GAMMAS = (0.1, 1.0, 10.0)
SMALL_POWERS = (1.0, 4.0)
#: Above this many coordinates (kernel PCA components) the small grids are used.
SMALL_GRID_ABOVE = 500

#: Parameters that move a learner from the labels toward the structure of all
#: points, in the order ties look at them: the neighbourhood cost's weight and
#: the weight of PCA.
TOWARD_ALL_POINTS = ("gamma", "beta")
#: Remaining ties go to the candidate closest to these (in log scale); they are
#: also, but for a semi-supervised learner's beta, the values used when there are too few
#: labels to cross-validate (:func:`fallback`).
DEFAULTS = dict(gamma=1.0, hadamard_power=1.0, beta=0.5)

#: Neighbourhood sizes k tried when ``n_neighbors="auto"``; ties go to the default.
NEIGHBOR_COUNTS = (5, 7, 10)
DEFAULT_NEIGHBORS = 7

N_FOLDS = 5
#: Hidden points whose margins are computed at once (bounds the distance block).
MARGIN_BLOCK = 256


#: The label cost of SELF, whose candidates join the supervised twin of a
#: semi-supervised learner with another label cost (see :func:`candidate_grid`).
SELF_LABEL_COST = "lfda"


def candidate_grid(names, n_coordinates, semi_supervised=False, add_self=False):
    """Every combination of candidate values for the parameters ``names``.

    Parameters
    ----------
    names : iterable of str
        Among "gamma", "hadamard_power" and "beta".
    n_coordinates : int
        The learner's input dimension; above :data:`SMALL_GRID_ABOVE` the small
        grids are used for gamma and the Hadamard power.
    semi_supervised : bool, default=False
        Whether the learner has both a label and a neighbourhood cost.

    Returns
    -------
    list of dict
        Ordered so that candidates sharing a Hadamard power are adjacent.
        beta takes :data:`SEMI_SUPERVISED_BETAS` (0 included) for a
        semi-supervised learner, :data:`BETAS` otherwise. When gamma is
        chosen for a semi-supervised learner, the supervised twin (gamma = 0,
        beta in :data:`SUPERVISED_TWIN_BETAS`, the Hadamard power at its
        default since it then acts on nothing) comes last; with ``add_self``
        and beta among ``names``, SELF's candidates follow it (the same values
        with beta in :data:`BETAS` and ``label_cost="lfda"``).
    """
    names = set(names)
    small = n_coordinates > SMALL_GRID_ABOVE
    values = dict(hadamard_power=SMALL_POWERS if small else POWERS,
                  gamma=SMALL_GAMMAS if small else GAMMAS,
                  beta=SEMI_SUPERVISED_BETAS if semi_supervised else BETAS)
    ordered = [name for name in ("hadamard_power", "gamma", "beta") if name in names]
    grid = [dict(zip(ordered, combo))
            for combo in itertools.product(*(values[name] for name in ordered))]
    if semi_supervised and "gamma" in names:
        twin = dict(hadamard_power=(DEFAULTS["hadamard_power"],), gamma=(0.0,),
                    beta=SUPERVISED_TWIN_BETAS)
        grid += [dict(zip(ordered, combo))
                 for combo in itertools.product(*(twin[name] for name in ordered))]
        if add_self and "beta" in names:
            self_values = dict(twin, beta=BETAS)
            grid += [dict(zip(ordered, combo), label_cost=SELF_LABEL_COST)
                     for combo in itertools.product(*(self_values[name] for name in ordered))]
    return grid


def fallback(names, semi_supervised=False):
    """The values of ``names`` when too few points are labelled to cross-validate.

    :data:`DEFAULTS`, except beta = 0 for a semi-supervised learner (one with
    both a label and a neighbourhood cost): the framework as written.
    """
    return {name: 0.0 if name == "beta" and semi_supervised else DEFAULTS[name]
            for name in DEFAULTS if name in set(names)}


def cv_folds(y, labelled, n_folds=N_FOLDS):
    """Folds of labelled points whose hiding leaves two labelled points per class.

    Each class's points are dealt round-robin to the folds; a class with
    fewer than three labelled points, or one that a fold would leave with
    fewer than two, is never hidden.

    Returns
    -------
    list of ndarray of int
        The non-empty folds; empty when no class can be hidden.
    """
    folds = [[] for _ in range(n_folds)]
    for c in np.unique(y[labelled]):
        members = labelled[y[labelled] == c]
        per_fold = -(-members.size // n_folds)
        if members.size < 3 or members.size - per_fold < 2:
            continue
        for i, point in enumerate(members):
            folds[i % n_folds].append(point)
    return [np.array(f, dtype=np.int64) for f in folds if f]


def one_nn_margins(Z, y, train, test):
    """Per test point, (d_other - d_same) / (d_other + d_same) in [-1, 1].

    d_same and d_other are the distances to the nearest training point of the
    same and of another class; the margin is positive exactly when 1-NN is
    right, and says by how much. Ratios of distances do not change when the
    whole embedding is rescaled.
    """
    margins = np.empty(len(test))
    train_Z, train_y = Z[train], y[train]
    train_sq = np.einsum("ij,ij->i", train_Z, train_Z)
    for start in range(0, len(test), MARGIN_BLOCK):
        block = test[start:start + MARGIN_BLOCK]
        block_Z = Z[block]
        sq = (np.einsum("ij,ij->i", block_Z, block_Z)[:, None] + train_sq[None, :]
              - 2.0 * block_Z @ train_Z.T)
        d = np.sqrt(np.maximum(sq, 0.0))
        same = y[block][:, None] == train_y[None, :]
        d_same = np.where(same, d, np.inf).min(axis=1)
        d_other = np.where(same, np.inf, d).min(axis=1)
        total = d_same + d_other
        margins[start:start + len(block)] = np.where(
            np.isfinite(total) & (total > 0),
            (d_other - d_same) / np.where(np.isfinite(total) & (total > 0), total, 1.0), 0.0)
    return margins


def _log(value):
    return np.log(value) if value > 0 else -np.inf


def selection_key(candidate, n_correct, margin):
    """Sort key of a candidate: larger is better (see the module docstring)."""
    toward_all = tuple(_log(candidate.get(name, 1.0)) for name in TOWARD_ALL_POINTS)
    to_default = sum(abs(np.log(value / DEFAULTS[name]))
                     for name, value in candidate.items()
                     if not isinstance(value, str) and value > 0)
    return (n_correct, *toward_all, margin, -to_default)


def best_of(candidates, n_correct, margin, members):
    """The index, among ``members``, of the candidate ranked first by :func:`selection_key`."""
    return max(members, key=lambda i: selection_key(candidates[i], n_correct[i], margin[i]))


def validated_count(candidates, n_correct_by_fold, margin_by_fold, members):
    """Hidden points right when each fold is predicted by the other folds' choice.

    For each fold, the candidate among ``members`` that :func:`best_of`
    chooses from the scores of the other folds predicts that fold; its hidden
    points right there are summed. Unlike the best candidate's own count, the
    sum does not grow with the number of candidates searched: it scores the
    search, not its luckiest candidate.

    Parameters
    ----------
    candidates : list of dict
    n_correct_by_fold, margin_by_fold : ndarray (n_folds, n_candidates)
        Each fold's hidden points right and summed margins, per candidate.
    members : sequence of int
        The candidates searched.

    Returns
    -------
    int
    """
    n_folds = n_correct_by_fold.shape[0]
    total = 0
    for fold in range(n_folds):
        others = np.arange(n_folds) != fold
        chosen = best_of(candidates, n_correct_by_fold[others].sum(axis=0),
                         margin_by_fold[others].sum(axis=0), members)
        total += int(n_correct_by_fold[fold, chosen])
    return total


def supervised_twin(candidates):
    """Indices of the semi-supervised candidates and of the supervised twin (gamma = 0)."""
    is_twin = [c.get("gamma", 1.0) == 0 for c in candidates]
    return ([i for i, twin in enumerate(is_twin) if not twin],
            [i for i, twin in enumerate(is_twin) if twin])


def cross_validate(solve, set_labels, labels, candidates):
    """Score every candidate by hiding each fold of the labelled points in turn.

    Parameters
    ----------
    solve : callable
        ``solve(candidate)`` returns the embedding (n, d) with those values.
    set_labels : callable
        ``set_labels(labels)`` makes the learner use these labels (-1 hidden).
    labels : ndarray of int (n,)
        All labels, -1 for unlabelled points.
    candidates : list of dict

    Returns
    -------
    best : dict or None
        The chosen candidate; None when too few points are labelled to hide
        any (see :func:`cv_folds`). When the grid holds a supervised twin
        (gamma = 0) beside semi-supervised candidates, the part with the
        larger :func:`validated_count` is searched (a tie keeps the twin, the
        learner with fewer ingredients); otherwise the whole grid.
    results : dict
        ``params``, ``n_correct``, ``margin`` (one entry per candidate),
        ``n_hidden``, the labelled points hidden once each, ``chosen``, the
        index of the chosen candidate (absent when none is), and, with a twin,
        ``validated``: the validated counts of the ``"semi_supervised"`` and
        the ``"supervised_twin"`` parts.
    """
    labelled = np.flatnonzero(labels >= 0)
    folds = cv_folds(labels, labelled)
    n_correct = np.zeros((len(folds), len(candidates)), dtype=np.int64)
    margin = np.zeros((len(folds), len(candidates)))
    for f, fold in enumerate(folds):
        hidden = labels.copy()
        hidden[fold] = -1
        set_labels(hidden)
        train = np.setdiff1d(labelled, fold)
        for i, candidate in enumerate(candidates):
            margins = one_nn_margins(solve(candidate), labels, train, fold)
            n_correct[f, i] = np.count_nonzero(margins > 0)
            margin[f, i] = margins.sum()
    results = dict(params=[dict(c) for c in candidates], n_correct=n_correct.sum(axis=0),
                   margin=margin.sum(axis=0), n_hidden=int(sum(len(f) for f in folds)))
    if not folds:
        return None, results
    best, validated = choose(candidates, n_correct, margin)
    results["chosen"] = best
    if validated is not None:
        results["validated"] = validated
    return dict(candidates[best]), results


def choose(candidates, n_correct_by_fold, margin_by_fold):
    """The chosen candidate's index from each fold's scores (see :func:`cross_validate`).

    Returns
    -------
    best : int
    validated : dict or None
        The :func:`validated_count` of the ``"semi_supervised"`` and the
        ``"supervised_twin"`` parts; None when the grid has no twin.
    """
    n_correct = n_correct_by_fold.sum(axis=0)
    margin = margin_by_fold.sum(axis=0)
    semi, twin = supervised_twin(candidates)
    if not (semi and twin):
        return best_of(candidates, n_correct, margin, range(len(candidates))), None
    validated = {part: validated_count(candidates, n_correct_by_fold, margin_by_fold, indices)
                 for part, indices in (("semi_supervised", semi), ("supervised_twin", twin))}
    members = semi if validated["semi_supervised"] > validated["supervised_twin"] else twin
    return best_of(candidates, n_correct, margin, members), validated


def best_neighbor_count(runs):
    """The run whose neighbourhood size did best in its own cross-validation.

    Each run was prepared with its own ``n_neighbors`` and has chosen its other
    parameters (``selection_results``; the folds depend on the labels only, so
    the scores compare). The runs are ranked by the key of their chosen
    candidate (:func:`selection_key`), with the distance of k from
    ``DEFAULT_NEIGHBORS`` (7; in log scale) added to the distance from the
    defaults. Without scores (too few labels) the run nearest the default wins.
    """
    def distance(run):
        return abs(np.log(run.n_neighbors / DEFAULT_NEIGHBORS))

    def key(run):
        results = run.selection_results
        i = results["chosen"]
        *ranking, to_default = selection_key(results["params"][i], results["n_correct"][i],
                                             results["margin"][i])
        return (*ranking, to_default - distance(run))

    if any(run.selection_results is None or not run.selection_results["n_hidden"]
           for run in runs):
        return min(runs, key=distance)
    return max(runs, key=key)
