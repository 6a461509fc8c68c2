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

import hashlib

import numpy as np
import scipy.sparse as sp


#: Points of the groups appended since an index was last sorted that a lookup scans
#: one by one (at least; up to a sixteenth of the sorted points): sorting them in
#: takes one merge of two sorted runs.
TAIL_POINTS = 2048


class _Entry:
    """What :class:`MembershipIndex` keeps of one list: the points of the groups read,
    with the group of each, sorted by point, and those of the groups appended since
    the last sort (the tail) in the order read."""

    def __init__(self, source, side):
        self.source = source  # the list read, kept alive so no other list takes its id
        self.side = side
        self.n_read = 0  # how many of its items are read
        self.points = self.owners = np.empty(0, np.int64)  # sorted by point
        self.tail_points = self.tail_owners = np.empty(0, np.int64)
        self.matrix = None  # the points x groups CSR matrix, made on first request

    def group(self, k):
        item = self.source[k]
        return item if self.side is None else item[self.side]

    def read(self):
        """Take in the items appended to the list since the last call."""
        items = self.source
        if self.n_read == len(items):
            return
        new = [self.group(k) for k in range(self.n_read, len(items))]
        owners = np.repeat(np.arange(self.n_read, len(items)), [len(g) for g in new])
        self.tail_points = np.concatenate([self.tail_points, *new])
        self.tail_owners = np.concatenate([self.tail_owners, owners])
        self.n_read = len(items)
        self.matrix = None
        if len(self.tail_points) > max(TAIL_POINTS, len(self.points) // 16):
            points = np.concatenate([self.points, self.tail_points])
            order = np.argsort(points, kind="stable")  # merges the two sorted runs
            self.points = points[order]
            self.owners = np.concatenate([self.owners, self.tail_owners])[order]
            self.tail_points = self.tail_owners = np.empty(0, np.int64)

    def groups_with(self, point):
        """The groups that hold ``point``, as a set."""
        lo, hi = self.points.searchsorted((point, point + 1))
        groups = set(self.owners[lo:hi].tolist())
        if len(self.tail_points):
            groups.update(self.tail_owners[self.tail_points == point].tolist())
        return groups


class MembershipIndex:
    """Which points each constraint list's groups hold, extended as the lists grow.

    Looking through every group for each new constraint would make adding ``G``
    constraints (reading a file, merging one) cost ``G**2`` in slow steps. For
    each list this keeps the groups' points sorted by point with the group
    each belongs to, so that the groups holding a point are found by a binary
    search. It relies on a rule of the annotations: a constraint list
    only ever changes in place by appending; an undo, a clear or an undone
    merge puts a new list in its place. So while the list is the same object,
    the items read are still its first ones and only those appended since are
    added; another list is read anew.
    """

    def __init__(self, n_samples):
        self.n_samples = n_samples
        self._built = {}  # name -> _Entry
        self._copies = {}  # list name -> (list, items read, {key of an item: its position})

    def stores(self, name, items, item):
        """Whether the constraint list ``items`` (kept as ``name``) holds an item
        equal to ``item`` (an array, or a pair of arrays for a pair of selections).

        A quick first test: merging or importing annotations exported earlier
        offers mostly items stored exactly so, found here by a hash instead of a
        search through the groups.
        """
        known = self._copies.get(name)
        if known is None or known[0] is not items or known[1] > len(items):
            known = (items, 0, {})
        source, n_read, positions = known
        for k in range(n_read, len(items)):
            positions.setdefault(_key(items[k]), k)
        self._copies[name] = (source, len(items), positions)
        k = positions.get(_key(item))
        return k is not None and _equal(items[k], item)

    def _entry(self, name, items, side):
        entry = self._built.get(name)
        if entry is None or entry.source is not items or entry.n_read > len(items):
            entry = self._built[name] = _Entry(items, side)
        entry.read()
        return entry

    def holding(self, name, items, selection, side=None):
        """The positions in ``items`` (kept as ``name``) of the groups that hold every
        point of the sorted ``selection``, as a set.

        ``items`` is a constraint list; its groups are the items themselves, or
        with ``side`` 0 or 1 that side of each item (a pair of selections).
        """
        entry = self._entry(name, items, side)
        if len(selection) == 0:
            return set(range(entry.n_read))
        # Only groups holding both the first and the last point can hold them all.
        candidates = entry.groups_with(selection[0])
        if len(selection) > 1 and candidates:
            candidates &= entry.groups_with(selection[-1])
        held = set()
        for k in candidates:
            group = entry.group(k)
            if len(group) >= len(selection):
                at = np.minimum(np.searchsorted(group, selection), len(group) - 1)
                if np.array_equal(group[at], selection):
                    held.add(k)
        return held

    def matrix(self, name, items, side=None):
        """The points x groups incidence matrix of ``items`` (kept as ``name``, groups
        as in :meth:`holding`), CSR of int8, or None without groups."""
        entry = self._entry(name, items, side)
        if entry.matrix is None and len(items):
            points = np.concatenate([entry.points, entry.tail_points])
            owners = np.concatenate([entry.owners, entry.tail_owners])
            entry.matrix = sp.csr_matrix((np.ones(len(points), dtype=np.int8),
                                          (points, owners)),
                                         shape=(self.n_samples, len(items)))
        return entry.matrix


def _key(item):
    """A hash of an item's points: 16 bytes, whatever its size."""
    parts = item if isinstance(item, tuple) else (item,)
    digest = hashlib.blake2b(digest_size=16)
    for part in parts:
        part = np.asarray(part)
        digest.update(repr((part.dtype.str, part.shape)).encode())
        digest.update(np.ascontiguousarray(part).tobytes())
    return digest.digest()


def _equal(stored, item):
    if isinstance(stored, tuple) != isinstance(item, tuple):
        return False
    if isinstance(stored, tuple):
        return len(stored) == len(item) and all(np.array_equal(s, i)
                                                for s, i in zip(stored, item))
    return np.array_equal(stored, item)


def _incidence(groups, n_samples):
    """The points x groups matrix of ``groups`` (CSC, int32 ones)."""
    lengths = [len(g) for g in groups]
    points = np.concatenate(groups) if groups else np.empty(0, np.int64)
    owners = np.repeat(np.arange(len(groups)), lengths)
    return sp.csc_matrix((np.ones(len(points), np.int32), (points, owners)),
                         shape=(n_samples, len(groups)))


def _within_earlier(inner, outer, sizes):
    """Boolean (i, j) matrix, j < i: group i of ``inner`` lies within group j of
    ``outer`` (incidence matrices; ``sizes`` of the inner groups)."""
    shared = (inner.T @ outer).tocoo()
    hit = (shared.col < shared.row) & (shared.data == sizes[shared.row])
    return sp.csr_matrix((np.ones(np.count_nonzero(hit), bool),
                          (shared.row[hit], shared.col[hit])), shape=shared.shape)


def groups_within_earlier(groups, n_samples):
    """For each of ``groups`` in order, whether an earlier one holds all of its points."""
    sizes = np.array([len(g) for g in groups], dtype=np.int64)
    member = _incidence(groups, n_samples)
    return np.asarray(_within_earlier(member, member, sizes).sum(axis=1)).ravel() > 0


def selections_within_earlier(selections, n_samples):
    """For each pair of selections ``(a, b)`` in order, whether an earlier pair
    ``(A, B)`` has ``a`` within ``A`` and ``b`` within ``B``, or the other way round."""
    side_a = _incidence([a for a, _ in selections], n_samples)
    side_b = _incidence([b for _, b in selections], n_samples)
    size_a = np.array([len(a) for a, _ in selections], dtype=np.int64)
    size_b = np.array([len(b) for _, b in selections], dtype=np.int64)
    straight = _within_earlier(side_a, side_a, size_a).multiply(
        _within_earlier(side_b, side_b, size_b))
    crossed = _within_earlier(side_a, side_b, size_a).multiply(
        _within_earlier(side_b, side_a, size_b))
    return np.asarray((straight + crossed).sum(axis=1)).ravel() > 0


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
