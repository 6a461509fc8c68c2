"""The momentum-and-gains update of t-SNE's optimizer in one pass over the points.

Written with NumPy the update takes a dozen whole-array operations and as many
temporary arrays; at 10^6 points those cost about 0.1 s an iteration, more
than the grid's repulsion. Here each point is updated in place, in parallel.
"""

import math

from numba import njit, prange

from .._config import JIT_PARALLEL


@njit(**JIT_PARALLEL)
def momentum_gains_step(Yt, grad, velocity, gains, momentum, learning_rate, min_gain,
                        max_step_norm):
    """One step of gradient descent with momentum and per-coordinate gains, in place.

    For every coordinate: the gain shrinks by the factor 0.8 when the gradient
    has the sign of the last step and grows by 0.2 otherwise (at least
    ``min_gain``); velocity = momentum * velocity - learning_rate * gain * grad.
    A point whose velocity is longer than ``max_step_norm`` (no limit when it is
    not positive) has it shortened to that length; then Yt += velocity. A
    length whose square overflows is measured with the largest coordinate
    factored out, so a huge step is shortened too rather than dropped; an
    infinite velocity gives a non-finite embedding, which the run recovers from.
    ``Yt``, ``grad``, ``velocity`` and ``gains`` have the layout (d, n).
    Returns the number of points whose step was shortened.
    """
    d, n = Yt.shape
    shortened = 0
    for i in prange(n):
        norm2 = 0.0
        for k in range(d):
            g = grad[k, i]
            v = velocity[k, i]
            same_sign = ((g > 0.0) - (g < 0.0)) == ((v > 0.0) - (v < 0.0))
            gain = gains[k, i] * 0.8 if same_sign else gains[k, i] + 0.2
            gain = max(gain, min_gain)
            gains[k, i] = gain
            velocity[k, i] = v * momentum - learning_rate * gain * g
        for k in range(d):  # a loop that stores nothing (see nbembed._kernels.reduction)
            norm2 += velocity[k, i] * velocity[k, i]
        scale = 1.0
        if max_step_norm > 0.0 and norm2 > max_step_norm * max_step_norm:
            shortened += 1
            if math.isinf(norm2):
                largest = 0.0
                for k in range(d):
                    largest = max(largest, abs(velocity[k, i]))
                ratio2 = 0.0
                for k in range(d):
                    ratio = velocity[k, i] / largest
                    ratio2 += ratio * ratio
                scale = (max_step_norm / largest) / math.sqrt(ratio2)
            else:
                scale = max_step_norm / math.sqrt(norm2)
        for k in range(d):
            velocity[k, i] *= scale
            Yt[k, i] += velocity[k, i]
    return shortened
