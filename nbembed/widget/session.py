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

The file is an ``.npz`` archive (:func:`numpy.savez`) of plain arrays, one of
which, ``session``, holds a JSON document (UTF-8 bytes) naming the others. It
holds no pickle and is read with ``allow_pickle=False``, so opening a session
file cannot run code; methods are rebuilt only from nbembed's own estimators
(:data:`nbembed.methods.registry.REGISTRY`). The document names its format
and version (:data:`FORMAT_NAME`, :data:`FORMAT_VERSION`); a file that is not
such a session, is damaged, or does not fit the data it is opened with raises
:class:`SessionError` and builds nothing.

What is not kept: the undo history (a restored Explorer starts with nothing
to undo), the optimizer's momentum and step sizes (they start afresh at the
saved positions, as after :meth:`~nbembed.widget.Explorer.add_points`), the
cost history and read-outs (they fill in at the next record), a cannot-link
selection A waiting for its second half, and changes still queued for the run
at the moment of saving (a slider moved within the last step).
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import math
import numbers
import os
import pathlib
import warnings
import weakref
import zipfile
import zlib

import numpy as np
import scipy.sparse as sp

from .. import _config
from .._estimator import Estimator
from ..annotations import Annotations
from ..methods.registry import BY_NAME, REGISTRY
from .growing import continue_like
from .traits import UINT8, decode
from .view import VIEWS

#: The ``format`` entry of every session document.
FORMAT_NAME = "nbembed.ExplorerSession"
#: The ``version`` entry of the files written; files of this version and older are read.
FORMAT_VERSION = 1
#: The archive entry holding the JSON document.
DOCUMENT = "session"
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


class SessionError(ValueError):
    """A session file that cannot be opened: not a session, damaged, from a newer
    nbembed, or saved with other data than the data given."""


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
        "format": FORMAT_NAME, "version": FORMAT_VERSION, "nbembed_version": _version(),
        "n_samples": n,
        "data": _data_document(X, include_data, arrays),
        "method": method_doc,
        "run": run_doc,
        "annotations": annotations,
        "labels": _stored(arrays, "labels", labels),
        # Pins hold points at their saved positions: none without positions.
        "pinned": _stored(arrays, "pinned", pinned)
        if len(pinned) and run_doc is not None else None,
        "selection": _stored(arrays, "selection", selection),
        "display": display,
    }
    return _write(path, document, arrays)


def _run_document(explorer, arrays):
    """The run's state (positions, schedule, sliders), or None before there is a run."""
    run = explorer.run
    restoring = _RESTORING.get(explorer)
    if run is None and restoring is not None:
        # Opened from a session, its run still being prepared (or just prepared and
        # not yet handed over): save the state it starts from.
        run = restoring.run()
        if run is None and restoring.state is not None:
            return _pending_run_document(restoring.state, arrays)
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
        "params": {name: _number_document(value, f"live parameter {name}")
                   for name, value in params.items()},
        "schedule": {name: _number_document(value, name) for name, value in schedule.items()},
        "sliders": {name: {"slider": [_number_document(v, name) for v in p.slider],
                           "step": _number_document(p.step, name)}
                    for name, p in live.items()},
        "embedding": _stored(arrays, "run.embedding", Y),
        "anchors": _stored(arrays, "run.anchors", anchors),
        "pinned_classes": _stored(arrays, "run.pinned_classes", pinned_classes)
        if pinned_classes is not None and len(pinned_classes) else None,
    }


def _pending_run_document(state, arrays):
    """The run entry of a session whose run is still being prepared from ``state``."""
    document = dict(state["document"])
    for name in ("embedding", "anchors", "pinned_classes"):
        document[name] = _stored(arrays, f"run.{name}", state[name])
    return document


def _display_document(explorer, arrays):
    """Colourings, view, tooltips, thumbnails and the rest of what is shown."""
    colorings = []
    for number, (name, values) in enumerate(explorer._user_values.items()):
        values = np.asarray(values)
        if values.dtype.kind == "O":  # the Explorer colours mixed objects as text too
            values = values.astype(str)
        colorings.append({"name": name, "values": _stored(arrays, f"coloring.{number}", values)})
    images = None
    if explorer.image_shape:
        pixels = decode(explorer._images, UINT8).reshape(explorer._n, *explorer.image_shape)
        images = _stored(arrays, "images", pixels)
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


def _data_document(X, include_data, arrays):
    """The data's kind, shape and fingerprint, and the data themselves if asked."""
    sparse = sp.issparse(X)
    values = _canonical_data(X)
    document = {"included": include_data, "sparse": sparse, "shape": list(values.shape),
                "sha256": data_fingerprint(values)}
    if include_data:
        if sparse:
            for part in ("data", "indices", "indptr"):
                _stored(arrays, f"X.{part}", getattr(values, part))
        else:
            _stored(arrays, "X", values)
    return document


def _write(path, document, arrays):
    """Write the archive next to ``path``, then move it there in one step."""
    path = pathlib.Path(os.fspath(path))
    text = json.dumps(document, allow_nan=False)
    entries = {DOCUMENT: np.frombuffer(text.encode("utf-8"), dtype=np.uint8), **arrays}
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        with open(partial, "wb") as file:
            np.savez(file, **entries)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return path


# ------------------------------------------------------------------ the method's parameters

def method_to_document(method, arrays, prefix="method"):
    """The JSON description of an nbembed estimator and its parameters.

    Parameters
    ----------
    method : estimator
        One of :data:`nbembed.methods.registry.REGISTRY`'s classes.
    arrays : dict
        Receives the array-valued parameters (an ``init`` array, say), under
        names starting with ``prefix``; the document names them.
    prefix : str

    Returns
    -------
    dict
        ``{"name": <registry name>, "params": {...}}``, which
        :func:`method_from_document` reads back.

    Raises
    ------
    TypeError
        For another kind of method, or a parameter a session cannot store.
    """
    spec = _registered(type(method))
    if spec is None:
        known = ", ".join(spec.class_name for spec in REGISTRY)
        raise TypeError(f"a session stores nbembed's own methods ({known}) or "
                        f"method='precomputed'; this Explorer shows "
                        f"{type(method).__name__}, which it cannot rebuild.")
    params = {name: _value_document(value, arrays, f"{prefix}.{name}")
              for name, value in method.get_params(deep=False).items()}
    return {"name": spec.name, "params": params}


def method_from_document(document, arrays):
    """The estimator :func:`method_to_document` describes.

    Parameters
    ----------
    document : dict
    arrays : dict
        The arrays the document names.

    Returns
    -------
    estimator
        A new, unfitted estimator with those parameters.

    Raises
    ------
    SessionError
        For a method that is not one of nbembed's, or parameters its class
        does not take.
    """
    if not isinstance(document, dict) or set(document) != {"name", "params"} or \
            not isinstance(document["params"], dict):
        raise SessionError("the method must be an object with 'name' and 'params'.")
    spec = BY_NAME.get(document["name"])
    if spec is None:
        raise SessionError(f"the method {document['name']!r} is not one of nbembed's "
                           f"({', '.join(BY_NAME)}).")
    params = {name: _value_from_document(value, arrays)
              for name, value in document["params"].items()}
    try:
        return spec.cls(**params)
    except TypeError as err:
        raise SessionError(f"{spec.class_name} does not take the saved parameters ({err}); "
                           f"the session was saved by another version of nbembed.") from None


def _registered(cls):
    return next((spec for spec in REGISTRY if spec.cls is cls), None)


def _value_document(value, arrays, name):
    """A parameter value as JSON; arrays go to ``arrays`` under ``name``.

    Tagged objects (one key starting with "$") mark what JSON has no type for;
    dictionaries are tagged too, so that no parameter can pass for a tag.
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return _number_document(value, name)
    if isinstance(value, (list, tuple)):
        items = [_value_document(v, arrays, f"{name}.{i}") for i, v in enumerate(value)]
        return items if isinstance(value, list) else {"$tuple": items}
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise TypeError(f"{name} is a dict with keys that are not strings; a session "
                            f"cannot store it.")
        return {"$dict": {key: _value_document(v, arrays, f"{name}.{key}")
                          for key, v in value.items()}}
    if isinstance(value, np.ndarray):
        return {"$array": _stored(arrays, name, value)}
    if isinstance(value, np.random.RandomState):
        kind, keys, position, has_gauss, gauss = value.get_state()
        return {"$random_state": {"keys": _stored(arrays, f"{name}.keys", keys),
                                  "pos": int(position), "has_gauss": int(has_gauss),
                                  "cached_gaussian": float(gauss)}}
    if isinstance(value, Estimator):
        return {"$estimator": method_to_document(value, arrays, prefix=name)}
    raise TypeError(f"{name} is a {type(value).__name__}, which a session cannot store "
                    f"(it keeps numbers, strings, arrays, lists, dicts, RandomStates and "
                    f"nbembed estimators, never code).")


def _value_from_document(value, arrays):
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, list):
        return [_value_from_document(v, arrays) for v in value]
    if not isinstance(value, dict) or len(value) != 1:
        raise SessionError(f"a saved parameter value is malformed: {value!r:.80}.")
    (tag, inner), = value.items()
    if tag == "$float":
        return _number_from_document(value)
    if tag == "$tuple" and isinstance(inner, list):
        return tuple(_value_from_document(v, arrays) for v in inner)
    if tag == "$dict" and isinstance(inner, dict):
        return {key: _value_from_document(v, arrays) for key, v in inner.items()}
    if tag == "$array":
        return _array(arrays, inner).copy()
    if tag == "$random_state" and isinstance(inner, dict):
        state = np.random.RandomState()
        try:
            keys = _array(arrays, inner["keys"], kinds="u", ndim=1)
            state.set_state(("MT19937", keys, inner["pos"], inner["has_gauss"],
                             inner["cached_gaussian"]))
        except (KeyError, TypeError, ValueError) as err:
            raise SessionError(f"a saved random state is malformed ({err}).") from None
        return state
    if tag == "$estimator":
        return method_from_document(inner, arrays)
    raise SessionError(f"a saved parameter value has an unknown form {tag!r}.")


def _number_document(value, name):
    """A number (or None) as JSON: infinities and NaN, which JSON lacks, tagged."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number or None to be saved; got "
                        f"{type(value).__name__}.")
    value = float(value)
    return value if math.isfinite(value) else {"$float": repr(value)}


def _number_from_document(value):
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, dict) and set(value) == {"$float"} and \
            value["$float"] in ("inf", "-inf", "nan"):
        return float(value["$float"])
    raise SessionError(f"a saved number is malformed: {value!r:.80}.")


# ------------------------------------------------------------------ the data

def data_fingerprint(X):
    """A SHA-256 fingerprint of data: their values as float64, their shape and kind.

    Two arrays of the same values in the same order have the same
    fingerprint whatever their dtype or memory layout; a sparse matrix has
    that of its stored non-zero entries (with duplicates summed), not that
    of the same values dense.

    Parameters
    ----------
    X : array-like or scipy.sparse matrix (n_samples, n_features)

    Returns
    -------
    str
        64 hexadecimal digits.

    Raises
    ------
    TypeError
        For data that are not numeric.
    """
    values = _canonical_data(X)
    digest = hashlib.sha256()
    if sp.issparse(values):
        digest.update(b"csr" + np.asarray(values.shape, dtype="<i8").tobytes())
        for part in (values.indptr, values.indices):
            digest.update(np.ascontiguousarray(part, dtype="<i8").tobytes())
        digest.update(np.ascontiguousarray(values.data, dtype="<f8").tobytes())
    else:
        digest.update(b"dense" + np.asarray(values.shape, dtype="<i8").tobytes())
        digest.update(np.ascontiguousarray(values, dtype="<f8").tobytes())
    return digest.hexdigest()


def _canonical_data(X):
    """``X`` as float64: a C-contiguous array, or a CSR matrix with sorted
    indices, duplicates summed and no stored zeros."""
    try:
        if sp.issparse(X):
            values = sp.csr_matrix(X, dtype=np.float64, copy=True)
            values.sum_duplicates()
            values.eliminate_zeros()
            return values
        return np.ascontiguousarray(np.asarray(X, dtype=np.float64))
    except (TypeError, ValueError) as err:
        raise TypeError(f"a session needs numeric data (to store or fingerprint); got "
                        f"{type(X).__name__} ({err}).") from None


def _session_data(info, arrays, X):
    """The data to show: ``X`` checked against the saved fingerprint, or those stored
    (``info``: the document's data entry)."""
    if not isinstance(info, dict) or \
            set(info) != {"included", "sparse", "shape", "sha256"} or \
            not isinstance(info["shape"], list) or \
            not all(isinstance(d, int) and d >= 0 for d in info["shape"]):
        raise SessionError("the data entry must be an object with 'included', 'sparse', "
                           "'shape' (a list of sizes) and 'sha256'.")
    shape = tuple(info["shape"])
    if X is None:
        if not info["included"]:
            raise SessionError(f"the session was saved without its data "
                               f"(include_data=False): pass the data the Explorer showed, "
                               f"load_session(path, X=X), an array of shape {shape}.")
        if info["sparse"]:
            parts = tuple(_array(arrays, f"X.{part}", kinds=kinds, ndim=1) for part, kinds
                          in (("data", "f"), ("indices", "iu"), ("indptr", "iu")))
            try:
                X = sp.csr_matrix(parts, shape=shape)
            except ValueError as err:
                raise SessionError(f"the stored sparse data are inconsistent ({err}).") \
                    from None
        else:
            X = _array(arrays, "X", kinds="f", shape=shape)
        where = "the data stored in the session"
    else:
        where = "X"
    if sp.issparse(X) != bool(info["sparse"]):
        kind = "a scipy.sparse matrix" if info["sparse"] else "a dense array"
        raise SessionError(f"the session was saved with {kind} as data; {where} is "
                           f"{'sparse' if sp.issparse(X) else 'dense'}.")
    values = _canonical_data(X)
    if values.shape != shape:
        raise SessionError(f"the session was saved with data of shape {shape}; {where} has "
                           f"shape {values.shape}.")
    if data_fingerprint(values) != info["sha256"]:
        raise SessionError(f"{where} is not the data the session was saved with: it has the "
                           f"same shape {shape} but other values (or the same rows in another "
                           f"order), so the saved positions, annotations and pins would "
                           f"belong to other points. Pass the data the Explorer showed.")
    return X


# ------------------------------------------------------------------ loading

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


def read_session(path):
    """The JSON document and the arrays of a session file, checked to be one.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    document : dict
    arrays : dict of str to ndarray

    Raises
    ------
    SessionError
        If the file is not a session archive, is damaged or truncated, or
        was written by a newer nbembed.
    """
    name = os.fspath(path)
    if not os.path.isfile(name):
        raise FileNotFoundError(f"no session file {name}.")
    try:
        archive = np.load(name, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
        raise SessionError(f"{name} is not an nbembed session file, or it is truncated "
                           f"({err}).") from None
    if not hasattr(archive, "files"):
        raise SessionError(f"{name} is not an nbembed session file: it holds one array, not "
                           f"an archive.")
    try:
        with archive:
            arrays = {key: archive[key] for key in archive.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as err:
        raise SessionError(f"{name} is damaged: an entry cannot be read ({err}).") from None
    raw = arrays.pop(DOCUMENT, None)
    if raw is None or raw.dtype != np.uint8 or raw.ndim != 1:
        raise SessionError(f"{name} is not an nbembed session file: it has no "
                           f"{DOCUMENT!r} entry.")
    try:
        document = json.loads(raw.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise SessionError(f"{name} is damaged: its session document is not JSON "
                           f"({err}).") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT_NAME:
        raise SessionError(f"{name} is not an nbembed session file (its document's format "
                           f"is not {FORMAT_NAME!r}).")
    version = document.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise SessionError(f"{name} is damaged: its format version is {version!r}.")
    if version > FORMAT_VERSION:
        saved_by = document.get("nbembed_version", "a newer version")
        raise SessionError(f"{name} was written by nbembed {saved_by} in session format "
                           f"version {version}; this nbembed ({_version()}) reads versions up "
                           f"to {FORMAT_VERSION}. Upgrade nbembed to open it.")
    return document, arrays


def _restored_parts(document, arrays, X):
    """Everything the Explorer is built from, checked before anything is built."""
    n = document.get("n_samples")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise SessionError(f"n_samples must be a positive integer; got {n!r}.")
    # Outside the checks of the document below: a TypeError here is about the X given.
    X = _session_data(document.get("data"), arrays, X)
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
            labels = _array(arrays, document["labels"], kinds="iu", shape=(n,))
        if run is not None:
            _check_dimensions(method, run)
        if document["pinned"] is not None:
            if run is None:
                raise SessionError("pinned points need the saved positions, which the "
                                   "session does not hold.")
            run["pinned"] = _indices(arrays, document["pinned"], n, "pinned")
        selection = _indices(arrays, document["selection"], n, "selection")
        display = _display(document["display"], arrays, n)
    except KeyError as err:
        raise SessionError(f"the session document lacks the entry {err}.") from None
    except (TypeError, AttributeError) as err:
        raise SessionError(f"the session document is malformed ({err}).") from None
    return dict(X=X, method=method, run=run, annotations=annotations, labels=labels,
                selection=selection, display=display)


def _restored_explorer(parts, explorer_kwargs):
    from .explorer import Explorer

    method, run, display = parts["method"], parts["run"], parts["display"]
    restoring = None
    if run is not None:
        restoring = _start_from_saved_state(method, run)
        status = run["status"]
    else:
        status = "running"
    kwargs = dict(view=display["view"], frame_rate=display["frame_rate"],
                  extra_iterations=display["extra_iterations"], autostart=status in STARTED)
    kwargs.update(explorer_kwargs)
    explorer = Explorer(parts["X"], method=method, labels=parts["labels"],
                        annotations=parts["annotations"], data=display["colorings"] or None,
                        hover_text=display["hover_text"], images=display["images"], **kwargs)
    if restoring is not None:
        _RESTORING[explorer] = restoring
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


class _Restoring:
    """An opened session's run state until its run is prepared, then (weakly) that run."""

    def __init__(self, state):
        self.state = state
        self.run = lambda: None


#: Explorer -> its :class:`_Restoring`, for Explorers opened from a session.
_RESTORING = weakref.WeakKeyDictionary()


def _start_from_saved_state(method, state):
    """Make the Explorer's first ``method.prepare`` start the run at the saved state.

    The Explorer prepares its run in its worker thread as it is made; this
    replaces ``prepare`` on this one estimator for that one call, which
    passes the saved positions as ``init`` (and Parametric Embedding's class
    positions as ``class_init``) and then moves the new run to the saved point
    of its schedule. A later restart calls the class's own ``prepare`` again.

    Returns
    -------
    _Restoring
        The state until the run is made, then the run.
    """
    own_prepare = type(method).prepare
    takes_class_init = "class_init" in inspect.signature(own_prepare).parameters
    restoring = _Restoring(state)

    def prepare(X, y=None, annotations=None, init=None):
        try:
            extra = {}
            if state["anchors"] is not None and takes_class_init:
                extra["class_init"] = state["anchors"]
            run = own_prepare(method, X, y, annotations=annotations, init=state["embedding"],
                              **extra)
            _continue_saved_run(run, state)
        finally:
            del method.prepare  # the estimator is itself again (and pickles)
        restoring.run = weakref.ref(run)
        restoring.state = None
        return run

    method.prepare = prepare
    return restoring


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


# ------------------------------------------------------------------ checks of the document

def _run_state(document, arrays, n):
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
        schedule[name] = _number_from_document(value)
    sliders = {}
    for name, slider in _mapping(document["sliders"], "sliders").items():
        if not isinstance(slider, dict) or set(slider) != {"slider", "step"} or \
                not isinstance(slider["slider"], list) or len(slider["slider"]) != 2:
            raise SessionError(f"the slider of {name!r} is malformed.")
        sliders[name] = {"slider": [_finite(v, name) for v in slider["slider"]],
                         "step": _finite(slider["step"], name)}
    embedding = _array(arrays, document["embedding"], kinds="f", ndim=2)
    if embedding.shape[0] != n or not np.all(np.isfinite(embedding)):
        raise SessionError(f"the saved positions must be finite, one row per point ({n}); "
                           f"got shape {embedding.shape}.")
    anchors = None
    if document["anchors"] is not None:
        anchors = _array(arrays, document["anchors"], kinds="f", ndim=2)
        if anchors.shape[1] != embedding.shape[1] or not np.all(np.isfinite(anchors)):
            raise SessionError("the saved anchors must be finite positions of the embedding's "
                               "dimension.")
    pinned_classes = None
    if document["pinned_classes"] is not None:
        if anchors is None:
            raise SessionError("pinned classes need the saved class positions.")
        pinned_classes = _indices(arrays, document["pinned_classes"], len(anchors),
                                  "pinned classes")
    return {"status": document["status"], "iteration": iteration,
            "converged": document["converged"],
            "params": {name: _number_from_document(value)
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
    keys = {"color_by", "colorings", "view", "frame_rate", "extra_iterations", "show_forces",
            "show_neighbours", "hover_text", "images"}
    if not isinstance(document, dict) or set(document) != keys:
        raise SessionError(f"the display entry must have the keys {sorted(keys)}.")
    colorings = {}
    for entry in document["colorings"]:
        if not isinstance(entry, dict) or set(entry) != {"name", "values"} or \
                not isinstance(entry["name"], str):
            raise SessionError("each colouring must be an object with 'name' and 'values'.")
        colorings[entry["name"]] = _array(arrays, entry["values"], kinds="biufUS", shape=(n,))
    hover_text = document["hover_text"]
    if hover_text is not None and (not isinstance(hover_text, list) or len(hover_text) != n
                                   or not all(isinstance(t, str) for t in hover_text)):
        raise SessionError(f"hover_text must be a list of {n} strings.")
    images = None
    if document["images"] is not None:
        images = _array(arrays, document["images"], kinds="u")
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
    try:
        annotations = Annotations.from_json(json.dumps(document, allow_nan=False))
    except (TypeError, ValueError) as err:
        raise SessionError(f"its annotations cannot be read ({err}).") from None
    if annotations.n_samples != n:
        raise SessionError(f"its annotations are of {annotations.n_samples} points; the "
                           f"session of {n}.")
    return annotations


def _array(arrays, key, *, kinds=None, ndim=None, shape=None):
    """The stored array ``key``, checked."""
    if not isinstance(key, str) or key not in arrays:
        raise SessionError(f"the session names an array {key!r} that the file does not hold "
                           f"(the file is incomplete).")
    array = arrays[key]
    if kinds is not None and array.dtype.kind not in kinds:
        raise SessionError(f"the array {key!r} has dtype {array.dtype}; expected "
                           f"{' or '.join(_KIND_NAMES[k] for k in kinds)}.")
    if ndim is not None and array.ndim != ndim:
        raise SessionError(f"the array {key!r} has {array.ndim} dimension(s); expected {ndim}.")
    if shape is not None and array.shape != tuple(shape):
        raise SessionError(f"the array {key!r} has shape {array.shape}; expected "
                           f"{tuple(shape)}.")
    return array


_KIND_NAMES = {"b": "booleans", "i": "integers", "u": "unsigned integers", "f": "floats",
               "U": "text", "S": "bytes"}


def _indices(arrays, key, n, what):
    indices = _array(arrays, key, kinds="iu", ndim=1).astype(np.int64)
    if indices.size and (indices.min() < 0 or indices.max() >= n or
                         np.unique(indices).size != indices.size):
        raise SessionError(f"the saved {what} must be distinct point indices below {n}.")
    return indices


def _mapping(value, what):
    if not isinstance(value, dict):
        raise SessionError(f"the run's {what} must be an object.")
    return value


def _finite(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not math.isfinite(value):
        raise SessionError(f"the slider of {name!r} must hold finite numbers.")
    return float(value)


# ------------------------------------------------------------------ small helpers

def _stored(arrays, key, value):
    """Put ``value`` (an array, or None) into ``arrays`` under ``key``; return the key."""
    if value is None:
        return None
    array = np.asarray(value)
    if array.dtype.kind not in "biufUS":
        raise TypeError(f"{key} holds {array.dtype} values, which a session cannot store "
                        f"without pickling.")
    arrays[key] = array
    return key


def _is_precomputed(method):
    from .precomputed import Precomputed
    return isinstance(method, Precomputed)


def _check_flag(value, name):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False; got {value!r}.")
    return bool(value)


def _version():
    from .. import __version__
    return __version__
