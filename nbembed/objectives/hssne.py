"""The HSSNE cost (Yang, Xu, King & Oja, 2009) and how its sums are evaluated::

    KL(P~ || Q),   q_ij proportional to (1 + alpha ‖y_i - y_j‖²)^(-1/alpha)

t-SNE (alpha = 1) and symmetric SNE (alpha -> 0) are special cases. The
attraction sums over the stored entries of P~; the repulsion and its
normalizer Z over all pairs, exactly or approximately (Barnes-Hut tree or
interpolation on an FFT grid). The kernels are in :mod:`nbembed._kernels`.
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from .. import _config
from .._kernels import hssne as kernels
from .._kernels.barnes_hut import barnes_hut_repulsion
from .._kernels.interpolation import grid_shift, interpolation_repulsion
from .._kernels.locality import (PermutationInPieces, morton_order, permute_csr, put_columns,
                                 take_columns)
from .._memory import Room, available_bytes
from ..affinity import mix_must_links, must_link_share
from ..affinity.constraints import MustLinks, semi_supervised_groups, strongest_neighbors
from ..optim import LiveParameter
from .base import Objective
from .forces import Forces, all_pairs_rows, attraction_rows, point_rows

ALPHA = LiveParameter("alpha", 0.0, math.inf, (0.0, 3.0), 0.05,
                      "Tail heaviness: 0 Gaussian (SSNE), 1 t-SNE, larger = heavier tails",
                      label="α")
RHO = LiveParameter("rho", 0.0, 1.0, (0.0, 1.0), 0.05,
                    "Weight of the must-links in P~ = (1 - rho) P + rho U", label="ρ")

REPULSIONS = ("auto", "exact", "barnes-hut", "fft")

#: The terms of :meth:`HSSNEObjective.forces` and their legend labels.
FORCE_TERMS = (("attraction", "attraction to input neighbours"),
               ("must_link", "must-link pull"),
               ("repulsion", "repulsion from all points"))

#: Largest coordinate the single-precision kernels take: beyond it squared
#: distances could overflow float32, and the gradient is computed in float64.
SINGLE_MAX_COORDINATE = 1e18

#: The "adaptive" repulsion (what "auto" picks for large n) chooses before every
#: evaluation between the FFT grid and Barnes-Hut. The grid costs
#: O(nodes log nodes + n) and the tree O(n log n) whatever the extent; with
#: single-precision transforms a grid of 4 nodes per point took 40 ms against the
#: tree's 55 at 70 000 points, 0.56 s against 1.1 s at 10^6 (docs/scale.md). So
#: the grid gets at most ``GRID_NODES_PER_POINT`` nodes per point: its node
#: spacing is the finest of ``GRID_SPACINGS`` that keeps within that budget
#: (relative error of the repulsion near 1e-3 at 0.1, 0.2% at 0.2, 0.4% at
#: 0.25), and an embedding too wide even for the coarsest gets the tree. On a
#: 70 000-point map 120 wide the tree took 64 ms (error 0.15%), the grid 52 ms
#: at spacing 0.2 and 33 ms at 0.25: allowing 0.25 cut the main phase by 6-10 s
#: on 50-D mixtures and 256-D USPS-like sets with KL within 0.2%. openTSNE's
#: spacing 1/3 (errors of 1-4%) was cheaper still, but on 70 000 USPS-like
#: points it ended 1% higher in KL at alpha = 0.5 and 1 even with the moving
#: grid. A few fixed spacings, not a continuous one, so that the kernel's
#: spectrum is reused between iterations. A larger budget, which hands more of a
#: run to the grid, was slower wherever the map is wide for its size: main phase
#: of USPS (9298 points) 3.7 s at 4 nodes a point, 4.5 s at 16, 18.4 s at 64 (the
#: grid throughout); 70 000 points of a Swiss roll 26.6 s at 4, 33.0 s at 12.
GRID_SPACINGS = (0.1, 0.125, 0.16, 0.2, 0.25)
GRID_NODES_PER_POINT = 4.0


def adaptive_grid_spacing(extent, n, min_nodes):
    """Node spacing of the "adaptive" repulsion's grid, or None for Barnes-Hut.

    Parameters
    ----------
    extent : float
        Largest side of the embedding's bounding box.
    n : int
        Number of points.
    min_nodes : int
        Fewest nodes per dimension of any grid.
    """
    budget = math.sqrt(GRID_NODES_PER_POINT * n)  # nodes per dimension
    if min_nodes > budget:
        return None
    for spacing in GRID_SPACINGS:
        if extent / spacing <= budget:
            return spacing
    return None


#: From this many points on, approximate runs number the points along the
#: embedding's Z-order curve, renewed every ``REORDER_EVERY`` iterations, so
#: that the sums over the stored entries of P read nearby memory
#: (:mod:`nbembed._kernels.locality`). Below it the embedding fits in the
#: processor's caches anyway. A renewal took about 1.4 s at 10^6 points (now
#: 0.5-0.8 s, in the memory of the last copy); the attraction gained nothing
#: measurable from renewing every 50 iterations instead of 100 there (whole
#: 750-iteration runs of 414-445 s either way).
LOCAL_ORDER_MIN_N = 50_000

#: From this many points the Explorer works out a must-link change (a lasso's
#: group, a new label) in a thread of its own while the run goes on: the
#: links, P~ mixed again and its copy in the spatial order, made in new memory
#: by serial kernels. The run stops only to take them up. At 10^6 points, with
#: lassos of 10^5, the links' bookkeeping took 0.26-1.07 s and mixing and
#: permuting 0.8-1 s of a run's 1.4-2.8 s pause (benchmarks/bench_lasso.py
#: --run). At 10^5 points, lassos of 10^4, all of it took 0.17-0.31 s in the run.
ANNOTATIONS_ASIDE_MIN_N = 200_000
REORDER_EVERY = 100

#: Gradients over which a live run (``spread_renewals``) renews its spatial
#: order: at 10^6 points copying P~ into a new order took 0.75-1.25 s, which
#: stalled the Explorer for one iteration every ``REORDER_EVERY``. In 16 pieces
#: (into new memory, whose first writes the system makes slow) those iterations
#: took 0.44-0.59 s instead of 0.31 s, and none more than 0.85 s.
RENEWAL_PIECES = 16

#: Entries of P summed at a time by the sparse cost's sum of p log p.
P_LOG_P_PIECE = 1 << 20


def affinity_dtype(n, dtype):
    """The precision in which to store P for a run of ``n`` points whose
    gradient kernels run in ``dtype`` ("float32" or "float64").

    Single precision from ``LOCAL_ORDER_MIN_N`` points on with float32
    kernels: the gradient then reads P in single precision (the spatial order's
    copy, or a cast), and its float64 values would serve the cost alone, at
    4 bytes per stored entry (0.6 GB at 10^6 points).
    """
    return np.float32 if dtype == "float32" and n >= LOCAL_ORDER_MIN_N else np.float64


def resolve_repulsion(repulsion, n, n_components, sparse_affinities=False, warn=True):
    """The repulsion "auto" stands for, or an error for a combination that cannot work.

    "auto" is the exact sum with a dense P or up to ``EXACT_REPULSION_MAX_N``
    points (see :mod:`nbembed._config`), the "adaptive" approximation above.
    """
    if repulsion == "auto":
        if not sparse_affinities or n <= _config.EXACT_REPULSION_MAX_N:
            return "exact"
        if n_components > 2:
            if warn:
                warnings.warn(
                    f"Approximate repulsion needs n_components <= 2; with {n_components} "
                    f"dimensions and n = {n} the exact O(n^2) repulsion is used, which is "
                    f"slow at this size.", stacklevel=4)
            return "exact"
        return "adaptive"
    if repulsion != "exact" and n_components > 2:
        raise ValueError(
            f"repulsion={repulsion!r} supports n_components=1 or 2 only (got {n_components}); "
            f"use repulsion='exact' (O(n^2) per iteration) for more dimensions.")
    return repulsion


class MixedAside(NamedTuple):
    """P~ worked out beside the run for links about to be applied (see
    :meth:`HSSNEObjective.prepare_annotations`), in memory of its own.

    ``local`` is its copy in the spatial order ``order`` the run had then
    (None without one): usable only if the run still has that order.
    """

    rho: float
    matrix: sp.csr_matrix
    rooms: tuple
    p_log_p: float
    order: np.ndarray | None
    local: tuple | None
    local_rooms: tuple


class LocalOrder(NamedTuple):
    """The points numbered along the embedding's Z-order curve, and P in that order.

    Point ``order[k]`` of the data is number k here. ``since`` is the iteration
    at which the order was made. P's values are kept in single precision (a
    relative rounding of 6e-8, far below the repulsion's error): this copy is
    the largest array of a run on 10^6 points.
    """

    order: np.ndarray
    since: int
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray


def _p_log_p(P):
    """sum p log p over the entries of P, with 0 log 0 = 0."""
    if not sp.issparse(P):
        return kernels.dense_p_log_p(P)
    # In pieces: the temporaries of the whole would be three times P's values
    # (3.6 GB at 10^6 points), more than the run holds otherwise.
    total = 0.0
    for start in range(0, P.data.size, P_LOG_P_PIECE):
        data = P.data[start:start + P_LOG_P_PIECE].astype(np.float64, copy=False)
        # Stored entries can be zero: affinities that underflowed, or links taken away.
        data = data[data > 0]
        total += float(np.sum(data * np.log(data)))
    return total


class HSSNEObjective(Objective):
    """The HSSNE cost KL(P~ || Q) over the transposed embedding Yt, shape (d, n).

    P~ mixes the joint input affinities P with the must-links (see
    :func:`~nbembed.affinity.mix_must_links`); q_ij is proportional to
    H(‖y_i - y_j‖²) = (1 + alpha ‖y_i - y_j‖²)^(-1/alpha). The repulsion's
    normalizer is summed over all pairs or approximated (Barnes-Hut, an FFT
    grid, or "adaptive": whichever suits the embedding's extent).

    Parameters
    ----------
    P : ndarray (n, n) or scipy.sparse matrix
        Joint input affinities, summing to one (float64, or float32: see
        :func:`affinity_dtype`).
    links : scipy.sparse matrix (n, n)
        Must-link matrix U (see :func:`~nbembed.affinity.must_link_matrix`).
    n_components : int
        Dimension of the embeddings it is evaluated at.
    alpha, rho : float
        Tail heaviness and must-link weight (live).
    must_link_mixing : {"per-point", "global"}
    must_link_neighbors : int
        For the must-link groups of later annotations: how many strongest input
        neighbours the groups take their members' mutual neighbours from
        (:func:`~nbembed.affinity.constraints.with_neighbors`); 0 links the
        members alone. ``links`` are made by the caller.
    neighbor_index : ndarray (n, must_link_neighbors), optional
        Those neighbours, where the caller has them already.
    dtype : numpy float type
        Precision of the gradient kernels (the cost is always float64).
    repulsion : {"exact", "barnes-hut", "fft", "auto", "adaptive"}
    theta : float
        Barnes-Hut opening angle.
    fft_nodes, fft_box_size, fft_min_boxes
        The grid's interpolation nodes per box, box side, fewest boxes.

    Attributes
    ----------
    iteration : int
        The run's iteration, set by the run before every evaluation: the grid
        moves by a shift that depends on it, and the spatial order of large
        runs is renewed every ``REORDER_EVERY`` iterations.
    """

    name = "HSSNE"
    live_parameters = {"alpha": ALPHA, "rho": RHO}
    annotation_kinds = ("must_link", "labels")
    force_terms = FORCE_TERMS

    def __init__(self, P, links, *, n_components, alpha, rho, must_link_mixing="per-point",
                 must_link_neighbors=0, neighbor_index=None, dtype=np.float64,
                 repulsion="exact", theta=0.5, fft_nodes=3, fft_box_size=1.0,
                 fft_min_boxes=50):
        self.iteration = 0
        self.n_samples = P.shape[0]
        self.n_components = int(n_components)
        self.P = P
        self.links = links
        self.must_link_mixing = must_link_mixing
        self.must_link_neighbors = int(must_link_neighbors)
        self._neighbor_index = neighbor_index
        self.dtype = np.dtype(dtype).type
        self.alpha = float(alpha)
        self.rho = float(rho)
        self.repulsion_option = repulsion
        self.repulsion = resolve_repulsion(repulsion, self.n_samples, self.n_components,
                                           sp.issparse(P))
        self.theta = float(theta)
        self.fft_params = dict(n_nodes=int(fft_nodes), box_size=float(fft_box_size),
                               min_boxes=int(fft_min_boxes))
        self._fft_cache = {}
        self._repulsion_cache = None
        self._must_links = None  # kept by prepare_annotations
        # Memory that P~ and its copy in the spatial order are made in again after
        # every must-link change and new order: at 10^6 points, fresh memory for
        # them cost more than computing them.
        self._mixed_rooms = (Room(), Room(), Room())
        self._local_rooms = (Room(), Room(), Room())
        self._local = None
        # spread_renewals (class attribute False): set for live runs, a renewal of
        # the spatial order is then spread over RENEWAL_PIECES gradients in memory
        # of its own, where the system has it, instead of made at once.
        self._renewal = None  # (PermutationInPieces, since) while a spread renewal lasts
        self._mix()

    def _mix(self, rows=None):
        """P~ of the current links and rho; with ``rows``, those of the last P~
        computed again where the links changed (the rest is as it was)."""
        in_place = (rows is not None and self.P_mixed is not self.P
                    and not sp.issparse(self.P_mixed) and self.links is not None)
        self.P_mixed = mix_must_links(self.P, self.links, self.rho, self.must_link_mixing,
                                      out=self.P_mixed if in_place else None,
                                      rows=rows if in_place else None,
                                      rooms=self._mixed_rooms)
        if self.repulsion != "exact" and not sp.issparse(self.P_mixed):
            # The approximate paths sum the attraction over stored entries only.
            self.P_mixed = sp.csr_matrix(self.P_mixed)
        self._p_log_p = None  # computed with the next cost: P~ may change again first
        self._P_cast = None  # made when first needed: large runs use the local order's
        self._renewal = None  # it copies the P~ that was
        # The spatial order stays (P~ changed, not the embedding); its copy of P~
        # is made again when next used.
        self._local_is_stale = True

    @property
    def annotations_aside(self):
        """bool: Whether :meth:`prepare_annotations` is worth a thread of its own
        (``n_samples`` >= :data:`ANNOTATIONS_ASIDE_MIN_N`)."""
        return self.n_samples >= ANNOTATIONS_ASIDE_MIN_N

    def prepare_annotations(self, annotations=None, y=None):
        """The part of :meth:`set_annotations` that leaves the run as it is.

        Links the groups of ``annotations`` and labels ``y`` that are new since
        the last call and unlinks those that are gone (:class:`MustLinks`).
        When :attr:`annotations_aside` is true it also mixes P~ for the new
        links and makes its copy in the spatial order, in new memory and with
        serial kernels. None of this is read by an evaluation, and no parallel
        kernel is called, so it may run in another thread while the objective
        is evaluated. Calls are taken one at a time, and what they return
        must be applied in the order they were made.

        Returns
        -------
        callable or None
            ``apply()``, which makes the new links the objective's and P~ theirs
            (kernel lock held): the one made here if rho is still the one it was
            made with, else mixed again then; None when the links did not change.
        """
        return self._prepare(annotations, y, mix_now=self.annotations_aside)

    def _prepare(self, annotations, y, mix_now):
        """:meth:`prepare_annotations`, mixing P~ there (``mix_now``) or in ``apply()``."""
        if self._neighbor_index is None and self.must_link_neighbors > 0:
            # serial: this may run beside the run's parallel kernels
            self._neighbor_index = strongest_neighbors(self.P, self.must_link_neighbors,
                                                       parallel=False)
        pairs, groups = semi_supervised_groups(y, annotations, self.n_samples,
                                               self._neighbor_index)
        first = self._must_links is None
        must_links = MustLinks(self.n_samples) if first else self._must_links
        changed = must_links.update(pairs, groups)
        self._must_links = must_links
        if not first and not changed.size:
            return None
        matrix = must_links.matrix
        mix_now = mix_now and sp.issparse(self.P) and self._room_to_mix_aside(matrix)
        mixed = self._mixed_aside(matrix) if mix_now else None

        def apply():
            self.links = matrix
            if mixed is not None and mixed.rho == self.rho:
                self._take_up(mixed)
            else:
                # The links given at construction may differ anywhere from the first update's.
                self._mix(None if first else changed)

        return apply

    def _room_to_mix_aside(self, links):
        """Whether the system has memory for a second P~ and its spatial-order copy
        (with a quarter to spare) while the run keeps its own; where it does
        not, P~ is mixed again in the run's memory when applied."""
        available = available_bytes()
        if available is None:
            return True
        entries = self.P.nnz + links.nnz
        per_entry = 8 + self.P.dtype.itemsize + (0 if self._local is None else 8 + 4)
        return available >= 1.25 * entries * per_entry

    def _mixed_aside(self, links):
        """P~ for ``links`` with the current rho, and its copy in the run's current
        spatial order, in new memory: nothing the run reads or writes."""
        rho = self.rho
        rooms = (Room(), Room(), Room())
        matrix = mix_must_links(self.P, links, rho, self.must_link_mixing, rooms=rooms,
                                parallel=False)
        local = self._local  # the run may renew it meanwhile; then this copy goes unused
        order = None if local is None else local.order
        local_rooms = (Room(), Room(), Room())
        copy = None if order is None else permute_csr(
            matrix.indptr, matrix.indices, matrix.data, order, local_rooms, parallel=False)
        return MixedAside(rho, matrix, rooms, _p_log_p(matrix), order, copy, local_rooms)

    def _take_up(self, mixed):
        """Make P~ worked out aside the run's; the memory of the last one is let go."""
        self.P_mixed = mixed.matrix
        self._mixed_rooms = mixed.rooms
        self._renewal = None  # it copies the P~ that was
        self._p_log_p = mixed.p_log_p
        self._P_cast = None
        local = self._local
        if local is not None and mixed.order is not None and local.order is mixed.order:
            self._local = LocalOrder(local.order, local.since, *mixed.local)
            self._local_rooms = mixed.local_rooms
            self._local_is_stale = False
        else:
            self._local_is_stale = True

    def set_annotations(self, annotations=None, y=None):
        """Use the must-links of ``annotations`` and of labels ``y`` from now on.

        The links are kept from one call to the next (:class:`MustLinks`), so
        that after a small change only the changed groups are linked and only
        the rows of P~ they touch are mixed again.
        """
        apply = self._prepare(annotations, y, mix_now=False)
        if apply is not None:
            apply()

    def idle_params(self):
        """``rho`` while there are no must-links (labels count as must-links)."""
        if self.links is None:
            return {"rho": "no must-links or labels yet: rho weighs them once there are some"}
        return {}

    def set_params(self, alpha=None, rho=None):
        """Use these (validated) values of ``alpha`` and ``rho``."""
        if alpha is not None:
            self.alpha = alpha
        if rho is not None:
            self.rho = rho
            self._mix()

    def _grid_spacing(self, Yt):
        """Node spacing of the "adaptive" grid for Yt, or None for Barnes-Hut."""
        extent = float((Yt.max(axis=1) - Yt.min(axis=1)).max())
        p = self.fft_params
        return adaptive_grid_spacing(extent, Yt.shape[1], p["min_boxes"] * p["n_nodes"])

    def _approximation(self, Yt):
        """Which approximation serves this embedding, "barnes-hut" or "fft"."""
        if self.repulsion != "adaptive":
            return self.repulsion
        return "barnes-hut" if self._grid_spacing(Yt) is None else "fft"

    def _grid_params(self, Yt):
        """The grid's parameters: as given, or the spacing "adaptive" chooses for Yt."""
        if self.repulsion != "adaptive":
            return self.fft_params
        return dict(self.fft_params, box_size=self._grid_spacing(Yt) * self.fft_params["n_nodes"])

    def _approximate_repulsion(self, Yt, repulsion=None):
        """Z, and the repulsive forces into ``repulsion`` (n, d) when given."""
        if Yt.shape[0] == 1:
            # A line is a plane with a zero second coordinate (no force along it).
            forces = None if repulsion is None else np.empty((Yt.shape[1], 2))
            z = self._approximate_repulsion(np.vstack([Yt, np.zeros_like(Yt)]), forces)
            if repulsion is not None:
                repulsion[:, 0] = forces[:, 0]
            return z
        if self._approximation(Yt) == "barnes-hut":
            return barnes_hut_repulsion(Yt, self.alpha, self.theta, repulsion)
        return interpolation_repulsion(Yt, self.alpha, repulsion=repulsion,
                                       shift=grid_shift(self.iteration),
                                       cache=self._fft_cache, **self._grid_params(Yt))

    def _repulsion_at(self, Yt):
        """Approximate Z and forces at Yt, reusing the last evaluation when nothing
        changed: the cost recorded after iteration k and the gradient of iteration
        k + 1 are taken at the same embedding, so the cost's Z comes for free."""
        # Which approximation serves Yt follows from Yt and the parameters in the key.
        key = (self.iteration, self.alpha, self.theta, tuple(self.fft_params.items()))
        cached = self._repulsion_cache
        if cached is not None and cached[0] == key and np.array_equal(cached[1], Yt):
            return cached[2], cached[3]
        forces = np.empty(Yt.shape[::-1])
        z = self._approximate_repulsion(Yt, forces)
        self._repulsion_cache = (key, Yt.copy(), z, forces)
        return z, forces

    def _local_order(self, Yt, renew=False):
        """The points' spatial order and P in it, or None where the data's order is used.

        ``renew`` computes the order again from Yt when it is missing or
        ``REORDER_EVERY`` iterations old.
        """
        if self.repulsion == "exact" or self.n_samples < LOCAL_ORDER_MIN_N:
            return None
        local = self._local
        if renew and self._renewal is not None:
            local = self._advance_renewal()
        elif renew and (local is None or self.iteration - local.since >= REORDER_EVERY):
            order = morton_order(Yt)
            if local is not None and not self._local_is_stale and self._room_to_spread(order):
                P = self.P_mixed
                self._renewal = (PermutationInPieces(P.indptr, P.indices, P.data, order,
                                                     RENEWAL_PIECES), self.iteration)
                local = self._advance_renewal()
            else:
                local = self._in_order(order, self.iteration)
        elif local is not None and self._local_is_stale:
            local = self._in_order(local.order, local.since)
        return local

    def _room_to_spread(self, order):
        """Whether this renewal to ``order`` is spread (:attr:`spread_renewals`)
        and the system has memory for a second copy of P~ in the spatial order
        (with a quarter to spare) while the run reads its own."""
        if not self.spread_renewals:
            return False
        available = available_bytes()
        P = self.P_mixed
        needed = P.nnz * (P.indices.itemsize + 4) + order.size * (8 + P.indices.itemsize)
        return available is None or available >= 1.25 * needed

    def _advance_renewal(self):
        """Copy the next piece of a spread renewal; once it is whole, the run's
        order is the new one, and the memory of the last copy goes."""
        renewal, since = self._renewal
        if renewal.advance():
            self._renewal = None
            self._local = None
            self._local_rooms = (Room(), Room(), Room())
            self._local = LocalOrder(renewal.order, since, renewal.indptr, renewal.indices,
                                     renewal.data)
        return self._local

    def _in_order(self, order, since):
        """P~ in the spatial ``order`` (made at iteration ``since``), kept as the local order."""
        self._local = None  # what is no longer needed goes before the new copy is made
        P = self.P_mixed
        self._local = LocalOrder(order, since, *permute_csr(P.indptr, P.indices, P.data, order,
                                                            self._local_rooms))
        self._local_is_stale = False
        return self._local

    def _kernel_precision(self, Yt):
        """(alpha, dtype): the precision the gradient kernels run in at Yt.

        Single precision unless the run is float64 or Yt is so wide that
        squared distances would overflow float32 and every force vanish (a
        blown-apart embedding would look like a still one).
        """
        if self.dtype is np.float64 or not np.all(np.abs(Yt) < SINGLE_MAX_COORDINATE):
            return float(self.alpha), np.float64
        return self.dtype(self.alpha), self.dtype

    def _P_in(self, dtype):
        """P~ in ``dtype``: P~ itself or a copy, made on first use (a large
        approximate run never needs one, as its gradient reads P~ from the local
        order's copy). The cost reads P~ itself."""
        if self.P_mixed.dtype == dtype:
            return self.P_mixed
        if self._P_cast is None or self._P_cast.dtype != dtype:
            self._P_cast = self.P_mixed.astype(dtype)
        return self._P_cast

    def gradient(self, Yt, grad, exaggeration=1.0):
        """The gradient into ``grad``; returns A_i = sum_j P~_ij S_ij, the scale
        of the fixed-point update."""
        alpha, dtype = self._kernel_precision(Yt)
        if self.repulsion != "exact":
            return self._approximate_gradient(Yt, alpha, dtype, exaggeration, grad)
        P = self._P_in(dtype)
        Yk = Yt.astype(dtype, copy=False)
        if sp.issparse(P):
            _, a_rowsum = kernels.hssne_sparse(Yk, P.indptr, P.indices, P.data, alpha,
                                               exaggeration, grad)
        else:
            _, a_rowsum = kernels.hssne_dense(Yk, P, alpha, exaggeration, grad)
        return a_rowsum

    def _in_local_order(self, Yt, dtype, renew=False):
        """(Yl, indptr, indices, data, order): the embedding and P~'s CSR arrays in
        the spatial order when there is one (its copy of P~ is float32); else Yt
        and P~ in ``dtype`` (None: as stored), with order None."""
        local = self._local_order(Yt, renew)
        if local is None:
            P = self.P_mixed if dtype is None else self._P_in(dtype)
            return Yt, P.indptr, P.indices, P.data, None
        return (take_columns(Yt, local.order), local.indptr, local.indices,
                local.data, local.order)

    def _approximate_gradient(self, Yt, alpha, dtype, exaggeration, grad):
        """Attraction over the stored entries of P~ (in ``dtype``), repulsion
        approximate (in float64); in the spatial order when there is one, the
        results put back in the data's."""
        Yl, indptr, indices, data, order = self._in_local_order(Yt, dtype, renew=True)
        attraction = np.empty(Yl.shape[::-1])
        a_rowsum = kernels.hssne_attraction(Yl.astype(dtype, copy=False), indptr, indices,
                                            data, alpha, attraction)
        z, repulsion = self._repulsion_at(Yl)
        if order is None:
            kernels.combine(grad, attraction, repulsion, exaggeration, z)
            return a_rowsum
        grad_l = np.empty_like(grad)
        kernels.combine(grad_l, attraction, repulsion, exaggeration, z)
        put_columns(grad, order, grad_l)
        a_rowsum_data_order = np.empty_like(a_rowsum)
        a_rowsum_data_order[order] = a_rowsum
        return a_rowsum_data_order

    def value(self, Yt):
        attraction, rest = self.value_terms(Yt)
        return attraction + rest

    def value_terms(self, Yt):
        """(sum P~ log P~ - sum P~ log H, log Z): KL(P~ || Q) split into the part
        early exaggeration multiplies and the normalizer's."""
        if self.repulsion != "exact":
            # P_mixed is sparse on the approximate paths. A spatial order due for
            # renewal is renewed here, so that the next gradient, at the same
            # embedding, reuses this repulsion (it would not in another order);
            # a spread renewal begins with that gradient and keeps the order
            # until it ends, so the cost does not wait for its first piece.
            Yl, indptr, indices, data, _ = self._in_local_order(
                Yt, None, renew=not self.spread_renewals)
            z = self._repulsion_at(Yl)[0]
            p_log_h = kernels.sparse_p_log_h(Yl, indptr, indices, data, self.alpha)
        else:
            P = self.P_mixed
            z = kernels.hssne_z(Yt, self.alpha)
            if sp.issparse(P):
                p_log_h = kernels.sparse_p_log_h(Yt, P.indptr, P.indices, P.data, self.alpha)
            else:
                p_log_h = kernels.dense_p_log_h(Yt, P, self.alpha)
        if self._p_log_p is None:
            self._p_log_p = _p_log_p(self.P_mixed)
        return self._p_log_p - p_log_h, (math.log(z) if z > 0 else math.inf)

    def forces(self, Yt, indices=None, exaggeration=1.0):
        """The gradient at Yt split into its terms (see :mod:`nbembed.objectives.forces`).

        dJ/dy_i = 4 e sum_j P~_ij S_ij (y_i - y_j) - (4 / Z) sum_j H_ij S_ij (y_i - y_j)
        with e the exaggeration. P~ = N + L, where L is the part the
        must-links put there (:func:`~nbembed.affinity.must_link_share`) and
        N what is left of P, so the attraction splits into

        - ``attraction``: 4 e sum_j N_ij S_ij (y_i - y_j), toward the input
          neighbours (all of P's attraction without must-links);
        - ``must_link``: 4 e sum_j L_ij S_ij (y_i - y_j), toward the must-link
          partners (zero without links or at rho = 0);
        - ``repulsion``: -(4 / Z) sum_j H_ij S_ij (y_i - y_j), from all points,
          exact or from the same approximation as the gradient (Barnes-Hut or
          the grid; Z and the forces of all points are then computed once).

        The terms are computed in float64 whatever ``dtype`` the gradient
        kernels use: with float32 kernels they match the gradient to float32
        rounding.

        Parameters
        ----------
        Yt : ndarray (d, n)
            The transposed embedding.
        indices : array-like of int, optional
            Points to return rows for (all by default).
        exaggeration : float
            The factor on the attraction (early exaggeration).

        Returns
        -------
        Forces
        """
        Yt = np.ascontiguousarray(Yt, dtype=np.float64)
        Y = Yt.T
        rows = point_rows(indices, self.n_samples)
        alpha = self.alpha

        def score(tau):
            return 1.0 / (1.0 + alpha * tau)
        links = must_link_share(self.P, self.links, self.rho, self.must_link_mixing)
        neighbours = self.P_mixed
        must_link = np.zeros((rows.size, Y.shape[1]))
        if links is not None:
            if sp.issparse(neighbours):
                neighbours = sp.csr_matrix(neighbours - links)
            else:
                neighbours = neighbours - links.toarray()
            must_link = 4.0 * exaggeration * attraction_rows(links, Y, rows, score)
        attraction = 4.0 * exaggeration * attraction_rows(neighbours, Y, rows, score)
        if self.repulsion == "exact":
            z = kernels.hssne_z(Yt, alpha)

            def kernel_times_score(tau, block):
                if alpha == 0.0:
                    return np.exp(-tau)
                return (1.0 + alpha * tau) ** (-1.0 / alpha - 1.0)
            repulsion = all_pairs_rows(Y, rows, kernel_times_score)
        else:
            z, repulsion = self._repulsion_at(Yt)
            repulsion = repulsion[rows]
        # Z = 0 when every kernel value underflows (points far apart at a light tail):
        # the repulsion is then not finite, and the run's divergence recovery takes over.
        scale = -4.0 / z if z > 0 else math.nan
        terms = dict(attraction=attraction, must_link=must_link, repulsion=scale * repulsion)
        return Forces(terms, dict(FORCE_TERMS), indices=None if indices is None else rows,
                      exaggeration=exaggeration)
