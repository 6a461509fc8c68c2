"""Compile nbembed's kernels before their first use: ``nbembed compile``.

nbembed's kernels are compiled by Numba the first time a fit needs them and
kept in a disk cache (:mod:`nbembed._numba_cache`), so only the first fit
after installing waits for them: about 20 s for the digits and a minute for
a large set, spread over a dozen kernels. :func:`precompile` runs that
compilation ahead of time (a few minutes on one core), so that the first fit
on real data loads every kernel it uses from the cache.

It runs small fits of each method through each code path that a fit at some
size takes: the exact and k-nearest-neighbour affinities, the exact, grid
and Barnes-Hut repulsions, float32 and float64 kernels and inputs, dense and
sparse inputs, labels, and placing new points, plus every HSSNE kernel form
(the alpha slider of the Explorer may move to any of them). The kernels a fit
uses depend on the types of its arrays, not on their sizes, so a fit of 300
points compiles what a fit of a million uses, once the size thresholds that
choose between kernels are set as for a large set (:func:`_as_if_large`). Each
group of workloads runs in a new Python process of its own, one group after
another.

The neighbour search of sparse rows or other metrics at large sizes
(pynndescent) is another package's and compiles in every new process; it is
not covered.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import time
from unittest import mock

import numpy as np

#: Points of the small data sets the workloads fit.
N_POINTS = 300

#: Few iterations for HSSNE on them: they use the same kernels as many.
SHORT_HSSNE = dict(max_iter=40, early_exaggeration_iter=20, perplexity=10, random_state=0)


def _data(dtype=np.float64, n=N_POINTS, d=10, seed=0):
    """Three Gaussian blobs in ``d`` dimensions and their labels."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    X = rng.normal(size=(n, d)) + 4.0 * np.eye(3, d)[y]
    return X.astype(dtype), y


def _hssne_fits(options, with_labels=False):
    """HSSNE fits with ``options`` on float64 and float32 input and kernels,
    each followed by placing new points."""
    from . import HSSNE

    for dtype in ("float64", "float32"):
        for input_dtype in (np.float64, np.float32):
            X, y = _data(input_dtype)
            labels = np.where(np.arange(len(y)) % 10 == 0, y, -1) if with_labels else None
            model = HSSNE(dtype=dtype, **SHORT_HSSNE, **options).fit(X, labels)
            model.transform(X[:20] + 0.1)


def _every_form():
    from ._kernels.forms import compile_every_form

    compile_every_form()


def _hssne_exact():
    """Exact (dense) and kNN affinities with the exact repulsion; labels as
    must-links; sparse input."""
    import scipy.sparse as sp

    from . import HSSNE

    _hssne_fits({}, with_labels=True)
    _hssne_fits(dict(affinity="knn", repulsion="exact"))
    X, _ = _data()
    for metric in ("euclidean", "cosine"):
        HSSNE(metric=metric, affinity="knn", **SHORT_HSSNE).fit(sp.csr_matrix(np.abs(X)))
    _every_form()


@contextlib.contextmanager
def _as_if_large():
    """Within the block, small data sets take the code paths that only large
    ones take otherwise: the size thresholds that choose between kernels are 0."""
    from .methods import _new_points, mbed
    from .objectives import hssne

    thresholds = ((_new_points, "GRID_PLACEMENT_MIN_REFERENCE"),  # placing on a grid
                  (hssne, "LOCAL_ORDER_MIN_N"),  # P in the map's spatial order
                  (mbed, "EXACT_NORMALIZERS_MAX_N"))  # Mbed's normalizers on a grid
    with contextlib.ExitStack() as stack:
        for module, name in thresholds:
            stack.enter_context(mock.patch.object(module, name, 0))
        yield


def _annotations_aside():
    """A must-link group worked out beside a large run, as the Explorer does from
    ``ANNOTATIONS_ASIDE_MIN_N`` points (serial twins of the mixing kernels, and
    of the strongest neighbours a group takes in), and the spatial order renewed
    in pieces, as in the Explorer's runs."""
    import scipy.sparse as sp

    from . import Annotations
    from .affinity.constraints import MUST_LINK_NEIGHBORS, strongest_neighbors
    from .objectives import hssne

    rng = np.random.default_rng(0)
    W = sp.random(N_POINTS, N_POINTS, density=0.05, format="csr", random_state=0)
    for dtype in (np.float32, np.float64):  # P in the kernels' precision
        P = sp.csr_matrix((W + W.T) / (W + W.T).sum(), dtype=dtype)
        P.sort_indices()
        with _as_if_large(), mock.patch.object(hssne, "ANNOTATIONS_ASIDE_MIN_N", 0):
            run = hssne.HSSNEObjective(P, None, n_components=2, alpha=1.0, rho=0.5,
                                       must_link_neighbors=MUST_LINK_NEIGHBORS,
                                       dtype=dtype, repulsion="fft")
            Yt = rng.normal(size=(2, N_POINTS)).astype(dtype)
            run.gradient(Yt, np.empty_like(Yt))  # the spatial order
            run.spread_renewals = True
            run.iteration = hssne.REORDER_EVERY
            for _ in range(hssne.RENEWAL_PIECES):  # renewed in pieces
                run.gradient(Yt, np.empty_like(Yt))
            annotations = Annotations(N_POINTS)
            annotations.add_must_link(np.arange(0, N_POINTS, 7))
            run.prepare_annotations(annotations)()
            strongest_neighbors(P, MUST_LINK_NEIGHBORS)  # in parallel, as HSSNE.prepare
            # a small live run's first lasso (a dense P)
            strongest_neighbors(P.toarray(), MUST_LINK_NEIGHBORS, parallel=False)


def _hssne_approximate():
    """kNN affinities with the grid and Barnes-Hut repulsions, as at large sizes,
    with labels as must-links, also worked out beside the run."""
    with _as_if_large():
        # Labels as must-links mixed into a sparse P (a fixed rho: no cross-validation).
        _hssne_fits(dict(affinity="knn", repulsion="fft", rho=0.5), with_labels=True)
        # The neighbours by nearest-neighbour descent, as above the exact search's sizes.
        _hssne_fits(dict(affinity="knn", repulsion="barnes-hut", neighbors="approximate"))
    _annotations_aside()
    _every_form()


def _input_for(spec, dtype):
    """Data for one fit of the estimator of ``spec``: class posteriors for the
    class-posterior methods, points (and labels, some hidden) for the others."""
    X, y = _data(dtype)
    if spec.kind == "class posteriors":
        rng = np.random.default_rng(1)
        P = np.eye(3)[y] + rng.uniform(0.05, 0.3, size=(len(y), 3))
        return (P / P.sum(axis=1, keepdims=True)).astype(dtype), None
    if spec.labels == "unused":
        return X, None
    if spec.labels == "optional":
        y = np.where(np.arange(len(y)) % 5 == 0, y, -1)
    return X, y


def _other_methods():
    """A default fit of every other estimator on float64 and on float32 input,
    and on float64 as at large sizes, each with its prediction or placement of
    new points."""
    from .methods.registry import REGISTRY

    for spec in REGISTRY:
        if spec.name == "hssne":
            continue
        for dtype, paths in ((np.float64, contextlib.nullcontext),
                             (np.float32, contextlib.nullcontext), (np.float64, _as_if_large)):
            model = spec.cls()
            # Fewer iterations use the same kernels.
            short = dict(random_state=0, max_iter=60)
            model.set_params(**{k: v for k, v in short.items() if k in model.get_params()})
            X, y = _input_for(spec, dtype)
            with paths():
                model.fit(X, y)
                for name in ("transform", "predict_proba"):
                    if hasattr(model, name):
                        getattr(model, name)(X[:20])


#: What :func:`precompile` runs, one process a group: name -> (workload,
#: description).
GROUPS = {
    "hssne-exact": (_hssne_exact, "HSSNE, exact repulsion, every alpha"),
    "hssne-approximate": (_hssne_approximate, "HSSNE, grid and Barnes-Hut repulsions"),
    "other-methods": (_other_methods, "Mbed, NeRV, SNeRV, Parametric Embedding, spectral"),
}


def _run_group(name):
    """Run one group in this process; return what it did as a dict."""
    from .optim.compiling import CompileCounter

    workload, _ = GROUPS[name]
    start = time.perf_counter()
    with CompileCounter() as counter:
        workload()
    return dict(group=name, seconds=time.perf_counter() - start, compiled=counter.count)


def precompile(groups=None, *, say=print, env=None):
    """Compile every nbembed kernel that the groups' fits use into the disk cache.

    The groups run one after another, each in a new Python process. Processes
    that compile at once share the cache safely where file locks exist (see
    :mod:`nbembed._numba_cache`).

    Parameters
    ----------
    groups : sequence of str, optional
        Keys of :data:`GROUPS` (default: all).
    say : callable
        Called with a line of progress as each group ends.
    env : dict, optional
        Environment of the groups' processes (default: this one's).

    Returns
    -------
    list of dict
        Per group: ``group``, ``seconds`` and ``compiled`` (kernels compiled;
        0 when everything was already in the cache).

    Raises
    ------
    ValueError
        For an unknown group.
    RuntimeError
        When a group's process fails; the message ends with its error output.
    """
    groups = list(GROUPS) if groups is None else list(groups)
    unknown = [g for g in groups if g not in GROUPS]
    if unknown:
        raise ValueError(f"unknown group {unknown[0]!r}; choose from {', '.join(GROUPS)}")
    reports = []
    for name in groups:
        done = subprocess.run([sys.executable, "-m", __name__, name],
                              capture_output=True, text=True, env=env)
        if done.returncode:
            raise RuntimeError(f"compiling {name!r} failed:\n{done.stderr[-4000:]}")
        report = json.loads(done.stdout.strip().splitlines()[-1])
        say(f"{name}: {report['compiled']} kernels compiled in {report['seconds']:.0f} s "
            f"({GROUPS[name][1]})")
        reports.append(report)
    return reports


def main(argv=None):
    """Run one group in this process and print its report as a JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("group", choices=list(GROUPS))
    args = parser.parse_args(argv)
    print(json.dumps(_run_group(args.group)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
