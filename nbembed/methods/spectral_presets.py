"""Named learners of the spectral framework: SS-LFDA, SS-DNE, SS-MFA, LPP, LFDA,
DNE, MFA, SELF and PCA.

Each is :class:`~nbembed.methods.spectral.SpectralSSDR` with some settings
fixed as class attributes and left out of its ``__init__``.
"""

from __future__ import annotations

from .spectral import AUTO, SpectralSSDR, _store_arguments
from .spectral_run import GAMMA, HADAMARD_POWER

_SEMI_SUPERVISED_LIVE = {"gamma": GAMMA, "hadamard_power": HADAMARD_POWER}
_LINK_KINDS = ("labels", "must_link", "cannot_link")


class _Preset(SpectralSSDR):
    """A named configuration: the settings it does not take are fixed class attributes."""

    label_cost = None
    neighbor_cost = None
    gamma = 1.0
    hadamard_power = 1.0
    n_neighbors = 7
    bandwidth = None
    gamma_scale = "relative"
    beta = 0.0
    constraint = "label+neighbor"
    reg = 1e-3
    kernel = None
    kernel_params = None
    axis_scaling = "constraint"


class _SemiSupervisedPreset(_Preset):
    """A label cost plus gamma times the neighbourhood cost, shrunk toward PCA by
    beta; gamma and r live, and gamma, r and beta chosen together by
    cross-validation on the labelled points unless given."""

    live_parameters = _SEMI_SUPERVISED_LIVE

    def __init__(self, n_components=2, *, gamma=AUTO, hadamard_power=AUTO, beta=AUTO,
                 n_neighbors=7, neighbor_cost="local_scaling", bandwidth=None,
                 gamma_scale="relative", constraint="label+neighbor", reg=1e-3, kernel=None,
                 kernel_params=None, axis_scaling="constraint"):
        _store_arguments(self, locals())


class _LabelledNeighbourPreset(_Preset):
    """A label cost from same- and other-class neighbours, on labelled points only."""

    live_parameters = {}
    annotation_kinds = _LINK_KINDS

    def __init__(self, n_components=2, *, n_neighbors=7, reg=1e-3, kernel=None,
                 kernel_params=None, axis_scaling="constraint"):
        _store_arguments(self, locals())


class SSLFDA(_SemiSupervisedPreset):
    """Semi-supervised local Fisher discriminant analysis (SS-LFDA).

    LFDA's label cost (local within-class weights) and constraint (local
    between-class scatter) plus gamma times the neighbourhood cost of all
    points. Parameters as in :class:`SpectralSSDR`, except that ``beta``
    (SELF's shrinkage toward PCA) defaults to "auto": chosen with gamma and r
    from {0, 0.01, 0.1, 0.5}. The candidates include gamma = 0 with SELF's
    beta values, where SS-LFDA is SELF: the labels decide whether the
    neighbourhoods of all points help.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_wine
    >>> from nbembed import SSLFDA
    >>> X, y = load_wine(return_X_y=True)
    >>> y_partial = np.where(np.arange(len(y)) % 5 == 0, y, -1)
    >>> SSLFDA(n_components=2, gamma=1.0).fit_transform(X, y_partial).shape
    (178, 2)
    """

    label_cost = "lfda"
    annotation_kinds = ("labels",)


class SSDNE(_SemiSupervisedPreset):
    """Semi-supervised discriminant neighbourhood embedding (SS-DNE).

    DNE's label cost (+1 for same-class neighbours, -1 for other-class
    neighbours) with A A^T = I, plus gamma times the neighbourhood cost.
    Must-links and cannot-links from annotations join the +1 and -1 pairs.
    Parameters as in :class:`SpectralSSDR`, except that ``beta`` defaults to
    "auto" (see :class:`SSLFDA`).
    """

    label_cost = "dne"
    annotation_kinds = _LINK_KINDS


class SSMFA(_SemiSupervisedPreset):
    """Semi-supervised marginal Fisher analysis (SS-MFA).

    MFA's intrinsic graph (same-class neighbours) as the label cost and its
    penalty graph (other-class neighbours) as the constraint, plus gamma times
    the neighbourhood cost. Must-links and cannot-links join the two graphs.
    Parameters as in :class:`SpectralSSDR`, except that ``beta`` defaults to
    "auto" (see :class:`SSLFDA`).
    """

    label_cost = "mfa"
    annotation_kinds = _LINK_KINDS


class LPP(_Preset):
    """Locality preserving projections: C = C^u, B = D_{C^u}; no labels.

    With ``hadamard_power`` > 1 this is the paper's LPP*; ``hadamard_power="auto"``
    with labels ``y`` (-1 for unlabelled points) chooses it by cross-validation
    on the labelled points, as the paper tuned LPP*. Parameters as in
    :class:`SpectralSSDR`; the default neighbourhood cost is He & Niyogi's
    heat kernel.
    """

    live_parameters = {"hadamard_power": HADAMARD_POWER}
    annotation_kinds = ()

    def __init__(self, n_components=2, *, neighbor_cost="heat", hadamard_power=1.0,
                 n_neighbors=7, bandwidth=None, reg=1e-3, kernel=None, kernel_params=None,
                 axis_scaling="constraint"):
        _store_arguments(self, locals())


class LFDA(_Preset):
    """Local Fisher discriminant analysis (Sugiyama), labelled points only.

    Parameters as in :class:`SpectralSSDR`.
    """

    label_cost = "lfda"
    live_parameters = {}
    annotation_kinds = ("labels",)

    def __init__(self, n_components=2, *, reg=1e-3, kernel=None, kernel_params=None,
                 axis_scaling="constraint"):
        _store_arguments(self, locals())


class DNE(_LabelledNeighbourPreset):
    """Discriminant neighbourhood embedding, labelled points only.

    Parameters as in :class:`SpectralSSDR`.
    """

    label_cost = "dne"


class MFA(_LabelledNeighbourPreset):
    """Marginal Fisher analysis, labelled points only.

    Parameters as in :class:`SpectralSSDR`.
    """

    label_cost = "mfa"


class SELF(_Preset):
    """Sugiyama's SELF: LFDA regularized toward PCA on all points.

    Cost (1 - beta) S_lw + beta I, constraint (1 - beta) S_lb + beta S_t
    (S_t the total scatter of labelled and unlabelled points). beta = 0 is
    LFDA, beta = 1 PCA; "auto" (the default) chooses it by cross-validation on
    the labelled points. The identity makes it depend on the scale of X, as in
    Sugiyama's definition. Parameters as in :class:`SpectralSSDR`.
    """

    label_cost = "lfda"
    live_parameters = {}
    annotation_kinds = ("labels",)

    def __init__(self, n_components=2, *, beta=AUTO, reg=1e-3, kernel=None, kernel_params=None,
                 axis_scaling="constraint"):
        _store_arguments(self, locals())


class PCA(_Preset):
    """Principal component analysis inside the framework (a sanity baseline).

    SELF's beta = 1: cost I, constraint S_t, so the bottom generalized
    eigenvectors are the top principal axes; with ``axis_scaling="unit"``
    the components are scikit-learn's (up to sign). With a kernel, kernel PCA.
    """

    beta = 1.0
    live_parameters = {}
    annotation_kinds = ()

    def __init__(self, n_components=2, *, kernel=None, kernel_params=None,
                 axis_scaling="constraint"):
        _store_arguments(self, locals())
