"""The learning metric: distances that grow where the class distribution changes.

Peltonen, Klami & Kaski (2004) define a Riemannian metric from a conditional
class density p(c | x): the local squared distance is dx^T J(x) dx with the
Fisher information

    J(x) = sum_c p(c|x) grad_x log p(c|x) grad_x log p(c|x)^T.

Directions in which the class probabilities do not change have length zero;
directions that cross a class border are long. SNeRV (Peltonen, Aidos & Kaski,
2009) embeds with these distances.

The density is a discriminative mixture of labelled Gaussians
(:mod:`~nbembed.affinity.class_mixture`),

    p(c | x) = sum_k beta_ck g_k(x) / sum_k g_k(x),   g_k(x) = exp(-||x - m_k||^2 / 2 sigma^2),

with beta_ck = softmax_c(theta_ck), fitted by L-BFGS (scipy) to maximize the
conditional log-likelihood sum_i w_i sum_c t_ic log p(c | x_i) of the labelled
points (hard labels t_i one-hot, or soft labels). The number of components K
and the width sigma are chosen by the validation log-likelihood of held-out
labelled points; no embedding is needed for that.

Relation to the KL divergence (the constant): for nearby points,

    KL(p(.|x) || p(.|x + dx)) = 1/2 dx^T J(x) dx + O(||dx||^3),

because the first-order term sum_c dp_c vanishes (probabilities sum to one)
and the second-order term is 1/2 sum_c (dp_c)^2 / p_c = 1/2 dx^T J dx. So
d_L(x, x + dx)^2 = 2 KL(p(.|x) || p(.|x + dx)) to second order; the paper's
"equivalent to the KL divergence" holds up to this factor 2 (tested).
"""

from __future__ import annotations

import math
import numbers
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse.csgraph as csgraph
from numba import get_num_threads
from threadpoolctl import threadpool_limits

from .. import _config
from .._estimator import Classifier, check_is_fitted
from .._kernels.learning_metric import straight_path_distances
from .._row_products import squared_distances
from .._validation import check_allocation, check_data, check_new_data, check_number, \
    check_random_state
from .class_mixture import (CENTROID_PENALTY, THETA_PENALTY, component_responsibilities,
                            labels_from, mean_log_likelihood, mixture_objective,
                            softmax_columns)

#: Width factors tried around the data's own scale when ``sigma="auto"`` (see
#: ``LearningMetric._sigma_grid``), largest first: each fit warm-starts
#: the next, narrower one.
SIGMA_FACTORS = (2.0, 1.0, 0.5, 0.25)

#: Components per class tried when ``n_components="auto"``.
COMPONENTS_PER_CLASS = (1, 2, 4, 8)

#: Neighbours of the input-space classifier that ``knn_validation_error_``
#: measures (the 5-NN error SNeRV's maps are judged by).
VALIDATION_NEIGHBORS = 5


# --------------------------------------------------------------------------- fitting

def _misses(scores, targets):
    """Whether each row's highest score misses its (hard) label."""
    return np.argmax(scores, axis=1) != np.argmax(targets, axis=1)


def _knn_misses(X_train, T_train, X_test, T_test, k=None):
    """:func:`_misses` of a vote (summing the label rows) of the ``k`` (default
    ``VALIDATION_NEIGHBORS``) nearest training rows in Euclidean distance."""
    k = min(k or VALIDATION_NEIGHBORS, X_train.shape[0])
    nearest = np.argsort(squared_distances(X_test, X_train), axis=1, kind="stable")[:, :k]
    return _misses(T_train[nearest].sum(axis=1), T_test)


def _mean_error(missed, weights):
    """Mean over the folds of the weighted share of missed held-out points."""
    return float(np.mean([w @ m / w.sum() if w.sum() > 0 else 0.0
                          for m, w in zip(missed, weights)]))


def _initial_parameters(X_init, init_weights, X, targets, weights, n_components, rng):
    """Weighted k-means centroids on every point given (labelled or not), and theta
    from the smoothed class counts of the labelled points nearest to each centroid."""
    from sklearn.cluster import KMeans
    K = min(n_components, X_init.shape[0])
    km = KMeans(n_clusters=K, n_init=3, random_state=rng.randint(2**31 - 1))
    km.fit(X_init, sample_weight=init_weights)
    centroids = km.cluster_centers_
    nearest = km.predict(X)
    counts = np.ones((targets.shape[1], K))
    np.add.at(counts.T, nearest, weights[:, None] * targets)
    return centroids, np.log(counts / counts.sum(axis=0, keepdims=True))


def _fit_one(X, targets, weights, centroids, theta, sigma, max_iter, tol):
    """L-BFGS from the given start: (centroids, theta, iterations)."""
    K, D = centroids.shape
    C = theta.shape[0]
    center = np.average(X, axis=0, weights=weights)
    spread = max(float(np.sum(np.average((X - center) ** 2, axis=0, weights=weights))), 1e-300)
    start = np.concatenate([centroids.ravel(), theta.ravel()])
    from scipy.optimize import minimize  # imported when used: it takes 0.3 s
    result = minimize(mixture_objective, start,
                      args=(X, targets, weights, K, sigma, THETA_PENALTY, CENTROID_PENALTY,
                            center, spread),
                      jac=True, method="L-BFGS-B",
                      options=dict(maxiter=max_iter, gtol=tol, ftol=1e-10))
    params = result.x
    return (params[:K * D].reshape(K, D).copy(), params[K * D:].reshape(C, K).copy(),
            int(result.nit))


# --------------------------------------------------------------------------- estimator

class LearningMetric(Classifier):
    """Supervised Riemannian distances from a discriminative mixture of labelled Gaussians.

    Fits p(c | x) = sum_k beta_ck g_k(x) / sum_k g_k(x) to the labelled points,
    then measures distances with the Fisher information of p(c | x): along the
    straight path between two points, cut into ``n_pieces`` pieces, the length
    is sum_t sqrt(delta^T J(x_t) delta) with x_t the middle of piece t.
    Optionally the shortest paths through the complete graph of these straight
    paths refine them (Floyd's algorithm in the paper; O(n^3)).

    Also a classifier: ``predict_proba`` is the fitted p(c | x).

    Parameters
    ----------
    n_components : int, list of int or "auto", default="auto"
        Number of Gaussians K, or candidates for it; "auto" tries 1, 2, 4 and 8
        per class (at most a third of the labelled points). Candidates are
        compared by validation log-likelihood.
    sigma : float, list of float or "auto", default="auto"
        Common width (standard deviation) of the Gaussians, or candidates;
        "auto" tries 2, 1, 1/2 and 1/4 times the root median squared distance
        from the points to their nearest k-means centroid.
    n_pieces : int, default=10
        Pieces T of each straight path.
    shortest_paths : bool, default=False
        Replace the straight-path distances by graph shortest paths over them
        (``pairwise_distances(X)`` only). O(n^3): seconds at n = 1000, minutes
        at several thousand; the paper found straight paths about as good.
    cv : int, cross-validation splitter or iterable, default=3
        Folds (stratified by class) of the internal validation that chooses K
        and sigma, a splitter (applied to the labelled points), or explicit
        (train, test) index arrays over the rows of ``X`` (unlabelled rows in
        them are ignored).
        Skipped when both are given as single values.
    max_iter : int, default=200
        L-BFGS iterations per fit.
    tol : float, default=1e-6
        Gradient tolerance of L-BFGS.
    random_state : int, RandomState or None
        Seeds k-means and the validation folds.

    Attributes
    ----------
    classes_ : ndarray (n_classes,)
    centroids_ : ndarray (K, n_features)
        m_k.
    beta_ : ndarray (n_classes, K)
        Class probabilities of the components; columns sum to one.
    sigma_ : float
    n_components_ : int
        K, the number of Gaussians.
    validation_scores_ : list of dict
        Mean held-out log-likelihood and classification error for every
        (n_components, sigma) tried.
    validation_error_ : float or None
        Held-out classification error (weighted, mean over the folds) of the
        chosen setting; None when K and sigma were given and nothing was validated.
    knn_validation_error_ : float or None
        The same for ``VALIDATION_NEIGHBORS`` nearest labelled neighbours in the
        input's Euclidean distances, on the same folds: what the metric has to
        beat to be worth using (``SNeRV(euclidean_weight="auto")``).
    validation_disagreements_ : (float, float) or None
        Weighted counts of held-out labelled points that the metric's
        classifier misses and the nearest neighbours get right, and the
        reverse (the discordant pairs of a paired comparison of the two).
    log_likelihood_ : float
        Mean conditional log-likelihood of the labelled training points.
    n_iter_ : int
        L-BFGS iterations of the final fit.
    n_features_in_ : int

    References
    ----------
    J. Peltonen, A. Klami, S. Kaski. Improved learning of Riemannian metrics for
    exploratory analysis. Neural Networks 17, 2004.

    Examples
    --------
    >>> import numpy as np
    >>> from nbembed.affinity.learning_metric import LearningMetric
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 2))
    >>> y = (X[:, 0] > 0).astype(int)          # only the first feature matters
    >>> lm = LearningMetric(n_components=4, sigma=0.5, random_state=0).fit(X, y)
    >>> D = lm.pairwise_distances([[1.0, -1.0], [1.0, 1.0], [-0.5, 0.0], [0.5, 0.0]])
    >>> bool(D[2, 3] > 10 * D[0, 1])           # across the class border vs along it
    True
    """

    def __init__(self, n_components="auto", sigma="auto", *, n_pieces=10,
                 shortest_paths=False, cv=3, max_iter=200, tol=1e-6, random_state=None):
        self.n_components = n_components
        self.sigma = sigma
        self.n_pieces = n_pieces
        self.shortest_paths = shortest_paths
        self.cv = cv
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    # -- fitting -----------------------------------------------------------------
    def fit(self, X, y=None, *, soft_labels=None, sample_weight=None):
        """Fit the conditional class density, choosing K and sigma by validation.

        Parameters
        ----------
        X : array-like (n_samples, n_features)
            All points; unlabelled ones help place the initial centroids.
        y : array-like (n_samples,), optional
            Labels, -1 for unlabelled points (numeric labels).
        soft_labels : array-like (n_samples, n_classes), optional
            Probability rows (all-zero for unlabelled points); override ``y``
            where given.
        sample_weight : array-like (n_samples,), optional
            Weight of each labelled point in the likelihood.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Without labels, with a single class, or with invalid parameters.
        """
        from sklearn.utils.validation import validate_data
        check_data(X, min_samples=2)
        X = np.ascontiguousarray(validate_data(self, X, dtype=np.float64, ensure_min_samples=2))
        targets, weights, self.classes_ = labels_from(y, soft_labels, sample_weight,
                                                      X.shape[0])
        check_number(self.n_pieces, "n_pieces", low=1, integer=True)
        max_iter = check_number(self.max_iter, "max_iter", low=1, integer=True)
        tol = check_number(self.tol, "tol", low=0, low_open=True)
        rng = check_random_state(self.random_state)
        lab = weights > 0
        # Unlabelled points help place the initial centroids, with their sample
        # weight (a weight of zero removes a point altogether).
        unlabelled = ~lab if sample_weight is None else ~lab & (np.asarray(sample_weight) > 0)
        Xl, Tl, wl, Xu = X[lab], targets[lab], weights[lab], X[unlabelled]
        wu = np.ones(Xu.shape[0]) if sample_weight is None else \
            np.asarray(sample_weight, dtype=np.float64)[unlabelled]
        positions = np.full(X.shape[0], -1)        # row of X -> row of Xl
        positions[lab] = np.arange(Xl.shape[0])
        ks = self._component_grid(targets.shape[1], Xl.shape[0])
        given = self._sigma_candidates()
        self.validation_scores_ = []
        self.validation_error_ = self.knn_validation_error_ = None
        self.validation_disagreements_ = None
        # The products here are small: with several BLAS threads, their start-up and
        # spinning cost up to 20x the arithmetic on a busy machine.
        with threadpool_limits(1, user_api="blas"):
            if len(ks) > 1 or given is None or len(given) > 1:
                k, index = self._select(Xl, Tl, wl, (Xu, wu), ks, rng, max_iter, tol,
                                        positions)
            else:
                k, index = ks[0], 0
            centroids, theta, widths = self._starts(Xl, Tl, wl, (Xu, wu), k, rng)
            self.sigma_ = widths[index]
            self.centroids_, theta, self.n_iter_ = _fit_one(Xl, Tl, wl, centroids, theta,
                                                            self.sigma_, max_iter, tol)
        self.beta_ = softmax_columns(theta)
        self.n_components_ = self.centroids_.shape[0]
        self.log_likelihood_ = mean_log_likelihood(Xl, Tl, wl, self.centroids_, theta,
                                                   self.sigma_)
        return self

    def _component_grid(self, n_classes, n_labelled):
        if isinstance(self.n_components, str) and self.n_components == "auto":
            cap = max(n_classes, n_labelled // 3)
            return sorted({min(m * n_classes, cap) for m in COMPONENTS_PER_CLASS})
        values = np.atleast_1d(self.n_components)
        if values.size == 0 or values.dtype.kind not in "iu":
            raise ValueError(f"n_components must be 'auto', an integer or a list of integers; "
                             f"got {self.n_components!r}.")
        return [check_number(int(v), "n_components", low=1, integer=True) for v in values]

    def _sigma_candidates(self):
        """The given widths, largest first, or None for "auto"."""
        if isinstance(self.sigma, str):
            if self.sigma == "auto":
                return None
            raise ValueError(f"sigma must be 'auto', a positive number or a list of them; "
                             f"got {self.sigma!r}.")
        values = np.atleast_1d(np.asarray(self.sigma, dtype=float))
        if values.size == 0:
            raise ValueError("sigma is an empty list; give at least one width or 'auto'.")
        return sorted((check_number(float(v), "sigma", low=0, low_open=True) for v in values),
                      reverse=True)

    @staticmethod
    def _sigma_grid(X, centroids):
        sq = (np.einsum("ij,ij->i", X, X)[:, None] - 2.0 * X @ centroids.T
              + np.einsum("ij,ij->i", centroids, centroids)[None, :])
        scale = math.sqrt(max(float(np.median(np.maximum(sq.min(axis=1), 0.0))), 1e-24))
        return [f * scale for f in SIGMA_FACTORS]

    def _starts(self, Xl, Tl, wl, unlabelled, k, rng):
        """The k-means start with K components and the candidate widths:
        (centroids, theta, widths). ``unlabelled`` is (points, weights) for the
        k-means start."""
        X_init = np.vstack([Xl, unlabelled[0]])
        init_weights = np.concatenate([wl, unlabelled[1]])
        centroids, theta = _initial_parameters(X_init, init_weights, Xl, Tl, wl, k, rng)
        widths = self._sigma_candidates() or self._sigma_grid(X_init, centroids)
        return centroids, theta, widths

    def _folds(self, Xl, Tl, rng, positions):
        """Train/test index pairs of the internal validation over the labelled points."""
        hard = np.argmax(Tl, axis=1)
        if hasattr(self.cv, "split"):
            return list(self.cv.split(Xl, hard))
        if not isinstance(self.cv, numbers.Integral):
            try:
                splits = [(np.asarray(a), np.asarray(b)) for a, b in self.cv]
            except (TypeError, ValueError):
                splits = []
            if not splits:
                raise ValueError(f"cv must be an integer >= 2, a cross-validation splitter or "
                                 f"a non-empty iterable of (train, test) index arrays; got "
                                 f"{self.cv!r}.")
            # Explicit splits index the rows of X; keep their labelled points.
            return [(positions[a][positions[a] >= 0], positions[b][positions[b] >= 0])
                    for a, b in splits]
        from sklearn.model_selection import KFold, StratifiedKFold
        n_splits = check_number(self.cv, "cv", low=2, integer=True)
        counts = np.bincount(hard)
        seed = rng.randint(2**31 - 1)
        if counts[counts > 0].min() >= n_splits:
            return list(StratifiedKFold(n_splits, shuffle=True,
                                        random_state=seed).split(Xl, hard))
        return list(KFold(min(n_splits, Xl.shape[0]), shuffle=True,
                          random_state=seed).split(Xl))

    def _select(self, Xl, Tl, wl, unlabelled, ks, rng, max_iter, tol, positions):
        """(K, index of the width) with the best mean held-out log-likelihood.

        Also records the held-out classification errors of every setting and of
        nearest neighbours in the input (``validation_error_``,
        ``knn_validation_error_``, ``validation_disagreements_``).
        """
        scores, missed = {}, {}
        folds = self._folds(Xl, Tl, rng, positions)
        # The k-means starts draw from ``rng`` one after another; the L-BFGS fits
        # from them are independent and run side by side, each result kept in its
        # place, so the choice does not depend on the number of threads.
        jobs = []
        for fold, (train, test) in enumerate(folds):
            missed.setdefault("knn", []).append(
                _knn_misses(Xl[train], Tl[train], Xl[test], Tl[test]))
            for k in ks:
                centroids, theta, widths = self._starts(Xl[train], Tl[train], wl[train],
                                                        unlabelled, k, rng)
                jobs += [(fold, k, index, centroids, theta, s)
                         for index, s in enumerate(widths)]

        def fit(job):
            fold, _, _, centroids, theta, s = job
            train = folds[fold][0]
            return _fit_one(Xl[train], Tl[train], wl[train], centroids, theta, s,
                            max_iter, tol)

        workers = max(1, min(get_num_threads(), len(jobs)))
        # Many components cost most: start those first so no thread idles at the end.
        order = sorted(range(len(jobs)), key=lambda j: -jobs[j][1])
        with ThreadPoolExecutor(workers) as pool:
            fitted = dict(zip(order, pool.map(fit, [jobs[j] for j in order])))
        for j, (fold, k, index, _, _, s) in enumerate(jobs):
            centroids, theta, _ = fitted[j]
            test = folds[fold][1]
            score = mean_log_likelihood(Xl[test], Tl[test], wl[test], centroids, theta, s)
            proba = component_responsibilities(Xl[test], centroids, s) \
                @ softmax_columns(theta).T
            scores.setdefault((k, index), []).append((score, s))
            missed.setdefault((k, index), []).append(_misses(proba, Tl[test]))
        weights = [wl[test] for _, test in folds]
        best, best_score = None, -np.inf
        for (k, index), values in scores.items():
            mean = float(np.mean([v for v, _ in values]))
            self.validation_scores_.append(dict(
                n_components=k, sigma=float(np.mean([s for _, s in values])),
                validation_log_likelihood=mean,
                validation_error=_mean_error(missed[k, index], weights)))
            if mean > best_score:
                best, best_score = (k, index), mean
        self.validation_error_ = _mean_error(missed[best], weights)
        self.knn_validation_error_ = _mean_error(missed["knn"], weights)
        metric_missed, knn_missed, w = (np.concatenate(a) for a in
                                        (missed[best], missed["knn"], weights))
        self.validation_disagreements_ = (float(w @ (metric_missed & ~knn_missed)),
                                          float(w @ (knn_missed & ~metric_missed)))
        return best

    # -- the model -----------------------------------------------------------------
    def _check_X(self, X):
        from sklearn.utils.validation import validate_data
        check_is_fitted(self, "centroids_")
        check_new_data(X)
        return np.ascontiguousarray(validate_data(self, X, dtype=np.float64, reset=False))

    def predict_proba(self, X):
        """The fitted class posteriors p(c | x), shape (n_samples, n_classes)."""
        X = self._check_X(X)
        return component_responsibilities(X, self.centroids_, self.sigma_) @ self.beta_.T

    def predict(self, X):
        """The most probable class of each point."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def fisher_information(self, X):
        """J(x) for every row of ``X``, shape (n_samples, n_features, n_features).

        Symmetric positive semi-definite, of rank at most n_classes - 1.
        """
        X = self._check_X(X)
        r = component_responsibilities(X, self.centroids_, self.sigma_)      # (n, K)
        weighted = r[:, None, :] * self.beta_[None, :, :]                      # (n, C, K)
        p = weighted.sum(axis=2)                                               # (n, C)
        rc = weighted / np.maximum(p, 1e-300)[:, :, None]
        scores = (rc @ self.centroids_ - (r @ self.centroids_)[:, None, :]) / self.sigma_ ** 2
        return np.einsum("nc,ncd,nce->nde", p, scores, scores)

    def pairwise_distances(self, X, Y=None):
        """Learning-metric distances between the rows of ``X`` (and ``Y``).

        Parameters
        ----------
        X : array-like (n_samples_X, n_features)
        Y : array-like (n_samples_Y, n_features), optional
            Defaults to ``X``: a symmetric matrix with a zero diagonal.

        Returns
        -------
        ndarray (n_samples_X, n_samples_Y)

        Raises
        ------
        ValueError
            For ``shortest_paths=True`` with a separate ``Y``.
        """
        X = self._check_X(X)
        same = Y is None
        Y = X if same else self._check_X(Y)
        if self.shortest_paths and not same:
            raise ValueError("shortest_paths=True needs all points in one graph: call "
                             "pairwise_distances(X) without Y.")
        # The largest arrays are the (n_X, n_Y) distances and inner products.
        check_allocation(8 * X.shape[0] * Y.shape[0],
                         what=f"Learning-metric distances between {X.shape[0]} and "
                              f"{Y.shape[0]} points",
                         array=f"a {X.shape[0]} x {Y.shape[0]} array",
                         alternative="Compute them a block of rows of X at a time")
        n_pieces = check_number(self.n_pieces, "n_pieces", low=1, integer=True)
        m = self.centroids_
        m_sq = np.einsum("ij,ij->i", m, m)

        def parts(Z):
            z_sq = np.einsum("ij,ij->i", Z, Z)
            H = np.ascontiguousarray(Z @ m.T)
            A = np.maximum(z_sq[:, None] - 2.0 * H + m_sq[None, :], 0.0)
            return A, H, z_sq

        A1, H1, n1 = parts(X)
        A2, H2, n2 = (A1, H1, n1) if same else parts(Y)
        G = np.ascontiguousarray(X @ Y.T)
        out = np.empty((X.shape[0], Y.shape[0]))
        with _config.KERNEL_LOCK:
            straight_path_distances(A1, H1, n1, A2, H2, n2, G,
                                    np.ascontiguousarray(self.beta_), float(self.sigma_),
                                    n_pieces, same, out)
        if same and self.shortest_paths:
            out = csgraph.shortest_path(out, method="D", directed=False)
        return out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = False
        return tags
