"""A large run's new annotations are worked out in a thread of their own while it steps.

The worker hands ``run.prepare_annotations`` to the "nbembed-annotations"
thread when ``run.annotations_aside`` is true, keeps stepping, and applies the
result between two steps. Every wait here is on a condition (events the fake
run sets), never on how long something takes.
"""

import threading
import time

import numpy as np

from _waiting import wait_for
from nbembed.optim.protocol import Run
from nbembed.widget.worker import RunWorker


class AsideRun(Run):
    """A run whose steps only count, and whose annotations are prepared aside:
    ``prepare_annotations`` waits for ``release`` (set by the test) before it
    returns, and the ``apply`` it returns records what it applied."""

    name = "aside"
    live_parameters = {}
    annotation_kinds = ("must_link",)
    annotations_aside = True

    def __init__(self, n_iter=10**9, reject=None):
        self.n_iter = n_iter
        self.iteration = 0
        self.history = []
        self.in_step = False
        self.prepared = []  # snapshots prepare_annotations was called with
        self.applied = []  # what apply() made the run's, in order
        self.entered = threading.Event()
        self.release = threading.Event()
        self.reject = reject  # a snapshot that prepare_annotations refuses
        self.step_thread = None

    @property
    def embedding(self):
        return np.zeros((4, 2))

    def step(self, n=1, callbacks=None, record_last=True):
        self.step_thread = threading.current_thread()
        self.in_step = True
        try:
            for _ in range(n):
                time.sleep(1e-4)
                self.iteration += 1
        finally:
            self.in_step = False
        return self

    def set_params(self, **params):
        return self

    def set_annotations(self, annotations=None, y=None):
        raise AssertionError("a run whose annotations are prepared aside is not given them whole")

    def prepare_annotations(self, annotations=None, y=None):
        assert threading.current_thread().name == "nbembed-annotations"
        self.prepared.append(annotations)
        self.entered.set()
        assert self.release.wait(30)
        if annotations == self.reject:
            raise ValueError(f"{annotations} is refused")

        def apply():
            assert not self.in_step and threading.current_thread() is self.step_thread
            self.applied.append(annotations)
        return apply


def started_worker(run, **callbacks):
    callbacks = {"on_step": lambda run, force: None, "on_status": lambda status, error: None,
                 "on_warning": lambda message: None, **callbacks}
    worker = RunWorker(lambda: run, **callbacks)
    worker.start()
    return worker


def test_the_run_keeps_stepping_while_its_annotations_are_worked_out_then_takes_them():
    run = AsideRun()
    worker = started_worker(run)
    try:
        wait_for(lambda: run.iteration > 5)
        worker.annotations_changed(lambda: ("lasso 1", None))
        assert run.entered.wait(30)
        held_at = run.iteration
        wait_for(lambda: run.iteration > held_at + 50)  # steps while prepare_annotations waits
        assert run.applied == []
        run.release.set()
        wait_for(lambda: run.applied == ["lasso 1"])
        applied_at = run.iteration
        wait_for(lambda: run.iteration > applied_at + 5)  # and goes on after
    finally:
        run.release.set()
        assert worker.stop(timeout=10)


def test_a_finished_run_is_not_idle_until_its_annotations_are_applied_and_then_goes_on():
    run = AsideRun(n_iter=30)
    worker = started_worker(run)
    worker.extra_iterations = 20
    try:
        wait_for(lambda: run.done and worker.idle)
        worker.annotations_changed(lambda: ("lasso 1", None))
        assert run.entered.wait(30)
        assert not worker.idle
        run.release.set()
        wait_for(lambda: worker.idle and run.applied)
        assert run.applied == ["lasso 1"]
        assert run.iteration == 50  # the change granted the extra iterations
    finally:
        run.release.set()
        assert worker.stop(timeout=10)


def test_snapshots_queued_meanwhile_are_worked_out_once_the_latest_only_and_in_order():
    run = AsideRun()
    worker = started_worker(run)
    try:
        worker.annotations_changed(lambda: ("lasso 1", None))
        assert run.entered.wait(30)
        for k in (2, 3, 4):
            worker.annotations_changed(lambda k=k: (f"lasso {k}", None))
            wait_for(lambda: worker._aside._queued is not None and not worker._pending())
        run.release.set()
        wait_for(lambda: len(run.applied) == 2 and not worker._aside.busy)
        assert run.prepared == ["lasso 1", "lasso 4"]
        assert run.applied == ["lasso 1", "lasso 4"]
    finally:
        run.release.set()
        assert worker.stop(timeout=10)


def test_annotations_worked_out_for_a_run_since_restarted_are_dropped():
    first, second = AsideRun(), AsideRun()
    runs = iter([first, second])
    worker = RunWorker(lambda: next(runs), on_step=lambda run, force: None,
                       on_status=lambda status, error: None, on_warning=lambda message: None)
    worker.start()
    try:
        wait_for(lambda: first.iteration > 5)
        worker.annotations_changed(lambda: ("lasso 1", None))
        assert first.entered.wait(30)
        worker.restart()
        wait_for(lambda: worker.run is second and second.iteration > 5)
        first.release.set()
        wait_for(lambda: not worker._aside.busy and not worker._aside.ready)
        at = second.iteration
        wait_for(lambda: second.iteration > at + 5)
        assert first.applied == [] and second.applied == []
    finally:
        first.release.set()
        assert worker.stop(timeout=10)


def test_refused_annotations_are_a_warning_and_the_run_goes_on():
    run = AsideRun(reject="bad lasso")
    warnings = []
    worker = started_worker(run, on_warning=warnings.append)
    try:
        worker.annotations_changed(lambda: ("bad lasso", None))
        run.release.set()
        wait_for(lambda: warnings)
        assert "did not accept the annotations (they are kept)" in warnings[0]
        assert "bad lasso is refused" in warnings[0]
        at = run.iteration
        wait_for(lambda: run.iteration > at + 5)
        assert run.applied == [] and worker.alive
    finally:
        assert worker.stop(timeout=10)
