"""The costs of the gradient-based methods, apart from how they are optimized.

Each objective evaluates one method's cost and gradient at variables the run
passes in (see :class:`~nbembed.objectives.base.Objective`); optimizers in
:mod:`nbembed.optim` move the variables, and a run ties the two together.
"""

from .base import Objective
from .hssne import HSSNEObjective
from .mbed import MbedObjective
from .nerv import NeRVObjective
from .parametric import ParametricObjective
from .sne import SNEObjective

__all__ = ["Objective", "HSSNEObjective", "SNEObjective", "MbedObjective", "NeRVObjective",
           "ParametricObjective"]
