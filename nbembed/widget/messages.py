"""Checks of the custom messages the browser sends to the Explorer.

Every message is a JSON object with a ``"type"``; :func:`parse` returns the
method name and keyword arguments of the :class:`~nbembed.widget.Explorer`
call it stands for, or raises :class:`MessageError` with the reason, so the
widget can ignore it with a warning instead of failing.

======================  ====================================================
type                    fields
======================  ====================================================
``pause``               none
``resume``              none
``restart``             none
``undo``                none
``redo``                none
``cancel_pending``      none (forget the stored cannot-link selection A)
``export_annotations``  none (Python answers with a message of type
                        ``annotations_json``: ``text``, ``filename``)
``import_annotations``  ``text``: the content of a JSON file
``step``                ``n``: iterations to do while paused (default 1)
``toggle_pins``         pin the selection, or unpin it if all pinned: one
                        binary buffer of uint32 indices (the selection) or
                        none (use the selection Python holds)
``unpin_all``           none
``drawn``               ``frame``: the newest ``frame_id`` the page has drawn
                        (paces the frames, :mod:`~nbembed.widget.pacing`)
``drop``                ``indices`` (list of int), ``positions`` (one [x, y]
                        per index, in the frame's normalized coordinates),
                        ``frame`` (the ``frame_id`` the browser drew)
``apply``               ``mode`` (``soft_label``, ``must_link``,
                        ``cannot_link``), ``label`` (class index, or
                        ``"__new__"`` with ``new_class``), ``confidence`` in
                        (0, 1]; one binary buffer of uint32 indices (the
                        selection) or none (use the selection Python holds)
======================  ====================================================

Threads: functions of their arguments, without state of their own; the
browser's messages are parsed in the kernel's main thread.
"""

from __future__ import annotations

import math
import numbers

from .annotating import MODES
from .traits import decode_selection

SIMPLE = {"pause": "pause", "resume": "resume", "restart": "restart", "undo": "undo",
          "redo": "redo", "cancel_pending": "cancel_pending", "export_annotations": "send_annotations",
          "unpin_all": "unpin_all", "place_rest": "place_rest"}
NEW_CLASS = "__new__"


class MessageError(ValueError):
    """A message from the browser that cannot be applied."""


def _integer(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise MessageError(f"{name} must be an integer, got {value!r}.")
    return int(value)


def _confidence(value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not math.isfinite(value) or not 0 < value <= 1:
        raise MessageError(f"confidence must be a number in (0, 1], got {value!r}.")
    return float(value)


def _drop(content):
    """The arguments of a ``drop``: indices, positions (m, 2) and the frame, checked
    as JSON values here and against the points by :meth:`Explorer.drop`."""
    indices, positions = content.get("indices"), content.get("positions")
    if not isinstance(indices, list) or not indices:
        raise MessageError("a drop needs a non-empty list of indices.")
    indices = [_integer(i, "an index") for i in indices]
    if not isinstance(positions, list) or len(positions) != len(indices):
        raise MessageError(f"a drop needs one position per index ({len(indices)}); got "
                           f"{len(positions) if isinstance(positions, list) else positions!r}.")
    for xy in positions:
        if not isinstance(xy, list) or len(xy) != 2 or not all(
                isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)
                for v in xy):
            raise MessageError(f"a dropped position must be two finite numbers; got {xy!r}.")
    return {"indices": indices, "positions": [[float(v) for v in xy] for xy in positions],
            "frame": _integer(content.get("frame"), "frame")}


def _selection(buffers):
    """The selection a message carries as its one buffer: {"indices": ...}, or {}
    when it carries none (Python's own selection is meant)."""
    buffers = list(buffers or ())
    if len(buffers) > 1:
        raise MessageError(f"expected at most one buffer (the selection), got {len(buffers)}.")
    if not buffers:
        return {}
    try:
        return {"indices": decode_selection(buffers[0])}
    except (TypeError, ValueError) as err:
        raise MessageError(str(err)) from None


def parse(content, buffers=()):
    """The Explorer call a browser message asks for.

    Parameters
    ----------
    content : object
        The message's JSON content.
    buffers : list of memoryview
        Its binary buffers.

    Returns
    -------
    method : str
    kwargs : dict

    Raises
    ------
    MessageError
    """
    if not isinstance(content, dict):
        raise MessageError(f"expected a JSON object, got {type(content).__name__}.")
    kind = content.get("type")
    if not isinstance(kind, str) or (kind not in SIMPLE and kind not in (
            "apply", "step", "import_annotations", "drop", "toggle_pins", "drawn")):
        raise MessageError(f"unknown message type {kind!r}.")
    if kind in SIMPLE:
        return SIMPLE[kind], {}
    if kind == "toggle_pins":
        return "toggle_pins", _selection(buffers)
    if kind == "drop":
        return "drop", _drop(content)
    if kind == "drawn":
        frame = _integer(content.get("frame"), "frame")
        if frame < 0:
            raise MessageError(f"frame must be >= 0; got {frame}.")
        return "_page_drew", {"frame": frame}
    if kind == "step":
        return "step", {"n": _integer(content.get("n", 1), "n")}
    if kind == "import_annotations":
        text = content.get("text")
        if not isinstance(text, str):
            raise MessageError(f"import_annotations needs the file's text, got "
                               f"{type(text).__name__}.")
        return "import_annotations", {"text": text}
    mode = content.get("mode")
    if mode not in MODES:
        raise MessageError(f"mode must be one of {', '.join(MODES)}; got {mode!r}.")
    kwargs = {"mode": mode, **_selection(buffers)}
    if mode == "soft_label":
        label = content.get("label")
        if label == NEW_CLASS:
            name = content.get("new_class")
            if not isinstance(name, str) or not name.strip():
                raise MessageError("a new class needs a name (new_class).")
            kwargs["new_class"] = name.strip()
        else:
            kwargs["label"] = _integer(label, "label")
        kwargs["confidence"] = _confidence(content.get("confidence", 1.0))
    return "apply", kwargs
