"""Search directions for line-search descent: L-BFGS and Polak-Ribiere+ conjugate gradients.

Both act on flat float64 arrays and keep what they learn from past steps
until ``reset()`` (the objective changed). A fresh object gives the
steepest descent direction -g.
"""

from __future__ import annotations

from collections import deque

import numpy as np


def dot(a, b):
    """a . b as an elementwise sum, without BLAS.

    BLAS may split a long sum over its threads (the result would depend on
    their number) and its threads keep spinning afterwards, slowing the
    Numba kernels that run next on a small machine.
    """
    return float(np.sum(a * b))


class LBFGS:
    """Limited-memory BFGS directions (Nocedal & Wright, 2006, Alg. 7.4).

    The direction is -H g, where H is the BFGS inverse-Hessian estimate built
    from the last ``memory`` steps s and gradient changes y, starting from
    (s.y / y.y) I for the newest pair.

    Parameters
    ----------
    memory : int
        Pairs (s, y) kept.
    """

    #: A pair is kept only if s.y > CURVATURE_FLOOR ‖s‖ ‖y‖: without positive
    #: curvature along s the estimate would lose positive definiteness.
    CURVATURE_FLOOR = 1e-12

    def __init__(self, memory=10):
        if int(memory) < 1:
            raise ValueError(f"memory must be at least 1; got {memory}.")
        self.memory = int(memory)
        self.pairs = deque(maxlen=self.memory)

    @property
    def fresh(self):
        """True when no curvature is known (the direction is -g)."""
        return not self.pairs

    def reset(self):
        """Forget all pairs."""
        self.pairs.clear()

    def direction(self, g):
        """-H g for the gradient ``g`` (a new array)."""
        q = np.array(g, dtype=np.float64, copy=True)
        alphas = []
        for s, y, rho in reversed(self.pairs):
            a = rho * dot(s, q)
            alphas.append(a)
            q -= a * y
        if self.pairs:
            s, y, _ = self.pairs[-1]
            q *= dot(s, y) / dot(y, y)
        for (s, y, rho), a in zip(self.pairs, reversed(alphas)):
            b = rho * dot(y, q)
            q += (a - b) * s
        q *= -1.0
        return q

    def update(self, step, g_old, g_new, direction):
        """Learn from an accepted step ``step`` = x_new - x_old."""
        y = g_new - g_old
        sy = dot(step, y)
        if sy > self.CURVATURE_FLOOR * np.sqrt(dot(step, step) * dot(y, y)):
            self.pairs.append((np.array(step, dtype=np.float64), y, 1.0 / sy))


class PolakRibiere:
    """Nonlinear conjugate gradients, Polak-Ribiere with the "+" restart.

    d = -g + beta d_old with beta = max(0, g.(g - g_old) / g_old.g_old)
    (Nocedal & Wright, 2006, eq. 5.45): a negative beta restarts from
    steepest descent.
    """

    def __init__(self):
        self.previous = None   # (gradient, direction) at the start of the last step

    @property
    def fresh(self):
        """True when there is no previous direction (the direction is -g)."""
        return self.previous is None

    def reset(self):
        """Forget the previous direction."""
        self.previous = None

    def direction(self, g):
        """The conjugate direction for the gradient ``g`` (a new array)."""
        if self.previous is None:
            return -np.asarray(g, dtype=np.float64)
        g_old, d_old = self.previous
        beta = max(0.0, dot(g, g - g_old) / dot(g_old, g_old))
        return beta * d_old - g

    def update(self, step, g_old, g_new, direction):
        """Remember the gradient and the direction of an accepted step."""
        self.previous = (g_old, direction)
