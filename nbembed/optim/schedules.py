"""Schedules: what changes with the iteration count while a run optimizes.

A schedule knows nothing of objectives or optimizers; it answers questions
about an iteration (which phase, which stage, which lambda) and the run acts
on the answer. There are three:

- :class:`EarlyExaggeration` -- the SNE family's start (van der Maaten &
  Hinton, 2008): the attraction multiplied and a small momentum for the first
  iterations, then the main optimizer.
- :class:`Widening` -- NeRV's start: broader neighbourhoods in stages whose
  effective number of neighbours halves from stage to stage.
- :class:`LambdaAnnealing` -- Mbed's Algorithm 1: a crude SNE, then the
  boundaries' length scale lambda annealed from 20 r down to 0.2 r in steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np


class Phase(NamedTuple):
    """What :class:`EarlyExaggeration` says of one iteration."""

    exaggeration: float
    momentum: float
    optimizer: str
    learning_rate: float


@dataclass(frozen=True)
class EarlyExaggeration:
    """``iterations`` exaggerated gradient steps, then the main optimizer.

    Parameters
    ----------
    iterations : int
        Length of the exaggerated phase.
    factor : float
        The attraction's multiplier during it.
    momentum : tuple of float
        Momentum during and after it.
    learning_rates : tuple of float
        Step size of the gradient optimizer during and after it.
    optimizer : {"gradient", "fixed-point"}
        The main phase's optimizer (the exaggerated phase always uses
        gradient steps).
    """

    iterations: int
    factor: float
    momentum: tuple
    learning_rates: tuple
    optimizer: str

    def phase(self, iteration):
        """The :class:`Phase` of ``iteration`` (0-based)."""
        if iteration < self.iterations:
            return Phase(self.factor, self.momentum[0], "gradient", self.learning_rates[0])
        return Phase(1.0, self.momentum[1], self.optimizer, self.learning_rates[1])


@dataclass(frozen=True)
class Widening:
    """The first ``iterations`` split evenly over ``n_stages`` wider stages.

    Parameters
    ----------
    n_stages : int
        Number of widening stages (0: no widening).
    iterations : int
        Iterations spent in them.
    """

    n_stages: int
    iterations: int

    def stage(self, iteration):
        """Index of the stage at ``iteration``, or -1 once widening is over."""
        if iteration >= self.iterations or self.n_stages == 0:
            return -1
        return min(iteration * self.n_stages // self.iterations, self.n_stages - 1)


#: lambda runs from LAMBDA_START * r down to LAMBDA_END * r (Zien & Quinonero
#: Candela, 2005, Algorithm 1, line 7).
LAMBDA_START, LAMBDA_END = 20.0, 0.2


def lambda_schedule(radius, n_anneal):
    """lambda_j = 2 r 10 / 100^((j - 2) / (p - 2)) for j = 2..p: from 20 r to 0.2 r."""
    j = np.arange(n_anneal - 1)
    return LAMBDA_START * radius * (LAMBDA_END / LAMBDA_START) ** (j / (n_anneal - 2))


def iterations_per_step(n_iter, n_anneal):
    """The n_iter annealing iterations spread evenly over the p - 1 steps."""
    base, extra = divmod(n_iter, n_anneal - 1)
    return np.array([base + (j < extra) for j in range(n_anneal - 1)], dtype=np.int64)


class LambdaAnnealing:
    """Algorithm 1's schedule: ``n_iter_init`` iterations of SNE, then ``n_anneal - 1``
    annealing steps sharing the remaining iterations.

    Positions count the iterations done under the schedule (a run may hold
    lambda and pause it).

    Parameters
    ----------
    n_iter, n_iter_init, n_anneal : int
        Iterations in all, for the initial SNE, and p.
    """

    def __init__(self, n_iter, n_iter_init, n_anneal):
        self.n_iter = int(n_iter)
        self.n_iter_init = int(n_iter_init)
        self.n_anneal = int(n_anneal)
        self.step_ends = self.n_iter_init + np.cumsum(
            iterations_per_step(self.n_iter - self.n_iter_init, self.n_anneal))

    def lambdas(self, radius):
        """The annealing steps' lambdas for an embedding of radius ``radius``."""
        return lambda_schedule(radius, self.n_anneal)

    def starts_annealing(self, position):
        """True at the position where the initial SNE ends."""
        return position == self.n_iter_init

    def ends_step(self, step, position):
        """True if annealing step ``step`` ends at ``position``."""
        return step < len(self.step_ends) and position == self.step_ends[step]

    def has_step(self, step):
        """True if there is an annealing step number ``step``."""
        return step < len(self.step_ends)
