"""New points in a running Explorer: ``Explorer.add_points``.

The new points are placed on the current map by the method's ``transform``
path (:mod:`nbembed.methods._new_points`: each against the fixed map, as
``transform`` places points after a fit), then a run is prepared on the old
and new data together, starting from the current embedding with the placed
points appended, and takes the old run's place: same live parameters, same
pins, and the same point of its schedule (early exaggeration is not done
again). The existing points keep their indices and annotations; the new
points' labels become annotations, one action of Undo.

Everything touching the run happens in the worker thread, between two steps
(:meth:`~nbembed.widget.worker.RunWorker.replace`); ``add_points`` checks its
arguments first and waits for the new run.
"""

from __future__ import annotations

import copy
import threading

import numpy as np
import scipy.sparse as sp
import traitlets

from .._validation import check_data, check_labels
from ..methods._base import EmbeddingEstimator
from . import arguments
from .marks import constraint_marks
from .traits import UINT8, decode, encode

#: Methods whose ``transform`` places new points on a fitted map.
PLACING_METHODS = ("HSSNE", "SNE", "NeRV", "SNeRV", "Mbed")


def _places_points(method):
    own = getattr(type(method), "_keep_for_new_points", None)
    return own is not None and own is not EmbeddingEstimator._keep_for_new_points


def fitted_at(method, X, run):
    """``method`` as if a fit on ``X`` had ended where ``run`` is now: its
    ``transform`` places rows on that map, however the run goes on."""
    fitted = copy.copy(method)  # with what prepare found (Mbed's sigma_)
    fitted.n_features_in_ = X.shape[1]
    fitted._store_fitted(run)
    fitted.embedding_ = np.array(run.embedding)  # the map shown (Mbed stores its best step's)
    fitted._new_points = fitted._keep_for_new_points(X, run)
    return fitted


def place_new_points(method, X, run, X_new):
    """Positions of ``X_new`` on the current map of ``run`` (a run of ``method`` on
    ``X``), as ``transform(X_new)`` would place them after a fit ending there."""
    return fitted_at(method, X, run).transform(X_new)


def continue_like(new, old):
    """Start ``new`` where ``old`` is: its live parameters and its point of the schedule."""
    params = {name: value for name, value in old.get_params().items() if value is not None}
    if params:
        new.set_params(**params)
    if callable(getattr(new, "continue_schedule", None)):
        new.continue_schedule(old)
    else:
        new.iteration = old.iteration


class GrowingPoints(traitlets.HasTraits):
    """``add_points`` of :class:`~nbembed.widget.Explorer` (a mixin)."""

    def add_points(self, X_new, labels=None, *, data=None, hover_text=None, images=None,
                   timeout=300.0):
        """Add points to the running map: placed by ``transform``, then optimized with the rest.

        The new points get the indices ``n_points, n_points + 1, ...``; the
        existing points keep theirs, with their annotations and pins. The run
        goes on from where it was in its schedule, with the same slider values.

        Parameters
        ----------
        X_new : array-like (n_new, n_features)
            The new points' data, with the features of the data shown.
        labels : array-like of int (n_new,), optional
            Classes of the new points (-1 for none; a class beyond the existing
            ones is created, as ``Annotations.set_labels`` does); they are
            added to ``ex.annotations`` as one action (Undo removes the
            labels, not the points).
        data : dict of array-like, optional
            Values of the new points for each column given with ``data=`` or
            ``color_by_values`` (and ``"user"`` for ``colors=``); needed
            for every such column.
        hover_text : list of str, optional
            Their tooltips (empty when the Explorer has tooltips and none are given).
        images : array-like (n_new, h, w[, c]), optional
            Their thumbnails; needed when the Explorer shows images.
        timeout : float, default 300
            Seconds to wait for the new run.

        Raises
        ------
        ValueError, TypeError
            For a method without ``transform`` (only HSSNE, SNE, NeRV, SNeRV
            and Mbed place new points), data that are not a dense array of
            features, ``X_new`` with another number of features, NaN or
            infinity, or labels, columns, texts or images that do not fit;
            nothing changes.
        RuntimeError
            If placing the points or preparing the run failed (the old run
            goes on); TimeoutError if it took longer than ``timeout``.
        """
        if not _places_points(self._method):
            raise ValueError(f"{type(self._method).__name__} cannot add points to a running "
                             f"map: only methods with transform can "
                             f"({', '.join(PLACING_METHODS)}).")
        if getattr(self._method, "metric", None) == "precomputed" or \
                getattr(self._method, "affinity", None) == "precomputed":
            raise ValueError("add_points needs data with features; this Explorer shows "
                             "precomputed dissimilarities or affinities.")
        if sp.issparse(self._X):
            raise TypeError("add_points needs dense data; the Explorer shows a sparse matrix.")
        X = check_data(self._X)
        X_new = check_data(X_new, name="X_new")
        if X_new.shape[1] != X.shape[1]:
            raise ValueError(f"X_new has {X_new.shape[1]} features; the data shown have "
                             f"{X.shape[1]}.")
        m = X_new.shape[0]
        new_labels = None if labels is None else self._check_new_labels(labels, m)
        extras = self._extended_extras(m, data, hover_text, images)
        finished = threading.Event()
        outcome = {}

        def done(error):
            if error is not None:
                outcome["error"] = error
            finished.set()

        self._worker.start(paused=self.status in ("paused", "done"))
        self._worker.replace(lambda old: self._grown_run(old, X, X_new, new_labels, extras),
                             done)
        if not finished.wait(timeout):
            raise TimeoutError(f"the new points were not in the run within {timeout} s.")
        if "error" in outcome:
            err = outcome["error"]
            raise RuntimeError(f"the points were not added ({type(err).__name__}: {err}); "
                               f"the run goes on without them.") from err
        self._warn(f"Added {m} point(s) (indices {self._n - m} to {self._n - 1}).")
        self.update_annotations()

    # ------------------------------------------------------------------ checks
    def _check_new_labels(self, labels, m):
        """The new points' labels, refused as the annotations and the method would."""
        y = check_labels(labels, m, name="labels")
        limit = self._max_classes()
        if limit is not None and y.size and y.max() >= limit:
            raise ValueError(f"labels has class {int(y.max())}; the method was set up for "
                             f"{limit} classes (0 to {limit - 1}).")
        with self._ann_lock:
            trial = self.annotations.copy()
        trial.add_points(m)
        _label_new_points(trial, self._n, y)  # raises as the real change would
        return y

    def _extended_extras(self, m, data, hover_text, images):
        """The colourings, texts and images of all points, old and new, checked."""
        n = self._n
        data = {} if data is None else dict(data)
        unknown = set(data) - set(self._user_values)
        if unknown:
            raise ValueError(f"data has columns the Explorer does not colour by: "
                             f"{sorted(unknown)}; add them with color_by_values first.")
        missing = [name for name in self._user_values if name not in data]
        if missing:
            raise ValueError(f"give the new points' values of every colouring column: "
                             f"data={{{', '.join(repr(c) for c in missing)}: ...}}.")
        colorings = {name: (values, arguments.check_colors(values, n + m, name))
                     for name, values in
                     ((name, _joined(self._user_values[name], data[name], name))
                      for name in self._user_values)}
        texts = list(self.hover_text)
        if hover_text is not None:
            if not texts:
                texts = [""] * n
            texts += arguments.check_hover_text(hover_text, m)
        elif texts:
            texts += [""] * m
        image_data = self._images
        if self.image_shape and images is None:
            raise ValueError("the Explorer shows images: give the new points' images too.")
        if images is not None:
            if not self.image_shape:
                raise ValueError("the Explorer shows no images; leave images out.")
            more, shape = arguments.check_images(images, m)
            if shape != list(self.image_shape):
                raise ValueError(f"images must have the shape of the others, "
                                 f"{tuple(self.image_shape)}; got {tuple(shape)}.")
            image_data = encode(np.concatenate([decode(self._images, UINT8),
                                                decode(more, UINT8)]), UINT8)
        return dict(colorings=colorings, hover_text=texts, images=image_data)

    # ------------------------------------------------------------------ worker thread
    def _grown_run(self, old, X, X_new, new_labels, extras):
        """The run on the old and new points, continuing ``old``; the Explorer then shows it."""
        if old is None:
            raise ValueError("there is no run to add the points to (it failed or has not "
                             "started); restart it first.")
        n, m = X.shape[0], X_new.shape[0]
        placed = place_new_points(self._method, X, old, X_new)
        X_all = np.vstack([X, X_new])
        ann, y = self._annotation_snapshot()
        ann.add_points(m)
        if new_labels is not None:
            _label_new_points(ann, n, new_labels)
        y_all = None if y is None else np.concatenate([y, np.full(m, -1)])
        new = self._method.prepare(X_all, y_all, annotations=ann,
                                   init=np.vstack([old.embedding, placed]))
        continue_like(new, old)
        self._adopt_new_points(X_all, y_all, new_labels, extras)
        return new

    def _adopt_new_points(self, X_all, y_all, new_labels, extras):
        n = self._n
        m = X_all.shape[0] - n
        with self._ann_lock:
            ann = self.annotations
            ann.add_points(m)
            if new_labels is not None and np.any(new_labels >= 0):
                self._log.record(lambda: _label_new_points(ann, n, new_labels))
        with self._sync_lock, self.hold_sync():
            self._n = n + m
            self._X = X_all
            self._y = y_all
            self._snapshot = None  # the old run's frame has fewer points
            self._monitor = None  # the read-outs sample the new data
            self._user_values = {name: values for name, (values, _)
                                 in extras["colorings"].items()}
            self._user_colorings = {name: coloring for name, (_, coloring)
                                    in extras["colorings"].items()}
            self._refresh_labels()
            self._marks = constraint_marks(self.annotations, self._labels)
            self.n_points = n + m
            self.hover_text = extras["hover_text"]
            self._images = extras["images"]


def _label_new_points(annotations, n, labels):
    """Label the points ``n, n + 1, ...`` with ``labels`` (-1: none), class by class."""
    for k in np.unique(labels[labels >= 0]):
        annotations.set_labels(n + np.flatnonzero(labels == k), int(k))


def _joined(old, new, name):
    new = np.asarray(new)
    if new.ndim != 1:
        raise ValueError(f"data[{name!r}] must be 1-D, one value per new point; got shape "
                         f"{new.shape}.")
    return np.concatenate([np.asarray(old), new])
