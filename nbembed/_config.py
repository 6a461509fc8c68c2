"""Package-wide settings: Numba flags, size thresholds and the kernel lock.

Everything that tunes how kernels are compiled or when a code path is chosen lives
here, so it is set in one place and documented once.
"""

import os
import threading

# OpenMP worker threads that spin while waiting made small parallel kernels
# 30-70x slower whenever other processes were busy on the same cores (and a
# test file 12x slower). Passive waiting costs nothing measurable when idle.
# The variable is read when the OpenMP runtime loads, at the first parallel
# kernel call, so setting it here is early enough; a user's value wins.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

#: Keyword arguments for every serial Numba kernel. ``cache=True`` keeps notebook
#: start-up and CI fast after the first compilation; ``nogil=True`` lets the
#: widget's worker thread run kernels while the main thread stays responsive.
#: ``fastmath`` allows re-association only: without it LLVM cannot vectorize the
#: floating-point sums over j in the pair loops (8-40x slower measured here).
#: NaN and infinity semantics are kept, so divergence is still detected.
#: ``error_model="numpy"`` drops Python's ZeroDivisionError checks, whose status
#: branch after every call stops vectorization of loops that call a kernel
#: function (a division by zero gives inf, as in NumPy).
JIT = dict(nogil=True, cache=True, error_model="numpy",
           fastmath={"reassoc", "contract", "arcp", "nsz"})

#: Keyword arguments for kernels with a ``prange`` loop over points.
JIT_PARALLEL = dict(JIT, parallel=True)

#: Numba's default threading layer aborts when two Python threads enter parallel
#: kernels at the same time, so every call of a parallel kernel from the run
#: protocol holds this lock.
KERNEL_LOCK = threading.RLock()

#: Up to this many points, ``affinity="auto"`` builds the exact dense P
#: (every pair); above it, the sparse k-nearest-neighbour P with about
#: 3 * perplexity neighbours per point. The kNN P keeps about 98% of the mass
#: of the dense P, and the dense one becomes memory-bound beyond a few thousand
#: points.
DENSE_AFFINITY_MAX_N = int(os.environ.get("NBEMBED_DENSE_AFFINITY_MAX_N", 5000))

#: With a sparse (k-nearest-neighbour) P, up to this many points
#: ``repulsion="auto"`` sums HSSNE's repulsion exactly over all pairs; above it,
#: approximately (the "adaptive" choice). A dense P always goes with the exact
#: sum: its attraction reads every pair anyway, in the same fused pass. With a
#: kNN P at alpha = 1 (loaded 2-core machine, ms per iteration) the exact sum
#: took 2.6 / 22 / 108 at 2000 / 5000 / 10 000 points, Barnes-Hut 2.9 / 11 / 53
#: and the grid 4.3 / 10 / 13. Overridable with the environment variable
#: ``NBEMBED_EXACT_REPULSION_MAX_N``.
EXACT_REPULSION_MAX_N = int(os.environ.get("NBEMBED_EXACT_REPULSION_MAX_N", 2000))

#: Largest n x n float64 array nbembed allocates without being asked to, in bytes.
#: Dense affinities or distance matrices above it raise a ``MemoryError`` whose
#: message names the sparse alternative.
MAX_DENSE_BYTES = int(os.environ.get("NBEMBED_MAX_DENSE_BYTES", 4 * 2**30))
