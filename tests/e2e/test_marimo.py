"""The Explorer in marimo, driven by a headless Chromium.

The notebook is the example of docs/frontends.md, so the page's example is what
runs here. One ``marimo edit`` server (no token, on a free port of 127.0.0.1)
serves it to one page that can reach nothing but that server. The tests wait
on the DOM attributes the widget keeps up to date, and read what the
notebook's own cells print: a cell that reads ``explorer.selection`` must
re-run with every lasso, which proves the selection reached Python.

marimo renders an anywidget inside a shadow root; Playwright's locators reach
into it, and the JavaScript here searches shadow roots explicitly.
"""

from __future__ import annotations

import contextlib
import io
import os
import pathlib
import re
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from .conftest import (REPO_ROOT, TIMEOUT_S, die_with_parent, draw_lasso, free_port,
                       route_offline, wait_for_js)

pytest.importorskip("marimo")
pytest.importorskip("anywidget")

DOCS_PAGE = REPO_ROOT / "docs" / "frontends.md"

#: Starting marimo, its kernel, the imports and (on a fresh cache) Numba's compilation
#: take about a minute on a loaded two-core machine; leave room.
START_TIMEOUT_S = 300.0

#: Every later wait: a cell re-run or a round trip through the kernel.
WAIT_S = max(TIMEOUT_S, 120.0)

#: Small enough that the plot (62% of the window's height) fits in marimo's output
#: box (610 px high), so that a lasso over it stays on screen.
VIEWPORT = {"width": 1400, "height": 900}

N_POINTS = 500

#: Lasso polygons as fractions of the plot box.
CENTER = [(0.2, 0.2), (0.8, 0.2), (0.8, 0.8), (0.2, 0.8)]
LEFT_STRIP = [(0.03, 0.03), (0.45, 0.03), (0.45, 0.97), (0.03, 0.97)]

#: JavaScript: ``findDeep(selector)``, the first match in the document or in any
#: shadow root below it (marimo renders an anywidget into one).
FIND_DEEP = """
  const findDeep = (selector, node = document) => {
    const hit = node.querySelector(selector);
    if (hit) return hit;
    for (const el of node.querySelectorAll('*')) {
      if (!el.shadowRoot) continue;
      const inner = findDeep(selector, el.shadowRoot);
      if (inner) return inner;
    }
    return null;
  };
"""

ROOT = ".nbembed-explorer"


def notebook_source():
    """The marimo notebook of docs/frontends.md (its python block that imports marimo)."""
    text = DOCS_PAGE.read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S)
              if b.startswith("import marimo")]
    assert len(blocks) == 1, f"expected one marimo notebook in {DOCS_PAGE}, found {len(blocks)}"
    return blocks[0]


# ------------------------------------------------------------------ server

def _children(pid):
    """Processes whose parent is ``pid`` (read from /proc; empty elsewhere)."""
    found = []
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            # the command name, in parentheses, may hold spaces: split after it
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                found.append(int(stat.parent.name))
    return found


def _descendants(pid):
    todo, found = [pid], []
    while todo:
        children = _children(todo.pop())
        found += children
        todo += children
    return found


class MarimoServer:
    """``marimo edit NOTEBOOK`` headless, without a token, on a free port of 127.0.0.1.

    Its configuration lives in ``state_dir`` (cells run as the page opens, no update
    check). Leaving stops the server with SIGTERM, which closes its kernels; a
    kernel still alive afterwards (marimo starts each in a session of its own) is
    killed by its process id.
    """

    def __init__(self, notebook, state_dir):
        self.notebook = pathlib.Path(notebook)
        self.state_dir = pathlib.Path(state_dir)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = self.state_dir / "marimo.log"
        self.process = None

    def environment(self):
        config = self.state_dir / "config" / "marimo" / "marimo.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text("[runtime]\nauto_instantiate = true\n")
        env = dict(os.environ)
        env["XDG_CONFIG_HOME"] = str(self.state_dir / "config")
        env["XDG_STATE_HOME"] = str(self.state_dir / "state")
        # The kernel imports nbembed from this checkout, like the rest of the tests.
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p)
        env.setdefault("NUMBA_NUM_THREADS", "1")
        env.setdefault("OMP_WAIT_POLICY", "passive")
        return env

    def log_tail(self, n=30):
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])

    def _healthy(self):
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(f"{self.url}/health", timeout=5) as response:
                return response.status == 200
        return False

    def __enter__(self):
        marimo = [sys.executable, "-m", "marimo", "edit"]
        usage = subprocess.run(marimo + ["--help"], capture_output=True, text=True,
                               timeout=START_TIMEOUT_S).stdout
        # Flags of recent marimo versions: the update check and the sandbox prompt.
        optional = [flag for flag in ("--skip-update-check", "--no-sandbox") if flag in usage]
        command = marimo + [str(self.notebook), "--headless", "--no-token", "--host",
                            "127.0.0.1", "--port", str(self.port), *optional]
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                command, cwd=self.notebook.parent, env=self.environment(),
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=die_with_parent)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._healthy():
            if self.process.poll() is not None:
                raise RuntimeError(f"marimo exited with status {self.process.returncode}:\n"
                                   f"{self.log_tail()}")
            if time.monotonic() > deadline:
                self.__exit__()
                raise RuntimeError(f"marimo did not answer within {START_TIMEOUT_S:.0f} s:\n"
                                   f"{self.log_tail()}")
            time.sleep(0.5)
        return self

    def __exit__(self, *exc):
        if self.process is None or self.process.poll() is not None:
            return
        started = _descendants(self.process.pid)
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for pid in started:  # only processes this server started
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


# -------------------------------------------------------------------- page

class MarimoPage:
    """The notebook open in one page, with waits that explain their failures."""

    def __init__(self, page, server, refused):
        self.page = page
        self.server = server
        self.refused = refused
        self.console = []
        page.on("console", lambda msg: msg.type == "error"
                and self.console.append(f"[{msg.type}] {msg.text}"))
        page.on("pageerror", lambda err: self.console.append(f"[pageerror] {err}"))

    def locator(self, selector):
        return self.page.locator(selector).first

    def click(self, action):
        self.locator(f'{ROOT} button[data-action="{action}"]').click()

    def attr(self, name):
        return self.locator(ROOT).get_attribute(name)

    def wait_js(self, script, arg=None, *, what, timeout=WAIT_S):
        """Wait until the JavaScript function ``script(arg)`` returns a truthy value."""
        return wait_for_js(self.page, script, arg, what=what, timeout=timeout,
                           diagnostics=self.diagnostics)

    def wait_attr(self, name, predicate, *, what, timeout=WAIT_S):
        """Wait until attribute ``name`` of the Explorer's root satisfies the JavaScript
        ``predicate``; return its value."""
        script = "([root, name]) => {" + FIND_DEEP + f"""
          const el = findDeep(root);
          const v = el && el.getAttribute(name);
          return v !== null && ({predicate})(v) ? {{value: v}} : false;
        }}"""
        return self.wait_js(script, [ROOT, name], what=what, timeout=timeout)["value"]

    def wait_output(self, pattern, *, what, timeout=WAIT_S):
        """Wait until a cell output (outside the widget) matches the regular expression
        ``pattern``; return the match's groups."""
        found = self.wait_js("""(pattern) => {
          const match = new RegExp(pattern).exec(document.body.innerText);
          return match ? {groups: match.slice(1)} : false;
        }""", pattern, what=what, timeout=timeout)
        return found["groups"]

    def painted_pixels(self):
        """How many pixels of the plot, as the screen shows it, are not background."""
        import numpy as np
        Image = pytest.importorskip("PIL.Image")

        png = self.locator(f"{ROOT} .nbembed-plot").screenshot()
        image = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
        inside = image[3:-3, 3:-3]  # not the plot's border
        return int((np.abs(inside - 255).sum(axis=2) > 40).sum())

    def diagnostics(self):
        try:
            state = self.page.evaluate("(root) => {" + FIND_DEEP + """
              const el = findDeep(root);
              const attrs = el ? Object.fromEntries([...el.attributes]
                  .filter((a) => a.name.startsWith('data-')).map((a) => [a.name, a.value])) : null;
              const notice = el && el.querySelector('[data-role="notice"]');
              const error = el && el.querySelector('.nbembed-error');
              return {explorer_root: attrs, notice: notice && notice.textContent,
                      widget_error: error && error.textContent,
                      page_text: document.body.innerText.slice(0, 1500)};
            }""", ROOT)
        except Exception as exc:  # the page itself may be gone
            state = {"page": repr(exc)}
        console = "\n".join(self.console[-20:])
        return (f"page state: {state}\nrefused requests: {self.refused[:10]}\n"
                f"browser console errors (last 20):\n{console}\n"
                f"marimo log:\n{self.server.log_tail(15)}")

    def lasso(self, polygon):
        """Draw ``polygon`` with the lasso; return how many points the widget selected."""
        button = self.locator(f'{ROOT} button[data-action="lasso"]')
        if button.get_attribute("aria-pressed") != "true":
            button.click()
        self.wait_js("(root) => {" + FIND_DEEP + """
          const button = findDeep(root + ' button[data-action="lasso"]');
          return button && button.getAttribute('aria-pressed') === 'true';
        }""", ROOT, what="the lasso button to report aria-pressed = true")
        plot = self.locator(f"{ROOT} .nbembed-plot")
        plot.scroll_into_view_if_needed()
        box = plot.bounding_box()
        points = [[box["x"] + fx * box["width"], box["y"] + fy * box["height"]]
                  for fx, fy in polygon]
        # marimo's output box scrolls: the whole polygon must be over the visible plot.
        hidden = self.page.evaluate("([root, points]) => {" + FIND_DEEP + """
          const plot = findDeep(root + ' .nbembed-plot');
          const shown = ([x, y]) => plot.contains(plot.getRootNode().elementFromPoint(x, y));
          return points.filter((point) => !shown(point));
        }""", [ROOT, points])
        assert not hidden, f"parts of the lasso are not over the visible plot: {hidden}, {box}"
        # Without the last count, the wait below sees this lasso's count even when
        # it equals the last one.
        self.page.evaluate("(root) => {" + FIND_DEEP + "delete findDeep(root).dataset.selected;}",
                           ROOT)
        draw_lasso(self.page, box, polygon)
        count = int(self.wait_attr("data-selected", "(v) => true",
                                   what="the widget to count the lasso's points"))
        assert count > 0, f"the lasso {polygon} selected nothing"
        return count


@pytest.fixture(scope="module")
def marimo_notebook(browser_context, tmp_path_factory):
    """The example notebook of docs/frontends.md open in ``marimo edit``, its Explorer drawn."""
    folder = tmp_path_factory.mktemp("marimo")
    notebook = folder / "explorer_demo.py"
    notebook.write_text(notebook_source(), encoding="utf-8")
    with MarimoServer(notebook, folder) as server:
        page = browser_context.new_page()
        page.set_viewport_size(VIEWPORT)
        refused = []
        route_offline(page, server.url, refused)
        nb = MarimoPage(page, server, refused)
        try:
            page.goto(f"{server.url}/")
            nb.wait_attr("data-n", f"(v) => v === '{N_POINTS}'", timeout=START_TIMEOUT_S,
                         what=f"the Explorer to render {N_POINTS} points (data-n)")
            nb.wait_attr("data-frame", "(v) => Number(v) >= 1", timeout=START_TIMEOUT_S,
                         what="the Explorer to draw its first frame (data-frame >= 1)")
            nb.wait_output(r"Selected: (0) points", timeout=START_TIMEOUT_S,
                           what="the cell that reads the selection to run")
            yield nb
        finally:
            page.close()


# ------------------------------------------------------------------- tests

def wait_done(nb, timeout=WAIT_S):
    """Wait until the run has ended (HSSNE stops once it has settled, within 1000
    iterations); its first iterations can huddle the points in a few spots."""
    nb.wait_attr("data-status", "(v) => v === 'done'", timeout=timeout,
                 what="the run to end (data-status = done)")


def test_the_map_draws_and_frames_arrive(marimo_notebook):
    nb = marimo_notebook
    wait_done(nb, timeout=START_TIMEOUT_S)
    assert nb.painted_pixels() > 1000, "the plot shows (almost) no points"
    # Restart is a message to Python; the positions of a new run coming back prove
    # that frames arrive.
    version, frame = int(nb.attr("data-version")), int(nb.attr("data-frame"))
    nb.click("restart")
    nb.wait_attr("data-version", f"(v) => Number(v) >= {version + 3}",
                 what="three more position updates from Python after Restart")
    nb.wait_attr("data-frame", f"(v) => Number(v) > {frame}",
                 what="the new positions drawn after Restart")
    wait_done(nb)
    assert nb.painted_pixels() > 1000, "the plot shows (almost) no points after Restart"
    assert nb.refused == [], f"the page fetched from the network: {nb.refused}"


def test_a_lasso_reruns_the_cell_that_reads_the_selection(marimo_notebook):
    nb = marimo_notebook
    nb.click("clear-selection")
    nb.wait_output(r"Selected: (0) points", what="no selection after Clear selection")
    first = nb.lasso(CENTER)
    nb.wait_output(rf"Selected: ({first}) points",
                   what=f"the dependent cell to show the lasso's {first} points")
    nb.click("clear-selection")
    nb.wait_output(r"Selected: (0) points", what="the dependent cell to show 0 points")
    second = nb.lasso(LEFT_STRIP)
    (digits,) = nb.wait_output(rf"Selected: {second} points \(digits \[([0-9, ]*)\]\)",
                               what=f"the dependent cell to show the lasso's {second} points")
    assert digits, "the selected points have no digits"
    notice = nb.locator(f'{ROOT} [data-role="notice"]').text_content()
    assert "Ignored" not in notice, notice
    assert nb.refused == [], f"the page fetched from the network: {nb.refused}"


def test_an_annotation_made_in_the_widget_reaches_python(marimo_notebook):
    nb = marimo_notebook
    before = int(nb.wait_output(r"Annotation steps: (\d+)", what="the annotations cell to run")[0])
    count = nb.lasso(CENTER)
    nb.wait_output(rf"Selected: ({count}) points", what=f"the {count} points in Python")
    nb.locator(f'{ROOT} select[data-role="mode"]').select_option("must_link")
    nb.click("apply")
    # Apply is a message carrying the selection; Python's answer re-runs the cell
    # that reads the marimo state the example sets from annotation_count.
    nb.wait_output(rf"Annotation steps: ({before + 1}) \(1 must-link group",
                   what="the annotations cell to show one more step and the must-link group")
    nb.wait_js("(root) => {" + FIND_DEEP + f"""
      const el = findDeep(root + ' [data-role="annotation-count"]');
      return el && el.textContent.trim() === '{before + 1}';
    }}""", ROOT, what="the widget to show the annotation count Python sent back")
    assert nb.refused == [], f"the page fetched from the network: {nb.refused}"


def test_pin_pins_the_lassoed_points(marimo_notebook):
    nb = marimo_notebook
    count = nb.lasso(LEFT_STRIP)
    nb.click("pin")  # a message carrying the selection the widget shows
    nb.wait_attr("data-pins-drawn", f"(v) => v === '{count}'",
                 what=f"the {count} lassoed points drawn as pinned, as Python sent them")
    nb.click("unpin-all")
    nb.wait_attr("data-pins-drawn", "(v) => v === '0'", what="no pinned points after Unpin all")
    assert nb.refused == [], f"the page fetched from the network: {nb.refused}"
