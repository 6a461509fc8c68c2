"""What the Explorer's annotation controls do to an :class:`~nbembed.Annotations`.

Three modes, as in the lasso toolbar:

``"soft_label"``
    ``set_labels(selection, class, confidence)``; a new class is created
    first with ``add_class(name)``.
``"must_link"``
    ``add_must_link(selection)``: the selection is one group.
``"cannot_link"``
    ``add_cannot_link(a, b)`` between two selections.

An action may take more than one step of the annotations' undo history (a new
class and its labels); :class:`ActionLog` groups them so that one undo in the
widget reverts one action, and an action that fails half-way is rolled back.

Threads: no locks of its own. The Explorer calls it from either of its threads,
always with ``_ann_lock`` held, which guards the annotations and the
:class:`ActionLog`.
"""

from __future__ import annotations

import numpy as np

MODES = ("soft_label", "must_link", "cannot_link")

#: Which entries of a run's ``annotation_kinds`` make it use an annotation mode.
KINDS_USED = {"soft_label": ("labels", "soft_labels"), "must_link": ("must_link",),
              "cannot_link": ("cannot_link",)}


#: Most actions the Explorer's Undo keeps (the annotations keep their own limit).
MAX_ACTIONS = 1000


class ActionLog:
    """Groups the undo steps of an :class:`~nbembed.Annotations` into user actions.

    Steps made directly on the annotations (outside :meth:`record`) count as
    one action each; undoing directly is noticed as well. An action may also
    change what the annotations do not hold (the Explorer's pinned points):
    it then comes with a function that reverts that part and one that makes
    it again. The log keeps the last :data:`MAX_ACTIONS` actions; an action
    whose steps the annotations' own history has forgotten undoes what is
    left of them. :meth:`redo` makes the undone actions again until the next
    change.

    Parameters
    ----------
    annotations : Annotations
    """

    def __init__(self, annotations):
        self.annotations = annotations
        self._actions = []  # (annotation steps, revert, reapply, description)
        self._undone = []   # the same, for redo; last undone last
        self._known = annotations.history_position

    def _reconcile(self):
        n = self.annotations.history_position
        known = self._known
        if n != known:  # changed directly: what was undone here cannot be redone
            self._undone = []
        while n < known and self._actions:  # undone directly
            known -= self._actions.pop()[0]
        if n > known:  # made directly, or an undo went into the middle of an action
            self._actions.extend([(1, None, None, None)] * (n - known))
        del self._actions[:-MAX_ACTIONS]
        self._known = n

    def __len__(self):
        self._reconcile()
        return len(self._actions)

    @property
    def can_redo(self):
        """int: How many undone actions :meth:`redo` can make again."""
        self._reconcile()
        return len(self._undone)

    def record(self, action, revert=None, description=None, reapply=None):
        """Run ``action()`` (which mutates the annotations) as one undoable action.

        If it raises, every step it made is undone and the exception propagates.
        An action that changes nothing (it adds what the annotations hold
        already) and has no ``revert`` is not kept.

        Parameters
        ----------
        action : callable
        revert : callable, optional
            Undoes what ``action`` changed outside the annotations; called by
            :meth:`undo` before the annotation steps are undone.
        description : str, optional
            What :meth:`undo` returns when the action made no annotation step.
        reapply : callable, optional
            Makes that change outside the annotations again; called by
            :meth:`redo` after the annotation steps are made again.

        Returns
        -------
        bool
            Whether an action was kept (something changed, or ``revert`` was given).
        """
        self._reconcile()
        ann = self.annotations
        before = ann.history_position
        try:
            action()
        except BaseException:
            while ann.history_position > before and ann.undo() is not None:
                pass
            self._known = ann.history_position
            raise
        made = ann.history_position - before
        kept = bool(made or revert is not None)
        if kept:
            self._actions.append((made, revert, reapply, description))
            del self._actions[:-MAX_ACTIONS]
            self._undone = []
        self._known = ann.history_position
        return kept

    def undo(self):
        """Undo the last action; return the description of its last step, or None."""
        self._reconcile()
        if not self._actions:
            return None
        entry = self._actions.pop()
        made, revert, _, description = entry
        if revert is not None:
            revert()
        descriptions = [self.annotations.undo() for _ in range(made)]
        descriptions = [d for d in descriptions if d is not None]
        self._undone.append((len(descriptions), *entry[1:]))
        self._known = self.annotations.history_position
        return descriptions[0] if descriptions else description

    def redo(self):
        """Make the last undone action again; return its description, or None."""
        self._reconcile()
        if not self._undone:
            return None
        entry = self._undone.pop()
        made, _, reapply, description = entry
        descriptions = [self.annotations.redo() for _ in range(made)]
        if reapply is not None:
            reapply()
        self._actions.append(entry)
        self._known = self.annotations.history_position
        return descriptions[-1] if descriptions else description


def class_index(annotations, label):
    """The index of class ``label`` given as an index or a name."""
    if isinstance(label, str):
        if label not in annotations.class_names:
            raise ValueError(f"there is no class named {label!r}; classes: "
                             f"{annotations.class_names}. Pass new_class={label!r} to create it.")
        return annotations.class_names.index(label)
    return label


def soft_label_action(annotations, indices, label=None, confidence=1.0, new_class=None,
                      max_classes=None):
    """The ``"soft_label"`` action, checked before anything changes.

    Parameters
    ----------
    annotations : Annotations
    indices : array-like of int or bool mask
        The points to label.
    label : int or str, optional
        An existing class, by index or name.
    confidence : float, default 1.0
    new_class : str, optional
        The name of a class to create and label the points with; give either
        this or ``label``.
    max_classes : int, optional
        Most classes the method can use (Mbed's ``n_classes``); a new class
        beyond it is refused.

    Returns
    -------
    callable
        Makes the change when called with no arguments (for
        :meth:`ActionLog.record`).

    Raises
    ------
    ValueError
        If both or neither of ``label`` and ``new_class`` are given, the
        class does not exist, or a new class would exceed ``max_classes``.
    """
    if (label is None) == (new_class is None):
        raise ValueError("give either label= (an existing class, by index or name) or "
                         "new_class= (the name of a new class).")
    if new_class is not None:
        if max_classes is not None and new_class not in annotations.class_names \
                and annotations.n_classes >= max_classes:
            raise ValueError(f"the method was set up for {max_classes} classes, and "
                             f"{new_class!r} would be class {annotations.n_classes + 1}: label "
                             f"the points with an existing class, or start again with room "
                             f"for more classes (for Mbed, n_classes={max_classes + 1}).")

        def action():
            annotations.set_labels(indices, annotations.add_class(new_class), confidence)
        return action
    k = class_index(annotations, label)
    if isinstance(k, (int, np.integer)) and not isinstance(k, bool) and \
            not 0 <= k < annotations.n_classes:
        raise ValueError(f"there is no class {k} (classes 0..{annotations.n_classes - 1}); pass "
                         f"new_class='name' to create one.")

    def action():
        annotations.set_labels(indices, k, confidence)
    return action


#: How :func:`describe` names each of ``Annotations.counts()`` (one, many).
_COUNT_NAMES = dict(labelled=("labelled", "labelled"),
                    must_link_groups=("must-link group", "must-link groups"),
                    must_link_pairs=("must-link pair", "must-link pairs"),
                    cannot_link_groups=("cannot-link group pair", "cannot-link group pairs"),
                    cannot_link_pairs=("cannot-link pair", "cannot-link pairs"))


def describe(annotations):
    """What the annotations hold, in a few words ("470 labelled · 1 must-link group")."""
    parts = [f"{k} {_COUNT_NAMES[name][k != 1]}"
             for name, k in annotations.counts().items() if k]
    return " · ".join(parts) if parts else "no annotations"


def unused_notice(mode, kinds, run_name, confidence=1.0):
    """A sentence telling the user the run ignores this kind of annotation, or ""."""
    used = [kind for kind in KINDS_USED[mode] if kind in kinds]
    what = {"soft_label": "labels", "must_link": "must-links",
            "cannot_link": "cannot-links"}[mode]
    if not used:
        return (f"{run_name} does not use {what}: the annotation is recorded in "
                f"ex.annotations but does not change this embedding.")
    if mode == "soft_label" and confidence < 1 and "soft_labels" not in kinds:
        return (f"{run_name} uses labels as hard labels: the confidence is recorded but "
                f"not used.")
    return ""


def selection_indices(indices, n_samples, name="selection"):
    """Sorted distinct point indices from integers or a boolean mask.

    Raises
    ------
    TypeError
        For non-integer indices.
    ValueError
        For indices out of ``[0, n_samples)``, a mask of the wrong length, or
        more than one dimension.
    """
    arr = np.asarray(sorted(indices) if isinstance(indices, (set, frozenset)) else indices)
    if arr.dtype.kind == "b":
        if arr.shape != (n_samples,):
            raise ValueError(f"{name} is a boolean mask of shape {arr.shape}; it needs shape "
                             f"({n_samples},).")
        return np.flatnonzero(arr)
    if arr.size == 0:
        return np.empty(0, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer indices or be a boolean mask; got dtype "
                        f"{arr.dtype}.")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D; got shape {arr.shape}.")
    if arr.min() < 0 or arr.max() >= n_samples:
        bad = arr[(arr < 0) | (arr >= n_samples)][0]
        raise ValueError(f"{name} has index {int(bad)}, outside [0, {n_samples}).")
    return np.unique(arr.astype(np.int64))
