"""Resumable optimization runs: state, schedules, optimizers and callbacks."""

from .callbacks import EarlyStopping, ProgressBar, Snapshots
from .descent import LineSearchDescent
from .directions import LBFGS, PolakRibiere
from .line_search import WolfeSettings, strong_wolfe
from .optimizers import FixedPoint, MomentumGains
from .protocol import ANNOTATION_KINDS, Run
from .run import EmbeddingRun, LiveParameter

__all__ = ["Run", "ANNOTATION_KINDS", "EmbeddingRun", "LiveParameter", "MomentumGains", "FixedPoint", "ProgressBar",
           "Snapshots", "EarlyStopping", "LineSearchDescent", "LBFGS", "PolakRibiere",
           "WolfeSettings", "strong_wolfe"]
