"""Callbacks for ``fit`` and ``run.step``: progress, snapshots, early stopping.

A callback is any callable ``callback(run)`` called after every iteration; a
return value of True stops the run. Objects may also define
``on_start(run, n_iter)`` and ``on_end(run)``, and ``on_prepare(estimator)``,
which ``fit`` calls before it prepares the run (neighbours, affinities).
"""

import numpy as np

from .compiling import CompileWatch


#: What :class:`ProgressBar` shows while Numba compiles, instead of a rate and
#: a time left that would extrapolate the compilation to every iteration.
COMPILING = ("compiling kernels (first run only, cached afterwards; nbembed compile does "
             "them all)…")


class ProgressBar:
    """A tqdm progress bar (``tqdm.auto``: a widget in notebooks, text elsewhere).

    While Numba compiles a kernel that its disk cache does not have yet (the
    first run after installing nbembed), the bar says so instead of showing a
    rate and a time left; afterwards both are measured from the iterations
    that followed the compilation. Compilation while ``fit`` prepares the run
    (the neighbour search, the affinities) is shown too, on a bar of its own
    that gives way to the iterations' bar.

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
        self._watch = None
        self._compiled = False
        self._label, self._total = None, None

    def on_prepare(self, estimator):
        self._stop()
        self._label = self.desc or type(estimator).__name__
        self._watch = CompileWatch(self._on_compiling_while_preparing)
        self._watch.__enter__()

    def _on_compiling_while_preparing(self, active):
        if active and self._bar is None:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=None, desc=self._label, leave=False,
                             bar_format="{desc}: preparing, " + COMPILING)
            self._bar.refresh()

    def on_start(self, run, n_iter):
        self._stop()
        self._label, self._total = self.desc or run.name, n_iter
        self._bar = self._open(initial=0)
        self._compiled = False
        self._watch = CompileWatch(self._on_compiling)
        self._watch.__enter__()

    def __call__(self, run):
        if self._bar is None:
            return None
        self._bar.update(1)
        if self._compiled:
            self._restart()
        if run.iteration % self.every == 0 and run.history:
            self._bar.set_postfix(cost=f"{run.history[-1]['cost']:.4f}", refresh=False)
        return None

    def on_end(self, run):
        self._stop()

    def _open(self, initial, postfix=None):
        from tqdm.auto import tqdm

        return tqdm(total=self._total, initial=initial, desc=self._label, postfix=postfix,
                    leave=False)

    def _on_compiling(self, active):
        if active and self._bar is not None:
            self._compiled = True
            self._bar.bar_format = "{desc}: {n_fmt}/{total_fmt} " + COMPILING
            self._bar.refresh()

    def _restart(self):
        """Replace the bar by one whose clock starts now, where it stood."""
        done, postfix = self._bar.n, self._bar.postfix
        self._bar.close()
        self._bar = self._open(initial=done, postfix=postfix)
        self._compiled = False

    def _stop(self):
        if self._watch is not None:
            self._watch.__exit__(None, None, None)
            self._watch = None
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
