"""Approximate nearest neighbours of dense rows by nearest-neighbour descent.

Dong, Charikar and Li (2011): a neighbour of a neighbour is likely a
neighbour. Each point keeps its k best candidates so far in a max-heap (the
farthest at the root); a round compares, around every point p, the
candidates of p with each other, and each comparison that beats a heap's
root replaces it. The heaps start from a forest of random projection trees:
every point is compared with the others of its leaf in each tree.

Deterministic whatever the number of threads. Random choices come from a
counter-based hash of the seed and of what is chosen (no generator state
shared between threads); every parallel loop writes only rows it owns (a
tree's leaves are disjoint; a round first proposes its updates per point
into that point's slots, then applies them in a fixed order, one heap per
thread at a time).

Distances are squared Euclidean in float32 while searching; the caller
measures the k it returns again in float64.
"""

import numpy as np
from numba import njit, prange

from .._config import JIT, JIT_PARALLEL
from .nearest import kth_smallest

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S11 = np.uint64(11)
_S32 = np.uint64(32)
_INF32 = np.float32(np.inf)


@njit(**JIT)
def mix(x):
    """splitmix64's output function: a well-mixed uint64 from a uint64."""
    z = x + _GOLDEN
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return z ^ (z >> _S31)


@njit(**JIT)
def hash3(seed, a, b):
    """A uint64 that depends on ``seed``, ``a`` and ``b`` (non-negative ints)."""
    return mix(mix(np.uint64(seed) ^ mix(np.uint64(a))) ^ np.uint64(b))


@njit(**JIT)
def priority(seed, a, b):
    """A 32-bit sampling priority of candidate ``b`` in row ``a``'s lists."""
    return np.uint32(hash3(seed, a, b) >> _S32)


@njit(**JIT)
def below(h, bound):
    """An integer in [0, bound) from the hash ``h``."""
    return np.int64((h >> _S11) % np.uint64(bound))


@njit(**JIT)
def squared_distance(A, i, B, j):
    """||A[i] - B[j]||^2 in the precision of A."""
    s = A.dtype.type(0.0)
    for f in range(A.shape[1]):
        diff = A[i, f] - B[j, f]
        s += diff * diff
    return s


@njit(**JIT)
def _sift_down(keys, first, second, row, pos, size):
    """Restore the max-heap property of row's ``keys`` below ``pos``, moving
    the payloads ``first`` and ``second`` along."""
    key, a, b = keys[row, pos], first[row, pos], second[row, pos]
    while True:
        left = 2 * pos + 1
        if left >= size:
            break
        child = left
        if left + 1 < size and keys[row, left + 1] > keys[row, left]:
            child = left + 1
        if keys[row, child] <= key:
            break
        keys[row, pos] = keys[row, child]
        first[row, pos] = first[row, child]
        second[row, pos] = second[row, child]
        pos = child
    keys[row, pos], first[row, pos], second[row, pos] = key, a, b


@njit(**JIT)
def heap_push(dist, idx, flag, row, d, j, new):
    """Offer candidate j at squared distance d to row's max-heap of size k.

    Returns 1 when it entered (it beat the root and was not there yet), else 0.
    The root is replaced and sifted down; ties keep the heap as it is.
    """
    k = dist.shape[1]
    if d >= dist[row, 0]:
        return 0
    found = False
    for c in range(k):  # no early exit: the scan vectorizes
        found |= idx[row, c] == j
    if found:
        return 0
    dist[row, 0], idx[row, 0], flag[row, 0] = d, j, new
    _sift_down(dist, idx, flag, row, 0, k)
    return 1


#: Candidates beyond which :func:`heap_merge` selects instead of pushing one by one.
MERGE_MIN = 12


@njit(**JIT)
def heap_merge(dist, idx, flag, row, cand_d, cand_j, count, work_d, work_j, work_f,
               scratch):
    """Offer row's heap ``count`` distinct candidates (none of them ``row``).

    Few that beat the root are pushed one by one; many are merged: the heap's
    entries and theirs, the k smallest kept (equal distances: the heap's
    first, then the candidates' order), the heap rebuilt. The ``work_*``
    arrays and ``scratch`` hold k + count entries. Returns how many entered.
    """
    k = dist.shape[1]
    root = dist[row, 0]
    kept = 0
    for c in range(count):
        if cand_d[c] < root:
            found = False
            for e in range(k):
                found |= idx[row, e] == cand_j[c]
            if not found:
                work_d[k + kept], work_j[k + kept] = cand_d[c], cand_j[c]
                kept += 1
    if kept == 0:
        return 0
    if kept < MERGE_MIN:
        entered = 0
        for c in range(kept):
            entered += heap_push(dist, idx, flag, row, work_d[k + c], work_j[k + c], 1)
        return entered
    for e in range(k):
        work_d[e], work_j[e], work_f[e] = dist[row, e], idx[row, e], flag[row, e]
    for c in range(kept):
        work_f[k + c] = 1
    total = k + kept
    cut = kth_smallest(work_d, total, k - 1, scratch)
    filled = 0
    entered = 0
    for e in range(total):
        if work_d[e] < cut:
            dist[row, filled], idx[row, filled], flag[row, filled] = work_d[e], work_j[e], work_f[e]
            entered += e >= k
            filled += 1
    for e in range(total):
        if filled == k:
            break
        if work_d[e] == cut:
            dist[row, filled], idx[row, filled], flag[row, filled] = work_d[e], work_j[e], work_f[e]
            entered += e >= k
            filled += 1
    for pos in range(k // 2 - 1, -1, -1):
        _sift_down(dist, idx, flag, row, pos, k)
    return entered


@njit(**JIT)
def _split(X, order, lo, hi, seed, tree, node, normal):
    """Partition order[lo:hi] by the hyperplane halfway between two of its
    points, chosen by the hash; returns the first index of the far side, or
    the middle when the hyperplane leaves a side empty."""
    count = hi - lo
    h = hash3(seed, tree, node)
    first = below(h, count)
    a = order[lo + first]
    b = order[lo + (first + 1 + below(mix(h), count - 1)) % count]  # another position
    dim = X.shape[1]
    for f in range(dim):
        normal[f] = X[a, f] - X[b, f]
    offset = 0.0
    for f in range(dim):  # apart from the stores: see nbembed._kernels.reduction
        offset += normal[f] * 0.5 * (X[a, f] + X[b, f])
    left, right = lo, hi - 1
    while left <= right:
        s = -offset
        p = order[left]
        for f in range(dim):
            s += normal[f] * X[p, f]
        if s <= 0.0:
            left += 1
        else:
            order[left] = order[right]
            order[right] = p
            right -= 1
    if left == lo or left == hi:
        return lo + count // 2
    return left


@njit(**JIT)
def grow_tree(X, seed, tree, leaf_size, order, starts):
    """One random projection tree: ``order`` (n,) is filled with the points,
    leaf after leaf, and ``starts`` with the first position of each leaf, in
    increasing order; returns the number of leaves (``starts[leaves]`` is n)."""
    n = X.shape[0]
    for i in range(n):
        order[i] = i
    normal = np.empty(X.shape[1], dtype=np.float64)
    # The smaller side is split first, so at most log2(n) ranges wait.
    stack = np.empty((72, 3), dtype=np.int64)
    stack[0, 0], stack[0, 1], stack[0, 2] = 0, n, 1
    top = 1
    leaves = 0
    while top > 0:
        top -= 1
        lo, hi, node = stack[top, 0], stack[top, 1], stack[top, 2]
        if hi - lo <= leaf_size:
            starts[leaves] = lo
            leaves += 1
            continue
        mid = _split(X, order, lo, hi, seed, tree, node, normal)
        near = (lo, mid, 2 * node)
        far = (mid, hi, 2 * node + 1)
        if mid - lo > hi - mid:
            near, far = far, near
        stack[top, 0], stack[top, 1], stack[top, 2] = far
        stack[top + 1, 0], stack[top + 1, 1], stack[top + 1, 2] = near
        top += 2
    starts[:leaves] = np.sort(starts[:leaves])
    starts[leaves] = n
    return leaves


@njit(**JIT_PARALLEL)
def grow_forest(X, seed, first, leaf_size, orders, starts, n_leaves):
    """Trees ``first``, ``first + 1``, ... each by :func:`grow_tree` into a row
    of ``orders``."""
    for t in prange(orders.shape[0]):
        n_leaves[t] = grow_tree(X, seed, first + t, leaf_size, orders[t], starts[t])


@njit(**JIT_PARALLEL)
def join_leaves(X, order, starts, n_leaves, dist, idx, flag):
    """Offer every point the others of its leaf (one tree); leaves are disjoint,
    so each heap is written by one thread."""
    k = dist.shape[1]
    for leaf in prange(n_leaves):
        lo, hi = starts[leaf], starts[leaf + 1]
        size = hi - lo
        gram = np.empty((size, size), dtype=dist.dtype)
        for u in range(size):
            gram[u, u] = 0.0
            for v in range(u + 1, size):
                gram[u, v] = gram[v, u] = squared_distance(X, order[lo + u], X, order[lo + v])
        cand_d = np.empty(size, dtype=dist.dtype)
        cand_j = np.empty(size, dtype=np.int32)
        work_d = np.empty(k + size, dtype=dist.dtype)
        work_j = np.empty(k + size, dtype=np.int32)
        work_f = np.empty(k + size, dtype=np.uint8)
        scratch = np.empty(k + size, dtype=dist.dtype)
        for u in range(size):
            count = 0
            for v in range(size):
                if v != u:
                    cand_d[count], cand_j[count] = gram[u, v], order[lo + v]
                    count += 1
            heap_merge(dist, idx, flag, order[lo + u], cand_d, cand_j, count, work_d, work_j,
                       work_f, scratch)


@njit(**JIT_PARALLEL)
def _sample_own(idx, flag, seed, round_, new_c, new_p, old_c, old_p):
    """Each row's candidates for this round from its own heap: up to the lists'
    size of new and of old ones, those of the smallest hash priorities. The
    new ones taken are old from now on."""
    n, k = idx.shape
    for i in prange(n):
        for c in range(k):
            j = idx[i, c]
            if j < 0:
                continue
            prio = priority(seed, round_ * n + i, j)
            if flag[i, c]:
                _priority_insert(new_c, new_p, i, j, prio)
            else:
                _priority_insert(old_c, old_p, i, j, prio)
        # the root holds the largest priority kept (the filler's while not full)
        for c in range(k):
            if flag[i, c] and priority(seed, round_ * n + i, idx[i, c]) <= new_p[i, 0]:
                flag[i, c] = 0


@njit(**JIT)
def _priority_insert(cand, prio, row, j, p):
    """Keep in row's bounded list the entries of the smallest priorities
    (a max-heap on priority); entries already there are skipped."""
    size = cand.shape[1]
    if p >= prio[row, 0]:
        return
    for c in range(size):
        if cand[row, c] == j:
            return
    prio[row, 0], cand[row, 0] = p, j
    _sift_down(prio, cand, cand, row, 0, size)  # one payload: given twice


@njit(**JIT)
def _reverse_lists(fwd, n):
    """CSR of the reverse edges: for each j, the rows i with j in fwd[i], in row order."""
    offsets = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        for c in range(fwd.shape[1]):
            if fwd[i, c] >= 0:
                offsets[fwd[i, c] + 1] += 1
    for j in range(n):
        offsets[j + 1] += offsets[j]
    sources = np.empty(offsets[n], dtype=np.int32)
    fill = offsets[:-1].copy()
    for i in range(n):
        for c in range(fwd.shape[1]):
            j = fwd[i, c]
            if j >= 0:
                sources[fill[j]] = i
                fill[j] += 1
    return offsets, sources


@njit(**JIT_PARALLEL)
def _insert_reverse(seed, round_, n, cand, prio, offsets, sources):
    """Add to each row's list the rows that have it as a candidate, by the same priorities."""
    for j in prange(n):
        for at in range(offsets[j], offsets[j + 1]):
            i = sources[at]
            _priority_insert(cand, prio, j, i, priority(seed, round_ * n + j, i))


@njit(**JIT)
def _add_reverse(seed, round_, n, new_c, new_p, old_c, old_p, new_fwd, old_fwd):
    """Add each row to the lists of its candidates (the reverse edges), by the
    same priorities, in row order."""
    offsets, sources = _reverse_lists(new_fwd, n)
    _insert_reverse(seed, round_, n, new_c, new_p, offsets, sources)
    offsets, sources = _reverse_lists(old_fwd, n)
    _insert_reverse(seed, round_, n, old_c, old_p, offsets, sources)


@njit(**JIT)
def _gather(X, dist, cand, p, rows, roots, ids):
    """Copy p's candidates' rows (and their heaps' roots) side by side; returns their number."""
    m = 0
    for s in range(cand.shape[1]):
        a = cand[p, s]
        if a >= 0:
            for f in range(X.shape[1]):
                rows[m, f] = X[a, f]
            roots[m] = dist[a, 0]
            ids[m] = a
            m += 1
    return m


@njit(**JIT)
def _record(a, b, d, root_a, root_b, at, target, source, sq):
    """Record from position ``at`` the pushes of the pair (a, b) at squared
    distance d that would enter a's or b's heap (roots ``root_a``, ``root_b``);
    returns the next free position."""
    if a == b:
        return at
    if d < root_a:
        target[at], source[at], sq[at] = a, b, d
        at += 1
    if d < root_b:
        target[at], source[at], sq[at] = b, a, d
        at += 1
    return at


@njit(**JIT_PARALLEL)
def _propose(X, dist, first, last, new_c, old_c, slots, target, source, sq, counts):
    """Around each point p in [first, last): compare new candidates with each
    other and with old ones; keep in p's slots the pushes that would enter a
    heap (as the heaps are now). The candidates' rows are copied side by side
    first, so that each is read from memory once per p."""
    size = new_c.shape[1]
    dim = X.shape[1]
    for p in prange(first, last):
        new_rows = np.empty((size, dim), dtype=X.dtype)
        old_rows = np.empty((size, dim), dtype=X.dtype)
        new_roots = np.empty(size, dtype=dist.dtype)
        old_roots = np.empty(size, dtype=dist.dtype)
        new_ids = np.empty(size, dtype=np.int32)
        old_ids = np.empty(size, dtype=np.int32)
        n_new = _gather(X, dist, new_c, p, new_rows, new_roots, new_ids)
        n_old = _gather(X, dist, old_c, p, old_rows, old_roots, old_ids)
        base = (p - first) * slots
        m = 0
        for s in range(n_new):
            for t in range(s + 1, n_new):
                m = _record(new_ids[s], new_ids[t], squared_distance(new_rows, s, new_rows, t),
                            new_roots[s], new_roots[t], base + m, target, source, sq) - base
            for t in range(n_old):
                m = _record(new_ids[s], old_ids[t], squared_distance(new_rows, s, old_rows, t),
                            new_roots[s], old_roots[t], base + m, target, source, sq) - base
        counts[p - first] = m


@njit(**JIT)
def _by_rows(first, last, slots, target, source, sq, counts, shift, offsets,
             sorted_target, sorted_source, sorted_sq):
    """The proposed pushes grouped by ranges of 2^shift target rows, each group
    in the order of proposal; ``offsets`` gets the groups' bounds."""
    offsets[:] = 0
    for p in range(last - first):
        base = p * slots
        for m in range(counts[p]):
            offsets[(target[base + m] >> shift) + 1] += 1
    for g in range(1, offsets.shape[0]):
        offsets[g] += offsets[g - 1]
    fill = offsets[:-1].copy()
    for p in range(last - first):
        base = p * slots
        for m in range(counts[p]):
            g = target[base + m] >> shift
            at = fill[g]
            sorted_target[at], sorted_source[at], sorted_sq[at] = (
                target[base + m], source[base + m], sq[base + m])
            fill[g] = at + 1


@njit(**JIT_PARALLEL)
def _apply(dist, idx, flag, offsets, sorted_target, sorted_source, sorted_sq):
    """Apply each group's pushes in order, a group per thread at a time (groups
    own disjoint rows); returns the number of heap entries replaced."""
    groups = offsets.shape[0] - 1
    changed = np.zeros(groups, dtype=np.int64)
    for g in prange(groups):
        c = 0
        for at in range(offsets[g], offsets[g + 1]):
            c += heap_push(dist, idx, flag, sorted_target[at], sorted_sq[at],
                           sorted_source[at], 1)
        changed[g] = c
    return changed.sum()


@njit(**JIT)
def descent_round(X, dist, idx, flag, seed, round_, max_candidates, block, shift,
                  target, source, sq, counts, sorted_target, sorted_source, sorted_sq):
    """One round of descent over all points; returns the number of heap entries replaced."""
    n = X.shape[0]
    big = np.uint32(0xFFFFFFFF)
    new_fwd = np.full((n, max_candidates), -1, dtype=np.int32)
    old_fwd = np.full((n, max_candidates), -1, dtype=np.int32)
    new_fp = np.full((n, max_candidates), big, dtype=np.uint32)
    old_fp = np.full((n, max_candidates), big, dtype=np.uint32)
    _sample_own(idx, flag, seed, round_, new_fwd, new_fp, old_fwd, old_fp)
    new_c = new_fwd.copy()
    old_c = old_fwd.copy()
    _add_reverse(seed, round_, n, new_c, new_fp, old_c, old_fp, new_fwd, old_fwd)
    slots = 2 * (max_candidates * (max_candidates - 1) // 2 + max_candidates * max_candidates)
    offsets = np.zeros(((n - 1) >> shift) + 2, dtype=np.int64)
    changed = 0
    for first in range(0, n, block):
        last = min(n, first + block)
        _propose(X, dist, first, last, new_c, old_c, slots, target, source, sq, counts)
        _by_rows(first, last, slots, target, source, sq, counts, shift, offsets,
                 sorted_target, sorted_source, sorted_sq)
        changed += _apply(dist, idx, flag, offsets, sorted_target, sorted_source, sorted_sq)
    return changed


@njit(**JIT_PARALLEL)
def sorted_rows(dist, idx):
    """Each row's entries sorted by distance, equal distances by index (in place)."""
    for i in prange(idx.shape[0]):
        # by index first: the stable sort by distance then keeps ties in that order
        by_index = np.argsort(idx[i], kind="mergesort")
        d = dist[i][by_index]
        j = idx[i][by_index]
        order = np.argsort(d, kind="mergesort")
        dist[i] = d[order]
        idx[i] = j[order]


@njit(**JIT_PARALLEL)
def fill_random(X, dist, idx, flag, seed):
    """Offer rows whose heap is not full (a small leaf) points chosen by the hash."""
    n = X.shape[0]
    for i in prange(n):
        attempt = 0
        while dist[i, 0] == _INF32:
            j = below(hash3(seed, i, attempt), n)
            attempt += 1
            if j != i:
                heap_push(dist, idx, flag, i, squared_distance(X, i, X, j), j, 1)


@njit(**JIT_PARALLEL)
def measured(X, idx, out):
    """out[i, c] = ||X[i] - X[idx[i, c]]|| in float64, feature by feature."""
    n, k = idx.shape
    for i in prange(n):
        for c in range(k):
            j = idx[i, c]
            s = 0.0
            for f in range(X.shape[1]):
                diff = np.float64(X[i, f]) - np.float64(X[j, f])
                s += diff * diff
            out[i, c] = np.sqrt(s)
