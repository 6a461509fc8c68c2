"""Callbacks for ``fit`` and ``run.step``: progress, snapshots, early stopping.

A callback is any callable ``callback(run)`` called after every iteration; a
return value of True stops the run. Objects may also define
``on_start(run, n_iter)`` and ``on_end(run)``.
"""

import numpy as np


class ProgressBar:
    """A tqdm progress bar (``tqdm.auto``: a widget in notebooks, text elsewhere).

    Parameters
    ----------
    desc : str, optional
        Label in front of the bar; defaults to the method's name.
    every : int
        Refresh the displayed cost every this many iterations.
    """

    def __init__(self, desc=None, every=10):
        self.desc = desc
        self.every = every
        self._bar = None

    def on_start(self, run, n_iter):
        from tqdm.auto import tqdm

        self._bar = tqdm(total=n_iter, desc=self.desc or run.name, leave=False)

    def __call__(self, run):
        if self._bar is None:
            return None
        self._bar.update(1)
        if run.iteration % self.every == 0 and run.history:
            self._bar.set_postfix(cost=f"{run.history[-1]['cost']:.4f}", refresh=False)
        return None

    def on_end(self, run):
        if self._bar is not None:
            self._bar.close()
            self._bar = None


class Snapshots:
    """Keep a copy of the embedding every ``every`` iterations.

    Attributes
    ----------
    embeddings : list of ndarray
    iterations : list of int
    """

    def __init__(self, every=10):
        self.every = int(every)
        self.embeddings = []
        self.iterations = []

    def __call__(self, run):
        if run.iteration % self.every == 0:
            self.embeddings.append(run.embedding)
            self.iterations.append(run.iteration)
        return None


class EarlyStopping:
    """Stop when the cost improved by less than ``min_improvement`` (relative)
    over the last ``patience`` cost evaluations, outside early exaggeration.

    Parameters
    ----------
    min_improvement : float
    patience : int
    """

    def __init__(self, min_improvement=1e-4, patience=5):
        self.min_improvement = float(min_improvement)
        self.patience = int(patience)

    def __call__(self, run):
        costs = [h["cost"] for h in run.history if h.get("exaggeration", 1.0) == 1.0]
        if len(costs) <= self.patience:
            return False
        old, new = costs[-1 - self.patience], costs[-1]
        return bool(np.isfinite(old) and old - new < self.min_improvement * abs(old))


def call_all(callbacks, run):
    """Call every callback; True if any asked to stop."""
    stop = False
    for cb in callbacks:
        stop = bool(cb(run)) or stop
    return stop


def as_list(callbacks):
    """None, one callable, or a sequence of callables, as a list."""
    if callbacks is None:
        return []
    if callable(callbacks):
        return [callbacks]
    callbacks = list(callbacks)
    for cb in callbacks:
        if not callable(cb):
            raise TypeError(f"callbacks must be callables taking the run; got {cb!r}.")
    return callbacks
