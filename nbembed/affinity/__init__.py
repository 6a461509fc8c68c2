"""Input-space neighbourhoods: every affinity, constraint and graph that a method
builds from the input points, from perplexity-calibrated P to the k-NN and label
graphs of the spectral framework."""

from .constraints import mix_must_links, must_link_matrix, must_link_share, must_links_from
from .learning_metric import LearningMetric
from .perplexity import conditional_probabilities, joint_probabilities

__all__ = ["conditional_probabilities", "joint_probabilities", "must_link_matrix",
           "must_links_from", "mix_must_links", "must_link_share", "LearningMetric"]
