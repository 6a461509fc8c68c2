"""nbembed: semi-supervised non-linear embedding for JupyterLab.

Estimators follow the scikit-learn API and expose a resumable run protocol
(``prepare`` / ``step`` / ``set_params``) for interactive use. The estimators
exported here are those of :data:`nbembed.methods.registry.REGISTRY`.

Every name is imported on first use: ``import nbembed.plotting`` (which the
Jupyter server extension does when the server starts) or ``nbembed --help``
then load neither Numba nor the estimators.
"""

import importlib

__version__ = "0.1.0.dev0"

#: The registry's estimators, in its order (tests/test_estimator_api.py checks
#: that the two lists agree).
ESTIMATOR_NAMES = ("HSSNE", "SNE", "Mbed", "NeRV", "SNeRV", "ParametricEmbedding",
                   "SpectralSSDR", "SSLFDA", "SSDNE", "SSMFA", "LPP", "LFDA", "DNE", "MFA",
                   "SELF", "PCA", "LearningMetric")
#: Other public names and the modules that define them.
_DEFINED_IN = {"Explorer": ".widget", "Annotations": ".annotations", "ProgressBar": ".optim",
               "Snapshots": ".optim", "EarlyStopping": ".optim"}

__all__ = ["Explorer", *ESTIMATOR_NAMES, "Annotations", "ProgressBar", "Snapshots",
           "EarlyStopping", "__version__"]


def __getattr__(name):
    if name in ESTIMATOR_NAMES:
        from .methods.registry import REGISTRY
        globals().update({spec.class_name: spec.cls for spec in REGISTRY})
        return globals()[name]
    if name in _DEFINED_IN:
        # the widget needs the optional ``widget`` extra: only imported when asked
        value = getattr(importlib.import_module(_DEFINED_IN[name], __name__), name)
        globals()[name] = value
        return value
    # The AnnData functions import anndata only when called; the module itself
    # is loaded on first use, like ``scanpy.tl``.
    if name == "tl":
        return importlib.import_module(".tl", __name__)
    raise AttributeError(f"module 'nbembed' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__) | {"tl"})
