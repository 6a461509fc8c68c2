"""The undo history of :class:`~nbembed.Annotations`.

Every successful mutating call that changes something appends one step that
holds what the call is about to change: the class names, the previous labels
of the points it relabels, and which constraint list it appends to (or, for
``clear`` and ``merge``, all of them). :meth:`~nbembed.Annotations.undo` puts
these back. A call that changes nothing (labels the points already have, a
constraint already present) records no step. Reverting a step gives the step
that reverts it in turn, which :meth:`~nbembed.Annotations.redo` applies; a
new change forgets what could be redone.

The history keeps the last :data:`MAX_UNDO_STEPS` steps, and fewer when their
saved labels would take more than :data:`MAX_UNDO_BYTES`: the oldest steps are
forgotten, so a long session of labelling does not grow without bound.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

#: Most steps the undo history keeps.
MAX_UNDO_STEPS = 1000
#: Most bytes of saved labels the undo history keeps (at least one step is kept).
MAX_UNDO_BYTES = 32 * 2**20


class _Step(NamedTuple):
    """What is needed to revert one mutating call (or one undo, for redo)."""

    description: str
    class_names: tuple        # the class names before the call
    rows: np.ndarray          # points whose labels the call changed
    soft: np.ndarray          # their previous probability rows
    confidence: np.ndarray    # their previous confidences
    appended_to: str | None   # the constraint list the call appended one entry to
    constraints: dict | None  # every constraint list before the call (clear, merge)
    removed: tuple | None = None  # (list, entry) an undo took away, for redo


class _UndoHistory:
    """Recording and reverting the steps of :class:`~nbembed.Annotations`.

    Works on the annotations' ``_history`` list and on the state a step saves:
    ``_class_names``, ``_soft``, ``_conf`` and the constraint lists. New labels
    may add classes, through the annotations' ``_grow``. ``_forgotten`` counts
    the steps dropped from the start of the history and ``_revision`` every
    change (a step recorded, undone or redone).
    """

    @property
    def revision(self):
        """int: Grows by one with every change (a step recorded, undone or redone);
        compare two values to tell whether the annotations changed in between."""
        return self._revision

    @property
    def history_position(self):
        """int: Steps recorded or redone minus steps undone since the annotations were made.

        ``len(annotations)`` is the same less the steps forgotten at the start of
        a long history (see ``nbembed.annotations.history.MAX_UNDO_STEPS``).
        """
        return self._forgotten + len(self._history)

    def _forget_history(self):
        """Start with an empty history (a new object, one read from a file)."""
        self._history = []
        self._history_bytes = 0  # what the steps of the history save, kept as they change
        self._undone = []  # the steps that redo the calls undone, last undone last
        self._forgotten = 0
        self._revision = 0

    def _record(self, step):
        """Append ``step`` to the history, forgetting the oldest steps beyond the limits
        and what could be redone."""
        self._undone = []
        self._push(step)

    def _push(self, step):
        self._history.append(step)
        self._history_bytes += _step_bytes(step)
        self._revision += 1
        while len(self._history) > 1 and (len(self._history) > MAX_UNDO_STEPS
                                          or self._history_bytes > MAX_UNDO_BYTES):
            self._history_bytes -= _step_bytes(self._history.pop(0))
            self._forgotten += 1

    def _step(self, description, rows=None, appended_to=None, constraints=None):
        rows = np.empty(0, dtype=np.int64) if rows is None else rows
        return _Step(description, tuple(self._class_names), rows, self._soft[rows].copy(),
                     self._conf[rows].copy(), appended_to, constraints)

    def _assign(self, description, rows, probs, confidence):
        """Set the labels of ``rows``; the points whose label does not change are left
        out of the step, and without any change (nor new class) no step is recorded."""
        width = max(probs.shape[1], self._soft.shape[1])
        old = np.zeros((len(rows), width))
        old[:, :self._soft.shape[1]] = self._soft[rows]
        new = np.zeros_like(old)
        new[:, :probs.shape[1]] = probs
        changed = np.any(old != new, axis=1) | (self._conf[rows] != confidence)
        if not changed.any() and probs.shape[1] <= self.n_classes:
            return
        rows, probs = rows[changed], probs[changed]
        step = self._step(description, rows=rows)
        self._grow(probs.shape[1])
        self._soft[rows] = probs
        self._conf[rows] = confidence
        self._record(step)

    def _append(self, list_name, item):
        """Add the new part of ``item`` to a constraint list as one step (no step when
        the annotations hold all of it already)."""
        item = self._new_part(list_name, item)
        if item is None:
            return
        step = self._step(self._describe_addition(list_name, item), appended_to=list_name)
        getattr(self, list_name).append(item)
        self._record(step)

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
        self._history_bytes -= _step_bytes(step)
        self._revision += 1
        self._undone.append(self._revert(step))
        return step.description

    def redo(self):
        """Make again the last call that :meth:`undo` reverted.

        Returns
        -------
        str or None
            A short description of the call made again, or None when there is
            nothing to redo (nothing was undone since the last change).
        """
        if not self._undone:
            return None
        step = self._undone.pop()
        self._push(self._revert(step))
        return step.description

    @property
    def can_redo(self):
        """int: How many undone calls :meth:`redo` can make again."""
        return len(self._undone)

    def _revert(self, step):
        """Put back what ``step`` saved; return the step that puts back what it replaced."""
        inverse = _Step(step.description, tuple(self._class_names), step.rows,
                        self._soft[step.rows].copy(), self._conf[step.rows].copy(), None,
                        None if step.constraints is None else
                        {name: list(getattr(self, name)) for name in step.constraints})
        k = len(step.class_names)
        self._class_names = list(step.class_names)
        if self._soft.shape[1] > k:
            self._soft = self._soft[:, :k].copy()
        elif self._soft.shape[1] < k:
            self._soft = np.hstack([self._soft, np.zeros((self._n, k - self._soft.shape[1]))])
        self._soft[step.rows] = step.soft
        self._conf[step.rows] = step.confidence
        if step.appended_to is not None:
            items = getattr(self, step.appended_to)
            # A shorter copy, not pop(): a constraint list only ever changes in place
            # by appending, which the membership index relies on (redundancy.py).
            setattr(self, step.appended_to, items[:-1])
            inverse = inverse._replace(removed=(step.appended_to, items[-1]))
        if step.removed is not None:
            name, item = step.removed
            getattr(self, name).append(item)
            inverse = inverse._replace(appended_to=name)
        if step.constraints is not None:
            for name, items in step.constraints.items():
                setattr(self, name, list(items))
        return inverse


def _step_bytes(step):
    """Bytes of the arrays a step saves."""
    return step.rows.nbytes + step.soft.nbytes + step.confidence.nbytes
