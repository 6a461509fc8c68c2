"""Saving an Explorer session to one file, and opening it again where it was.

:func:`save_session` writes what an :class:`~nbembed.widget.Explorer` holds:
the method and its parameters, the run's current positions and its point of
the schedule (iteration, early exaggeration or annealing done, Mbed's λ),
the slider values, the annotations (labels, constraints, class names), the
pinned points, the selection, the colourings with the one shown, the view,
tooltips and thumbnails, and the data itself or only a fingerprint of it
(``include_data``). :func:`load_session` builds an Explorer from the file that
goes on from the saved positions at the saved point of its schedule: it is not
optimized again from the start.

This module holds what of an Explorer is saved and how an Explorer is built
again from it; the file itself (an ``.npz`` archive of plain arrays and a
versioned JSON document, read without pickle, so that opening a session file
cannot run code) is :mod:`nbembed.widget.session_format`. A file that is not
such a session, is damaged, or does not fit the data it is opened with raises
:class:`SessionError` and builds nothing.

What is not kept: the undo history (a restored Explorer starts with nothing
to undo), the optimizer's momentum and step sizes (they start afresh at the
saved positions, as after :meth:`~nbembed.widget.Explorer.add_points`), the
cost history and read-outs (they fill in at the next record), a cannot-link
selection A waiting for its second half, and changes still queued for the run
at the moment of saving (a slider moved within the last step).

Threads: :func:`save_session` runs in the caller's thread and reads the Explorer
under both of its locks (``_ann_lock`` first, then ``_sync_lock``), so that the
run, the annotations and the display it saves belong to one moment;
:func:`load_session` builds a new Explorer, which no other thread sees yet.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import math
import numbers
import os
import warnings
import weakref

import numpy as np

from .. import _config
from ..annotations import Annotations
from .growing import continue_like
from .session_format import (SessionError, data_fingerprint, data_from_document,
                             data_to_document, get_array, get_indices, method_from_document,
                             method_to_document, number_from_document, number_to_document,
                             put_array, read_session, write_session)
# Also read from here by those who check a file's format and version.
from .session_format import FORMAT_NAME, FORMAT_VERSION  # noqa: F401
from .traits import UINT8, decode
from .view import VIEWS

__all__ = ["PRECOMPUTED", "SCHEDULE_STATE", "RESTORED", "STARTED", "SessionError",
           "save_session", "load_session", "read_session", "data_fingerprint",
           "method_to_document", "method_from_document"]

#: The ``method`` name of an Explorer showing a given embedding (``method="precomputed"``).
PRECOMPUTED = "precomputed"
#: What ``continue_schedule`` of a run reads of the run it continues, besides its
#: iteration and live parameters: Mbed's schedule position, radius, annealing
#: step and λ (other runs have none of them).
SCHEDULE_STATE = ("schedule_position", "anneal_step", "radius", "lambda_", "current_lambda")
#: Explorer arguments a session restores itself; ``load_session`` refuses them.
RESTORED = frozenset({"method", "labels", "class_names", "annotations", "colors", "data",
                      "hover_text", "images", "color", "use_rep"})
#: Statuses in which the saved Explorer was optimizing, or would have once prepared;
#: a restored one starts optimizing then (a finished run restored as finished does not
#: move). Paused or failed sessions come back paused.
STARTED = ("running", "preparing", "compiling", "done")


# ------------------------------------------------------------------ saving

def save_session(explorer, path, include_data=False):
    """Save an Explorer's session to one file that :func:`load_session` opens.

    The Explorer goes on as it was; a running one is saved as it stands at
    one moment between two iterations.

    Parameters
    ----------
    explorer : Explorer
        Showing one of nbembed's methods (or ``method="precomputed"``).
    path : str or path-like
        The file to write (``.npz`` is customary; no suffix is added). An
        existing file is replaced only once the new one is complete.
    include_data : bool, default False
        Store the data in the file. Without it the file holds only the
        data's shape and a SHA-256 fingerprint of its values, and
        :func:`load_session` needs the same data as ``X``.

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    TypeError
        For a method that is not one of nbembed's estimators, a parameter a
        session cannot store (a callable ``kernel``, say), or data that are
        not numeric; nothing is written.

    Warns
    -----
    UserWarning
        When the run's positions are not finite and none was shown before:
        the session then keeps no positions, and the restored Explorer
        starts its run afresh.

    Examples
    --------
    >>> from nbembed.widget.session import load_session, save_session
    >>> save_session(ex, "digits-session.npz")            # doctest: +SKIP
    >>> ex = load_session("digits-session.npz", X=X)      # doctest: +SKIP
    """
    include_data = _check_flag(include_data, "include_data")
    arrays = {}
    method = explorer._method
    if _is_precomputed(method):
        method_doc = {"name": PRECOMPUTED}
        run_doc = None
    else:
        method_doc = method_to_document(method, arrays)
        run_doc = _run_document(explorer, arrays)
    # The annotation lock before the sync lock, the order the Explorer itself takes them.
    with explorer._ann_lock, explorer._sync_lock:
        annotations = json.loads(explorer.annotations.to_json())
        labels = explorer._y
        X = explorer._X
        n = explorer._n
        pinned = explorer.pinned
        selection = explorer.selection
        display = _display_document(explorer, arrays)
    if annotations["n_samples"] != n or (run_doc is not None and run_doc["n_samples"] != n):
        raise RuntimeError("the Explorer's points changed while saving (points were added); "
                           "save again.")
    if len(pinned) and run_doc is None and not _is_precomputed(method):
        warnings.warn(f"The {len(pinned)} pinned point(s) are not saved: the session holds no "
                      f"positions to pin them at (the run is being prepared, or its positions "
                      f"are not finite). Save again once the run shows its map.", UserWarning,
                      stacklevel=2)
    document = {
        "n_samples": n,
        "data": data_to_document(X, include_data, arrays),
        "method": method_doc,
        "run": run_doc,
        "annotations": annotations,
        "labels": put_array(arrays, "labels", labels),
        # Pins hold points at their saved positions: none without positions.
        "pinned": put_array(arrays, "pinned", pinned)
        if len(pinned) and run_doc is not None else None,
        "selection": put_array(arrays, "selection", selection),
        "display": display,
    }
    return write_session(path, document, arrays)


def _run_document(explorer, arrays):
    """The run's state (positions, schedule, sliders), or None before there is a run."""
    run = explorer.run
    start = _SAVED_STARTS.get(explorer)
    if run is None and start is not None:
        # Opened from a session, its first run still being prepared (or just prepared
        # and not yet handed over): save the state it starts from, or that run.
        state = start.state  # read first: the start drops it only once the run is made
        run = start.run()
        if run is None and state is not None:
            return _pending_run_document(state, arrays)
    if run is None:
        return None
    with _config.KERNEL_LOCK:  # one moment between two iterations
        Y = np.asarray(run.embedding, dtype=np.float64)
        anchors = run.anchors
        iteration = int(run.iteration)
        params = dict(run.get_params())
        schedule = {name: getattr(run, name) for name in SCHEDULE_STATE if hasattr(run, name)}
        live = dict(run.live_parameters)
        converged = bool(getattr(run, "converged", False))
        pinned_classes = getattr(run, "pinned_classes", None)
    if not np.all(np.isfinite(Y)):
        shown = explorer._snapshot  # the last finite positions the Explorer showed
        if shown is None or shown.embedding.shape != Y.shape:
            warnings.warn("The run's positions are not finite and none were shown before: "
                          "the session keeps no positions (nor pins), and the restored "
                          "Explorer starts its run afresh.", UserWarning, stacklevel=3)
            return None
        Y, anchors, iteration = shown.embedding, shown.anchors, shown.iteration
    if anchors is not None and not np.all(np.isfinite(anchors)):
        anchors = None
    # Slider values queued from the browser but not yet taken by the run are the newest.
    params.update({name: value for name, value in explorer.params.items() if name in live})
    return {
        "n_samples": int(Y.shape[0]),
        "status": explorer.status,
        "iteration": iteration,
        "converged": converged,
        "params": {name: number_to_document(value, f"live parameter {name}")
                   for name, value in params.items()},
        "schedule": {name: number_to_document(value, name) for name, value in schedule.items()},
        "sliders": {name: {"slider": [number_to_document(v, name) for v in p.slider],
                           "step": number_to_document(p.step, name)}
                    for name, p in live.items()},
        "embedding": put_array(arrays, "run.embedding", Y),
        "anchors": put_array(arrays, "run.anchors", anchors),
        "pinned_classes": put_array(arrays, "run.pinned_classes", pinned_classes)
        if pinned_classes is not None and len(pinned_classes) else None,
    }


def _pending_run_document(state, arrays):
    """The run entry of a session whose run is still being prepared from ``state``."""
    document = dict(state["document"])
    for name in ("embedding", "anchors", "pinned_classes"):
        document[name] = put_array(arrays, f"run.{name}", state[name])
    return document


def _display_document(explorer, arrays):
    """Colourings, view, tooltips, thumbnails and the rest of what is shown."""
    colorings = []
    for number, (name, values) in enumerate(explorer._user_values.items()):
        values = np.asarray(values)
        if values.dtype.kind == "O":  # the Explorer colours mixed objects as text too
            values = values.astype(str)
        colorings.append({"name": name,
                          "values": put_array(arrays, f"coloring.{number}", values)})
    images = None
    if explorer.image_shape:
        pixels = decode(explorer._images, UINT8).reshape(explorer._n, *explorer.image_shape)
        images = put_array(arrays, "images", pixels)
    return {
        "color_by": explorer.color_by,
        "colorings": colorings,
        "view": explorer.view,
        "frame_rate": float(explorer.frame_rate),
        "extra_iterations": int(explorer._worker.extra_iterations),
        "show_forces": bool(explorer.show_forces),
        "show_neighbours": bool(explorer.show_neighbours),
        "hover_text": list(explorer.hover_text) or None,
        "images": images,
    }


# ------------------------------------------------------------------ opening

def load_session(path, X=None, **explorer_kwargs):
    """Open a session saved by :func:`save_session`: an Explorer where it was.

    The Explorer goes on from the saved positions at the saved point of its
    schedule (early exaggeration or annealing is not done again), with the
    saved slider values, annotations, pins, selection, colourings and view.
    A session saved while optimizing goes on optimizing; one saved paused
    comes back paused, one saved finished comes back finished. A later
    :meth:`~nbembed.widget.Explorer.restart` starts afresh, as the method
    would without the session.

    Parameters
    ----------
    path : str or path-like
    X : array-like or scipy.sparse matrix (n_samples, n_features), optional
        The data the Explorer showed (for an AnnData, the array it embedded).
        Needed when the session was saved without them; checked against the
        saved shape and fingerprint, so that positions and annotations never
        land on other points.
    **explorer_kwargs
        Other arguments of :class:`~nbembed.widget.Explorer`, overriding the
        saved ones: ``autostart``, ``view``, ``frame_rate``,
        ``extra_iterations``.

    Returns
    -------
    Explorer

    Raises
    ------
    SessionError
        If the file is not a session, is damaged or truncated, was written
        by a newer nbembed, or ``X`` is not the saved data (another shape or
        other values); no Explorer is made.
    TypeError
        For an argument the session restores itself (``method``,
        ``annotations``, ``labels``, ...).
    FileNotFoundError
        If there is no such file.
    """
    restored = sorted(RESTORED & set(explorer_kwargs))
    if restored:
        raise TypeError(f"load_session restores {', '.join(restored)} from the session; "
                        f"leave {'it' if len(restored) == 1 else 'them'} out (change them on "
                        f"the Explorer it returns).")
    document, arrays = read_session(path)
    try:
        parts = _restored_parts(document, arrays, X)
    except SessionError as err:
        raise SessionError(f"cannot open {os.fspath(path)}: {err}") from None
    return _restored_explorer(parts, explorer_kwargs)


def _restored_parts(document, arrays, X):
    """Everything the Explorer is built from, checked before anything is built."""
    n = document.get("n_samples")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise SessionError(f"n_samples must be a positive integer; got {n!r}.")
    # Outside the checks of the document below: a TypeError here is about the X given.
    X = data_from_document(document.get("data"), arrays, X)
    rows = document["data"]["shape"][0]
    if rows != n:
        raise SessionError(f"the data have {rows} rows; the session is of {n} points.")
    try:
        annotations = _annotations(document["annotations"], n)
        method_doc = document["method"]
        if method_doc == {"name": PRECOMPUTED}:
            method = PRECOMPUTED
        else:
            method = method_from_document(method_doc, arrays)
        run = None if document["run"] is None else _run_state(document["run"], arrays, n)
        if run is not None and method == PRECOMPUTED:
            raise SessionError("a precomputed embedding has no run state to restore.")
        labels = None
        if document["labels"] is not None:
            labels = get_array(arrays, document["labels"], kinds="iu", shape=(n,))
        if run is not None:
            _check_dimensions(method, run)
        if document["pinned"] is not None:
            if run is None:
                raise SessionError("pinned points need the saved positions, which the "
                                   "session does not hold.")
            run["pinned"] = get_indices(arrays, document["pinned"], n, "pinned")
        selection = get_indices(arrays, document["selection"], n, "selection")
        display = _display(document["display"], arrays, n)
    except KeyError as err:
        raise SessionError(f"the session document lacks the entry {err}.") from None
    except (TypeError, AttributeError) as err:
        raise SessionError(f"the session document is malformed ({err}).") from None
    return dict(X=X, method=method, run=run, annotations=annotations, labels=labels,
                selection=selection, display=display)


def _run_state(document, arrays, n):
    """The run entry, checked: what :class:`_SavedStart` starts the run from."""
    keys = {"n_samples", "status", "iteration", "converged", "params", "schedule", "sliders",
            "embedding", "anchors", "pinned_classes"}
    if not isinstance(document, dict) or set(document) != keys:
        raise SessionError(f"the run entry must have the keys {sorted(keys)}.")
    if document["n_samples"] != n:
        raise SessionError(f"the run is of {document['n_samples']} points; the session of {n}.")
    iteration = document["iteration"]
    if not isinstance(iteration, int) or isinstance(iteration, bool) or iteration < 0:
        raise SessionError(f"the run's iteration must be a non-negative integer; got "
                           f"{iteration!r}.")
    if not isinstance(document["status"], str) or not isinstance(document["converged"], bool):
        raise SessionError("the run's status must be text and 'converged' true or false.")
    schedule = {}
    for name, value in _mapping(document["schedule"], "schedule").items():
        if name not in SCHEDULE_STATE:
            raise SessionError(f"the run's schedule has an unknown entry {name!r}.")
        schedule[name] = number_from_document(value)
    sliders = {}
    for name, slider in _mapping(document["sliders"], "sliders").items():
        if not isinstance(slider, dict) or set(slider) != {"slider", "step"} or \
                not isinstance(slider["slider"], list) or len(slider["slider"]) != 2:
            raise SessionError(f"the slider of {name!r} is malformed.")
        sliders[name] = {"slider": [_finite(v, name) for v in slider["slider"]],
                         "step": _finite(slider["step"], name)}
    embedding = get_array(arrays, document["embedding"], kinds="f", ndim=2)
    if embedding.shape[0] != n or not np.all(np.isfinite(embedding)):
        raise SessionError(f"the saved positions must be finite, one row per point ({n}); "
                           f"got shape {embedding.shape}.")
    anchors = None
    if document["anchors"] is not None:
        anchors = get_array(arrays, document["anchors"], kinds="f", ndim=2)
        if anchors.shape[1] != embedding.shape[1] or not np.all(np.isfinite(anchors)):
            raise SessionError("the saved anchors must be finite positions of the embedding's "
                               "dimension.")
    pinned_classes = None
    if document["pinned_classes"] is not None:
        if anchors is None:
            raise SessionError("pinned classes need the saved class positions.")
        pinned_classes = get_indices(arrays, document["pinned_classes"], len(anchors),
                                  "pinned classes")
    return {"status": document["status"], "iteration": iteration,
            "converged": document["converged"],
            "params": {name: number_from_document(value)
                       for name, value in _mapping(document["params"], "params").items()},
            "schedule": schedule, "sliders": sliders, "embedding": embedding,
            "anchors": anchors, "pinned_classes": pinned_classes, "pinned": None,
            "document": document}


def _check_dimensions(method, run):
    """Refuse saved positions of another dimension than the method embeds in."""
    d = getattr(method, "n_components", None)
    if isinstance(d, numbers.Integral) and run["embedding"].shape[1] != d:
        raise SessionError(f"the saved positions have {run['embedding'].shape[1]} "
                           f"dimension(s); the method embeds in n_components = {d}.")


def _display(document, arrays, n):
    """The display entry, checked, with the colourings and thumbnails as arrays."""
    keys = {"color_by", "colorings", "view", "frame_rate", "extra_iterations", "show_forces",
            "show_neighbours", "hover_text", "images"}
    if not isinstance(document, dict) or set(document) != keys:
        raise SessionError(f"the display entry must have the keys {sorted(keys)}.")
    colorings = {}
    for entry in document["colorings"]:
        if not isinstance(entry, dict) or set(entry) != {"name", "values"} or \
                not isinstance(entry["name"], str):
            raise SessionError("each colouring must be an object with 'name' and 'values'.")
        colorings[entry["name"]] = get_array(arrays, entry["values"], kinds="biufUS", shape=(n,))
    hover_text = document["hover_text"]
    if hover_text is not None and (not isinstance(hover_text, list) or len(hover_text) != n
                                   or not all(isinstance(t, str) for t in hover_text)):
        raise SessionError(f"hover_text must be a list of {n} strings.")
    images = None
    if document["images"] is not None:
        images = get_array(arrays, document["images"], kinds="u")
        if images.dtype != np.uint8 or images.ndim not in (3, 4) or images.shape[0] != n:
            raise SessionError(f"the saved thumbnails must be uint8 images, one per point "
                               f"({n}).")
    for flag in ("show_forces", "show_neighbours"):
        if not isinstance(document[flag], bool):
            raise SessionError(f"{flag} must be true or false.")
    if not isinstance(document["color_by"], str) or document["view"] not in VIEWS:
        raise SessionError(f"color_by must be text and view one of {', '.join(VIEWS)}.")
    rate, extra = document["frame_rate"], document["extra_iterations"]
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate <= 60 \
            or isinstance(extra, bool) or not isinstance(extra, int) or extra < 0:
        raise SessionError("frame_rate must be a number in (0, 60] and extra_iterations a "
                           "non-negative integer.")
    return {**document, "colorings": colorings, "images": images}


def _annotations(document, n):
    """The annotations entry as :class:`~nbembed.Annotations` of ``n`` points."""
    try:
        annotations = Annotations.from_json(json.dumps(document, allow_nan=False))
    except (TypeError, ValueError) as err:
        raise SessionError(f"its annotations cannot be read ({err}).") from None
    if annotations.n_samples != n:
        raise SessionError(f"its annotations are of {annotations.n_samples} points; the "
                           f"session of {n}.")
    return annotations


def _mapping(value, what):
    if not isinstance(value, dict):
        raise SessionError(f"the run's {what} must be an object.")
    return value


def _finite(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not math.isfinite(value):
        raise SessionError(f"the slider of {name!r} must hold finite numbers.")
    return float(value)


# ------------------------------------------------------------------ the Explorer built again

def _restored_explorer(parts, explorer_kwargs):
    from .explorer import Explorer

    method, run, display = parts["method"], parts["run"], parts["display"]
    start = None if run is None else _SavedStart(method, run)
    status = "running" if run is None else run["status"]
    kwargs = dict(view=display["view"], frame_rate=display["frame_rate"],
                  extra_iterations=display["extra_iterations"], autostart=status in STARTED)
    kwargs.update(explorer_kwargs)
    explorer = Explorer._with_first_prepare(
        start, parts["X"], method=method, labels=parts["labels"],
        annotations=parts["annotations"], data=display["colorings"] or None,
        hover_text=display["hover_text"], images=display["images"], **kwargs)
    if start is not None:
        _SAVED_STARTS[explorer] = start
    try:
        if run is not None and run["pinned"] is not None:
            explorer._show_pins(run["pinned"])  # the run pins them as it is prepared
        explorer.selection = parts["selection"]
        explorer.show_forces = display["show_forces"]
        explorer.show_neighbours = display["show_neighbours"]
        _show_coloring(explorer, display["color_by"])
    except Exception:
        explorer.close()
        raise
    return explorer


def _show_coloring(explorer, name):
    """Colour by ``name`` now, or, for a run's class memberships (offered once the
    run has them), as soon as the Explorer offers it."""
    if name in explorer.color_options:
        explorer.color_by = name
        return

    def offered(change):
        if name in change["new"]:
            explorer.unobserve(offered, names="color_options")
            explorer.color_by = name
    explorer.observe(offered, names="color_options")


class _SavedStart:
    """Prepares the first run of an Explorer opened from a session, in place of
    ``method.prepare`` (``Explorer._with_first_prepare``; restarts call the
    method's own ``prepare``).

    The run starts at the saved positions (``init``; Parametric Embedding's
    class positions as ``class_init``) and is moved to the saved point of its
    schedule, sliders and pins. Until it is made, ``state`` holds the saved
    run state, which saving the Explorer again stores; then ``run`` refers
    (weakly) to the run.
    """

    def __init__(self, method, state):
        self.method = method
        self.state = state
        self.run = lambda: None

    def __call__(self, X, y=None, annotations=None):
        state = self.state
        extra = {}
        if state["anchors"] is not None and \
                "class_init" in inspect.signature(self.method.prepare).parameters:
            extra["class_init"] = state["anchors"]
        run = self.method.prepare(X, y, annotations=annotations, init=state["embedding"],
                                  **extra)
        _continue_saved_run(run, state)
        self.run = weakref.ref(run)
        self.state = None
        return run


#: Explorer -> the :class:`_SavedStart` of its first run, for Explorers opened from a
#: session: saving one again before that run is handed over saves its saved state.
_SAVED_STARTS = weakref.WeakKeyDictionary()


class _SavedRun:
    """A saved run in the form a new run continues one (``continue_schedule``):
    its iteration, schedule state and live parameter values."""

    def __init__(self, state, live_parameters):
        self.iteration = state["iteration"]
        self._params = state["params"]
        for name, value in state["schedule"].items():
            setattr(self, name, value)
        # A run may have narrowed a slider's range as it learned its scale (Mbed's λ).
        self.live_parameters = {
            name: dataclasses.replace(p, slider=tuple(state["sliders"][name]["slider"]),
                                      step=state["sliders"][name]["step"])
            if name in state["sliders"] else p for name, p in live_parameters.items()}

    def get_params(self):
        return dict(self._params)


def _continue_saved_run(run, state):
    """Bring a run prepared at the saved positions to the saved schedule, sliders and pins."""
    if callable(getattr(run, "continue_schedule", None)):
        continue_like(run, _SavedRun(state, run.live_parameters))
        if state["converged"]:
            run.converged = True
    else:
        # A spectral run: its one iteration is the solve, which matches the axes of the
        # saved embedding it starts from.
        params = {name: value for name, value in state["params"].items() if value is not None}
        if params:
            run.set_params(**params)
        if state["iteration"] > run.iteration:
            run.step(state["iteration"] - run.iteration)
    if state["pinned"] is not None:
        run.pin(state["pinned"])
    if state["pinned_classes"] is not None:
        run.pin_classes(state["pinned_classes"])


# ------------------------------------------------------------------ small helpers

def _is_precomputed(method):
    from .precomputed import Precomputed
    return isinstance(method, Precomputed)


def _check_flag(value, name):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False; got {value!r}.")
    return bool(value)
