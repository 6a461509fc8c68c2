"""The browser harness itself: a page that stops answering ends its wait with a
clear error instead of holding the test run until CI's limit, and the shared
JupyterLab page is replaced after its renderer dies."""

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


def test_a_wait_on_a_hung_page_ends_with_browser_stopped(own_browser, monkeypatch):
    monkeypatch.setattr(conftest, "HUNG_GRACE_S", 1.0)
    page = new_page(own_browser)
    page.goto("data:text/html,<p>hung</p>")
    with pytest.raises(BrowserStopped, match="waiting for a flag that never comes"):
        conftest.wait_for_js(page, _HANGS_WHILE_POLLED, None, what="a flag that never comes",
                             timeout=1.0, diagnostics=lambda: "")
    # The browser lives on: a new page works. (In full parallel runs this part has
    # been seen to wait for good on a busy machine; should it, the whole browser
    # is killed and the test run once more, instead of holding a worker.)
    with conftest.hang_watchdog(2 * conftest.TIMEOUT_S, "using the browser again",
                                own_browser, kill=conftest.kill_browser):
        fresh = new_page(own_browser)
        assert fresh.evaluate("() => 6 * 7") == 42
        fresh.close()
        page.close()


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
