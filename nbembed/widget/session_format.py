"""The session file: an ``.npz`` archive of plain arrays and one JSON document.

An Explorer session (:mod:`nbembed.widget.session`) is one ``.npz`` archive
(:func:`numpy.savez`) whose entry :data:`DOCUMENT` holds a JSON document
(UTF-8 bytes) that names the other entries, plain arrays. This module holds
what concerns the file rather than the Explorer:

- writing it atomically (:func:`write_session`) and reading it back checked
  to be a session of a version this nbembed reads (:func:`read_session`,
  :data:`FORMAT_NAME`, :data:`FORMAT_VERSION`);
- an nbembed estimator and its parameters as part of the document and back
  (:func:`method_to_document`, :func:`method_from_document`), numbers that
  JSON lacks (:func:`number_to_document`);
- the data: their fingerprint (:func:`data_fingerprint`), stored or only
  referred to (:func:`data_to_document`), and checked when opened
  (:func:`data_from_document`);
- the arrays the document names, put in and taken out checked
  (:func:`put_array`, :func:`get_array`, :func:`get_indices`).

A file holds no pickle and is read with ``allow_pickle=False``, so reading
one cannot run code; anything that does not fit raises :class:`SessionError`.

Threads: functions of their arguments and the file they are given; no state of
their own.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import os
import pathlib
import zipfile
import zlib

import numpy as np
import scipy.sparse as sp

from .._estimator import Estimator
from ..methods.registry import BY_NAME, REGISTRY

#: The ``format`` entry of every session document.
FORMAT_NAME = "nbembed.ExplorerSession"
#: The ``version`` entry of the files written; files of this version and older are read.
FORMAT_VERSION = 1
#: The archive entry holding the JSON document.
DOCUMENT = "session"

#: What each dtype kind of a stored array is called in messages.
_KIND_NAMES = {"b": "booleans", "i": "integers", "u": "unsigned integers", "f": "floats",
               "U": "text", "S": "bytes"}


class SessionError(ValueError):
    """A session file that cannot be opened: not a session, damaged, from a newer
    nbembed, or saved with other data than the data given."""


# ------------------------------------------------------------------ the file

def write_session(path, document, arrays):
    """Write a session file: the document, headed by the format, and its arrays.

    The archive is written next to ``path`` and then moved there in one
    step, so an existing file is replaced only by a complete one.

    Parameters
    ----------
    path : str or path-like
    document : dict
        JSON-compatible (no NaN or infinity); its entries follow ``format``,
        ``version`` and ``nbembed_version``.
    arrays : dict of str to ndarray
        The arrays the document names (see :func:`put_array`).

    Returns
    -------
    pathlib.Path
        The file written.
    """
    path = pathlib.Path(os.fspath(path))
    header = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "nbembed_version": _version()}
    text = json.dumps({**header, **document}, allow_nan=False)
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


def _version():
    from .. import __version__
    return __version__


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
    spec = next((spec for spec in REGISTRY if spec.cls is type(method)), None)
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


def _value_document(value, arrays, name):
    """A parameter value as JSON; arrays go to ``arrays`` under ``name``.

    Tagged objects (one key starting with "$") mark what JSON has no type for;
    dictionaries are tagged too, so that no parameter can pass for a tag.
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Real):
        return number_to_document(value, name)
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
        return {"$array": put_array(arrays, name, value)}
    if isinstance(value, np.random.RandomState):
        kind, keys, position, has_gauss, gauss = value.get_state()
        return {"$random_state": {"keys": put_array(arrays, f"{name}.keys", keys),
                                  "pos": int(position), "has_gauss": int(has_gauss),
                                  "cached_gaussian": float(gauss)}}
    if isinstance(value, Estimator):
        return {"$estimator": method_to_document(value, arrays, prefix=name)}
    raise TypeError(f"{name} is a {type(value).__name__}, which a session cannot store "
                    f"(it keeps numbers, strings, arrays, lists, dicts, RandomStates and "
                    f"nbembed estimators, never code).")


def _value_from_document(value, arrays):
    if value is None or isinstance(value, (bool, str, int, float)):
        return value
    if isinstance(value, list):
        return [_value_from_document(v, arrays) for v in value]
    if not isinstance(value, dict) or len(value) != 1:
        raise SessionError(f"a saved parameter value is malformed: {value!r:.80}.")
    (tag, inner), = value.items()
    if tag == "$float":
        return number_from_document(value)
    if tag == "$tuple" and isinstance(inner, list):
        return tuple(_value_from_document(v, arrays) for v in inner)
    if tag == "$dict" and isinstance(inner, dict):
        return {key: _value_from_document(v, arrays) for key, v in inner.items()}
    if tag == "$array":
        return get_array(arrays, inner).copy()
    if tag == "$random_state" and isinstance(inner, dict):
        state = np.random.RandomState()
        try:
            keys = get_array(arrays, inner["keys"], kinds="u", ndim=1)
            state.set_state(("MT19937", keys, inner["pos"], inner["has_gauss"],
                             inner["cached_gaussian"]))
        except (KeyError, TypeError, ValueError) as err:
            raise SessionError(f"a saved random state is malformed ({err}).") from None
        return state
    if tag == "$estimator":
        return method_from_document(inner, arrays)
    raise SessionError(f"a saved parameter value has an unknown form {tag!r}.")


def number_to_document(value, name):
    """A number (or None) as JSON: infinities and NaN, which JSON lacks, tagged.

    Parameters
    ----------
    value : int, float, bool or None
    name : str
        What the value is, for the error message.

    Returns
    -------
    int, float, bool, None or dict
        ``{"$float": "inf"}`` (or ``"-inf"``, ``"nan"``) for a number that
        is not finite; :func:`number_from_document` reads it back.

    Raises
    ------
    TypeError
        If ``value`` is not a number.
    """
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number or None to be saved; got "
                        f"{type(value).__name__}.")
    value = float(value)
    return value if math.isfinite(value) else {"$float": repr(value)}


def number_from_document(value):
    """The number :func:`number_to_document` wrote.

    Raises
    ------
    SessionError
        For anything else.
    """
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


def data_to_document(X, include_data, arrays):
    """The data entry of a session: the data's kind, shape and fingerprint, and
    the data themselves (into ``arrays``) with ``include_data``.

    Parameters
    ----------
    X : array-like or scipy.sparse matrix (n_samples, n_features)
    include_data : bool
    arrays : dict
        Receives the data (as float64, sparse ones in CSR parts) with ``include_data``.

    Returns
    -------
    dict
        What :func:`data_from_document` checks the data against.

    Raises
    ------
    TypeError
        For data that are not numeric.
    """
    sparse = sp.issparse(X)
    values = _canonical_data(X)
    document = {"included": include_data, "sparse": sparse, "shape": list(values.shape),
                "sha256": data_fingerprint(values)}
    if include_data:
        if sparse:
            for part in ("data", "indices", "indptr"):
                put_array(arrays, f"X.{part}", getattr(values, part))
        else:
            put_array(arrays, "X", values)
    return document


def data_from_document(info, arrays, X):
    """The data a session is opened with: ``X`` checked against the saved
    fingerprint, or (without ``X``) those stored.

    Parameters
    ----------
    info : dict
        The data entry (:func:`data_to_document`).
    arrays : dict
    X : array-like, scipy.sparse matrix or None

    Returns
    -------
    array-like or scipy.sparse matrix
        ``X`` as given, or the stored data.

    Raises
    ------
    SessionError
        If ``X`` is not the saved data (another kind, shape or values), or
        it is needed and not given, or the stored data are damaged.
    TypeError
        If ``X`` is not numeric.
    """
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
            parts = tuple(get_array(arrays, f"X.{part}", kinds=kinds, ndim=1) for part, kinds
                          in (("data", "f"), ("indices", "iu"), ("indptr", "iu")))
            try:
                X = sp.csr_matrix(parts, shape=shape)
            except ValueError as err:
                raise SessionError(f"the stored sparse data are inconsistent ({err}).") \
                    from None
        else:
            X = get_array(arrays, "X", kinds="f", shape=shape)
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


# ------------------------------------------------------------------ the arrays

def put_array(arrays, key, value):
    """Put ``value`` (an array, or None) into ``arrays`` under ``key``.

    Returns
    -------
    str or None
        ``key`` (None for None), the name the document gives the array.

    Raises
    ------
    TypeError
        For objects, which only a pickle could store.
    """
    if value is None:
        return None
    array = np.asarray(value)
    if array.dtype.kind not in _KIND_NAMES:
        raise TypeError(f"{key} holds {array.dtype} values, which a session cannot store "
                        f"without pickling.")
    arrays[key] = array
    return key


def get_array(arrays, key, *, kinds=None, ndim=None, shape=None):
    """The stored array the document names ``key``, checked.

    Parameters
    ----------
    arrays : dict of str to ndarray
    key : str
    kinds : str, optional
        The dtype kinds accepted (``"iu"``: integers).
    ndim : int, optional
    shape : tuple of int, optional

    Raises
    ------
    SessionError
        If the file does not hold it, or it has another kind, dimension or shape.
    """
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


def get_indices(arrays, key, n, what):
    """The stored array ``key`` as distinct indices below ``n`` (int64), in their order.

    Raises
    ------
    SessionError
        For other values; ``what`` names them in the message.
    """
    indices = get_array(arrays, key, kinds="iu", ndim=1).astype(np.int64)
    if indices.size and (indices.min() < 0 or indices.max() >= n or
                         np.unique(indices).size != indices.size):
        raise SessionError(f"the saved {what} must be distinct point indices below {n}.")
    return indices
