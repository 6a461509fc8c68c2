#!/usr/bin/env python
"""Where a default HSSNE fit spends its time, each phase set against its floor.

For each data set the script fits ``HSSNE()`` (alpha = 1, defaults, all cores)
once after a warm-up, reads the phases from ``timings_``, then times the two
halves of one gradient on the final embedding: the attraction over the stored
entries of P and the repulsion (exact pairs up to 2000 points, the FFT grid
above). Each is set against a floor, the least time the work could take on
this machine:

* **rates** measured first, on all cores: a float32 matrix product (the
  machine's practical peak in flop/s), a read of a large float32 array (memory
  bandwidth), NumPy's float32 exponential (exponentials per second);
* **exact neighbours**: 2 n^2 D flop, the squared distances as one float32
  matrix product at the peak rate. Where nbembed searches approximately (above
  200 000 rows in 50-D) the exact floor is printed for scale only;
* **calibration**: one exponential per stored neighbour (the bandwidth search
  needs several passes; one is the floor);
* **attraction**: one read of P's stored entries (a 4-byte index and a 4-byte
  value each) and of the embedding, at the measured bandwidth;
* **repulsion**, FFT grid: the six real 2-D FFTs of the (2M)^2 padded grid
  (three charges forward, three potentials back) at 2.5 N log2 N flop each,
  N = 4 M^2, at the peak rate, plus one pass over the points' interpolation
  weights; exact pairs: 14 flop a pair (distance, kernel, both forces) at
  the peak rate; where the map has grown too wide for the grid's node budget
  and the run uses its Barnes-Hut tree, the tree is set against the grid the
  budget allows;
* **iteration**: attraction + repulsion.

The floors are optimistic by construction (no algorithm reaches a matrix
product's flop rate in an FFT, and the bandwidth is that of a streaming read),
so the ratio says how far each phase is from the machine, not from another
library.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/phase_floors.py                        # digits, 10^4, 7*10^4
    PYTHONPATH=. python benchmarks/phase_floors.py --data mixture-1000000 # about 15 minutes
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from numba import get_num_threads, njit, prange

sys.path.insert(0, str(Path(__file__).resolve().parent))
import data_shapes  # noqa: E402

from nbembed import HSSNE  # noqa: E402
from nbembed._kernels import hssne as kernels  # noqa: E402
from nbembed._kernels.barnes_hut import barnes_hut_repulsion  # noqa: E402
from nbembed._kernels.interpolation import Grid, interpolation_repulsion  # noqa: E402
from nbembed.affinity.perplexity import _resolve_neighbors  # noqa: E402
from nbembed._kernels.locality import morton_order, permute_csr, take_columns  # noqa: E402
from nbembed.objectives.hssne import (GRID_NODES_PER_POINT, LOCAL_ORDER_MIN_N,  # noqa: E402
                                      adaptive_grid_spacing)

#: Flop per pair of the exact repulsion and attraction at alpha = 1: the squared
#: distance (4), the kernel (2), Z and the two repulsive components (3), P S,
#: A and the two attractive components (5).
EXACT_PAIR_FLOP = 14
#: Rows of the warm-up fit: the whole set up to there, enough to take the
#: approximate neighbour search where the whole set takes it.
WARM_UP_ROWS = 250_000


def best_of(fn, repeats=5):
    """Least wall time of ``repeats`` calls (after one untimed call)."""
    fn()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def matmul_rate():
    """flop/s of a float32 matrix product (BLAS, all cores)."""
    rng = np.random.default_rng(0)
    a = rng.random((4096, 1024), dtype=np.float32)
    b = rng.random((1024, 4096), dtype=np.float32)
    return 2 * 4096 * 1024 * 4096 / best_of(lambda: a @ b)


@njit(parallel=True, fastmath=True, cache=False)
def _read_all(x):
    total = np.float32(0.0)
    for i in prange(x.size):
        total += x[i]
    return total


def read_bandwidth():
    """Bytes/s of a parallel streaming read of a 512 MB float32 array."""
    x = np.ones(1 << 27, dtype=np.float32)
    return x.nbytes / best_of(lambda: _read_all(x))


def exp_rate():
    """float32 exponentials per second, NumPy's, one array per core."""
    threads = get_num_threads()
    parts = [-np.random.default_rng(i).random(1 << 24, dtype=np.float32) for i in range(threads)]
    outs = [np.empty_like(p) for p in parts]
    with ThreadPoolExecutor(threads) as pool:
        seconds = best_of(lambda: list(pool.map(lambda k: np.exp(parts[k], out=outs[k]),
                                                range(threads))))
    return threads * parts[0].size / seconds


def load(name):
    if name == "digits":
        from sklearn.datasets import load_digits
        return load_digits().data
    return data_shapes.load(name)[0]


def component_times(model):
    """(attraction s, repulsion s, grid) of one gradient on the final embedding.

    ``grid`` is None for the exact pairs (then the repulsion's time is the
    whole fused gradient), else (kind, M): "fft" with the grid's side M, or
    "barnes-hut" (the run's choice when the map is too wide for the grid's node
    budget) with the side of the largest grid that budget allows.
    """
    Y = model.embedding_
    n = Y.shape[0]
    P = model.affinities_
    alpha = float(model.alpha)
    if not sp.issparse(P):
        Yt = np.ascontiguousarray(Y.T, dtype=np.float32)
        P32 = P.astype(np.float32)
        grad = np.empty_like(Yt)
        both = best_of(lambda: kernels.hssne_dense(Yt, P32, np.float32(alpha), 1.0, grad))
        return None, both, None
    P = sp.csr_matrix(P)
    Yt = np.ascontiguousarray(Y.T)
    indptr, indices, data = P.indptr, P.indices, P.data.astype(np.float32)
    if n >= LOCAL_ORDER_MIN_N:
        order = morton_order(Yt)
        indptr, indices, data = permute_csr(indptr, indices, data, order)
        Yt = take_columns(Yt, order)
    Y32 = Yt.astype(np.float32)
    attraction = np.empty((n, 2), dtype=np.float32)
    attract = best_of(lambda: kernels.hssne_attraction(Y32, indptr, indices, data,
                                                       np.float32(alpha), attraction))
    forces = np.empty((n, 2))
    nodes, min_boxes = model.fft_nodes, model.fft_min_boxes
    spacing = adaptive_grid_spacing(float(np.ptp(Yt, axis=1).max()), n, min_boxes * nodes)
    if spacing is None:  # too wide for the grid's node budget: the run's Barnes-Hut tree
        repel = best_of(lambda: barnes_hut_repulsion(Yt, alpha, model.theta, forces))
        return attract, repel, ("barnes-hut", budget_side(n))
    params = dict(n_nodes=nodes, box_size=nodes * spacing, min_boxes=min_boxes)
    cache = {}
    repel = best_of(lambda: interpolation_repulsion(Yt, alpha, repulsion=forces, cache=cache,
                                                    **params))
    return attract, repel, ("fft", Grid(Yt, alpha, **params, cache=cache).M)


def budget_side(n):
    """Nodes per side of the largest grid the adaptive repulsion allows for n points."""
    return int(math.sqrt(GRID_NODES_PER_POINT * n))


def floors(n, dims, nnz, grid, rates):
    """Floor seconds of each phase (per iteration for the gradient's parts)."""
    flops, bandwidth, exps = rates
    out = dict(neighbors=2.0 * n * n * dims / flops, calibration=nnz / exps)
    if grid is None:
        out["repulsion"] = EXACT_PAIR_FLOP * n * n / flops
        out["attraction"] = 0.0
    else:
        size = 4 * grid[1] ** 2
        fft = 6 * 2.5 * size * math.log2(size) / flops
        weights = n * (2 * 3 * 8 + 2 * 8) / bandwidth  # weights and coordinates, float64
        out["repulsion"] = fft + weights
        out["attraction"] = (nnz * 8 + n * (8 + 8 + 8)) / bandwidth
    out["iteration"] = out["repulsion"] + out["attraction"]
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", nargs="+", default=["digits", "image_like-10000", "mixture-70000"])
    args = p.parse_args(argv)
    rates = matmul_rate(), read_bandwidth(), exp_rate()
    print(f"Machine: {get_num_threads()} threads; float32 matrix product "
          f"{rates[0] / 1e9:.0f} Gflop/s, streaming read {rates[1] / 1e9:.1f} GB/s, "
          f"float32 exp {rates[2] / 1e9:.2f} G/s\n", flush=True)
    print("| data | phase | nbembed s | floor s | × floor | floor's model |")
    print("|---|---|---|---|---|---|")
    for name in args.data:
        X = load(name)
        n, dims = X.shape
        # Compile and warm up every kernel of the large path, the approximate
        # neighbour search included, on at most WARM_UP_ROWS rows.
        HSSNE(random_state=0, max_iter=20, early_exaggeration_iter=10).fit(X[:WARM_UP_ROWS])
        model = HSSNE(random_state=0).fit(X)
        t = model.timings_
        P = model.affinities_
        nnz = P.nnz if sp.issparse(P) else n * n
        attract, repel, grid = component_times(model)
        floor = floors(n, dims, nnz, grid, rates)
        per_it = (t.early_exaggeration + t.main) / (t.n_iter_early + t.n_iter_main)
        approximate = _resolve_neighbors("auto", X, "euclidean") == "approximate"
        label = f"{name} ({n} × {dims})"
        rows = [
            ("neighbours", t.neighbors, floor["neighbors"],
             "2 n² D flop at the product's rate" + (" (approximate search: for scale)"
                                                 if approximate else "")),
            ("calibration", t.calibration, floor["calibration"],
             f"one exp per stored entry ({nnz / n:.0f} a row)"),
        ]
        if grid is None:
            rows.append(("gradient (exact pairs)", repel, floor["repulsion"],
                         f"{EXACT_PAIR_FLOP} flop a pair"))
        else:
            kind, side = grid
            fft = f"6 FFTs of {2 * side}² at peak + one pass over the weights"
            rows += [("attraction", attract, floor["attraction"], "one read of P and Y"),
                     (f"repulsion ({'tree' if kind == 'barnes-hut' else 'grid'})", repel,
                      floor["repulsion"], fft if kind == "fft" else
                      f"the tree's: {fft} (the grid at its node budget)")]
        rows.append(("one iteration (fit's mean)", per_it, floor["iteration"],
                     "attraction + repulsion"))
        for phase, measured, low, model_text in rows:
            print(f"| {label} | {phase} | {measured:.4g} | {low:.2g} | "
                  f"{measured / low:.0f}× | {model_text} |", flush=True)
            label = ""


if __name__ == "__main__":
    main()
