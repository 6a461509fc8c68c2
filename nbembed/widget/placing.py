"""Rows placed on the running map: the sample mode and ``Explorer.place``.

A live run carries up to about 10^6 points. For more rows, ``Explorer(X,
sample=100_000)`` runs live on a random sample of them, and ``place_rest()``
(or the toolbar's "Place rest" button) puts the other rows on the current map
with the method's ``transform``, in chunks, in a thread of its own, while the
run goes on. ``place(X_new)`` does the same for any rows with the features of
the data shown. The page draws the placed rows as a second, fainter layer under
the live points.

A placed row is drawn at its nearest live point (on the map, when it was
placed) plus its offset from that point, so the layer follows the map while
the run goes on; place again for positions on the map as it is now. At most
``PLACED_SHOWN_MAX`` placed rows are drawn (a random subset); all of them are
in ``Explorer.placed``.

Threads: ``place`` checks its arguments in the caller's thread. The worker
thread takes the run's map between two steps (``RunWorker.read``); the
placing thread "nbembed-place" places chunk after chunk (the kernels of
``transform`` hold ``KERNEL_LOCK``, so run and placement take turns) and sets
the layer's traits under ``_sync_lock``. ``_placing`` (the thread and its
stop flag) belongs to ``_sync_lock``.
"""

from __future__ import annotations

import threading
import time
from typing import NamedTuple

import numpy as np
import traitlets
from scipy.spatial import cKDTree

from .._validation import check_data
from ..methods._new_points import REACH_NEIGHBORS, check_new_points, \
    check_placement_perplexity
from .arguments import take_rows
from .growing import _places_points, fitted_at
from .traits import FLOAT32, UINT32, binary_trait, encode

#: Rows placed by one ``transform`` call: a progress report, and a turn for the run, each.
CHUNK_ROWS = 20_000
#: Placed rows the page draws at most (a random subset beyond it).
PLACED_SHOWN_MAX = 1_000_000


class PlacedRows(NamedTuple):
    """Rows placed on the map (``Explorer.placed``).

    Attributes
    ----------
    embedding : ndarray (m, d)
        Their positions on the map as it was at ``iteration``.
    rows : ndarray of int64 (m,) or None
        Their rows in the Explorer's ``X`` (sample mode), or None for rows
        given to ``place``.
    shown : ndarray of int64
        Which of them the page draws (all up to ``PLACED_SHOWN_MAX``).
    iteration : int
        The run's iteration whose map they were placed on.
    """

    embedding: np.ndarray
    rows: np.ndarray | None
    shown: np.ndarray
    iteration: int


def draw_sample(n, size, seed):
    """``size`` distinct rows of ``n`` drawn at random, sorted (all when size >= n)."""
    if size >= n:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size, replace=False))


def sample_input(size, n, seed, *per_row):
    """The sampled rows, and each per-row argument of the Explorer cut to them.

    Returns
    -------
    rows : ndarray of int64
    per_row
        Each argument cut to the rows, in the order given (None stays None).
    """
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 2:
        raise ValueError(f"sample must be an integer of at least 2 (the rows the live run "
                         f"works on); got {size!r}.")
    rows = draw_sample(n, int(size), seed)
    return (rows, *(take_rows(values, rows) for values in per_row))


class PlacingRows(traitlets.HasTraits):
    """Sample mode and ``place`` of :class:`~nbembed.widget.Explorer` (a mixin)."""

    # The placed layer (Python -> browser): for each drawn row its nearest live
    # point (uint32) and its offset from it in the view's plane (float32 x, y, in
    # the embedding's units; the page multiplies them by frame_scale).
    _placed_refs = binary_trait()
    _placed_offsets = binary_trait()
    placed_count = traitlets.Int(0).tag(sync=True)
    rest_count = traitlets.Int(0).tag(sync=True)
    placing = traitlets.Unicode("").tag(sync=True)  # progress, "" when idle

    def _init_placing(self, X_full, rows):
        """Keep the rows the sample left out; returns how many there are."""
        self._X_full = X_full
        self._sample_rows = rows
        self._placing = None
        self._placed = None
        return 0 if rows is None else self._count_rows(X_full) - rows.size

    @staticmethod
    def _count_rows(X):
        return X.shape[0] if hasattr(X, "shape") else len(X)

    @property
    def sample_rows(self):
        """Rows of the ``X`` given with ``sample=`` that the live run shows
        (sorted; point i of the map is row ``sample_rows[i]``), or None."""
        return self._sample_rows

    @property
    def placed(self):
        """The last rows placed (:class:`~nbembed.widget.placing.PlacedRows`), or None."""
        return self._placed

    def place_rest(self, *, wait=False, timeout=None):
        """Place the rows the sample left out on the current map (sample mode).

        Parameters
        ----------
        wait : bool, default False
            Return once all are placed (else at once; ``placing`` reports
            the progress and ``placed`` holds the result).
        timeout : float, optional
            With ``wait``: seconds to wait at most.

        Returns
        -------
        PlacedRows or None
            With ``wait``.
        """
        if self._sample_rows is None:
            raise ValueError("place_rest places the rows a sample left out; this Explorer was "
                             "not opened with sample=. Use place(X_new) for other rows.")
        rest = np.setdiff1d(np.arange(self._count_rows(self._X_full)), self._sample_rows)
        return self._start_placing(self._X_full, rest, wait=wait, timeout=timeout)

    def place(self, X_new, *, wait=True, timeout=None):
        """Place rows ``X_new`` on the current map and draw them as a fainter layer.

        The run goes on meanwhile; the rows are placed against the map of the
        moment ``place`` was called, by the method's ``transform``, and do not
        enter the run (see :meth:`~nbembed.widget.Explorer.add_points` for that). A new call replaces
        the layer.

        Parameters
        ----------
        X_new : array-like (m, n_features)
            Rows with the features of the data shown.
        wait : bool, default True
            Return once all are placed.
        timeout : float, optional
            With ``wait``: seconds to wait at most.

        Returns
        -------
        PlacedRows or None
            With ``wait``.

        Raises
        ------
        ValueError
            For a method without ``transform``, precomputed input, or rows
            with another number of features, NaN or infinity.
        TimeoutError
            When ``wait`` and the rows were not placed within ``timeout``.
        """
        X_new = check_data(X_new, name="X_new", allow_sparse=True)
        return self._start_placing(X_new, None, wait=wait, timeout=timeout)

    def stop_placing(self, timeout=30.0):
        """Stop a placement under way (the rows placed so far are dropped)."""
        with self._sync_lock:
            placing = self._placing
        if placing is not None:
            placing[1].set()
            placing[0].join(timeout)

    # ------------------------------------------------------------------ main thread
    def _start_placing(self, X, rows, *, wait, timeout):
        method = self._method
        if not _places_points(method) or "precomputed" in (getattr(method, "metric", None),
                                                           getattr(method, "affinity", None)):
            raise ValueError(f"{type(method).__name__} cannot place rows on its map here: "
                             f"only HSSNE, SNE, NeRV, SNeRV and Mbed on data with features "
                             f"have transform.")
        features = check_data(self._X, allow_sparse=True).shape[1]
        if rows is None and X.shape[1] != features:
            raise ValueError(f"X_new has {X.shape[1]} features; the data shown have "
                             f"{features}.")
        self.stop_placing()
        taken = threading.Event()
        fitted = {}

        def take_map(run):  # in the worker thread, between two steps
            try:
                if run is None:
                    raise ValueError("there is no run (it failed or has not started); "
                                     "restart it first")
                fitted["map"] = fitted_at(method, check_data(self._X, allow_sparse=True), run)
                fitted["iteration"] = run.iteration
            except Exception as err:
                fitted["error"] = err
            taken.set()

        self._worker.start(paused=self.status in ("paused", "done"))
        self._worker.read(take_map)
        stop = threading.Event()
        finished = threading.Event()
        outcome = {}
        thread = threading.Thread(target=self._place_rows, name="nbembed-place", daemon=True,
                                  args=(taken, fitted, X, rows, stop, finished, outcome))
        with self._sync_lock:
            self._placing = (thread, stop)
        thread.start()
        if not wait:
            return None
        if not finished.wait(timeout):
            raise TimeoutError(f"the rows were not placed within {timeout} s (placing goes "
                               f"on; see placed).")
        if "placed" not in outcome:
            raise RuntimeError(f"the rows were not placed. {self.placing}")
        return outcome["placed"]

    # ------------------------------------------------------------------ placing thread
    def _place_rows(self, taken, fitted, X, rows, stop, finished, outcome):
        try:
            while not taken.wait(0.5):
                if stop.is_set() or not self._worker.alive:
                    self._report("Placing stopped: the run ended before its map was taken.")
                    return
            if "error" in fitted:
                err = fitted["error"]
                raise RuntimeError(f"the map could not be taken ({type(err).__name__}: {err})")
            total = rows.size if rows is not None else X.shape[0]
            estimator = fitted["map"]
            # What estimator.transform does, a chunk at a time, with one notice in
            # the end for rows far outside the sample instead of a warning a chunk.
            new_points = check_placement_perplexity(estimator._fitted_placement(), None,
                                                    estimator)
            placed, n_far = [], 0
            started = time.perf_counter()
            for start in range(0, total, CHUNK_ROWS):
                if stop.is_set():
                    self._report("")
                    return
                part = np.arange(start, min(start + CHUNK_ROWS, total))
                chunk = take_rows(X, part if rows is None else rows[part])
                Y, far = new_points.place(check_new_points(estimator, chunk))
                placed.append(Y)
                n_far += far
                self._report(f"Placing rows: {part[-1] + 1:,} of {total:,} "
                             f"({time.perf_counter() - started:.0f} s)")
            outcome["placed"] = PlacedRows(np.vstack(placed), rows, _shown(total),
                                           fitted["iteration"])
            self._show_placed(outcome["placed"], estimator.embedding_)
            self._report("")
            if n_far:
                self._warn(f"{n_far:,} of the {total:,} placed rows lie far outside the rows "
                           f"of the map (farther from all of them than they are from their "
                           f"{REACH_NEIGHBORS}th neighbours): their places say little.")
        except Exception as err:  # reported on the page; the run goes on
            self._report(f"Placing failed ({type(err).__name__}: {err}).")
        finally:
            finished.set()

    def _report(self, text):
        with self._sync_lock:
            self.placing = text

    def _show_placed(self, placed, live):
        """Send the layer: each drawn row's nearest live point and its offset."""
        shown = placed.embedding[placed.shown]
        _, refs = cKDTree(live).query(shown, workers=-1)
        with self._sync_lock:
            display = self._display_maps.get(self.frame_id)
        basis = _first_two(live.shape[1]) if display is None else display.basis
        offsets = (shown - live[refs]) @ basis
        with self._sync_lock, self.hold_sync():
            self._placed = placed
            self._placed_refs = encode(refs, UINT32)
            self._placed_offsets = encode(offsets, FLOAT32)
            self.placed_count = len(placed.embedding)


def _first_two(d):
    """The (d, 2) basis of the "first-two" view (a line's second coordinate is 0)."""
    basis = np.zeros((d, 2))
    basis[0, 0] = 1.0
    if d > 1:
        basis[1, 1] = 1.0
    return basis


def _shown(total):
    """The placed rows the page draws: all, or a random ``PLACED_SHOWN_MAX`` of them."""
    return draw_sample(total, PLACED_SHOWN_MAX, 0)
