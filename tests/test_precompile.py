"""``nbembed compile`` fills the disk cache with what later fits use."""

import json
import subprocess
import sys

import numba
import numpy as np
import pytest

from nbembed.cli import main
from nbembed.optim.compiling import CompileCounter
from nbembed.precompile import GROUPS, precompile

# A default fit of 6000 points in a new process (k-nearest-neighbour P, the
# grid repulsion) and 200 new points placed on its map, on the paths of
# 50 000 points or more; prints how many nbembed kernels it compiled.
_LARGE_FIT = """
import json
import numpy as np
from nbembed import HSSNE
from nbembed.optim.compiling import CompileCounter
from nbembed.precompile import _as_if_large

rng = np.random.default_rng(1)
X = rng.normal(size=(6000, 20)) + 5.0 * np.eye(4, 20)[np.arange(6000) % 4]
with CompileCounter() as counter, _as_if_large():
    model = HSSNE(max_iter=300, random_state=0).fit(X)
    model.transform(X[:200] + 0.05)
print(json.dumps(dict(compiled=counter.count, affinity=type(model.affinities_).__name__)))
"""


def _large_fit():
    done = subprocess.run([sys.executable, "-c", _LARGE_FIT], capture_output=True,
                          text=True, timeout=900, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_after_compiling_the_approximate_group_a_large_fit_compiles_nothing(
        tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    # Compiled here, not copied from a bundle the package may carry.
    monkeypatch.setenv("NBEMBED_PREBUILT_KERNELS", "0")
    lines = []
    (report,) = precompile(["hssne-approximate"], say=lines.append)
    assert report["group"] == "hssne-approximate" and report["compiled"] > 20
    assert lines and lines[0].startswith("hssne-approximate: ")
    fit = _large_fit()
    assert fit == dict(compiled=0, affinity="csr_matrix")


def test_the_counter_counts_nbembed_kernels_only():
    from nbembed._kernels import csr

    @numba.njit(cache=False)
    def elsewhere(x):
        return x + 1

    fresh = numba.njit(cache=False)(csr.is_symmetric_csr.py_func)
    indptr, indices, data = np.array([0, 1, 2]), np.array([1, 0]), np.array([1.0, 1.0])
    with CompileCounter() as counter:
        elsewhere(1)
        fresh(indptr, indices, data)
        fresh(indptr, indices, data)
    assert counter.count == 1


def test_an_unknown_group_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="unknown group 'hsne'; choose from hssne-exact"):
        precompile(["hsne"])


def test_the_command_names_its_groups_and_refuses_others(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")  # no line breaks inside the names
    with pytest.raises(SystemExit):
        main(["compile", "--only", "everything"])
    assert "invalid choice: 'everything'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["compile", "--help"])
    shown = capsys.readouterr().out
    assert all(f"{name}: {description}" in shown for name, (_, description) in GROUPS.items())


@pytest.mark.parametrize("carried", [True, False])
def test_the_command_says_when_the_installation_carries_compiled_kernels(
        capsys, monkeypatch, carried):
    from nbembed import _prebuilt, precompile as module

    level = _prebuilt.LEVELS[0]
    monkeypatch.setattr(_prebuilt, "choose",
                        lambda: (level, None) if carried else (None, "no bundle"))
    monkeypatch.setattr(module, "precompile", lambda groups, say: [
        dict(group=name, seconds=0.0, compiled=0) for name in groups])
    assert main(["compile", "--only", "hssne-exact"]) == 0
    shown = capsys.readouterr().out
    assert (f"carries them compiled for {level.cpu}" in shown) is carried
    assert "0 kernels compiled" in shown
