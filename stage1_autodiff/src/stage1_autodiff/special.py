"""Special functions of ``lax`` as elementwise primitives: ``rsqrt``, ``erf``, ``erfc``,
``lgamma``, ``digamma``, ``polygamma``, ``clamp``, ``nextafter`` and ``reduce_precision``.

Python's ``math`` module has erf, erfc and lgamma; NumPy has none of them, so the host runs
``math``'s on every element. The digamma function (the derivative of lgamma) is in neither,
so it is written here from two classic facts:

* the recurrence psi(x) = psi(x + 1) - 1/x moves x up until it is large, and
* for large x, psi(x) ~ log x - 1/(2x) - sum_k B_2k / (2k x^2k) (B_2k the Bernoulli numbers).

Below zero the reflection psi(1 - x) - psi(x) = pi / tan(pi x) brings x back above it. The
polygamma functions, psi's higher derivatives, are the Hurwitz zeta function in disguise:
psi^(m)(x) = (-1)^(m+1) m! zeta(m + 1, x), summed the same way (a shift, then the
Euler-Maclaurin tail). Stage 2's kernels use the same constants (``DIGAMMA_SERIES``).

NB: JAX defines these in ``jax/_src/lax/special.py`` (``lgamma_p``, ``digamma_p``,
``polygamma_p``, ``erf_p``, ``erfc_p``) and ``jax/_src/lax/lax.py`` (``rsqrt_p``,
``clamp_p``, ``nextafter_p``, ``reduce_precision_p``); XLA expands them into polynomial
approximations (``xla/hlo/builder/lib/math.cc``) and bit arithmetic.

Example:
    >>> from stage1_autodiff import lax
    >>> import numpy as np
    >>> lax.digamma(np.float32(1.0))  # minus the Euler-Mascheroni constant
    Array(-0.5772157, dtype=float32)
"""

from __future__ import annotations

import math
import operator

import ml_dtypes
import numpy as np

from . import dtypes
from .core import (
    ELEMENTWISE,
    Primitive,
    get_aval,
    impl_rules,
    jvp_rules,
    jvp_rules_take_none,
    vjp_rules,
    vjp_rules_take_needs,
)
from .more_math import _unary as _unary_primitive
from .primitives import (
    _unary_elementwise_jvp,
    add,
    bitwise_and,
    broadcast_in_dim,
    convert_element_type,
    div,
    exp,
    full_like,
    gt,
    lt,
    mul,
    neg,
    select_n,
    zeros_like,
)

__all__ = ["DIGAMMA_SERIES", "DIGAMMA_SHIFT", "ERFINV_CENTRAL", "ERFINV_TAIL", "SPECIAL", "clamp",
           "clamp_p", "digamma", "digamma_p", "erf", "erf_inv", "erf_inv_p", "erf_p", "erfc",
           "erfc_p", "lgamma", "lgamma_p", "nextafter", "nextafter_p", "polygamma", "polygamma_p",
           "reduce_precision", "reduce_precision_p",
           "rsqrt", "rsqrt_p"]

# The even Bernoulli numbers B_2 ... B_14, and psi's asymptotic coefficients B_2k / (2k).
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)
DIGAMMA_SERIES = tuple(b / (2 * k) for k, b in enumerate(_BERNOULLI, start=1))
DIGAMMA_SHIFT = 10.0  # above this, the series is exact to float64 rounding


def _check_float(name: str, *args, kinds: str = "f") -> None:
    for i, x in enumerate(args):
        dtype = get_aval(x).dtype
        if dtypes.kind(dtype) not in kinds:  # (bfloat16 is a float)
            where = f" at position {i}" if len(args) > 1 else ""
            accepted = "floating" if kinds == "f" else "inexact"
            raise TypeError(f"{name} does not accept dtype {dtype.name}{where}. Accepted "
                            f"dtypes{where} are subtypes of {accepted}.")


def _math_function(function, *, pole=math.nan):
    """``math``'s scalar ``function`` on every element, in float64, then rounded to the
    input's dtype; a domain or range error (lgamma at a pole) gives ``pole``."""
    def safe(v):
        try:
            return function(v)
        except (ValueError, OverflowError):
            return pole
    elementwise = np.frompyfunc(safe, 1, 1)
    return lambda x: np.asarray(elementwise(x.astype(np.float64)), np.float64).astype(x.dtype)


def _unary(name: str, impl, slope, kinds: str = "f") -> tuple[Primitive, object]:
    """A unary elementwise primitive on floats (or the dtype ``kinds``: more_math's, whose
    wrapper here checks the operand's dtype first); ``slope(x, out)`` is its derivative."""
    prim, bind = _unary_primitive(name, impl, slope)

    def apply(x):
        _check_float(name, x, kinds=kinds)
        return bind(x)
    apply.__name__ = apply.__qualname__ = name
    return prim, apply


# ------------------------------------------------------------------------------------------
# erf_inv (the random normals' inverse CDF), rsqrt, erf, erfc, lgamma
# ------------------------------------------------------------------------------------------

erf_inv_p = Primitive("erf_inv", kind=ELEMENTWISE)
def erf_inv(x): return erf_inv_p.bind(x)

# Giles' single-precision approximation of erfinv ("Approximating the erfinv function",
# GPU Computing Gems, 2011): a polynomial in w = -log(1 - x^2), one for each of two ranges.
# Public: stage 2's kernels evaluate the same polynomials.
ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                  0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
               0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def erf_inv_impl(x):
    if x.dtype.itemsize < 4:  # a narrow float: in float32, rounded once, as XLA computes it
        return erf_inv_impl(x.astype(np.float32)).astype(x.dtype)
    dtype = x.dtype
    w = -np.log1p(-x * x)
    central, tail = w - dtype.type(2.5), np.sqrt(w) - dtype.type(3.0)
    p_central = np.full_like(x, ERFINV_CENTRAL[0])
    p_tail = np.full_like(x, ERFINV_TAIL[0])
    for c_central, c_tail in zip(ERFINV_CENTRAL[1:], ERFINV_TAIL[1:]):
        # Each step c + p*w rounds once, like the fused multiply-add XLA emits.
        p_central = (c_central + p_central.astype(np.float64) * central).astype(dtype)
        p_tail = (c_tail + p_tail.astype(np.float64) * tail).astype(dtype)
    out = np.where(w < 5, p_central, p_tail) * x
    if dtype == np.float64:
        out = _refine_erf_inv(out, x)
    return np.where(np.abs(x) == 1, x * dtype.type(np.inf), out).astype(dtype)


_erf = np.frompyfunc(math.erf, 1, 1)


def _refine_erf_inv(z, x):
    """Two Newton steps on erf(z) = x take the float32-accurate guess to float64 accuracy.
    NB: JAX uses a separate double-precision polynomial (Giles) for float64 instead."""
    for _ in range(2):
        residual = np.asarray(_erf(z), np.float64) - x
        z = z - residual / (2 / math.sqrt(math.pi) * np.exp(-z * z))
    return z
impl_rules[erf_inv_p] = erf_inv_impl
def erf_inv_vjp(ct, x, *, out):  # d erfinv(x) = sqrt(pi)/2 exp(erfinv(x)^2)
    return [mul(ct, mul(full_like(out, math.sqrt(math.pi) / 2), exp(mul(out, out))))]
vjp_rules[erf_inv_p] = erf_inv_vjp
jvp_rules[erf_inv_p] = _unary_elementwise_jvp(erf_inv_p)


def _rsqrt_impl(x):
    with np.errstate(divide="ignore", invalid="ignore"):  # in float32 for a narrow float
        return (1 / np.sqrt(x.astype(np.promote_types(x.dtype, np.float32)))).astype(x.dtype)


_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
rsqrt_p, rsqrt = _unary(  # d x^(-1/2) = -1/2 x^(-3/2) = -1/2 rsqrt(x) / x
    "rsqrt", _rsqrt_impl, lambda x, out: mul(full_like(x, -0.5), div(out, x)), kinds="fc")
erf_p, erf = _unary("erf", _math_function(math.erf), lambda x, out: mul(
    full_like(x, _TWO_OVER_SQRT_PI), exp(neg(mul(x, x)))))
erfc_p, erfc = _unary("erfc", _math_function(math.erfc), lambda x, out: mul(
    full_like(x, -_TWO_OVER_SQRT_PI), exp(neg(mul(x, x)))))
# At 0 and the negative integers Gamma has poles: log|Gamma| is +inf there, as in JAX.
lgamma_p, lgamma = _unary("lgamma", _math_function(math.lgamma, pole=math.inf),
                          lambda x, out: digamma(x))

# ------------------------------------------------------------------------------------------
# digamma and polygamma
# ------------------------------------------------------------------------------------------


def _digamma_f64(x: np.ndarray) -> np.ndarray:
    """psi(x) in float64: reflect below 0, shift up past ``DIGAMMA_SHIFT``, then the series."""
    pole = (x <= 0) & (x == np.floor(x))  # 0, the negative integers and -inf: NaN, as in JAX
    negative = x < 0
    with np.errstate(all="ignore"):
        result = np.where(negative, -np.pi / np.tan(np.pi * x), 0.0)
        x = np.where(negative, 1 - x, x)
        for _ in range(int(DIGAMMA_SHIFT)):  # x >= 1 or x in (0, 1): ten steps reach 10
            low = x < DIGAMMA_SHIFT
            result = result - np.where(low, 1 / x, 0.0)
            x = np.where(low, x + 1, x)
        inv_x2, series = 1 / (x * x), np.zeros_like(x)
        for coefficient in reversed(DIGAMMA_SERIES):
            series = (series + coefficient) * inv_x2
        result = result + np.log(x) - 0.5 / x - series
    return np.where(pole, np.nan, result)


def _digamma_impl(x):
    return _digamma_f64(x.astype(np.float64)).astype(x.dtype)


digamma_p, digamma = _unary("digamma", _digamma_impl,
                            lambda x, out: polygamma(full_like(x, 1), x))


def _hurwitz_zeta(s: np.ndarray, x: np.ndarray) -> np.ndarray:
    """zeta(s, x) = sum over k >= 0 of (x + k)^-s, for s > 1: the terms below
    ``DIGAMMA_SHIFT`` summed one by one, the rest by Euler-Maclaurin's formula."""
    total = np.zeros_like(x)
    while True:
        low = np.isfinite(x) & (x < DIGAMMA_SHIFT)
        if not low.any():
            break
        total = total + np.where(low, x ** -s, 0.0)
        x = np.where(low, x + 1, x)
    tail = x ** (1 - s) / (s - 1) + 0.5 * x ** -s
    rising, power = s, x ** (-s - 1)  # s (s+1) ... (s+2k-2), and x^(-s-2k+1)
    for k, b in enumerate(_BERNOULLI, start=1):
        tail = tail + b / math.factorial(2 * k) * rising * power
        rising, power = rising * (s + 2 * k - 1) * (s + 2 * k), power / (x * x)
    return total + tail


def _polygamma_impl(m, x):
    """psi^(m)(x) for a whole m >= 0 (NaN for any other m); float64 inside."""
    m64, x64 = np.broadcast_arrays(m.astype(np.float64), x.astype(np.float64))
    whole = (m64 >= 0) & (m64 == np.floor(m64))
    order = np.where(whole, m64, 1.0)
    with np.errstate(all="ignore"):
        sign_factorial = (-1.0) ** (order + 1) * np.vectorize(math.gamma)(order + 1)
        zeta = _hurwitz_zeta(order + 1, np.where(x64 == -np.inf, np.nan, x64))
        out = np.where(order == 0, _digamma_f64(x64), sign_factorial * zeta)
    # At a pole (0, a negative integer, -inf): +inf for odd m, NaN for even m, as XLA gives.
    pole = (order > 0) & (x64 <= 0) & (x64 == np.floor(x64))
    out = np.where(pole, np.where(order % 2 == 1, np.inf, np.nan), out)
    return np.where(whole, out, np.nan).astype(x.dtype)


def _differentiable_in_last(prim: Primitive, slope, message: str) -> None:
    """The rules of a primitive differentiable in its last operand only (``x``), where
    ``slope(*operands)`` is its partial derivative. A derivative asked for in another
    operand raises ``ValueError(message)`` in both modes, as JAX's rules raise: a tangent
    there taken as zero would make ``jvp``, ``jacfwd`` and ``hessian`` silently wrong."""
    def vjp(ct, *operands, out, needs):
        if any(needs[:-1]):
            raise ValueError(message)
        return [None] * (len(operands) - 1) + [mul(ct, slope(*operands))]

    def jvp(primals, tangents):  # None for a zero tangent (jvp_rules_take_none)
        if any(t is not None for t in tangents[:-1]):
            raise ValueError(message)
        return prim.bind(*primals), mul(tangents[-1], slope(*primals))
    vjp_rules[prim], jvp_rules[prim] = vjp, jvp
    vjp_rules_take_needs.add(prim)
    jvp_rules_take_none.add(prim)


polygamma_p = Primitive("polygamma", kind=ELEMENTWISE)
def polygamma(m, x):
    """psi^(m)(x), the m-th derivative of digamma; ``m`` a float holding a whole number."""
    _check_float("polygamma", m, x)
    return polygamma_p.bind(m, x)
impl_rules[polygamma_p] = _polygamma_impl
_differentiable_in_last(polygamma_p, lambda m, x: polygamma(add(m, full_like(m, 1)), x),
                        "polygamma gradient with respect to m is not supported")

# ------------------------------------------------------------------------------------------
# clamp and nextafter
# ------------------------------------------------------------------------------------------


def _same_dtype(name: str, operands: list, like) -> list:
    """Operands of ``like``'s dtype: a weak-typed one (a Python scalar) of the same kind is
    converted to it, any other difference is an error, as in JAX."""
    target, out = get_aval(like).dtype, []
    for x in operands:
        aval = get_aval(x)
        if aval.dtype != target and aval.weak_type and aval.dtype.kind == target.kind:
            x = convert_element_type(x, target)
        out.append(x)
    dtypes_ = [get_aval(x).dtype for x in out]
    if any(d != target for d in dtypes_):
        raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got "
                        f"{', '.join(d.name for d in dtypes_)}.")
    return out


clamp_p = Primitive("clamp", kind=ELEMENTWISE)
def clamp(min, x, max):  # noqa: A002 -- lax's names
    """``min(max(x, min), max)`` elementwise; ``min`` and ``max`` are scalars or x's shape.
    NB: JAX's clamp takes the scalars as they are; here they are broadcast to x's shape
    first, so that clamp is elementwise like every other such primitive."""
    min, x, max = _same_dtype("clamp", [min, x, max], x)  # noqa: A001
    shape = get_aval(x).shape
    for name, bound in (("min", min), ("max", max)):
        if get_aval(bound).shape not in ((), shape):
            raise TypeError(f"clamp requires {name}.shape == operand.shape or {name}.shape "
                            f"== (), got {name}.shape={get_aval(bound).shape}, "
                            f"operand.shape={shape}.")
    min, max = (b if get_aval(b).shape == shape else broadcast_in_dim(b, shape, ())  # noqa: A001
                for b in (min, max))
    return clamp_p.bind(min, x, max)
def _clamp_impl(low, x, high):
    return np.minimum(np.maximum(x, low), high).astype(x.dtype)
impl_rules[clamp_p] = _clamp_impl
def clamp_vjp(ct, low, x, high, *, out):
    """As JAX: x's derivative is 1 strictly inside (min, max); min's where min > x (and
    min < max); max's where max < x. At a bound no one gets it."""
    zeros = zeros_like(ct)
    inside = bitwise_and(gt(x, low), lt(x, high))
    low_wins = bitwise_and(gt(low, x), lt(low, high))
    return [select_n(low_wins, zeros, ct), select_n(inside, zeros, ct),
            select_n(lt(high, x), zeros, ct)]
vjp_rules[clamp_p] = clamp_vjp
def clamp_jvp(primals, tangents):
    ct_low, ct_x, ct_high = clamp_vjp(full_like(primals[1], 1), *primals, out=None)
    out = clamp_p.bind(*primals)
    return out, add(add(mul(ct_low, tangents[0]), mul(ct_x, tangents[1])),
                    mul(ct_high, tangents[2]))
jvp_rules[clamp_p] = clamp_jvp

nextafter_p = Primitive("nextafter", kind=ELEMENTWISE)
def nextafter(x1, x2):
    """The next float after ``x1`` in the direction of ``x2``."""
    _check_float("nextafter", x1, x2)
    return nextafter_p.bind(*_same_dtype("nextafter", [x1, x2], x1))
impl_rules[nextafter_p] = np.nextafter
def nextafter_vjp(ct, x1, x2, *, out):
    raise NotImplementedError("Differentiation rule for 'nextafter' not implemented")
vjp_rules[nextafter_p] = nextafter_vjp
jvp_rules[nextafter_p] = lambda primals, tangents: nextafter_vjp(None, *primals, out=None)

# --8<-- [start:reduce_precision]
reduce_precision_p = Primitive("reduce_precision", kind=ELEMENTWISE)
def reduce_precision(operand, exponent_bits: int, mantissa_bits: int):
    """``operand`` rounded to a float with ``exponent_bits`` and ``mantissa_bits`` (kept in
    its own dtype): ``reduce_precision(x, 5, 10)`` is what float16 would hold, ``(8, 7)``
    bfloat16. Used to simulate a narrower type's rounding."""
    exponent_bits, mantissa_bits = operator.index(exponent_bits), operator.index(mantissa_bits)
    if exponent_bits < 1:
        raise ValueError(f"reduce_precision: exponent_bits must be positive; got "
                         f"{exponent_bits}")
    if mantissa_bits < 0:
        raise ValueError(f"reduce_precision: mantissa_bits must be non-negative; got "
                         f"{mantissa_bits}")
    _check_float("reduce_precision", operand)
    return reduce_precision_p.bind(operand, exponent_bits=exponent_bits,
                                   mantissa_bits=mantissa_bits)
def reduce_precision_impl(x, *, exponent_bits, mantissa_bits):
    """On the bits: round the mantissa to nearest, ties to even; then an exponent above the
    narrow type's range becomes infinity, one at or below its smallest normal exponent a zero
    (the narrow type has no subnormals here, as in XLA). The sign stays; a NaN stays a NaN."""
    info = ml_dtypes.finfo(x.dtype)  # (NumPy's finfo knows no bfloat16)
    unsigned = np.dtype(f"uint{8 * x.dtype.itemsize}")
    bits = np.asarray(x, order="C").view(unsigned)  # (0-d stays 0-d)
    c = unsigned.type  # constants in the bits' own type
    drop = info.nmant - mantissa_bits  # mantissa bits to round away
    if drop > 0:
        odd = (bits >> c(drop)) & c(1)  # the last kept bit: a tie rounds to make it 0
        bits = (bits + c((1 << (drop - 1)) - 1) + odd) & ~c((1 << drop) - 1)
    exponent_width = info.nexp
    if exponent_bits < exponent_width:
        exponent_mask = c(((1 << exponent_width) - 1) << info.nmant)
        sign = bits & c(1 << (exponent_width + info.nmant))
        bias, narrow_bias = (1 << (exponent_width - 1)) - 1, (1 << (exponent_bits - 1)) - 1
        exponent = bits & exponent_mask
        bits = np.where(exponent > c((bias + narrow_bias) << info.nmant), sign | exponent_mask,
                        np.where(exponent <= c((bias - narrow_bias) << info.nmant), sign, bits))
    out = np.asarray(bits).view(x.dtype)
    return np.where(np.isnan(x), x, out) if drop > 0 or exponent_bits < exponent_width else out
impl_rules[reduce_precision_p] = reduce_precision_impl
# Linear: its derivative rounds the tangent (and the cotangent) the same way, as in JAX.
vjp_rules[reduce_precision_p] = lambda ct, x, *, out, **params: [
    reduce_precision_p.bind(ct, **params)]
jvp_rules[reduce_precision_p] = lambda primals, tangents, **params: (
    reduce_precision_p.bind(primals[0], **params), reduce_precision_p.bind(tangents[0], **params))
# --8<-- [end:reduce_precision]

# This module's primitives: each takes floats and gives a float of their dtype.
SPECIAL = (erf_inv_p, rsqrt_p, erf_p, erfc_p, lgamma_p, digamma_p, polygamma_p, clamp_p,
           nextafter_p, reduce_precision_p)
