"""Estimators with the scikit-learn API, built on the run protocol."""

from .hssne import HSSNE, HSSNERun
from .parametric import ParametricEmbedding, ParametricEmbeddingRun
from .sne import SNE, SNERun

__all__ = ["HSSNE", "HSSNERun", "SNE", "SNERun", "ParametricEmbedding",
           "ParametricEmbeddingRun"]
