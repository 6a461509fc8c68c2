"""The compiled kernels live in the per-user cache folder, survive a reinstall
of identical files, and are never reused after a kernel source changed.

Each check runs fresh Python processes on a copy of the package (the
"installed" copy) and compiles one tiny kernel, ``ordered_sum``.
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from nbembed import _numba_cache

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "nbembed"

PROBE = """
import json
import numpy as np
import nbembed
from nbembed._kernels.reduction import ordered_sum
value = ordered_sum(np.ones(3))
print(json.dumps({"package": nbembed.__file__, "value": value,
                  "hits": sum(ordered_sum.stats.cache_hits.values()),
                  "misses": sum(ordered_sum.stats.cache_misses.values()),
                  "folder": ordered_sum._cache.cache_path}))
"""


def _install(site):
    """Copy the package into ``site`` as pip would: fresh files, new times."""
    target = site / "nbembed"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(PACKAGE, target, copy_function=shutil.copyfile,
                    ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc", "static"))
    # Later than any time the first copy can have, whatever the clock's grain.
    later = os.stat(target / "_kernels" / "reduction.py").st_mtime + 60
    for path in target.rglob("*.py"):
        os.utime(path, (later, later))
    return target


@pytest.fixture
def site(tmp_path):
    site = tmp_path / "site"
    _install(site)
    return site


def _probe(site, **env):
    """Run the probe in a fresh process on the copy in ``site``; its report."""
    environment = {k: v for k, v in os.environ.items()
                   if not k.startswith("NUMBA_CACHE") and k != "XDG_CACHE_HOME"}
    # Compiled, not copied from a bundle the package may carry.
    environment.update(PYTHONPATH=str(site), NBEMBED_PREBUILT_KERNELS="0", **env)
    done = subprocess.run([sys.executable, "-c", PROBE], env=environment, cwd=site, check=True,
                          capture_output=True, text=True, timeout=300)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert pathlib.Path(report["package"]).is_relative_to(site)
    return report


def test_kernels_are_cached_in_the_user_cache_folder(site, tmp_path):
    cache = tmp_path / "cache"
    report = _probe(site, XDG_CACHE_HOME=str(cache))
    assert (report["misses"], report["hits"]) == (1, 0)
    folder = pathlib.Path(report["folder"])
    assert folder.parent == cache / "nbembed" / "numba"
    # The index, the data, and the lock that saving and loading take.
    assert {p.suffix for p in folder.iterdir()} == {".nbi", ".nbc", ".lock"}
    assert not list(site.rglob("*.nbi"))


def test_a_reinstall_of_the_same_files_loads_the_compiled_kernel(site, tmp_path):
    cache = str(tmp_path / "cache")
    _probe(site, XDG_CACHE_HOME=cache)
    _install(site)
    report = _probe(site, XDG_CACHE_HOME=cache)
    assert (report["misses"], report["hits"]) == (0, 1)


def test_a_change_to_another_kernel_file_compiles_again(site, tmp_path):
    """Numba alone would reuse the entry: the kernel's own file is unchanged,
    but it may inline code from the changed one."""
    cache = str(tmp_path / "cache")
    _probe(site, XDG_CACHE_HOME=cache)
    with open(site / "nbembed" / "_kernels" / "rows.py", "a") as f:
        f.write("\n# changed\n")
    report = _probe(site, XDG_CACHE_HOME=cache)
    assert (report["misses"], report["hits"]) == (1, 0)


def test_a_changed_kernel_is_never_loaded_stale(site, tmp_path):
    cache = str(tmp_path / "cache")
    assert _probe(site, XDG_CACHE_HOME=cache)["value"] == 3.0
    source = site / "nbembed" / "_kernels" / "reduction.py"
    source.write_text(source.read_text().replace("total = 0.0", "total = 1.0"))
    report = _probe(site, XDG_CACHE_HOME=cache)
    assert report["value"] == 4.0 and report["misses"] == 1


UPGRADED_WHILE_RUNNING = """
import json, pathlib
import numpy as np
import nbembed
from nbembed._kernels.reduction import ordered_sum
# The files change on disk (an upgrade) after this process imported them and
# before it compiles: the code it compiles is the imported one.
source = pathlib.Path(nbembed.__file__).parent / "_kernels" / "reduction.py"
source.write_text(source.read_text().replace("total = 0.0", "total = 1.0"))
print(json.dumps({"value": ordered_sum(np.ones(3))}))
"""


def test_code_compiled_from_sources_changed_since_import_is_never_loaded(site, tmp_path):
    cache = str(tmp_path / "cache")
    environment = {k: v for k, v in os.environ.items()
                   if not k.startswith("NUMBA_CACHE") and k != "XDG_CACHE_HOME"}
    environment.update(PYTHONPATH=str(site), NBEMBED_PREBUILT_KERNELS="0", XDG_CACHE_HOME=cache)
    done = subprocess.run([sys.executable, "-c", UPGRADED_WHILE_RUNNING], env=environment,
                          cwd=site, check=True, capture_output=True, text=True, timeout=300)
    assert json.loads(done.stdout.strip().splitlines()[-1])["value"] == 3.0
    # A new process runs the changed files: it must not load the old code saved
    # by the first one.
    report = _probe(site, XDG_CACHE_HOME=cache)
    assert report["value"] == 4.0 and report["misses"] == 1


def test_the_users_numba_cache_dir_wins(site, tmp_path):
    mine = tmp_path / "mine"
    report = _probe(site, XDG_CACHE_HOME=str(tmp_path / "cache"), NUMBA_CACHE_DIR=str(mine))
    assert pathlib.Path(report["folder"]).parent == mine
    assert not (tmp_path / "cache").exists()


def test_an_unwritable_cache_home_falls_back_to_numbas_default(site, tmp_path):
    # A regular file where the folder should be: unwritable even for root.
    blocked = tmp_path / "blocked"
    blocked.write_text("")
    report = _probe(site, XDG_CACHE_HOME=str(blocked))
    assert report["value"] == 3.0
    in_tree = site / "nbembed" / "_kernels" / "__pycache__"
    assert pathlib.Path(report["folder"]).resolve() == in_tree.resolve()


def test_nothing_writable_still_imports_and_runs(site, tmp_path):
    blocked = tmp_path / "blocked"
    blocked.write_text("")
    (site / "nbembed" / "_kernels" / "__pycache__").write_text("")
    report = _probe(site, XDG_CACHE_HOME=str(blocked), HOME=str(blocked))
    assert report["value"] == 3.0
    # A private temporary folder, removed when the process ends.
    assert pathlib.Path(report["folder"]).parent.name.startswith("nbembed-numba-")


def test_a_numba_without_the_locator_api_keeps_its_default(monkeypatch):
    from numba.core import caching

    monkeypatch.delattr(caching, "_CacheLocator")
    assert _numba_cache.install() is False
    monkeypatch.undo()
    locators = tuple(caching.CacheImpl._locator_classes)
    monkeypatch.setattr(caching.CacheImpl, "_locator_classes", locators)
    assert _numba_cache.install() is False


@pytest.mark.parametrize("platform, env, expected", [
    ("linux", {"XDG_CACHE_HOME": "/x/cache"}, "/x/cache/nbembed"),
    ("linux", {"XDG_CACHE_HOME": "relative"}, "HOME/.cache/nbembed"),
    ("linux", {}, "HOME/.cache/nbembed"),
    ("darwin", {}, "HOME/Library/Caches/nbembed"),
    ("win32", {"LOCALAPPDATA": "/appdata"}, "/appdata/nbembed/Cache"),
])
def test_user_cache_dir_follows_the_platform(monkeypatch, tmp_path, platform, env, expected):
    monkeypatch.setattr(sys, "platform", platform)
    monkeypatch.setattr(pathlib.Path, "home", classmethod(lambda cls: tmp_path))
    for name in ("XDG_CACHE_HOME", "LOCALAPPDATA"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    expected = pathlib.Path(expected.replace("HOME", str(tmp_path)))
    assert _numba_cache.user_cache_dir() == expected


# Saves entries of one cache folder from a process of its own, all processes
# starting together: each key's data names the key, so a mix-up shows.
WRITER = """
import os, sys, time
from numba.core import caching
from nbembed import _numba_cache
assert _numba_cache.install()
folder, writer, keys, start = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
entries = caching.IndexDataCacheFile(folder, "kernel", "stamp")
while not os.path.exists(start):
    time.sleep(0.001)
for k in range(keys):
    entries.save(("signature", writer, k), ("code of", writer, k))
"""


def test_processes_saving_one_kernel_together_keep_every_entry_its_own_code(tmp_path):
    """Numba picks a new entry's data file from the index it read: unlocked, two
    processes saving at once can both take the same file, and the index then
    names another signature's code. The lock on the kernels' folders keeps
    every entry right."""
    from numba.core import caching

    folder = tmp_path / _numba_cache._install_subfolder()
    folder.mkdir()
    start = tmp_path / "start"
    writers, keys = 4, 30
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(folder), str(w), str(keys),
                               str(start)]) for w in range(writers)]
    start.touch()
    assert [p.wait(timeout=120) for p in procs] == [0] * writers
    entries = caching.IndexDataCacheFile(str(folder), "kernel", "stamp")
    assert _numba_cache.install()
    for w in range(writers):
        for k in range(keys):
            assert entries.load(("signature", w, k)) == ("code of", w, k)
    assert len(list(folder.glob("kernel.*.nbc"))) == writers * keys


def test_saving_an_entry_holds_the_lock_that_loading_waits_for(tmp_path):
    import fcntl

    from numba.core import caching

    assert _numba_cache.install()
    folder = tmp_path / _numba_cache._install_subfolder()
    folder.mkdir()
    entries = caching.IndexDataCacheFile(str(folder), "kernel", "stamp")
    seen = []
    save_data = entries._save_data

    def probing_save_data(name, data):
        with open(entries._index_path + ".lock", "a+b") as other:
            try:
                fcntl.flock(other.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
                seen.append("free")
            except BlockingIOError:
                seen.append("held")
        save_data(name, data)

    entries._save_data = probing_save_data
    entries.save("key", "code")
    assert seen == ["held"] and entries.load("key") == "code"
    # Folders of other packages' kernels are left as Numba keeps them.
    other = caching.IndexDataCacheFile(str(tmp_path), "kernel", "stamp")
    other.save("key", "code")
    assert not (tmp_path / "kernel.nbi.lock").exists()
