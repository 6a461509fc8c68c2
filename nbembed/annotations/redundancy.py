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

    items: tuple  # the groups read, kept alive so that their ids stay theirs
    ids: tuple  # id() of each
    points: np.ndarray  # the points of all groups, end to end
    owners: np.ndarray  # the group of each of them
    matrix: object  # the points x groups CSR matrix, made on first request


class MembershipIndex:
    """Which points each constraint list's groups hold, extended as the lists grow.

    Looking through every group for each new constraint would make adding ``G``
    constraints (reading a file, merging one) cost ``G**2`` in slow steps. For
    each list this keeps the groups' points laid end to end with the group
    each belongs to, with the items they were read from; when the list is those
    items with more appended, only the new items are added, and when it is
    anything else (an undo, a redo or a merge put back an older list) it is
    read anew. Items are immutable arrays, so the same objects mean the same
    groups.
    """

    def __init__(self, n_samples):
        self._n = n_samples
        self._built = {}  # name -> _Entry

    def _entry(self, name, groups):
        ids = tuple(map(id, groups))  # the items kept alive in an entry keep their ids
        entry = self._built.get(name)
        if entry is None or ids[:len(entry.ids)] != entry.ids:
            entry = _Entry((), (), np.empty(0, np.int64), np.empty(0, np.int64), None)
        if len(entry.ids) < len(ids):
            new = groups[len(entry.ids):]
            owners = np.repeat(np.arange(len(entry.ids), len(ids)), [len(g) for g in new])
            entry = _Entry(tuple(groups), ids, np.concatenate([entry.points, *new]),
                           np.concatenate([entry.owners, owners]), None)
        self._built[name] = entry
        return entry

    def holding(self, name, groups, selection):
        """The positions in ``groups`` (kept as ``name``) of the groups that hold every
        point of the sorted ``selection``, as a set."""
        entry = self._entry(name, groups)
        # Only a group that holds the first point can hold them all.
        candidates = entry.owners[entry.points == selection[0]]
        return {int(c) for c in candidates if _holds(groups[c], selection)}

    def matrix(self, name, groups):
        """The points x groups incidence matrix of ``groups`` (kept as ``name``), CSR of
        int8, or None without groups."""
        entry = self._entry(name, groups)
        if entry.matrix is None and len(groups):
            matrix = sp.csr_matrix((np.ones(len(entry.points), dtype=np.int8),
                                    (entry.points, entry.owners)), shape=(self._n, len(groups)))
            entry = self._built[name] = entry._replace(matrix=matrix)
        return entry.matrix


def _holds(group, selection):
    """Whether the sorted ``group`` holds every point of the sorted ``selection``."""
    at = np.searchsorted(group, selection)
    return bool(at[-1] < len(group) and np.array_equal(group[at], selection))


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
