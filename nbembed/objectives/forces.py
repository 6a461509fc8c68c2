"""The gradient of an objective split into its terms, per point (``run.forces()``).

Every gradient-based objective offers ``forces(x, indices=None, ...)``: the
gradient at ``x`` as a sum of named terms (attraction and repulsion, the
must-link pull, Mbed's boundary terms, ...), one row per point. The sign
convention is the gradient's: a term is the part of dC/dy_i due to one part
of the cost, and the optimizers move a point *against* the sum. The terms add
up to the gradient the objective's kernels compute, to rounding.

The terms are computed with NumPy, row block by row block, so that a few
points (``indices``) cost O(len(indices) n) pair evaluations; global
normalizers (Z, the per-point Z_i) still take one pass over all pairs, done by
the method's kernels.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp

#: Rows of the pair matrices a block holds at once (memory: ROW_BLOCK x n floats each).
ROW_BLOCK = 256


class Forces(Mapping):
    """The gradient at the current embedding, split into its terms.

    A mapping from term name to an array of shape (len(indices), d) (all
    points when ``indices`` is None), in the order the objective lists them.
    The sign is the gradient's: the optimizer moves a point against the sum
    of its terms, so ``-forces[name]`` is the direction the term pushes it.

    Attributes
    ----------
    labels : dict
        Term name -> short label for a legend.
    indices : ndarray of int64 or None
        The points of the rows; None for all points in order.
    exaggeration : float
        The factor the attraction carries (early exaggeration), 1 outside it.
    phase : str or None
        The phase of the run's schedule the gradient belongs to, where the run
        has one ("early exaggeration", "sne", "anneal", ...).
    anchors : Forces or None
        The same split for the anchors (Parametric Embedding's classes), one
        row per anchor.
    pinned : ndarray of int64
        Pinned points among the rows' points; their rows are zero (the
        gradient a run follows has none for them).
    """

    def __init__(self, terms, labels, *, indices=None, exaggeration=1.0, phase=None,
                 anchors=None):
        self._terms = dict(terms)
        self.labels = {name: labels[name] for name in self._terms}
        self.indices = indices
        self.exaggeration = float(exaggeration)
        self.phase = phase
        self.anchors = anchors
        self.pinned = np.empty(0, dtype=np.int64)

    def __getitem__(self, name):
        return self._terms[name]

    def __iter__(self):
        return iter(self._terms)

    def __len__(self):
        return len(self._terms)

    @property
    def gradient(self):
        """The sum of the terms: the gradient (rows as the terms')."""
        return sum(self._terms.values())

    def mask(self, pinned):
        """Zero the rows of the pinned points ``pinned`` (sorted indices), in place."""
        if self.indices is None:
            rows = hit = np.asarray(pinned, dtype=np.int64)
        else:
            keep = np.isin(self.indices, pinned)
            rows = np.flatnonzero(keep)
            hit = self.indices[keep]
        for term in self._terms.values():
            term[rows] = 0.0
        self.pinned = np.unique(hit).astype(np.int64)
        return self

    def __repr__(self):
        shape = next(iter(self._terms.values())).shape if self._terms else ()
        return (f"Forces({', '.join(self._terms)}; shape {shape}, "
                f"exaggeration {self.exaggeration:g})")


def point_rows(indices, n):
    """The rows ``indices`` stands for: all ``n`` points when it is None."""
    return np.arange(n) if indices is None else np.asarray(indices, dtype=np.int64)


def row_blocks(rows):
    """``rows`` cut into consecutive blocks of at most ``ROW_BLOCK``."""
    return [rows[start:start + ROW_BLOCK] for start in range(0, rows.size, ROW_BLOCK)]


def block_sq_distances(Y, rows):
    """tau[a, j] = ‖y_rows[a] - y_j‖², shape (len(rows), n); Y is (n, d)."""
    diff = Y[rows, None, :] - Y[None, :, :]
    return np.einsum("abk,abk->ab", diff, diff)


def pair_sum(Y, rows, W):
    """sum_j W[a, j] (y_rows[a] - y_j) for every a; W is (len(rows), n) dense or sparse."""
    if sp.issparse(W):
        return np.asarray(W.sum(axis=1)).ravel()[:, None] * Y[rows] - W @ Y
    return W.sum(axis=1)[:, None] * Y[rows] - W @ Y


def sparse_rows_weighted(P, rows, Y, weight):
    """The CSR rows ``rows`` of ``P`` with every entry multiplied by
    ``weight(tau)`` at its pair's squared distance."""
    block = sp.csr_matrix(P[rows])
    starts = np.repeat(np.arange(rows.size), np.diff(block.indptr))
    diff = Y[rows[starts]] - Y[block.indices]
    tau = np.einsum("ek,ek->e", diff, diff)
    block.data = block.data * weight(tau)
    return block


def attraction_rows(P, Y, rows, weight):
    """sum_j P_ij weight(tau_ij) (y_i - y_j) for i in ``rows``, P dense or sparse."""
    if sp.issparse(P):
        return pair_sum(Y, rows, sparse_rows_weighted(P, rows, Y, weight))
    return all_pairs_rows(Y, rows, lambda tau, block: weight(tau), P)


def all_pairs_rows(Y, rows, weight, P=None):
    """sum_j weight(tau, block)[a, j] (y_i - y_j) over all j for i = block[a] in
    ``rows`` (times P_ij when a dense ``P`` is given), row block by row block;
    ``tau`` holds the block's squared distances to all points."""
    out = np.empty((rows.size, Y.shape[1]))
    for start, block in zip(range(0, rows.size, ROW_BLOCK), row_blocks(rows)):
        W = weight(block_sq_distances(Y, block), block)
        if P is not None:
            W *= np.asarray(P[block])
        out[start:start + block.size] = pair_sum(Y, block, W)
    return out
