"""Advance a run in a background thread, applying queued changes between steps.

Widget messages are handled only while the kernel's main thread is idle, so
the optimizer must not loop there: :class:`RunWorker` calls ``run.step(k)`` in
a daemon thread, choosing ``k`` so that one call takes about
:data:`STEP_SECONDS`, and applies parameter and annotation changes queued from
the main thread between two calls. Runs hold :data:`nbembed._config.KERNEL_LOCK`
inside their methods, and only this thread calls them, so Numba's parallel
kernels are never entered twice at once.

The worker talks to the run only through the run protocol
(:class:`nbembed.optim.protocol.Run`) and reports through its callbacks:
``on_step(run, force)`` after every step and change, ``on_status(status,
error)``, ``on_warning(message)`` and, optionally, ``on_work(run, idle)``,
in which the owner may do its own work with the run between two step calls
(``idle``: the worker is about to wait).

Each time the worker goes idle it may start one more daemon thread,
"nbembed-compile-forms" (:func:`compile_other_forms`), which compiles the
kernel forms of the alphas no run has used yet; it only compiles (Numba's
compiler lock is its sole shared state) and never calls a run or a kernel.

A run whose ``annotations_aside`` is true (a large HSSNE run) gets its new
annotations worked out in the thread "nbembed-annotations"
(:class:`~nbembed.widget.annotations_aside.AnnotationsAside`), which calls
only ``run.prepare_annotations``; this thread applies the results between two
steps, so the run goes on meanwhile.
"""

from __future__ import annotations

import logging
import math
import threading
import time

import numpy as np

from .._kernels.forms import compile_every_form, missing_forms
from .._memory import MemoryReleaser, configure_allocator
from ..optim.compiling import CompileWatch
from .annotations_aside import AnnotationsAside

logger = logging.getLogger("nbembed")

#: Wall-clock time one ``run.step(k)`` call should take: long enough that the
#: Python overhead per iteration is small, short enough that a slider takes
#: effect at once.
STEP_SECONDS = 0.03
#: Longest a step call may be made to take so that a fixed cost per call (a
#: run may evaluate its objective at the end of every call) stays below a
#: quarter of the time. Kept short: the cost recorded every few tens of
#: iterations looks like such a fixed cost to the sizer, and a longer call
#: would be the longest gap between two frames.
MAX_STEP_SECONDS = 0.1
#: Largest number of iterations in one step call.
MAX_STEP = 1000
#: Iterations a finished run performs after a change (slider, annotations,
#: resume), so users can keep playing with a converged embedding.
EXTRA_ITERATIONS = 200

#: Longest the idle worker sleeps before it looks at its queue again (every
#: command also wakes it at once).
IDLE_WAKE_SECONDS = 1.0

#: Exceptions from ``set_params`` and ``set_annotations`` that mean "this value
#: is not accepted" and leave the run usable; anything else stops the worker.
REJECTED = (ValueError, TypeError)

_forms_lock = threading.Lock()
_forms_thread = None


def compile_other_forms():
    """Start compiling, in a daemon thread, the kernel forms no run has used yet
    (:func:`nbembed._kernels.forms.compile_every_form`), unless a thread is
    already at it or nothing is missing. Returns that thread, or None.

    A first run compiles only the form of its alpha; this gets the others
    ready, while the worker is idle, for the next move of the alpha slider.
    """
    global _forms_thread
    with _forms_lock:
        if _forms_thread is not None and _forms_thread.is_alive():
            return _forms_thread
        if not missing_forms():
            return None
        _forms_thread = threading.Thread(target=_compile_every_form, daemon=True,
                                         name="nbembed-compile-forms")
        _forms_thread.start()
        return _forms_thread


def _compile_every_form():
    try:
        compile_every_form()
    except Exception:  # the run does not depend on it: a later alpha compiles its own form
        logger.exception("nbembed Explorer: compiling the kernels of other alphas failed")


def _prefer_even_steps(run):
    """Tell ``run`` that it is stepped live (``Run.prefer_even_steps``), where it
    has that method: a run need only follow the protocol, not derive from it."""
    prefer = getattr(run, "prefer_even_steps", None)
    if prefer is not None:
        prefer()


class StepSizer:
    """Chooses ``k`` for the next ``run.step(k)`` from the durations of the last calls.

    A call takes about ``c + g k`` seconds: ``g`` per iteration and ``c`` per
    call (for example a cost evaluation at the end of every call). Both are
    fitted to the last calls; ``k`` is chosen so that a call takes
    ``step_seconds``, or up to three times ``c`` (at most
    :data:`MAX_STEP_SECONDS`) when the fixed part would otherwise dominate.
    ``k`` at most doubles from one call to the next, and the first call after
    a reset (which may include compilation) is not used.
    """

    def __init__(self, step_seconds=STEP_SECONDS):
        self.step_seconds = step_seconds
        self.reset()

    def reset(self):
        self.k = 1
        self._samples = []
        self._skip = True

    def update(self, k, elapsed):
        """Record that ``k`` iterations took ``elapsed`` seconds; return the next k."""
        if self._skip:
            self._skip = False
            return self.k
        self._samples = (self._samples + [(k, elapsed)])[-8:]
        ks = np.array([s[0] for s in self._samples], dtype=float)
        ts = np.array([s[1] for s in self._samples])
        g, c = elapsed / k, 0.0
        if np.ptp(ks) > 0:
            slope, intercept = np.polyfit(ks, ts, 1)
            if slope > 0:
                g, c = slope, max(intercept, 0.0)
        budget = min(MAX_STEP_SECONDS, max(self.step_seconds, 3 * c))
        planned = math.floor((budget - c) / g) if budget > c else 1
        k_next = int(max(1, min(planned, 2 * k, MAX_STEP)))
        # Vary k once so that c and g can be told apart; not when a call of k
        # iterations already takes as long as any call may, where more iterations
        # a call are never planned (with 10^6 points one iteration takes 0.3 s,
        # and each varied call would hide an iteration from the page).
        if k_next == k and np.ptp(ks) == 0 and k < MAX_STEP and elapsed < MAX_STEP_SECONDS:
            k_next = k + max(1, k // 2)
        self.k = k_next
        return k_next


class RunWorker:
    """Steps a run in a background thread.

    Parameters
    ----------
    prepare : callable
        ``prepare()`` returns a new run; called in the worker thread at the
        start and on :meth:`restart`.
    on_step : callable
        ``on_step(run, force)`` after each step call (``force=False``) and
        after a change or when the worker goes idle (``force=True``).
    on_status : callable
        ``on_status(status, error)`` when the status changes; status is
        "preparing", "compiling" (Numba compiles a kernel that its disk cache
        did not have), "running", "paused", "done" or "error".
    on_warning : callable
        ``on_warning(message)`` for a rejected parameter or annotation.
    on_work : callable, optional
        ``on_work(run, idle)`` after each step call (``idle=False``) and when
        the worker goes idle (``idle=True``), in the worker thread: the place
        for work that reads the run (only this thread may call it).
    step_seconds : float
        Target duration of one step call.
    extra_iterations : int
        Iterations granted to a finished run after a change.

    Attributes
    ----------
    run : Run or None
        The run being stepped (None until prepared).
    """

    def __init__(self, prepare, *, on_step, on_status, on_warning, on_work=None,
                 step_seconds=STEP_SECONDS, extra_iterations=EXTRA_ITERATIONS):
        self._prepare = prepare
        self._on_work = on_work
        self._on_step = on_step
        self._on_status = on_status
        self._on_warning = on_warning
        self.extra_iterations = int(extra_iterations)
        self._cond = threading.Condition()
        self._thread = None
        self._stop = False
        self._paused = False
        self._restart = False
        self._extend = False
        self._params = {}
        self._annotations = None
        self._ops = []
        self._reads = []
        self._replace = None
        self._budget = 0
        self._requested = 0  # iterations asked for by step() while paused
        self._poked = False
        self._status = None
        self._before_compiling = None
        self._failed = False
        self._waiting = False
        self._cut_short = False  # the last step call ended early for a change
        self.run = None
        self._sizer = StepSizer(step_seconds)
        self._aside = AnnotationsAside(on_ready=self._wake)

    # -- called from the main thread -------------------------------------------------
    @property
    def alive(self):
        """Whether the worker thread is running."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def has_pending_params(self):
        """Whether parameter values wait to be applied."""
        with self._cond:
            return bool(self._params)

    @property
    def idle(self):
        """Whether the worker has nothing to do (paused, done, failed or stopped)
        and has reported it."""
        if not self.alive:
            return True
        with self._cond:
            return (not self._pending() and not self._wants_steps() and self._waiting
                    and not self._aside.busy)

    def start(self, paused=False):
        """Start the thread (it prepares the run first if there is none)."""
        if self.alive:
            return
        with self._cond:
            self._stop = False
            self._paused = paused
        # Before the thread exists: the cap on heaps holds for threads made later.
        configure_allocator()
        self._thread = threading.Thread(target=self._loop, name="nbembed-explorer", daemon=True)
        self._thread.start()

    def stop(self, timeout=30.0):
        """Stop the thread after the current step; return True once it has ended."""
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        ended = not self.alive
        if ended:
            self.mark_paused()
        return ended

    def mark_paused(self):
        """Report "paused" for a stopped thread that was running (its last report).

        The status goes through the same record as the thread's own reports, so
        that the thread, started again, reports "running" once more.
        """
        if not self.alive and self._status is not None and self._status[0] == "running":
            self._set_status("paused")

    def pause(self):
        """Stop stepping after the current step (changes are still applied)."""
        self._command(_paused=True)

    def resume(self):
        """Continue stepping; a finished run gets ``extra_iterations`` more."""
        self._command(_paused=False, _extend=True, _requested=0)

    def restart(self):
        """Prepare a new run and step it from the start."""
        self._command(_paused=False, _restart=True, _requested=0)

    def step(self, n=1):
        """While paused, do ``n`` more iterations (added to those still asked for),
        then stay paused."""
        with self._cond:
            self._requested += int(n)
            self._cond.notify_all()

    def poke(self):
        """Call ``on_work(run, False)`` in the worker thread soon, also while paused
        (the owner has new work for it, such as forces for other points)."""
        self._command(_poked=True)

    @property
    def requested(self):
        """Iterations asked for by :meth:`step` that are not done yet."""
        return self._requested

    def set_params(self, **params):
        """Queue live parameter values; the latest value of each name wins."""
        with self._cond:
            self._params.update(params)
            self._cond.notify_all()

    def annotations_changed(self, snapshot):
        """Queue new annotations: ``snapshot()`` returns ``(annotations, y)`` for
        ``run.set_annotations``; it is called in the worker thread."""
        self._command(_annotations=snapshot)

    def submit(self, op):
        """Queue ``op(run)``, a change of the run's points (pins, moves), to be
        called in the worker thread between two steps, in the order queued.
        A ValueError or TypeError it raises is reported as a warning."""
        with self._cond:
            self._ops.append(op)
            self._cond.notify_all()

    def read(self, op):
        """Queue ``op(run)``, which only reads the run (None when there is none),
        to be called in the worker thread between two steps. It must not raise."""
        with self._cond:
            self._reads.append(op)
            self._cond.notify_all()

    def replace(self, make, on_done):
        """Queue replacing the run by ``make(run)`` (called in the worker thread),
        which continues it; its pins are carried over. ``on_done(error)`` is
        called afterwards with None, or with the exception ``make`` raised (the
        old run then goes on)."""
        self._command(_replace=(make, on_done))

    def _command(self, **flags):
        with self._cond:
            for name, value in flags.items():
                setattr(self, name, value)
            self._cond.notify_all()

    def _wake(self):
        """Wake the thread: annotations worked out aside are ready."""
        with self._cond:
            self._cond.notify_all()

    # -- the thread ---------------------------------------------------------------
    def _take(self):
        """The queued commands, cleared (called with the condition held)."""
        work = dict(restart=self._restart or (self.run is None and not self._failed),
                    params=self._params, annotations=self._annotations,
                    extend=self._extend, poke=self._poked, ops=self._ops,
                    reads=self._reads, replace=self._replace, aside=self._aside.take())
        self._restart = self._extend = self._poked = False
        self._params, self._annotations, self._ops, self._replace = {}, None, [], None
        self._reads = []
        return work

    def _pending(self):
        return (self._stop or self._restart or self._params or self._annotations is not None
                or self._extend or self._poked or bool(self._ops) or bool(self._reads)
                or self._replace is not None or self._aside.ready)

    def _wants_steps(self):
        run = self.run
        if self._failed or run is None:
            return False
        if self._paused:
            return self._requested > 0
        return not run.done or self._budget > 0

    def _loop(self):
        settled = False  # the idle state has been reported since the last step
        release_memory = MemoryReleaser()
        while True:
            release_memory()
            with self._cond:
                if self._stop:
                    return
                work = self._take()
            try:
                with CompileWatch(self._compiling):
                    self._handle(work)
            except Exception as err:  # the run failed: report, then wait for a restart
                logger.exception("nbembed Explorer: the run failed")
                self._failed = True
                self._set_status("error", f"{type(err).__name__}: {err}")
            with self._cond:
                if self._pending():
                    # Queued while the last changes were applied: apply these too before
                    # the next step, so that changes made before step() all precede it.
                    continue
                stepping = self._wants_steps()
                # Read with the decision: a resume() landing before the status is
                # set must not turn a paused run into a "done" one.
                idle_status = "paused" if self._paused else "done"
            if stepping:
                settled = False
                try:
                    with CompileWatch(self._compiling):
                        self._step()
                except Exception as err:
                    logger.exception("nbembed Explorer: the run failed")
                    self._failed = True
                    self._set_status("error", f"{type(err).__name__}: {err}")
                continue
            if not self._failed and self.run is not None:
                if not settled:
                    self._on_step(self.run, True)
                    if self._on_work is not None:
                        self._on_work(self.run, True)
                    settled = True
                    compile_other_forms()
                self._set_status(idle_status)
            with self._cond:
                while not self._pending() and not self._wants_steps():
                    self._waiting = True
                    # Woken by every command; the timeout only bounds the wait.
                    self._cond.wait(IDLE_WAKE_SECONDS)
                self._waiting = False

    def _handle(self, work):
        if work["restart"]:
            self._failed = False
            # Neighbourhoods, the start and (the first time ever) compiling the
            # kernels: seconds during which no iteration is counted.
            self._set_status("preparing")
            old, self.run = self.run, None
            self.run = self._prepare()
            _prefer_even_steps(self.run)
            self._carry_pins(old, self.run)
            self._budget = 0
            self._sizer.reset()
            self._on_step(self.run, True)
        if work["replace"] is not None:
            self._replace_run(*work["replace"])
        run = self.run
        for op in work["reads"]:
            op(run)
        if run is None:
            if work["ops"]:
                self._on_warning("The points were not moved or pinned: there is no run "
                                 "(restart it first).")
            return
        changed = False
        if work["params"]:
            try:
                run.set_params(**work["params"])
                changed = True
            except REJECTED as err:
                self._on_warning(f"Parameter change not applied: {err}")
        annotations = []  # what makes them the run's, in the order they changed
        for made_for, apply in work["aside"]:
            if made_for is run:  # else the run was replaced, and the new one has them
                annotations.append(apply)
        if work["annotations"] is not None:
            if getattr(run, "annotations_aside", False):
                self._aside.submit(run, work["annotations"])
            else:
                snapshot = work["annotations"]
                annotations.append(lambda: run.set_annotations(*snapshot()))
        for apply in annotations:
            try:
                apply()
                changed = True
            except REJECTED as err:
                self._on_warning(f"{getattr(run, 'name', 'The run')} did not accept the "
                                 f"annotations (they are kept): {err}")
        for op in work["ops"]:
            try:
                op(run)
                changed = True
            except REJECTED as err:
                self._on_warning(f"Points not moved or pinned: {err}")
        if (changed or work["extend"]) and run.done:
            self._budget = self.extra_iterations
        if changed:
            # An iteration may now cost far more (another kernel family, a
            # first compilation): start small again so the next frame, which
            # shows the change, comes at once instead of after a long call
            # sized for the old cost.
            self._sizer.reset()
            self._on_step(run, True)
        if work["poke"] and self._on_work is not None:
            self._on_work(run, False)

    def _replace_run(self, make, on_done):
        old, before = self.run, self._status
        self._set_status("preparing")
        try:
            new = make(old)
        except Exception as err:
            logger.info("nbembed Explorer: the run was not replaced", exc_info=True)
            if before is not None:
                self._set_status(*before)
            on_done(err)
            return
        self.run = new
        _prefer_even_steps(new)
        self._carry_pins(old, new)
        self._budget = self.extra_iterations if new.done else 0
        self._sizer.reset()
        self._on_step(new, True)
        on_done(None)

    #: (indices, pin method, positions) of what a run may hold pinned.
    PINS = (("pinned", "pin", "embedding"), ("pinned_classes", "pin_classes", "anchors"))

    def _carry_pins(self, old, new):
        """Pin in the restarted run what was pinned in the old one, where it was."""
        if old is None:
            return
        for indices, pin, positions in self.PINS:
            held = getattr(old, indices, None)
            if held is None or not len(held):
                continue
            try:
                getattr(new, pin)(held, getattr(old, positions)[held])
            except (AttributeError, *REJECTED) as err:
                self._on_warning(f"The pinned points could not be kept over the restart: {err}")

    def _step(self):
        run = self.run
        self._set_status("running")
        k = self._sizer.k
        if self._paused:
            # Only what step() asked for, counted even when the run does not
            # advance (a converged run), so that the request always ends.
            with self._cond:
                k = min(k, self._requested)
                self._requested -= k
        elif run.done:
            k = min(k, self._budget)
            self._budget -= k
        else:
            # Sized by the run's own count: Mbed's schedule does not advance while
            # lambda is held, so n_iter - iteration would undercount what is left.
            k = max(1, min(k, run.remaining))
        start = time.perf_counter()
        before = run.iteration
        # Costs are recorded at the run's own interval, not after every call:
        # an O(n^2) cost per call was most of a frame's time. Steps asked for while
        # paused (teaching) end recorded, so the cost shown is the current one.
        self._cut_short = False
        run.step(k, callbacks=self._changes_waiting, record_last=self._paused)
        if self._cut_short and self._paused:
            # What a queued change kept this call from doing is still owed.
            with self._cond:
                self._requested += k - (run.iteration - before)
        if run.iteration - before == k:
            # A call cut short by a change says nothing about k; the change resets the sizer.
            self._sizer.update(k, time.perf_counter() - start)
        self._on_step(run, False)
        if self._on_work is not None:
            self._on_work(run, False)

    def _changes_waiting(self, run):
        """Ends a step call early when a change is queued, so that it is applied (and
        shown) after the current iteration instead of after the whole call. Read
        without the lock: a change that lands just after the check waits one call."""
        self._cut_short = bool(self._pending())
        return self._cut_short

    @property
    def k(self):
        """Iterations in the next step call."""
        return self._sizer.k

    @property
    def step_seconds(self):
        """Target duration of one step call (see :class:`StepSizer`)."""
        return self._sizer.step_seconds

    @step_seconds.setter
    def step_seconds(self, value):
        self._sizer.step_seconds = float(value)

    def _compiling(self, active):
        """Say "compiling" while Numba compiles, then what was said before."""
        if active:
            self._before_compiling = self._status
            self._set_status("compiling")
        elif self._status == ("compiling", "") and self._before_compiling is not None:
            self._set_status(*self._before_compiling)

    def _set_status(self, status, error=""):
        if (status, error) != self._status:
            self._status = (status, error)
            self._on_status(status, error)
