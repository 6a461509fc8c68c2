"""A user's annotations on a data set: labels and pairwise constraints.

An :class:`Annotations` object holds what a user has said about ``n_samples``
points, typically by lasso-selecting them in a notebook widget:

* **Labels.** Each labelled point carries a probability vector over the
  ``n_classes`` classes (a hard label is a one-hot vector) and a confidence in
  (0, 1]. Unlabelled points have a row of zeros and confidence 0. Classes have
  names; a new class is created with :meth:`Annotations.add_class`, or
  implicitly by assigning a label beyond the current classes when the number
  of classes was not fixed at construction.
* **Must-link constraints** say that points belong together. A lasso selection
  is stored as one *group* (all its pairs are linked) without materializing
  its pairs, since a group of g points links g(g-1)/2 pairs. Explicit pairs are
  stored as they are given. The transitive closure of all must-links is
  available as connected components.
* **Cannot-link constraints** say that points belong apart. Two selections are
  stored as a pair of groups (every point of one is linked to every point of
  the other); explicit pairs are stored as they are given.

Annotations are never half-applied: every mutating method checks all of its
input first and, if anything is wrong, raises ``TypeError`` or ``ValueError``
and leaves the object unchanged. Each successful mutating call is one step in
an undo history, reverted exactly by :meth:`Annotations.undo`.

Indices select points by position in ``[0, n_samples)``. Integer arrays,
lists, ranges, sets, single integers and boolean masks of length ``n_samples``
are accepted; negative indices are rejected rather than wrapped around, and
duplicates within a selection are ignored.

:meth:`Annotations.to_json` and :meth:`Annotations.from_json` round-trip the
annotations exactly (floats are written with their shortest exact repr). The
undo history is not serialized.

The class is defined in :mod:`~nbembed.annotations.core`, with its constraint
methods and :class:`Conflicts` in :mod:`~nbembed.annotations.constraints` and
its undo history in :mod:`~nbembed.annotations.history`. The checks of what it
is given are in :mod:`~nbembed.annotations.validation`, the JSON format in
:mod:`~nbembed.annotations.json_format`.
"""

from .constraints import Conflicts
from .core import Annotations

__all__ = ["Annotations", "Conflicts"]
