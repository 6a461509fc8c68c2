"""Annotations to and from files in the browser: the Explorer's Export and Import buttons.

Export sends ``ex.annotations.to_json()`` to the browser, which offers it as a
download. Import gets the text of a file the user chose, reads it with
:meth:`~nbembed.Annotations.from_json` and merges it into ``ex.annotations``
(:meth:`~nbembed.Annotations.merge`) as one action that Undo reverts. A file
that is not valid annotations of these points is refused with a notice and
changes nothing.

The pinned points travel in the same file: the key ``pinned`` holds their
indices and positions in embedding coordinates (absent when none is pinned;
:meth:`~nbembed.Annotations.from_json` ignores it). Importing pins them there,
so a session comes back as it was; files without the key import as before.

Threads: Export and Import run on the kernel's main thread, as the browser's
messages; they read and change the annotations under the Explorer's
``_ann_lock``, and the pins through the worker (:mod:`~nbembed.widget.pins`).
"""

from __future__ import annotations

import json

import traitlets

from ..annotations import Annotations
from .annotating import describe

#: Most characters of an imported file (a JSON of 10^6 labelled points is about 60 MB).
MAX_IMPORT_CHARS = 256 * 2**20
#: Name the browser proposes for an exported file.
EXPORT_FILENAME = "annotations.json"


class AnnotationExchange(traitlets.HasTraits):
    """The export and import part of :class:`~nbembed.widget.Explorer` (a mixin)."""

    def annotations_json(self):
        """The text the Export button downloads: ``annotations.to_json()``, with the
        pinned points and their positions under ``pinned`` when any are pinned.

        :meth:`import_annotations` reads it back; so does
        :meth:`~nbembed.Annotations.from_json` (without the pins).
        """
        return self._exported()[0]

    def _exported(self):
        """(:meth:`annotations_json`, a description of the annotations in it, the number
        of pinned points in it), from one reading of the annotations."""
        with self._ann_lock:
            text = self.annotations.to_json()
            held = describe(self.annotations)
        pins = self._pins_for_export()
        if pins is None:
            return text, held, 0
        text = json.dumps({**json.loads(text), "pinned": pins}, allow_nan=False)
        return text, held, len(pins["indices"])

    def send_annotations(self):
        """Send :meth:`annotations_json` to the browser, which downloads it as a file."""
        text, held, pinned = self._exported()
        self.send({"type": "annotations_json", "text": text, "filename": EXPORT_FILENAME})
        more = f" and {pinned} pinned point(s)" if pinned else ""
        self._warn(f"Exported {held}{more} to {EXPORT_FILENAME}.")

    def import_annotations(self, text):
        """Add the annotations in ``text`` (from :meth:`annotations_json` or
        ``Annotations.to_json``) to ``ex.annotations``.

        Classes are matched by name, labels in ``text`` replace those of the
        same points and its constraints are added, except those the
        annotations hold already (importing a file twice changes nothing the
        second time). Points pinned in the file are pinned at their positions
        there. One ``ex.undo()`` reverts the whole import, labels, constraints
        and pins.

        Raises
        ------
        TypeError
            If ``text`` is not a string.
        ValueError
            If it is not valid annotations JSON, is for another number of
            points, has more classes than the method can use, or pins that
            this method cannot hold or of the wrong shape; nothing changes.
        """
        if not isinstance(text, str):
            raise TypeError(f"the imported file must be text; got {type(text).__name__}.")
        if len(text) > MAX_IMPORT_CHARS:
            raise ValueError(f"the imported file has {len(text)} characters, more than "
                             f"{MAX_IMPORT_CHARS}; it cannot be annotations of these points.")
        imported = Annotations.from_json(text)
        pins = json.loads(text).get("pinned")
        if pins is not None:
            self._check_pins(pins)
        with self._ann_lock:
            ann = self.annotations
            if imported.n_samples != ann.n_samples:
                raise ValueError(f"the file holds annotations of {imported.n_samples} points; "
                                 f"this Explorer shows {ann.n_samples}.")
            names = set(ann.class_names) | set(imported.class_names)
            limit = self._max_classes()
            if limit is not None and len(names) > limit:
                raise ValueError(f"the file would make {len(names)} classes; the method was "
                                 f"set up for {limit}.")
        outcome = {}

        def merge():
            outcome.update(ann.merge(imported))
        if pins is None:
            with self._ann_lock:
                changed = self._log.record(merge)
        else:
            self._pin(pins["indices"], pins["positions"], annotate=merge,
                      what="import and pin")
            changed = True
        pinned = f" and pinned {len(pins['indices'])} point(s)" if pins is not None else ""
        present = (f" ({outcome['present']} constraint(s) were there already)"
                   if outcome.get("present") else "")
        if changed:
            self._warn(f"Imported {describe(imported)}{pinned}{present}; Undo reverts it.")
        else:
            self._warn(f"Nothing new imported: these annotations hold everything in the "
                       f"file already ({describe(imported)}).")
        self.update_annotations()
