"""The power kernel H = (1 + alpha tau)^(-1/alpha) from a table, for the tree walk.

The walk of the Barnes-Hut tree evaluates the kernel one cell at a time, with
a branch between evaluations, so nothing vectorizes and the long chain of the
exp-and-log kernel (:func:`.hssne.power_kernel`: a division, two polynomials of
degree 10 and 12) is paid in full: at alpha = 0.8 the walk took five times as
long as at alpha = 1. A table shortens that chain to a few multiplications.

With p = -1/alpha and w = 1 + alpha tau = 2^e m, m in [1, 2):

    w^p = (2^p)^e  c^p  (m / c)^p,

where c is the centre of the 1/256-wide interval of m that holds m (the top
``TABLE_BITS`` bits of the mantissa), so r = m / c - 1 is at most 2^-9 in
magnitude and (1 + r)^p is its binomial series to r^4. The truncation error is
about |binom(p, 5)| r^5 <= 2.8e-14 |binom(p, 5)|: 1.2e-9 at alpha = 0.05
(p = -20), the smallest alpha the Explorer's slider offers, and 1e-13 at
alpha = 0.5. Below ``TABULATED_MIN_ALPHA`` the series is not accurate enough,
and callers use the exp-and-log kernel.
"""

import numpy as np
from numba import njit

from .._config import JIT
from .fastexp import _bits_as_float, _float_as_bits

#: Mantissa bits that pick the interval of m.
TABLE_BITS = 8
#: Smallest alpha the table serves (relative error below 2e-9 from here on).
TABULATED_MIN_ALPHA = 0.05

_INTERVALS = 1 << TABLE_BITS
#: w >= 1, so its binary exponent e is 0 .. 1023 (the largest finite float's).
_EXPONENTS = 1024
_CENTRES = _EXPONENTS                  # c^p for each interval
_INVERSE_CENTRES = _CENTRES + _INTERVALS  # 1 / c for each interval
_SERIES = _INVERSE_CENTRES + _INTERVALS   # binom(p, 1) .. binom(p, 4)
TABLE_SIZE = _SERIES + 4

_MANTISSA_BITS = (1 << 52) - 1
_EXPONENT_ONE = 1023 << 52


@njit(**JIT)
def power_table(alpha):
    """The table of :func:`tabulated_power` for ``alpha`` >= ``TABULATED_MIN_ALPHA``."""
    p = -1.0 / alpha
    table = np.empty(TABLE_SIZE)
    for e in range(_EXPONENTS):
        table[e] = 2.0 ** (e * p)
    for j in range(_INTERVALS):
        c = 1.0 + (j + 0.5) / _INTERVALS
        table[_CENTRES + j] = c ** p
        table[_INVERSE_CENTRES + j] = 1.0 / c
    binomial = 1.0
    for k in range(1, 5):
        binomial *= (p - k + 1.0) / k
        table[_SERIES + k - 1] = binomial
    return table


@njit(**JIT)
def tabulated_power(w, table):
    """w^p for w >= 1, p = -1/alpha of the table's alpha."""
    bits = _float_as_bits(w)
    e = min((bits >> 52) - 1023, _EXPONENTS - 1)  # infinity as the largest finite w
    j = (bits >> (52 - TABLE_BITS)) & (_INTERVALS - 1)
    m = _bits_as_float((bits & _MANTISSA_BITS) | _EXPONENT_ONE)
    r = m * table[_INVERSE_CENTRES + j] - 1.0
    series = table[_SERIES + 3]
    series = series * r + table[_SERIES + 2]
    series = series * r + table[_SERIES + 1]
    series = series * r + table[_SERIES]
    series = series * r + 1.0
    return table[e] * table[_CENTRES + j] * series


@njit(**JIT)
def tabulated_power_kernel(tau, alpha, table):
    """(H, S) of :func:`.hssne.power_kernel`, H from the table."""
    w = 1.0 + alpha * tau
    return tabulated_power(w, table), 1.0 / w
