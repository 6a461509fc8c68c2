"""Kernels compiled ahead of time for common processor levels (nbembed._prebuilt):
a process with an empty cache loads them instead of compiling, and only when it may."""

import json
import os
import pickle
import subprocess
import sys

import llvmlite.binding as llvm
import numba
import pytest

from nbembed import _numba_cache, _prebuilt

V4, V3 = _prebuilt.LEVELS
pytestmark = pytest.mark.skipif(_prebuilt._missing_features(V3) != [],
                                reason="the processor cannot run x86-64-v3 code")
#: The level a process here uses when the package has bundles for both.
BEST = V3 if _prebuilt._missing_features(V4) else V4

#: Compiles (or loads) a handful of kernels: the Student-t normalizer.
KERNEL_CODE = ("import numpy as np\n"
               "from nbembed._kernels.hssne import hssne_z\n"
               "hssne_z(np.ones((2, 5)), 1.0)\n")

#: A fresh process that uses the bundles in argv[1], then the kernels above.
CHILD = r"""
import json, sys
from nbembed import _numba_cache, _prebuilt
_numba_cache.install()
level = _prebuilt.activate(sys.argv[1])
import numpy as np
from nbembed.optim.compiling import CompileCounter
with CompileCounter() as counter:
    from nbembed._kernels.hssne import hssne_z
    z = hssne_z(np.arange(10.0).reshape(2, 5), 1.0)
from numba.core.registry import cpu_target
_, cpu, features = cpu_target.target_context.codegen().magic_tuple()
print(json.dumps(dict(level=level and level.cpu, compiled=counter.count, cpu=cpu,
                      features=features, z=z)))
"""


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    """Bundles of every level this processor runs."""
    folder = tmp_path_factory.mktemp("bundles")
    _prebuilt.build(destination=folder, code=KERNEL_CODE, say=lambda line: None)
    return folder


@pytest.fixture(scope="module")
def v3_bundle(tmp_path_factory):
    folder = tmp_path_factory.mktemp("v3-bundle")
    _prebuilt.build(levels=[V3], destination=folder, code=KERNEL_CODE, say=lambda line: None)
    return folder


def _child(bundles, tmp_path, **env):
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", _prebuilt.OPT_OUT)}
    environment.update(NUMBA_CACHE_DIR=str(tmp_path / "cache"), **env)
    done = subprocess.run([sys.executable, "-c", CHILD, str(bundles)], env=environment,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_bundle_holds_its_kernels_and_says_what_it_is(bundles):
    built = [level for level in _prebuilt.LEVELS if not _prebuilt._missing_features(level)]
    assert sorted(p.name for p in bundles.iterdir()) == sorted(map(_prebuilt.bundle_tag, built))
    for level in built:
        bundle = bundles / _prebuilt.bundle_tag(level)
        manifest = json.loads((bundle / _prebuilt.MANIFEST).read_text())
        assert manifest["tag"] == _prebuilt.bundle_tag(level)
        assert (manifest["cpu"], manifest["features"]) == (level.cpu, level.features)
        assert manifest["sources"] == _numba_cache.sources_digest()
        assert manifest["kernels"] == len(list(bundle.glob("*.nbi"))) >= 1
        assert list(bundle.glob("*.nbc"))


def test_an_empty_cache_loads_the_best_bundle_instead_of_compiling(bundles, tmp_path):
    used = _child(bundles, tmp_path)
    assert used["level"] == BEST.cpu
    assert used["compiled"] == 0
    assert (used["cpu"], used["features"]) == (BEST.cpu, BEST.features)
    # Z = sum over ordered pairs i != j of 1 / (1 + |y_i - y_j|^2); points (k, k + 5).
    expected = sum(1.0 / (1.0 + 2.0 * (i - j) ** 2) for i in range(5) for j in range(5) if i != j)
    assert used["z"] == pytest.approx(expected, rel=1e-12)
    # The bundle's files are now in the cache: a second process loads them too.
    again = _child(bundles, tmp_path)
    assert again["compiled"] == 0 and again["cpu"] == BEST.cpu


def test_without_a_bundle_of_the_best_level_the_next_one_serves(v3_bundle, tmp_path):
    used = _child(v3_bundle, tmp_path)
    assert used["level"] == "x86-64-v3"
    assert used["compiled"] == 0
    assert (used["cpu"], used["features"]) == ("x86-64-v3", "")


def test_a_process_that_inherits_a_levels_target_loads_its_bundle(bundles, tmp_path):
    used = _child(bundles, tmp_path, NUMBA_CPU_NAME="x86-64-v3", NUMBA_CPU_FEATURES="")
    assert used["level"] == "x86-64-v3"
    assert used["compiled"] == 0


@pytest.mark.parametrize("env", [{_prebuilt.OPT_OUT: "0"}, {"NUMBA_CPU_NAME": "x86-64-v2"}])
def test_without_the_bundle_the_kernels_compile_as_before(bundles, tmp_path, env):
    used = _child(bundles, tmp_path, **env)
    assert used["level"] is None
    assert used["compiled"] > 0
    assert used["cpu"] == env.get("NUMBA_CPU_NAME", llvm.get_host_cpu_name())


def test_why_not_names_each_reason(bundles, tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CPU_NAME", raising=False)
    monkeypatch.delenv("NUMBA_CPU_FEATURES", raising=False)
    monkeypatch.delenv(_prebuilt.OPT_OUT, raising=False)
    monkeypatch.setattr(_prebuilt, "_compiler_is_set_up", lambda: False)
    assert _prebuilt.why_not(bundles) is None
    assert "no bundle for" in _prebuilt.why_not(tmp_path)
    with monkeypatch.context() as edited:
        edited.setattr(_numba_cache, "sources_digest", lambda: "edited sources")
        assert "from other kernel sources" in _prebuilt.why_not(bundles)
    manifests = list(bundles.glob(f"*/{_prebuilt.MANIFEST}"))
    recorded = [manifest.read_text() for manifest in manifests]
    for manifest in manifests:
        manifest.write_text("{damaged")
    assert "from other kernel sources" in _prebuilt.why_not(bundles)
    for manifest, text in zip(manifests, recorded):
        manifest.write_text(text)
    monkeypatch.setattr(_prebuilt, "_missing_features",
                        lambda level: ["avx512f"] if level is V4 else [])
    assert _prebuilt.choose(bundles)[0] is V3
    monkeypatch.setattr(_prebuilt, "_missing_features", lambda level: ["avx2", "fma"])
    assert "lacks avx2, fma" in _prebuilt.why_not(bundles)
    monkeypatch.setattr(_prebuilt, "_missing_features", lambda level: [])
    monkeypatch.setattr(_prebuilt, "_compiler_is_set_up", lambda: True)
    assert "set up its compiler" in _prebuilt.why_not(bundles)
    monkeypatch.setenv("NUMBA_CPU_FEATURES", "+avx2")
    assert "NUMBA_CPU_FEATURES is set" in _prebuilt.why_not(bundles)
    monkeypatch.setenv(_prebuilt.OPT_OUT, "0")
    assert "=0 is set" in _prebuilt.why_not(bundles)


def test_a_process_that_set_up_numba_keeps_its_target(bundles, monkeypatch):
    import nbembed._kernels.hssne  # noqa: F401 - kernels defined before the environment is cleared

    monkeypatch.delenv("NUMBA_CPU_NAME", raising=False)
    monkeypatch.delenv("NUMBA_CPU_FEATURES", raising=False)
    monkeypatch.delenv(_prebuilt.OPT_OUT, raising=False)
    assert _prebuilt._compiler_is_set_up()  # defining the kernels set Numba up
    assert "set up its compiler" in _prebuilt.why_not(bundles)


def _index(path, stamp):
    with open(path, "wb") as f:
        pickle.dump(numba.__version__, f, protocol=-1)
        f.write(pickle.dumps((stamp, {"entry": "x"}), protocol=-1))


def test_seeding_replaces_only_indexes_of_other_sources(tmp_path):
    bundle, folder = tmp_path / "bundle", tmp_path / "cache"
    bundle.mkdir()
    folder.mkdir()
    digest = _numba_cache.sources_digest()
    for name in ("current", "stale", "absent"):
        _index(bundle / f"k.{name}-1.py311.nbi", digest)
        (bundle / f"k.{name}-1.py311.1.nbc").write_bytes(b"bundle")
    _index(folder / "k.current-1.py311.nbi", digest)
    (folder / "k.current-1.py311.1.nbc").write_bytes(b"mine")
    _index(folder / "k.stale-1.py311.nbi", "older sources")
    (folder / "k.stale-1.py311.1.nbc").write_bytes(b"old")

    _prebuilt._seed(bundle, folder)
    assert (folder / "k.current-1.py311.1.nbc").read_bytes() == b"mine"
    assert (folder / "k.stale-1.py311.1.nbc").read_bytes() == b"bundle"
    assert _prebuilt._index_stamp(folder / "k.stale-1.py311.nbi") == digest
    assert (folder / "k.absent-1.py311.1.nbc").read_bytes() == b"bundle"
    assert not list(folder.glob("*.partial"))

    # Once seeded, the folder is left alone (a marker records it).
    (folder / "k.absent-1.py311.nbi").unlink()
    _prebuilt._seed(bundle, folder)
    assert not (folder / "k.absent-1.py311.nbi").exists()


def test_an_unreadable_index_counts_as_other_sources(tmp_path):
    broken = tmp_path / "broken.nbi"
    broken.write_bytes(b"not a pickle")
    assert _prebuilt._index_stamp(broken) is None
