"""Must-link constraints as an affinity matrix, mixed into P.

HSSNE's semi-supervised variant (Yang et al., 2009, section 6.2): u_ij = 1 when
i and j are known to belong together, U = u / sum_ab u_ab, and the input
similarities become P~ = (1 - rho) P + rho U.
"""

import numpy as np
import scipy.sparse as sp

#: Refuse to build more must-link pairs than this without being asked (about
#: 1.2 GB of CSR arrays); a single labelled class of 10k points already has 50M.
MAX_PAIRS = 100_000_000


def must_link_matrix(n_samples, pairs=None, groups=()):
    """U = u / sum(u) for symmetric must-links, as CSR; ``None`` if there are none.

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
    u.data[:] = 1.0  # repeated links count once
    u.eliminate_zeros()
    u.sort_indices()
    u.data /= u.data.sum()
    return u


def mix_must_links(P, U, rho):
    """P~ = (1 - rho) P + rho U, in P's format; P itself when there is no U or rho = 0."""
    if U is None or rho == 0.0:
        return P
    if sp.issparse(P):
        mixed = sp.csr_matrix((1.0 - rho) * P + rho * U)
        mixed.sort_indices()
        return mixed
    mixed = (1.0 - rho) * P
    coo = U.tocoo()
    mixed[coo.row, coo.col] += rho * coo.data
    return mixed
