"""The undo history of :class:`~nbembed.Annotations`.

Every successful mutating call appends one step that holds what the call is
about to change: the class names, the previous labels of the points it
relabels, and which constraint list it appends to (or, for ``clear``, all of
them). :meth:`~nbembed.Annotations.undo` puts these back.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class _Step(NamedTuple):
    """What is needed to revert one mutating call."""

    description: str
    class_names: tuple        # the class names before the call
    rows: np.ndarray          # points whose labels the call changed
    soft: np.ndarray          # their previous probability rows
    confidence: np.ndarray    # their previous confidences
    appended_to: str | None   # the constraint list the call appended one entry to
    constraints: dict | None  # every constraint list before the call (clear only)


class _UndoHistory:
    """Recording and reverting the steps of :class:`~nbembed.Annotations`.

    Works on the annotations' ``_history`` list and on the state a step saves:
    ``_class_names``, ``_soft``, ``_conf`` and the constraint lists. New labels
    may add classes, through the annotations' ``_grow``.
    """

    def _step(self, description, rows=None, appended_to=None, constraints=None):
        rows = np.empty(0, dtype=np.int64) if rows is None else rows
        return _Step(description, tuple(self._class_names), rows, self._soft[rows].copy(),
                     self._conf[rows].copy(), appended_to, constraints)

    def _assign(self, description, rows, probs, confidence):
        step = self._step(description, rows=rows)
        self._grow(probs.shape[1])
        self._soft[rows] = probs
        self._conf[rows] = confidence
        self._history.append(step)

    def _append(self, description, list_name, item):
        self._history.append(self._step(description, appended_to=list_name))
        getattr(self, list_name).append(item)

    def undo(self):
        """Revert the last successful mutating call exactly.

        Returns
        -------
        str or None
            A short description of the call undone, or None when there is
            nothing to undo (``len(self) == 0``).
        """
        if not self._history:
            return None
        step = self._history.pop()
        k = len(step.class_names)
        self._class_names = list(step.class_names)
        if self._soft.shape[1] != k:
            self._soft = self._soft[:, :k].copy()
        self._soft[step.rows] = step.soft
        self._conf[step.rows] = step.confidence
        if step.appended_to is not None:
            getattr(self, step.appended_to).pop()
        if step.constraints is not None:
            for name, items in step.constraints.items():
                setattr(self, name, list(items))
        return step.description
