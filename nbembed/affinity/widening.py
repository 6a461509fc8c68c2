"""Wider neighbourhoods for NeRV's start: the same calibration at more neighbours.

NeRV's run begins with broad neighbourhoods that arrange the global layout
and narrows them in stages (docs/nerv.md). Each stage is calibrated like the
final neighbourhoods, every row to the same entropy, so dense and sparse
regions widen alike.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _config
from .._kernels import nerv as kernels
from .perplexity import calibrate


def widening_stages(sq_distances, n_neighbors, n_start):
    """Precisions of the widening stages: effective neighbours halving from n_start.

    Returns a list of (effective neighbours, beta) from the widest stage on;
    empty when n_start is not clearly above n_neighbors.
    """
    stages = []
    k = float(n_start)
    while k > 1.5 * n_neighbors:
        _, beta = calibrate(sq_distances, k, skip_diagonal=True)
        stages.append((k, beta))
        k /= 2.0
    return stages


def widened_neighbourhoods(sq_distances, beta):
    """P and its floored log for the precisions ``beta`` of a stage (n x n each)."""
    P = np.empty_like(sq_distances)
    logP = np.empty_like(sq_distances)
    with _config.KERNEL_LOCK:
        kernels.widened_neighbourhoods(sq_distances, beta, 1.0, math.log(kernels.P_FLOOR), P,
                                       logP)
    return P, logP
