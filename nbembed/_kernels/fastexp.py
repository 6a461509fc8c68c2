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
"""

import struct

from numba import njit, types
from numba.core.extending import intrinsic

from .._config import JIT


@intrinsic
def _bits_as_float(typingctx, x):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float64))
    return types.float64(types.int64), codegen


@intrinsic
def _float_as_bits(typingctx, x):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.int64))
    return types.int64(types.float64), codegen


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
