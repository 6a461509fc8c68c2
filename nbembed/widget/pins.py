"""Pinned and moved points in the Explorer: the Python side of the "move" mode.

In move mode the browser lets the user drag a point, or the selection, and on
the drop sends one message with the points and where they were dropped, in
the normalized coordinates of the frame it drew (``frame_id``). The Explorer
turns them into embedding coordinates with that frame's
:class:`~nbembed.widget.view.DisplayMap` and pins the points there; the run
goes on around them. Every change is checked before anything is queued, then
applied by the worker thread between two steps
(:meth:`~nbembed.widget.worker.RunWorker.submit`), so it never interleaves with
an iteration. Each change is one action of the
Explorer's Undo.

``_pinned`` (uint32, sorted) tells the browser which points to draw as pinned.
"""

from __future__ import annotations

import numpy as np
import traitlets

from ..optim.pinning import check_indices, check_positions
from .traits import UINT32, binary_trait, decode, encode


class PinControls(traitlets.HasTraits):
    """Pins and drops of :class:`~nbembed.widget.Explorer` (a mixin).

    It uses the Explorer's worker, action log, locks, point count and the
    display maps its frames keep.
    """

    _pinned = binary_trait()
    frame_id = traitlets.Int(0).tag(sync=True)  # the frame the positions belong to

    @property
    def pinned(self):
        """Indices of the pinned points, sorted (int64)."""
        return decode(self._pinned, UINT32).astype(np.int64)

    def pin(self, indices, positions=None):
        """Hold points still, at ``positions`` or where they are, while the rest moves.

        The run applies it between two steps and keeps the pins through
        slider changes, annotations and restarts. One ``undo()`` reverts it.

        Parameters
        ----------
        indices : int or array-like of int
            Points to pin, none repeated.
        positions : array-like (len(indices), n_components), optional
            Where to pin them, in embedding coordinates.

        Raises
        ------
        ValueError, TypeError
            For a method that cannot pin points (precomputed, spectral),
            indices out of range or repeated, or positions of the wrong shape
            or not finite; nothing changes.
        """
        self._pin(indices, positions)

    def _pin(self, indices, positions=None, annotate=None, what="pin"):
        """:meth:`pin`, with ``annotate()`` changing the annotations in the same action."""
        self._check_pinnable()
        idx = check_indices(indices, self._n)
        if positions is not None:
            positions = self._check_positions(positions, len(idx))

        def op(run):
            run.pin(idx, positions)
        self._change_pins(f"{what} {len(idx)} point(s)", idx, op, np.union1d(self.pinned, idx),
                          annotate=annotate)

    def unpin(self, indices=None):
        """Let pinned points move again: ``indices``, or all of them by default.

        Indices that are not pinned are ignored; with none pinned nothing
        happens (no action to undo). One ``undo()`` reverts it.
        """
        self._check_pinnable()
        idx = self.pinned if indices is None else check_indices(indices, self._n)
        idx = idx[np.isin(idx, self.pinned)]
        if not len(idx):
            self._warn("Nothing to unpin: none of these points is pinned.")
            return

        def op(run):
            run.unpin(idx)
        self._change_pins(f"unpin {len(idx)} point(s)", idx, op, np.setdiff1d(self.pinned, idx))

    def toggle_pins(self, indices=None):
        """Unpin the points (default: the selection) if all are pinned, else pin them all."""
        idx = self.selection if indices is None else check_indices(indices, self._n)
        if not len(idx):
            raise ValueError("no points are selected; select the points to pin first.")
        if np.isin(idx, self.pinned).all():
            self.unpin(idx)
        else:
            self.pin(np.setdiff1d(idx, self.pinned))

    def unpin_all(self):
        """Let every pinned point move again."""
        self.unpin()

    def drop(self, indices, positions, frame):
        """Pin points where the user dropped them on frame ``frame``.

        Parameters
        ----------
        indices : array-like of int
        positions : array-like (len(indices), 2)
            In the normalized coordinates of that frame, as the browser shows them.
        frame : int
            The ``frame_id`` of the positions the browser drew.

        Raises
        ------
        ValueError, TypeError
            As :meth:`pin`, and for a frame no longer known; nothing changes.
        """
        self._check_pinnable()
        idx = check_indices(indices, self._n)
        shown = check_positions(positions, len(idx), 2, name="the dropped positions")
        display = self._display_maps.get(frame)
        if display is None:
            raise ValueError(f"the points were dropped on frame {frame}, which is no longer "
                             f"known (the latest is {self.frame_id}); drag them again.")

        def op(run):
            run.pin(idx, display.place(run.embedding[idx], shown))
        self._change_pins(f"move {len(idx)} point(s)", idx, op, np.union1d(self.pinned, idx))

    # ------------------------------------------------------------------ internals
    def _check_pinnable(self):
        run = self._adopted
        able = callable(getattr(run, "pin", None)) if run is not None \
            else getattr(self._method, "pinnable", False)
        if not able:
            name = self.method_name or type(self._method).__name__
            raise ValueError(f"{name} cannot pin or move points: only gradient-based methods "
                             f"(HSSNE, SNE, NeRV, SNeRV, Mbed, Parametric Embedding) can.")

    def _dimensions(self):
        """Dimensions of the embedding, or None before the run says (Mbed's default)."""
        run = self._adopted
        if run is not None:
            return int(run.embedding.shape[1])
        d = getattr(self._method, "n_components", None)
        return None if d is None else int(d)

    def _check_positions(self, positions, count, name="positions"):
        """Positions checked against the embedding's dimensions once they are known
        (before, the run checks them when it pins)."""
        d = self._dimensions()
        if d is None:
            return np.asarray(positions, dtype=np.float64)
        return check_positions(positions, count, d, name=name)

    def _change_pins(self, description, idx, op, expected, annotate=None):
        """Queue ``op(run)`` as one undoable action that changes points ``idx``;
        ``annotate()``, if given, changes the annotations in the same action."""
        before = {}

        def apply(run):
            positions, pinned = run.embedding[idx], np.isin(idx, run.pinned)
            op(run)
            before.update(positions=positions, pinned=pinned)

        def restore(run):
            if not before:  # the change was refused
                return
            run.unpin(idx)
            run.move(idx, before["positions"])
            if before["pinned"].any():
                run.pin(idx[before["pinned"]])

        shown = self.pinned

        def revert():
            self._queue_pins(shown, restore)

        def reapply():
            self._queue_pins(expected, apply)

        with self._ann_lock:
            self._log.record(annotate or (lambda: None), revert=revert,
                             description=description, reapply=reapply)
        reapply()
        self._warn(f"{description[0].upper()}{description[1:]} ({len(self.pinned)} pinned).")

    def _queue_pins(self, expected, change):
        """Show ``expected`` as pinned now and queue ``change(run)``; once the worker has
        made it, show what the run holds, unless a later change is queued by then (its
        points are already shown: showing the run's would undo that on screen)."""
        version = self.__dict__["_pin_changes"] = self.__dict__.get("_pin_changes", 0) + 1
        self._show_pins(expected)

        def make(run):
            try:
                change(run)
            finally:
                if version == self._pin_changes:
                    self._show_pins(run.pinned)
        self._worker.submit(make)

    def _show_pins(self, indices):
        with self._sync_lock:
            self._pinned = encode(np.asarray(indices, dtype=np.int64), UINT32)

    def _pins_for_export(self):
        """``{"indices": [...], "positions": [[...], ...]}`` of the pinned points, or None."""
        idx, Y = self.pinned, self._embedding
        if not len(idx) or Y is None:
            return None
        return {"indices": idx.tolist(), "positions": Y[idx].tolist()}

    def _check_pins(self, pins):
        """Refuse the ``pinned`` entry of an imported file unless :meth:`pin` takes it."""
        if not isinstance(pins, dict) or set(pins) != {"indices", "positions"}:
            raise ValueError("pinned must be an object with keys 'indices' and 'positions'.")
        self._check_pinnable()
        idx = check_indices(pins["indices"], self._n, name="pinned.indices")
        self._check_positions(pins["positions"], len(idx), name="pinned.positions")
