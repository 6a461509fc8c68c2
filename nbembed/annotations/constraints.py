"""Must-link and cannot-link constraints: adding them, reading them, and their conflicts.

The constraints are kept as they were given: must-link groups and pairs,
cannot-link pairs of groups and pairs. Their pairs are materialized only on
request (:meth:`~nbembed.Annotations.must_link_pairs`,
:meth:`~nbembed.Annotations.cannot_link_pairs`) or where they conflict.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from . import redundancy
from .pairs import cross_pairs, frozen, group_pairs, unique_pairs
from .validation import check_pairs, check_selection

# The attributes of Annotations that hold the constraints, each a list with one
# entry per call that added some.
CONSTRAINT_LISTS = ("_must_link_groups", "_must_link_pairs", "_cannot_link_groups",
                    "_cannot_link_pairs")


@dataclass(frozen=True, eq=False)
class Conflicts:
    """Contradictions between annotations, as found by :meth:`.Annotations.conflicts`.

    A ``Conflicts`` object is true when it holds at least one conflict.

    Attributes
    ----------
    cannot_link : ndarray of int64, shape (m, 2)
        Cannot-linked pairs ``i < j`` whose points lie in the same must-link
        component, sorted by rows.
    label_mismatch : list of ndarray of int64
        For each must-link component whose labelled points do not all have
        the same hard label (see :meth:`.Annotations.to_labels`), the sorted
        labelled points of that component.
    """

    cannot_link: np.ndarray
    label_mismatch: list

    def __bool__(self):
        return len(self.cannot_link) > 0 or len(self.label_mismatch) > 0

    def __repr__(self):
        return (f"Conflicts(cannot_link={len(self.cannot_link)} pair(s), "
                f"label_mismatch={len(self.label_mismatch)} component(s))")


class _Constraints:
    """The constraint methods of :class:`~nbembed.Annotations`.

    They work on the lists named in ``CONSTRAINT_LISTS``, which the
    annotations' constructor creates, and record each addition as one step of
    the undo history. What the annotations hold already is not added again
    (:mod:`~nbembed.annotations.redundancy`): repeating an action, or
    importing the same file twice, leaves them as they are and records no step.
    """

    @staticmethod
    def _describe_addition(list_name, item):
        """How the undo history names the addition of ``item`` to ``list_name``."""
        if list_name == "_must_link_groups":
            return f"add_must_link: group of {len(item)} points"
        if list_name == "_cannot_link_groups":
            return f"add_cannot_link: {len(item[0])} x {len(item[1])} points"
        return f"add{list_name}: {len(item)} pair(s)"

    def _new_part(self, list_name, item):
        """The part of ``item`` (for the list ``list_name``) that is not held yet, or None."""
        index = self._membership_index()
        if index.stores(list_name, getattr(self, list_name), item):
            return None
        groups = self._must_link_groups
        if list_name == "_must_link_groups":
            return None if index.holding("groups", groups, item) else item
        if list_name == "_must_link_pairs":
            new = redundancy.new_must_link_pairs(item, self._must_link_pairs,
                                                 index.matrix("groups", groups), self._n)
            return frozen(new) if len(new) else None
        selections = self._cannot_link_groups
        if list_name == "_cannot_link_groups":
            present = redundancy.cannot_link_is_present(
                *item, functools.partial(index.holding, "cannot-link a", selections, side=0),
                functools.partial(index.holding, "cannot-link b", selections, side=1))
            return None if present else item
        new = redundancy.new_cannot_link_pairs(item, self._cannot_link_pairs,
                                               index.matrix("cannot-link a", selections, 0),
                                               index.matrix("cannot-link b", selections, 1),
                                               self._n)
        return frozen(new) if len(new) else None

    def _membership_index(self):
        """The :class:`~nbembed.annotations.redundancy.MembershipIndex` of these
        annotations, made on first use and anew when points were added
        (:meth:`copy` gives the copy its own)."""
        index = self.__dict__.get("_membership")
        if index is None or index.n_samples != self._n:
            index = self._membership = redundancy.MembershipIndex(self._n)
        return index

    def add_must_link(self, indices):
        """Link every pair of points in a selection, stored as one group.

        A selection that lies within a group already added adds nothing.

        Parameters
        ----------
        indices : array-like of int, range, set or boolean mask
            The selected points, at least 2 distinct ones.

        Raises
        ------
        TypeError
            If the indices are not integers or a boolean mask.
        ValueError
            If the selection is out of range or has fewer than 2 distinct points.
        """
        self._append("_must_link_groups", self._checked_group(indices))

    def _checked_group(self, indices):
        """A must-link selection as stored (sorted, read-only), or a clear error."""
        group = check_selection(indices, self._n)
        if len(group) < 2:
            raise ValueError(f"a must-link group needs at least 2 distinct points; got "
                             f"{len(group)} ({int(group[0])}).")
        return frozen(group)

    def add_must_link_pairs(self, pairs):
        """Link the given pairs of points.

        Pairs already linked (added as pairs, or within one group) are left
        out; when all are, nothing is added.

        Parameters
        ----------
        pairs : array-like of int, shape (m, 2)
            Pairs ``(i, j)`` with ``i != j``; order and repetitions do not matter.

        Raises
        ------
        TypeError
            If ``pairs`` does not hold integers.
        ValueError
            If it is empty, not of shape (m, 2), out of range, or has a self-pair.
        """
        pairs = check_pairs(pairs, self._n)
        self._append("_must_link_pairs", frozen(pairs))

    def add_cannot_link(self, indices_a, indices_b):
        """Cannot-link every point of one selection with every point of another.

        The two selections are stored as a pair of groups; their pairs are not
        materialized. Selections that lie within the two sides of a pair of
        selections already added add nothing.

        Parameters
        ----------
        indices_a, indices_b : array-like of int, range, set or boolean mask
            The two selections; they must not share a point.

        Raises
        ------
        TypeError
            If the indices are not integers or boolean masks.
        ValueError
            If a selection is empty or out of range, or the two overlap.
        """
        self._append("_cannot_link_groups", self._checked_selections(indices_a, indices_b))

    def _checked_selections(self, indices_a, indices_b):
        """Two cannot-linked selections as stored, or a clear error."""
        a = check_selection(indices_a, self._n, "indices_a")
        b = check_selection(indices_b, self._n, "indices_b")
        shared = np.intersect1d(a, b)
        if len(shared):
            raise ValueError(f"indices_a and indices_b share {len(shared)} point(s) (e.g. "
                             f"{int(shared[0])}); a point cannot be cannot-linked with "
                             f"itself.")
        return frozen(a), frozen(b)

    def _read_groups(self, groups, selections):
        """Store must-link ``groups`` and pairs of cannot-linked ``selections`` (as
        checked by ``_checked_group`` and ``_checked_selections``) in their order,
        each unless one stored before it holds it, as adding them one by one
        would; without undo steps. Annotations being read from a file start
        empty, and this checks them all at once instead of one by one."""
        assert not self._must_link_groups and not self._cannot_link_groups
        keep = ~redundancy.groups_within_earlier(groups, self._n)
        self._must_link_groups.extend(g for g, k in zip(groups, keep) if k)
        keep = ~redundancy.selections_within_earlier(selections, self._n)
        self._cannot_link_groups.extend(s for s, k in zip(selections, keep) if k)

    def add_cannot_link_pairs(self, pairs):
        """Cannot-link the given pairs of points.

        Pairs already cannot-linked (added as pairs, or across one pair of
        selections) are left out; when all are, nothing is added.

        Parameters
        ----------
        pairs : array-like of int, shape (m, 2)
            Pairs ``(i, j)`` with ``i != j``; order and repetitions do not matter.

        Raises
        ------
        TypeError
            If ``pairs`` does not hold integers.
        ValueError
            If it is empty, not of shape (m, 2), out of range, or has a self-pair.
        """
        pairs = check_pairs(pairs, self._n)
        self._append("_cannot_link_pairs", frozen(pairs))

    def must_link_groups(self):
        """The must-link groups added with :meth:`add_must_link`.

        Pairs added with :meth:`add_must_link_pairs` are not included; see
        :meth:`must_link_components` for groups that take everything into account.

        Returns
        -------
        list of ndarray of int64
            Sorted distinct points of each group, in the order they were added.
        """
        return [g.copy() for g in self._must_link_groups]

    def cannot_link_groups(self, include_pairs=False):
        """The pairs of selections added with :meth:`add_cannot_link`.

        Parameters
        ----------
        include_pairs : bool, default False
            Also return each pair ``(i, j)`` added with
            :meth:`add_cannot_link_pairs`, as the selections ``[i]`` and ``[j]``.

        Returns
        -------
        list of (ndarray of int64, ndarray of int64)
            The two selections of each cannot-link, sorted, in the order they
            were added; no pair of points is materialized.
        """
        groups = [(a.copy(), b.copy()) for a, b in self._cannot_link_groups]
        if include_pairs:
            groups += [(p[:1].copy(), p[1:].copy()) for block in self._cannot_link_pairs
                       for p in block]
        return groups

    def must_link_pairs(self, groups=True):
        """Every must-linked pair, from groups and explicit pairs.

        With the groups, this materializes g(g-1)/2 pairs for a group of g
        points, which is large for big groups (12.5 million pairs, 200 MB,
        for g = 5000); the embedding methods take the groups from
        :meth:`must_link_groups` and never build their pairs.

        Parameters
        ----------
        groups : bool, default True
            Include the pairs within the groups added with :meth:`add_must_link`;
            False gives only the pairs added with :meth:`add_must_link_pairs`.

        Returns
        -------
        ndarray of int64, shape (m, 2)
            Distinct pairs ``i < j``, sorted by rows.
        """
        from_groups = [group_pairs(g) for g in self._must_link_groups] if groups else []
        return unique_pairs(from_groups + self._must_link_pairs)

    def cannot_link_pairs(self, groups=True):
        """Every cannot-linked pair, from pairs of groups and explicit pairs.

        With the groups, this materializes ``len(a) * len(b)`` pairs for each
        pair of selections; the spectral methods take the selections from
        :meth:`cannot_link_groups` and never build all their pairs.

        Parameters
        ----------
        groups : bool, default True
            Include the pairs between the selections added with
            :meth:`add_cannot_link`; False gives only the pairs added with
            :meth:`add_cannot_link_pairs`.

        Returns
        -------
        ndarray of int64, shape (m, 2)
            Distinct pairs ``i < j``, sorted by rows.
        """
        from_groups = [cross_pairs(a, b) for a, b in self._cannot_link_groups] if groups else []
        return unique_pairs(from_groups + self._cannot_link_pairs)

    def _component_labels(self):
        """Must-link component id of each point, or None without must-links."""
        edges = [np.column_stack([np.full(len(g) - 1, g[0]), g[1:]])
                 for g in self._must_link_groups] + self._must_link_pairs
        if not edges:
            return None
        edges = np.concatenate(edges)
        graph = sp.coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])),
                              shape=(self._n, self._n))
        return connected_components(graph, directed=False)[1]

    def must_link_components(self):
        """Connected components of the must-link graph (its transitive closure).

        Returns
        -------
        list of ndarray of int64
            The components with at least 2 points, each sorted, ordered by
            their smallest point.
        """
        comp = self._component_labels()
        if comp is None:
            return []
        members = np.flatnonzero(np.bincount(comp)[comp] >= 2)
        members = members[np.argsort(comp[members], kind="stable")]
        parts = np.split(members, np.flatnonzero(np.diff(comp[members])) + 1)
        return sorted((p.astype(np.int64) for p in parts), key=lambda p: p[0])

    def conflicts(self):
        """Find contradictions between constraints and labels; nothing is raised.

        Two kinds are reported: cannot-linked pairs whose points are in the
        same must-link component, and must-link components whose labelled
        points have different hard labels (:meth:`to_labels`). Pairs are only
        materialized where they conflict.

        Returns
        -------
        Conflicts
            True when any conflict was found.
        """
        comp = self._component_labels()
        if comp is None:
            return Conflicts(np.empty((0, 2), dtype=np.int64), [])
        blocks = []
        for a, b in self._cannot_link_groups:
            ca, cb = comp[a], comp[b]
            for c in np.intersect1d(ca, cb):
                blocks.append(cross_pairs(a[ca == c], b[cb == c]))
        for p in self._cannot_link_pairs:
            blocks.append(p[comp[p[:, 0]] == comp[p[:, 1]]])
        y = self.to_labels()
        mismatch = []
        for part in self.must_link_components():
            labelled = part[y[part] >= 0]
            if len(labelled) and y[labelled].min() != y[labelled].max():
                mismatch.append(labelled)
        return Conflicts(unique_pairs(blocks), mismatch)
