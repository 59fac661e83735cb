"""Scalar building blocks that the generated CPU kernels call.

LLVM turns a loop into SIMD code (several elements per instruction) only when every step of
its body can be done on a vector of elements. Three things in a plain Numba loop stop that:

* ``np.exp`` and ``np.tanh`` become calls to the C library's scalar functions. Here they are
  written out as float32 arithmetic instead (range reduction, then a polynomial), which LLVM
  vectorises. XLA's CPU backend does the same with its own polynomial approximations.
* ``np.maximum`` is a branchy NaN-aware function. ``maximum`` here is LLVM's
  ``llvm.maximum`` intrinsic: the same NaN-propagating semantics in one vector instruction.
* A float sum ``acc = acc + x`` must add in order, one element at a time. ``add_reassoc``
  is an ``fadd`` marked ``reassoc``: it lets LLVM keep several partial sums and add them at
  the end. Only the reduction's own additions carry the flag, so the elementwise arithmetic
  of a program keeps NumPy's rounding exactly.

The generated source imports these by name; the prelude records a hash of this file so that
a change here makes new kernel sources (and so new cache entries).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

_REDUCTION_FLAGS = ("reassoc", "nsz")  # may reorder, may ignore the sign of zero


def _float_binary(emit):
    """An intrinsic ``f(a, b)`` on two floats of one type, emitted by ``emit(builder, a, b)``."""
    def typer(typingctx, a, b):
        if isinstance(a, types.Float) and a == b:
            return a(a, b), lambda context, builder, sig, args: emit(builder, *args)
        return None
    return intrinsic(typer)


def _llvm_call(name: str, flags: tuple[str, ...] = ()):
    def emit(builder, a, b):
        fnty = ir.FunctionType(a.type, [a.type, a.type])
        return builder.call(builder.module.declare_intrinsic(name, [a.type], fnty), [a, b],
                            fastmath=flags)
    return emit


# --8<-- [start:intrinsics]
maximum = _float_binary(_llvm_call("llvm.maximum"))  # NaN in, NaN out, like np.maximum
minimum = _float_binary(_llvm_call("llvm.minimum"))
max_reassoc = _float_binary(_llvm_call("llvm.maximum", _REDUCTION_FLAGS))
min_reassoc = _float_binary(_llvm_call("llvm.minimum", _REDUCTION_FLAGS))
add_reassoc = _float_binary(lambda builder, a, b: builder.fadd(a, b, flags=_REDUCTION_FLAGS))
mul_reassoc = _float_binary(lambda builder, a, b: builder.fmul(a, b, flags=_REDUCTION_FLAGS))
# --8<-- [end:intrinsics]


@intrinsic
def select(typingctx, condition, if_true, if_false):
    """``if_true if condition else if_false`` as one ``select`` instruction (no branch)."""
    if isinstance(condition, types.Boolean) and if_true == if_false:
        def codegen(context, builder, sig, args):
            return builder.select(*args)
        return if_true(condition, if_true, if_false), codegen
    return None


@intrinsic
def float32_from_bits(typingctx, bits):
    """The float32 whose bit pattern is the low 32 bits of the integer ``bits``."""
    if isinstance(bits, types.Integer):
        def codegen(context, builder, sig, args):
            value = args[0]
            if value.type.width > 32:
                value = builder.trunc(value, ir.IntType(32))
            elif value.type.width < 32:
                value = builder.sext(value, ir.IntType(32))
            return builder.bitcast(value, ir.FloatType())
        return types.float32(bits), codegen
    return None


F32 = np.float32
_LOG2_E = F32(1.4426950408889634)
_LN2_HI = F32(0.693359375)  # 9 significant bits: n * _LN2_HI is exact for |n| <= 150
_LN2_LO = F32(-2.1219444005469057e-4)  # ln 2 - _LN2_HI


# --8<-- [start:exp_f32]
@njit(cache=True, error_model="numpy")
def exp_f32(x):
    """e**x in float32 arithmetic: at most 1 ulp from the correctly rounded result.

    Write x = n ln2 + r with |r| <= ln2/2; then e**x = 2**n e**r. e**r is its Taylor
    polynomial to r**7 (the next term is below 1e-8 of it), and 2**n is built directly from
    its bits, in two factors so that results below the smallest normal float (denormals)
    and above the largest (inf) come out right.
    """
    c = minimum(maximum(x, F32(-104.0)), F32(89.0))  # beyond these, 0 and inf anyway
    n = np.floor(c * _LOG2_E + F32(0.5))
    r = (c - n * _LN2_HI) - n * _LN2_LO
    p = F32(1.0 / 5040.0)
    p = p * r + F32(1.0 / 720.0)
    p = p * r + F32(1.0 / 120.0)
    p = p * r + F32(1.0 / 24.0)
    p = p * r + F32(1.0 / 6.0)
    p = p * r + F32(0.5)
    p = p * r + F32(1.0)
    p = p * r + F32(1.0)
    k = np.int32(n)
    half = k >> 1
    scaled = p * float32_from_bits((half + 127) << 23) * float32_from_bits((k - half + 127) << 23)
    return select(x != x, x, scaled)  # NaN stays NaN
# --8<-- [end:exp_f32]


# tanh(x) = x + x**3 P(x**2) for |x| < 0.625: P fitted by weighted least squares to
# (tanh(s) - s) / s**3 on Chebyshev nodes in s**2 (see tests/stage2/test_kernel_math.py,
# which measures the error of the whole function in ulps).
_TANH_P = (F32(-0.333333283662796), F32(0.13332757353782654), F32(-0.05384935066103935),
           F32(0.020990874618291855), F32(-0.006088718306273222))


@njit(cache=True, error_model="numpy")
def tanh_f32(x):
    """tanh in float32 arithmetic, within 2 ulp: an odd polynomial near zero, where
    1 - 2/(e**2|x| + 1) would cancel, and that formula (with ``exp_f32``) elsewhere."""
    a = np.abs(x)
    x2 = x * x
    p = _TANH_P[4]
    p = p * x2 + _TANH_P[3]
    p = p * x2 + _TANH_P[2]
    p = p * x2 + _TANH_P[1]
    p = p * x2 + _TANH_P[0]
    near_zero = x + x * x2 * p
    far = F32(1.0) - F32(2.0) / (exp_f32(a + a) + F32(1.0))
    return select(a < F32(0.625), near_zero, select(x < F32(0.0), -far, far))


@njit(cache=True, error_model="numpy")
def logistic_f32(x):
    """1 / (1 + e**-x) with ``exp_f32``."""
    return F32(1.0) / (F32(1.0) + exp_f32(-x))
