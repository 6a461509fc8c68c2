"""A JupyterLab server and a headless Chromium for the browser tests.

One server and one browser serve the whole session. Each scenario writes its
own notebook, opens it in the shared JupyterLab page, runs all its cells
without waiting for them, and then waits on DOM attributes the widget keeps up
to date, or asks the kernel for Python state. Its kernel is shut down
afterwards so no optimizer keeps running behind the next scenario.

The classes here are plain context managers, so ``benchmarks/bench_widget.py``
drives the same server and browser without pytest.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import faulthandler
import importlib.util
import json
import os
import pathlib
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

import pytest

CHROMIUM = pathlib.Path("/usr/bin/chromium")
REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]

#: Generous: CI machines have two cores and start a kernel per scenario.
TIMEOUT_S = 60.0

#: Playwright adds ``--headless``. Without the networking flags the closed
#: network refuses Chromium's background connections en masse.
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"]

VIEWPORT = {"width": 1400, "height": 1000}

#: How long past its own timeout a wait may stay unanswered before the page is
#: taken for hung (Playwright's timeout cannot end a wait whose page has stopped
#: answering: it asks the page to cancel the poll first).
HUNG_GRACE_S = 60.0

KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def missing_browser_reason():
    """Why the browser tests cannot run here, or None when they can."""
    if not CHROMIUM.exists():
        return (f"{CHROMIUM} not found; install it with `apt-get install chromium "
                f"fonts-liberation` (never `playwright install`)")
    if importlib.util.find_spec("playwright") is None:
        return "the playwright Python package is not installed (`pip install playwright`)"
    return None


# ----------------------------------------------------------------- browser

#: The Playwright driver of this process, shared by every open browser (its sync
#: API cannot be started twice in one thread): ``instance`` and how many use it.
_PLAYWRIGHT = {"instance": None, "users": 0}


@contextlib.contextmanager
def chromium_context(profile_dir, viewport=None):
    """A persistent Chromium context with a fresh profile in ``profile_dir`` and a
    window of ``viewport`` ({"width": ..., "height": ...}; default :data:`VIEWPORT`).
    Several may be open at once, each its own browser."""
    from playwright.sync_api import sync_playwright

    if _PLAYWRIGHT["users"] == 0:
        _PLAYWRIGHT["instance"] = sync_playwright().start()
    _PLAYWRIGHT["users"] += 1
    try:
        context = _PLAYWRIGHT["instance"].chromium.launch_persistent_context(
            str(profile_dir), executable_path=str(CHROMIUM), headless=True,
            args=CHROMIUM_FLAGS, viewport=viewport or VIEWPORT)
        context.set_default_timeout(TIMEOUT_S * 1000)
        _PROFILES[id(context)] = pathlib.Path(profile_dir).resolve()
        try:
            yield context
        finally:
            try:
                # Closing waits on the browser itself, which killing renderers does not free.
                with hang_watchdog(TIMEOUT_S, "closing the browser", context, kill=kill_browser):
                    context.close()
            finally:
                _PROFILES.pop(id(context), None)
    finally:
        _PLAYWRIGHT["users"] -= 1
        if _PLAYWRIGHT["users"] == 0:
            _PLAYWRIGHT["instance"].stop()
            _PLAYWRIGHT["instance"] = None


class BrowserStopped(AssertionError):
    """The browser's page stopped answering (its renderer hung), so a wait could not
    end; the e2e tests are rerun once on this error only (see ``pytest_collection_modifyitems``)."""


def _descendants(pid):
    """Process ids of every descendant of ``pid`` (Linux ``/proc``)."""
    children = {}
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            # The command name (field 2) may hold spaces; the parent id follows it.
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


#: The profile folder of each open browser context, by ``id(context)``: how
#: :func:`kill_renderers` tells this context's Chromium from any other.
_PROFILES = {}


def _kill_chromium(context, flags):
    """Kill the processes of the Chromium that runs ``context`` (``None``: of every
    one this process opened) whose command line holds every one of ``flags``, and
    wait until they are gone (or :data:`TIMEOUT_S`); returns how many were killed."""
    profiles = list(_PROFILES.values()) if context is None else [_PROFILES[id(context)]]
    wanted = [set(flags) | {f"--user-data-dir={profile}".encode()} for profile in profiles]
    killed = []
    for pid in _descendants(os.getpid()):
        with contextlib.suppress(OSError):
            # Chromium's children rewrite their command line as one string.
            words = set(pathlib.Path(f"/proc/{pid}/cmdline").read_bytes()
                        .replace(b"\0", b" ").split())
            if any(wanted_flags <= words for wanted_flags in wanted):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
    deadline = time.monotonic() + TIMEOUT_S
    while any(pathlib.Path(f"/proc/{pid}").exists() for pid in killed) and \
            time.monotonic() < deadline:
        time.sleep(0.05)
    return len(killed)


def kill_renderers(context=None):
    """Kill the renderer processes of the Chromium that runs ``context`` (a context of
    :func:`chromium_context`; ``None``: of every one this process opened); the calls
    waiting on their pages then fail with "Target crashed". Returns once Chromium has
    reaped them (so that a new page does not land in one of them, such as the spare
    renderer it keeps ready), or after :data:`TIMEOUT_S`; returns how many were killed."""
    return _kill_chromium(context, {b"--type=renderer"})


def kill_browser(context):
    """Kill every process of the Chromium that runs ``context``, the browser itself
    included: what is left when a call waits on the browser rather than on a page."""
    return _kill_chromium(context, set())


def new_page(context, attempts=3):
    """``context.new_page()``, tried again when the page lands in a renderer that
    has just crashed (right after :func:`kill_renderers`, Chromium may still hand
    out the dead spare renderer before it has noticed)."""
    from playwright.sync_api import Error as PlaywrightError

    for attempt in range(attempts):
        try:
            return context.new_page()
        except PlaywrightError as exc:
            if "crash" not in str(exc).lower() or attempt == attempts - 1:
                raise


@contextlib.contextmanager
def hang_watchdog(seconds, what, context=None, kill=None):
    """Bound Playwright calls that have no timeout of their own: should the block not
    end within ``seconds``, the renderers of ``context``'s browser (``None``: of every
    browser of this process) are killed, which ends the calls waiting on their pages,
    and :class:`BrowserStopped` is raised in place of the error that follows.
    ``kill(context)`` replaces :func:`kill_renderers` (e.g. :func:`kill_browser`)."""
    hung = threading.Event()

    def on_hang():
        hung.set()
        (kill or kill_renderers)(context)

    watchdog = threading.Timer(seconds, on_hang)
    watchdog.daemon = True
    watchdog.start()
    try:
        yield
    except Exception as exc:
        if hung.is_set() and not isinstance(exc, BrowserStopped):
            raise BrowserStopped(f"the page stopped answering while {what}; its renderer "
                                 f"was killed after {seconds:.0f} s") from exc
        raise
    finally:
        watchdog.cancel()


def wait_for_js(page, script, arg, *, what, timeout, diagnostics):
    """``page.wait_for_function(script, arg)`` polled every 100 ms (not per animation
    frame, which stops with the page's frames) with a clear error after ``timeout``
    seconds. Should the page stop answering, its renderer is killed
    :data:`HUNG_GRACE_S` later and :class:`BrowserStopped` raised, instead of
    waiting forever. ``diagnostics()`` describes the page for the error."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        with hang_watchdog(timeout + HUNG_GRACE_S, f"waiting for {what}", page.context):
            return page.wait_for_function(script, arg=arg, timeout=timeout * 1000,
                                          polling=100).json_value()
    except PlaywrightTimeout:
        raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}\n"
                             f"{diagnostics()}") from None


# ------------------------------------------------------------------ server

def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def die_with_parent():
    """``preexec_fn`` of a server: the kernel sends it SIGTERM when the test process
    that started it dies, so a worker stopped on a hang (``faulthandler_timeout``)
    leaves no server behind."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def isolated_jupyter_env(base, extra=None):
    """Environment whose Jupyter config, runtime, settings and IPython dirs live in ``base``.

    Kernels get one Numba thread unless the environment or ``extra`` (variables
    to set) says otherwise.
    """
    base = pathlib.Path(base)
    dirs = {"JUPYTER_CONFIG_DIR": "config", "JUPYTER_RUNTIME_DIR": "runtime",
            "JUPYTERLAB_SETTINGS_DIR": "lab-settings",
            "JUPYTERLAB_WORKSPACES_DIR": "lab-workspaces", "IPYTHONDIR": "ipython"}
    env = dict(os.environ)
    for var, name in dirs.items():
        (base / name).mkdir(parents=True, exist_ok=True)
        env[var] = str(base / name)
    notification = (base / "lab-settings" / "@jupyterlab" / "apputils-extension"
                    / "notification.jupyterlab-settings")
    notification.parent.mkdir(parents=True, exist_ok=True)
    notification.write_text(json.dumps({"fetchNews": "false"}))
    # Kernels import nbembed from this checkout, like the rest of the tests.
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p)
    env.setdefault("NUMBA_NUM_THREADS", "1")
    env.setdefault("OMP_WAIT_POLICY", "passive")
    env.update(extra or {})
    return env


class LabServer:
    """``jupyter lab`` on a free port of 127.0.0.1, serving ``root_dir``.

    Use as a context manager: entering starts it and waits until
    ``/api/status`` answers; leaving asks it to shut down (which stops its
    kernels) and then kills only the process group it was started in.
    """

    def __init__(self, root_dir, state_dir, env=None):
        self.root_dir = pathlib.Path(root_dir)
        self.extra_env = env
        self.state_dir = pathlib.Path(state_dir)
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = self.state_dir / "jupyterlab.log"
        self.process = None

    def api(self, path, method="GET"):
        request = urllib.request.Request(f"{self.url}{path}?token={self.token}", method=method,
                                         data=b"" if method == "POST" else None)
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status

    def log_tail(self, n=40):
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])

    def __enter__(self):
        self.root_dir.mkdir(parents=True, exist_ok=True)
        env = isolated_jupyter_env(self.state_dir, self.extra_env)
        command = [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
                   "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}",
                   "--ServerApp.port_retries=0", f"--IdentityProvider.token={self.token}",
                   f"--ServerApp.root_dir={self.root_dir}",
                   "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
                   "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                command, cwd=self.root_dir, env=env,
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=die_with_parent)
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with status {self.process.returncode}:"
                                   f"\n{self.log_tail()}")
            with contextlib.suppress(OSError):
                if self.api("/api/status") == 200:
                    return self
            if time.monotonic() > deadline:
                self.__exit__()
                raise RuntimeError(f"jupyter lab did not answer within {TIMEOUT_S:.0f} s:\n"
                                   f"{self.log_tail()}")
            time.sleep(0.2)

    def __exit__(self, *exc):
        if self.process is None or self.process.poll() is not None:
            return
        with contextlib.suppress(OSError):
            self.api("/api/shutdown", method="POST")
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self._kill_group(signal.SIGTERM)
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._kill_group(signal.SIGKILL)
                self.process.wait()

    def _kill_group(self, sig):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, sig)  # the group this server leads, nothing else


# ---------------------------------------------------------------- notebooks

def write_notebook(path, cells):
    """Write a notebook of code cells with kernelspec metadata (so no kernel picker appears)."""
    import nbformat

    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(source) for source in cells],
        metadata={"kernelspec": KERNELSPEC, "language_info": {"name": "python"}})
    nbformat.write(nb, str(path))
    return path


def route_offline(page, server_url, refused, requested=None):
    """Let ``page`` reach only ``server_url`` (and ``data:`` / ``blob:`` URLs): other
    requests are refused and listed in ``refused``; every URL is listed in
    ``requested`` when given. Returns the route handler, for ``page.unroute``."""

    def guard(route):
        url = route.request.url
        if requested is not None:
            requested.append(url)
        if url.startswith((server_url, "data:", "blob:")):
            route.continue_()
        else:
            refused.append(url)
            route.abort()

    page.route("**/*", guard)
    return guard


#: JavaScript statements defining ``canvases(node)``, every canvas under ``node``
#: and its shadow roots (BokehJS draws into those), and ``painted(canvas)``,
#: whether any of its pixels was drawn.
CANVAS_HELPERS = """
  const canvases = (node, found = []) => {
    found.push(...node.querySelectorAll('canvas'));
    for (const el of node.querySelectorAll('*')) if (el.shadowRoot) canvases(el.shadowRoot, found);
    return found;
  };
  const painted = (canvas) => {
    if (!canvas.width || !canvas.height) return false;
    const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    for (let i = 3; i < pixels.length; i += 4) if (pixels[i]) return true;
    return false;
  };
"""

#: JavaScript: the notebook panel open on ``path``.
_FIND_PANEL = """
const findPanel = (path) => {
  for (const w of window.jupyterapp.shell.widgets('main')) {
    if (w.context && w.context.path === path) return w;
  }
  throw new Error('no notebook panel open on ' + path);
};
"""

_KERNEL_EXECUTE = _FIND_PANEL + """
async ([path, code]) => {
  const kernel = findPanel(path).sessionContext.session.kernel;
  const future = kernel.requestExecute({code, silent: false, store_history: false});
  let out = '';
  let error = null;
  future.onIOPub = (msg) => {
    const type = msg.header.msg_type;
    if (type === 'stream') out += msg.content.text;
    else if (type === 'error') {
      error = msg.content.ename + ': ' + msg.content.evalue + '\\n' +
              msg.content.traceback.join('\\n');
    }
  };
  await future.done;
  return {out, error};
}
"""


class JupyterLab:
    """The shared JupyterLab page; opens one notebook per scenario."""

    def __init__(self, context, server):
        self.context = context
        self.server = server
        self.page = None
        self._crashed = False
        self.console = []
        self._count = 0

    def _ensure_page(self):
        """The shared page; a new one when there is none or its renderer crashed
        (or was killed as hung), so one broken page does not fail every later test."""
        if self.page is not None and not self.page.is_closed() and not self._crashed:
            return self.page
        if self.page is not None and not self.page.is_closed():
            with contextlib.suppress(Exception):
                self.page.close()
        self._crashed = False
        page = new_page(self.context)
        page.on("console", lambda msg: self.console.append(f"[{msg.type}] {msg.text}"))
        page.on("pageerror", lambda err: self.console.append(f"[pageerror] {err}"))
        page.on("crash", lambda _: setattr(self, "_crashed", True))
        page.goto(f"{self.server.url}/lab?reset&token={self.server.token}")
        page.wait_for_function("() => window.jupyterapp !== undefined", polling=100)
        page.evaluate("async () => { await window.jupyterapp.restored; }")
        self.page = page
        return page

    def write(self, stem, cells):
        """Write ``cells`` to a fresh notebook in the server's root; return its name."""
        self._count += 1
        name = f"{self._count:02d}-{stem}.ipynb"
        write_notebook(self.server.root_dir / name, cells)
        return name

    @contextlib.contextmanager
    def notebook(self, stem, cells, *, run=True):
        """Open a new notebook of ``cells`` (run all of them unless ``run=False``).

        Yields a :class:`Notebook`; on exit its kernel is shut down and the
        panel closed.
        """
        page = self._ensure_page()
        name = self.write(stem, cells)
        self.console.clear()
        with hang_watchdog(TIMEOUT_S + HUNG_GRACE_S, f"opening {name}", page.context):
            page.evaluate("async (path) => { await window.jupyterapp.commands.execute("
                          "'docmanager:open', {path, factory: 'Notebook'}); }", name)
            notebook = Notebook(self, name)
        try:
            notebook.wait_kernel_idle()
            if run:
                notebook.run_all()
            yield notebook
        finally:
            notebook.close()


class Notebook:
    """One open notebook in the shared page, with waits that explain their failures."""

    def __init__(self, lab, path):
        self.lab = lab
        self.page = lab.page
        self.path = path
        self.panel_id = self.page.evaluate(_FIND_PANEL + "(path) => findPanel(path).id", path)
        self.scope = f'[id="{self.panel_id}"]'

    # -- running -------------------------------------------------------------
    def wait_kernel_idle(self, timeout=TIMEOUT_S):
        script = _FIND_PANEL + """(path) => {
          let panel;
          try { panel = findPanel(path); } catch (e) { return false; }
          const ctx = panel.sessionContext;
          const kernel = ctx.session && ctx.session.kernel;
          return panel.context.isReady && ctx.isReady && !!kernel &&
                 kernel.connectionStatus === 'connected' && kernel.status === 'idle';
        }"""
        self.wait_js(script, self.path, what="kernel started and idle", timeout=timeout)

    def run_all(self):
        """Start running every cell and return at once (awaiting it blocks until they end)."""
        self.page.evaluate(_FIND_PANEL + """(path) => {
          const app = window.jupyterapp;
          app.shell.activateById(findPanel(path).id);
          app.commands.execute('notebook:run-all-cells');
        }""", self.path)

    def py(self, code):
        """Run ``code`` in the notebook's kernel (queued behind running cells); return stdout."""
        result = self.page.evaluate(_KERNEL_EXECUTE, [self.path, code])
        if result["error"]:
            raise AssertionError(f"kernel raised while running\n{code}\n"
                                 f"{_ANSI.sub('', result['error'])}")
        return result["out"]

    def py_value(self, expression):
        """The value of a JSON-serializable Python ``expression`` in the kernel."""
        out = self.py(f"import json as _json\nprint(_json.dumps({expression}))")
        return json.loads(out.strip().splitlines()[-1])

    def wait_py(self, expression, *, what, timeout=TIMEOUT_S):
        """Poll the kernel until ``expression`` is true (for state no DOM attribute shows)."""
        deadline = time.monotonic() + timeout
        while not self.py_value(f"bool({expression})"):
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what} "
                                     f"(Python: {expression})\n{self.diagnostics()}")
            self.page.wait_for_timeout(50)

    def cell_output(self, index):
        """The text of cell ``index``'s output area (as the page shows it)."""
        return self.page.evaluate("""([scope, index]) => {
          const cell = document.querySelectorAll(scope + ' .jp-Notebook .jp-Cell')[index];
          const out = cell && cell.querySelector('.jp-OutputArea');
          return out ? out.innerText : null;
        }""", [self.scope, index])

    def close(self):
        if self.page.is_closed():
            return
        with contextlib.suppress(Exception):
            self.page.evaluate(_FIND_PANEL + """async (path) => {
              const panel = findPanel(path);
              await panel.sessionContext.shutdown();
              panel.context.model.dirty = false;
              panel.dispose();
            }""", self.path)

    # -- waiting -------------------------------------------------------------
    def wait_js(self, script, arg=None, *, what, timeout=TIMEOUT_S):
        """Wait until the JavaScript function ``script(arg)`` returns a truthy value."""
        return wait_for_js(self.page, script, arg, what=what, timeout=timeout,
                           diagnostics=self.diagnostics)

    def wait_attr(self, selector, name, predicate="(v) => v !== null", *, what=None,
                  timeout=TIMEOUT_S):
        """Wait until attribute ``name`` of ``selector`` (in this notebook) satisfies
        the JavaScript ``predicate``; return the attribute's value."""
        script = f"""([selector, name]) => {{
          const el = document.querySelector(selector);
          if (!el) return false;
          const v = el.getAttribute(name);
          return ({predicate})(v) ? {{value: v}} : false;
        }}"""
        what = what or f"{selector} [{name}] to satisfy {predicate}"
        found = self.wait_js(script, [f"{self.scope} {selector}", name], what=what,
                             timeout=timeout)
        return found["value"]

    def wait_selector(self, selector, *, what=None, timeout=TIMEOUT_S):
        self.wait_js("(s) => !!document.querySelector(s)", f"{self.scope} {selector}",
                     what=what or f"{selector} to appear", timeout=timeout)
        return self.locator(selector)

    def locator(self, selector):
        return self.page.locator(f"{self.scope} {selector}").first

    def attr(self, selector, name):
        return self.locator(selector).get_attribute(name)

    def diagnostics(self):
        """What the page shows: widget root attributes, errors, cell errors, console."""
        try:
            state = self.page.evaluate("""(scope) => {
              const root = document.querySelector(scope + ' .nbembed-explorer');
              const attrs = root ? Object.fromEntries([...root.attributes]
                  .filter(a => a.name.startsWith('data-')).map(a => [a.name, a.value])) : null;
              const texts = (sel) => [...document.querySelectorAll(scope + ' ' + sel)]
                  .map(e => e.innerText.trim()).filter(Boolean);
              return {explorer_root: attrs, widget_errors: texts('.nbembed-error'),
                      cell_errors: texts('.jp-OutputArea-output[data-mime-type=' +
                                         '"application/vnd.jupyter.stderr"]'),
                      outputs: texts('.jp-OutputArea-output').slice(0, 8)};
            }""", self.scope)
        except Exception as exc:  # the page itself may be gone
            state = {"page": repr(exc)}
        console = "\n".join(self.lab.console[-20:])
        return (f"page state: {json.dumps(state, indent=1)[:4000]}\n"
                f"browser console (last 20):\n{console}\n"
                f"server log:\n{self.lab.server.log_tail(15)}")


# ------------------------------------------------------ page without Jupyter

WIDGET_HOST = "http://nbembed.test"
FAKE_MODEL_PAGE = pathlib.Path(__file__).with_name("fake_model.html")


class WidgetPage:
    """A page rendering anywidget modules against a fake model."""

    def __init__(self, context):
        self.page = new_page(context)
        self.modules = {}
        self.errors = []
        self.page.on("pageerror", lambda err: self.errors.append(str(err)))
        self.page.on("console", lambda msg: msg.type == "error" and self.errors.append(msg.text))
        self.page.route(f"{WIDGET_HOST}/**", self._serve)

    def _serve(self, route):
        path = urllib.parse.urlparse(route.request.url).path
        if path == "/":
            route.fulfill(body=FAKE_MODEL_PAGE.read_text(), content_type="text/html")
        elif path in self.modules:
            route.fulfill(body=self.modules[path], content_type="text/javascript")
        else:
            route.fulfill(status=404, body="not found")

    @staticmethod
    def _split(state):
        from ipywidgets.widgets.widget import _remove_buffers

        state, paths, buffers = _remove_buffers(state)
        return state, paths, [base64.b64encode(bytes(b)).decode() for b in buffers]

    def mount(self, widget, *, pad=8):
        """Load a fresh page and render ``widget``'s module with its current state."""
        state = dict(widget.get_state())
        path = f"/module-{len(self.modules)}.js"
        self.modules[path] = state.pop("_esm")
        css = state.pop("_css", None)
        state, paths, buffers = self._split(state)
        self.errors.clear()
        self.page.goto(f"{WIDGET_HOST}/")
        self.page.evaluate("(args) => window.harness.mount(args)",
                           {"esmUrl": f"{WIDGET_HOST}{path}", "css": css, "state": state,
                            "bufferPaths": paths, "buffers": buffers, "pad": pad})

    def from_python(self, widget, names, *, pad=8):
        """Send the current values of traits ``names`` of ``widget`` to the page."""
        diff, paths, buffers = self._split(widget.get_state(names))
        self.page.evaluate("(args) => window.harness.fromPython(args)",
                           {"diff": diff, "bufferPaths": paths, "buffers": buffers, "pad": pad})

    def to_python(self, widget):
        """Apply to ``widget`` everything the page sent since the last call; return it."""
        messages = self.page.evaluate("() => window.harness.takeWire()")
        for message in messages:
            widget.set_state({name: memoryview(base64.b64decode(value["__bytes__"]))
                              if isinstance(value, dict) and "__bytes__" in value else value
                              for name, value in message.items()})
        return messages

    def commands_to_python(self, widget):
        """Hand ``widget`` the custom messages the page sent since the last call, as
        the kernel would; return them, leaving out the page's reports of the frames
        it drew (which go to the widget too)."""
        sent = self.page.evaluate("() => window.harness.fake.sent.splice(0)")
        for message in sent:
            widget._on_browser_message(widget, message["content"], [])
        return [m["content"] for m in sent if m["content"].get("type") != "drawn"]

    def wait_for_command(self):
        """Wait until the page has sent a custom message other than a report of a
        frame drawn."""
        self.page.wait_for_function(
            "() => window.harness.fake.sent.some((m) => m.content.type !== 'drawn')")

    def wait_attr(self, selector, name, predicate, what):
        found = wait_for_js(self.page, """([selector, name, predicate]) => {
                              const el = document.querySelector(selector);
                              const v = el && el.getAttribute(name);
                              return el && (0, eval)(predicate)(v) ? {value: v} : false;
                            }""", [selector, name, predicate], what=what, timeout=TIMEOUT_S,
                            diagnostics=lambda: f"page errors: {self.errors}")
        return found["value"]


# ----------------------------------------------------------------- reruns

def pytest_collection_modifyitems(config, items):
    """Rerun a browser test once when, and only when, its page hung
    (:class:`BrowserStopped`): Chromium's renderer has been seen to stop answering
    under load before any of the project's code ran. Every other failure fails."""
    if not config.pluginmanager.hasplugin("rerunfailures"):
        return
    here = pathlib.Path(__file__).parent
    for item in items:
        if here in pathlib.Path(item.fspath).parents:
            item.add_marker(pytest.mark.flaky(reruns=1, only_rerun=["BrowserStopped"]))


#: How long one phase (setup, call or teardown) of a browser test may run before
#: every renderer of this process is killed. The slowest phase takes under a minute
#: on an idle machine; this bounds the calls that have no timeout of their own (an
#: ``evaluate`` that awaits a kernel, a key press) on a page that stopped answering.
TEST_PHASE_LIMIT_S = 300.0

#: How long a phase may go on after its renderers were killed before the process
#: stops itself: a call that waits on the browser or Playwright's driver rather
#: than on a page (seen: a worker waiting in the driver's event loop until the
#: 10-minute faulthandler limit) is not ended by killing renderers. pytest-xdist
#: then replaces the worker and the test is run once more.
STUCK_AFTER_KILL_S = 60.0


def _stop_stuck_process(item, phase):
    """Say which test is stuck where, with every thread's stack, and end this process.

    pytest's output capture is stopped first: it holds the test's output in a
    file that would be lost with the process."""
    capture = item.config.pluginmanager.getplugin("capturemanager")
    if capture is not None:
        capture.suspend_global_capture(in_=False)
    os.write(2, f"\n{item.nodeid}: its {phase} still runs {STUCK_AFTER_KILL_S:.0f} s after "
                f"its renderers were killed at {TEST_PHASE_LIMIT_S:.0f} s; stopping this test "
                f"process\n".encode())
    faulthandler.dump_traceback(file=2, all_threads=True)
    # Playwright's sync API runs the test in a greenlet that the thread stacks above
    # do not show while it waits: its frames say which call never returned.
    with contextlib.suppress(Exception):
        import gc
        import traceback

        import greenlet

        for glet in gc.get_objects():
            if isinstance(glet, greenlet.greenlet) and glet.gr_frame is not None:
                os.write(2, ("\nA waiting greenlet (most recent call last):\n" +
                             "".join(traceback.format_stack(glet.gr_frame))).encode())
    os._exit(3)


def _bounded(item, phase):
    stuck = threading.Timer(TEST_PHASE_LIMIT_S + STUCK_AFTER_KILL_S, _stop_stuck_process,
                            (item, phase))
    stuck.daemon = True
    stuck.start()
    try:
        with hang_watchdog(TEST_PHASE_LIMIT_S, f"the test's {phase} ran"):
            return (yield)
    finally:
        stuck.cancel()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    return (yield from _bounded(item, "setup"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    return (yield from _bounded(item, "call"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    return (yield from _bounded(item, "teardown"))


# ----------------------------------------------------------------- fixtures

@pytest.fixture(scope="session")
def browser_context(tmp_path_factory):
    """A headless Chromium context shared by every browser test of the session."""
    reason = missing_browser_reason()
    if reason:
        pytest.skip(reason)
    with chromium_context(tmp_path_factory.mktemp("chromium-profile")) as context:
        yield context


@pytest.fixture(scope="module")
def widget_page(browser_context):
    """A page of the fake-model harness, shared by the tests of a module."""
    wp = WidgetPage(browser_context)
    yield wp
    wp.page.close()


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory):
    reason = missing_browser_reason()
    if reason:
        pytest.skip(reason)
    base = tmp_path_factory.mktemp("jupyterlab")
    with LabServer(base / "notebooks", base / "state") as server:
        yield server


@pytest.fixture(scope="session")
def lab(browser_context, lab_server):
    """The shared JupyterLab page; ``lab.notebook(stem, cells)`` opens a scenario."""
    return JupyterLab(browser_context, lab_server)


# ------------------------------------------------------------------- input

def draw_lasso(page, box, polygon, *, modifiers=(), steps=4):
    """Drag the mouse along a closed ``polygon`` over the element ``box``.

    ``polygon`` holds (x, y) fractions of the box (0 = left / top); each edge
    is walked in ``steps`` pointer moves. Returns the polygon in page pixels.
    """
    points = [(box["x"] + fx * box["width"], box["y"] + fy * box["height"])
              for fx, fy in polygon]
    for key in modifiers:
        page.keyboard.down(key)
    page.mouse.move(*points[0])
    page.mouse.down()
    for x, y in points[1:] + points[:1]:
        page.mouse.move(x, y, steps=steps)
    page.mouse.up()
    for key in reversed(modifiers):
        page.keyboard.up(key)
    return points
