"""How well an embedding reproduces class posteriors: prec(h) of Iwata et al. (2007)."""

from __future__ import annotations

import numpy as np

from ._validation import check_data, check_number

__all__ = ["posterior_precision"]


def posterior_precision(P, Y, class_positions=None, h=10):
    """prec(h): do the objects nearest each class have its highest posteriors?

    .. math::

        \\mathrm{prec}(h) = \\frac{1}{K} \\sum_k \\frac{1}{h}
        \\left| X_k^{high}(h) \\cap X_k^{close}(h) \\right|

    with :math:`X_k^{close}(h)` the h objects nearest the class position
    :math:`\\phi_k` in the embedding and :math:`X_k^{high}(h)` the h objects
    with the highest :math:`p(c_k | x_n)` (Iwata et al., 2007, eq. 12).
    Objects tied with the h-th highest posterior all count as high (posteriors
    of confident classifiers are often exactly 1, and which of the tied
    objects is "in the top h" is then arbitrary); without ties this is the
    paper's measure.

    Parameters
    ----------
    P : array-like (n_samples, n_classes)
        The input class posteriors p(c_k | x_n).
    Y : array-like (n_samples, n_components)
        Object positions in the embedding.
    class_positions : array-like (n_classes, n_components), optional
        Class positions phi_k. By default (for methods that embed only the
        objects, as in the paper's comparison) class k sits at the object
        with the highest p(c_k | x_n) (the first one on ties).
    h : int or array-like of int, default=10
        Neighbourhood size(s), 1 <= h <= n_samples.

    Returns
    -------
    float, or ndarray of float for several h
        In [0, 1]; higher is better.

    Raises
    ------
    ValueError
        When shapes disagree, inputs are not finite, or h is out of range.

    References
    ----------
    T. Iwata, K. Saito, N. Ueda, S. Stromsten, T. L. Griffiths, J. B. Tenenbaum.
    Parametric embedding for class visualization. Neural Computation 19, 2007.

    Examples
    --------
    >>> P = [[0.9, 0.1], [0.6, 0.4], [0.2, 0.8], [0.3, 0.7]]
    >>> Y = [[0.0], [1.0], [3.0], [2.0]]
    >>> posterior_precision(P, Y, class_positions=[[0.0], [3.0]], h=1)
    1.0
    >>> posterior_precision(P, Y, class_positions=[[0.0], [3.0]], h=[1, 2])
    array([1., 1.])
    """
    P = check_data(P, name="P")
    Y = check_data(Y, name="Y")
    n, K = P.shape
    if Y.shape[0] != n:
        raise ValueError(f"P has {n} rows but Y has {Y.shape[0]}; they must describe the "
                         f"same objects in the same order.")
    if class_positions is None:
        centres = Y[np.argmax(P, axis=0)]
    else:
        centres = check_data(class_positions, name="class_positions")
        if centres.shape != (K, Y.shape[1]):
            raise ValueError(f"class_positions must have shape (n_classes, n_components) = "
                             f"{(K, Y.shape[1])}; got {centres.shape}.")
    single = np.ndim(h) == 0
    hs = [check_number(v, "h", low=1, high=n, integer=True) for v in np.atleast_1d(h)]
    hits = np.zeros(len(hs))
    for k in range(K):
        dist = np.sum((Y - centres[k]) ** 2, axis=1)
        nearest = np.argsort(dist, kind="stable")
        ranked = np.sort(P[:, k])[::-1]
        for i, size in enumerate(hs):
            threshold = ranked[size - 1]
            hits[i] += np.count_nonzero(P[nearest[:size], k] >= threshold) / size
    result = hits / K
    return float(result[0]) if single else result
