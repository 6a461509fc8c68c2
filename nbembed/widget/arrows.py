"""Force arrows and neighbour lines of :class:`~nbembed.widget.Explorer`.

A mixin: it uses the Explorer's traits, lock, worker, plane view and
selection. With ``show_forces`` on, the worker thread computes
``run.forces(points)`` (:mod:`nbembed.objectives.forces`) for the hovered
point, or else for the selected points (at most :data:`MAX_FORCE_POINTS`),
when they change, after a step while paused, and while running at most every
:data:`REFRESH_SECONDS`; the browser draws one arrow per point and term.

With ``show_neighbours`` on, the hovered point's :data:`N_NEIGHBOURS` input
neighbours (its largest affinities P_ij) and output neighbours (nearest in
the current embedding) are found at the same moments and drawn as lines.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import scipy.sparse as sp
import traitlets

from .worker import REJECTED

logger = logging.getLogger("nbembed")

#: Most selected points that get arrows (the first ones, in index order).
MAX_FORCE_POINTS = 50
#: Shortest time between two force updates while the run is stepping, in seconds.
REFRESH_SECONDS = 0.5
#: Input and output neighbours drawn for the hovered point.
N_NEIGHBOURS = 10
#: Attributes of a run's objective that may hold its input affinities (n, n):
#: P for the t-SNE family and NeRV, M = P + P^T for Mbed.
AFFINITY_ATTRIBUTES = ("P", "M")


def _refresh_due(state, key, idle):
    """Whether an overlay keyed ``key`` (points, iteration) needs computing again;
    ``state`` holds the last key and time and is updated when it does."""
    last = state.get("key")
    if key == last:
        return False
    now = time.monotonic()
    if (last is not None and key[0] == last[0] and not idle
            and now - state.get("time", 0.0) < REFRESH_SECONDS):
        return False  # the same points while running: refreshed at a bounded rate
    state.update(key=key, time=now)
    return True


def largest_affinities(run, i, k, n):
    """The ``k`` points with the largest input affinity to point ``i`` (largest
    first, zeros left out), or None when the run's objective holds no (n, n)
    affinity matrix (``n`` points)."""
    objective = getattr(run, "objective", None)
    for name in AFFINITY_ATTRIBUTES:
        P = getattr(objective, name, None)
        if P is None or getattr(P, "shape", None) != (n, n):
            continue
        if sp.issparse(P):
            row = sp.csr_matrix(P[i])
            columns, values = row.indices, row.data
        else:
            values = np.asarray(P[i], dtype=np.float64)
            columns = np.arange(n)
        keep = (columns != i) & (values > 0)
        columns, values = columns[keep], values[keep]
        # largest first; ties by index, so the order does not depend on storage
        order = np.lexsort((columns, -values))[:k]
        return columns[order].astype(np.int64)
    return None


def nearest_in_embedding(Y, i, k):
    """The ``k`` nearest points to point ``i`` in embedding ``Y`` (nearest first)."""
    d = np.sum((Y - Y[i]) ** 2, axis=1)
    d[i] = np.inf
    k = min(k, len(Y) - 1)
    nearest = np.argpartition(d, k - 1)[:k] if k > 0 else np.empty(0, dtype=np.int64)
    return nearest[np.lexsort((nearest, d[nearest]))].astype(np.int64)


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
    #: Whether the hovered point's neighbour lines are drawn (browser-writable).
    show_neighbours = traitlets.Bool(False).tag(sync=True)
    #: The hovered ``point``, its ``input`` neighbours (largest P, None when the run
    #: has no affinities) and ``output`` neighbours; {} when none are shown.
    neighbours = traitlets.Dict().tag(sync=True)

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

    @traitlets.observe("show_forces", "show_neighbours", "hovered", "_selection")
    def _force_points_changed(self, change):
        if getattr(self, "_worker", None) is None:
            return  # still in the constructor
        if (self.show_forces or self.show_neighbours
                or change["name"] in ("show_forces", "show_neighbours")):
            self._worker.poke()

    def _update_neighbours(self, run, idle):
        """Worker thread: the hovered point's input and output neighbours, when due."""
        i = self.hovered
        state = self.__dict__.setdefault("_neighbours_state", {})
        if not self.show_neighbours or i < 0:
            state.clear()
            if self.neighbours:
                with self._sync_lock:
                    self.neighbours = {}
            return
        if not _refresh_due(state, ((i,), int(run.iteration)), idle):
            return
        near = largest_affinities(run, i, N_NEIGHBOURS, self._n)
        value = {"point": int(i), "input": None if near is None else near.tolist(),
                 "output": nearest_in_embedding(run.embedding, i, N_NEIGHBOURS).tolist(),
                 "iteration": int(run.iteration)}
        with self._sync_lock:
            self.neighbours = value

    def _update_forces(self, run, idle):
        """Worker thread: recompute the arrows when due (see the module)."""
        phase = getattr(run, "phase", None) or ""
        if phase != self.phase:
            with self._sync_lock:
                self.phase = phase
        state = self.__dict__.setdefault("_forces_state", {})
        if not self.show_forces:
            state.clear()
            if self.forces:
                with self._sync_lock:
                    self.forces = {}
            return
        points = self.force_points()
        if not _refresh_due(state, (tuple(points.tolist()), int(run.iteration)), idle):
            return
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
