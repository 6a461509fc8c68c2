"""The Explorer widget: a live scatter of a running embedding, with sliders and lasso labelling.

Python side of an anywidget. The optimizer runs in a background thread
(:class:`~nbembed.widget.worker.RunWorker`); the latest positions go to the
browser as 16-bit codes (:mod:`~nbembed.widget.traits`) at most ``frame_rate``
times a second. Sliders,
lasso selections and annotation commands come back as trait updates and
custom messages; every one of them is checked (:mod:`~nbembed.widget.messages`)
and a malformed one is ignored with a warning in the widget.

This module holds the widget's traits, its constructor and its public
methods. Sending frames (:class:`~nbembed.widget.frames.FrameStream`) and the
run's controls (:class:`~nbembed.widget.controls.LiveControls`) are mixed in;
the constructor's arguments are checked in :mod:`~nbembed.widget.arguments`.

Threads: the kernel's main thread runs the constructor, the public methods and
every message from the browser; the worker thread runs the optimizer and
reports its steps and statuses (:mod:`~nbembed.widget.frames`). Two locks
divide the state. ``_ann_lock`` holds the annotations and what is derived from
them (labels, the action log, the pending cannot-link selection, the pins);
``_sync_lock`` holds the traits, the frame state and every ``hold_sync`` block,
which ipywidgets does not guard across threads. A thread that needs both takes
``_ann_lock`` first. Neither is held while the run steps.
"""

from __future__ import annotations

import logging
import pathlib
import threading
import time

import anywidget
import numpy as np
import traitlets

from .._validation import check_labels, check_option
from ..methods.registry import default_method
from ..tl import DEFAULT_LABELS_KEY, annotations_to_obs
from . import anndata_input, annotating, arguments, messages, placing, preview
from .arrows import ForceArrows
from .marks import constraint_marks
from .controls import LiveControls
from .exchange import AnnotationExchange
from .frames import FrameStream
from .growing import GrowingPoints
from .placing import PlacingRows
from .pacing import PagePacer
from .pins import PinControls
from .precomputed import Precomputed
from .teaching import Teaching
from .traits import binary_trait, decode_selection, encode_selection
from .view import VIEWS, PlaneView
from .worker import EXTRA_ITERATIONS, RunWorker

logger = logging.getLogger("nbembed")

BUNDLE = pathlib.Path(__file__).parent / "static" / "explorer.js"
BUILD_COMMAND = "npm --prefix js ci && npm --prefix js run build"

#: Traits the browser may change; its updates of other traits of ours are ignored.
BROWSER_WRITABLE = frozenset({"_selection", "params", "color_by", "view", "frame_rate",
                              "show_forces", "show_neighbours", "hovered"})

_MISSING_BUNDLE = "// the nbembed widget bundle was not built\nexport default {};\n"


class BundleMissingError(FileNotFoundError):
    """The widget's JavaScript bundle was not built."""


def _require_bundle(cls):
    if not BUNDLE.is_file():
        raise BundleMissingError(
            f"The Explorer's JavaScript bundle {BUNDLE} is missing: this looks like a source "
            f"checkout that was not built. Build it from the repository root with\n"
            f"    {BUILD_COMMAND}\n"
            f"(needs Node.js and npm), or install the package with pip, which builds it.")
    if cls._esm is _MISSING_BUNDLE:  # built after nbembed.widget was imported
        cls._esm = BUNDLE.read_text(encoding="utf-8")


class Explorer(FrameStream, LiveControls, AnnotationExchange, PinControls, GrowingPoints,
               PlacingRows, Teaching, ForceArrows, anywidget.AnyWidget):
    """Watch an embedding form, steer it with sliders and label it with a lasso.

    Displaying the widget shows the embedding while it is optimized in a
    background thread; the cell returns at once. Sliders are built from the
    run's live parameters; lasso selections can be labelled (soft labels
    with a confidence), must-linked or cannot-linked, and the run uses the
    new annotations at its next step.

    Parameters
    ----------
    X : array-like (n_samples, n_features) or anndata.AnnData
        The data, as ``method.prepare`` accepts it; with
        ``method="precomputed"`` the embedding to show. An AnnData shows its
        cells: ``adata.X`` or ``adata.obsm[use_rep]`` (see docs/anndata.md).
    method : estimator or "precomputed", default None
        Anything with ``prepare(X, y, annotations=...)`` returning a run
        (:class:`nbembed.optim.protocol.Run`); None means ``HSSNE(alpha=1.0)``.
        "precomputed" shows ``X`` as it is (no optimization).
    labels : array-like of int (n_samples,) or str, optional
        Known classes, -1 for unlabelled points. Without ``annotations`` they
        become the starting labels of ``annotations``. With an AnnData, the
        name of an ``obs`` column (missing values for unlabelled cells).
    class_names : list of str, optional
        Names of the classes.
    annotations : Annotations, optional
        Annotations to continue from (for example
        ``Annotations.from_json(text)``); ``ex.annotations`` is this object.
    colors : array-like (n_samples,), optional
        A user array to colour by: categories for integers and strings, a
        colour ramp for floats. When given, points are coloured by it at first.
    hover_text : list of str (n_samples,), optional
        Shown in the tooltip of each point.
    images : array-like (n_samples, h, w) or (n_samples, h, w, 3), optional
        A thumbnail per point, shown in the tooltip (scaled to 0..255).
    autostart : bool, default True
        Start optimizing at once; if False the run is prepared and paused.
    view : {"first-two", "pca", "class-plane"}, default "first-two"
        How an embedding with more than two dimensions is shown
        (see :mod:`nbembed.widget.view`).
    data : pandas.DataFrame or dict of array-like, optional
        Columns to colour by: each is offered in the colour menu under its
        name (see :meth:`color_by_values`).
    color : str or list of str, optional
        Names of columns of ``data`` to colour by at first (the first one);
        with an AnnData, ``obs`` columns or genes of ``var_names``, offered
        in the colour menu under their names.
    use_rep : str, optional
        With an AnnData: the ``obsm`` entry to embed (such as "X_pca"); None
        uses ``adata.X``.
    sample : int, optional
        Run live on this many rows of ``X``, drawn at random (seeded by the
        method's ``random_state``, else 0), for data larger than a live run
        carries; every per-row argument is cut to them. :meth:`place_rest`
        (or the "Place rest" button) then places the other rows on the current
        map as a fainter layer (see :mod:`nbembed.widget.placing`).
    frame_rate : float, default 25
        Most position updates per second sent to the browser.
    extra_iterations : int, default 200
        Iterations a finished run does after each change, so sliders and
        annotations keep working once the schedule has ended.

    Attributes
    ----------
    annotations : Annotations
        The live annotations (labels and constraints made so far).
    embedding : ndarray or None
        A copy of the latest embedding.
    selection : ndarray of int
        The selected points; assignable.
    run : Run or None
        The run being optimized.
    params : dict
        Current values of the live parameters (synced with the sliders).
    status : str
        "preparing" (neighbourhoods, start, loading kernels), "compiling"
        (Numba compiles a kernel its disk cache did not have: the first use
        after installing), "running", "paused", "done" or "error".
    error : str
        The worker's error ("" when none).
    quality : dict
        Live read-outs (cost, trustworthiness, continuity, k-NN accuracy) with
        a short history; see :mod:`nbembed.widget.quality`.
    show_forces : bool
        Draw force arrows (``run.forces``) for the hovered or selected points;
        see :mod:`nbembed.widget.arrows`.
    forces : dict
        The arrows shown (empty when none).
    show_neighbours : bool
        Draw lines to the hovered point's input and output neighbours.
    pinned : ndarray of int
        The pinned points (see :meth:`pin`, :meth:`unpin` and the Move mode;
        docs/arrange.md, "In the Explorer"). :meth:`add_points` adds points
        to the running map.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from nbembed import HSSNE
    >>> from nbembed.widget import Explorer
    >>> X, y = load_digits(return_X_y=True)
    >>> ex = Explorer(X, method=HSSNE(alpha=1.0))       # doctest: +SKIP
    >>> ex                                              # doctest: +SKIP
    >>> ex.apply("soft_label", indices=[0, 10, 20], label=0)  # doctest: +SKIP
    >>> ex.pin([5], [[0.0, 0.0]])                       # doctest: +SKIP
    """

    _esm = BUNDLE if BUNDLE.is_file() else _MISSING_BUNDLE

    # positions and colours (Python -> browser)
    _positions = binary_trait()
    _anchors = binary_trait()
    _codes = binary_trait()
    _images = binary_trait()
    image_shape = traitlets.List(traitlets.Int()).tag(sync=True)
    hover_text = traitlets.List(traitlets.Unicode()).tag(sync=True)
    n_points = traitlets.Int(0).tag(sync=True)
    n_components = traitlets.Int(2).tag(sync=True)
    palette = traitlets.List(traitlets.Unicode()).tag(sync=True)
    legend = traitlets.List(traitlets.Dict()).tag(sync=True)
    legend_continuous = traitlets.Bool(False).tag(sync=True)  # a colour bar, not entries
    color_options = traitlets.List(traitlets.Unicode(), ["label"]).tag(sync=True)
    view_note = traitlets.Unicode("").tag(sync=True)
    # run state
    method_name = traitlets.Unicode("").tag(sync=True)
    param_specs = traitlets.List(traitlets.Dict()).tag(sync=True)
    annotation_kinds = traitlets.List(traitlets.Unicode()).tag(sync=True)
    iteration = traitlets.Int(0).tag(sync=True)
    cost = traitlets.Float(None, allow_none=True).tag(sync=True)
    status = traitlets.Unicode("running").tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)
    notice = traitlets.Unicode("").tag(sync=True)
    param_values = traitlets.Dict().tag(sync=True)  # in effect, "auto" ones included
    # annotations
    class_names = traitlets.List(traitlets.Unicode()).tag(sync=True)
    annotation_count = traitlets.Int(0).tag(sync=True)
    redo_count = traitlets.Int(0).tag(sync=True)  # undone actions Redo can make again
    annotation_summary = traitlets.Unicode("").tag(sync=True)
    pending_a = traitlets.Int(0).tag(sync=True)
    _marks = binary_trait()  # labels and constraints per point (nbembed.widget.marks)
    # both ways
    _selection = binary_trait()
    params = traitlets.Dict().tag(sync=True)
    color_by = traitlets.Unicode("label").tag(sync=True)
    view = traitlets.Unicode("first-two").tag(sync=True)
    frame_rate = traitlets.Float(25.0).tag(sync=True)

    def __init__(self, X, method=None, labels=None, class_names=None, annotations=None,
                 colors=None, hover_text=None, images=None, autostart=True, view="first-two",
                 *, data=None, frame_rate=25.0, extra_iterations=EXTRA_ITERATIONS,
                 color=None, use_rep=None, sample=None):
        _require_bundle(type(self))
        X, labels, class_names, data, color = anndata_input.explorer_input(
            X, use_rep=use_rep, labels=labels, class_names=class_names, color=color, data=data)
        if method is None:
            method = default_method()
        elif isinstance(method, str):
            check_option(method, "method", ("precomputed",))
            method = Precomputed()
        if not callable(getattr(method, "prepare", None)):
            raise TypeError(f"method must have a prepare(X, y, annotations=...) method returning "
                            f"a run, such as nbembed.HSSNE(); got {type(method).__name__}.")
        X_full, sample_rows = X, None
        if sample is not None:
            if annotations is not None:
                raise ValueError("annotations number every row of X; with sample= give "
                                 "labels=, which are cut to the sample like X.")
            seed = getattr(method, "random_state", None)
            sample_rows, X, labels, colors, hover_text, images, data = placing.sample_input(
                sample, arguments.count_samples(X), seed if isinstance(seed, int) else 0,
                X, labels, colors, hover_text, images, data)
        n = arguments.count_samples(X)
        self._X = X
        # Settings the session's controls set (HSSNE's rho) are not searched for first.
        self._method = getattr(method, "with_live_settings", lambda: method)()
        # Prepares the first run in place of method.prepare, once (set before __init__
        # by _with_first_prepare for an Explorer opened from a session); restarts
        # prepare afresh.
        self.__dict__.setdefault("_first_prepare", None)
        self._y = None if labels is None else check_labels(labels, n, name="labels")
        self._annotations = arguments.initial_annotations(n, self._y, class_names, annotations)
        if annotations is None:
            self._y = None  # the labels live in the annotations
        self._n = n
        self._sync_lock = threading.RLock()
        self._ann_lock = threading.RLock()
        self._log = annotating.ActionLog(self.annotations)
        self._ann_seen = self.annotations.revision
        self._pending = None
        self._live = {}
        self._live_source = None
        self._has_membership = False
        self._adopted = None
        self._params_from_run = False
        self._embedding = None
        self._snapshot = None
        self._plane = PlaneView(check_option(view, "view", VIEWS))
        self._user_colorings = {} if colors is None else \
            {"user": arguments.check_colors(colors, n)}
        self._user_values = {} if colors is None else {"user": np.asarray(colors)}
        if data is not None:
            self._user_colorings.update(arguments.check_data(data, n))
            self._user_values.update({str(c): np.asarray(data[c]) for c in data.keys()})
        self._credit, self._credit_time = 1.0, time.monotonic()  # frames allowed now
        self._pacer = PagePacer()  # frames wait for a slow page (FrameStream)
        self._pacer.watch_cells()
        self._frame_bytes = None  # bytes of the last frame sent (FrameStream)
        self._display_maps = {}
        self.frames_sent = 0  # frames whose traits went to the browser
        self._frames_numbered = 0  # frames whose traits were set (FrameStream._publish)
        self._frames_begun = 0  # frames whose encoding began: only the last one is sent
        self._frame_turn = threading.Condition()
        self.skipped_frames = 0
        self._labels = None
        self._refresh_labels()
        initial = dict(n_points=n, view=view, frame_rate=frame_rate,
                       color_options=["label"] + list(self._user_colorings),
                       color_by=color or ("label" if colors is None else "user"),
                       class_names=list(self.annotations.class_names),
                       annotation_summary=annotating.describe(self.annotations),
                       _marks=constraint_marks(self.annotations, self._labels))
        if hover_text is not None:
            initial["hover_text"] = arguments.check_hover_text(hover_text, n)
        if images is not None:
            initial["_images"], initial["image_shape"] = arguments.check_images(images, n)
        initial["rest_count"] = self._init_placing(X_full, sample_rows)
        super().__init__(**initial)
        self.on_msg(self._on_browser_message)
        self._worker = RunWorker(self._prepare_run, on_step=self._on_step,
                                 on_status=self._on_status, on_warning=self._warn,
                                 on_work=self._on_work,
                                 extra_iterations=extra_iterations)
        self._size_steps_to_frames()
        self.status = "running" if autostart else "paused"
        self._worker.start(paused=not autostart)

    @classmethod
    def _with_first_prepare(cls, first_prepare, *args, **kwargs):
        """An Explorer whose first run ``first_prepare(X, y, annotations=)`` makes
        in place of ``method.prepare`` (how a saved session resumes its run)."""
        explorer = cls.__new__(cls)
        explorer._first_prepare = first_prepare
        explorer.__init__(*args, **kwargs)
        return explorer

    # ------------------------------------------------------------------ public API
    @property
    def annotations(self):
        """The live :class:`~nbembed.Annotations` (labels and constraints made so far)."""
        return self._annotations

    @property
    def run(self):
        """The run being optimized (None while it is being prepared)."""
        return self._worker.run

    @property
    def embedding(self):
        """A copy of the latest finite embedding, shape (n_samples, n_components), or None."""
        Y = self._embedding
        return None if Y is None else Y.copy()

    @property
    def selection(self):
        """The selected points (sorted indices); assign indices or a mask to select."""
        # No check of the bitmask's number of points: one stored before add_points
        # holds fewer points than the map now has, and its indices stay valid.
        return decode_selection(self._selection)

    @selection.setter
    def selection(self, indices):
        idx = annotating.selection_indices(indices, self._n)
        self._selection = encode_selection(idx, self._n)

    def pause(self):
        """Stop optimizing after the current step."""
        if self._worker.alive:
            self._worker.pause()
        else:
            self._worker.mark_paused()

    def resume(self):
        """Continue optimizing (a finished run does ``extra_iterations`` more)."""
        self._worker.start()
        self._worker.resume()

    def restart(self):
        """Start again from a new initial embedding, keeping slider values and annotations."""
        if self.params:
            self._worker.set_params(**self.params)
        self._worker.start()
        self._worker.restart()

    def stop(self, timeout=30.0):
        """Stop the background thread and wait for it; :meth:`resume` starts it again.

        Returns
        -------
        bool
            True once the thread has ended.
        """
        self.stop_placing(timeout)
        return self._worker.stop(timeout)

    def close(self):
        """Stop the worker and close the widget."""
        if getattr(self, "_worker", None) is not None:
            self.stop_placing(timeout=5.0)
            self._worker.stop(timeout=5.0)
        if getattr(self, "_pacer", None) is not None:
            self._pacer.close()
        super().close()

    def wait(self, iteration=None, timeout=120.0):
        """Block until the run reaches ``iteration``, or (without it) until the
        worker is idle (paused or done) and the read-outs it queued going idle
        are computed (``quality`` then shows the run's iteration).

        Raises
        ------
        RuntimeError
            If the run failed.
        TimeoutError
            After ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.status == "error":
                raise RuntimeError(f"the run failed: {self.error}")
            run = self._worker.run
            if iteration is not None:
                if run is not None and run.iteration >= iteration:
                    return self
                if run is not None and run.done and self.status == "done":
                    return self
            elif self._worker.idle and not self._readouts_pending():
                return self
            time.sleep(0.02)
        if iteration is None and self._worker.idle:
            return self  # only read-outs still computing: they never make wait fail
        raise TimeoutError(f"the Explorer did not get there within {timeout} s (status "
                           f"{self.status!r}, iteration {self.iteration}).")

    def apply(self, mode="soft_label", indices=None, *, label=None, confidence=1.0,
              new_class=None, other=None):
        """Annotate points, as the widget's Apply button does.

        Parameters
        ----------
        mode : {"soft_label", "must_link", "cannot_link"}
        indices : array-like of int or bool mask, optional
            The points; default the current :attr:`selection`.
        label : int or str, optional
            ``soft_label``: an existing class (index or name).
        confidence : float, default 1.0
            ``soft_label``: confidence in (0, 1].
        new_class : str, optional
            ``soft_label``: create a class of this name and label the points with it.
        other : array-like of int, optional
            ``cannot_link``: the second selection. Without it, the first call
            stores ``indices`` as selection A (its size is ``pending_a``) and the
            next call links A with its ``indices``.

        Raises
        ------
        ValueError, TypeError
            For an invalid selection, class or confidence; nothing changes.
        """
        mode = check_option(mode, "mode", annotating.MODES)
        with self._ann_lock:
            ann = self.annotations
            idx = self.selection if indices is None else indices
            if mode == "soft_label":
                action = annotating.soft_label_action(ann, idx, label, confidence, new_class,
                                                      self._max_classes())
                run_classes = getattr(self._adopted, "max_classes", None)
            elif mode == "must_link":
                def action():
                    ann.add_must_link(idx)
            elif other is None and self._pending is None:
                a = annotating.selection_indices(idx, self._n, "selection A")
                if not len(a):
                    raise ValueError("selection A is empty; select points first.")
                self._pending = a
                self.pending_a = len(a)
                self._warn(f"Stored {len(a)} point(s) as selection A: select the points "
                           f"to keep apart from them and apply again.")
                return
            else:
                a, b = (idx, other) if other is not None else (self._pending, idx)

                def action():
                    ann.add_cannot_link(a, b)
            changed = self._log.record(action)
            if mode == "cannot_link" and other is None:
                self._pending = None
                self.pending_a = 0
        if not changed:
            self._warn(f"Nothing changed: the annotations hold this "
                       f"{mode.replace('_', '-')} already.")
            return
        kinds = list(self.annotation_kinds)
        note = annotating.unused_notice(mode, kinds, self.method_name or "This method",
                                        confidence) if self._adopted is not None else ""
        if mode == "soft_label" and run_classes is not None and \
                self.annotations.n_classes > run_classes:
            # The method counts the classes in the labels of each fit (Mbed's
            # n_classes=None); the run has one anchor per class it was built with.
            note = (f"Applied soft-label: {self.annotations.n_classes} classes now, so "
                    f"{self.method_name or 'the method'} starts again from a new layout "
                    f"with room for all of them.")
            self.restart()
        self._warn(note or f"Applied {mode.replace('_', '-')} ({len(self._log)} annotation(s)).")
        self.update_annotations()

    def labels_to_obs(self, adata, key=DEFAULT_LABELS_KEY, *, copy=False):
        """Write the labels made so far to ``adata.obs[key]`` as a categorical column
        (unlabelled cells missing); see :func:`nbembed.tl.annotations_to_obs`."""
        with self._ann_lock:
            annotations = self.annotations.copy()
        return annotations_to_obs(adata, annotations, key, copy=copy)

    def save(self, path, include_data=False):
        """Save this session (method, positions, sliders, annotations, pins,
        colourings) to one file; see :func:`nbembed.widget.session.save_session`.

        Returns
        -------
        pathlib.Path
            The file written.
        """
        from .session import save_session
        return save_session(self, path, include_data=include_data)

    @classmethod
    def load(cls, path, X=None, **kwargs):
        """Open a session written by :meth:`save`, going on where it was; see
        :func:`nbembed.widget.session.load_session` (``X`` is needed when the data
        were not saved with it).

        Returns
        -------
        Explorer
        """
        from .session import load_session
        return load_session(path, X=X, **kwargs)

    def _max_classes(self):
        """Most classes the method can use (Mbed's ``n_classes``), or None for no
        limit: a method that counts the classes in the labels of each fit (Mbed's
        ``n_classes=None``) has none, and its run starts again when a label adds one."""
        return getattr(self._method, "max_classes", None)

    def undo(self):
        """Undo the last annotation action; return its description (None if none)."""
        return self._go_through_history("undo")

    def redo(self):
        """Make the last undone annotation action again; return its description
        (None if there is none: nothing was undone since the last change)."""
        return self._go_through_history("redo")

    def _go_through_history(self, way):
        """``way`` ("undo" or "redo") one action of the log, with a notice."""
        with self._ann_lock:
            description = getattr(self._log, way)()
        if description is None:
            self._warn(f"Nothing to {way}.")
            return None
        self._warn(f"{way.capitalize()}ne: {description}.")
        self.update_annotations()
        return description

    def cancel_pending(self):
        """Forget the stored cannot-link selection A."""
        with self._ann_lock:
            self._pending = None
        self.pending_a = 0

    def update_annotations(self):
        """Hand the annotations to the run again (call this after changing
        ``ex.annotations`` directly)."""
        with self._ann_lock:
            self._ann_seen = self.annotations.revision
            self._refresh_labels()
            count, summary = len(self._log), annotating.describe(self.annotations)
            redo = self._log.can_redo
            names = list(self.annotations.class_names)
            marks = constraint_marks(self.annotations, self._labels)
        with self._sync_lock, self.hold_sync():
            self.class_names = names
            self._marks = marks
            self.annotation_count = count
            self.redo_count = redo
            self.annotation_summary = summary
        self._worker.annotations_changed(self._annotation_snapshot)
        if not self._worker.alive:
            self._publish()

    # ------------------------------------------------------------------ worker side
    def _prepare_run(self):
        ann, y = self._annotation_snapshot()
        prepare = self._first_prepare or self._method.prepare
        start = None
        if self._first_prepare is None and self._snapshot is None and \
                self._n >= preview.PREVIEW_MIN_N:
            start = preview.preview_positions(self._X, self._method)
        self._first_prepare = None
        if start is None:
            run = prepare(self._X, y, annotations=ann)
        else:
            self._show_preview(start)
            run = prepare(self._X, y, annotations=ann, init=start)
        # Restarts and added points keep what this prepare chose by a search.
        chosen = getattr(self._method, "with_chosen_settings", None)
        if chosen is not None:
            self._method = chosen()
        return run

    def _annotation_snapshot(self):
        with self._ann_lock:
            return self.annotations.copy(), self._y

    def _refresh_labels(self):
        labels = self.annotations.to_labels()
        if self._y is not None:
            labels = np.where(labels >= 0, labels, self._y)
        self._labels = labels

    # ------------------------------------------------------------------ browser side
    def _warn(self, message):
        logger.info("nbembed Explorer: %s", message)
        with self._sync_lock:
            self.notice = message

    def _on_browser_message(self, widget, content, buffers):
        try:
            method, kwargs = messages.parse(content, buffers)
            getattr(self, method)(**kwargs)
        except (ValueError, TypeError) as err:
            self._warn(f"Ignored a message from the browser: {err}")
        except Exception as err:  # a browser message must never break the widget
            logger.exception("nbembed Explorer: a browser message failed")
            self._warn(f"Ignored a message from the browser ({type(err).__name__}: {err}).")

    def set_state(self, sync_data):
        """Apply a state update from the browser one trait at a time.

        The browser may change only the traits in ``BROWSER_WRITABLE``; an
        update of any other (the widget's own state, or inherited ones such as
        ``_esm``, the JavaScript it runs) is ignored with a notice. ipywidgets
        applies an update as a whole and drops all of it if one value is
        rejected; here a rejected value is ignored with a warning and the
        others are kept.
        """
        for name, value in sync_data.items():
            if name not in BROWSER_WRITABLE:
                self._warn(f"Ignored an update of {name!r} from the browser: it is read-only.")
                continue
            try:
                with self._sync_lock:
                    super().set_state({name: value})
            except Exception as err:
                self._warn(f"Ignored an update of {name!r} from the browser: {err}")
                if name in self.keys:
                    self.send_state(name)

    def notify_change(self, change):
        """Called when a property has changed."""
        # Trait changes from the worker and the main thread must not interleave
        # inside ipywidgets' hold_sync bookkeeping.
        with self._sync_lock:
            super().notify_change(change)

    # ------------------------------------------------------------------ validation
    @traitlets.validate("_selection")
    def _valid_selection(self, proposal):
        # Only TraitError makes traitlets roll a rejected value back.
        try:
            idx = decode_selection(proposal["value"], n=self._n)
            return encode_selection(annotating.selection_indices(idx, self._n), self._n)
        except (TypeError, ValueError) as err:
            raise traitlets.TraitError(str(err)) from None

