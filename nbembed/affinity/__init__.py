"""Input-space neighbourhoods: perplexity-calibrated affinities and constraints."""

from .constraints import mix_must_links, must_link_matrix, must_links_from
from .learning_metric import LearningMetric
from .perplexity import conditional_probabilities, joint_probabilities

__all__ = ["conditional_probabilities", "joint_probabilities", "must_link_matrix",
           "must_links_from", "mix_must_links", "LearningMetric"]
