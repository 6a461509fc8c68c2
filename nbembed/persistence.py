"""Saving fitted estimators: pickle, joblib and skops.

Every estimator nbembed exports pickles as it is, fitted or not, and so saves
with ``pickle`` and ``joblib.dump``; after loading, ``transform`` (and
``predict_proba`` where there is one) gives the same numbers, bit for bit, as
before saving. A fitted estimator holds NumPy arrays, SciPy sparse matrices and
a few small objects of nbembed's own (what ``transform`` places new points
with, the timings of the fit), never a compiled kernel, a lock or a thread: the
Numba kernels are looked up again on first use.

Loading a pickle runs whatever code the file names, so open only files you
trust. The ``skops`` format (``pip install nbembed[skops]``) loads only the
types it is told to trust; nbembed's types are not among those it trusts by
default. :func:`trusted_types` names them::

    import skops.io
    from nbembed.persistence import trusted_types

    skops.io.dump(estimator, "map.skops")
    estimator = skops.io.load("map.skops", trusted=trusted_types())

See docs/saving.md.
"""

from __future__ import annotations

from .affinity.learning_metric import LearningMetric
from .fitted_map import FittedMap, ProjectionMap, _RowByRowPlacement
from .methods._new_points import NewPoints
from .methods.nerv_run import SupervisedDistances
from .methods.registry import REGISTRY
from .optim.timings import FitTimings
from .spectral.kpca import KernelPCAMap

#: The objects a fitted estimator holds besides arrays: what ``transform`` places
#: new points with (and SNeRV's learned distances for it), the timings of a fit,
#: the kernel PCA map of a kernelized spectral method and SNeRV's fitted metric;
#: and the fitted maps (:func:`nbembed.fitted_map.fitted_map`) with their placement.
_FITTED_PARTS = (NewPoints, SupervisedDistances, FitTimings, KernelPCAMap, LearningMetric,
                 FittedMap, ProjectionMap, _RowByRowPlacement)


def _sparse_types():
    """The SciPy sparse classes fitted estimators hold: CSR (a kNN P in
    ``affinities_``, sparse training data kept for ``transform``)."""
    import scipy.sparse as sp
    return (sp.csr_matrix,)


def _qualified_name(cls):
    """The name skops gives a type: its module and qualified name."""
    return f"{cls.__module__}.{cls.__qualname__}"


def trusted_types():
    """The types a saved nbembed estimator may hold that skops does not trust by default.

    Pass the list as ``trusted`` to ``skops.io.load`` or
    ``skops.io.loads`` to load any nbembed estimator, fitted or not. It
    names every estimator class nbembed exports, the objects their fitted
    attributes hold, :class:`~nbembed.fitted_map.FittedMap`, and SciPy's CSR
    matrix (skops trusts only the base ``spmatrix`` by default), which holds
    arrays only.

    Returns
    -------
    list of str
        Fully qualified type names, sorted, as
        ``skops.io.get_untrusted_types`` reports them.

    Examples
    --------
    >>> from nbembed.persistence import trusted_types
    >>> "nbembed.methods.hssne.HSSNE" in trusted_types()
    True
    >>> import skops.io                                          # doctest: +SKIP
    >>> skops.io.dump(model, "map.skops")                        # doctest: +SKIP
    >>> model = skops.io.load("map.skops", trusted=trusted_types())  # doctest: +SKIP
    """
    classes = {spec.cls for spec in REGISTRY} | set(_FITTED_PARTS) | set(_sparse_types())
    return sorted(_qualified_name(cls) for cls in classes)
