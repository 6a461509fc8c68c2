"""Frames wait for a page that draws more slowly than the kernel sends."""

import time

import pytest

pytest.importorskip("anywidget")

from nbembed.widget import messages  # noqa: E402
from nbembed.widget.pacing import PagePacer  # noqa: E402
from test_widget import bundle, custom_msg, make_explorer, wait_for  # noqa: E402,F401


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_without_reports_every_frame_may_go():
    pacer = PagePacer(ahead=2, silence=5.0, clock=Clock())
    assert all(pacer.allows(sent) for sent in range(50))
    assert pacer.drawn is None and not pacer.pacing


def test_after_a_report_at_most_two_frames_go_ahead_of_the_page():
    clock = Clock()
    pacer = PagePacer(ahead=2, silence=5.0, clock=clock)
    pacer.report(3)
    assert pacer.allows(3) and pacer.allows(4)  # frames 4 and 5 may go
    assert not pacer.allows(5)
    pacer.report(2)  # an older report (another view of the widget) changes nothing
    assert pacer.drawn == 3 and not pacer.allows(5)
    pacer.report(5)
    assert pacer.allows(5) and pacer.allows(6) and not pacer.allows(7)


def test_a_silent_page_gets_one_frame_per_silence():
    clock = Clock()
    pacer = PagePacer(ahead=2, silence=5.0, clock=clock)
    pacer.report(1)
    assert not pacer.allows(3)
    clock.now += 4.9
    assert not pacer.allows(3)
    clock.now += 0.2
    assert pacer.allows(3)
    assert not pacer.allows(4)  # the next one waits another silence
    clock.now += 5.0
    assert pacer.allows(4)


def test_frames_are_not_paced_while_a_cell_runs():
    pacer = PagePacer(ahead=2, silence=5.0, clock=Clock())
    pacer.report(1)
    assert not pacer.allows(10) and pacer.pacing
    pacer._cell_started()
    assert pacer.allows(10) and not pacer.pacing
    pacer._cell_ended()
    assert not pacer.allows(10) and pacer.pacing


def test_frames_a_page_paces_are_not_held_to_the_byte_limit(make_explorer, monkeypatch):
    from nbembed.widget import frames

    ex = make_explorer(frame_rate=20, autostart=False)
    wait_for(lambda: ex.run is not None and ex.frames_sent >= 1)
    ex._frame_bytes = 4000  # as after a frame of 1000 points that all moved
    # A limit that allows one such frame a second.
    monkeypatch.setattr(frames, "MAX_STREAM_BYTES_PER_SECOND", 4000.0)
    assert ex._publish_interval() == pytest.approx(1.0)
    ex._page_drew(ex.frame_id)  # a page reports: it paces the frames from now on
    assert ex._publish_interval() == pytest.approx(1 / 20)
    ex._pacer._cell_started()  # its reports cannot be read while a cell runs
    assert ex._publish_interval() == pytest.approx(1.0)
    ex._pacer._cell_ended()
    assert ex._publish_interval() == pytest.approx(1 / 20)


def test_the_report_message_is_checked():
    assert messages.parse({"type": "drawn", "frame": 7}) == ("_page_drew", {"frame": 7})
    for bad in ({"type": "drawn"}, {"type": "drawn", "frame": -1},
                {"type": "drawn", "frame": "7"}, {"type": "drawn", "frame": 1.5}):
        with pytest.raises(messages.MessageError):
            messages.parse(bad)


def test_the_explorer_sends_no_further_than_two_frames_past_the_page(make_explorer):
    ex = make_explorer(frame_rate=60)
    ex._pacer.silence = 600.0
    wait_for(lambda: ex.frames_sent >= 3)  # no page reports yet: frames flow
    drawn = ex.frames_sent
    ex._handle_msg(custom_msg({"type": "drawn", "frame": drawn}))
    wait_for(lambda: ex.frames_sent >= drawn + 2)
    time.sleep(0.5)  # at 60 frames a second, many more would have gone
    assert ex.frames_sent == drawn + 2 and ex.run.iteration > 0
    ex._handle_msg(custom_msg({"type": "drawn", "frame": drawn + 2}))
    wait_for(lambda: ex.frames_sent == drawn + 4)
    ex.params = {"alpha": 0.8}  # a change is always shown
    wait_for(lambda: ex.frames_sent > drawn + 4)
