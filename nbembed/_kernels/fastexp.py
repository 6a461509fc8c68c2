"""An exponential that LLVM vectorizes, for the pair loops of the kernels.

Without a vector math library, a loop that calls math.exp runs one exp at a
time (about 7 ns here); this one is plain arithmetic that LLVM vectorizes
(about 1.3 ns). Cody-Waite reduction x = k ln2 + r, |r| <= ln2 / 2, a degree-12
Taylor polynomial for e^r (truncation error < 2e-16) and 2^k assembled from
its bits. The rounding to k uses the 1.5 * 2^52 shifter on the bit pattern,
not by subtracting it again, which fastmath's re-association would fold away.
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
