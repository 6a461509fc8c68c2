"""Estimators with the scikit-learn API, built on the run protocol."""

from .hssne import HSSNE, HSSNERun
from .mbed import Mbed, MbedRun
from .nerv import NeRV, NeRVRun, SNeRV, SNeRVRun
from .parametric import ParametricEmbedding, ParametricEmbeddingRun
from .sne import SNE, SNERun

__all__ = ["HSSNE", "HSSNERun", "SNE", "SNERun", "Mbed", "MbedRun", "NeRV", "NeRVRun", "SNeRV",
           "SNeRVRun", "ParametricEmbedding",
           "ParametricEmbeddingRun"]
