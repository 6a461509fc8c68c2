"""Compiled kernels that ship with nbembed, so that the first fit after installing
loads its kernels instead of compiling them.

Numba compiles for the processor it runs on and keys every cached kernel by
that processor's name and its exact feature list, so code cached on one
machine is never found on another. A *bundle* is compiled for a common
processor level instead, x86-64-v3 (AVX2 and FMA: most x86 processors made
since 2015), with no features beyond those the level implies: its cache
entries carry that name and nothing machine-specific. On this level the
kernels ran whole fits as fast as code compiled for the machine's own
AVX-512 processor (see docs/benchmarks.md, "The first fit after installing").

Building (a release step): :func:`build`, or ``nbembed compile --bundle``,
runs the workloads of ``nbembed compile`` in child processes compiling for
x86-64-v3 into an empty cache folder, then copies the cache files into
``nbembed/_prebuilt/<tag>/``, which a wheel built afterwards carries. The tag
names everything the compiled code depends on besides the sources: operating
system, machine, Python, Numba and llvmlite versions (:func:`bundle_tag`).
The cache files also record the kernel sources they were compiled from (see
:mod:`nbembed._numba_cache`), so a bundle is only used with those sources.

Using: :func:`activate`, which ``nbembed._kernels`` calls as it is imported,
before any kernel is defined, when everything in :func:`why_not` allows it:

* the package holds a bundle with this process's tag, compiled from these kernel sources;
* ``NBEMBED_PREBUILT_KERNELS`` is not ``0``;
* neither ``NUMBA_CPU_NAME`` nor ``NUMBA_CPU_FEATURES`` is set (the user chose a
  target), unless they name the bundle's target (a parent process set them, say);
* Numba has not set up its compiler in this process yet (its target is fixed then:
  code that used Numba was imported before nbembed), unless it targets the bundle's;
* the processor has every feature of x86-64-v3.

It then copies the bundle's files into the kernels' cache folder where that
folder lacks them or holds them for other sources (under the same file locks
as Numba's saving there), and sets ``NUMBA_CPU_NAME=x86-64-v3`` and an empty
``NUMBA_CPU_FEATURES`` in ``os.environ``, where Numba reads them when it sets
up its compiler and whenever it reloads its configuration, and where child
processes inherit them. The side effect: every Numba function compiled in
this process, not only nbembed's, targets x86-64-v3. Set
``NBEMBED_PREBUILT_KERNELS=0`` to keep Numba's default (then the first fit
compiles nbembed's kernels for this processor).
"""

from __future__ import annotations

import json
import os
import pathlib
import pickle
import platform
import shutil
import subprocess
import sys
import tempfile

from . import _numba_cache

#: Where the package keeps its bundles, one subfolder per tag.
BUNDLES = pathlib.Path(__file__).resolve().parent / "_prebuilt"

#: The processor level the bundles are compiled for (LLVM's name).
TARGET_CPU = "x86-64-v3"

#: What x86-64-v3 requires of the processor, in LLVM's feature names.
TARGET_FEATURES = ("avx", "avx2", "bmi", "bmi2", "cx16", "f16c", "fma", "lzcnt", "movbe",
                   "popcnt", "sahf", "sse3", "sse4.1", "sse4.2", "ssse3", "xsave")

#: Set to "0" to never use a bundle.
OPT_OUT = "NBEMBED_PREBUILT_KERNELS"

#: The file in a bundle that describes it.
MANIFEST = "bundle.json"

_MACHINES = {"x86_64", "amd64"}


def bundle_tag():
    """The name of the bundle this process can use: operating system, machine,
    Python, Numba and llvmlite versions, and the processor level.

    Returns
    -------
    str
    """
    import llvmlite
    import numba

    machine = platform.machine().lower()
    return (f"{sys.platform}-{machine}-cp{sys.version_info[0]}{sys.version_info[1]}"
            f"-numba{numba.__version__}-llvmlite{llvmlite.__version__}-{TARGET_CPU}")


def _missing_features():
    """x86-64-v3 features this processor lacks (all of them off x86)."""
    if platform.machine().lower() not in _MACHINES:
        return list(TARGET_FEATURES)
    import llvmlite.binding as llvm

    have = llvm.get_host_cpu_features()
    return [name for name in TARGET_FEATURES if not have.get(name, False)]


def _compiler_is_set_up():
    """Whether Numba has made its CPU compiler in this process (any ``@njit``
    function defined so far does that), which fixes its target."""
    from numba.core.registry import cpu_target

    return "_toplevel_target_context" in vars(cpu_target)


#: Whether :func:`activate` has set this process up.
_activated = False


def why_not(bundles=BUNDLES):
    """Why this process cannot use a bundle from ``bundles``, or None when it can.

    Parameters
    ----------
    bundles : path-like
        The folder holding bundles (default: the package's).

    Returns
    -------
    str or None
    """
    if os.environ.get(OPT_OUT) == "0":
        return f"{OPT_OUT}=0 is set"
    target = (os.environ.get("NUMBA_CPU_NAME"), os.environ.get("NUMBA_CPU_FEATURES"))
    # Set as activate() sets them (by a parent process, say), they are the bundle's target.
    targets_bundle = target == (TARGET_CPU, "")
    if not targets_bundle:
        for name in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES"):
            if name in os.environ:
                return f"{name} is set, so the compiler's target is the user's choice"
    bundle = pathlib.Path(bundles) / bundle_tag()
    if not (bundle / MANIFEST).is_file():
        return f"no bundle for {bundle_tag()} in {bundles}"
    try:
        sources = json.loads((bundle / MANIFEST).read_text()).get("sources")
    except (OSError, ValueError, AttributeError):
        sources = None
    if sources != _numba_cache.sources_digest():
        return f"the bundle in {bundle} was compiled from other kernel sources"
    if not targets_bundle and _compiler_is_set_up():
        return ("Numba had set up its compiler before nbembed's kernels were imported "
                "(code using Numba was imported first); its target is fixed now")
    missing = _missing_features()
    if missing:
        return f"this processor lacks {', '.join(missing)} of {TARGET_CPU}"
    if _numba_cache.cache_root() is None:
        return "there is no cache folder to put the bundle in"
    return None


def activate(bundles=BUNDLES):
    """Use the bundle for this process, if :func:`why_not` allows it (once).

    Parameters
    ----------
    bundles : path-like
        The folder holding bundles (default: the package's).

    Returns
    -------
    bool
        True when this process compiles for :data:`TARGET_CPU` with the
        bundle's kernels in its cache folder.
    """
    global _activated
    if _activated:
        return True
    if why_not(bundles) is not None:
        return False
    folder = _numba_cache.cache_root() / _numba_cache._install_subfolder()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _seed(pathlib.Path(bundles) / bundle_tag(), folder)
    except OSError:
        return False
    from numba.core import config

    os.environ["NUMBA_CPU_NAME"] = TARGET_CPU
    os.environ["NUMBA_CPU_FEATURES"] = ""
    config.reload_config()
    _activated = config.CPU_NAME == TARGET_CPU and config.CPU_FEATURES == ""
    return _activated


def _index_stamp(path):
    """The source stamp recorded in a Numba index file, or None if unreadable."""
    try:
        with open(path, "rb") as f:
            pickle.load(f)  # Numba's version
            stamp, _ = pickle.loads(f.read())
        return stamp
    except Exception:  # noqa: BLE001 - any damage means "not usable"
        return None


def _seed(bundle, folder):
    """Copy each of the bundle's kernels (index and data files) into ``folder``
    where the folder has no index for it or one made from other sources; once
    per bundle and sources (a marker file in ``folder`` records it)."""
    digest = _numba_cache.sources_digest()
    marker = folder / f"{bundle.name}-{digest[:16]}.seeded"
    if marker.exists():
        return
    for index in sorted(bundle.glob("*.nbi")):
        target = folder / index.name
        with _numba_cache._file_lock(str(target) + ".lock", exclusive=True):
            if target.exists() and _index_stamp(target) == digest:
                continue
            base = index.name[:-len(".nbi")]
            for data in sorted(bundle.glob(f"{glob_escape(base)}.*.nbc")):
                _copy(data, folder / data.name)
            _copy(index, target)
    marker.touch()


def glob_escape(name):
    """``name`` with glob's special characters taken literally."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


def _copy(source, target):
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    shutil.copyfile(source, partial)
    os.replace(partial, target)


def build(groups=None, *, destination=BUNDLES, code=None, say=print):
    """Compile the kernels for :data:`TARGET_CPU` and write them as this
    process's bundle (:func:`bundle_tag`) under ``destination``.

    Parameters
    ----------
    groups : sequence of str, optional
        Workload groups of ``nbembed compile`` (default: all of them).
    destination : path-like
        Folder of bundles (default: the package's); the bundle's subfolder is
        replaced.
    code : str, optional
        Python code to run instead of the groups (one child process).
    say : callable
        Called with lines of progress.

    Returns
    -------
    pathlib.Path
        The bundle's folder.

    Raises
    ------
    RuntimeError
        When compiling fails, or compiled nothing.
    """
    from .precompile import precompile

    tag = bundle_tag()
    with tempfile.TemporaryDirectory(prefix="nbembed-bundle-") as cache:
        # Compiled afresh: no bundle seeds this cache.
        env = dict(os.environ, NUMBA_CPU_NAME=TARGET_CPU, NUMBA_CPU_FEATURES="",
                   NUMBA_CACHE_DIR=cache, **{OPT_OUT: "0"})
        if code is None:
            precompile(groups, say=say, env=env)
        else:
            done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                  text=True)
            if done.returncode:
                raise RuntimeError(f"compiling for the bundle failed:\n{done.stderr[-4000:]}")
        compiled = pathlib.Path(cache) / _numba_cache._install_subfolder()
        files = sorted(compiled.glob("*.nbi")) + sorted(compiled.glob("*.nbc"))
        if not files:
            raise RuntimeError(f"nothing was compiled into {compiled}")
        out = pathlib.Path(destination) / tag
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        for path in files:
            shutil.copyfile(path, out / path.name)
        manifest = dict(tag=tag, target=TARGET_CPU, sources=_numba_cache.sources_digest(),
                        kernels=sum(1 for p in files if p.suffix == ".nbi"))
        (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    say(f"bundle {tag}: {manifest['kernels']} kernels in {out}")
    return out
