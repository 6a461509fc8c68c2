"""Where Numba keeps nbembed's compiled kernels, and when it may reuse them.

The kernels are compiled with ``cache=True`` (see :data:`nbembed._config.JIT`).
Left to itself, Numba writes the compiled code to ``__pycache__`` beside the
installed sources, and ``pip install`` of the same version replaces that
folder: the next fit in a fresh process compiled everything again (129 s
instead of 4.6 s for the digits). Numba's own check of a cache entry also
looks at one source file only, the kernel's: a kernel that inlines a function
from another file is reused after only that other file changed. Numba before
0.68 stamps the file with its modification time and size, so even an
identical reinstall misses.

:func:`install`, called by :mod:`nbembed._kernels` before any kernel module
is imported, puts a cache locator in front of Numba's for the files of
``nbembed/_kernels``:

* Folder: ``NUMBA_CACHE_DIR`` (or ``numba.config.CACHE_DIR``) when set, else
  the per-user cache folder, :func:`user_cache_dir`; inside it, one subfolder
  per installed copy of nbembed, so a reinstall or an upgrade reuses and
  overwrites its own files.
* Freshness: one stamp for every kernel, the SHA-256 of the contents of all
  kernel sources and ``_config.py`` (which holds the compiler flags). A
  reinstall of identical files loads the compiled code; a change to any of
  those files recompiles every kernel, so stale code is never loaded. Numba
  still keys each entry by its own version, the Python version, the CPU and
  the kernel's signature and bytecode.
* When that folder cannot be written (a read-only home), Numba's own
  locators are tried (``__pycache__`` beside the sources, then Numba's user
  folder); when none can, a private temporary folder for this process keeps
  ``cache=True`` from failing at import.

``NUMBA_CACHE_LOCATOR_CLASSES``, when set, replaces the list of locators and
with it this one. With a Numba whose internal locator API differs from the
one used here, :func:`install` registers nothing and Numba's default applies.

Several processes may compile the same kernels at once (Dask workers, two
notebooks, parallel tests). Numba saves an entry by reading the folder's
index, picking the first free data-file number, writing the index, then the
data: two processes that save different signatures of one kernel together
pick the same number, and the index can end up naming the other one's code,
which a later process then runs. :func:`install` therefore makes saving an
entry of these folders hold an exclusive lock on a lock file beside the index,
and loading one a shared lock (``fcntl.flock``; where it is missing, as on
Windows, Numba's behaviour is unchanged).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import os
import pathlib
import shutil
import sys
import tempfile

PACKAGE = pathlib.Path(__file__).resolve().parent

#: The folder whose functions the locator caches.
KERNELS = PACKAGE / "_kernels"

#: Files outside :data:`KERNELS` whose contents the compiled code depends on.
EXTRA_SOURCES = (PACKAGE / "_config.py",)


def user_cache_dir(app="nbembed"):
    """The platform's per-user cache folder for ``app`` (not created).

    ``$XDG_CACHE_HOME/app`` or ``~/.cache/app`` on Linux and other Unix
    systems, ``~/Library/Caches/app`` on macOS, ``%LOCALAPPDATA%\\app\\Cache``
    on Windows.

    Parameters
    ----------
    app : str

    Returns
    -------
    pathlib.Path

    Raises
    ------
    RuntimeError
        When the home folder cannot be determined.
    """
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or pathlib.Path.home() / "AppData" / "Local"
        return pathlib.Path(base) / app / "Cache"
    if sys.platform == "darwin":
        return pathlib.Path.home() / "Library" / "Caches" / app
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    # The XDG specification says to ignore a relative path.
    base = pathlib.Path(xdg) if os.path.isabs(xdg) else pathlib.Path.home() / ".cache"
    return base / app


def cache_root():
    """The folder the kernels' cache goes in: the user's ``NUMBA_CACHE_DIR``
    when set, else ``numba`` in :func:`user_cache_dir`; None when neither can
    be named."""
    from numba.core import config

    chosen = config.CACHE_DIR or os.environ.get("NUMBA_CACHE_DIR", "")
    if chosen:
        return pathlib.Path(chosen)
    try:
        return user_cache_dir() / "numba"
    except RuntimeError:
        return None


@functools.lru_cache(maxsize=1)
def _private_root():
    """A temporary folder for this process only, removed at exit."""
    path = tempfile.mkdtemp(prefix="nbembed-numba-")
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return pathlib.Path(path)


def _stamp_sources():
    return sorted(KERNELS.glob("*.py")) + list(EXTRA_SOURCES)


def sources_digest():
    """SHA-256 (hex) of the names and contents of every kernel source file."""
    # Keyed on modification times and sizes so that a file edited while the
    # process runs (a reloaded module) is read again.
    stats = []
    for path in _stamp_sources():
        st = path.stat()
        stats.append((str(path), st.st_mtime_ns, st.st_size))
    return _digest(tuple(stats))


@functools.lru_cache(maxsize=4)
def _digest(stats):
    h = hashlib.sha256()
    for name, _, _ in stats:
        data = pathlib.Path(name).read_bytes()
        h.update(f"{pathlib.Path(name).name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def is_kernel_source(py_file):
    """True for a file directly in :data:`KERNELS`."""
    try:
        return pathlib.Path(py_file).resolve().parent == KERNELS
    except (OSError, RuntimeError, ValueError):
        return False


def _install_subfolder():
    """One subfolder per installed copy of nbembed, named after where it is."""
    digest = hashlib.sha256(str(KERNELS).encode()).hexdigest()[:16]
    return f"kernels-{digest}"


def _locator_class(base, root):
    """A Numba cache locator (subclass of ``base``) for the kernel sources that
    keeps the cache in ``root()``, a callable returning a folder or None."""

    class KernelCacheLocator(base):
        from_nbembed = True  # how install() recognizes its own

        def __init__(self, py_func, py_file, folder):
            # Numba's cache reads these two names for its warnings.
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._cache_path = str(folder / _install_subfolder())

        def get_cache_path(self):
            return self._cache_path

        def get_source_stamp(self):
            return sources_digest()

        def get_disambiguator(self):
            return str(self._lineno)

        @classmethod
        def from_function(cls, py_func, py_file):
            if not is_kernel_source(py_file):
                return None
            try:
                folder = root()
                if folder is None:
                    return None
                locator = cls(py_func, py_file, folder)
                locator.ensure_cache_path()
            except (OSError, RuntimeError):
                # Not writable here: the next locator in Numba's list is asked.
                return None
            return locator

    return KernelCacheLocator


@contextlib.contextmanager
def _file_lock(path, exclusive):
    """Hold an exclusive (or shared) ``flock`` on ``path`` for the block; no
    lock where ``fcntl`` is missing, the file cannot be opened or its file
    system does not lock. Closing the file releases the lock."""
    with contextlib.ExitStack() as stack:
        try:
            import fcntl

            handle = stack.enter_context(open(path, "a+b"))
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        except (ImportError, OSError):
            pass
        yield


def _is_kernel_cache(cache_path):
    """Whether a Numba cache folder is one of this module's (see the locator)."""
    return os.path.basename(os.path.normpath(cache_path)) == _install_subfolder()


def _lock_entries(index_data_cache_file):
    """Wrap ``save`` and ``load`` of Numba's ``IndexDataCacheFile`` so that, in
    the kernels' cache folders, saving holds an exclusive lock and loading a
    shared one (see the module's docstring); once."""
    cls = index_data_cache_file
    if getattr(cls, "nbembed_locked", False):
        return
    save, load = cls.save, cls.load

    def lock_for(entries, exclusive):
        if not _is_kernel_cache(entries._cache_path):
            return contextlib.nullcontext()
        return _file_lock(entries._index_path + ".lock", exclusive)

    @functools.wraps(save)
    def locked_save(self, key, data):
        with lock_for(self, exclusive=True):
            return save(self, key, data)

    @functools.wraps(load)
    def locked_load(self, key):
        with lock_for(self, exclusive=False):
            return load(self, key)

    cls.save, cls.load = locked_save, locked_load
    cls.nbembed_locked = True


def install():
    """Put nbembed's cache locators in Numba's list, once.

    The first one is asked before Numba's own, the private fallback after
    them. Must run before the kernel modules are imported: Numba picks a
    function's locator when the function is decorated.

    Returns
    -------
    bool
        True when the locators are in place, False when this Numba does not
        have the internal API they need (Numba's default then applies).
    """
    try:
        from numba.core import caching

        locators = caching.CacheImpl._locator_classes
        base = caching._CacheLocator
        entries = caching.IndexDataCacheFile
    except (ImportError, AttributeError):
        return False
    if not isinstance(locators, list) or not isinstance(base, type) or \
            not all(callable(getattr(entries, name, None)) for name in ("save", "load")):
        return False
    _lock_entries(entries)
    if any(getattr(cls, "from_nbembed", False) for cls in locators):
        return True
    first, last = _locator_class(base, cache_root), _locator_class(base, _private_root)
    if getattr(first, "__abstractmethods__", None) or not hasattr(base, "ensure_cache_path"):
        return False
    locators.insert(0, first)
    locators.append(last)
    return True
