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
"""

import numpy as np
import scipy.sparse as sp

from .._validation import check_annotations, check_labels

#: Refuse to build more must-link pairs than this without being asked (about
#: 1.2 GB of CSR arrays); a single labelled class of 10k points already has 50M.
MAX_PAIRS = 100_000_000

MIXINGS = ("per-point", "global")


def must_link_matrix(n_samples, pairs=None, groups=()):
    """The symmetric 0/1 matrix u of must-links, as CSR; ``None`` if there are none.

    Parameters
    ----------
    n_samples : int
    pairs : ndarray (m, 2), optional
        Linked pairs (i, j), i != j.
    groups : iterable of index arrays
        Sets of points linked pairwise (a lasso selection, a labelled class).

    Returns
    -------
    scipy.sparse.csr_matrix or None
    """
    rows, cols = [], []
    total = 0
    for group in groups:
        g = np.unique(np.asarray(group, dtype=np.int64))
        total += g.size * (g.size - 1)
        if total > MAX_PAIRS:
            raise MemoryError(
                f"The must-links span more than {MAX_PAIRS // 2:,} pairs. Link a random subset "
                f"of each group (for example 10% of the points of a class) instead.")
        if g.size >= 2:
            ii, jj = np.meshgrid(g, g, indexing="ij")
            off = ii != jj
            rows.append(ii[off])
            cols.append(jj[off])
    if pairs is not None and len(pairs):
        pairs = np.asarray(pairs, dtype=np.int64)
        rows += [pairs[:, 0], pairs[:, 1]]
        cols += [pairs[:, 1], pairs[:, 0]]
    if not rows:
        return None
    r = np.concatenate(rows)
    c = np.concatenate(cols)
    u = sp.csr_matrix((np.ones(r.size), (r, c)), shape=(n_samples, n_samples))
    u.data[:] = 1.0  # a link given twice counts once
    u.eliminate_zeros()
    u.sort_indices()
    return u


def semi_supervised_groups(y, annotations, n_samples):
    """Must-link pairs and groups from labels ``y`` and ``annotations``.

    Each labelled class (from ``y`` and from the hard labels in the
    annotations) becomes a group of points linked pairwise; the annotations'
    must-links are added as pairs.

    Returns
    -------
    pairs : ndarray (m, 2) or None
    groups : list of ndarray
    """
    groups = []
    labels = []
    if y is not None:
        labels.append(check_labels(y, n_samples))
    pairs = None
    if annotations is not None:
        check_annotations(annotations, n_samples)
        labels.append(annotations.to_labels())
        pairs = annotations.must_link_pairs()
    for lab in labels:
        for c in np.unique(lab[lab >= 0]):
            members = np.flatnonzero(lab == c)
            if members.size >= 2:
                groups.append(members)
    return pairs, groups


def must_links_from(y, annotations, n_samples):
    """The must-link matrix U of labels ``y`` and ``annotations``
    (:func:`~nbembed.affinity.constraints.semi_supervised_groups` passed to :func:`must_link_matrix`)."""
    return must_link_matrix(n_samples, *semi_supervised_groups(y, annotations, n_samples))


def mix_must_links(P, u, rho, mixing="per-point"):
    """P~ from P and the must-link matrix ``u``, in P's format (dense or CSR).

    Returns P itself when there are no links or rho = 0. See the module
    docstring for the two ``mixing`` rules.
    """
    if u is None or rho == 0.0:
        return P
    if mixing == "global":
        return _add(P, 1.0 - rho, u, rho / u.sum())
    degree = np.asarray(u.sum(axis=1)).ravel()
    linked = degree > 0
    mass = np.asarray(P.sum(axis=1)).ravel()
    keep = np.where(linked, 1.0 - rho, 1.0)
    to_partners = sp.diags(np.where(linked, rho * mass / np.maximum(degree, 1.0), 0.0)) @ u
    if sp.issparse(P):
        A = sp.diags(keep) @ P + to_partners
        mixed = sp.csr_matrix((A + A.T) * 0.5)
        mixed.sort_indices()
        return mixed
    A = keep[:, None] * P
    coo = sp.coo_matrix(to_partners)
    A[coo.row, coo.col] += coo.data
    return 0.5 * (A + A.T)


def _add(P, p_weight, u, u_weight):
    """p_weight * P + u_weight * u, in P's format."""
    if sp.issparse(P):
        mixed = sp.csr_matrix(p_weight * P + u_weight * u)
        mixed.sort_indices()
        return mixed
    mixed = p_weight * P
    coo = u.tocoo()
    mixed[coo.row, coo.col] += u_weight * coo.data
    return mixed
