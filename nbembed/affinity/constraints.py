"""Must-link constraints mixed into the input similarities P.

HSSNE's semi-supervised variant (Yang et al., 2009, section 6.2) links pairs
known to belong together, u_ij = 1, and embeds P~ instead of P. Two ways to mix:

``"global"`` (the paper's): U = u / sum_ab u_ab and P~ = (1 - rho) P + rho U.
    U's total weight is rho whatever the number of links, so a single small
    lasso group gets a large share of all attraction (each point of a
    10-point group about 40x its usual attraction at rho = 0.5), and adding
    another group silently reweights the first.

``"per-point"`` (the default): every point i with links moves the fraction
    rho of its own row mass M_i = sum_j P_ij onto its partners, in equal parts,

        A_ij = (1 - rho) P_ij + rho M_i u_ij / deg_i   (linked i),
        A_ij = P_ij                                   (i without links),
        P~ = (A + A^T) / 2.

    Each point keeps about its usual total attraction, points without links
    keep their neighbourhoods, and rho has a local meaning: the share of a
    linked point's attraction that goes to its partners. When every point has
    links (the paper's vehicle experiment) both mixings give nearly the same
    maps; see docs/vehicle-normalization.md.

A group (a labelled class, a lasso) also takes in its members' mutual
neighbours: j joins i's group when each is among the other's
``must_link_neighbors`` strongest input neighbours (largest P_ij,
:func:`strongest_neighbors`), j is not labelled or linked itself, and none of
j's strongest neighbours belongs to another group (:func:`with_neighbors`). A
linked point then moves with its neighbourhood instead of being pulled out of
it. Linking the labelled points alone tore them from their unlabelled
neighbours where the neighbourhoods do not follow the classes (faces under the
same light, not of the same person): the nearest labelled point then named the
wrong class more often than without labels; see docs/hssne.md. Explicit pairs
link their two points only.
"""

import hashlib
from functools import lru_cache

import numpy as np
import scipy.sparse as sp

from .._kernels.csr import (merged_row_lengths, merged_row_lengths_serial, mix_dense_all,
                            mix_dense_rows, mix_sparse, mix_sparse_serial)
from .._kernels.strongest import (strongest_in_csr, strongest_in_csr_serial,
                                  strongest_in_dense, strongest_in_dense_serial)
from .._memory import new_arrays
from .._validation import check_annotations, check_labels

#: Refuse to build more must-link entries than this (about 1.2 GB of CSR arrays).
MAX_PAIRS = 100_000_000

#: A group of more points than this plus one links each of its points to this
#: many partners of the group instead of to all of them, so that memory and time
#: grow with the group's size, not its square (a labelled class of 10^5 points
#: would otherwise have 5 * 10^9 pairs).
GROUP_PARTNERS = 64

MIXINGS = ("per-point", "global")

#: How many strongest input neighbours of a member (and of a candidate) the mutual
#: test of :func:`with_neighbors` looks at (``HSSNE(must_link_neighbors=...)``); 0
#: links the members alone. 3, 5 and 10 gave about the same maps on the labels
#: benchmark's larger sets (docs/hssne.md).
MUST_LINK_NEIGHBORS = 5

#: A dense P~ is mixed again in place, row by row, where the links changed in at
#: most one row in this many; beyond, all of it in one cache-friendly pass is faster.
ROWS_MIXED_AGAIN = 16


def must_link_matrix(n_samples, pairs=None, groups=(), partners=GROUP_PARTNERS):
    """The symmetric 0/1 matrix u of must-links, as CSR; ``None`` if there are none.

    Parameters
    ----------
    n_samples : int
    pairs : ndarray (m, 2), optional
        Linked pairs (i, j), i != j.
    groups : iterable of index arrays
        Sets of points that belong together (a lasso selection, a labelled
        class). A group of at most ``partners + 1`` points is linked pairwise;
        a larger one through :func:`group_links`, ``partners`` links a point.
    partners : int, default GROUP_PARTNERS

    Returns
    -------
    scipy.sparse.csr_matrix or None
    """
    links = MustLinks(n_samples, partners)
    links.update(pairs, groups)
    return links.matrix


class MustLinks:
    """The must-link matrix of a set of groups and pairs that changes a little at a time.

    :meth:`update` takes the whole set each time, as :func:`must_link_matrix`
    does, but builds the links of the groups (and of the block of pairs) that
    are new since the last update only, and takes away those of the groups that
    are gone: after one lasso, the work is that of one group (and one pass over
    the stored links), not of all of them. It also says which rows of the matrix
    changed, so that what is computed from it can be updated by those rows.

    Parameters
    ----------
    n_samples : int
    partners : int, default GROUP_PARTNERS

    Attributes
    ----------
    matrix : scipy.sparse.csr_matrix or None
        The symmetric 0/1 must-link matrix u of the last update (sorted
        indices); None while there are no links.
    """

    def __init__(self, n_samples, partners=GROUP_PARTNERS):
        self.n_samples = int(n_samples)
        self.partners = int(partners)
        self.matrix = None
        self._items = {}  # key of a group or block of pairs -> (key, its points)
        # How many of the current groups and pairs give each link, in both directions.
        self._counts = sp.csr_matrix((self.n_samples, self.n_samples), dtype=np.int32)

    def update(self, pairs=None, groups=()):
        """Make ``matrix`` the must-links of ``pairs`` and ``groups``.

        Parameters
        ----------
        pairs, groups
            As for :func:`must_link_matrix`.

        Returns
        -------
        ndarray of int64
            The rows (and, by symmetry, columns) of ``matrix`` that may
            have changed, sorted; the others are as they were.

        Raises
        ------
        MemoryError
            If the groups need more than :data:`MAX_PAIRS` entries; nothing
            changes then.
        """
        wanted = {}
        total = 0
        for group in groups:
            g = np.asarray(group, dtype=np.int64)
            if g.size > 1 and not (g[1:] > g[:-1]).all():
                g = np.unique(g)
            total += g.size * min(g.size - 1, self.partners)
            if total > MAX_PAIRS:
                raise MemoryError(
                    f"The must-links need more than {MAX_PAIRS:,} entries ({self.partners} "
                    f"for each point in a group); link fewer points (smaller lasso groups, "
                    f"fewer labelled points).")
            if g.size >= 2:
                key = _items_key(b"group", g)
                wanted.setdefault(key, (key, g))
        if pairs is not None and len(pairs):
            pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
            key = _items_key(b"pairs", pairs)
            wanted.setdefault(key, (key, pairs))
        added = [key for key in wanted if key not in self._items]
        removed = [key for key in self._items if key not in wanted]
        if not added and not removed:
            return np.empty(0, dtype=np.int64)
        firsts, seconds, signs = [], [], []
        for items, sign in (([wanted[key] for key in added], 1),
                            ([self._items[key] for key in removed], -1)):
            for key, item in items:
                # The links of a group are drawn from its members alone, so those
                # of a removed group are drawn again instead of being kept.
                a, b = ((item[:, 0], item[:, 1]) if key[0] == b"pairs"
                        else group_links(item, self.partners))
                firsts += [a, b]
                seconds += [b, a]
                signs.append(np.full(2 * a.size, sign, dtype=self._counts.dtype))
        for key in removed:
            del self._items[key]
        self._items.update((key, wanted[key]) for key in added)
        rows, cols = np.concatenate(firsts), np.concatenate(seconds)
        change = sp.csr_matrix((np.concatenate(signs), (rows, cols)),
                               shape=self._counts.shape)
        self._counts = self._counts + change
        self._counts.eliminate_zeros()
        counts = self._counts
        self.matrix = (sp.csr_matrix((np.ones(counts.nnz), counts.indices, counts.indptr),
                                     shape=counts.shape) if counts.nnz else None)
        return np.flatnonzero(np.bincount(rows, minlength=self.n_samples))


def _items_key(kind, points):
    """A key that tells groups (or blocks of pairs) apart by their points."""
    return kind, points.shape, _members_seed(points).tobytes()


def group_links(group, partners=GROUP_PARTNERS):
    """The links (a[k], b[k]) that join the points of a must-link group.

    A group of g <= partners + 1 points is linked pairwise (each pair once).
    A larger one is linked through a random circulant graph: its points in a
    shuffled order, each linked to the points ``partners // 2`` distinct
    random offsets ahead (and so, by symmetry, as many behind). Every point
    then has exactly ``2 * (partners // 2)`` partners drawn evenly from its
    group, so with the per-point mixing it moves the same share of its
    attraction to the group as with all pairs, spread over fewer partners;
    each pair is linked with the same probability (an unbiased sample of the
    full group), and the graph is connected (offsets include one coprime
    with g). The draw is seeded by the group's members, so the same group
    always gets the same links.

    Parameters
    ----------
    group : ndarray of int64
        Sorted distinct point indices.
    partners : int

    Returns
    -------
    a, b : ndarray of int64
    """
    g = group.size
    if g - 1 <= partners:
        a, b = _pair_positions(g)
        return group[a], group[b]
    rng = np.random.default_rng(_members_seed(group))
    order = group[rng.permutation(g)]
    # Distinct offsets below g / 2, so that o and g - o never name the same link;
    # offset 1 (coprime with g) keeps the graph connected.
    offsets = np.concatenate([[1], 2 + rng.choice((g - 1) // 2 - 1, partners // 2 - 1,
                                                   replace=False)])
    position = np.arange(g)
    a = np.tile(order, offsets.size)
    b = order[(position[None, :] + offsets[:, None]) % g].ravel()
    return a, b


@lru_cache(maxsize=GROUP_PARTNERS + 1)
def _pair_positions(g):
    """Positions (a, b), a < b, of all pairs among g points (read-only, cached:
    the Explorer rebuilds the links of every group after each annotation)."""
    a, b = np.triu_indices(g, k=1)
    a.flags.writeable = b.flags.writeable = False
    return a, b


def cross_links(a, b, partners=GROUP_PARTNERS):
    """The links (i[k], j[k]) that join two disjoint point sets ``a`` and ``b``.

    All ``len(a) * len(b)`` pairs while that is at most ``partners`` per point
    of the two sets; otherwise each point of one set is linked to
    ``partners // 2`` points of the other, drawn uniformly (so a point has
    about ``partners`` links in all and every pair the same chance). The draw
    is seeded by the two sets, so the same sets always get the same links.

    Parameters
    ----------
    a, b : ndarray of int64
        Sorted distinct point indices; the sets do not overlap.
    partners : int

    Returns
    -------
    i, j : ndarray of int64
        May repeat a pair; callers that need each pair once deduplicate.
    """
    if len(a) * len(b) <= partners * (len(a) + len(b)):
        return np.repeat(a, len(b)), np.tile(b, len(a))
    rng = np.random.default_rng(_members_seed(a, b))
    half = partners // 2
    i = np.concatenate([np.repeat(a, half), a[rng.integers(0, len(a), len(b) * half)]])
    j = np.concatenate([b[rng.integers(0, len(b), len(a) * half)], np.repeat(b, half)])
    return i, j


def spectral_link_pairs(annotations, partners=GROUP_PARTNERS):
    """The annotations' must-links and cannot-links as bounded pair lists.

    Groups are joined by :func:`group_links` and pairs of cannot-linked
    selections by :func:`cross_links`, so the number of pairs grows with the
    selections' sizes, not with their products; explicit pairs are kept.

    Returns
    -------
    must, cannot : ndarray of int64 (m, 2)
    """
    must = [annotations.must_link_pairs(groups=False)]
    for group in annotations.must_link_groups():
        must.append(np.column_stack(group_links(group, partners)))
    cannot = [annotations.cannot_link_pairs(groups=False)]
    for a, b in annotations.cannot_link_groups():
        cannot.append(np.column_stack(cross_links(a, b, partners)))
    return np.concatenate(must), np.concatenate(cannot)


def _members_seed(*point_sets):
    """A seed for a random draw that depends only on the given point sets."""
    digest = hashlib.blake2b(digest_size=16)
    for points in point_sets:
        digest.update(np.ascontiguousarray(points, dtype=np.int64).tobytes())
        digest.update(b"|")
    return np.frombuffer(digest.digest(), np.uint32)


def strongest_neighbors(P, k, parallel=True):
    """Each point's ``k`` neighbours of largest affinity in ``P``, strongest first.

    Parameters
    ----------
    P : ndarray or scipy.sparse matrix (n, n)
        Affinities; the diagonal and entries <= 0 are not neighbours.
    k : int
    parallel : bool
        False runs the serial twins of the kernels, for a thread beside a
        running fit's (see :func:`~nbembed._kernels.variants.serial_twin`).

    Returns
    -------
    ndarray of int64 (n, k)
        Column indices, ties going to the smaller; -1 where a row has fewer
        than ``k`` neighbours.
    """
    n = P.shape[0]
    out = np.empty((n, k), dtype=np.int64)
    if k == 0:
        return out
    values = np.empty((n, k), dtype=np.float64)
    if sp.issparse(P):
        P = P.tocsr()
        kernel = strongest_in_csr if parallel else strongest_in_csr_serial
        kernel(P.indptr, P.indices, P.data, out, values)
    else:
        kernel = strongest_in_dense if parallel else strongest_in_dense_serial
        kernel(np.ascontiguousarray(P), out, values)
    return out


def with_neighbors(groups, neighbors, linked):
    """Each group of two or more points with its members' mutual neighbours
    taken in, sorted; a lone point stays alone.

    A point j joins group g when, for a member i of g, each of i and j is in
    the other's row of ``neighbors`` (-1 ignored), j is not ``linked`` itself
    (a labelled point belongs with its own class), and no point of j's row
    belongs to another group (j does not lie between two classes).
    """
    owner = np.full(neighbors.shape[0] + 1, -1, dtype=np.int64)  # [-1]: the padding's
    for index, g in enumerate(groups):
        owner[g] = np.where(owner[g] == -1, index, -2)  # -2: in two groups
    taken = []
    for index, g in enumerate(groups):
        if len(g) < 2:
            taken.append(g)
            continue
        near = neighbors[g].ravel()
        members = np.repeat(g, neighbors.shape[1])
        mutual = near >= 0
        mutual[mutual] = (neighbors[near[mutual]] == members[mutual, None]).any(axis=1)
        near = np.unique(near[mutual])
        near = near[~linked[near]]
        owners = owner[neighbors[near]]
        near = near[((owners == -1) | (owners == index)).all(axis=1)]
        taken.append(np.union1d(g, near))
    return taken


def semi_supervised_groups(y, annotations, n_samples, neighbors=None):
    """Must-link pairs and groups from labels ``y`` and ``annotations``.

    Each labelled class (from ``y`` and from the hard labels in the
    annotations) becomes a group; the annotations' must-link groups are kept
    as groups and their explicit pairs as pairs.

    Parameters
    ----------
    y : array-like (n_samples,) or None
        Labels, -1 for unlabelled points.
    annotations : Annotations or None
    n_samples : int
    neighbors : ndarray of int64 (n_samples, k), optional
        Each point's strongest input neighbours (:func:`strongest_neighbors`):
        every group takes in its members' mutual neighbours that are not
        labelled or linked themselves and have no other group's member among
        their own (:func:`with_neighbors`).

    Returns
    -------
    pairs : ndarray (m, 2) or None
    groups : list of ndarray
    """
    groups = []
    labels = []
    linked = np.zeros(n_samples, dtype=bool)
    if y is not None:
        labels.append(check_labels(y, n_samples))
    pairs = None
    if annotations is not None:
        check_annotations(annotations, n_samples)
        labels.append(annotations.to_labels())
        pairs = annotations.must_link_pairs(groups=False)
        groups.extend(annotations.must_link_groups())
    for lab in labels:
        linked |= lab >= 0
        for c in np.unique(lab[lab >= 0]):
            members = np.flatnonzero(lab == c)
            if members.size >= 2:
                groups.append(members)
    if neighbors is not None and neighbors.shape[1]:
        groups = [np.asarray(g, dtype=np.int64) for g in groups]
        for g in groups:
            linked[g] = True
        if pairs is not None:
            linked[np.asarray(pairs, dtype=np.int64).ravel()] = True
        groups = with_neighbors(groups, neighbors, linked)
    return pairs, groups


def must_links_from(y, annotations, n_samples, neighbors=None):
    """The must-link matrix U of labels ``y`` and ``annotations``
    (:func:`~nbembed.affinity.constraints.semi_supervised_groups` passed to
    :func:`must_link_matrix`)."""
    return must_link_matrix(n_samples,
                            *semi_supervised_groups(y, annotations, n_samples, neighbors))


def mix_must_links(P, u, rho, mixing="per-point", *, out=None, rows=None, rooms=None,
                   parallel=True):
    """P~ from P and the symmetric must-link matrix ``u``, in P's format (dense or CSR).

    Returns P itself when there are no links or rho = 0. See the module
    docstring for the two ``mixing`` rules.

    Parameters
    ----------
    P : ndarray or scipy.sparse matrix (n, n)
    u : scipy.sparse matrix (n, n) or None
        Symmetric, as :func:`must_link_matrix` gives it.
    rho : float
    mixing : {"per-point", "global"}
    out, rows : ndarray, optional
        With a dense P and the per-point mixing: ``out`` holds P~ for a ``u``
        that differs from this one in the rows (and columns) ``rows`` only
        (:meth:`MustLinks.update` says which), and only those rows and columns
        are computed again, in place. The result is the same to the last bit.
    rooms : tuple of three :class:`~nbembed._memory.Room`, optional
        With a sparse P: where to write P~'s indptr, indices and data (the
        last P~ made in them is overwritten).
    parallel : bool
        With a sparse P: False runs the serial twins of the kernels, for a
        thread beside a running fit's (see
        :func:`~nbembed._kernels.variants.serial_twin`).
    """
    if u is None or rho == 0.0:
        return P
    if mixing == "global":
        if sp.issparse(P):
            n = P.shape[0]
            return _mix_sparse(P, np.full(n, 1.0 - rho), u, np.full(n, rho / u.sum()), rooms,
                               parallel)
        return _add(P, 1.0 - rho, u, rho / u.sum())
    keep, per_link, u = _per_point_shares(P, u, rho)
    if sp.issparse(P):
        return _mix_sparse(P, keep, u, per_link, rooms, parallel)
    n = P.shape[0]
    if out is not None and rows is not None and len(rows) <= n // ROWS_MIXED_AGAIN:
        mix_dense_rows(P, keep, per_link, u.indptr, u.indices, u.data,
                       np.asarray(rows, dtype=np.int64), out)
        return out
    if out is None:
        out = np.empty(P.shape, dtype=np.result_type(P.dtype, keep.dtype))
    mix_dense_all(P, keep, per_link, u.indptr, u.indices, u.data, out)
    return out


def must_link_share(P, u, rho, mixing="per-point"):
    """The part of P~ that the must-links put there, as CSR; None without links.

    P~ - must_link_share(...) is the part that comes from P (what is left of
    the neighbourhoods). Both are attractions: the split of the attraction
    into neighbours and must-link partners in ``HSSNEObjective.forces``.
    """
    if u is None or rho == 0.0:
        return None
    if mixing == "global":
        return sp.csr_matrix(u * (rho / u.sum()))
    _, per_link, u = _per_point_shares(P, u, rho)
    to_partners = sp.diags(per_link) @ u
    share = sp.csr_matrix((to_partners + to_partners.T) * 0.5)
    share.sort_indices()
    return share


def _per_point_shares(P, u, rho):
    """The per-point mixing's row factors on P, on u (each linked point moves the
    mass ``per_link`` onto each partner before symmetrizing), and u in CSR form
    without repeated entries."""
    u = _sorted_csr(u)
    degree = np.asarray(u.sum(axis=1)).ravel()
    linked = degree > 0
    mass = np.asarray(P.sum(axis=1, dtype=np.float64)).ravel()
    keep = np.where(linked, 1.0 - rho, 1.0)
    per_link = np.where(linked, rho * mass / np.maximum(degree, 1.0), 0.0)
    return keep, per_link, u


def _mix_sparse(P, keep, u, per_link, rooms=None, parallel=True):
    """(A + A^T) / 2 with A = diag(keep) P + diag(per_link) u, as CSR in P's
    precision, for symmetric P and u (CSR, or anything SciPy turns into it).

    One pass over both (:func:`~nbembed._kernels.csr.mix_sparse`): at 10^6
    points SciPy's products, sums and transpose took 15-18 s and several GB of
    float64 copies for one lasso of 10^5 points; this takes about 0.3 s and
    the result's memory (in ``rooms``, three :class:`~nbembed._memory.Room`
    for indptr, indices and data, when given). Entries of P stored as zeros
    stay stored. ``parallel=False``: the kernels' serial twins.
    """
    P = _sorted_csr(P)
    u = _sorted_csr(u)
    row_lengths, mix = ((merged_row_lengths, mix_sparse) if parallel
                        else (merged_row_lengths_serial, mix_sparse_serial))
    lengths = row_lengths(P.indptr, P.indices, u.indptr, u.indices)
    nnz = int(lengths.sum())
    index_dtype = np.int32 if max(nnz, P.shape[0]) < np.iinfo(np.int32).max else np.int64
    dtype = P.dtype if P.dtype in (np.float32, np.float64) else np.float64
    shapes = ((P.shape[0] + 1, index_dtype), (nnz, index_dtype), (nnz, dtype))
    indptr, indices, data = new_arrays(shapes, rooms)
    indptr[0] = 0
    np.cumsum(lengths, out=indptr[1:])
    mix(P.indptr, P.indices, P.data, np.asarray(keep, dtype=np.float64),
        u.indptr, u.indices, u.data, np.asarray(per_link, dtype=np.float64),
        indptr, indices, data)
    mixed = sp.csr_matrix((data, indices, indptr), shape=P.shape)
    mixed.has_sorted_indices = True
    return mixed


def _sorted_csr(A):
    """A as CSR with sorted column indices and no repeated entries (a copy only
    where A is not already so)."""
    if not (sp.issparse(A) and A.format == "csr"):
        A = sp.csr_matrix(A)
    # A's own flag: a new wrapper of the same arrays would check them all again
    # (0.1 s for a P of 10^6 points, on every must-link change).
    if not A.has_canonical_format:
        A = A.copy()
        A.sum_duplicates()
    return A


def _add(P, p_weight, u, u_weight):
    """p_weight * P + u_weight * u for a dense P."""
    mixed = p_weight * P
    coo = u.tocoo()
    mixed[coo.row, coo.col] += u_weight * coo.data
    return mixed
