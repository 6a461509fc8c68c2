"""Constraint marks: what the browser needs to show each point's annotations.

The Explorer outlines labelled points, links the members of each must-link
group to the group's centre and draws a dashed line between the two
selections of each cannot-link. It sends the browser one uint32 buffer per
change of the annotations, of size O(n + annotated points), never a list of
pairs: a must-link group of g points costs g numbers, not g(g-1)/2, and a
cannot-link between selections A and B costs len(A) + len(B) numbers, not len(A) len(B).

Layout of the buffer (uint32, little-endian), for n points and C cannot-links:

==========================  ================================================
``[0, n)``                  label + 1 of each point (0: unlabelled)
``[n, 2n)``                 must-link group of each point, 1-based (0: none)
``[2n]``                    C
``[2n + 1, 2n + 2C + 2)``   offsets: selection A of cannot-link c is
                            ``members[off[2c]:off[2c+1]]``, selection B is
                            ``members[off[2c+1]:off[2c+2]]``
then                        members (point indices)
==========================  ================================================

Must-link groups are the connected components of the must-link graph
(:meth:`~nbembed.Annotations.must_link_components`), so every point is in
at most one, numbered by their smallest point.

Threads: functions of their arguments, without state of their own; the
Explorer calls them under ``_ann_lock`` and sets the result under ``_sync_lock``.
"""

from __future__ import annotations

import numpy as np

from .traits import UINT32, decode, encode


def constraint_marks(annotations, labels):
    """The marks buffer of ``annotations`` (layout in the module docstring).

    Parameters
    ----------
    annotations : Annotations
    labels : ndarray of int (n_samples,)
        The class of each point, -1 for none (what the Explorer colours by
        "label": the annotations' labels, completed by ``labels=``).

    Returns
    -------
    bytes
    """
    n = annotations.n_samples
    groups = np.zeros(n, dtype=np.int64)
    for k, part in enumerate(annotations.must_link_components(), start=1):
        groups[part] = k
    sides = [side for pair in annotations.cannot_link_groups(include_pairs=True)
             for side in pair]
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in sides], dtype=np.int64)])
    members = np.concatenate(sides) if sides else np.empty(0, dtype=np.int64)
    return encode(np.concatenate([np.where(labels >= 0, labels + 1, 0), groups,
                                  [len(sides) // 2], offsets, members]), UINT32)


def decode_marks(data, n):
    """Labels, groups and cannot-link selections from a marks buffer.

    The inverse of :func:`constraint_marks`, for tests and debugging.

    Returns
    -------
    labels : ndarray of int64 (n,)
        -1 for unlabelled points.
    groups : ndarray of int64 (n,)
        1-based must-link group, 0 for none.
    cannot : list of (ndarray, ndarray)
    """
    u = decode(data, UINT32).astype(np.int64)
    count = int(u[2 * n])
    offsets = u[2 * n + 1:2 * n + 2 * count + 2]
    members = u[2 * n + 2 * count + 2:]
    cannot = [(members[offsets[2 * c]:offsets[2 * c + 1]],
               members[offsets[2 * c + 1]:offsets[2 * c + 2]]) for c in range(count)]
    return u[:n] - 1, u[n:2 * n], cannot
