"""The :class:`Annotations` class: its classes and labels, copies and conversions.

The constraint methods are mixed in from :mod:`~nbembed.annotations.constraints`
and the undo history from :mod:`~nbembed.annotations.history`; reading and
writing JSON is in :mod:`~nbembed.annotations.json_format`.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_allocation, check_labels, check_number
from . import json_format
from .constraints import CONSTRAINT_LISTS, _Constraints
from .history import _UndoHistory
from .pairs import sorted_unique
from .validation import (check_class_names, check_confidence, check_indices, check_label,
                         check_probabilities, check_selection)

__all__ = ["Annotations"]


class Annotations(_Constraints, _UndoHistory):
    """Labels and must-link / cannot-link constraints on ``n_samples`` points.

    Parameters
    ----------
    n_samples : int
        Number of points, at least 1.
    n_classes : int or None, default None
        Number of classes. When given, it is fixed: assigning a label
        ``>= n_classes`` raises, and only :meth:`add_class` adds classes. When
        None, it starts at ``len(class_names)`` (or 0) and grows as labels for
        new classes are assigned.
    class_names : list of str or None, default None
        Distinct class names; their number must equal ``n_classes`` if both are
        given. Classes without a given name are called ``"class <k>"``.

    Raises
    ------
    TypeError
        If ``n_samples`` or ``n_classes`` is not an integer, or a class name is
        not a string.
    ValueError
        If ``n_samples < 1``, ``n_classes < 1``, class names repeat, or their
        number differs from ``n_classes``.
    MemoryError
        If the label probabilities (``n_samples`` x classes) would take more
        than ``NBEMBED_MAX_DENSE_BYTES`` (4 GiB by default); so do methods that
        add classes beyond it.

    Notes
    -----
    ``len(annotations)`` is the number of steps in the undo history, that is
    how many times :meth:`undo` can be called; :meth:`redo` makes an undone
    step again until the next change. The truth value of an
    ``Annotations`` object is ``not is_empty`` (it does not follow ``len``).

    In the summary printed by ``repr``, ``must_link_pairs`` and
    ``cannot_link_pairs`` count the explicitly added pairs; the pairs implied
    by groups are counted by the groups.

    Examples
    --------
    >>> ann = Annotations(150)
    >>> ann.set_labels(range(10), 0)
    >>> ann.add_must_link([10, 11, 12])
    >>> ann.undo()
    'add_must_link: group of 3 points'
    >>> ann.to_labels()[:3]
    array([0, 0, 0])
    """

    def __init__(self, n_samples, n_classes=None, class_names=None):
        n_samples = check_number(n_samples, "n_samples", low=1, integer=True)
        if n_classes is not None:
            n_classes = check_number(n_classes, "n_classes", low=1, integer=True)
        names = [] if class_names is None else check_class_names(class_names)
        if n_classes is not None and class_names is not None and len(names) != n_classes:
            raise ValueError(f"class_names has {len(names)} name(s) but n_classes = "
                             f"{n_classes}; give one name per class.")
        self._n = n_samples
        self._check_size(max(n_classes or 0, len(names)))
        self._fixed = n_classes is not None
        self._class_names = []
        self._soft = np.zeros((n_samples, 0))
        self._conf = np.zeros(n_samples)
        self._grow(n_classes if n_classes is not None else len(names), names)
        self._must_link_groups = []
        self._must_link_pairs = []
        self._cannot_link_groups = []
        self._cannot_link_pairs = []
        self._forget_history()

    # --------------------------------------------------------------- mutation

    def _default_name(self, k, taken):
        name = f"class {k}"
        while name in taken:
            name += "'"
        return name

    def _check_size(self, n_classes):
        """Refuse label probabilities for ``n_classes`` classes that would not fit in memory."""
        check_allocation(8 * self._n * (n_classes + 1),
                         what=f"Annotations of {self._n} points and {n_classes} classes",
                         alternative="Use fewer points or classes")

    def _grow(self, n_classes, names=()):
        """Extend the classes to ``n_classes``, naming new ones from ``names`` or by default."""
        self._check_size(n_classes)
        new = list(self._class_names)
        for k in range(len(new), n_classes):
            given = k < len(names)
            new.append(names[k] if given else self._default_name(k, set(new) | set(names)))
        extra = len(new) - self._soft.shape[1]
        if extra > 0:
            self._soft = np.hstack([self._soft, np.zeros((self._n, extra))])
        self._class_names = new

    def set_labels(self, indices, label, confidence=1.0):
        """Give the selected points a hard label.

        Parameters
        ----------
        indices : array-like of int, range, set or boolean mask
            The selected points.
        label : int
            Class index, ``>= 0``. With ``n_classes`` not fixed, a label beyond
            the current classes creates the missing classes.
        confidence : float, default 1.0
            Confidence in the label, in (0, 1].

        Raises
        ------
        TypeError
            If the indices, label or confidence are not of a numeric integer /
            real type.
        ValueError
            If the selection is empty or out of range, the label is negative or
            ``>= n_classes`` with ``n_classes`` fixed, or the confidence is not
            in (0, 1].
        """
        rows = check_selection(indices, self._n)
        label = check_label(label, self.n_classes, self._fixed)
        confidence = check_confidence(confidence)
        self._check_size(label + 1)
        probs = np.zeros((len(rows), max(self.n_classes, label + 1)))
        probs[:, label] = 1.0
        self._assign(f"set_labels: class {label} on {len(rows)} point(s)", rows, probs,
                     confidence)

    def set_soft_labels(self, indices, probabilities, confidence=1.0):
        """Give the selected points a probability vector over the classes.

        Parameters
        ----------
        indices : array-like of int, range, set or boolean mask
            The selected points.
        probabilities : array-like of float, shape (n_classes,) or (n_selected, n_classes)
            One vector for all selected points, or one row per point in the
            order of ``indices`` (then ``indices`` must not repeat a point).
            Entries are ``>= 0`` and each row sums to 1 within 1e-6; rows whose
            sum is not exactly 1 are divided by their sum. With ``n_classes``
            not fixed, longer vectors create the missing classes.
        confidence : float, default 1.0
            Confidence in the labels, in (0, 1].

        Raises
        ------
        TypeError
            If the indices or probabilities are not numeric, or the confidence
            is not a real number.
        ValueError
            If the selection is empty or out of range, the probabilities have
            the wrong shape, negative or non-finite entries, or rows not
            summing to 1, or the confidence is not in (0, 1].
        """
        raw = check_indices(indices, self._n, "indices")
        per_row = np.ndim(probabilities) == 2
        if per_row:
            order = np.argsort(raw, kind="stable")
            rows = raw[order]
            if np.any(rows[1:] == rows[:-1]):
                raise ValueError("indices repeat a point while probabilities give one row per "
                                 "point; remove the duplicates.")
            probs = check_probabilities(probabilities, len(raw), self.n_classes, self._fixed,
                                        renormalize=True)[order]
        else:
            rows = sorted_unique(raw)
            probs = check_probabilities(probabilities, len(rows), self.n_classes, self._fixed,
                                        renormalize=True)
        confidence = check_confidence(confidence)
        self._check_size(probs.shape[1])
        self._assign(f"set_soft_labels: {len(rows)} point(s)", rows, probs, confidence)

    def remove_labels(self, indices):
        """Make the selected points unlabelled.

        Parameters
        ----------
        indices : array-like of int, range, set or boolean mask
            The selected points; already unlabelled ones are left as they are.

        Raises
        ------
        TypeError
            If the indices are not integers or a boolean mask.
        ValueError
            If the selection is empty or out of range.
        """
        rows = check_selection(indices, self._n)
        self._assign(f"remove_labels: {len(rows)} point(s)", rows,
                     np.zeros((len(rows), self.n_classes)), 0.0)

    def add_class(self, name=None):
        """Create a new class, also when ``n_classes`` was fixed.

        Parameters
        ----------
        name : str or None, default None
            Its name, distinct from the existing ones; None gives ``"class <k>"``.

        Returns
        -------
        int
            The index of the new class.

        Raises
        ------
        TypeError
            If ``name`` is not a string.
        ValueError
            If a class of that name exists.
        """
        k = self.n_classes
        if name is None:
            name = self._default_name(k, set(self._class_names))
        if not isinstance(name, str):
            raise TypeError(f"name must be a string; got {name!r} of type "
                            f"{type(name).__name__}.")
        if name in self._class_names:
            raise ValueError(f"a class named {name!r} exists already (class "
                             f"{self._class_names.index(name)}); choose another name.")
        step = self._step(f"add_class: {name!r} (class {k})")
        self._grow(k + 1, self._class_names + [name])
        self._record(step)
        return k

    def add_points(self, count):
        """Make room for ``count`` new points, unannotated, after the existing ones.

        The existing points keep their indices, labels and constraints, and
        the undo history stays valid; the new points are n_samples,
        n_samples + 1, ... This is not a step of the history (the points stay).

        Parameters
        ----------
        count : int
            At least 1.

        Raises
        ------
        ValueError
            For a count below 1 or annotations too large for the memory.
        """
        count = check_number(count, "count", low=1, integer=True)
        n = self._n + count
        check_allocation(8 * n * (self.n_classes + 1),
                         what=f"Annotations of {n} points and {self.n_classes} classes",
                         alternative="Add fewer points")
        self._soft = np.vstack([self._soft, np.zeros((count, self._soft.shape[1]))])
        self._conf = np.concatenate([self._conf, np.zeros(count)])
        self._n = n

    def clear(self):
        """Remove all labels and constraints; the classes are kept. Undoable (without
        labels or constraints there is nothing to clear, and no step)."""
        if self.is_empty:
            return
        saved = {name: list(getattr(self, name)) for name in CONSTRAINT_LISTS}
        step = self._step("clear", rows=np.flatnonzero(self._conf > 0), constraints=saved)
        self._soft[:] = 0.0
        self._conf[:] = 0.0
        for name in CONSTRAINT_LISTS:
            setattr(self, name, [])
        self._record(step)

    def merge(self, other):
        """Add the labels, classes and constraints of ``other`` to these annotations.

        Classes are matched by name; classes of ``other`` with a new name are
        added after the existing ones. Points labelled in ``other`` take its
        label (mapped to these classes) and confidence; other points keep
        theirs. Its constraints are added, except those these annotations
        hold already (as :meth:`add_must_link` and the other adding methods
        leave them out), so merging the same annotations again changes
        nothing. The whole merge is one step: one :meth:`undo` reverts it; a
        merge that changes nothing records no step.

        Parameters
        ----------
        other : Annotations
            On the same number of points (for example read with
            :meth:`from_json`).

        Returns
        -------
        dict
            ``labels``: points whose label changed; ``constraints``: constraints
            added; ``present``: constraints of ``other`` already held.

        Raises
        ------
        TypeError
            If ``other`` is not an ``Annotations``.
        ValueError
            If it has a different number of points; nothing changes.
        """
        if not isinstance(other, Annotations):
            raise TypeError(f"other must be an Annotations object; got "
                            f"{type(other).__name__}.")
        if other.n_samples != self._n:
            raise ValueError(f"the annotations are for {other.n_samples} points, these for "
                             f"{self._n}; annotations of the same data are needed.")
        names = self._class_names + [c for c in other.class_names
                                     if c not in self._class_names]
        columns = [names.index(c) for c in other.class_names]
        rows = np.flatnonzero(other._conf > 0)
        probs = np.zeros((len(rows), len(names)))
        probs[:, columns] = other._soft[rows]
        current = np.zeros_like(probs)
        current[:, :self.n_classes] = self._soft[rows]
        changed = np.any(current != probs, axis=1) | (self._conf[rows] != other._conf[rows])
        rows, probs = rows[changed], probs[changed]
        saved = {name: list(getattr(self, name)) for name in CONSTRAINT_LISTS}
        added = offered = 0
        for name in CONSTRAINT_LISTS:
            for item in getattr(other, name):
                offered += 1
                item = self._new_part(name, item)
                if item is not None:
                    getattr(self, name).append(item)
                    added += 1
        outcome = dict(labels=len(rows), constraints=added, present=offered - added)
        if not len(rows) and not added and len(names) == self.n_classes:
            return outcome
        step = self._step(f"merge: {len(rows)} label(s), {added} constraint(s)", rows=rows,
                          constraints=saved)
        self._grow(len(names), names)
        self._soft[rows] = probs
        self._conf[rows] = other._conf[rows]
        self._record(step)
        return outcome

    # ---------------------------------------------------------------- queries

    @property
    def n_samples(self):
        """int: Number of points."""
        return self._n

    @property
    def n_classes(self):
        """int: Current number of classes (0 before any class exists)."""
        return len(self._class_names)

    @property
    def class_names(self):
        """list of str: Names of the classes, one per class."""
        return list(self._class_names)

    @property
    def is_empty(self):
        """bool: True when there are no labels and no constraints (classes may exist)."""
        return not np.any(self._conf > 0) and not any(getattr(self, name)
                                                      for name in CONSTRAINT_LISTS)

    def __len__(self):
        return len(self._history)

    def __bool__(self):
        return not self.is_empty

    def __repr__(self):
        counts = ", ".join(f"{name}={k}" for name, k in self.counts().items())
        return f"Annotations(n_samples={self._n}, n_classes={self.n_classes}, {counts})"

    def counts(self):
        """How much the annotations hold.

        Returns
        -------
        dict
            ``labelled`` points, ``must_link_groups``, ``must_link_pairs``,
            ``cannot_link_groups`` (pairs of groups) and ``cannot_link_pairs``.
        """
        return dict(labelled=int(np.count_nonzero(self._conf)),
                    must_link_groups=len(self._must_link_groups),
                    must_link_pairs=sum(map(len, self._must_link_pairs)),
                    cannot_link_groups=len(self._cannot_link_groups),
                    cannot_link_pairs=sum(map(len, self._cannot_link_pairs)))

    def labelled_mask(self):
        """Which points are labelled.

        Returns
        -------
        ndarray of bool, shape (n_samples,)
        """
        return self._conf > 0

    def to_labels(self):
        """Hard labels in scikit-learn style.

        Returns
        -------
        ndarray of int64, shape (n_samples,)
            The most probable class of each labelled point (the lowest index on
            ties), -1 for unlabelled points.
        """
        y = np.full(self._n, -1, dtype=np.int64)
        mask = self.labelled_mask()
        if self.n_classes:
            y[mask] = np.argmax(self._soft[mask], axis=1)
        return y

    def soft_label_matrix(self):
        """Probability vectors of all points.

        Returns
        -------
        ndarray of float64, shape (n_samples, n_classes)
            Rows sum to 1 for labelled points and are zero for unlabelled ones.
        """
        return self._soft.copy()

    def confidences(self):
        """Confidence of each point's label.

        Returns
        -------
        ndarray of float64, shape (n_samples,)
            In (0, 1] for labelled points, 0 for unlabelled ones.
        """
        return self._conf.copy()

    def copy(self):
        """An independent copy, including the undo history.

        Returns
        -------
        Annotations
        """
        new = object.__new__(Annotations)
        new.__dict__.update(self.__dict__)
        new.__dict__.pop("_membership", None)  # each object extends its own index
        new._class_names = list(self._class_names)
        new._soft = self._soft.copy()
        new._conf = self._conf.copy()
        for name in CONSTRAINT_LISTS:
            setattr(new, name, list(getattr(self, name)))
        new._history = list(self._history)
        new._undone = list(self._undone)
        return new

    # ---------------------------------------------------------- conversions

    @classmethod
    def from_labels(cls, y, n_classes=None, confidence=1.0, class_names=None):
        """Annotations with hard labels from a scikit-learn style ``y``.

        Parameters
        ----------
        y : array-like of int, shape (n_samples,)
            Class index of each point, -1 for unlabelled points.
        n_classes : int or None, default None
            Fix the number of classes (see :class:`Annotations`); None makes it
            ``max(y) + 1`` and lets it grow.
        confidence : float, default 1.0
            Confidence of every label, in (0, 1].
        class_names : list of str or None, default None
            Names of the classes.

        Returns
        -------
        Annotations
            With an empty undo history.

        Raises
        ------
        TypeError
            If ``n_classes`` or ``confidence`` has the wrong type.
        ValueError
            If ``y`` is not 1-D and non-empty, holds non-integer values or
            labels below -1, has labels ``>= n_classes``, or ``confidence`` is
            not in (0, 1].
        """
        y = np.asarray(y)
        if y.ndim != 1 or y.size == 0:
            raise ValueError(f"y must be a non-empty 1-D array of labels; got shape {y.shape}.")
        y = check_labels(y, len(y))
        confidence = check_number(confidence, "confidence", low=0, high=1, low_open=True)
        ann = cls(len(y), n_classes, class_names)
        top = int(y.max())
        if ann._fixed and top >= ann.n_classes:
            raise ValueError(f"y has label {top}, out of range for n_classes = "
                             f"{ann.n_classes} (classes 0..{ann.n_classes - 1}).")
        ann._grow(top + 1)
        rows = np.flatnonzero(y >= 0)
        ann._soft[rows, y[rows]] = 1.0
        ann._conf[rows] = confidence
        return ann

    def to_json(self):
        """Serialize the annotations (not the undo history) to a JSON string.

        Returns
        -------
        str
            Reloaded exactly by :meth:`from_json`.
        """
        return json_format.to_json(self)

    @classmethod
    def from_json(cls, s):
        """Load annotations written by :meth:`to_json`.

        Parameters
        ----------
        s : str
            The JSON text.

        Returns
        -------
        Annotations
            With an empty undo history.

        Raises
        ------
        ValueError
            If ``s`` is not valid JSON, is of another format or version, has
            missing or unknown keys, or holds invalid annotations (indices out
            of range, probabilities not summing to 1, confidences outside
            (0, 1], ...).
        """
        return json_format.from_json(cls, s)
