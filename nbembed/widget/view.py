"""The 2-D view of an embedding: which plane of a d-dimensional embedding is shown.

``"first-two"``
    The first two coordinates (the embedding itself when d = 2).
``"pca"``
    The plane of the two leading principal components of the current
    embedding.
``"class-plane"``
    The plane through the class means: the two leading principal directions
    of the means of the labelled classes (with two classes, the line between
    their means and the leading principal direction orthogonal to it). Needs
    at least two labelled classes; with fewer it shows ``"pca"``.

The PCA and class planes are recomputed for every frame. Eigenvectors have no
sign and swap order when eigenvalues cross, which would make the picture flip
between frames; :class:`PlaneView` matches each new basis to the previous one
(order, then sign), so the view only turns as far as the embedding does.

Threads: functions of their arguments, except :class:`PlaneView`, which keeps the
previous basis; the Explorer's view belongs to its ``_sync_lock`` and is called
only under it.
"""

from __future__ import annotations

import numpy as np

VIEWS = ("first-two", "pca", "class-plane")

#: Half-width of the normalized square the points are scaled into (the
#: browser shows [-1, 1], so a small margin stays free).
EXTENT = 0.95


def _leading_directions(M, k=2):
    """The ``k`` leading eigenvectors (columns) of the scatter of the rows of M."""
    C = M - M.mean(axis=0)
    values, vectors = np.linalg.eigh(C.T @ C)
    return vectors[:, np.argsort(values)[::-1][:k]]


def _canonical_signs(W):
    """Make the largest entry of each column positive (a deterministic choice)."""
    rows = np.argmax(np.abs(W), axis=0)
    return W * np.where(W[rows, np.arange(W.shape[1])] < 0, -1.0, 1.0)


def _match(W, previous):
    """Reorder and flip the columns of W to follow ``previous`` as closely as possible."""
    if previous is None or previous.shape != W.shape:
        return _canonical_signs(W)
    overlap = W.T @ previous
    if abs(overlap[1, 0]) + abs(overlap[0, 1]) > abs(overlap[0, 0]) + abs(overlap[1, 1]):
        W = W[:, ::-1]
        overlap = W.T @ previous
    return W * np.where(np.diag(overlap) < 0, -1.0, 1.0)


def _complete(u, Y):
    """A unit direction orthogonal to ``u``: the leading one of Y without its u part."""
    R = Y - np.outer(Y @ u, u)
    v = _leading_directions(R, 1)[:, 0]
    v -= (v @ u) * u
    norm = np.linalg.norm(v)
    if norm < 1e-12:
        v = np.eye(len(u))[np.argmin(np.abs(u))]
        v -= (v @ u) * u
        norm = np.linalg.norm(v)
    return v / norm


class PlaneView:
    """Projects embeddings to 2-D, frame after frame, without flips.

    Parameters
    ----------
    kind : {"first-two", "pca", "class-plane"}

    Attributes
    ----------
    note : str
        Why the view differs from the requested one (empty when it does not).
    """

    def __init__(self, kind="first-two"):
        if kind not in VIEWS:
            raise ValueError(f"view must be one of {', '.join(map(repr, VIEWS))}; got {kind!r}.")
        self.kind = kind
        self.note = ""
        self._basis = None
        #: (origin (d,), basis (d, 2)) of the last projection: a point y is shown
        #: at (y - origin) @ basis.
        self.plane = None

    def basis(self, Y, labels=None):
        """The (d, 2) orthonormal basis of the plane for embedding ``Y``, or None
        for ``"first-two"`` (and for d <= 2 with ``"first-two"``)."""
        d = Y.shape[1]
        self.note = ""
        if self.kind == "first-two" or d < 2:
            return None
        if self.kind == "class-plane":
            W = self._class_basis(Y, labels)
            if W is None:
                self.note = "class-plane needs at least two labelled classes; showing pca."
                W = _leading_directions(Y)
        else:
            W = _leading_directions(Y)
        self._basis = _match(W, self._basis)
        return self._basis

    @staticmethod
    def _class_basis(Y, labels):
        if labels is None:
            return None
        classes = np.unique(labels[labels >= 0])
        if len(classes) < 2:
            return None
        means = np.stack([Y[labels == c].mean(axis=0) for c in classes])
        if len(classes) == 2:
            u = means[1] - means[0]
            norm = np.linalg.norm(u)
            if norm < 1e-12:
                return None
            u /= norm
            return np.column_stack([u, _complete(u, Y)])
        W = _leading_directions(means)
        u = W[:, 0]
        return np.column_stack([u, _complete(u, means)])

    def __call__(self, Y, labels=None, anchors=None):
        """Project ``Y`` (and ``anchors`` alike) to 2-D.

        Returns
        -------
        points : ndarray (n, 2)
        anchors : ndarray (m, 2) or None
        """
        Y = np.asarray(Y, dtype=np.float64)
        A = None if anchors is None else np.asarray(anchors, dtype=np.float64)
        if Y.shape[1] == 1:
            self.plane = (np.zeros(1), np.array([[1.0, 0.0]]))
            flat = np.zeros((len(Y), 1))
            anchors_2d = None if A is None else np.hstack([A, np.zeros((len(A), 1))])
            return np.hstack([Y, flat]), anchors_2d
        W = self.basis(Y, labels)
        if W is None:
            self.plane = (np.zeros(Y.shape[1]), np.eye(Y.shape[1])[:, :2])
            return Y[:, :2], None if A is None else A[:, :2]
        center = Y.mean(axis=0)
        self.plane = (center, W)
        return (Y - center) @ W, None if A is None else (A - center) @ W

    def directions(self, V):
        """Project direction vectors ``V`` (m, d) into the plane of the last
        projection: its linear part only, so lengths keep their ratios."""
        V = np.asarray(V, dtype=np.float64)
        if V.shape[1] == 1:
            return np.hstack([V, np.zeros((len(V), 1))])
        if self.kind == "first-two" or self._basis is None:
            return V[:, :2]
        return V @ self._basis


def _column_bounds(P):
    """Lowest and highest value of each column of ``P`` (n, 2), column by column:
    ``min(axis=0)`` of such an array is about twenty times slower."""
    return (np.array([P[:, k].min() for k in range(P.shape[1])]),
            np.array([P[:, k].max() for k in range(P.shape[1])]))


def normalization(points, anchors=None):
    """The box centre and scale :func:`normalize` uses: shown = (p - centre) * scale."""
    low, high = _column_bounds(points)
    if anchors is not None and len(anchors):
        anchors_low, anchors_high = _column_bounds(anchors)
        low, high = np.minimum(low, anchors_low), np.maximum(high, anchors_high)
    half = float(np.max(high - low)) / 2
    return (low + high) / 2, (EXTENT / half if half > 0 else 1.0)


class DisplayMap:
    """How one frame showed the embedding, and its inverse for points dropped on it.

    Parameters
    ----------
    plane : (ndarray (d,), ndarray (d, 2))
        Origin and orthonormal basis of the view (:attr:`PlaneView.plane`).
    center : ndarray (2,)
    scale : float
        Of :func:`normalization`.
    """

    def __init__(self, plane, center, scale):
        self.origin, self.basis = plane
        self.center = np.asarray(center, dtype=np.float64)
        self.scale = float(scale)

    def place(self, Y, shown):
        """Positions for points now at ``Y`` (m, d) that the user dropped at ``shown``
        (m, 2), in the frame's normalized coordinates: their coordinates in the
        view's plane become the dropped ones, those across the plane stay."""
        target = self.center + np.asarray(shown, dtype=np.float64) / self.scale
        now = (Y - self.origin) @ self.basis
        return Y + (target - now) @ self.basis.T


def normalize(points, anchors=None, dtype=np.float32):
    """Scale 2-D positions uniformly into [-EXTENT, EXTENT] around their box centre.

    Anchors are transformed alike and count for the box.

    Returns
    -------
    points, anchors : ndarray of ``dtype``
    """
    center, scale = normalization(points, anchors)

    def fit(P):
        return ((P - center) * scale).astype(dtype, copy=False)

    return fit(points), None if anchors is None else fit(anchors)
