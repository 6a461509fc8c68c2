"""Resumable optimization runs: state, schedules, optimizers and callbacks."""

from .callbacks import EarlyStopping, ProgressBar, Snapshots
from .optimizers import FixedPoint, MomentumGains
from .protocol import ANNOTATION_KINDS, Run
from .run import EmbeddingRun, LiveParameter

__all__ = ["Run", "ANNOTATION_KINDS", "EmbeddingRun", "LiveParameter", "MomentumGains", "FixedPoint", "ProgressBar",
           "Snapshots", "EarlyStopping"]
