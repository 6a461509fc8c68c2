"""The class density behind the learning metric: a mixture of labelled Gaussians.

The conditional class density is

    p(c | x) = sum_k beta_ck g_k(x) / sum_k g_k(x),   g_k(x) = exp(-||x - m_k||^2 / 2 sigma^2),

with beta_ck = softmax_c(theta_ck). This module turns labels into the
mixture's targets, computes p(c | x), and gives the penalized conditional
log-likelihood (with its gradient) that
:class:`~nbembed.affinity.learning_metric.LearningMetric` maximizes; the
fitting itself is there.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_data

#: L2 penalty on the softmax parameters theta (per labelled point). It fixes
#: their free additive constant and keeps beta away from exact 0 and 1.
THETA_PENALTY = 1e-3

#: Penalty on the centroids' squared distance from the data mean, in units of
#: the data's total variance (per labelled point). Negligible for centroids
#: among the data; without it, on separable classes the centroids run off to
#: infinity and p(c | x) becomes a step that 10 pieces of a path can step over.
CENTROID_PENALTY = 1e-3


def labels_from(y=None, soft_labels=None, sample_weight=None, n_samples=None):
    """Targets for the mixture: soft label rows and per-point weights.

    Parameters
    ----------
    y : array-like (n_samples,), optional
        Class labels. For numeric labels -1 marks an unlabelled point; any
        other value is a class. Non-numeric labels (strings) are all classes.
    soft_labels : array-like (n_samples, n_classes), optional
        Probability rows; an all-zero row marks an unlabelled point. Used
        instead of ``y`` where a row is non-zero.
    sample_weight : array-like (n_samples,), optional
        Non-negative weight of each point in the likelihood (a label's
        confidence, say).
    n_samples : int

    Returns
    -------
    targets : ndarray (n_samples, n_classes)
        Rows sum to one for labelled points, zero for the others.
    weights : ndarray (n_samples,)
        Zero for unlabelled points.
    classes : ndarray (n_classes,)
        Class values (for ``y``) or 0 .. n_classes - 1.

    Raises
    ------
    ValueError
        If nothing is labelled, fewer than two classes are present, or the
        shapes do not match.
    """
    if y is None and soft_labels is None:
        raise ValueError("The learning metric requires y to be passed, but the target y is "
                         "None: pass class labels (-1 for unlabelled points) or soft_labels.")
    labelled = np.zeros(n_samples, dtype=bool)
    parts = []
    classes = None
    if y is not None:
        from sklearn.utils.multiclass import type_of_target
        from sklearn.utils.validation import column_or_1d
        y = column_or_1d(y, warn=True)
        if y.shape[0] != n_samples:
            raise ValueError(f"y must be 1-D with one label per sample ({n_samples}); got "
                             f"shape {y.shape}.")
        numeric = y.dtype.kind in "biuf"
        if numeric and not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or infinity; use -1 for unlabelled points.")
        kind = type_of_target(y)
        if kind.startswith("continuous"):
            raise ValueError(f"Unknown label type: {kind}. y must hold class labels (-1 for "
                             f"unlabelled points), not continuous values.")
        mask = y != -1 if numeric else np.ones(n_samples, dtype=bool)
        classes, codes = np.unique(y[mask], return_inverse=True)
        hard = np.zeros((n_samples, classes.size))
        hard[np.flatnonzero(mask), codes] = 1.0
        parts.append(hard)
        labelled |= mask
    if soft_labels is not None:
        soft = check_data(soft_labels, name="soft_labels")
        if soft.shape[0] != n_samples:
            raise ValueError(f"soft_labels must have one row per sample ({n_samples}); got "
                             f"{soft.shape[0]} rows.")
        if np.any(soft < 0):
            raise ValueError("soft_labels must be non-negative probabilities.")
        sums = soft.sum(axis=1)
        rows = sums > 0
        soft = np.where(rows[:, None], soft / np.where(rows, sums, 1.0)[:, None], 0.0)
        if parts:
            width = max(parts[0].shape[1], soft.shape[1])
            hard = np.pad(parts[0], ((0, 0), (0, width - parts[0].shape[1])))
            soft = np.pad(soft, ((0, 0), (0, width - soft.shape[1])))
            soft = np.where(rows[:, None], soft, hard)
            if width > classes.size:
                classes = np.arange(width)
        else:
            classes = np.arange(soft.shape[1])
        parts = [soft]
        labelled |= rows
    targets = parts[0]
    weights = labelled.astype(np.float64)
    if sample_weight is not None:
        sample_weight = np.asarray(sample_weight, dtype=np.float64)
        if sample_weight.shape != (n_samples,) or np.any(sample_weight < 0) or \
                not np.all(np.isfinite(sample_weight)):
            raise ValueError(f"sample_weight must be {n_samples} finite non-negative numbers.")
        weights *= sample_weight
        if not np.any(sample_weight > 0):
            raise ValueError("All sample weights are zero; at least two labelled points of "
                             "different classes need a positive weight.")
    present = np.flatnonzero((targets[weights > 0] > 0).any(axis=0))
    if not np.any(weights > 0):
        raise ValueError("No labelled points: the learning metric needs labels for at least "
                         "two classes (y = -1 marks unlabelled points).")
    if present.size < 2:
        raise ValueError(f"The labels contain a single class ({classes[present[0]]!r}); the "
                         f"learning metric measures changes of the class distribution and "
                         f"needs at least two classes.")
    return targets, weights, classes


def softmax_columns(theta):
    """The components' class probabilities beta: softmax of theta over the classes, per column."""
    beta = np.exp(theta - theta.max(axis=0, keepdims=True))
    return beta / beta.sum(axis=0, keepdims=True)


def component_responsibilities(X, centroids, sigma):
    """r_ik = g_k(x_i) / sum_l g_l(x_i), computed stably in the log domain."""
    sq = (np.einsum("ij,ij->i", X, X)[:, None] - 2.0 * X @ centroids.T
          + np.einsum("ij,ij->i", centroids, centroids)[None, :])
    logits = -np.maximum(sq, 0.0) / (2.0 * sigma * sigma)
    logits -= logits.max(axis=1, keepdims=True)
    r = np.exp(logits)
    return r / r.sum(axis=1, keepdims=True)


def mixture_objective(params, X, targets, weights, n_components, sigma, penalty=THETA_PENALTY,
                      centroid_penalty=CENTROID_PENALTY, center=None, spread=1.0):
    """Negative mean conditional log-likelihood, penalized, and its gradient.

    Parameters
    ----------
    params : ndarray
        The centroids (K x D, row-major) followed by theta (C x K).
    X : ndarray (n, D)
        Labelled points.
    targets : ndarray (n, C)
        Label rows summing to one.
    weights : ndarray (n,)
        Positive weights.
    n_components : int
    sigma : float
    penalty : float
        ``penalty / 2 * sum(theta^2)`` is added.
    centroid_penalty : float
        ``centroid_penalty / 2 * sum_k ||m_k - center||^2 / spread`` is added.
    center : ndarray (D,), optional
        Default: zeros.
    spread : float
        The data's total variance (sum over features).

    Returns
    -------
    f : float
        -sum_i w_i sum_c t_ic log p(c | x_i) / sum_i w_i plus the penalties.
    grad : ndarray
        df / dparams.
    """
    n, D = X.shape
    C = targets.shape[1]
    K = n_components
    centroids = params[:K * D].reshape(K, D)
    theta = params[K * D:].reshape(C, K)
    offset = centroids - (0.0 if center is None else center)
    beta = softmax_columns(theta)
    r = component_responsibilities(X, centroids, sigma)
    p = np.maximum(r @ beta.T, 1e-300)
    omega = weights[:, None] * targets / weights.sum()
    f = (-float(np.sum(omega * np.log(p))) + 0.5 * penalty * float(np.sum(theta * theta))
         + 0.5 * centroid_penalty * float(np.sum(offset * offset)) / spread)
    ratio = omega / p
    gamma = beta * (ratio.T @ r)                          # (C, K): sum_i omega_ic r^c_ik
    d_theta = gamma - beta * gamma.sum(axis=0, keepdims=True)
    a = r * (ratio @ beta - omega.sum(axis=1, keepdims=True))
    d_centroids = (a.T @ X - a.sum(axis=0)[:, None] * centroids) / (sigma * sigma)
    grad = -np.concatenate([d_centroids.ravel(), d_theta.ravel()])
    grad[:K * D] += centroid_penalty * offset.ravel() / spread
    grad[K * D:] += penalty * theta.ravel()
    return f, grad


def mean_log_likelihood(X, targets, weights, centroids, theta, sigma):
    """Mean weighted conditional log-likelihood of labelled points, without the penalties.

    sum_i w_i sum_c t_ic log p(c | x_i) / sum_i w_i, with p(c | x) from the
    centroids, theta and the width sigma.
    """
    p = component_responsibilities(X, centroids, sigma) @ softmax_columns(theta).T
    return float(np.sum(weights[:, None] * targets * np.log(np.maximum(p, 1e-300)))
                 / weights.sum())
