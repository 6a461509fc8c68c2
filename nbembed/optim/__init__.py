"""Resumable optimization runs: state, schedules, optimizers and callbacks."""

from .callbacks import EarlyStopping, ProgressBar, Snapshots
from .optimizers import FixedPoint, MomentumGains
from .run import EmbeddingRun, LiveParameter

__all__ = ["EmbeddingRun", "LiveParameter", "MomentumGains", "FixedPoint", "ProgressBar",
           "Snapshots", "EarlyStopping"]
