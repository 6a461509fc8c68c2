"""Compiled kernels that ship with nbembed, so that the first fit after installing
loads its kernels instead of compiling them.

Numba compiles for the processor it runs on and keys every cached kernel by
that processor's name and its exact feature list, so code cached on one
machine is never found on another. A *bundle* is compiled for a common
processor level instead, with a fixed feature list, and its cache entries
carry that level and nothing machine-specific. There are two levels
(:data:`LEVELS`): ``x86-64-v4`` (AVX-512) and ``x86-64-v3`` (AVX2 and FMA:
most x86 processors made since 2015). LLVM's generic ``x86-64-v4`` prefers
256-bit vectors, which made the exact kernels' pair loops half as fast as
code compiled for an AVX-512 processor; with ``-prefer-256-bit`` they ran as
fast (see docs/benchmarks.md, "The first fit after installing").

Building (a release step): :func:`build`, or ``nbembed compile --bundle``,
runs the workloads of ``nbembed compile`` in child processes compiling for
each level the building machine can run, into empty cache folders, then
copies the cache files into ``nbembed/_prebuilt/<tag>/``, which a wheel built
afterwards carries. The tag names everything the compiled code depends on
besides the sources: operating system, machine, Python, Numba and llvmlite
versions and the level (:func:`bundle_tag`). The cache files also record the
kernel sources they were compiled from (see :mod:`nbembed._numba_cache`), and
a bundle is only used with those sources.

Using: :func:`activate`, which ``nbembed._kernels`` calls as it is imported,
before any kernel is defined, when everything in :func:`why_not` allows it:

* ``NBEMBED_PREBUILT_KERNELS`` is not ``0``;
* neither ``NUMBA_CPU_NAME`` nor ``NUMBA_CPU_FEATURES`` is set (the user chose a
  target), unless they name a level's target (a parent process set them, say);
* the processor has every feature of a level whose bundle, compiled from these
  kernel sources, the package holds (the highest such level is used);
* Numba has not set up its compiler in this process yet (its target is fixed then:
  code that used Numba was imported before nbembed), unless it targets that level.

It then copies the bundle's files into the kernels' cache folder where that
folder lacks them or holds them for other sources (under the same file locks
as Numba's saving there), and sets ``NUMBA_CPU_NAME`` and
``NUMBA_CPU_FEATURES`` to the level's in ``os.environ``, where Numba reads
them when it sets up its compiler and whenever it reloads its configuration,
and where child processes inherit them. The side effect: every Numba
function compiled in this process, not only nbembed's, targets that level.
Set ``NBEMBED_PREBUILT_KERNELS=0`` to keep Numba's default (then the first
fit compiles nbembed's kernels for this processor).
"""

from __future__ import annotations

import glob
import json
import os
import pathlib
import pickle
import platform
import shutil
import subprocess
import sys
import tempfile
from typing import NamedTuple

from . import _numba_cache

#: Where the package keeps its bundles, one subfolder per tag.
BUNDLES = pathlib.Path(__file__).resolve().parent / "_prebuilt"

_V3_FEATURES = ("avx", "avx2", "bmi", "bmi2", "cx16", "f16c", "fma", "lzcnt", "movbe",
                "popcnt", "sahf", "sse3", "sse4.1", "sse4.2", "ssse3", "xsave")


class Level(NamedTuple):
    """A processor level that bundles are compiled for."""

    #: LLVM's processor name (``NUMBA_CPU_NAME``).
    cpu: str
    #: The feature list on top of it (``NUMBA_CPU_FEATURES``).
    features: str
    #: What the processor must have to run the code, in LLVM's feature names.
    requires: tuple


#: The levels, best first.
LEVELS = (
    Level("x86-64-v4", "-prefer-256-bit",
          _V3_FEATURES + ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")),
    Level("x86-64-v3", "", _V3_FEATURES),
)

#: Set to "0" to never use a bundle.
OPT_OUT = "NBEMBED_PREBUILT_KERNELS"

#: The file in a bundle that describes it.
MANIFEST = "bundle.json"

_MACHINES = {"x86_64", "amd64"}

#: The level :func:`activate` set this process up for.
_activated = None


def bundle_tag(level):
    """The name of ``level``'s bundle for this process: operating system,
    machine, Python, Numba and llvmlite versions, and the level.

    Parameters
    ----------
    level : Level

    Returns
    -------
    str
    """
    import llvmlite
    import numba

    machine = platform.machine().lower()
    return (f"{sys.platform}-{machine}-cp{sys.version_info[0]}{sys.version_info[1]}"
            f"-numba{numba.__version__}-llvmlite{llvmlite.__version__}-{level.cpu}")


def _missing_features(level):
    """The features of ``level`` this processor lacks (all of them off x86)."""
    if platform.machine().lower() not in _MACHINES:
        return list(level.requires)
    import llvmlite.binding as llvm

    have = llvm.get_host_cpu_features()
    return [name for name in level.requires if not have.get(name, False)]


def _compiler_is_set_up():
    """Whether Numba has made its CPU compiler in this process (any ``@njit``
    function defined so far does that), which fixes its target."""
    from numba.core.registry import cpu_target

    return "_toplevel_target_context" in vars(cpu_target)


def _bundle_sources(bundle):
    """The sources digest a bundle's manifest records, or None."""
    try:
        return json.loads((bundle / MANIFEST).read_text()).get("sources")
    except (OSError, ValueError, AttributeError):
        return None


def choose(bundles=BUNDLES):
    """(level, None) for the bundle this process would use, or (None, why not).

    Parameters
    ----------
    bundles : path-like
        The folder holding bundles (default: the package's).

    Returns
    -------
    tuple
    """
    if os.environ.get(OPT_OUT) == "0":
        return None, f"{OPT_OUT}=0 is set"
    target = (os.environ.get("NUMBA_CPU_NAME"), os.environ.get("NUMBA_CPU_FEATURES"))
    # Set as activate() sets them (by a parent process, say), they name a level.
    inherited = [level for level in LEVELS if target == (level.cpu, level.features)]
    if not inherited:
        for name in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES"):
            if name in os.environ:
                return None, f"{name} is set, so the compiler's target is the user's choice"
    reasons = []
    for level in inherited or LEVELS:
        bundle = pathlib.Path(bundles) / bundle_tag(level)
        if not (bundle / MANIFEST).is_file():
            reasons.append(f"no bundle for {bundle.name} in {bundles}")
        elif _bundle_sources(bundle) != _numba_cache.sources_digest():
            reasons.append(f"the bundle in {bundle} was compiled from other kernel sources")
        elif missing := _missing_features(level):
            reasons.append(f"this processor lacks {', '.join(missing)} of {level.cpu}")
        else:
            break
    else:
        return None, "; ".join(reasons)
    if not inherited and _compiler_is_set_up():
        return None, ("Numba had set up its compiler before nbembed's kernels were imported "
                      "(code using Numba was imported first); its target is fixed now")
    if _numba_cache.cache_root() is None:
        return None, "there is no cache folder to put the bundle in"
    return level, None


def why_not(bundles=BUNDLES):
    """Why this process cannot use a bundle from ``bundles`` (a str), or None
    when it can: the second half of :func:`choose`."""
    return choose(bundles)[1]


def activate(bundles=BUNDLES):
    """Use the best bundle this process can, if any (once).

    Parameters
    ----------
    bundles : path-like
        The folder holding bundles (default: the package's).

    Returns
    -------
    Level or None
        The level this process now compiles for, with that bundle's kernels
        in its cache folder; None when it uses no bundle.
    """
    global _activated
    if _activated is not None:
        return _activated
    level, _ = choose(bundles)
    if level is None:
        return None
    folder = _numba_cache.cache_root() / _numba_cache._install_subfolder()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _seed(pathlib.Path(bundles) / bundle_tag(level), folder)
    except OSError:
        return None
    from numba.core import config

    os.environ["NUMBA_CPU_NAME"] = level.cpu
    os.environ["NUMBA_CPU_FEATURES"] = level.features
    config.reload_config()
    if (config.CPU_NAME, config.CPU_FEATURES) == (level.cpu, level.features):
        _activated = level
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
            for data in sorted(bundle.glob(f"{glob.escape(base)}.*.nbc")):
                _copy(data, folder / data.name)
            _copy(index, target)
    marker.touch()


def _copy(source, target):
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    shutil.copyfile(source, partial)
    os.replace(partial, target)


def build(groups=None, *, levels=None, destination=BUNDLES, code=None, say=print):
    """Compile the kernels for each level and write them as this process's
    bundles (:func:`bundle_tag`) under ``destination``.

    Parameters
    ----------
    groups : sequence of str, optional
        Workload groups of ``nbembed compile`` (default: all of them).
    levels : sequence of Level, optional
        Default: every level of :data:`LEVELS` this processor can run (the
        workloads run the code they compile).
    destination : path-like
        Folder of bundles (default: the package's); each bundle's subfolder is
        replaced.
    code : str, optional
        Python code to run instead of the groups (one child process per level).
    say : callable
        Called with lines of progress.

    Returns
    -------
    list of pathlib.Path
        The bundles' folders.

    Raises
    ------
    RuntimeError
        When this processor can run none of the levels, or compiling fails or
        compiles nothing.
    """
    if levels is None:
        levels = [level for level in LEVELS if not _missing_features(level)]
        if not levels:
            raise RuntimeError("this processor can run none of the levels "
                               f"{', '.join(level.cpu for level in LEVELS)}")
    return [_build_one(level, groups, destination, code, say) for level in levels]


def _build_one(level, groups, destination, code, say):
    from .precompile import precompile

    tag = bundle_tag(level)
    say(f"compiling for {level.cpu} ({level.features or 'its own features'})")
    with tempfile.TemporaryDirectory(prefix="nbembed-bundle-") as cache:
        # Compiled afresh: no bundle seeds this cache.
        env = dict(os.environ, NUMBA_CPU_NAME=level.cpu, NUMBA_CPU_FEATURES=level.features,
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
        manifest = dict(tag=tag, cpu=level.cpu, features=level.features,
                        sources=_numba_cache.sources_digest(),
                        kernels=sum(1 for p in files if p.suffix == ".nbi"))
        (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    say(f"bundle {tag}: {manifest['kernels']} kernels in {out}")
    return out
