"""Start-up and live-change latency of HSSNE, as a user meets them.

Two measurements, each in fresh Python processes (``subprocess``), with
nbembed's kernels already in Numba's disk cache (the script runs one
untimed process first to fill it, as any earlier use would have):

1. **Fresh vs warm fit.** One process imports nbembed, reads the digits
   (n = 1797, written to a ``.npy`` file by this script, so that reading them
   imports nothing) and times ``HSSNE().fit_transform(X)`` twice. The first
   includes loading the cached kernels; the second is warm. "Fresh minus
   warm" is the import plus the first fit minus the warm fit. Repeated in
   ``--repeats`` processes; medians are printed, and whether the process
   imported scikit-learn (it need not: nbembed's estimators import it only
   for what they take from it).
2. **Large sets, first fit after installing.** The same fresh-vs-warm pair on
   ``--sizes`` points of ``data_shapes.mixture`` (50-D), where the sparse
   neighbourhoods and the approximate repulsion run: once with the disk cache
   filled (a new notebook kernel on a machine that has used nbembed before) and
   once with an empty ``NUMBA_CACHE_DIR`` (the first fit after installing:
   every kernel it uses compiles inside it). "first minus warm" is what the
   user waits beyond a warm fit. When the package carries a bundle of kernels
   compiled ahead of time (``nbembed compile --bundle``, as a wheel built
   after it does; see ``nbembed._prebuilt``), the empty cache is measured
   twice: with ``NBEMBED_PREBUILT_KERNELS=0`` (no bundle: everything compiles)
   and with the bundle. Another line: after installing and running
   ``nbembed compile`` (into another empty cache; its duration is printed).
3. **A live change of alpha.** In a warm process, a run on ``--n`` points
   (Gaussian blobs in 10 dimensions) is prepared and stepped 300 iterations;
   then, for each new alpha, the time from ``run.set_params(alpha=...)`` to
   the end of the next ``run.step(1)``. That call also evaluates the cost
   once (every step call ends with one), which is included. At n = 10 000 an
   alpha without a closed form moves the repulsion to the grid; the run loaded
   that path's kernels when it was prepared, so no cache load is timed here.

Run with ``PYTHONPATH=. python benchmarks/bench_startup.py``.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

FIT = r"""
import time
t0 = time.perf_counter()
from nbembed import HSSNE
t1 = time.perf_counter()
import json, sys
import numpy as np
X = np.load(sys.argv[1])
t2 = time.perf_counter()
HSSNE(random_state=0).fit_transform(X)
t3 = time.perf_counter()
HSSNE(random_state=0).fit_transform(X)
t4 = time.perf_counter()
print(json.dumps(dict(imports=t1 - t0, read_data=t2 - t1, first_fit=t3 - t2, warm_fit=t4 - t3,
                      sklearn_imported="sklearn" in sys.modules)))
"""

LIVE = r"""
import json, sys, time
import numpy as np
from nbembed import HSSNE
n = int(sys.argv[1])
rng = np.random.default_rng(0)
centres = rng.normal(scale=8.0, size=(10, 10))
X = centres[rng.integers(0, 10, n)] + rng.normal(size=(n, 10))
run = HSSNE(alpha=1.0, random_state=0).prepare(X)
run.step(300)
out = {}
for alpha in (0.8, 1.3, 0.6, 1.0):
    t = time.perf_counter()
    run.set_params(alpha=alpha)
    run.step(1)
    out[str(alpha)] = time.perf_counter() - t
    run.step(20)
out["repulsion"] = run.objective.repulsion
print(json.dumps(out))
"""


def _environment(cache_dir, bundle=True):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.getcwd() + os.pathsep + env.get("PYTHONPATH", "")
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = cache_dir
    if not bundle:
        env["NBEMBED_PREBUILT_KERNELS"] = "0"
    return env


def _child(code, *args, cache_dir=None, bundle=True):
    done = subprocess.run([sys.executable, "-c", code, *map(str, args)],
                          env=_environment(cache_dir, bundle), capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _compile_command(cache_dir):
    """Seconds that ``nbembed compile`` takes to fill ``cache_dir``."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "nbembed.cli", "compile"],
                   env=_environment(cache_dir, bundle=False), capture_output=True, check=True)
    return time.perf_counter() - start


def _bundle():
    """The name of the package's bundle of kernels a fresh process here uses, or None
    (this process has defined no kernel, so it chooses as a fresh one would)."""
    from nbembed import _prebuilt

    level, _ = _prebuilt.choose()
    return None if level is None else _prebuilt.bundle_tag(level)


def large_sets(sizes):
    """Part 2: the first fit of a fresh process on large sets, with the disk cache
    filled and with an empty one, against the warm fit after it. The empty cache
    is measured twice when the package carries a bundle of kernels compiled ahead
    of time (``nbembed compile --bundle``, as a wheel may): without it (every
    kernel compiled for this processor) and with it."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from data_shapes import mixture

    bundle = _bundle()
    for n in sizes:
        with tempfile.TemporaryDirectory() as folder:
            data = os.path.join(folder, "mixture.npy")
            np.save(data, mixture(n)[0])
            empty = os.path.join(folder, "numba-cache")
            first_ever = _child(FIT, data, cache_dir=empty, bundle=False)
            cached = _child(FIT, data, cache_dir=empty, bundle=False)  # the cache it filled
            rows = [("empty disk cache, no bundle", first_ever)]
            if bundle is not None:
                seeded = os.path.join(folder, "bundle-cache")
                rows.append(("empty disk cache, the bundle", _child(FIT, data, cache_dir=seeded)))
            compiled = os.path.join(folder, "compiled-cache")
            compiling = _compile_command(compiled)
            after_compile = _child(FIT, data, cache_dir=compiled, bundle=False)
        print(f"\n50-D mixture, n = {n}, HSSNE() defaults, one fresh process each")
        print(f"  (`nbembed compile` into an empty cache took {compiling:.0f} s; bundle: "
              f"{bundle or 'none in the package'})")
        rows += [("after `nbembed compile`", after_compile),
                 ("disk cache filled by the fit itself", cached)]
        for label, record in rows:
            extra = record["first_fit"] - record["warm_fit"]
            print(f"  {label:37s} first fit {record['first_fit']:7.2f} s, warm "
                  f"{record['warm_fit']:7.2f} s, first minus warm {extra:6.2f} s "
                  f"(import {record['imports']:.2f} s)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 70_000],
                        help="points of the 50-D mixture for part 2 (none: skip it)")
    args = parser.parse_args(argv)

    from nbembed.datasets import load_digits
    with tempfile.TemporaryDirectory() as folder:
        data = os.path.join(folder, "digits.npy")
        np.save(data, load_digits()[0])
        _child(FIT, data)  # fills the disk cache; not timed
        fits = [_child(FIT, data) for _ in range(args.repeats)]
    sklearn = {f.pop("sklearn_imported") for f in fits}
    med = {key: statistics.median(f[key] for f in fits) for key in fits[0]}
    penalty = [f["imports"] + f["first_fit"] - f["warm_fit"] for f in fits]
    print(f"digits (n = 1797), HSSNE() defaults, median of {args.repeats} fresh processes")
    print(f"  import nbembed              {med['imports']:7.2f} s")
    print(f"  read the data (np.load)     {med['read_data']:7.2f} s")
    print(f"  first fit in the process    {med['first_fit']:7.2f} s")
    print(f"  second (warm) fit           {med['warm_fit']:7.2f} s")
    print(f"  fresh minus warm            {statistics.median(penalty):7.2f} s "
          f"(import + first fit - warm fit; range {min(penalty):.2f}-{max(penalty):.2f} s)")
    print(f"  scikit-learn imported     {' / '.join(map(str, sorted(sklearn)))}")

    large_sets(args.sizes)

    _child(LIVE, args.n)  # fills the cache for the kernels of this size
    live = _child(LIVE, args.n)
    print(f"\nset_params(alpha=...) to the end of the next step(1), n = {args.n} "
          f"(repulsion {live.pop('repulsion')!r}, warm process)")
    for alpha, seconds in live.items():
        print(f"  alpha -> {alpha:4s}  {1000 * seconds:8.1f} ms")


if __name__ == "__main__":
    main()
