"""Reading and writing annotations as JSON.

The text is one JSON object: the format's name and version, the number of
points and classes, the class names, the labelled points with their
probability rows and confidences, and every constraint as it was added. Floats
are written with their shortest exact repr, so that reading the text gives the
same annotations; the undo history is not written.
"""

from __future__ import annotations

import json

import numpy as np

from .._validation import check_number
from .validation import check_confidence, check_indices, check_probabilities

#: The ``format`` entry of every file.
FORMAT_NAME = "nbembed.Annotations"
#: The ``version`` entry of the files written; the only one read.
FORMAT_VERSION = 1

#: The largest annotations a JSON file may describe: the text is small while
#: what it describes is allocated, so a short file must not claim gigabytes.
MAX_SAMPLES = 10_000_000
#: The largest n_samples x n_classes (the label probabilities, 8 bytes each).
MAX_LABEL_CELLS = 50_000_000

_KEYS = {"format", "version", "n_samples", "n_classes", "n_classes_fixed", "class_names",
         "labels", "must_link_groups", "must_link_pairs", "cannot_link_groups",
         "cannot_link_pairs"}
#: Keys a file may have besides: ``pinned``, the points the Explorer held and
#: their positions (read by :mod:`nbembed.widget.exchange`; not annotations).
_OPTIONAL_KEYS = {"pinned"}


def to_json(ann):
    """The JSON text of some annotations, as :meth:`nbembed.Annotations.to_json` writes it.

    Parameters
    ----------
    ann : Annotations

    Returns
    -------
    str
    """
    rows = np.flatnonzero(ann._conf > 0)
    data = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "n_samples": ann._n,
        "n_classes": ann.n_classes,
        "n_classes_fixed": ann._fixed,
        "class_names": ann.class_names,
        "labels": {"indices": rows.tolist(), "probabilities": ann._soft[rows].tolist(),
                   "confidence": ann._conf[rows].tolist()},
        "must_link_groups": [g.tolist() for g in ann._must_link_groups],
        "must_link_pairs": [p.tolist() for p in ann._must_link_pairs],
        "cannot_link_groups": [[a.tolist(), b.tolist()] for a, b in ann._cannot_link_groups],
        "cannot_link_pairs": [p.tolist() for p in ann._cannot_link_pairs],
    }
    return json.dumps(data, allow_nan=False)


def from_json(cls, s):
    """Annotations read from JSON text, as :meth:`nbembed.Annotations.from_json` reads them.

    Parameters
    ----------
    cls : type
        :class:`~nbembed.Annotations` or a subclass of it.
    s : str
        The JSON text.

    Returns
    -------
    cls
        With an empty undo history.

    Raises
    ------
    ValueError
        If ``s`` is not valid JSON of this format and version, holds
        invalid annotations, or describes more than ``MAX_SAMPLES`` points
        or ``MAX_LABEL_CELLS`` label probabilities.
    """
    try:
        data = json.loads(s)
    except RecursionError:
        raise ValueError("cannot read annotations: the JSON is nested too deeply to be "
                         "annotations.") from None
    except (TypeError, ValueError) as err:
        raise ValueError(f"cannot read annotations: not valid JSON ({err}).") from err
    if not isinstance(data, dict) or data.get("format") != FORMAT_NAME:
        raise ValueError(f"cannot read annotations: not a JSON object with "
                         f"format {FORMAT_NAME!r}.")
    if data.get("version") != FORMAT_VERSION:
        raise ValueError(f"cannot read annotations: format version "
                         f"{data.get('version')!r} is not supported (expected "
                         f"{FORMAT_VERSION}).")
    if not _KEYS <= set(data) <= _KEYS | _OPTIONAL_KEYS:
        problems = [f"{what} keys {sorted(keys)}" for what, keys in
                    (("missing", _KEYS - set(data)),
                     ("unknown", set(data) - _KEYS - _OPTIONAL_KEYS))
                    if keys]
        raise ValueError(f"cannot read annotations: {' and '.join(problems)}.")
    try:
        return _from_dict(cls, data)
    except (TypeError, ValueError) as err:
        raise ValueError(f"cannot read annotations: {err}") from err


def _from_dict(cls, data):
    """Annotations of class ``cls`` from the decoded JSON object ``data``."""
    if not isinstance(data["n_classes_fixed"], bool):
        raise TypeError("n_classes_fixed must be true or false.")
    n_samples = check_number(data["n_samples"], "n_samples", low=1, high=MAX_SAMPLES,
                             integer=True)
    n_classes = check_number(data["n_classes"], "n_classes", low=0, integer=True)
    if n_samples * n_classes > MAX_LABEL_CELLS:
        raise ValueError(f"n_samples x n_classes = {n_samples} x {n_classes} exceeds "
                         f"{MAX_LABEL_CELLS:.0e} label probabilities; such a file is not "
                         f"read (build the Annotations in Python instead).")
    if not isinstance(data["class_names"], list) or len(data["class_names"]) != n_classes:
        raise ValueError(f"class_names must be a list of n_classes = {n_classes} names.")
    ann = cls(n_samples, n_classes if data["n_classes_fixed"] else None,
              data["class_names"])
    labels = data["labels"]
    if not isinstance(labels, dict) or set(labels) != {"indices", "probabilities",
                                                       "confidence"}:
        raise ValueError("labels must be an object with keys 'indices', 'probabilities' "
                         "and 'confidence'.")
    if labels["indices"] or labels["probabilities"] or labels["confidence"]:
        rows = check_indices(labels["indices"], ann.n_samples, "labels.indices")
        if np.any(rows[1:] <= rows[:-1]):
            raise ValueError("labels.indices must be increasing without duplicates.")
        if n_classes == 0:
            raise ValueError("labels are given but there are no classes.")
        probs = np.asarray(labels["probabilities"])
        if probs.ndim != 2 or probs.shape[1] != n_classes:
            raise ValueError(f"labels.probabilities must have shape ({len(rows)}, "
                             f"{n_classes}); got {probs.shape}.")
        probs = check_probabilities(probs, len(rows), ann.n_classes, ann._fixed,
                                    renormalize=False)
        conf = [check_confidence(c) for c in labels["confidence"]]
        if len(conf) != len(rows):
            raise ValueError(f"labels.confidence needs {len(rows)} values; got "
                             f"{len(conf)}.")
        ann._soft[rows] = probs
        ann._conf[rows] = conf
    groups = [ann._checked_group(group) for group in _json_list(data, "must_link_groups")]
    selections = []
    for item in _json_list(data, "cannot_link_groups"):
        if not isinstance(item, list) or len(item) != 2:
            raise ValueError("each entry of cannot_link_groups must be a list of two "
                             "selections.")
        selections.append(ann._checked_selections(*item))
    ann._read_groups(groups, selections)
    for pairs in _json_list(data, "must_link_pairs"):
        ann.add_must_link_pairs(pairs)
    for pairs in _json_list(data, "cannot_link_pairs"):
        ann.add_cannot_link_pairs(pairs)
    ann._forget_history()
    return ann


def _json_list(data, key):
    if not isinstance(data[key], list):
        raise ValueError(f"{key} must be a list.")
    return data[key]
