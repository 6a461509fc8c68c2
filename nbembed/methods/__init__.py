"""Estimators with the scikit-learn API, built on the run protocol."""

from .hssne import HSSNE
from .mbed import Mbed
from .mbed_run import MbedRun
from .nerv import NeRV, SNeRV
from .nerv_run import NeRVRun, SNeRVRun
from .parametric import ParametricEmbedding, ParametricEmbeddingRun
from .sne import SNE
from .spectral import SpectralSSDR
from .spectral_presets import DNE, LFDA, LPP, MFA, PCA, SELF, SSDNE, SSLFDA, SSMFA
from .spectral_run import SpectralRun

__all__ = ["HSSNE", "SNE", "Mbed", "MbedRun", "NeRV", "NeRVRun", "SNeRV",
           "SNeRVRun", "ParametricEmbedding",
           "ParametricEmbeddingRun", "SpectralSSDR", "SpectralRun", "SSLFDA", "SSDNE", "SSMFA",
           "LPP", "LFDA", "DNE", "MFA", "SELF", "PCA"]
