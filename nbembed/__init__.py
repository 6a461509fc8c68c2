"""nbembed: semi-supervised non-linear embedding for JupyterLab.

Estimators follow the scikit-learn API and expose a resumable run protocol
(``prepare`` / ``step`` / ``set_params``) for interactive use.
"""

from .annotations import Annotations
from .affinity import LearningMetric
from .methods import (DNE, HSSNE, LFDA, LPP, MFA, PCA, SELF, SNE, SSDNE, SSLFDA, SSMFA, Mbed,
                      NeRV, ParametricEmbedding, SNeRV, SpectralSSDR)
from .optim import EarlyStopping, ProgressBar, Snapshots

__version__ = "0.1.0.dev0"


def __getattr__(name):
    # The widget needs the optional ``widget`` extra; import it only when asked.
    if name == "Explorer":
        from .widget import Explorer
        return Explorer
    raise AttributeError(f"module 'nbembed' has no attribute {name!r}")


__all__ = ["Explorer", "HSSNE", "SNE", "Mbed", "NeRV", "SNeRV", "LearningMetric",
           "ParametricEmbedding", "SpectralSSDR", "SSLFDA", "SSDNE", "SSMFA", "LPP", "LFDA",
           "DNE", "MFA", "SELF", "PCA", "Annotations",
           "ProgressBar", "Snapshots", "EarlyStopping", "__version__"]
