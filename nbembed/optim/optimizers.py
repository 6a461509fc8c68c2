"""Update rules that move an embedding given its gradient.

Both work on the transposed layout (d, n) used by the kernels and update it in
place.
"""

import numpy as np

from .._kernels.optimizer import momentum_gains_step


class MomentumGains:
    """Gradient descent with momentum and per-coordinate gains (t-SNE's optimizer).

    A gain grows by 0.2 while the gradient keeps its sign relative to the last
    update and shrinks by the factor 0.8 when it flips (Jacobs' delta-bar-delta
    as used by van der Maaten & Hinton, 2008).

    Parameters
    ----------
    shape : tuple
        Shape of the embedding being optimized.
    learning_rate : float
    min_gain : float
    max_step_norm : float or None
        Longest step a point may take in one iteration; longer steps are
        shortened to it (their direction kept). None: no limit.
    """

    def __init__(self, shape, learning_rate, min_gain=0.01, max_step_norm=None):
        self.learning_rate = float(learning_rate)
        self.min_gain = min_gain
        self.max_step_norm = max_step_norm
        self.velocity = np.zeros(shape)
        self.gains = np.ones(shape)
        self.point_steps = 0  # points moved, summed over the steps
        self.shortened = 0    # of those, the steps shortened to max_step_norm

    def reset(self):
        """Forget the velocity and the gains (after the objective changed)."""
        self.velocity[:] = 0.0
        self.gains[:] = 1.0

    def step(self, Yt, grad, momentum):
        """Move ``Yt`` in place by one momentum step (counted in ``point_steps`` and
        ``shortened``)."""
        self.shortened += momentum_gains_step(
            Yt, grad, self.velocity, self.gains, float(momentum), self.learning_rate,
            float(self.min_gain), 0.0 if self.max_step_norm is None else float(self.max_step_norm))
        self.point_steps += Yt.shape[1]


class FixedPoint:
    """The HSSNE fixed-point update (Yang et al., 2009, eq. 14), optionally accelerated.

    Eq. 14 sets each point to the solution of its stationarity condition with
    the other points held fixed; it equals a gradient step with the per-point
    step size 1 / (4 A_i), A_i = sum_j P_ij S_ij. Here it is written that way:

        step = -grad_i / (4 A_i),   velocity = momentum * velocity + relaxation * step.

    With ``momentum = 0`` and ``relaxation = 1`` this is exactly eq. 14 and
    has no parameters. Momentum accelerates it like heavy-ball gradient
    descent, with the gradient restart of O'Donoghue & Candes (2015): the
    velocity is dropped whenever the new gradient points along the last
    step, i.e. the step went uphill.

    Parameters
    ----------
    shape : tuple
    momentum : float
    relaxation : float
    """

    def __init__(self, shape, momentum=0.0, relaxation=1.0):
        self.momentum = float(momentum)
        self.relaxation = float(relaxation)
        self.velocity = np.zeros(shape)

    def reset(self):
        """Forget the velocity."""
        self.velocity[:] = 0.0

    def step(self, Yt, grad, a_rowsum, exaggeration=1.0):
        """Move ``Yt`` in place; ``a_rowsum`` are the A_i of the (exaggerated) P."""
        scale = 1.0 / (4.0 * exaggeration * np.maximum(a_rowsum, 1e-300))
        # An elementwise sum, not np.vdot: BLAS threads woken by vdot kept
        # spinning and halved the speed of the next Numba kernel on two cores.
        if np.sum(grad * self.velocity) > 0.0:
            self.velocity[:] = 0.0
        self.velocity *= self.momentum
        self.velocity -= self.relaxation * grad * scale
        Yt += self.velocity
