"""Which new constraints the annotations already hold.

Adding a constraint that is already there changes nothing the methods see (a
link given twice counts once), but stored twice it would make the annotations
grow with every repeated action: importing the same file again, lassoing the
same points again. These functions find what is new:

* a must-link group is present when one group holds all of its points;
* a must-link pair is present when it was added as a pair, or one group holds
  both of its points;
* a cannot-link pair of selections ``(a, b)`` is present when one pair of
  selections ``(A, B)`` has ``a`` within ``A`` and ``b`` within ``B`` (or the
  other way round);
* a cannot-link pair is present when it was added as a pair, or one pair of
  selections holds one point on each side.

Groups and selections are sorted arrays of distinct points; pairs are rows
``i < j``, each once (as :mod:`~nbembed.annotations.pairs` writes them).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp


class _Entry(NamedTuple):
    """What :class:`MembershipIndex` keeps of one list."""

    source: list  # the list read, kept alive so that no other list can take its id
    n_read: int  # how many of its items are read
    points: np.ndarray  # the points of those groups, end to end
    owners: np.ndarray  # the group of each of them
    matrix: object  # the points x groups CSR matrix, made on first request


class MembershipIndex:
    """Which points each constraint list's groups hold, extended as the lists grow.

    Looking through every group for each new constraint would make adding ``G``
    constraints (reading a file, merging one) cost ``G**2`` in slow steps. For
    each list this keeps the groups' points laid end to end with the group
    each belongs to. It relies on a rule of the annotations: a constraint list
    only ever changes in place by appending; an undo, a clear or an undone
    merge puts a new list in its place. So while the list is the same object,
    the items read are still its first ones and only those appended since are
    added; another list is read anew.
    """

    def __init__(self, n_samples):
        self.n_samples = n_samples
        self._built = {}  # name -> _Entry

    def _entry(self, name, items, side):
        entry = self._built.get(name)
        if entry is None or entry.source is not items or entry.n_read > len(items):
            entry = _Entry(items, 0, np.empty(0, np.int64), np.empty(0, np.int64), None)
        if entry.n_read < len(items):
            new = [item if side is None else item[side] for item in items[entry.n_read:]]
            owners = np.repeat(np.arange(entry.n_read, len(items)), [len(g) for g in new])
            entry = _Entry(items, len(items), np.concatenate([entry.points, *new]),
                           np.concatenate([entry.owners, owners]), None)
        self._built[name] = entry
        return entry

    def holding(self, name, items, selection, side=None):
        """The positions in ``items`` (kept as ``name``) of the groups that hold every
        point of the sorted ``selection``, as a set.

        ``items`` is a constraint list; its groups are the items themselves, or
        with ``side`` 0 or 1 that side of each item (a pair of selections).
        """
        entry = self._entry(name, items, side)
        wanted = np.zeros(self.n_samples, dtype=bool)
        wanted[selection] = True
        # A group holds the selection when it holds as many of its points (groups
        # and selections have distinct points).
        held = np.bincount(entry.owners[wanted[entry.points]], minlength=entry.n_read)
        return set(np.flatnonzero(held == len(selection)).tolist())

    def matrix(self, name, items, side=None):
        """The points x groups incidence matrix of ``items`` (kept as ``name``, groups
        as in :meth:`holding`), CSR of int8, or None without groups."""
        entry = self._entry(name, items, side)
        if entry.matrix is None and len(items):
            matrix = sp.csr_matrix((np.ones(len(entry.points), dtype=np.int8),
                                    (entry.points, entry.owners)),
                                   shape=(self.n_samples, len(items)))
            entry = self._built[name] = entry._replace(matrix=matrix)
        return entry.matrix


def _shared_group(member, i, j):
    """For each pair ``(i[k], j[k])``, whether one group holds both (``member`` may be None)."""
    if member is None:
        return np.zeros(len(i), dtype=bool)
    both = member[i].multiply(member[j])
    return np.asarray(both.sum(axis=1)).ravel() > 0


def _pair_keys(pairs, n_samples):
    return pairs[:, 0] * n_samples + pairs[:, 1]


def _not_in_blocks(pairs, pair_blocks, n_samples):
    """Which rows of ``pairs`` are in none of ``pair_blocks``."""
    if not pair_blocks:
        return np.ones(len(pairs), dtype=bool)
    return ~np.isin(_pair_keys(pairs, n_samples),
                    _pair_keys(np.concatenate(pair_blocks), n_samples))


def new_must_link_pairs(pairs, pair_blocks, member, n_samples):
    """The rows of ``pairs`` that are neither among ``pair_blocks`` nor within one group
    of the membership matrix ``member``."""
    keep = _not_in_blocks(pairs, pair_blocks, n_samples)
    keep[keep] &= ~_shared_group(member, pairs[keep, 0], pairs[keep, 1])
    return pairs[keep]


def cannot_link_is_present(a, b, holding_a, holding_b):
    """Whether one pair of selections separates all of ``a`` from all of ``b``.

    ``holding_a(s)`` and ``holding_b(s)`` give the pairs of selections held whose
    first (second) selection holds all of ``s``, as sets of positions.
    """
    return bool(holding_a(a) & holding_b(b) or holding_b(a) & holding_a(b))


def new_cannot_link_pairs(pairs, pair_blocks, side_a, side_b, n_samples):
    """The rows of ``pairs`` that are neither among ``pair_blocks`` nor across one pair
    of selections (membership matrices ``side_a`` and ``side_b``, or None)."""
    keep = _not_in_blocks(pairs, pair_blocks, n_samples)
    if side_a is not None and keep.any():
        i, j = pairs[keep, 0], pairs[keep, 1]
        across = (np.asarray(side_a[i].multiply(side_b[j]).sum(axis=1)).ravel()
                  + np.asarray(side_a[j].multiply(side_b[i]).sum(axis=1)).ravel()) > 0
        keep[keep] &= ~across
    return pairs[keep]
