"""Sets of points and pairs of points as int64 arrays.

A set of points is a sorted 1-D array of distinct indices; a set of pairs is
an (m, 2) array of rows ``i < j``, each pair once, sorted by rows.
"""

from __future__ import annotations

import numpy as np


def frozen(array):
    """A read-only, C-contiguous int64 version of ``array``, as the annotations store it."""
    array = np.ascontiguousarray(array, dtype=np.int64)
    array.setflags(write=False)
    return array


def sorted_unique(values):
    """Sorted distinct values of a 1-D array."""
    values = np.sort(values)
    return values[np.concatenate([[True], values[1:] != values[:-1]])] if len(values) else values


def unique_pairs(blocks):
    """Stack (m, 2) pair arrays and keep each pair once, sorted by rows."""
    blocks = [b for b in blocks if len(b)]
    if not blocks:
        return np.empty((0, 2), dtype=np.int64)
    pairs = np.concatenate(blocks).astype(np.int64, copy=False)
    base = int(pairs.max()) + 1
    keys = sorted_unique(pairs[:, 0] * base + pairs[:, 1])
    return np.column_stack([keys // base, keys % base])


def cross_pairs(a, b):
    """All pairs between the point sets ``a`` and ``b``, each written ``i < j``."""
    i = np.repeat(a, len(b))
    j = np.tile(b, len(a))
    return np.column_stack([np.minimum(i, j), np.maximum(i, j)])


def group_pairs(group):
    """All pairs ``i < j`` within a sorted group of distinct points."""
    r, c = np.triu_indices(len(group), k=1)
    return np.column_stack([group[r], group[c]])
