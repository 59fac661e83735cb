"""Scalar building blocks that the generated CPU kernels call.

LLVM turns a loop into SIMD code (several elements per instruction) only when every step of
its body can be done on a vector of elements. Three things in a plain Numba loop stop that:

* ``np.exp``, ``np.log`` and ``np.tanh`` become calls to the C library's scalar functions.
  Here they are written out as float32 arithmetic instead (range reduction, then a
  polynomial), which LLVM vectorises. XLA's CPU backend does the same with its own
  polynomial approximations.
* ``np.maximum`` is a branchy NaN-aware function. ``maximum`` here is LLVM's
  ``llvm.maximum`` intrinsic: the same NaN-propagating semantics in one vector instruction.
* A float sum ``acc = acc + x`` must add in order, one element at a time. ``add_reassoc``
  is an ``fadd`` marked ``reassoc``: it lets LLVM keep several partial sums and add them at
  the end. Only the reduction's own additions carry the flag, so the elementwise arithmetic
  of a program keeps NumPy's rounding exactly.

Integer arithmetic has a different problem: Numba widens ``int32 + int32`` to 64 bits, and
LLVM's shifts and divisions are undefined for some operands (a shift by the bit width or more,
a division by zero), as is its float to integer cast (of NaN, inf, or a value out of range).
The integer intrinsics here work in the operands' own type and give every operand the result
the eager (NumPy) implementation gives, which is XLA's. The rest are helpers with loops or
several results: ``erf_inv``, the Threefry hash, and ``dot_into``, a matrix product by BLAS.

The generated source imports these by name; the prelude records a hash of this file so that
a change here makes new kernel sources (and so new cache entries).
"""

from __future__ import annotations

import math
import os

import numpy as np
from llvmlite import binding, ir
from numba import config, njit, types
from numba.extending import intrinsic
from stage1_autodiff.special import DIGAMMA_SERIES, DIGAMMA_SHIFT, ERFINV_CENTRAL, ERFINV_TAIL

_REDUCTION_FLAGS = ("reassoc", "nsz")  # may reorder, may ignore the sign of zero


# --8<-- [start:vector_width]
def prefer_512_bit_vectors() -> bool:
    """Lets LLVM vectorise with 512-bit registers on a CPU with AVX-512, where its tuning for
    Intel's chips asks for 256 bits (``prefer-256-bit``: wide instructions once lowered the
    clock of a whole core); ``course/stage2/cpu-expressions.md`` has the measurements. Numba
    takes the CPU's features once, when it first compiles in a process, so this runs when
    the package is imported; a user's ``NUMBA_CPU_FEATURES`` or ``NUMBA_ENABLE_AVX=0`` wins.
    Returns whether it did."""
    if "NUMBA_CPU_FEATURES" in os.environ or not config.ENABLE_AVX:
        return False
    features = binding.get_host_cpu_features()
    if not features.get("avx512f"):
        return False
    config.CPU_FEATURES = os.environ["NUMBA_CPU_FEATURES"] = (
        features.flatten() + ",-prefer-256-bit")
    return True


PREFERS_512_BIT_VECTORS = prefer_512_bit_vectors()
# --8<-- [end:vector_width]


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


# --8<-- [start:float32_from_bits]
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
# --8<-- [end:float32_from_bits]


# --8<-- [start:integer_intrinsics]
def _integer_binary(emit):
    """An intrinsic ``f(a, b)`` on two integers of one type, computed in that type (no
    widening) by ``emit(builder, a, b, signed)``."""
    def typer(typingctx, a, b):
        if isinstance(a, types.Integer) and a == b:
            def codegen(context, builder, sig, args):
                return emit(builder, *args, a.signed)
            return a(a, b), codegen
        return None
    return intrinsic(typer)


def _in_range(builder, amount):
    """0 <= amount < bits. The comparison is unsigned, so a negative amount is out of range
    (a huge one), as XLA treats shift amounts."""
    return builder.icmp_unsigned("<", amount, ir.Constant(amount.type, amount.type.width))


def _safe(builder, amount, in_range):
    """An amount LLVM's shift is defined for (it is not for bits or more)."""
    return builder.select(in_range, amount, ir.Constant(amount.type, 0))


def _shift_left(builder, x, amount, signed):
    """``x << amount``; 0 for an amount out of range."""
    ok = _in_range(builder, amount)
    return builder.select(ok, builder.shl(x, _safe(builder, amount, ok)),
                          ir.Constant(x.type, 0))


def _shift_right_logical(builder, x, amount, signed):
    """Shifts the bit pattern right, zeros in at the top, whatever the type's signedness;
    0 for an amount out of range."""
    ok = _in_range(builder, amount)
    return builder.select(ok, builder.lshr(x, _safe(builder, amount, ok)),
                          ir.Constant(x.type, 0))


def _shift_right_arithmetic(builder, x, amount, signed):
    """Shifts the bit pattern right, copies of the top bit in, whatever the type's
    signedness; an amount out of range leaves only copies of the top bit (0 or all ones)."""
    ok = _in_range(builder, amount)
    last = ir.Constant(x.type, x.type.width - 1)
    return builder.ashr(x, builder.select(ok, amount, last))


def _divisor_cases(builder, y, signed):
    """(y == 0, y == -1, a divisor that is neither): LLVM's division is undefined for 0,
    and for the most negative value divided by -1 (x86 traps)."""
    by_zero = builder.icmp_unsigned("==", y, ir.Constant(y.type, 0))
    by_minus_one = (builder.icmp_signed("==", y, ir.Constant(y.type, -1)) if signed
                    else ir.Constant(ir.IntType(1), 0))
    special = builder.or_(by_zero, by_minus_one)
    return by_zero, by_minus_one, builder.select(special, ir.Constant(y.type, 1), y)


def _div_toward_zero(builder, x, y, signed):
    """x / y rounded toward zero (C's and XLA's integer division); -1 (all ones) where
    y == 0, and x * -1 (wrapping) where y == -1, as eager's impl gives."""
    by_zero, by_minus_one, safe = _divisor_cases(builder, y, signed)
    quotient = builder.sdiv(x, safe) if signed else builder.udiv(x, safe)
    quotient = builder.select(by_minus_one, builder.neg(x), quotient)
    return builder.select(by_zero, ir.Constant(x.type, -1), quotient)


def _rem_toward_zero(builder, x, y, signed):
    """The remainder of that division, with the sign of x (C's ``%``, NumPy's ``fmod``);
    x where y == 0, as eager's impl gives."""
    by_zero, by_minus_one, safe = _divisor_cases(builder, y, signed)
    remainder = builder.srem(x, safe) if signed else builder.urem(x, safe)
    remainder = builder.select(by_minus_one, ir.Constant(x.type, 0), remainder)
    return builder.select(by_zero, x, remainder)


shift_left = _integer_binary(_shift_left)
shift_right_logical = _integer_binary(_shift_right_logical)
shift_right_arithmetic = _integer_binary(_shift_right_arithmetic)
div_toward_zero = _integer_binary(_div_toward_zero)
rem_toward_zero = _integer_binary(_rem_toward_zero)
# --8<-- [end:integer_intrinsics]


# --8<-- [start:float_to_int]
@intrinsic
def float_to_int(typingctx, x, dtype):
    """The float ``x`` as the integer type ``dtype`` (``np.int32``...), rounded toward zero,
    as XLA converts: NaN gives 0, and a value past the type's range (inf too) gives the
    nearest end of it. Numba's own cast is LLVM's ``fptosi``, whose result for those values
    is poison (x86 happens to give the most negative integer); LLVM's saturating
    conversions ``llvm.fptosi.sat`` and ``llvm.fptoui.sat`` are defined for every input and
    are exactly XLA's (and eager's, ``dtypes.convert_values``)."""
    if not (isinstance(x, types.Float) and isinstance(dtype, types.NumberClass)
            and isinstance(dtype.instance_type, types.Integer)):
        return None
    target = dtype.instance_type

    def codegen(context, builder, sig, args):
        int_type = context.get_value_type(target)
        name = "llvm.fptosi.sat" if target.signed else "llvm.fptoui.sat"
        fnty = ir.FunctionType(int_type, [args[0].type])
        function = builder.module.declare_intrinsic(name, [int_type, args[0].type], fnty)
        return builder.call(function, [args[0]])
    return target(x, dtype), codegen
# --8<-- [end:float_to_int]


@intrinsic
def bitcast(typingctx, x, dtype):
    """The value of type ``dtype`` (``np.float32``...) with the bits of ``x`` (same width).
    A bool is one byte, 0 or 1, as in a NumPy array."""
    if not isinstance(dtype, types.NumberClass):
        return None
    target = dtype.instance_type

    def codegen(context, builder, sig, args):
        value = args[0]
        if isinstance(x, types.Boolean):
            value = builder.zext(value, ir.IntType(8))
        if isinstance(target, types.Boolean):
            return builder.icmp_unsigned("!=", value, ir.Constant(value.type, 0))
        llvm_type = context.get_value_type(target)
        return value if value.type == llvm_type else builder.bitcast(value, llvm_type)
    return target(x, dtype), codegen


@njit(cache=True, error_model="numpy")
def dot_into(a, b, out):
    """``out[...] = a @ b`` through BLAS (Numba's ``np.dot``). A kernel calls this rather
    than ``np.dot`` itself because this is compiled once per layout of its operands and kept
    in the disk cache: a new kernel links it instead of compiling Numba's matrix product
    again, which took about 40 ms for each product in every cold compilation."""
    np.dot(a, b, out)


F32 = np.float32
_LOG2_E = F32(1.4426950408889634)
_LN2_HI = F32(0.693359375)  # 9 significant bits: n * _LN2_HI is exact for |n| <= 150
_LN2_LO = F32(-2.1219444005469057e-4)  # ln 2 - _LN2_HI
_ROUNDER = F32(12582912.0)  # 1.5 * 2**23, whose float32 neighbours are 1 apart
_ROUNDER_BITS = _ROUNDER.view(np.int32)  # its bits


# --8<-- [start:fma]
@intrinsic
def fma(typingctx, a, b, c):
    """``a * b + c`` rounded once: LLVM's ``llvm.fma``, one vector instruction on a CPU with
    fused multiply-add. NumPy has none; ``tiers.exact_fma`` gives the same bits."""
    if isinstance(a, types.Float) and a == b == c:
        def codegen(context, builder, sig, args):
            llvm_type = args[0].type
            fnty = ir.FunctionType(llvm_type, [llvm_type] * 3)
            return builder.call(builder.module.declare_intrinsic("llvm.fma", [llvm_type], fnty),
                                args)
        return a(a, b, c), codegen
    return None
# --8<-- [end:fma]


# --8<-- [start:exp_f32]
@njit(cache=True, error_model="numpy")
def exp_f32(x):
    """e**x in float32 arithmetic: at most 1 ulp from the correctly rounded result.

    Write x = n ln2 + r with |r| <= ln2/2; then e**x = 2**n e**r. e**r is its Taylor
    polynomial to r**7 (the next term is below 1e-8 of it), and 2**n is built directly from
    its bits, in two factors so that results below the smallest normal float (denormals)
    and above the largest (inf) come out right. Each step ``p * r + q`` is one ``fma``.
    """
    c = minimum(maximum(x, F32(-104.0)), F32(89.0))  # beyond these, 0 and inf anyway
    shifted = fma(c, _LOG2_E, _ROUNDER)  # _ROUNDER + n, n = x / ln2 rounded to an integer
    n = shifted - _ROUNDER
    r = fma(n, -_LN2_LO, fma(n, -_LN2_HI, c))
    p = F32(1.0 / 5040.0)
    p = fma(p, r, F32(1.0 / 720.0))
    p = fma(p, r, F32(1.0 / 120.0))
    p = fma(p, r, F32(1.0 / 24.0))
    p = fma(p, r, F32(1.0 / 6.0))
    p = fma(p, r, F32(0.5))
    p = fma(p, r, F32(1.0))
    p = fma(p, r, F32(1.0))
    k = bitcast(shifted, np.int32) - _ROUNDER_BITS  # n as an integer: the bits count in ones
    half = k >> 1
    scaled = p * float32_from_bits((half + 127) << 23) * float32_from_bits((k - half + 127) << 23)
    return select(x != x, x, scaled)  # NaN stays NaN
# --8<-- [end:exp_f32]


# --8<-- [start:tanh_f32]
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
    tanh = select(a < F32(0.625), near_zero, select(x < F32(0.0), -far, far))
    return select(x == F32(0.0), x, tanh)  # (near_zero is +0.0 at -0.0) a zero is itself


@njit(cache=True, error_model="numpy")
def logistic_f32(x):
    """1 / (1 + e**-x) with ``exp_f32``."""
    return F32(1.0) / (F32(1.0) + exp_f32(-x))
# --8<-- [end:tanh_f32]


# --8<-- [start:log_f32]
_SQRT_HALF_BITS = np.int32(0x3F3504F3)  # the bits of the float32 nearest sqrt(1/2)


@njit(cache=True, error_model="numpy")
def log_f32(x):
    """ln x in float32 arithmetic: at most 1 ulp from the correctly rounded result.

    Write x = 2**n m with sqrt(1/2) <= m < sqrt(2), read from x's bits (a denormal is first
    scaled by 2**23). With f = m - 1 (exact) and s = f / (2 + f), ln m = 2 atanh s =
    2s + 2s**3/3 + 2s**5/5 + ..., |s| < 0.172; since 2s = f - s f, and s f = f**2/2 - s f**2/2,
    ln m = f - (f**2/2 - s (f**2/2 + R)) with R = 2s**2/3 + ... + 2s**8/9: the exact f leads
    and the rest is a small correction (the next term of R is below 1e-8 of the result).
    """
    tiny = x < F32(1.1754943508222875e-38)  # below the smallest normal float32
    y = select(tiny, x * F32(8388608.0), x)
    bits = bitcast(y, np.int32)
    e = (bits - _SQRT_HALF_BITS) >> 23  # m's bits: the exponent field moved by -e
    m = float32_from_bits(bits - (e << 23))
    n = np.float32(e) - select(tiny, F32(23.0), F32(0.0))
    f = m - F32(1.0)
    s = f / (F32(2.0) + f)
    z = s * s
    r = F32(2.0 / 9.0)
    r = r * z + F32(2.0 / 7.0)
    r = r * z + F32(2.0 / 5.0)
    r = r * z + F32(2.0 / 3.0)
    r = r * z
    half_f2 = F32(0.5) * f * f
    log_m = f - (half_f2 - s * (half_f2 + r))
    finite = n * _LN2_HI + (log_m + n * _LN2_LO)
    positive = select(x == F32(np.inf), x, finite)
    return select(x > F32(0.0), positive, select(x == F32(0.0), F32(-np.inf), F32(np.nan)))
# --8<-- [end:log_f32]


# --8<-- [start:erf_inv]
@njit(cache=True, error_model="numpy")
def erf_inv_f32(x):
    """erfinv in float32, step for step as eager's impl: Giles' polynomials in
    w = -log(1 - x**2), each step ``c + p * w`` rounded once (computed in float64, as eager
    does to stand for XLA's fused multiply-add). NB: NumPy's float32 ``log1p`` is its own
    vectorised approximation, not the C library's that Numba calls, so a result can differ
    from eager's in the last bit."""
    w = -np.log1p(-x * x)
    central, tail = w - F32(2.5), np.sqrt(w) - F32(3.0)
    p_central, p_tail = F32(ERFINV_CENTRAL[0]), F32(ERFINV_TAIL[0])
    for k in range(1, len(ERFINV_CENTRAL)):
        p_central = F32(ERFINV_CENTRAL[k] + np.float64(p_central) * np.float64(central))
        p_tail = F32(ERFINV_TAIL[k] + np.float64(p_tail) * np.float64(tail))
    out = select(w < F32(5.0), p_central, p_tail) * x
    return select(np.abs(x) == F32(1.0), x * F32(np.inf), out)


@njit(cache=True, error_model="numpy")
def erf_inv_f64(x):
    """erfinv in float64, as eager's impl: the same polynomials, then two Newton steps on
    erf(z) = x."""
    w = -np.log1p(-x * x)
    central, tail = w - 2.5, np.sqrt(w) - 3.0
    p_central, p_tail = ERFINV_CENTRAL[0], ERFINV_TAIL[0]
    for k in range(1, len(ERFINV_CENTRAL)):
        p_central = ERFINV_CENTRAL[k] + p_central * central
        p_tail = ERFINV_TAIL[k] + p_tail * tail
    z = select(w < 5.0, p_central, p_tail) * x
    for _ in range(2):
        residual = math.erf(z) - x
        z = z - residual / (2 / math.sqrt(math.pi) * np.exp(-z * z))
    return select(np.abs(x) == 1.0, x * np.inf, z)
# --8<-- [end:erf_inv]


# --8<-- [start:digamma]
@njit(cache=True, error_model="numpy")
def digamma_f64(x):
    """psi(x) in float64, as eager's impl (stage1_autodiff/special.py): reflect a negative x,
    shift it past ``DIGAMMA_SHIFT`` by psi(x) = psi(x + 1) - 1/x, then the asymptotic series.
    float32 kernels call it on the widened value and round the result once."""
    if x <= 0.0 and x == np.floor(x):
        return np.nan  # a pole: 0, a negative integer, or -inf
    result = 0.0
    if x < 0.0:
        result = -np.pi / np.tan(np.pi * x)
        x = 1.0 - x
    while x < DIGAMMA_SHIFT:
        result -= 1.0 / x
        x += 1.0
    inv_x2, series = 1.0 / (x * x), 0.0
    for k in range(len(DIGAMMA_SERIES) - 1, -1, -1):
        series = (series + DIGAMMA_SERIES[k]) * inv_x2
    return result + np.log(x) - 0.5 / x - series
# --8<-- [end:digamma]


U32 = np.uint32


# --8<-- [start:threefry2x32]
@njit(cache=True, error_model="numpy", inline="always")
def _mix(a, b, distance):
    """One round: a += b; b = rotate_left(b, distance) ^ a (all modulo 2**32)."""
    a = U32(a + b)
    rotated = U32((b << U32(distance)) | (b >> U32(32 - distance)))
    return a, U32(rotated ^ a)


@njit(cache=True, error_model="numpy", inline="always")
def _four_rounds(a, b, r0, r1, r2, r3, k_a, k_b, group):
    """Four rounds with the given rotation distances, then the key injection of ``group``."""
    a, b = _mix(a, b, r0)
    a, b = _mix(a, b, r1)
    a, b = _mix(a, b, r2)
    a, b = _mix(a, b, r3)
    return U32(a + k_a), U32(b + k_b + U32(group))


@njit(cache=True, error_model="numpy")
def threefry2x32(key1, key2, x1, x2):
    """Both words of the Threefry-2x32 hash of (x1, x2) under (key1, key2): 5 groups of 4
    rounds, as eager's impl, written out straight (no loops, no indexing into tuples) so
    that LLVM sees plain integer arithmetic. Numba widens uint32 arithmetic, so every step
    is wrapped back to uint32 (arithmetic modulo 2**32)."""
    k0, k1 = U32(key1), U32(key2)
    k2 = U32(k0 ^ k1 ^ U32(0x1BD11BDA))
    a, b = U32(x1 + k0), U32(x2 + k1)
    a, b = _four_rounds(a, b, 13, 15, 26, 6, k1, k2, 1)
    a, b = _four_rounds(a, b, 17, 29, 16, 24, k2, k0, 2)
    a, b = _four_rounds(a, b, 13, 15, 26, 6, k0, k1, 3)
    a, b = _four_rounds(a, b, 17, 29, 16, 24, k1, k2, 4)
    a, b = _four_rounds(a, b, 13, 15, 26, 6, k2, k0, 5)
    return a, b
# --8<-- [end:threefry2x32]
