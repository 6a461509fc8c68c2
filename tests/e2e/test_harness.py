"""The browser harness itself: a page that stops answering ends its wait with a
clear error instead of holding the test run until CI's limit, and the shared
JupyterLab page is replaced after its renderer dies."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from . import conftest
from .conftest import (BrowserStopped, chromium_context, kill_renderers,
                       missing_browser_reason, new_page)

pytestmark = pytest.mark.skipif(missing_browser_reason() is not None,
                                reason=str(missing_browser_reason()))


@pytest.fixture
def own_browser(tmp_path):
    """A browser of the test's own: the tests that kill renderers on purpose must
    not take the shared browser of the other tests with them, should Chromium not
    survive it (seen once on a busy machine)."""
    with chromium_context(tmp_path / "profile") as context:
        yield context

#: A condition that is never met and, once its poll is under way, stops the page's
#: main thread for good, so the page answers nothing (not even the request to
#: cancel the poll, which is where Playwright's own timeout waits forever).
_HANGS_WHILE_POLLED = """() => {
  window.polls = (window.polls || 0) + 1;
  if (window.polls === 3) setTimeout(() => { for (;;) {} }, 0);
  return false;
}"""

#: Waits on a hung page, then opens a new page, in a process of its own.
_HUNG_PAGE = """
import json, sys
from tests.e2e import conftest

def reached(stage):
    print("reached:", stage, file=sys.stderr, flush=True)

conftest.HUNG_GRACE_S = 1.0
reached("start")
with conftest.chromium_context(sys.argv[1]) as context:
    reached("browser started")
    page = conftest.new_page(context)
    page.goto("data:text/html,<p>hung</p>")
    reached("page open")
    try:
        conftest.wait_for_js(page, sys.argv[2], None, what="a flag that never comes",
                             timeout=1.0, diagnostics=lambda: "")
        stopped = None
    except conftest.BrowserStopped as exc:
        stopped = str(exc)
    reached("wait ended")
    fresh = conftest.new_page(context)
    reached("new page open")
    answer = fresh.evaluate("() => 6 * 7")
    fresh.close()
    page.close()
    reached("pages closed")
print(json.dumps(dict(stopped=stopped, answer=answer)))
"""

#: How long that process may take: its own waits take a few seconds.
HUNG_PAGE_LIMIT_S = 3 * conftest.TIMEOUT_S


def test_a_wait_on_a_hung_page_ends_with_browser_stopped(tmp_path):
    """A wait on a page whose main thread never answers ends with BrowserStopped
    (its renderer killed), and the browser lives on: a new page works.

    It runs in a process of its own, with its own Playwright driver and browser:
    in full parallel runs the new page after the kill has been seen to wait for
    good (twice in one CI run), in ``context.new_page()``, which neither killing
    the renderers nor killing the whole browser ended. Should that happen, the
    process and everything it started are killed after ``HUNG_PAGE_LIMIT_S`` and
    BrowserStopped is raised, so the test runs once more and no worker is held."""
    process = subprocess.Popen(
        [sys.executable, "-c", _HUNG_PAGE, str(tmp_path / "profile"), _HANGS_WHILE_POLLED],
        cwd=conftest.REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = process.communicate(timeout=HUNG_PAGE_LIMIT_S)
    except subprocess.TimeoutExpired:
        # Its driver and the browser (which runs in a session of its own) first.
        for pid in conftest._descendants(process.pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        process.kill()
        _, err = process.communicate()
        # where it stopped, for the report: the last stage the process reached
        stages = [line for line in err.splitlines() if line.startswith("reached:")]
        last = stages[-1] if stages else "reached: nothing"
        raise BrowserStopped(f"the hung-page process did not end within "
                             f"{HUNG_PAGE_LIMIT_S:.0f} s (last {last}); it was killed") from None
    assert process.returncode == 0, err[-3000:]
    result = json.loads(out.strip().splitlines()[-1])
    assert "waiting for a flag that never comes" in (result["stopped"] or ""), result
    assert result["answer"] == 42


def test_a_killed_browser_ends_the_calls_on_it_and_still_closes(own_browser):
    """:func:`conftest.kill_browser`, the last resort of a hang that killing renderers
    does not end: pending and later calls fail instead of waiting, and the fixture's
    teardown closes the dead browser."""
    page = new_page(own_browser)
    page.goto("data:text/html,<p>alive</p>")
    assert conftest.kill_browser(own_browser) >= 1
    with pytest.raises(Exception, match="(?i)closed|crash"):
        page.evaluate("() => 6 * 7")


def test_a_wait_that_times_out_on_a_live_page_says_what_it_waited_for(browser_context):
    page = browser_context.new_page()
    page.goto("data:text/html,<p>live</p>")
    with pytest.raises(AssertionError, match="timed out after 1 s waiting for a flag") as err:
        conftest.wait_for_js(page, "() => window.neverSet", None, what="a flag",
                             timeout=1.0, diagnostics=lambda: "page state: fine")
    assert not isinstance(err.value, BrowserStopped)
    assert "page state: fine" in str(err.value)
    page.close()


def test_a_crashed_lab_page_is_replaced(lab):
    page = lab._ensure_page()
    assert kill_renderers(lab.context) >= 1
    with pytest.raises(Exception, match="crash"):
        page.evaluate("() => 1")
    fresh = lab._ensure_page()
    assert fresh is not page
    assert fresh.evaluate("() => window.jupyterapp !== undefined")


_PARENT = """
import subprocess, sys, time
from tests.e2e.conftest import die_with_parent
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                         start_new_session=True, preexec_fn=die_with_parent)
print(child.pid, flush=True)
time.sleep(600)
"""


def test_a_server_dies_with_the_test_process_that_started_it():
    parent = subprocess.Popen([sys.executable, "-c", _PARENT], stdout=subprocess.PIPE,
                              cwd=conftest.REPO_ROOT, text=True)
    child = int(parent.stdout.readline())
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + conftest.TIMEOUT_S
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _alive(child):
        os.kill(child, signal.SIGKILL)
        pytest.fail("the child outlived its parent")


def _alive(pid):
    # A killed child of a dead parent is reaped by init; until then it is a zombie.
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


_STUCK_PHASE = """
import sys, time
from tests.e2e import conftest
conftest.TEST_PHASE_LIMIT_S, conftest.STUCK_AFTER_KILL_S = 0.2, 0.3

class Item:
    nodeid = "tests/e2e/test_x.py::test_stuck"

    class config:
        class pluginmanager:
            getplugin = staticmethod(lambda name: None)  # no pytest here: nothing captured

phase = conftest._bounded(Item, "call")
next(phase)  # the phase starts
if sys.argv[1] == "ends":
    try:
        phase.send(None)
    except StopIteration:
        pass
time.sleep(float(sys.argv[2]))
"""


@pytest.mark.parametrize("how, code", [("stuck", 3), ("ends", 0)])
def test_a_phase_stuck_after_its_renderers_were_killed_stops_its_process(how, code):
    """A test phase that outlives the killing of its renderers stops the worker
    (pytest-xdist replaces it and reruns the test) and says which test it was,
    instead of waiting for the 10-minute faulthandler limit; a phase that ends
    leaves the process alone."""
    seconds = 600 if how == "stuck" else 2
    done = subprocess.run([sys.executable, "-c", _STUCK_PHASE, how, str(seconds)],
                          cwd=conftest.REPO_ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == code, done.stderr[-2000:]
    if how == "stuck":
        assert "tests/e2e/test_x.py::test_stuck: its call still runs" in done.stderr
        assert "Current thread" in done.stderr or "Thread 0x" in done.stderr
    else:
        assert "still runs" not in done.stderr
