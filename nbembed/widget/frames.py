"""Frames: what the Explorer shows of its run, and when.

The worker reports every step (``on_step``) and every change of status
(``on_status``); :class:`FrameStream` turns a report into a :class:`Snapshot`
and sends it to the browser as one frame, projected into the chosen
:mod:`~nbembed.widget.view` and coloured by the chosen array
(:mod:`~nbembed.widget.palette`). Frames go out at most ``frame_rate`` times
a second; a frame forced by a change always goes out. While a page paces
them (:mod:`~nbembed.widget.pacing`), frames go as fast as it draws them, up to
``frame_rate``; otherwise also at most :data:`MAX_STREAM_BYTES_PER_SECOND`.

A frame sets these traits in one message (a binary trait only when its bytes
changed): ``frame_id``; ``_positions``, the points in the plot's normalized
coordinates (within [-EXTENT, EXTENT] of :mod:`~nbembed.widget.view`) as
their bounds and one uint16 code per coordinate, 4 bytes a point
(:func:`~nbembed.widget.traits.encode_positions` gives the layout);
``_anchors``, float32 x, y pairs in the same coordinates (empty without
anchors); ``_codes``, one uint16 colour code per point then per anchor;
``palette``, ``legend``, ``legend_continuous``, ``view_note``, ``iteration``
and ``cost``. A snapshot with NaN or infinity is never sent (it counts in
``skipped_frames``).

Threads: the Explorer's worker thread reports steps and statuses; the kernel's
main thread runs the browser's messages and the user's calls (``view``,
``color_by``, :meth:`FrameStream.color_by_values`). Both publish frames. The
snapshot, the view, the colourings and the traits belong to ``_sync_lock``;
a frame is read under it, encoded outside it, its traits set under it again,
and sent after it is released, in the order the frames were numbered (see
:meth:`FrameStream._publish`); ``_frame_turn`` orders the sending and guards
``frames_sent``. Frames wait for a slow page to catch up
(:mod:`~nbembed.widget.pacing`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import traitlets
from ipywidgets.widgets.widget import _remove_buffers

from . import arguments, palette
from .traits import FLOAT32, UINT16, encode, encode_positions, positions_nbytes
from .view import VIEWS, DisplayMap, PlaneView, normalize, normalization
from .worker import STEP_SECONDS

#: Upper limit on the bytes per second of frames that no page paces (none
#: reports what it draws, or a cell runs and its reports cannot be read): with
#: many points, such frames are sent less often than ``frame_rate``. A page that
#: paces the frames bounds them itself, and with 10^6 points (4 MB a frame) this
#: limit would hold back every other iteration.
MAX_STREAM_BYTES_PER_SECOND = 8e6

#: Most frames of credit the stream may save up (see ``FrameStream._frame_allowed``):
#: after a pause, at most this many frames go out back to back.
FRAME_CREDIT = 2.0

#: Share of the time between two frames that one step call aims at; the rest is
#: for sending the frame. At the default 25 frames/s the worker's own
#: ``STEP_SECONDS`` is shorter and is kept.
STEP_SHARE_OF_FRAME = 0.8

#: Colourings from a run's class memberships: the most probable class, and its
#: probability (how sure the method is of it).
MEMBERSHIP_COLORINGS = ("predicted", "confidence")

#: The traits a frame sets, sent together outside ``_sync_lock``.
FRAME_TRAITS = frozenset({"frame_id", "_positions", "_anchors", "_codes", "palette", "legend",
                          "legend_continuous", "view_note", "iteration", "cost",
                          "frame_scale"})

#: Frames whose display map is kept, so that a point dropped on a frame the
#: browser drew a moment ago lands where it was dropped.
KEPT_DISPLAY_MAPS = 64


@dataclass
class Snapshot:
    """What was last shown: the run's state at one moment."""

    embedding: np.ndarray
    anchors: np.ndarray | None
    membership: np.ndarray | None
    iteration: int
    cost: float | None


def last_cost(history):
    """The last finite ``"cost"`` in a run's history, or None."""
    for record in reversed(history or []):
        cost = record.get("cost")
        if cost is not None and math.isfinite(cost):
            return float(cost)
    return None


def _valid_membership(membership, n):
    """``membership`` as an (n, K) float array, or None when it is not one."""
    if membership is None:
        return None
    M = np.asarray(membership, dtype=np.float64)
    return M if M.ndim == 2 and M.shape[0] == n and M.shape[1] > 0 else None


class FrameStream(traitlets.HasTraits):
    """The frame-sending part of :class:`~nbembed.widget.Explorer`.

    A mixin: it uses the Explorer's traits, locks, worker, annotations and
    the state its constructor sets up (the plane view, the labels, the user
    colouring). It handles the worker's reports and the display settings
    the browser may change (``view``, ``color_by``, ``frame_rate``).
    """

    #: Of the frame shown: page coordinates per unit of the embedding (the
    #: placed layer's offsets are in the embedding's units).
    frame_scale = traitlets.Float(1.0).tag(sync=True)

    def _on_status(self, status, error):
        with self._sync_lock, self.hold_sync():
            self.status = status
            self.error = error

    def _on_step(self, run, force):
        Y = run.embedding
        if not np.all(np.isfinite(Y)):
            self.skipped_frames += 1
            return
        self._embedding = Y
        if run is not self._adopted:
            self._adopt(run, Y)
        elif run.live_parameters is not self._live_source:
            self._show_controls(run)
        if self.annotations.revision != self._ann_seen:
            self.update_annotations()
        if not self._frame_allowed(force):
            return
        if force and not self._worker.has_pending_params:
            self._set_params_from_run(run.get_params())
        self._show_params_in_effect(run)
        anchors = run.anchors
        membership = run.membership
        if membership is not None and not self._has_membership:
            self._show_color_options(True)  # Mbed's memberships exist once λ does
        if anchors is not None and not np.all(np.isfinite(anchors)):
            anchors = None
        self._snapshot = Snapshot(Y, anchors, membership, int(run.iteration),
                                 last_cost(run.history))
        self._publish()

    def _show_preview(self, Y):
        """Show ``Y`` as iteration 0 before the first run exists (see
        :mod:`~nbembed.widget.preview`); nothing once a frame of a run was taken."""
        if not np.all(np.isfinite(Y)):
            return
        with self._sync_lock:
            if self._snapshot is not None:
                return
            self._snapshot = Snapshot(Y, None, None, 0, None)
        self._publish()

    def _frame_allowed(self, force):
        """Whether a frame may go out now, by a credit of frames that grows at the
        allowed rate (``_publish_interval``) up to ``FRAME_CREDIT``: sent after
        whichever step call brings the credit to one, frames keep that rate on
        average instead of losing up to a call's time each.

        A forced frame (after a change, or on going idle) always goes and leaves a
        whole frame of credit, so the next one, the first iteration under the
        change, goes at once too. Forced frames come at most once per step call,
        so the stream stays bounded. Other frames also wait for a page that
        reports what it draws to catch up (:class:`~nbembed.widget.pacing.PagePacer`).
        """
        now = time.monotonic()
        earned = (now - self._credit_time) / self._publish_interval()
        self._credit = min(FRAME_CREDIT, self._credit + earned)
        self._credit_time = now
        if force:
            self._credit = max(self._credit, 1.0)
            return True
        if self._credit < 1.0 or not self._pacer.allows(self._frames_numbered):
            return False
        self._credit -= 1.0
        return True

    def _page_drew(self, frame):
        """A page reports that it has drawn frame number ``frame`` (see
        :mod:`~nbembed.widget.pacing`)."""
        self._pacer.report(frame)

    def _publish_interval(self):
        """Seconds between frames: ``frame_rate``'s or, unless a page paces the
        frames, longer where frames the size of the last one (before any, all
        positions and colours) would exceed ``MAX_STREAM_BYTES_PER_SECOND``."""
        if self._pacer.pacing:
            return 1.0 / self.frame_rate
        payload = self._frame_bytes
        if payload is None:
            payload = positions_nbytes(self._n) + self._n * UINT16.itemsize
        return max(1.0 / self.frame_rate, payload / MAX_STREAM_BYTES_PER_SECOND)

    def _publish(self):
        """Send the last snapshot in the current view and colouring.

        What to draw (the snapshot in the view, its colours) is read under
        ``_sync_lock``; the encoding, which with many points takes most of the
        time, runs outside it; the traits are set under it again and their new
        values sent once it is released (:meth:`_send_frame`), so that a message
        from the browser waits at most for the traits to be set. Of frames
        encoded at the same time only the one begun last goes out: an older one,
        overtaken while it was encoded, is dropped, as is one whose snapshot was
        replaced or cleared meanwhile.
        """
        with self._sync_lock:
            snap = self._snapshot
            if snap is None:
                return
            points, anchors = self._plane(snap.embedding, self._labels, snap.anchors)
            plane, note = self._plane.plane, self._plane.note
            coloring = self._coloring(snap)
            self._frames_begun += 1
            ticket = self._frames_begun
        encoded = _encode_frame(points, anchors, coloring)
        frame, state = None, {}
        try:
            with self._sync_lock:
                if ticket != self._frames_begun or self._snapshot is not snap:
                    return
                if encoded is None:  # finite embeddings near the float64 limit can overflow
                    self.skipped_frames += 1
                    return
                center, scale, positions, anchors, codes = encoded
                # Once numbered, the frame is sent whatever happens (see _send_frame).
                frame = self._frames_numbered = self._frames_numbered + 1
                self._display_maps[frame] = DisplayMap(plane, center, scale)
                self._display_maps.pop(frame - KEPT_DISPLAY_MAPS, None)
                # A trait goes to the browser only when its value changed: the
                # colours, and often the anchors, stay as they were.
                self._frame_bytes = sum(len(new) for new, old in (
                    (positions, self._positions), (anchors, self._anchors),
                    (codes, self._codes)) if new != old)
                with self.hold_sync():
                    self.frame_id = frame
                    self.frame_scale = scale
                    self._positions = positions
                    self._anchors = anchors
                    self._codes = codes
                    self.palette = coloring.palette
                    self.legend = coloring.legend
                    self.legend_continuous = coloring.continuous
                    self.view_note = note
                    self.iteration = snap.iteration
                    self.cost = snap.cost
                    # Taken out of what hold_sync sends on leaving: sent below.
                    changed = self._states_to_send & FRAME_TRAITS
                    self._states_to_send -= changed
                state = self.get_state(key=sorted(changed))
        finally:
            if frame is not None:
                self._send_frame(frame, state)

    def _send_frame(self, frame, state):
        """Send frame number ``frame``'s changed traits (``state``, from
        ``get_state``) after every earlier frame's, then count it sent.

        Runs outside ``_sync_lock`` (re-entered only when a caller already holds
        it). Frames are numbered under ``_sync_lock`` and every numbered frame
        comes here, so each waits only for the ones before it, and the browser
        sees them in order.
        """
        with self._frame_turn:
            self._frame_turn.wait_for(lambda: self.frames_sent == frame - 1)
            try:
                if state:
                    state, buffer_paths, buffers = _remove_buffers(state)
                    self._send({"method": "update", "state": state,
                                "buffer_paths": buffer_paths}, buffers=buffers)
            finally:
                self.frames_sent = frame
                self._frame_turn.notify_all()

    def _show_color_options(self, membership):
        """Offer the colourings there is data for; ``membership``: whether the run
        has class memberships now (once it had, they stay offered)."""
        self._has_membership = self._has_membership or membership
        options = ["label"] + (list(MEMBERSHIP_COLORINGS) if self._has_membership else []) \
            + list(self._user_colorings)
        with self._sync_lock, self.hold_sync():
            self.color_options = options
            if self.color_by not in options:
                self.color_by = "label"

    def _coloring(self, snap):
        n_anchors = 0 if snap.anchors is None else len(snap.anchors)
        if self.color_by in self._user_colorings:
            return palette.with_anchors(self._user_colorings[self.color_by], n_anchors, 0)
        labels = self._labels
        M = _valid_membership(snap.membership, self._n)
        if M is not None and self.color_by in MEMBERSHIP_COLORINGS:
            ok = np.all(np.isfinite(M), axis=1) & (M.sum(axis=1) > 0)
            if self.color_by == "confidence":
                with np.errstate(invalid="ignore", divide="ignore"):
                    top = np.where(ok, M.max(axis=1) / M.sum(axis=1), np.nan)
                return palette.with_anchors(palette.by_values(top, value_range=(0.0, 1.0)),
                                            n_anchors, 0)
            labels = np.where(ok, np.argmax(np.nan_to_num(M), axis=1), -1)
        names = self._class_names_for(int(labels.max()) if labels.size else -1)
        coloring = palette.by_class(labels, names)
        return palette.with_anchors(coloring, n_anchors, len(names))

    def _class_names_for(self, top):
        names = list(self.annotations.class_names)
        return names + [f"class {k}" for k in range(len(names), top + 1)]

    # ------------------------------------------------------------------ display settings
    def color_by_values(self, name, values, show=True):
        """Offer colouring the points by ``values`` under ``name`` (in the colour menu).

        Parameters
        ----------
        name : str
            The name in the menu; giving a name again replaces its values.
        values : array-like (n_samples,)
            One value per point, such as a pandas column: integers, strings
            and booleans are categories (with a legend), floats a colour
            ramp (with a colour bar); NaN is grey.
        show : bool, default True
            Colour by it now.

        Raises
        ------
        TypeError, ValueError
            For a name of a built-in colouring, or values of the wrong shape
            or type (see the ``colors`` argument); nothing changes.
        """
        if not isinstance(name, str) or not name.strip():
            raise TypeError(f"name must be a non-empty string; got {name!r}.")
        if name in ("label",) + MEMBERSHIP_COLORINGS:
            raise ValueError(f"{name!r} is a built-in colouring; choose another name.")
        coloring = arguments.check_colors(values, self._n, name)
        with self._sync_lock:
            self._user_colorings[name] = coloring
            self._user_values[name] = np.asarray(values)
            self._show_color_options(False)
            shown = self.color_by == name
            if show and not shown:
                self.color_by = name  # publishes (_display_changed)
        if shown:
            self._publish()

    @traitlets.validate("color_by")
    def _valid_color_by(self, proposal):
        value = proposal["value"]
        if value not in self.color_options:
            raise traitlets.TraitError(f"color_by must be one of {self.color_options}; got "
                                       f"{value!r}.")
        return value

    @traitlets.validate("view")
    def _valid_view(self, proposal):
        value = proposal["value"]
        if value not in VIEWS:
            raise traitlets.TraitError(f"view must be one of {', '.join(VIEWS)}; got {value!r}.")
        return value

    @traitlets.validate("frame_rate")
    def _valid_frame_rate(self, proposal):
        value = proposal["value"]
        if not 0 < value <= 60:
            raise traitlets.TraitError(f"frame_rate must be in (0, 60] frames per second; got "
                                       f"{value!r}.")
        return value

    @traitlets.observe("frame_rate")
    def _frame_rate_changed(self, change):
        self._size_steps_to_frames()

    def _size_steps_to_frames(self):
        """Step calls short enough that every frame the rate allows shows a new iteration."""
        worker = getattr(self, "_worker", None)
        if worker is not None:
            worker.step_seconds = min(STEP_SECONDS, STEP_SHARE_OF_FRAME / self.frame_rate)

    @traitlets.observe("view", "color_by")
    def _display_changed(self, change):
        if getattr(self, "_plane", None) is None:
            return
        if change["name"] == "view":
            with self._sync_lock:
                self._plane = PlaneView(change["new"])
        self._publish()


def _encode_frame(points, anchors, coloring):
    """A frame's bytes: (centre, scale, positions, anchors, colour codes) of 2-D
    ``points`` and ``anchors`` in the view, or None where the positions overflow."""
    center, scale = normalization(points, anchors)
    points, anchors = normalize(points, anchors, dtype=np.float64)
    try:
        positions = encode_positions(points)
    except ValueError:
        return None
    anchors = b"" if anchors is None else encode(anchors, FLOAT32)
    return center, scale, positions, anchors, encode(coloring.codes, UINT16)
