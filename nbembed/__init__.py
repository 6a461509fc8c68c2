"""nbembed: semi-supervised non-linear embedding for JupyterLab.

Estimators follow the scikit-learn API and expose a resumable run protocol
(``prepare`` / ``step`` / ``set_params``) for interactive use. The estimators
exported here are those of :data:`nbembed.methods.registry.REGISTRY`.
"""

from .annotations import Annotations
from .methods.registry import REGISTRY
from .optim import EarlyStopping, ProgressBar, Snapshots

__version__ = "0.1.0.dev0"

globals().update({spec.class_name: spec.cls for spec in REGISTRY})


def __getattr__(name):
    # The widget needs the optional ``widget`` extra; import it only when asked.
    if name == "Explorer":
        from .widget import Explorer
        return Explorer
    # The AnnData functions import anndata only when called; the module itself
    # is loaded on first use, like ``scanpy.tl``.
    if name == "tl":
        import importlib
        return importlib.import_module(".tl", __name__)
    raise AttributeError(f"module 'nbembed' has no attribute {name!r}")


__all__ = ["Explorer", *(spec.class_name for spec in REGISTRY), "Annotations",
           "ProgressBar", "Snapshots", "EarlyStopping", "__version__"]
