"""A run that only shows a given embedding, for ``Explorer(Y, method="precomputed")``.

Threads: a :class:`PrecomputedRun` never changes, so the worker thread and the
kernel's main thread may read it at once.
"""

from __future__ import annotations

from .._validation import check_data
from ..optim.protocol import Run


class PrecomputedRun(Run):
    """A finished run holding a fixed embedding (nothing to optimize).

    Lets the Explorer show, colour and annotate an embedding computed
    elsewhere; annotations are recorded but change nothing.

    Parameters
    ----------
    Y : array-like (n_samples, n_components)
    """

    name = "precomputed"
    live_parameters = {}
    annotation_kinds = ()

    def __init__(self, Y):
        self._Y = check_data(Y, name="Y (the precomputed embedding)")
        self.iteration = 0
        self.n_iter = 0
        self.history = []

    @property
    def embedding(self):
        return self._Y.copy()

    def step(self, n=1, callbacks=None, *, record_last=True):
        return self

    def set_params(self, **params):
        if params:
            raise ValueError(f"a precomputed embedding has no live parameters; got "
                             f"{', '.join(params)}.")
        return self


class Precomputed:
    """The "method" behind ``method="precomputed"``: ``prepare`` wraps X as is."""

    def prepare(self, X, y=None, annotations=None, init=None):
        return PrecomputedRun(X)
