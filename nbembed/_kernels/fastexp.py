"""An exponential and a logarithm that LLVM vectorizes, for the pair loops of the kernels.

Without a vector math library, a loop that calls math.exp or math.log runs one
call at a time (about 7 ns here); these are plain arithmetic that LLVM
vectorizes (about 1-2 ns).

exp: Cody-Waite reduction x = k ln2 + r, |r| <= ln2 / 2, a degree-12 Taylor
polynomial for e^r (truncation error < 2e-16) and 2^k assembled from its bits.
The rounding to k uses the 1.5 * 2^52 shifter on the bit pattern, not by
subtracting it again, which fastmath's re-association would fold away.

log: x = 2^e m with m taken from the bits and moved into [sqrt(1/2), sqrt(2)),
then log m = 2 atanh(z), z = (m - 1) / (m + 1), |z| <= 0.172, by its odd series
to z^21 (truncation error < 3e-17).

unit_power(s, p) = s^p for 0 < s <= 1, p > 0, the fractional power of the
heavy-tailed kernels. In double precision it is exp(p log s) by the two above;
in single precision :func:`unit_power32` takes the same two steps in base 2
with float32 arithmetic and int32 bits, shorter series for float32's accuracy
(log2 to z^9, 2^f to f^7), so that the loops vectorize eight lanes wide
instead of four: in the HSSNE pair loops 3.3x faster than the double-precision
chain.
"""

import math
import struct

import numpy as np
from numba import njit, types
from numba.core.extending import intrinsic, overload

from .._config import JIT


def _bitcast(source, target):
    """An intrinsic that reads the bits of a ``source`` value as a ``target`` value."""

    @intrinsic
    def cast(typingctx, x):
        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], context.get_value_type(target))
        return target(source), codegen

    return cast


_bits_as_float = _bitcast(types.int64, types.float64)
_float_as_bits = _bitcast(types.float64, types.int64)
_bits_as_float32 = _bitcast(types.int32, types.float32)
_float32_as_bits = _bitcast(types.float32, types.int32)


_LOG2E = 1.4426950408889634
_LN2_HI = 0.6931471803691238       # high bits of ln 2: k * _LN2_HI is exact
_LN2_LO = 1.9082149292705877e-10
_SHIFTER = 6755399441055744.0       # 1.5 * 2^52
_SHIFTER_BITS = struct.unpack("<q", struct.pack("<d", _SHIFTER))[0]
#: Below this exponent exp_nonpositive returns 0 (e^-700 is about 1e-304).
EXP_CUTOFF = -700.0
_SMALLEST_NORMAL = 2.2250738585072014e-308
_MANTISSA_BITS = (1 << 52) - 1
_EXPONENT_ONE = 1023 << 52
_SQRT2 = 1.4142135623730951


@njit(**JIT)
def exp_nonpositive(x):
    """e^x for x <= 0 (relative error about 1e-15), and 0 for x < -700."""
    xc = max(x, EXP_CUTOFF)
    ki = _float_as_bits(xc * _LOG2E + _SHIFTER) - _SHIFTER_BITS
    k = float(ki)
    r = xc - k * _LN2_HI - k * _LN2_LO
    p = 2.08767569878681e-09            # 1 / 12!
    p = p * r + 2.505210838544172e-08
    p = p * r + 2.755731922398589e-07
    p = p * r + 2.7557319223985893e-06
    p = p * r + 2.48015873015873e-05
    p = p * r + 0.0001984126984126984
    p = p * r + 0.001388888888888889
    p = p * r + 0.008333333333333333
    p = p * r + 0.041666666666666664
    p = p * r + 0.16666666666666666
    p = p * r + 0.5
    p = p * r + 1.0
    p = p * r + 1.0
    return p * _bits_as_float((ki + 1023) << 52) if x > EXP_CUTOFF else 0.0


@njit(**JIT)
def log_positive(x):
    """log(x) for normal x > 0 (absolute error about 2e-16 near 1, relative
    about 1e-16 elsewhere); x below the smallest normal float is taken as it."""
    bits = _float_as_bits(max(x, _SMALLEST_NORMAL))
    e = float((bits >> 52) - 1023)
    m = _bits_as_float((bits & _MANTISSA_BITS) | _EXPONENT_ONE)   # in [1, 2)
    big = m > _SQRT2
    m = m * 0.5 if big else m
    e = e + 1.0 if big else e
    z = (m - 1.0) / (m + 1.0)
    z2 = z * z
    p = 1.0 / 21.0
    p = p * z2 + 1.0 / 19.0
    p = p * z2 + 1.0 / 17.0
    p = p * z2 + 1.0 / 15.0
    p = p * z2 + 1.0 / 13.0
    p = p * z2 + 1.0 / 11.0
    p = p * z2 + 1.0 / 9.0
    p = p * z2 + 1.0 / 7.0
    p = p * z2 + 1.0 / 5.0
    p = p * z2 + 1.0 / 3.0
    return e * _LN2_HI + (e * _LN2_LO + 2.0 * z * (p * z2 + 1.0))


_F = np.float32
_ONE32 = _F(1.0)
_HALF32 = _F(0.5)
_SQRT2_32 = _F(_SQRT2)
_TWO_OVER_LN2_32 = _F(2.0 / math.log(2.0))
#: Smallest exponent of 2 that unit_power32 returns (the smallest normal float32).
_EXP2_CUTOFF_32 = _F(-126.0)
_MANTISSA_BITS_32 = np.int32((1 << 23) - 1)
_EXPONENT_ONE_32 = np.int32(127 << 23)
_BIAS_32 = np.int32(127)
_MANTISSA_WIDTH_32 = np.int32(23)
#: 1/3, 1/5, 1/7, 1/9: the odd series of atanh.
_ATANH = tuple(_F(1.0 / k) for k in (3, 5, 7, 9))
#: ln2^k / k!, k = 1 .. 7: the Taylor series of 2^f = e^(f ln 2), |f| <= 1/2
#: (truncation error below 6e-9).
_EXP2 = tuple(_F(math.log(2.0) ** k / math.factorial(k)) for k in range(1, 8))


@njit(**JIT)
def unit_power32(s, p):
    """s^p for float32 0 < s <= 1 and p > 0 (relative error about 1e-7 * (|p log2 s| + p)).

    Results below 2^-126 come back as 2^-126 times at most 1, and s = 1 gives
    exactly 1 (the kernels subtract the self-pair's H = 1).
    """
    bits = _float32_as_bits(s)
    e = _F((bits >> _MANTISSA_WIDTH_32) - _BIAS_32)
    m = _bits_as_float32((bits & _MANTISSA_BITS_32) | _EXPONENT_ONE_32)   # in [1, 2)
    big = m > _SQRT2_32
    m = m * _HALF32 if big else m
    e = e + _ONE32 if big else e
    z = (m - _ONE32) / (m + _ONE32)
    z2 = z * z
    q = _ATANH[3]
    q = q * z2 + _ATANH[2]
    q = q * z2 + _ATANH[1]
    q = q * z2 + _ATANH[0]
    q = q * z2 + _ONE32
    t = max(p * (e + _TWO_OVER_LN2_32 * z * q), _EXP2_CUTOFF_32)   # p log2(s)
    k = np.floor(t + _HALF32)
    f = t - k
    r = _EXP2[6]
    r = r * f + _EXP2[5]
    r = r * f + _EXP2[4]
    r = r * f + _EXP2[3]
    r = r * f + _EXP2[2]
    r = r * f + _EXP2[1]
    r = r * f + _EXP2[0]
    r = r * f + _ONE32
    return r * _bits_as_float32((np.int32(k) + _BIAS_32) << _MANTISSA_WIDTH_32)


def unit_power(s, p):
    """s^p for 0 < s <= 1 and p > 0 in the precision of ``s``; compiled code only."""
    raise NotImplementedError("unit_power is only available in compiled code")


@overload(unit_power, jit_options=dict(fastmath=JIT["fastmath"], error_model=JIT["error_model"]))
def _unit_power_overload(s, p):
    if s == types.float32:
        return lambda s, p: unit_power32(s, p)
    return lambda s, p: exp_nonpositive(log_positive(s) * p)
