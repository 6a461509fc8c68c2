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

import numpy as np
import scipy.sparse as sp


def membership(groups, n_samples):
    """The points x groups incidence matrix of ``groups``, as CSR of int8 (or None)."""
    if not groups:
        return None
    points = np.concatenate(groups)
    owner = np.repeat(np.arange(len(groups)), [len(g) for g in groups])
    return sp.csr_matrix((np.ones(len(points), dtype=np.int8), (points, owner)),
                         shape=(n_samples, len(groups)))


def _shared_group(member, i, j):
    """For each pair ``(i[k], j[k])``, whether one group holds both (``member`` may be None)."""
    if member is None:
        return np.zeros(len(i), dtype=bool)
    both = member[i].multiply(member[j])
    return np.asarray(both.sum(axis=1)).ravel() > 0


def _holds(container, selection):
    """Whether the sorted set ``container`` holds every point of ``selection``."""
    return len(container) >= len(selection) and \
        bool(np.isin(selection, container, assume_unique=True).all())


def group_is_present(group, groups, n_samples):
    """Whether one of ``groups`` holds every point of ``group``."""
    member = membership(groups, n_samples)
    if member is None:
        return False
    counts = np.asarray(member[group].sum(axis=0)).ravel()
    return bool(np.any(counts == len(group)))


def _pair_keys(pairs, n_samples):
    return pairs[:, 0] * n_samples + pairs[:, 1]


def new_must_link_pairs(pairs, pair_blocks, groups, n_samples):
    """The rows of ``pairs`` that are neither among ``pair_blocks`` nor within one of ``groups``."""
    keep = np.ones(len(pairs), dtype=bool)
    if pair_blocks:
        keep &= ~np.isin(_pair_keys(pairs, n_samples),
                         _pair_keys(np.concatenate(pair_blocks), n_samples))
    keep[keep] &= ~_shared_group(membership(groups, n_samples), pairs[keep, 0],
                                 pairs[keep, 1])
    return pairs[keep]


def cannot_link_is_present(a, b, group_pairs):
    """Whether one of ``group_pairs`` separates all of ``a`` from all of ``b``."""
    return any((_holds(A, a) and _holds(B, b)) or (_holds(B, a) and _holds(A, b))
               for A, B in group_pairs)


def new_cannot_link_pairs(pairs, pair_blocks, group_pairs, n_samples):
    """The rows of ``pairs`` that are neither among ``pair_blocks`` nor across one of
    ``group_pairs``."""
    keep = np.ones(len(pairs), dtype=bool)
    if pair_blocks:
        keep &= ~np.isin(_pair_keys(pairs, n_samples),
                         _pair_keys(np.concatenate(pair_blocks), n_samples))
    if group_pairs and keep.any():
        side_a = membership([A for A, _ in group_pairs], n_samples)
        side_b = membership([B for _, B in group_pairs], n_samples)
        i, j = pairs[keep, 0], pairs[keep, 1]
        across = (np.asarray(side_a[i].multiply(side_b[j]).sum(axis=1)).ravel()
                  + np.asarray(side_a[j].multiply(side_b[i]).sum(axis=1)).ravel()) > 0
        keep[keep] &= ~across
    return pairs[keep]
