"""Class posteriors p(c_k | x_n): the input of Parametric Embedding.

Checks for posterior matrices and priors, and helpers that turn data into
posteriors, so a picture is one line away::

    ParametricEmbedding().fit_transform(soft_nearest_neighbor_posteriors(X, y))

- :func:`soft_nearest_neighbor_posteriors` -- the soft nearest-neighbour class
  mixture of Iwata et al. (2007, Appendix D) from a few labelled points per
  class: each labelled point carries a Gaussian with the covariance of the whole
  data set; unlabelled points (``y == -1``) shape that covariance.
- :func:`naive_bayes_posteriors` -- multinomial naive Bayes on counts (Appendix C).
- :func:`classifier_posteriors` -- ``predict_proba`` of any fitted scikit-learn
  classifier.
- :func:`annotation_posteriors` -- soft labels and confidences from
  :class:`~nbembed.Annotations`, blended into other posteriors.

:func:`posterior_divergences` gives the pairwise KL divergences of posteriors,
the input with which methods that embed objects alone (SNE, t-SNE, Isomap)
are compared with Parametric Embedding.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp

from ._validation import check_data, check_labels, check_number

__all__ = ["check_posteriors", "check_priors", "soft_nearest_neighbor_posteriors",
           "naive_bayes_posteriors", "classifier_posteriors", "annotation_posteriors",
           "posterior_divergences"]

#: Largest accepted deviation of a row sum (or the priors' sum) from 1.
SUM_TOLERANCE = 1e-6

#: Rows of squared distances held at once by the soft nearest-neighbour helper.
_ROWS_PER_CHUNK = 4096


def check_posteriors(P, *, name="P", normalize=False, min_classes=2):
    """Validate a matrix of class posteriors and return it as float64.

    Parameters
    ----------
    P : array-like (n_samples, n_classes)
        Non-negative entries; every row sums to 1.
    name : str
        Used in error messages.
    normalize : bool, default=False
        Divide each row by its sum instead of requiring the sums to be 1
        (entries must still be non-negative); a row of zeros, which carries
        no evidence, becomes uniform.
    min_classes : int, default=2
        Fewest columns accepted.

    Returns
    -------
    ndarray of float64, shape (n_samples, n_classes)
        C-contiguous; a new array whenever it differs from the input.

    Raises
    ------
    ValueError
        For non-2-D, empty or non-finite input, negative entries, fewer than
        ``min_classes`` columns, or rows whose sum is not 1.
    """
    P = check_data(P, name=name)
    n, K = P.shape
    if K < min_classes:
        raise ValueError(f"{name} has {K} feature(s) (classes) but at least {min_classes} "
                         f"classes are needed: each row is a distribution over classes, one "
                         f"column per class.")
    if np.any(P < 0):
        i, k = np.argwhere(P < 0)[0]
        raise ValueError(f"Negative values in data passed to {name}: {name}[{i}, {k}] = "
                         f"{P[i, k]:g}. Class posteriors must be non-negative.")
    sums = P.sum(axis=1)
    if normalize:
        empty = sums <= 0
        P = P / np.where(empty, 1.0, sums)[:, None]
        P[empty] = 1.0 / K
        return P
    bad = np.abs(sums - 1.0) > SUM_TOLERANCE
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"Rows of {name} must sum to 1 (class posteriors); row {i} sums to "
                         f"{sums[i]:.6g} ({np.count_nonzero(bad)} row(s) off by more than "
                         f"{SUM_TOLERANCE:g}). Divide each row by its sum, or pass "
                         f"normalize=True.")
    return P


def check_priors(priors, n_classes, *, name="priors"):
    """Validate class priors: ``n_classes`` positive numbers summing to 1.

    ``None`` means equal priors.

    Returns
    -------
    ndarray of float64, shape (n_classes,)
    """
    if priors is None:
        return np.full(n_classes, 1.0 / n_classes)
    priors = np.asarray(priors, dtype=np.float64)
    if priors.shape != (n_classes,):
        raise ValueError(f"{name} must have one entry per class, shape ({n_classes},); got "
                         f"shape {priors.shape}.")
    if not np.all(np.isfinite(priors)) or np.any(priors <= 0):
        raise ValueError(f"{name} must be positive and finite (a class with prior 0 could "
                         f"never be a posterior's class); got {priors}.")
    if abs(priors.sum() - 1.0) > SUM_TOLERANCE:
        raise ValueError(f"{name} must sum to 1 (a distribution over classes); they sum to "
                         f"{priors.sum():.6g}. Divide them by their sum.")
    return priors / priors.sum()


def _labelled_classes(y, n_samples, *, min_per_class=1):
    y = check_labels(y, n_samples)
    classes = np.unique(y[y >= 0])
    if classes.size < 2:
        raise ValueError(f"y must label points of at least 2 classes (-1 for unlabelled); "
                         f"got {classes.size} class(es).")
    counts = np.array([np.count_nonzero(y == c) for c in classes])
    if counts.min() < min_per_class:
        raise ValueError(f"every class needs at least {min_per_class} labelled points; class "
                         f"{classes[np.argmin(counts)]} has {counts.min()}.")
    return y, classes


def _whitening(X, reg):
    """A matrix W with |(x - x') W|^2 the Mahalanobis distance under the
    data covariance plus ``reg`` times its mean variance on the diagonal."""
    cov = np.atleast_2d(np.cov(X, rowvar=False))
    vals, vecs = np.linalg.eigh(cov)
    floor = reg * max(float(np.trace(cov)) / cov.shape[0], np.finfo(float).tiny)
    return vecs / np.sqrt(np.maximum(vals, 0.0) + floor)


def soft_nearest_neighbor_posteriors(X, y, *, bandwidth=1.0, priors=None, reg=1e-3):
    """Posteriors of the soft nearest-neighbour class mixture (semi-supervised).

    Each class is a mixture of Gaussians centred on its labelled points with
    the covariance of the entire data set (Iwata et al., 2007, Appendix D):

    .. math::

        p(x | c_k) = \\frac{1}{|C_k|} \\sum_{m \\in C_k}
        \\exp\\left(-\\frac{(x - x_m)^T \\Sigma^{-1} (x - x_m)}{2 h^2}\\right),
        \\qquad p(c_k | x) \\propto p(c_k) \\, p(x | c_k).

    Parameters
    ----------
    X : array-like (n_samples, n_features)
        All points, labelled or not; all of them enter the covariance.
    y : array-like of int (n_samples,)
        Class of each labelled point, -1 for unlabelled points.
    bandwidth : float, default=1.0
        h above: scales the covariance (1 is the paper's classifier; larger
        values give softer posteriors).
    priors : array-like (n_classes,), optional
        Class priors; equal by default.
    reg : float, default=1e-3
        Added to the covariance's eigenvalues, as a fraction of the mean
        variance, so directions without variance (constant pixels) do not
        dominate the distances.

    Returns
    -------
    ndarray (n_samples, n_classes)
        Rows sum to 1; columns follow the sorted distinct labels of ``y``.

    Raises
    ------
    ValueError
        For invalid ``X`` or ``y``, fewer than 2 labelled classes, or invalid
        ``bandwidth``, ``reg`` or ``priors``.

    References
    ----------
    T. Iwata, K. Saito, N. Ueda, S. Stromsten, T. L. Griffiths, J. B. Tenenbaum.
    Parametric embedding for class visualization. Neural Computation 19, 2007.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9], [2.0, 2.1]])
    >>> P = soft_nearest_neighbor_posteriors(X, [0, -1, 1, -1, -1])
    >>> P.argmax(axis=1)
    array([0, 0, 1, 1, 1])
    """
    X = check_data(X, name="X")
    y, classes = _labelled_classes(y, X.shape[0])
    bandwidth = check_number(bandwidth, "bandwidth", low=0, low_open=True)
    reg = check_number(reg, "reg", low=0)
    log_prior = np.log(check_priors(priors, classes.size))
    W = _whitening(X, reg) / bandwidth
    Z = (X - X.mean(axis=0)) @ W
    labelled = np.flatnonzero(y >= 0)
    centres = Z[labelled]
    members = [np.flatnonzero(y[labelled] == c) for c in classes]
    log_size = np.log([m.size for m in members])
    out = np.empty((X.shape[0], classes.size))
    centre_sq = np.sum(centres ** 2, axis=1)
    for start in range(0, X.shape[0], _ROWS_PER_CHUNK):
        rows = Z[start:start + _ROWS_PER_CHUNK]
        sq = np.sum(rows ** 2, axis=1)[:, None] + centre_sq[None, :] - 2.0 * rows @ centres.T
        log_kernel = -0.5 * np.maximum(sq, 0.0)
        log_joint = np.column_stack([logsumexp(log_kernel[:, m], axis=1) for m in members])
        log_joint += log_prior - log_size
        out[start:start + rows.shape[0]] = np.exp(
            log_joint - logsumexp(log_joint, axis=1, keepdims=True))
    return out


def naive_bayes_posteriors(X, y, *, alpha=1.0, fit_prior=True, return_priors=False):
    """Multinomial naive Bayes posteriors from counts (Iwata et al., Appendix C).

    Fits :class:`sklearn.naive_bayes.MultinomialNB` on the labelled rows and
    returns its posteriors for all rows.

    Parameters
    ----------
    X : array-like or sparse matrix (n_samples, n_features)
        Non-negative counts (a bag of words per row).
    y : array-like of int (n_samples,)
        Class of each labelled row, -1 for unlabelled rows.
    alpha : float or "cv", default=1.0
        Additive smoothing of the word probabilities (the paper's lambda).
        "cv" picks it from 1e-3..10 by cross-validated log-likelihood on the
        labelled rows (the paper used leave-one-out).
    fit_prior : bool, default=True
        Learn class priors from the labelled rows (else equal priors).
    return_priors : bool, default=False
        Also return the class priors, to pass to
        :meth:`~nbembed.ParametricEmbedding.fit` as ``priors``.

    Returns
    -------
    P : ndarray (n_samples, n_classes)
        Columns follow the sorted distinct labels of ``y``.
    priors : ndarray (n_classes,)
        Only with ``return_priors=True``.

    Examples
    --------
    >>> counts = [[5, 0, 1], [4, 1, 0], [0, 6, 1], [1, 5, 0], [2, 2, 1]]
    >>> P = naive_bayes_posteriors(counts, [0, 0, 1, 1, -1])
    >>> P.shape, bool(P[0, 0] > 0.9), bool(P[2, 1] > 0.9)
    ((5, 2), True, True)
    """
    from sklearn.model_selection import GridSearchCV
    from sklearn.naive_bayes import MultinomialNB

    X = check_data(X, name="X", allow_sparse=True)
    values = X.data if sp.issparse(X) else X
    if np.any(values < 0):
        raise ValueError("X must hold non-negative counts for multinomial naive Bayes.")
    y, classes = _labelled_classes(y, X.shape[0], min_per_class=2 if alpha == "cv" else 1)
    labelled = np.flatnonzero(y >= 0)
    if isinstance(alpha, str):
        if alpha != "cv":
            raise ValueError(f"alpha must be a positive number or 'cv'; got {alpha!r}.")
        folds = int(min(5, min(np.count_nonzero(y == c) for c in classes)))
        search = GridSearchCV(MultinomialNB(fit_prior=fit_prior),
                              {"alpha": np.logspace(-3, 1, 9)}, scoring="neg_log_loss",
                              cv=folds)
        model = search.fit(X[labelled], y[labelled]).best_estimator_
    else:
        alpha = check_number(alpha, "alpha", low=0, low_open=True)
        model = MultinomialNB(alpha=alpha, fit_prior=fit_prior).fit(X[labelled], y[labelled])
    P = model.predict_proba(X)
    if return_priors:
        return P, np.exp(model.class_log_prior_)
    return P


def classifier_posteriors(classifier, X):
    """``classifier.predict_proba(X)`` checked to be usable as posteriors.

    Parameters
    ----------
    classifier : fitted scikit-learn classifier
        Anything with ``predict_proba``.
    X : array-like (n_samples, n_features)
        Points to classify.

    Returns
    -------
    ndarray (n_samples, n_classes)
        Columns follow ``classifier.classes_``.

    Raises
    ------
    TypeError
        If the classifier has no ``predict_proba``.
    sklearn.exceptions.NotFittedError
        If it is not fitted.
    ValueError
        If its output is not a valid posterior matrix.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.linear_model import LogisticRegression
    >>> X, y = load_iris(return_X_y=True)
    >>> classifier_posteriors(LogisticRegression(max_iter=500).fit(X, y), X).shape
    (150, 3)
    """
    from sklearn.utils.validation import check_is_fitted

    if not hasattr(classifier, "predict_proba"):
        raise TypeError(f"{type(classifier).__name__} has no predict_proba; use a "
                        f"probabilistic classifier (or wrap it in "
                        f"sklearn.calibration.CalibratedClassifierCV).")
    check_is_fitted(classifier)
    P = np.asarray(classifier.predict_proba(X), dtype=np.float64)
    # Some classifiers return tiny negative values from rounding.
    P = np.clip(P, 0.0, None)
    return check_posteriors(P, name="predict_proba output", normalize=True)


def annotation_posteriors(annotations, base=None, *, n_classes=None):
    """Posteriors from an :class:`~nbembed.Annotations` object's soft labels.

    A labelled point with probability vector T and confidence c gets
    ``c T + (1 - c) base``; unlabelled points keep ``base``.

    Parameters
    ----------
    annotations : Annotations
    base : array-like (n_samples, n_classes), optional
        Posteriors to blend into (say a classifier's); equal probabilities by
        default. Its classes are the annotations' classes, in the same order,
        possibly followed by more.
    n_classes : int, optional
        Number of classes when ``base`` is not given; defaults to the
        annotations' number of classes.

    Returns
    -------
    ndarray (n_samples, n_classes)

    Raises
    ------
    ValueError
        If the sizes disagree or the annotations have more classes than
        ``base`` or ``n_classes``.

    Examples
    --------
    >>> from nbembed import Annotations
    >>> ann = Annotations(3, n_classes=2)
    >>> ann.set_labels([0], 1, confidence=0.5)
    >>> annotation_posteriors(ann)
    array([[0.25, 0.75],
           [0.5 , 0.5 ],
           [0.5 , 0.5 ]])
    """
    soft = annotations.soft_label_matrix()
    confidence = annotations.confidences()
    n, K_ann = soft.shape
    if base is None:
        K = K_ann if n_classes is None else check_number(n_classes, "n_classes", low=2,
                                                           integer=True)
        if K < 2:
            raise ValueError(f"posteriors need at least 2 classes; the annotations have "
                             f"{K_ann}. Pass n_classes or base.")
        base = np.full((n, K), 1.0 / K)
    else:
        base = check_posteriors(base, name="base")
        if base.shape[0] != n:
            raise ValueError(f"base has {base.shape[0]} rows but the annotations are for "
                             f"{n} samples.")
    K = base.shape[1]
    if K_ann > K:
        raise ValueError(f"the annotations have {K_ann} classes but the posteriors only {K}; "
                         f"annotation classes must be the first columns of the posteriors.")
    labels = np.zeros((n, K))
    labels[:, :K_ann] = soft
    c = confidence[:, None]
    return c * labels + (1.0 - c) * base


def posterior_divergences(P, *, eps=1e-10):
    """Pairwise KL divergences KL(p_i || p_j) between rows of posteriors.

    Parameters
    ----------
    P : array-like (n_samples, n_classes)
        Posteriors (rows sum to one).
    eps : float, default=1e-10
        Added to every probability (rows renormalized) so that a zero in p_j
        gives a large finite divergence instead of infinity.

    Returns
    -------
    ndarray (n_samples, n_samples)
        Non-negative, zero on the diagonal; not symmetric. Its square root is
        the input with which Iwata et al. compare SNE with Parametric
        Embedding (squared again inside SNE's Gaussian).

    Examples
    --------
    >>> P = np.array([[0.9, 0.1], [0.5, 0.5]])
    >>> np.round(posterior_divergences(P), 3)
    array([[0.   , 0.368],
           [0.511, 0.   ]])
    """
    P = check_posteriors(np.asarray(P, dtype=np.float64))
    Q = P + check_number(eps, "eps", low=0)
    Q /= Q.sum(axis=1, keepdims=True)
    L = np.log(Q)
    D = np.sum(Q * L, axis=1)[:, None] - Q @ L.T
    np.fill_diagonal(D, 0.0)
    return np.maximum(D, 0.0)
