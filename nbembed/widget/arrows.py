"""Force arrows of :class:`~nbembed.widget.Explorer`: what pushes a point, term by term.

A mixin: it uses the Explorer's traits, lock, worker, plane view and
selection. With ``show_forces`` on, the worker thread computes
``run.forces(points)`` (:mod:`nbembed.objectives.forces`) for the hovered
point, or else for the selected points (at most :data:`MAX_FORCE_POINTS`),
when they change, after a step while paused, and while running at most every
:data:`REFRESH_SECONDS`; the browser draws one arrow per point and term.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import traitlets

from .worker import REJECTED

logger = logging.getLogger("nbembed")

#: Most selected points that get arrows (the first ones, in index order).
MAX_FORCE_POINTS = 50
#: Shortest time between two force updates while the run is stepping, in seconds.
REFRESH_SECONDS = 0.5


class ForceArrows(traitlets.HasTraits):
    """The force-arrow part of :class:`~nbembed.widget.Explorer`."""

    #: Whether arrows are drawn (browser-writable: the "forces" box).
    show_forces = traitlets.Bool(False).tag(sync=True)
    #: The point under the pointer, -1 for none (browser-writable).
    hovered = traitlets.Int(-1).tag(sync=True)
    #: The arrows: ``points``, ``terms`` (name, label, vectors in the plane of the
    #: plot: the direction each term pushes, minus its gradient part),
    #: ``phase``, ``exaggeration`` and ``iteration``; {} when none are shown.
    forces = traitlets.Dict().tag(sync=True)
    #: The phase of the run's schedule ("early exaggeration", ...), "" when it has none.
    phase = traitlets.Unicode("").tag(sync=True)

    def force_points(self):
        """The points that get arrows: the hovered one, else the first
        ``MAX_FORCE_POINTS`` selected ones."""
        if self.hovered >= 0:
            return np.array([self.hovered], dtype=np.int64)
        return self.selection[:MAX_FORCE_POINTS]

    @traitlets.validate("hovered")
    def _valid_hovered(self, proposal):
        value = proposal["value"]
        if not -1 <= value < self._n:
            raise traitlets.TraitError(f"hovered must be a point index in [0, {self._n}) or "
                                       f"-1 for none; got {value}.")
        return value

    @traitlets.observe("show_forces", "hovered", "_selection")
    def _force_points_changed(self, change):
        if getattr(self, "_worker", None) is None:
            return  # still in the constructor
        if self.show_forces or change["name"] == "show_forces":
            self._worker.poke()

    def _update_forces(self, run, idle):
        """Worker thread: recompute the arrows when due (see the module)."""
        phase = getattr(run, "phase", None) or ""
        if phase != self.phase:
            with self._sync_lock:
                self.phase = phase
        if not self.show_forces:
            if self.forces:
                with self._sync_lock:
                    self.forces = {}
            self._forces_key = None
            return
        points = self.force_points()
        key = (tuple(points.tolist()), int(run.iteration))
        last = getattr(self, "_forces_key", None)
        if key == last:
            return
        now = time.monotonic()
        moved_only = last is not None and key[0] == last[0]
        if moved_only and not idle and now - getattr(self, "_forces_time", 0.0) < REFRESH_SECONDS:
            return
        self._forces_key, self._forces_time = key, now
        value = {}
        if len(points):
            try:
                value = self._forces_value(run, points)
            except (AttributeError, NotImplementedError, *REJECTED) as err:
                self._warn(f"Force arrows are not available for this run: {err}")
                with self._sync_lock:
                    self.show_forces = False
                return
        with self._sync_lock:
            self.forces = value

    def _forces_value(self, run, points):
        forces = run.forces(points)
        terms = []
        for name in forces:
            push = self._plane.directions(-np.asarray(forces[name], dtype=np.float64))
            push = np.where(np.isfinite(push), push, 0.0)
            terms.append({"name": name, "label": forces.labels[name],
                          "vectors": push.astype(np.float32).tolist()})
        return {"points": points.tolist(), "terms": terms, "phase": forces.phase or "",
                "exaggeration": forces.exaggeration, "iteration": int(run.iteration)}
