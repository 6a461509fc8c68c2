#!/usr/bin/env python
"""How close Parametric Embedding's memberships come to the posteriors it embeds.

The input: ``--objects`` posteriors over ``--classes`` classes, each drawn
from a Dirichlet distribution with parameter ``--peak`` on one random class and
``--rest`` on the others (mean top probability about 0.5 at the defaults), or
the posteriors of an npz file (``--data``, an array ``P`` of shape (n, K) with
rows summing to one).

For each embedding dimension of ``--dims`` and each seed of ``--seeds``,
``ParametricEmbedding(n_components=d, random_state=seed)`` is fitted at its
defaults; printed per dimension (mean and range over the seeds): the mean
KL(p_n || m_n) between the input posteriors and the fitted memberships, the
share of objects whose most probable class is the same in both, and the final
objective. A spread of objectives across seeds that is small against the
change between dimensions says that the optimizer reaches the same minimum
from every start, and the gap in two dimensions is the model's (K classes
placed in d dimensions), not the optimizer's.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/pe_fidelity.py
    PYTHONPATH=. python benchmarks/pe_fidelity.py --dims 2 --seeds 10 --data my_posteriors.npz
"""

from __future__ import annotations

import argparse

import numpy as np


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", help="npz with P (n, K), rows summing to one")
    p.add_argument("--objects", type=int, default=2000)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--peak", type=float, default=5.0)
    p.add_argument("--rest", type=float, default=0.5)
    p.add_argument("--dims", type=int, nargs="+", default=[2, 3, 5, 9])
    p.add_argument("--seeds", type=int, default=5)
    return p.parse_args(argv)


def synthetic_posteriors(n, K, peak, rest, seed=0):
    """Posteriors each drawn around one random class."""
    rng = np.random.default_rng(seed)
    concentration = np.full((n, K), rest)
    concentration[np.arange(n), rng.integers(0, K, n)] = peak
    return np.array([rng.dirichlet(c) for c in concentration])


def fidelity(P, M):
    """(mean KL(P_n || M_n), share of objects with the same most probable class)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(P > 0, P * (np.log(P) - np.log(M)), 0.0)
    return float(terms.sum(axis=1).mean()), float(np.mean(P.argmax(1) == M.argmax(1)))


def main(argv=None):
    from nbembed import ParametricEmbedding

    args = parse_args(argv)
    if args.data:
        P = np.load(args.data, allow_pickle=False)["P"]
    else:
        P = synthetic_posteriors(args.objects, args.classes, args.peak, args.rest)
    print(f"{P.shape[0]} objects, {P.shape[1]} classes, mean top probability "
          f"{P.max(axis=1).mean():.3f}")
    print("| d | mean KL(p ‖ m) | same most probable class | "
          "objective (mean, range over seeds) |")
    print("|---|---|---|---|")
    for d in args.dims:
        rows = []
        for seed in range(args.seeds):
            model = ParametricEmbedding(n_components=d, random_state=seed).fit(P)
            rows.append((*fidelity(P, model.membership_), model.objective_))
        kl, agree, objective = (np.array(column) for column in zip(*rows))
        print(f"| {d} | {kl.mean():.4f} ({kl.min():.4f}–{kl.max():.4f}) | "
              f"{agree.mean():.3f} ({agree.min():.3f}–{agree.max():.3f}) | "
              f"{objective.mean():.1f} ({objective.min():.1f}–{objective.max():.1f}) |",
              flush=True)


if __name__ == "__main__":
    main()
