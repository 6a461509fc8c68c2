"""The Explorer's live read-outs (nbembed.widget.quality) and its Step command."""

import os
import sys
import threading

import numpy as np
import pytest

pytest.importorskip("anywidget")

from nbembed import metrics  # noqa: E402
from nbembed.widget import messages  # noqa: E402
from nbembed.widget.quality import HISTORY, K, QualityMonitor  # noqa: E402
from test_widget import FakeMethod, bundle, make_explorer, wait_for  # noqa: E402,F401


def blobs(n=120, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    X = rng.normal(size=(n, 5)) + 4.0 * np.eye(5)[y]
    return X, y


def test_scores_on_all_points_equal_the_metrics():
    X, y = blobs()
    Y = np.random.default_rng(1).normal(size=(len(X), 2)) + X[:, :2]
    labels = np.where(np.arange(len(X)) % 4 == 0, -1, y)
    scores = QualityMonitor(X).scores(Y, labels, cost=2.5)
    assert scores["trustworthiness"] == pytest.approx(metrics.trustworthiness(X, Y, K))
    assert scores["continuity"] == pytest.approx(metrics.continuity(X, Y, K))
    assert scores["knn_accuracy"] == pytest.approx(1 - metrics.knn_error(Y, labels))
    assert scores["cost"] == 2.5
    for name in ("trustworthiness", "continuity", "knn_accuracy"):
        assert 0.0 <= scores[name] <= 1.0
    # a random embedding is worse than the data's own first coordinates
    worse = QualityMonitor(X).scores(np.random.default_rng(2).normal(size=(len(X), 2)), labels)
    assert worse["trustworthiness"] < scores["trustworthiness"]


def test_precomputed_input_distances_give_the_same_scores():
    from sklearn.metrics import pairwise_distances

    X, _ = blobs(60)
    Y = X[:, :2] + 0.3
    direct = QualityMonitor(X).scores(Y)
    precomputed = QualityMonitor(pairwise_distances(X), metric="precomputed").scores(Y)
    assert precomputed["trustworthiness"] == pytest.approx(direct["trustworthiness"])
    assert precomputed["continuity"] == pytest.approx(direct["continuity"])
    assert direct["knn_accuracy"] is None  # no labels


def test_large_data_uses_a_fixed_seeded_sample_within_the_sample():
    X, y = blobs(500)
    a, b = QualityMonitor(X, sample_size=100), QualityMonitor(X, sample_size=100)
    assert len(a.sample) == 100 and np.array_equal(a.sample, b.sample)
    assert np.all(np.diff(a.sample) > 0)
    Y = X[:, :2]
    s = a.sample
    assert a.scores(Y)["trustworthiness"] == pytest.approx(
        metrics.trustworthiness(X[s], Y[s], K))
    assert a.scores(Y, y)["knn_accuracy"] == pytest.approx(1 - metrics.knn_error(Y[s], y[s]))


def test_history_is_bounded_and_updates_wait_for_a_new_iteration():
    X, _ = blobs(40)
    monitor = QualityMonitor(X)
    assert monitor.due(0, now=0.0)
    for it in range(HISTORY + 5):
        values = monitor.update(X[:, :2] * (1 + it), it, cost=float(it))
    assert len(values["history"]["cost"]) == HISTORY
    assert values["history"]["iteration"][-1] == HISTORY + 4 == values["iteration"]
    assert not monitor.due(HISTORY + 4, idle=True)  # nothing new to score
    assert monitor.due(HISTORY + 5, idle=True)


def test_too_few_points_give_no_neighbourhood_scores():
    scores = QualityMonitor(np.eye(10)).scores(np.eye(10)[:, :2])
    assert scores["trustworthiness"] is None and scores["continuity"] is None


def test_explorer_quality_updates_as_the_run_proceeds(make_explorer):
    X, y = blobs(80)
    ex = make_explorer(X=X, labels=y, method=FakeMethod(seconds_per_iteration=1e-3))
    assert wait_for(lambda: ex.quality.get("iteration", 0) > 0)
    first = ex.quality["iteration"]
    assert wait_for(lambda: ex.quality["iteration"] > first)
    q = ex.quality
    for name in ("trustworthiness", "continuity", "knn_accuracy"):
        assert 0.0 <= q[name] <= 1.0
    assert len(q["history"]["trustworthiness"]) >= 2
    assert q["sample_size"] == 80 and q["k"] == K
    ex.pause()
    ex.wait(timeout=30)
    Y = ex.embedding
    assert wait_for(lambda: ex.quality["iteration"] == ex.run.iteration)
    assert ex.quality["trustworthiness"] == pytest.approx(metrics.trustworthiness(X, Y, K))


def test_read_outs_are_computed_beside_the_steps_and_current_when_idle(make_explorer,
                                                                       monkeypatch):
    from nbembed.widget import teaching

    threads = []
    publish = teaching.Teaching._publish_quality

    def recording(self, *snapshot):
        threads.append(threading.current_thread().name)
        return publish(self, *snapshot)
    monkeypatch.setattr(teaching.Teaching, "_publish_quality", recording)
    X, y = blobs(80)
    ex = make_explorer(X=X, labels=y, method=FakeMethod(seconds_per_iteration=1e-3))
    assert wait_for(lambda: threads)
    ex.pause()
    ex.wait(timeout=30)
    # Going idle, the last iteration is scored soon after, whichever update was in flight.
    assert wait_for(lambda: ex.quality["iteration"] == ex.run.iteration)
    assert set(threads) == {"nbembed-read-outs"}  # never in the worker: no frame waits


def test_a_slow_read_out_never_holds_the_worker(make_explorer, monkeypatch):
    """A read-out stuck for a long time (a first import on a busy machine) neither
    stops the steps nor keeps the worker from going idle and back."""
    from nbembed.widget import teaching

    release = threading.Event()
    publish = teaching.Teaching._publish_quality

    def stuck(self, *snapshot):
        release.wait(60)
        return publish(self, *snapshot)
    monkeypatch.setattr(teaching.Teaching, "_publish_quality", stuck)
    X, y = blobs(80)
    ex = make_explorer(X=X, labels=y, method=FakeMethod(seconds_per_iteration=1e-3))
    assert wait_for(lambda: "_readouts" in ex.__dict__ and ex._readouts.busy)
    start = ex.run.iteration
    assert wait_for(lambda: ex.run.iteration > start + 20)  # steps go on
    ex.pause()
    assert wait_for(lambda: ex._worker.idle and ex.status == "paused")
    ex.resume()
    assert wait_for(lambda: ex.status == "running")
    ex.pause()
    assert wait_for(lambda: ex._worker.idle)
    assert ex.wait(timeout=0.5) is ex  # wait returns, read-outs still computing
    release.set()
    ex.wait(timeout=30)
    assert ex.quality.get("iteration") == ex.run.iteration


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread priorities")
def test_the_read_out_thread_keeps_the_process_priority():
    # At a lower priority, on a busy machine, it would hold the interpreter lock
    # (or an import lock) while not scheduled, and so stall every other thread.
    from nbembed.widget.teaching import LatestOnly

    seen = []
    done = threading.Event()

    def work():
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        done.set()
    LatestOnly(work, "read-outs").post()
    assert done.wait(30)
    assert seen == [os.getpriority(os.PRIO_PROCESS, threading.get_native_id())]


def test_step_calls_are_sized_to_the_frame_rate(make_explorer):
    from nbembed.widget.frames import STEP_SHARE_OF_FRAME
    from nbembed.widget.worker import STEP_SECONDS

    ex = make_explorer(autostart=False)
    assert ex._worker.step_seconds == STEP_SECONDS  # 25 frames/s leave it as it is
    ex.frame_rate = 60.0
    assert ex._worker.step_seconds == pytest.approx(STEP_SHARE_OF_FRAME / 60.0)
    ex.frame_rate = 10.0
    assert ex._worker.step_seconds == STEP_SECONDS


def test_step_advances_exactly_n_iterations_while_paused(make_explorer):
    ex = make_explorer(autostart=False)
    ex.wait(timeout=30)
    start = ex.run.iteration
    ex.step()
    assert wait_for(lambda: ex._worker.idle and ex.run.iteration == start + 1)
    ex.wait(timeout=30)
    assert ex.run.iteration == start + 1 and ex.status == "paused"
    ex.step(5)
    ex.wait(timeout=30)
    assert wait_for(lambda: ex.iteration == start + 6)
    assert ex.run.iteration == start + 6
    assert wait_for(lambda: ex.quality.get("iteration") == start + 6)


def test_step_counts_iterations_a_queued_change_cut_short(make_explorer):
    """A change queued while Step runs (a hover asks for forces) ends the current step
    call early; the iterations it did not do are still done."""
    ex = make_explorer(autostart=False)
    ex.wait(timeout=30)
    start = ex.run.iteration
    poked = []

    def poke_once(run):  # a change arrives inside a call of more than one iteration
        if not poked and run.call_size > 1 and run.iteration - run.call_start == 1:
            poked.append(run.iteration)
            ex._worker.poke()
    ex.run.on_iteration = poke_once
    ex.step(300)
    assert wait_for(lambda: ex._worker.idle and ex.run.iteration >= start + 300)
    ex.wait(timeout=30)
    assert poked and any(done < asked for asked, done in ex.run.step_calls)
    assert ex.run.iteration == start + 300


def test_read_outs_follow_a_spectral_parameter(make_explorer):
    """A spectral run solves again for a new gamma without counting an iteration; the
    read-outs follow it all the same."""
    from nbembed import SpectralSSDR
    X, y = blobs(150)
    labels = np.where(np.arange(len(X)) % 5 == 0, y, -1)
    ex = make_explorer(X, method=SpectralSSDR(n_components=2), labels=labels)
    ex.wait(timeout=60)
    assert wait_for(lambda: ex.quality.get("iteration") == ex.run.iteration)
    first = dict(ex.quality)
    ex.set_trait("params", {"gamma": 50.0})
    assert wait_for(lambda: len(ex.quality["history"]["iteration"]) == 2, timeout=30)
    assert ex.quality["trustworthiness"] == pytest.approx(
        metrics.trustworthiness(X, ex.embedding, K))
    assert ex.quality["trustworthiness"] != first["trustworthiness"]


def test_step_is_refused_while_running_and_for_bad_counts(make_explorer):
    ex = make_explorer()
    assert wait_for(lambda: ex.status == "running")
    with pytest.raises(ValueError, match="pause it first"):
        ex.step()
    ex.pause()
    ex.wait(timeout=30)
    with pytest.raises(ValueError, match="n"):
        ex.step(0)
    before = ex.run.iteration
    ex._on_browser_message(ex, {"type": "step", "n": "two"}, [])
    assert "Ignored a message" in ex.notice
    ex._on_browser_message(ex, {"type": "step", "n": 3}, [])
    ex.wait(timeout=30)
    assert wait_for(lambda: ex.run.iteration == before + 3)


def test_step_message_parses():
    assert messages.parse({"type": "step"}) == ("step", {"n": 1})
    assert messages.parse({"type": "step", "n": 4.0}) == ("step", {"n": 4})
    with pytest.raises(messages.MessageError):
        messages.parse({"type": "step", "n": True})


def test_a_restart_starts_a_new_history(make_explorer):
    X, _ = blobs(40)
    ex = make_explorer(X=X, method=FakeMethod(seconds_per_iteration=1e-3))
    assert wait_for(lambda: len(ex.quality.get("history", {}).get("iteration", [])) >= 2)
    ex.pause()
    ex.wait(timeout=30)
    old = ex.run
    ex.restart()
    assert wait_for(lambda: ex.run is not old)
    ex.pause()
    ex.wait(timeout=30)
    assert wait_for(lambda: ex.quality["iteration"] == ex.run.iteration)
    history = ex.quality["history"]["iteration"]
    assert history == sorted(history) and history[-1] == ex.run.iteration
