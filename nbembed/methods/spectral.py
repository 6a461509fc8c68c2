"""Semi-supervised spectral dimensionality reduction (Chatpatanasiri & Kijsirikul).

One linear framework covers PCA, LPP, LFDA, DNE, MFA, SELF and their
semi-supervised versions SS-LFDA, SS-DNE and SS-MFA: with z_i = A x_i,

    minimize  tr(A X^T L_C X A^T)   subject to   A X^T B X A^T = I,

where C = C^l (from labels) + gamma C^u (from the neighbourhoods of all
points) and L_C is its graph Laplacian. The solution is a regularized
generalized symmetric eigenproblem; the KPCA trick makes every learner
non-linear. See docs/spectral.md.

The named learners are in :mod:`nbembed.methods.spectral_presets`, the run in
:mod:`nbembed.methods.spectral_run`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._estimator import check_is_fitted
from .._row_products import project
from .._validation import check_data, check_new_data, check_number, check_option
from ..affinity import knn_graphs
from ..spectral import costs, selection, solver
from ..spectral.kpca import KernelPCAMap, check_kernel_params
from ..spectral.sparse_data import distance_rows, in_features
from ._base import INIT_SCALE, EmbeddingEstimator, validate_input
from .spectral_run import GAMMA, HADAMARD_POWER, SpectralRun, merge_labels

AXIS_SCALINGS = ("constraint", "unit")
CONSTRAINTS = ("label", "label+neighbor")
GAMMA_SCALES = ("relative", "absolute")
#: The value of gamma, hadamard_power or beta that asks for cross-validation.
AUTO = "auto"

MISSING_Y = ("requires y to be passed, but the target y is None: label_cost={!r} is built from "
             "labels. Pass y with -1 for unlabelled points (or annotations), or use "
             "label_cost=None.")


#: Every setting of the framework, in the order of SpectralSSDR's __init__.
SETTINGS = ("n_components", "label_cost", "neighbor_cost", "gamma", "hadamard_power",
            "n_neighbors", "bandwidth", "gamma_scale", "beta", "constraint", "reg", "kernel",
            "kernel_params", "axis_scaling")


def _store_arguments(estimator, arguments):
    """Store ``__init__``'s arguments unchanged, as scikit-learn requires."""
    for name, value in arguments.items():
        if name not in ("self", "__class__"):
            setattr(estimator, name, value)


def _auto_or(value, check):
    """"auto" as it is, anything else through ``check``."""
    return AUTO if isinstance(value, str) and value == AUTO else check(value)


def _has_effect(name, settings):
    """Whether a parameter changes the solution with these settings, and so is
    worth cross-validating: gamma weighs the neighbourhood cost against the
    label cost, the Hadamard power needs a neighbourhood cost, the neighbourhood
    size a neighbourhood cost or DNE's or MFA's label cost, beta always acts."""
    if name == "n_neighbors":
        return settings["neighbor_cost"] is not None or settings["label_cost"] in ("dne", "mfa")
    if name == "gamma":
        return settings["label_cost"] is not None and settings["neighbor_cost"] is not None
    if name == "hadamard_power":
        return settings["neighbor_cost"] is not None
    return True


class SpectralSSDR(EmbeddingEstimator):
    """Unified semi-supervised spectral dimensionality reduction.

    Finds a linear map A (``components_``) minimizing
    sum_ij C_ij ||A x_i - A x_j||^2 = 2 tr(A X^T L_C X A^T) subject to
    A X^T B X A^T = I, with C = C^l + gamma C^u: a label cost C^l on labelled
    pairs and a neighbourhood cost C^u on the k-NN graph of all points. The
    solution is the bottom generalized eigenvectors of
    (X^T L_C X, X^T B X + eps I). New points are projected with A (through the
    same kernel PCA with ``kernel``).

    ``X`` may be a scipy.sparse matrix (text, counts): it is never densified.
    With at most as many features as points the rows stay sparse, neighbours
    are searched among them and the D x D forms are sparse products; with
    more features than points the learner works in the n-dimensional span of
    the centred rows, as the KPCA trick does. See docs/sparse.md.

    Parameters
    ----------
    n_components : int, default=2
        Dimension of the reduced space.
    label_cost : {"lfda", "dne", "mfa"} or None, default="lfda"
        The label cost and the constraint that comes with it: LFDA's local
        within-class weights with B from the local between-class weights; DNE's
        +1 (same-class neighbours) / -1 (other-class neighbours) with A A^T = I;
        MFA's intrinsic graph with B from the penalty graph. None: no labels
        (then the neighbourhood cost alone with LPP's B = D_{C^u}).
    neighbor_cost : {"local_scaling", "heat"} or None, default="local_scaling"
        C^u on the k-NN graph of all points: exp(-d_ij^2 / (sigma_i sigma_j))
        with sigma_i the distance to the 7th neighbour, or the heat kernel
        exp(-d_ij^2 / t). None: supervised (labels only).
    gamma : float or "auto", default="auto"
        Weight of C^u, >= 0. With ``gamma_scale="relative"`` it is relative:
        gamma = 1 makes the two costs weigh the input distances equally,
        sum abs(C^l_ij) ||x_i - x_j||^2 = sum w C^u_ij ||x_i - x_j||^2. Live.
        "auto": chosen by cross-validation on the labelled points (see
        :mod:`nbembed.spectral.selection`) from 0 (the label cost alone) and
        0.01 to 1000, with r (and beta when it is "auto"); 1 when fewer than
        three points of any class are labelled, or without a label or
        neighbourhood cost.
    hadamard_power : float or "auto", default="auto"
        r >= 0: C^u is replaced by its element-wise power (C^u)^(o r). r > 1
        strengthens strong links relative to weak ones (LPP* in the paper);
        r = 0 gives the unweighted k-NN graph. Live. "auto": chosen with
        gamma from {1, 2, 4}; 1 when it cannot be cross-validated.
    n_neighbors : int or "auto", default=7
        k of the k-NN graph of C^u and of the same- and other-class
        neighbour graphs of DNE and MFA (lowered to the class sizes).
        "auto": chosen from {5, 7, 10} in the same cross-validation as the
        other "auto" parameters (ties go to 7; 7 when it cannot be
        cross-validated). Not the default: on the shared benchmark sets it
        did not help on average (docs/spectral.md).
    bandwidth : float or None, default=None
        The heat kernel's t; None: the mean squared k-NN distance.
    gamma_scale : {"relative", "absolute"}, default="relative"
        "absolute" uses C = C^l + gamma C^u as written.
    beta : float or "auto", default=0.0
        Sugiyama's SELF regularization in [0, 1]: the cost becomes
        (1 - beta) M_C + beta I and the constraint (1 - beta) M_B + beta S_t,
        with S_t the total scatter of all points. beta = 1 is PCA; a small
        beta shrinks a label cost fitted to few labels in many dimensions
        toward the directions of large variance. "auto": chosen by
        cross-validation, from 0.1 to 0.9 (0.5 when it cannot be); with a
        label and a neighbourhood cost from {0, 0.01, 0.1, 0.5}, together with
        gamma and r when they are "auto" (0 when it cannot be). The
        semi-supervised presets (SSLFDA, SSDNE, SSMFA) default to "auto".
    constraint : {"label+neighbor", "label"}, default="label+neighbor"
        B of a semi-supervised learner. "label": the label cost's own, as the
        framework is written. "label+neighbor": that plus LPP's constraint
        D_{C^u} with gamma times its trace, so that gamma -> 0 gives the
        supervised learner and gamma -> infinity LPP; better in the
        reproduction (docs/spectral.md), hence the default.
    reg : float, default=1e-3
        Ridge on the constraint, relative to its mean eigenvalue:
        M_B + reg * tr(M_B) / r * I. Needed when M_B is singular (few labels).
    kernel : {"rbf", "poly", "linear"}, callable or None, default=None
        The KPCA trick: kernel PCA on the training points (every component
        with a non-zero eigenvalue), the learner on those coordinates. A
        callable is called as ``kernel(X, Y, **kernel_params)``.
    kernel_params : dict or None, default=None
        For the kernel: "rbf" takes gamma (> 0; without it, 1 / median
        squared distance), "poly" gamma (> 0), degree (an integer >= 1) and
        coef0, "linear" nothing; a callable any keyword arguments. Other keys
        and values out of range are refused at fit, as are kernel_params
        without a kernel.
    axis_scaling : {"constraint", "unit"}, default="constraint"
        "constraint": the axes as the constraint normalizes them
        (A M_B A^T = I); "unit": each axis a unit vector (in kernel PCA
        coordinates with a kernel). Same subspace either way.

    Attributes
    ----------
    components_ : ndarray (n_components, n_features) or (n_components, m)
        A; with a kernel, in the m kernel PCA coordinates.
    mean_ : ndarray
        The training mean (of the kernel PCA coordinates with a kernel: zero).
    embedding_ : ndarray (n_samples, n_components)
        The training points in the reduced space.
    eigenvalues_ : ndarray (n_components,)
        mu_k = a_k^T M_C a_k, ascending.
    objective_ : float
        tr(A X^T L_C X A^T) = sum_ij C_ij ||z_i - z_j||^2 / 2 (with beta > 0
        including its ridge term).
    constraint_ridge_ : float
        The absolute eps added to X^T B X.
    neighbor_weight_ : float
        The multiplier of C^u used.
    constraint_weight_ : float
        The multiplier of X^T D_{C^u} X in the constraint ("label+neighbor").
    selected_params_ : dict
        The values used for the parameters given as "auto" (empty if none).
        For SS-DNE and SS-MFA it may hold ``label_cost="lfda"``: the choice
        fell on SELF, a candidate of their supervised twin (the map is then
        ``SELF(beta=...)``'s).
    selection_results_ : dict or None
        The cross-validation behind them: ``params`` (every candidate),
        ``n_correct`` (hidden labelled points 1-NN got right), ``margin``
        (summed 1-NN margins), ``n_hidden``, ``chosen`` and, where the grid
        holds a supervised twin, ``validated`` (see
        :func:`nbembed.spectral.selection.cross_validate`); None when nothing
        was cross-validated.
    kernel_pca_ : KernelPCAMap or None
    n_iter_ : int
        1.
    history_ : list of dict
    n_features_in_ : int

    References
    ----------
    R. Chatpatanasiri, B. Kijsirikul. A unified semi-supervised dimensionality
    reduction framework for manifold learning. Neurocomputing 73, 2010.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from nbembed.methods.spectral import SpectralSSDR
    >>> X, y = load_iris(return_X_y=True)
    >>> y_partial = np.full_like(y, -1)
    >>> y_partial[::10] = y[::10]
    >>> model = SpectralSSDR(n_components=2, label_cost="lfda").fit(X, y_partial)
    >>> model.transform(X[:3]).shape
    (3, 2)
    """

    live_parameters = {"gamma": GAMMA, "hadamard_power": HADAMARD_POWER}
    annotation_kinds = ("labels", "must_link", "cannot_link")
    pinnable = False

    def __init__(self, n_components=2, *, label_cost="lfda", neighbor_cost="local_scaling",
                 gamma=AUTO, hadamard_power=AUTO, n_neighbors=7, bandwidth=None,
                 gamma_scale="relative", beta=0.0, constraint="label+neighbor", reg=1e-3,
                 kernel=None, kernel_params=None, axis_scaling="constraint"):
        _store_arguments(self, locals())

    def _settings(self):
        # Presets fix some settings as class attributes and leave them out of
        # their __init__; every setting is read here.
        return {name: getattr(self, name) for name in SETTINGS}

    def _check_settings(self, n_samples, n_features):
        s = self._settings()
        n_components = check_number(s["n_components"], "n_components", low=1, integer=True)
        label_cost = s["label_cost"]
        if label_cost is not None:
            check_option(label_cost, "label_cost", costs.LABEL_COSTS)
        if s["neighbor_cost"] is not None:
            check_option(s["neighbor_cost"], "neighbor_cost", costs.NEIGHBOR_COSTS)
        beta = _auto_or(s["beta"], lambda v: check_number(v, "beta", low=0, high=1))
        if label_cost is None and s["neighbor_cost"] is None and beta != 1:
            raise ValueError("label_cost=None and neighbor_cost=None leave nothing to "
                             "optimize; choose a cost, or beta=1 for PCA.")
        n_neighbors = _auto_or(s["n_neighbors"],
                               lambda v: check_number(v, "n_neighbors", low=1, integer=True))
        if n_neighbors != AUTO and n_neighbors >= n_samples:
            raise ValueError(f"n_neighbors = {n_neighbors} must be less than n_samples = "
                             f"{n_samples}: a point has only n_samples - 1 neighbours. Use a "
                             f"smaller n_neighbors.")
        if s["kernel"] is None and n_components > n_features:
            raise ValueError(f"n_components = {n_components} is larger than n_features = "
                             f"{n_features}; a linear projection has at most n_features "
                             f"components. Use n_components <= {n_features}, or a kernel "
                             f"(the KPCA trick).")
        if s["kernel"] is not None:
            check_kernel_params(s["kernel"], s["kernel_params"])
        elif not (s["kernel_params"] is None or s["kernel_params"] == {}):
            raise ValueError(f"kernel_params={s['kernel_params']!r} has no effect with "
                             f"kernel=None (a linear map); pass kernel='rbf', 'poly', "
                             f"'linear' or a callable with them, or kernel_params=None.")
        if s["bandwidth"] is not None:
            check_number(s["bandwidth"], "bandwidth", low=0, low_open=True)
        return dict(n_components=n_components, label_cost=label_cost,
                    neighbor_cost=s["neighbor_cost"], n_neighbors=n_neighbors,
                    gamma=_auto_or(s["gamma"], GAMMA.validate),
                    hadamard_power=_auto_or(s["hadamard_power"], HADAMARD_POWER.validate),
                    gamma_scale=check_option(s["gamma_scale"], "gamma_scale", GAMMA_SCALES),
                    beta=beta, reg=check_number(s["reg"], "reg", low=0),
                    constraint=check_option(s["constraint"], "constraint", CONSTRAINTS),
                    axis_scaling=check_option(s["axis_scaling"], "axis_scaling",
                                              AXIS_SCALINGS))

    def prepare(self, X, y=None, annotations=None, init=None):
        """Build the graphs and the label cost; return an unsolved run.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix (n_samples, n_features)
        y : array-like of int (n_samples,), optional
            Class labels, -1 for unlabelled points.
        annotations : Annotations, optional
            Hard labels (and must-/cannot-links for DNE and MFA).
        init : ndarray (n_samples, n_components), optional
            Shown as the run's embedding before the solve; the solution does
            not depend on it.

        Returns
        -------
        SpectralRun
        """
        from sklearn.utils.validation import validate_data  # feature names, as in scikit-learn
        X_checked = validate_input(X, min_samples=2, sparse_rows=True)
        # Sparse X as checked: the same numbers in CSR (other formats warn there).
        validate_data(self, X_checked if sp.issparse(X) else X, reset=True, accept_sparse=True)
        n, n_features = X_checked.shape
        s = self._check_settings(n, n_features)
        if s["label_cost"] is not None and y is None and annotations is None:
            raise ValueError(MISSING_Y.format(s["label_cost"]))
        labels, must, cannot = merge_labels(y, annotations, n)
        if s["label_cost"] is not None:
            # Before the kernel map and the neighbour search: on large data they take
            # minutes, and labels of one class would then be refused anyway.
            links = (must, cannot) if s["label_cost"] != "lfda" else (None, None)
            costs.check_labels_for_cost(labels, s["label_cost"], *links)
        settings = self._settings()
        features = X_checked
        kernel_map = None
        if settings["kernel"] is not None:
            kernel_map = KernelPCAMap(settings["kernel"], settings["kernel_params"])
            features = kernel_map.fit_transform(X_checked)
        mean, basis, coords = solver.data_basis(features)
        rank = coords.shape[1]
        if s["n_components"] > rank:
            space = "kernel PCA coordinates" if kernel_map is not None else "data"
            raise ValueError(f"n_components = {s['n_components']} is larger than the rank of "
                             f"the centred {space}, {rank}: there are only {rank} directions "
                             f"along which the training points vary.")
        if init is not None:
            init = np.asarray(init, dtype=np.float64)
            if init.shape != (n, s["n_components"]):
                raise ValueError(f"init must have shape (n_samples, n_components) = "
                                 f"{(n, s['n_components'])}; got {init.shape}.")
        build = dict(coords=coords, settings=s, bandwidth=settings["bandwidth"], labels=labels,
                     must=must, cannot=cannot, init=init, feature_map=(mean, basis, kernel_map))
        if s["n_neighbors"] != AUTO:
            return self._selected_run(**build, n_neighbors=s["n_neighbors"])
        if not _has_effect("n_neighbors", s):
            run = self._selected_run(**build, n_neighbors=min(selection.DEFAULT_NEIGHBORS, n - 1))
        else:
            counts = [k for k in selection.NEIGHBOR_COUNTS if k < n] or [n - 1]
            run = selection.best_neighbor_count([
                self._selected_run(**build, n_neighbors=k, scored=True) for k in counts])
        run.selected_params["n_neighbors"] = run.n_neighbors
        return run

    def _selected_run(self, coords, settings, bandwidth, labels, must, cannot, init,
                      feature_map, n_neighbors, scored=False):
        """A run with neighbourhoods of ``n_neighbors`` points, its "auto"
        parameters chosen by cross-validation (see :meth:`prepare`); ``scored``:
        cross-validate even with none, so that runs of other sizes compare."""
        s = settings
        neighbor_graph = scales = None
        if s["neighbor_cost"] is not None or s["label_cost"] == "lfda":
            neighbor_graph, scales = knn_graphs.neighbourhood_graph_and_scales(
                distance_rows(coords), s["neighbor_cost"], n_neighbors, bandwidth=bandwidth)
        auto = [name for name in selection.DEFAULTS if s[name] == AUTO]
        effective = [name for name in auto if _has_effect(name, s)]
        initial = {**{name: selection.DEFAULTS[name] for name in auto},
                   **selection.fallback(effective, _has_effect("gamma", s))}
        fixed = {k: v for k, v in s.items()
                 if k not in ("neighbor_cost", "n_neighbors") and k not in auto}
        run = SpectralRun(coords, name=type(self).__name__, labels=labels, must_links=must,
                          cannot_links=cannot, neighbor_graph=neighbor_graph, scales=scales,
                          init=init, feature_map=feature_map, n_neighbors=n_neighbors,
                          **initial, **fixed)
        run.selected_params = dict(initial)
        run.selection_results = None
        if effective or scored:
            chosen, run.selection_results = run.select_parameters(effective)
            run.selected_params.update(chosen)
        return run

    def _store_fitted(self, run):
        mean, basis, kernel_map = run.feature_map
        self.components_ = in_features(run.components, basis)
        self.mean_ = mean
        self.kernel_pca_ = kernel_map
        self.embedding_ = run.embedding
        self.eigenvalues_ = run.eigenvalues
        self.objective_ = run.history[-1]["cost"]
        self.constraint_ridge_ = run.ridge
        self.neighbor_weight_ = run.neighbor_weight
        self.constraint_weight_ = run.constraint_weight
        self.selected_params_ = dict(run.selected_params)
        self.selection_results_ = run.selection_results
        self.n_iter_ = run.iteration
        self.history_ = run.history
        self._n_features_out = self.embedding_.shape[1]

    def transform(self, X):
        """Project new points: A (phi(x) - mean) with phi the kernel PCA map or the identity.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix (n_samples, n_features)
            Sparse or dense, whichever the training data were.

        Returns
        -------
        ndarray (n_samples, n_components)
        """
        from sklearn.utils.validation import validate_data
        check_is_fitted(self, "components_")
        if sp.issparse(X):
            X = check_data(X, allow_sparse=True)  # CSR, repeated entries added up
        else:
            check_new_data(X)
        X = validate_data(self, X, reset=False, dtype=np.float64, accept_sparse="csr")
        # Row by row (nbembed._row_products): a row's projection does not depend on
        # the rows with it, so chunks of a large array can be projected separately.
        if self.kernel_pca_ is not None:
            return project(self.kernel_pca_.transform(X), self.components_, self.mean_)
        if sp.issparse(X):  # X - mean would be dense; sparse products go row by row
            return X @ self.components_.T - project(self.mean_[None, :], self.components_)
        return project(X, self.components_, self.mean_)

    def as_init(self, X=None, n_components=None):
        """Coordinates to start an SNE-family method from, e.g. ``HSSNE.fit(X, init=...)``.

        The projection of ``X`` (the training points by default) on the first
        ``n_components`` axes, scaled so the first axis has standard deviation
        1e-4, as nbembed's PCA start: small, so early exaggeration can work.

        Parameters
        ----------
        X : array-like (n_samples, n_features), optional
        n_components : int, optional
            Leading axes to keep; all by default.

        Returns
        -------
        ndarray (n_samples, n_components)
        """
        check_is_fitted(self, "components_")
        Z = self.embedding_ if X is None else self.transform(X)
        d = Z.shape[1]
        k = d if n_components is None else check_number(n_components, "n_components", low=1,
                                                        high=d, integer=True)
        Z = Z[:, :k]
        std = Z[:, 0].std()
        return Z / std * INIT_SCALE if std > 0 else Z.copy()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = self._settings()["label_cost"] is not None
        # Sparse rows are taken (Euclidean distances; there is no metric parameter,
        # which ``accepts_sparse`` would promise).
        tags.input_tags.sparse = True
        return tags
