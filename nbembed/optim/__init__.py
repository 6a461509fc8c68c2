"""Resumable optimization runs: state, schedules, optimizers and callbacks."""

from .callbacks import EarlyStopping, ProgressBar, Snapshots
from .descent import LineSearchDescent
from .directions import LBFGS, PolakRibiere
from .line_search import WolfeSettings, strong_wolfe
from .optimizers import FixedPoint, MomentumGains
from .embedding_run import EmbeddingRun
from .live import LiveParameter
from .protocol import ANNOTATION_KINDS, Run
from .run import LineSearchRun, ObjectiveRun
from .schedules import EarlyExaggeration, LambdaAnnealing, Widening

__all__ = ["Run", "ANNOTATION_KINDS", "ObjectiveRun", "EmbeddingRun", "LineSearchRun",
           "LiveParameter", "EarlyExaggeration", "Widening", "LambdaAnnealing", "MomentumGains",
           "FixedPoint", "ProgressBar", "Snapshots", "EarlyStopping", "LineSearchDescent", "LBFGS",
           "PolakRibiere", "WolfeSettings", "strong_wolfe"]
