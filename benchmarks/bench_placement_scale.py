#!/usr/bin/env python
"""Placing many rows against a map fitted on a sample: neighbour search, grid, Dask scaling.

Three parts, each printing a Markdown table:

``search``
    The k = 15 nearest reference rows of new rows against 10^5 (and, with
    ``--search-references``, more) reference rows of the 50-D mixture of
    ``data_shapes``: nbembed's exact search (float32 product, candidates
    measured again in float64) against pynndescent's approximate index (build
    once, then query), with the index's recall of the exact neighbours.
    Seconds per 10^4 query rows, on all cores, after a warm-up that compiles
    (pynndescent: a small index built first).
``grid``
    ``HSSNE.transform`` of 2000 new rows against maps of 10^3 to 10^5 points,
    with the repulsion summed over all reference points (``"exact"``) and read
    off the grid (``"grid"``): seconds per 1000 rows (after one warm-up call
    that builds the grid and compiles) and the median distance between the two
    placements as a share of the map's extent. This is where
    ``GRID_PLACEMENT_MIN_REFERENCE`` comes from.
``dask``
    Out of core: ``--rows`` rows (default 10^7) written chunk by chunk
    (``--chunk`` rows) into a zarr store as float32, each chunk a 50-D mixture
    of 10 clusters of its own (1000 clusters in all by default), never whole
    in memory; HSSNE fitted on a ``--sample`` of them (default 10^5); then
    ``nbembed.dask.transform`` of the first ``--scaling-rows`` rows on a
    ``LocalCluster`` of one worker and of two (one thread each, Numba and BLAS
    on one thread: the scaling from one core to two), and of all rows on two
    workers, written to another zarr store. Reported: seconds, rows per second
    per core, peak resident memory per worker, and an estimate for 10^8 rows
    on N such workers (assuming the rate per core holds, the map is sent once
    per worker, and the store serves chunks as fast as they are placed).

Usage (from the repository root; ``dask`` needs the ``dask`` extra and zarr)::

    PYTHONPATH=. python benchmarks/bench_placement_scale.py search grid
    PYTHONPATH=. python benchmarks/bench_placement_scale.py dask --store /tmp/placement
    PYTHONPATH=. python benchmarks/bench_placement_scale.py dask --rows 200000 --sample 5000
"""

from __future__ import annotations

import argparse
import os
import pathlib
import resource
import shutil
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import data_shapes  # noqa: E402

K = 15


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("parts", nargs="+", choices=["search", "grid", "dask"])
    p.add_argument("--search-references", type=int, nargs="+", default=[100_000])
    p.add_argument("--search-queries", type=int, default=20_000)
    p.add_argument("--grid-references", type=int, nargs="+",
                   default=[1000, 3000, 10_000, 30_000, 100_000])
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--chunk", type=int, default=100_000)
    p.add_argument("--sample", type=int, default=100_000)
    p.add_argument("--scaling-rows", type=int, default=1_000_000)
    p.add_argument("--store", type=pathlib.Path, default=pathlib.Path("placement-bench"))
    return p.parse_args(argv)


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in rows]
    print("\n".join(lines) + "\n", flush=True)


# -- neighbour search -------------------------------------------------------------------------
def part_search(args):
    from pynndescent import NNDescent

    from nbembed._nearest_reference import ReferenceRows
    from nbembed.methods._new_points import _block_rows

    rows = []
    for n in args.search_references:
        X, _ = data_shapes.mixture(n + args.search_queries, seed=1)
        R, Q = X[:n], X[n:]
        start = time.perf_counter()
        reference = ReferenceRows(R)
        reference.nearest(Q[:10], K, _block_rows(n))  # compiles
        prepared = time.perf_counter() - start
        start = time.perf_counter()
        _, exact = reference.nearest(Q, K, _block_rows(n))
        exact_s = time.perf_counter() - start
        NNDescent(R[:2000], n_neighbors=30, random_state=0, n_jobs=-1).query(Q[:10], k=K)
        start = time.perf_counter()  # compiled by the small index above
        index = NNDescent(R, n_neighbors=30, random_state=0, n_jobs=-1)
        index.prepare()
        built = time.perf_counter() - start
        index.query(Q[:10], k=K)
        start = time.perf_counter()
        approximate, _ = index.query(Q, k=K)
        query_s = time.perf_counter() - start
        recall = np.mean([len(np.intersect1d(a, b)) / K for a, b in zip(exact, approximate)])
        per = 1e4 / len(Q)
        rows.append([f"{n:,}", f"{prepared:.1f}", f"{exact_s * per:.2f}", f"{built:.1f}",
                     f"{query_s * per:.2f}", f"{recall:.4f}"])
    table(["reference rows", "exact: prepare (s)", "exact: s per 10^4 rows",
           "pynndescent: build (s)", "pynndescent: s per 10^4 rows", "pynndescent recall"],
          rows)


# -- grid against exact repulsion -------------------------------------------------------------
def part_grid(args):
    import copy

    from nbembed import HSSNE

    rows = []
    for n in args.grid_references:
        X, _ = data_shapes.mixture(n + 2000, seed=2)
        model = HSSNE(random_state=0).fit(X[:n])
        new = X[n:]
        placed, seconds = {}, {}
        for placement in ("exact", "grid"):
            placer = copy.copy(model._fitted_placement())
            placer.placement = placement
            placer._field = None
            placer.transform(new[:5])  # compiles, builds the grid
            start = time.perf_counter()
            placed[placement] = placer.transform(new)
            seconds[placement] = (time.perf_counter() - start) / len(new) * 1000
        extent = float(np.ptp(model.embedding_, axis=0).max())
        moved = np.linalg.norm(placed["grid"] - placed["exact"], axis=1)
        rows.append([f"{n:,}", f"{seconds['exact']:.3f}", f"{seconds['grid']:.3f}",
                     f"{seconds['exact'] / seconds['grid']:.1f}x",
                     f"{np.median(moved) / extent:.1e}"])
    table(["reference points", "exact (s per 1000 rows)", "grid (s per 1000 rows)",
           "exact / grid", "median distance / extent"], rows)


# -- out of core on Dask ----------------------------------------------------------------------
def write_rows(store, n_rows, chunk):
    """Rows generated and written one chunk at a time (float32); each chunk is a
    mixture with its own clusters (its own seed), so the store holds 10 clusters a
    chunk."""
    import dask.array as da
    import zarr

    path = store / "rows.zarr"
    if path.exists():
        existing = da.from_zarr(str(path))
        if existing.shape == (n_rows, 50):
            return existing
        shutil.rmtree(path)
    array = zarr.open_array(str(path), mode="w", shape=(n_rows, 50), chunks=(chunk, 50),
                            dtype="float32")
    for start in range(0, n_rows, chunk):
        stop = min(n_rows, start + chunk)
        X, _ = data_shapes.mixture(stop - start, seed=1000 + start // chunk)
        array[start:stop] = X.astype(np.float32)
    return da.from_zarr(str(path))


def sample_rows(rows, size, seed=0):
    """``size`` rows drawn without replacement, read chunk by chunk."""
    chosen = np.sort(np.random.default_rng(seed).choice(rows.shape[0], size, replace=False))
    return rows[chosen].compute().astype(np.float64)


def fitted_map_warm_up(placer, X):
    """Place rows ``X`` with a copy of ``placer`` (loads Numba's kernels)."""
    import pickle

    pickle.loads(pickle.dumps(placer)).transform(X)


def _peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def place_on_cluster(placer, rows, n_workers, out, warm_up_rows):
    """Seconds to place ``rows`` and write them to ``out``; peak RSS per worker (MiB)."""
    from dask.distributed import Client, LocalCluster

    import nbembed.dask

    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        # Every worker loads (or compiles) the kernels before the clock starts; the
        # map's own caches (float32 rows, grid) are built on each worker's first chunk.
        client.run(fitted_map_warm_up, placer, warm_up_rows)
        start = time.perf_counter()
        nbembed.dask.transform(placer, rows).to_zarr(str(out), overwrite=True)
        seconds = time.perf_counter() - start
        peaks = client.run(_peak_rss_mib)
    return seconds, sorted(peaks.values())


def part_dask(args):
    from nbembed import HSSNE
    from nbembed.fitted_map import fitted_map

    args.store.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    rows = write_rows(args.store, args.rows, args.chunk)
    print(f"{args.rows:,} rows in {rows.numblocks[0]} chunks of {args.chunk:,}: "
          f"{time.perf_counter() - start:.0f} s to write (or find) them", flush=True)
    sample = sample_rows(rows, args.sample)
    start = time.perf_counter()
    model = HSSNE(random_state=0).fit(sample)
    fit_s = time.perf_counter() - start
    placer = fitted_map(model)
    print(f"HSSNE on a sample of {args.sample:,}: {fit_s:.0f} s (this process, all cores); "
          f"grid placement: {placer._placer.uses_grid}", flush=True)
    # Workers inherit the environment: one thread each for Numba, OpenMP and BLAS.
    for name in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                 "MKL_NUM_THREADS"):
        os.environ[name] = "1"
    results = []
    scaling = rows[:args.scaling_rows]
    for n_workers, part, label in ((1, scaling, "first"), (2, scaling, "first"),
                                   (2, rows, "all")):
        seconds, peaks = place_on_cluster(placer, part, n_workers, args.store / "placed.zarr",
                                          sample[:20])
        n = part.shape[0]
        results.append((n_workers, n, seconds, peaks))
        print(f"{n:,} rows on {n_workers} worker(s): {seconds:.0f} s", flush=True)
    table(["rows", "workers (1 core each)", "seconds", "rows / s / core",
           "peak RSS per worker (MiB)"],
          [[f"{n:,}", w, f"{s:.0f}", f"{n / s / w:,.0f}", ", ".join(f"{p:.0f}" for p in peaks)]
           for w, n, s, peaks in results])
    one, two = results[0][2], results[1][2]
    print(f"scaling from one worker to two on the first {args.scaling_rows:,} rows: "
          f"{one / two:.2f}x (2 is linear)\n")
    per_core = results[2][1] / results[2][2] / 2
    table(["workers (1 core each)", "estimated time for 10^8 rows"],
          [[w, _duration(1e8 / (per_core * w))] for w in (2, 16, 64, 256)])


def _duration(seconds):
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


def main(argv=None):
    args = parse_args(argv)
    for part in args.parts:
        print(f"## {part}\n", flush=True)
        globals()[f"part_{part}"](args)


if __name__ == "__main__":
    main()
