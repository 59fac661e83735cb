"""Every primitive of stage 1, one block each: the primitive, its NumPy implementation, its
VJP rule and its JVP rule, each followed by its registration.

The functions named like ``jax.lax``'s (``add``, ``mul``, ``broadcast_in_dim``, ...) are thin
wrappers around ``bind``. They expect operands that already agree in shape and dtype; the
``numpy`` module does broadcasting and type promotion before calling them, as ``jax.numpy``
does over ``jax.lax``.

The rule signatures:

- ``impl(*np_arrays, **params) -> np_array`` (a list for ``multiple_results`` primitives);
- ``vjp(ct, *primals, out, **params) -> [ct_for_each_primal]``: ``out`` is the primal output,
  ``None`` in the result means a zero cotangent. Rules are written with primitives, so the
  backward pass can itself be differentiated (or, in stage 2, traced);
- ``jvp(primals, tangents, **params) -> (primal_out, tangent_out)``.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import dtypes, signed_zeros
from .core import (
    ELEMENTWISE,
    REDUCTION,
    SHAPE,
    Array,
    Primitive,
    Tracer,
    asarray,
    get_aval,
    impl_rules,
    jvp_rules,
    jvp_rules_take_none,
    vjp_rules,
    vjp_rules_take_needs,
    weak_from_the_rest,
    weak_when_operands_weak,
)

Shape = tuple[int, ...]


def zeros_like(x: Any) -> Any:
    return full_like(x, 0)


def full_like(x: Any, fill_value: float | int | bool, dtype: Any = None,
              shape: Shape | None = None, sharding: Any = None) -> Any:
    """An array of ``fill_value`` with the shape, dtype and weak type of ``x`` (and, from
    stage 4 on, its sharding: the zeros of a cotangent are laid out as its primal), or the
    ``dtype`` (strong) and ``shape`` given, as JAX's ``lax.full_like``."""
    aval = get_aval(x)
    if shape is None or tuple(shape) == aval.shape:
        shape, sharding = aval.shape, aval.sharding if sharding is None else sharding
    if dtype is None:
        return full(shape, fill_value, aval.dtype, aval.weak_type, sharding)
    return full(shape, fill_value, dtype, False, sharding)


def full(shape: Shape, fill_value: float | int | bool, dtype: Any = None,
         weak_type: bool = False, sharding: Any = None) -> Any:
    """A broadcast scalar: in eager mode a view, so no memory is filled. Without ``dtype``,
    the fill value's (weakly typed for a Python scalar), as JAX's ``lax.full``."""
    if dtype is None:
        filled = asarray(fill_value)
        dtype, weak_type = filled.dtype, weak_type or filled.weak_type
    dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "full")
    scalar = Array(np.asarray(fill_value, dtype=dtype), weak_type)
    if shape == ():
        return scalar
    return broadcast_in_dim(scalar, tuple(shape), (), out_sharding=sharding)


def with_sharding_of(x: Any, like: Any) -> Any:
    """``x`` laid out as ``like`` is (from stage 4 on; before, ``x`` itself). A cotangent has
    its primal's type, its sharding included. A plain array counts as replicated, as it is
    when stage 4 mixes it with sharded ones.

    The change of layout is a broadcast of ``x`` to its own shape with ``out_sharding``, the
    one way stage 1 can say it. NB: JAX's transpose rules do the same in ``_unbroadcast``
    (jax/_src/lax/lax.py), with reshape's ``out_sharding``."""
    aval, like_aval = get_aval(x), get_aval(like)
    return x if aval.shape != like_aval.shape else with_sharding(x, like_aval.sharding)


def with_sharding(x: Any, target: Any) -> Any:
    """``x`` laid out as ``target`` (a sharding of x's shape; None: replicated), as in
    :func:`with_sharding_of`."""
    aval = get_aval(x)
    current = aval.sharding
    if current is None and target is None or current == target:
        return x
    if target is None:
        target = current.with_spec(())  # replicated, on x's mesh
    if (current is None or current.is_fully_replicated) and target.is_fully_replicated:
        return x  # the same layout: every device holds all of it
    return broadcast_in_dim(x, aval.shape, tuple(range(aval.ndim)), out_sharding=target)


# --8<-- [start:unary_elementwise_jvp]
def _unary_elementwise_jvp(prim: Primitive):
    """An elementwise op has a diagonal Jacobian, so its VJP rule applied to the tangent is
    its JVP: ``t_out = f'(x) * t``."""
    def jvp(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        return out, vjp_rules[prim](tangents[0], *primals, out=out, **params)[0]
    return jvp
# --8<-- [end:unary_elementwise_jvp]


def _zero_vjp(ct, *primals, out, **params):
    """The rule of a primitive whose output does not depend smoothly on its inputs."""
    return [None] * len(primals)


def _zero_jvp(prim: Primitive):
    """The JVP rule of a primitive whose derivative is zero (sign, floor, comparisons...): its
    tangent is None, a symbolic zero, as JAX's is ``Zero``. An array of zeros would meet the
    partials of the ops after it, and 0 * inf is NaN: ``jvp(lambda x: x * sign(x))`` at inf."""
    def jvp(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        return out, [None] * len(out) if prim.multiple_results else None
    return jvp


# ------------------------------------------------------------------------------------------
# Unary elementwise
# ------------------------------------------------------------------------------------------

neg_p = Primitive("neg", kind=ELEMENTWISE)
def neg(x): return neg_p.bind(x)
impl_rules[neg_p] = np.negative
def neg_vjp(ct, x, *, out): return [neg(ct)]
vjp_rules[neg_p] = neg_vjp
jvp_rules[neg_p] = _unary_elementwise_jvp(neg_p)

# --8<-- [start:exp]
exp_p = Primitive("exp", kind=ELEMENTWISE)
def exp(x): return exp_p.bind(x)
impl_rules[exp_p] = np.exp
def exp_vjp(ct, x, *, out): return [mul(ct, out)]
vjp_rules[exp_p] = exp_vjp
def exp_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    y = exp(x)
    return y, mul(x_dot, y)
jvp_rules[exp_p] = exp_jvp
# --8<-- [end:exp]

log_p = Primitive("log", kind=ELEMENTWISE)
def log(x): return log_p.bind(x)
impl_rules[log_p] = np.log
def log_vjp(ct, x, *, out): return [div(ct, x)]
vjp_rules[log_p] = log_vjp
jvp_rules[log_p] = _unary_elementwise_jvp(log_p)

log1p_p = Primitive("log1p", kind=ELEMENTWISE)
def log1p(x): return log1p_p.bind(x)
impl_rules[log1p_p] = np.log1p
def log1p_vjp(ct, x, *, out): return [div(ct, add(x, full_like(x, 1, shape=())))]
vjp_rules[log1p_p] = log1p_vjp
jvp_rules[log1p_p] = _unary_elementwise_jvp(log1p_p)

expm1_p = Primitive("expm1", kind=ELEMENTWISE)
def expm1(x): return expm1_p.bind(x)
impl_rules[expm1_p] = np.expm1
def expm1_vjp(ct, x, *, out): return [mul(ct, add(out, full_like(out, 1, shape=())))]
vjp_rules[expm1_p] = expm1_vjp
jvp_rules[expm1_p] = _unary_elementwise_jvp(expm1_p)

sin_p = Primitive("sin", kind=ELEMENTWISE)
def sin(x): return sin_p.bind(x)
impl_rules[sin_p] = np.sin
def sin_vjp(ct, x, *, out):
    # --8<-- [start:task1_2]
    return [mul(ct, cos(x))]
    # --8<-- [end:task1_2]
vjp_rules[sin_p] = sin_vjp
jvp_rules[sin_p] = _unary_elementwise_jvp(sin_p)

cos_p = Primitive("cos", kind=ELEMENTWISE)
def cos(x): return cos_p.bind(x)
impl_rules[cos_p] = np.cos
def cos_vjp(ct, x, *, out):
    # --8<-- [start:task1_2]
    return [neg(mul(ct, sin(x)))]
    # --8<-- [end:task1_2]
vjp_rules[cos_p] = cos_vjp
jvp_rules[cos_p] = _unary_elementwise_jvp(cos_p)

tan_p = Primitive("tan", kind=ELEMENTWISE)
def tan(x): return tan_p.bind(x)
impl_rules[tan_p] = np.tan
def tan_vjp(ct, x, *, out): return [mul(ct, add(full_like(out, 1, shape=()), mul(out, out)))]
vjp_rules[tan_p] = tan_vjp
jvp_rules[tan_p] = _unary_elementwise_jvp(tan_p)

# --8<-- [start:tanh]
tanh_p = Primitive("tanh", kind=ELEMENTWISE)
def tanh(x): return tanh_p.bind(x)
impl_rules[tanh_p] = np.tanh
def tanh_vjp(ct, x, *, out):
    return [mul(ct, sub(full_like(out, 1, shape=()), mul(out, out)))]  # d tanh = 1 - tanh^2
vjp_rules[tanh_p] = tanh_vjp
jvp_rules[tanh_p] = _unary_elementwise_jvp(tanh_p)
# --8<-- [end:tanh]

logistic_p = Primitive("logistic", kind=ELEMENTWISE)
def logistic(x): return logistic_p.bind(x)
def logistic_impl(x):
    if x.dtype.kind == "c" or x.dtype.itemsize < 4:  # as XLA: the plain form, each op rounded
        return (1 / (1 + np.exp(-x))).astype(x.dtype)
    # Two forms so that exp never overflows: 1/(1+e^-x) for x >= 0, e^x/(1+e^x) below.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype)
impl_rules[logistic_p] = logistic_impl
def logistic_vjp(ct, x, *, out): return [mul(ct, mul(out, sub(full_like(out, 1, shape=()), out)))]
vjp_rules[logistic_p] = logistic_vjp
jvp_rules[logistic_p] = _unary_elementwise_jvp(logistic_p)

sqrt_p = Primitive("sqrt", kind=ELEMENTWISE)
def sqrt(x): return sqrt_p.bind(x)
impl_rules[sqrt_p] = np.sqrt
def sqrt_vjp(ct, x, *, out): return [div(ct, mul(full_like(out, 2), out))]
vjp_rules[sqrt_p] = sqrt_vjp
jvp_rules[sqrt_p] = _unary_elementwise_jvp(sqrt_p)

abs_p = Primitive("abs", kind=ELEMENTWISE)
def abs(x): return abs_p.bind(x)  # noqa: A001 -- lax's name
impl_rules[abs_p] = np.abs
def abs_vjp(ct, x, *, out):  # at 0 the derivative is taken as +1, as in JAX
    return [select_n(ge(x, zeros_like(x)), neg(ct), ct)]
vjp_rules[abs_p] = abs_vjp
jvp_rules[abs_p] = _unary_elementwise_jvp(abs_p)  # complex_numbers.py adds |z|'s rules

sign_p = Primitive("sign", kind=ELEMENTWISE)
def sign(x): return sign_p.bind(x)
def sign_impl(x):  # NumPy's sign of -0.0 is 0.0; JAX's, and the kernels', is -0.0
    out = np.sign(x)
    return np.copysign(out, x) if dtypes.kind(x.dtype) == "f" else out
impl_rules[sign_p] = sign_impl
vjp_rules[sign_p] = _zero_vjp
jvp_rules[sign_p] = _zero_jvp(sign_p)

floor_p = Primitive("floor", kind=ELEMENTWISE)
def floor(x): return floor_p.bind(x)
impl_rules[floor_p] = np.floor
vjp_rules[floor_p] = _zero_vjp
jvp_rules[floor_p] = _zero_jvp(floor_p)

ceil_p = Primitive("ceil", kind=ELEMENTWISE)
def ceil(x): return ceil_p.bind(x)
impl_rules[ceil_p] = np.ceil
vjp_rules[ceil_p] = _zero_vjp
jvp_rules[ceil_p] = _zero_jvp(ceil_p)

integer_pow_p = Primitive("integer_pow", kind=ELEMENTWISE)
def integer_pow(x, y: int):
    aval = get_aval(x)
    if y < 0 and dtypes.kind(aval.dtype) in "iu":  # JAX's TypeError (its dtype rule)
        shape = ",".join(str(d) for d in aval.shape)
        raise TypeError(f"Integers cannot be raised to negative powers, got "
                        f"integer_pow({aval.dtype.name}[{shape}], {y})")
    return integer_pow_p.bind(x, y=y)
def integer_pow_impl(x, *, y):
    return np.power(x, y, dtype=x.dtype) if y >= 0 else (1 / np.power(x, -y)).astype(x.dtype)
impl_rules[integer_pow_p] = integer_pow_impl
def integer_pow_vjp(ct, x, *, out, y):
    if y == 0:
        return [None]
    slope = full_like(x, y) if y == 1 else mul(full_like(x, y), integer_pow(x, y - 1))
    return [mul(ct, slope)]
vjp_rules[integer_pow_p] = integer_pow_vjp
jvp_rules[integer_pow_p] = _unary_elementwise_jvp(integer_pow_p)

not_p = Primitive("not", kind=ELEMENTWISE)
def bitwise_not(x): return not_p.bind(x)
impl_rules[not_p] = np.invert
vjp_rules[not_p] = _zero_vjp
jvp_rules[not_p] = _zero_jvp(not_p)

# ------------------------------------------------------------------------------------------
# Binary elementwise (operands of equal shape and dtype)
# ------------------------------------------------------------------------------------------

# --8<-- [start:defjvp]
def defjvp(prim: Primitive, *rules):
    """The JVP rule of ``prim`` from one rule per operand, ``rule(t, *primals, out=out,
    **params)``: the term that operand's tangent ``t`` adds to the output's tangent (None for
    an operand without a derivative). A rule is called only for a tangent that is not zero:
    forward mode gives None for a constant's tangent, and the term of an array of zeros can
    be NaN where the derivative is not (0 * log(x) at a negative x, 0 * x at an infinite x).
    NB: JAX's ``ad.defjvp`` (jax/_src/interpreters/ad.py) skips its ``Zero`` tangents so."""
    def jvp(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        terms = [rule(t, *primals, out=out, **params)
                 for rule, t in zip(rules, tangents) if rule is not None and t is not None]
        total = terms[0] if terms else zeros_like(out)
        for term in terms[1:]:
            total = add(total, term)
        return out, total
    jvp_rules_take_none.add(prim)
    return jvp
# --8<-- [end:defjvp]


# --8<-- [start:add]
add_p = Primitive("add", kind=ELEMENTWISE)
def add(x, y): return add_p.bind(x, y)
impl_rules[add_p] = np.add
def add_vjp(ct, x, y, *, out): return [ct, ct]
vjp_rules[add_p] = add_vjp
def add_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    return add(x, y), add(x_dot, y_dot)
jvp_rules[add_p] = add_jvp
# --8<-- [end:add]

sub_p = Primitive("sub", kind=ELEMENTWISE)
def sub(x, y): return sub_p.bind(x, y)
impl_rules[sub_p] = np.subtract
def sub_vjp(ct, x, y, *, out, needs=(True, True)): return [ct, neg(ct) if needs[1] else None]
vjp_rules[sub_p] = sub_vjp
def sub_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    return sub(x, y), sub(x_dot, y_dot)
jvp_rules[sub_p] = sub_jvp

# --8<-- [start:mul]
mul_p = Primitive("mul", kind=ELEMENTWISE)
def mul(x, y): return mul_p.bind(x, y)
impl_rules[mul_p] = np.multiply
def mul_vjp(ct, x, y, *, out, needs=(True, True)):
    # Only an input on the tape needs its cotangent: x * 2.0 makes one product, not two.
    return [mul(ct, y) if needs[0] else None, mul(x, ct) if needs[1] else None]
vjp_rules[mul_p] = mul_vjp
jvp_rules[mul_p] = defjvp(mul_p, lambda x_dot, x, y, *, out: mul(x_dot, y),
                          lambda y_dot, x, y, *, out: mul(x, y_dot))
# --8<-- [end:mul]

div_p = Primitive("div", kind=ELEMENTWISE)
def div(x, y): return div_p.bind(x, y)
def div_impl(x, y):
    if dtypes.is_int(x.dtype):  # integer division rounds toward zero, as in C and XLA
        safe_y = np.where(y == 0, 1, y).astype(x.dtype)
        with np.errstate(over="ignore"):  # the most negative value // -1 wraps, as in XLA
            floor = np.floor_divide(x, safe_y)
            rounded_down = (x - floor * safe_y != 0) & ((x < 0) != (safe_y < 0))
            quotient = (floor + rounded_down).astype(x.dtype)
        return np.where(y == 0, np.array(-1).astype(x.dtype), quotient)
    return np.true_divide(x, y)
impl_rules[div_p] = div_impl
def div_vjp(ct, x, y, *, out, needs=(True, True)):
    ct_x = div(ct, y)
    return [ct_x, neg(mul(ct_x, out)) if needs[1] else None]  # d(x/y)/dy = -(x/y)/y
vjp_rules[div_p] = div_vjp
def div_jvp_x(x_dot, x, y, *, out):
    # --8<-- [start:task1_4]
    return div(x_dot, y)
    # --8<-- [end:task1_4]
def div_jvp_y(y_dot, x, y, *, out):
    # --8<-- [start:task1_4]
    return neg(mul(y_dot, div(out, y)))
    # --8<-- [end:task1_4]
jvp_rules[div_p] = defjvp(div_p, div_jvp_x, div_jvp_y)

rem_p = Primitive("rem", kind=ELEMENTWISE)
def rem(x, y): return rem_p.bind(x, y)
def rem_impl(x, y):
    if dtypes.is_int(x.dtype):
        return np.where(y == 0, x, np.fmod(x, np.where(y == 0, 1, y))).astype(x.dtype)
    return np.fmod(x, y)
impl_rules[rem_p] = rem_impl
def _truncate(x): return mul(sign(x), floor(abs(x)))
def rem_vjp(ct, x, y, *, out): return [ct, neg(mul(ct, _truncate(div(x, y))))]
vjp_rules[rem_p] = rem_vjp
jvp_rules[rem_p] = defjvp(rem_p, lambda x_dot, x, y, *, out: x_dot,
                          lambda y_dot, x, y, *, out: neg(mul(y_dot, _truncate(div(x, y)))))

pow_p = Primitive("pow", kind=ELEMENTWISE)
def pow(x, y): return pow_p.bind(x, y)  # noqa: A001 -- lax's name
def pow_impl(x, y):
    if dtypes.kind(x.dtype) != "i" or not np.any(y < 0):
        return np.power(x, y)
    # A negative power (NumPy refuses it): the true power truncated, 0 but for 1 and -1
    negative = np.where(x == 1, 1, np.where(x == -1, np.where(y & 1, -1, 1), 0))
    return np.where(y < 0, negative, np.power(x, np.maximum(y, 0))).astype(x.dtype)
impl_rules[pow_p] = pow_impl
def _pow_dx(x, y):
    # y * x^(y-1), taken as 0 where y == 0 so that d(x^0) = 0 even at x = 0.
    slope = mul(y, pow(x, sub(y, full_like(y, 1))))
    return select_n(eq(y, zeros_like(y)), slope, zeros_like(slope))
def _pow_dy(x, out):
    # log(x) * x^y, with log(0) taken as 0 (as JAX's): 0 where 0^y is finite, but NaN where
    # it is not (y < 0) or is NaN, rather than a 0 that would hide a NaN power.
    return mul(log(select_n(eq(x, zeros_like(x)), x, full_like(x, 1))), out)
def pow_vjp(ct, x, y, *, out): return [mul(ct, _pow_dx(x, y)), mul(ct, _pow_dy(x, out))]
vjp_rules[pow_p] = pow_vjp
jvp_rules[pow_p] = defjvp(pow_p, lambda x_dot, x, y, *, out: mul(x_dot, _pow_dx(x, y)),
                          lambda y_dot, x, y, *, out: mul(y_dot, _pow_dy(x, out)))


def _balanced_eq(x, y, z):
    """1 where x wins the comparison, 0.5 on a tie, 0 where it loses (JAX splits ties)."""
    one, half, zero = full_like(z, 1), full_like(z, 0.5), zeros_like(z)
    return select_n(eq(x, z), zero, select_n(eq(y, z), one, half))


max_p = Primitive("max", kind=ELEMENTWISE)
def max(x, y): return max_p.bind(x, y)  # noqa: A001 -- lax's name
impl_rules[max_p] = signed_zeros.maximum  # +0 above -0, as XLA
def max_vjp(ct, x, y, *, out):
    return [mul(ct, _balanced_eq(x, y, out)), mul(ct, _balanced_eq(y, x, out))]
vjp_rules[max_p] = max_vjp
def max_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    out = max(x, y)
    return out, add(mul(x_dot, _balanced_eq(x, y, out)), mul(y_dot, _balanced_eq(y, x, out)))
jvp_rules[max_p] = max_jvp

min_p = Primitive("min", kind=ELEMENTWISE)
def min(x, y): return min_p.bind(x, y)  # noqa: A001 -- lax's name
impl_rules[min_p] = signed_zeros.minimum
def min_vjp(ct, x, y, *, out):
    return [mul(ct, _balanced_eq(x, y, out)), mul(ct, _balanced_eq(y, x, out))]
vjp_rules[min_p] = min_vjp
def min_jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    out = min(x, y)
    return out, add(mul(x_dot, _balanced_eq(x, y, out)), mul(y_dot, _balanced_eq(y, x, out)))
jvp_rules[min_p] = min_jvp

atan2_p = Primitive("atan2", kind=ELEMENTWISE)
def atan2(x, y): return atan2_p.bind(x, y)
def atan2_impl(x, y):
    if x.dtype.kind != "c":
        return np.arctan2(x, y)
    # NumPy has no complex arctan2; StableHLO defines it as -i log((y + ix) / sqrt(x² + y²)).
    return (-1j * np.log((y + 1j * x) / np.sqrt(x * x + y * y))).astype(x.dtype)
impl_rules[atan2_p] = atan2_impl
def _atan2_denominator(x, y): return add(mul(x, x), mul(y, y))
def atan2_vjp(ct, x, y, *, out):
    denom = _atan2_denominator(x, y)  # d atan2(x, y) = (y dx - x dy) / (x^2 + y^2)
    return [mul(ct, div(y, denom)), neg(mul(ct, div(x, denom)))]
vjp_rules[atan2_p] = atan2_vjp
jvp_rules[atan2_p] = defjvp(
    atan2_p, lambda x_dot, x, y, *, out: mul(x_dot, div(y, _atan2_denominator(x, y))),
    lambda y_dot, x, y, *, out: neg(mul(y_dot, div(x, _atan2_denominator(x, y)))))


# --8<-- [start:unbroadcast]
def _unbroadcast(operand, ct):
    """The cotangent of one operand of a binary op. Every elementwise primitive takes a scalar
    beside an array as it is (``mul a 2.0:f32[]``), so a scalar operand's cotangent is the
    sum of the result's over every dim: a cotangent always has its primal's shape.

    NB: JAX's transpose rules of add, sub and mul call ``_unbroadcast`` in jax/_src/lax/lax.py.
    """
    if ct is None or not _ndim(ct) or _ndim(operand):
        return ct
    return reduce_sum(ct, tuple(range(_ndim(ct))))


def _ndim(x: Any) -> int:
    """``get_aval(x).ndim`` without making the aval (this runs twice per binary VJP)."""
    return len(x.shape) if isinstance(x, (Array, Tracer)) else get_aval(x).ndim


def _with_unbroadcast(rule):
    """``rule`` (a binary op's VJP), with each cotangent brought to its operand's shape, and
    none for an operand that needs none (a constant: ``needs`` says which are on the tape)."""
    takes_needs = "needs" in inspect.signature(rule).parameters

    def vjp(ct, x, y, *, out, needs=(True, True)):
        ct_x, ct_y = (rule(ct, x, y, out=out, needs=needs) if takes_needs else
                      rule(ct, x, y, out=out))
        return [_unbroadcast(x, ct_x) if needs[0] else None,
                _unbroadcast(y, ct_y) if needs[1] else None]
    return vjp


for _prim in (add_p, sub_p, mul_p, div_p, rem_p, pow_p, max_p, min_p, atan2_p):
    vjp_rules[_prim] = _with_unbroadcast(vjp_rules[_prim])
    vjp_rules_take_needs.add(_prim)
# --8<-- [end:unbroadcast]


def _nondifferentiable_binary(name: str, impl) -> tuple[Primitive, Any]:
    """Comparisons and bitwise ops: integer or boolean results, zero derivatives."""
    prim = Primitive(name, kind=ELEMENTWISE)
    impl_rules[prim] = impl
    vjp_rules[prim] = _zero_vjp
    jvp_rules[prim] = _zero_jvp(prim)
    return prim, lambda x, y: prim.bind(x, y)


eq_p, eq = _nondifferentiable_binary("eq", np.equal)
ne_p, ne = _nondifferentiable_binary("ne", np.not_equal)
lt_p, lt = _nondifferentiable_binary("lt", np.less)
le_p, le = _nondifferentiable_binary("le", np.less_equal)
gt_p, gt = _nondifferentiable_binary("gt", np.greater)
ge_p, ge = _nondifferentiable_binary("ge", np.greater_equal)
weak_when_operands_weak.update((eq_p, ne_p, lt_p, le_p, gt_p, ge_p))  # 1.5 > 2 is weak
and_p, bitwise_and = _nondifferentiable_binary("and", np.bitwise_and)
or_p, bitwise_or = _nondifferentiable_binary("or", np.bitwise_or)
xor_p, bitwise_xor = _nondifferentiable_binary("xor", np.bitwise_xor)


# Shifts by the bit width or more give 0 (logical) or the sign (arithmetic), as in XLA; in
# C, and so in NumPy, they are undefined.
# Shifts act on the bit pattern, whatever the signedness of the type; an amount outside
# [0, bits) (a negative one included) shifts everything out.
def _bit_width(x): return x.dtype.itemsize * 8
def _in_range(x, y): return (y >= 0) & (y < _bit_width(x))
def _bits_as(x, kind):
    return np.asarray(x).view(np.dtype(f"{kind}{_bit_width(x)}"))
def shift_left_impl(x, y):
    ok = _in_range(x, y)
    shifted = _bits_as(x, "uint") << np.where(ok, y, 0).astype(f"uint{_bit_width(x)}")
    return np.where(ok, shifted, 0).astype(shifted.dtype).view(x.dtype)
def shift_right_logical_impl(x, y):
    ok = _in_range(x, y)
    shifted = _bits_as(x, "uint") >> np.where(ok, y, 0).astype(f"uint{_bit_width(x)}")
    return np.where(ok, shifted, 0).astype(shifted.dtype).view(x.dtype)
def shift_right_arithmetic_impl(x, y):
    amount = np.where(_in_range(x, y), y, _bit_width(x) - 1).astype(f"int{_bit_width(x)}")
    return (_bits_as(x, "int") >> amount).view(x.dtype)


shift_left_p, shift_left = _nondifferentiable_binary("shift_left", shift_left_impl)
shift_right_logical_p, shift_right_logical = _nondifferentiable_binary(
    "shift_right_logical", shift_right_logical_impl)
shift_right_arithmetic_p, shift_right_arithmetic = _nondifferentiable_binary(
    "shift_right_arithmetic", shift_right_arithmetic_impl)

# --8<-- [start:select_n]
select_n_p = Primitive("select_n", kind=ELEMENTWISE)
def select_n(which, *cases):
    """``cases[which]`` elementwise: ``select_n(pred, if_false, if_true)`` for a bool ``which``."""
    return select_n_p.bind(which, *cases)
def select_n_impl(which, *cases):
    if which.dtype == np.bool_:
        return np.where(which, cases[1], cases[0])
    return np.choose(which, cases)
impl_rules[select_n_p] = select_n_impl
weak_from_the_rest.add(select_n_p)  # an int32 ``which`` makes no weak result strong
def select_n_vjp(ct, which, *cases, out):
    which = with_sharding_of(which, ct)  # (stage 4: the cotangent may be laid out otherwise)
    zeros = zeros_like(ct)
    case_cts = []
    for i in range(len(cases)):
        routed = [zeros] * len(cases)
        routed[i] = ct
        case_cts.append(select_n(which, *routed))
    return [None, *case_cts]
vjp_rules[select_n_p] = select_n_vjp
def select_n_jvp(primals, tangents):
    which, *cases = primals
    return select_n(which, *cases), select_n(which, *tangents[1:])
jvp_rules[select_n_p] = select_n_jvp
# --8<-- [end:select_n]

# ------------------------------------------------------------------------------------------
# Types
# ------------------------------------------------------------------------------------------

convert_element_type_p = Primitive("convert_element_type", kind=ELEMENTWISE)
def convert_element_type(x, new_dtype, weak_type: bool = False):
    new_dtype = dtypes.check_and_canonicalize_user_dtype(new_dtype, "convert_element_type")
    return convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
def convert_element_type_impl(x, *, new_dtype, weak_type):
    # XLA's conversion: a float becomes an integer by saturating (NaN to 0), where NumPy's
    # cast is undefined. The generated kernels spell the same (kernel_math.float_to_int).
    return dtypes.convert_values(x, new_dtype)
impl_rules[convert_element_type_p] = convert_element_type_impl
def convert_element_type_vjp(ct, x, *, out, new_dtype, weak_type):
    x_aval = get_aval(x)
    if not dtypes.is_inexact(x_aval.dtype) or not dtypes.is_inexact(new_dtype):
        return [None]
    # NB: complex to real keeps the real part: the transpose of float -> complex, as in JAX.
    return [convert_element_type(ct, x_aval.dtype, x_aval.weak_type)]
vjp_rules[convert_element_type_p] = convert_element_type_vjp
def convert_element_type_jvp(primals, tangents, *, new_dtype, weak_type):
    out = convert_element_type(primals[0], new_dtype, weak_type)
    if not dtypes.is_inexact(new_dtype) or not dtypes.is_inexact(get_aval(primals[0]).dtype):
        return out, zeros_like(out)
    return out, convert_element_type(tangents[0], new_dtype, weak_type)
jvp_rules[convert_element_type_p] = convert_element_type_jvp

bitcast_convert_type_p = Primitive("bitcast_convert_type", kind=ELEMENTWISE)
# (bound with the same width only: lax.bitcast_convert_type, in lax_composed.py, splits and
# joins words of other widths around it)
impl_rules[bitcast_convert_type_p] = lambda x, *, new_dtype: x.view(new_dtype)
vjp_rules[bitcast_convert_type_p] = _zero_vjp
jvp_rules[bitcast_convert_type_p] = _zero_jvp(bitcast_convert_type_p)

stop_gradient_p = Primitive("stop_gradient", kind=ELEMENTWISE)
def stop_gradient(x): return stop_gradient_p.bind(x)
impl_rules[stop_gradient_p] = lambda x: x
vjp_rules[stop_gradient_p] = _zero_vjp
jvp_rules[stop_gradient_p] = _zero_jvp(stop_gradient_p)

# A new array with the values of x (``jnp.array(x)``, ``jnp.copy``): donating or deleting the
# copy leaves x alone. Arrays are immutable, so the copy shares x's buffer until one of them
# is donated (the buffer pool reuses only a buffer no other array holds).
copy_p = Primitive("copy", kind=ELEMENTWISE)
def copy(x): return copy_p.bind(x)
impl_rules[copy_p] = lambda x: x
vjp_rules[copy_p] = lambda ct, x, *, out: [copy(ct)]
jvp_rules[copy_p] = _unary_elementwise_jvp(copy_p)

# x itself, under a name that a checkpoint policy can ask about (stage 2's ``checkpoint_name``
# and ``checkpoint_policies.save_only_these_names``). Its tangent goes unnamed, as in JAX: a
# policy sees the names of forward values only.
name_p = Primitive("name", kind=ELEMENTWISE)
impl_rules[name_p] = lambda x, *, name: x
vjp_rules[name_p] = lambda ct, x, *, out, name: [ct]
jvp_rules[name_p] = lambda primals, tangents, *, name: (name_p.bind(primals[0], name=name),
                                                        tangents[0])

# ------------------------------------------------------------------------------------------
# Shapes
# ------------------------------------------------------------------------------------------

def _read_only_view(x: np.ndarray, shape: Shape, strides: tuple[int, ...]) -> np.ndarray:
    """``x``'s memory seen with ``shape`` and ``strides``, read-only (``np.broadcast_to``'s
    result, in 0.3 µs where it takes 2.5: it builds an iterator to check what we know). A
    contiguous array lends its buffer; another takes NumPy's slower ``as_strided``."""
    if x.flags.c_contiguous and x.dtype.kind in "biufc":
        view = np.ndarray(shape, x.dtype, x, 0, strides)
        view.flags.writeable = False
        return view
    return np.lib.stride_tricks.as_strided(x, shape, strides, writeable=False)


def broadcast_in_dim_problem(operand_shape: Shape, shape: Shape, dims: tuple[int, ...]
                             ) -> str | None:
    """What is wrong with broadcasting ``operand_shape`` to ``shape`` along ``dims``, or None:
    JAX's rules (one dim per operand dim, in range, sizes that stretch), and ours that the
    dims increase. One statement of the rule for the eager impl (stage 1) and the abstract
    eval (stage 2), which raise it as JAX does, as a ``TypeError``."""
    if len(dims) != len(operand_shape):
        return f"give one broadcast dimension per operand dim, got {dims}."
    previous = -1
    for operand_dim, out_dim in enumerate(dims):  # (one loop: every eager broadcast asks)
        if not previous < out_dim < len(shape):
            return (f"broadcast_dimensions must be increasing output dims (0 to "
                    f"{len(shape) - 1}), got {dims}. To reorder dims, transpose first (JAX "
                    f"accepts them in any order: see 'Differences from JAX').")
        if operand_shape[operand_dim] not in (1, shape[out_dim]):
            return (f"operand dim {operand_dim} must be 1 or {shape[out_dim]}, the size of "
                    f"output dim {out_dim}.")
        previous = out_dim
    return None


# --8<-- [start:broadcast_in_dim]
broadcast_in_dim_p = Primitive("broadcast_in_dim", kind=SHAPE)
def broadcast_in_dim(x, shape: Shape, broadcast_dimensions: Sequence[int], out_sharding=None):
    """Operand dim ``i`` becomes output dim ``broadcast_dimensions[i]``; the rest are new.
    ``out_sharding`` is the result's sharding (stage 4), as for ``dot_general``: a new dim
    may be split, which the operand cannot say. NB: JAX always binds it (as ``sharding``);
    we bind it only when given, so stages 1-3 print their equations as before."""
    params = dict(shape=tuple(shape), broadcast_dimensions=tuple(broadcast_dimensions))
    if out_sharding is not None:
        params["out_sharding"] = out_sharding
    return broadcast_in_dim_p.bind(x, **params)
def broadcast_in_dim_impl(x, *, shape, broadcast_dimensions, out_sharding=None):
    x = np.asarray(x)
    problem = broadcast_in_dim_problem(x.shape, shape, broadcast_dimensions)
    if problem is not None:
        raise TypeError(f"broadcast_in_dim can't broadcast {x.shape} to {tuple(shape)}: "
                        f"{problem}")
    strides = [0] * len(shape)  # a new dim, or a stretched one of size 1, repeats: stride 0
    for operand_dim, out_dim in enumerate(broadcast_dimensions):
        if x.shape[operand_dim] == shape[out_dim]:
            strides[out_dim] = x.strides[operand_dim]
    return _read_only_view(x, tuple(shape), tuple(strides))  # a view: no copy in eager mode
impl_rules[broadcast_in_dim_p] = broadcast_in_dim_impl
def broadcast_in_dim_vjp(ct, x, *, out, shape, broadcast_dimensions, out_sharding=None):
    # Sum over the new dims and over the size-1 dims that were stretched.
    x_shape = get_aval(x).shape
    new_dims = [d for d in range(len(shape)) if d not in broadcast_dimensions]
    stretched = [out_d for in_d, out_d in enumerate(broadcast_dimensions)
                 if x_shape[in_d] == 1 and shape[out_d] != 1]
    summed = reduce_sum(ct, tuple(sorted(new_dims + stretched)))
    return [summed if get_aval(summed).shape == x_shape else reshape(summed, x_shape)]
vjp_rules[broadcast_in_dim_p] = broadcast_in_dim_vjp
# --8<-- [end:broadcast_in_dim]


# --8<-- [start:linear_jvp]
def _linear_jvp(prim: Primitive):
    """A primitive linear in its operands is its own JVP: ``f(x)`` and ``f(x_dot)``."""
    def jvp(primals, tangents, **params):
        return prim.bind(*primals, **params), prim.bind(*tangents, **params)
    return jvp
# --8<-- [end:linear_jvp]


jvp_rules[broadcast_in_dim_p] = _linear_jvp(broadcast_in_dim_p)

reshape_p = Primitive("reshape", kind=SHAPE)
def reshape(x, new_sizes: Shape, dimensions: Sequence[int] | None = None, *,
            out_sharding=None):
    """``x``'s elements, read in row-major order (after transposing by ``dimensions``, if
    given), as an array of shape ``new_sizes``. ``out_sharding`` (stage 4): the result's
    layout, which a reshape that moves elements between devices needs; bound only when given,
    as for ``broadcast_in_dim``."""
    if dimensions is not None:
        x = transpose(x, dimensions)
    params = dict(new_sizes=tuple(new_sizes), dimensions=None)
    if out_sharding is not None:
        params["out_sharding"] = out_sharding
    return reshape_p.bind(x, **params)
impl_rules[reshape_p] = lambda x, *, new_sizes, dimensions, out_sharding=None: (
    np.asarray(x).reshape(new_sizes))
def reshape_vjp(ct, x, *, out, new_sizes, dimensions, out_sharding=None):
    # Asked for a layout, the cotangent goes back to the primal's (stage 4).
    back = None if out_sharding is None else get_aval(x).sharding
    return [reshape(ct, get_aval(x).shape, out_sharding=back)]
vjp_rules[reshape_p] = reshape_vjp
jvp_rules[reshape_p] = _linear_jvp(reshape_p)

transpose_p = Primitive("transpose", kind=SHAPE)
def transpose(x, permutation: Sequence[int]):
    return transpose_p.bind(x, permutation=tuple(permutation))
impl_rules[transpose_p] = lambda x, *, permutation: np.transpose(x, permutation)
def transpose_vjp(ct, x, *, out, permutation):
    return [transpose(ct, tuple(np.argsort(permutation)))]
vjp_rules[transpose_p] = transpose_vjp
jvp_rules[transpose_p] = _linear_jvp(transpose_p)

squeeze_p = Primitive("squeeze", kind=SHAPE)
def squeeze(x, dimensions: Sequence[int]):
    return squeeze_p.bind(x, dimensions=tuple(dimensions))
impl_rules[squeeze_p] = lambda x, *, dimensions: np.squeeze(x, axis=dimensions)
def squeeze_vjp(ct, x, *, out, dimensions): return [reshape(ct, get_aval(x).shape)]
vjp_rules[squeeze_p] = squeeze_vjp
jvp_rules[squeeze_p] = _linear_jvp(squeeze_p)


def expand_dims(x, dimensions: Sequence[int]):
    """Inserts size-1 dims at ``dimensions`` (positions in the result)."""
    aval = get_aval(x)
    ndim = aval.ndim + len(dimensions)
    dims = sorted(d % ndim for d in dimensions)
    shape = list(aval.shape)
    for d in dims:
        shape.insert(d, 1)
    kept = [d for d in range(ndim) if d not in dims]
    return broadcast_in_dim(x, tuple(shape), kept)


concatenate_p = Primitive("concatenate", kind=SHAPE)
def concatenate(operands: Sequence[Any], dimension: int):
    return concatenate_p.bind(*operands, dimension=dimension)
impl_rules[concatenate_p] = lambda *xs, dimension: np.concatenate(xs, axis=dimension)
def concatenate_vjp(ct, *operands, out, dimension):
    cts, start = [], 0
    for x in operands:
        shape = get_aval(x).shape
        limits = list(get_aval(ct).shape)
        starts = [0] * len(limits)
        starts[dimension], limits[dimension] = start, start + shape[dimension]
        cts.append(slice(ct, starts, limits))
        start += shape[dimension]
    return cts
vjp_rules[concatenate_p] = concatenate_vjp
jvp_rules[concatenate_p] = _linear_jvp(concatenate_p)

pad_p = Primitive("pad", kind=SHAPE)
def pad(x, padding_value, padding_config: Sequence[tuple[int, int, int]]):
    """Pads each dim with (low, high, interior) copies of ``padding_value`` (non-negative)."""
    return pad_p.bind(x, padding_value, padding_config=tuple(map(tuple, padding_config)))
def pad_impl(x, padding_value, *, padding_config):
    if any(n < 0 for config in padding_config for n in config):
        raise ValueError(f"pad: negative padding is not supported, got {padding_config}.")
    shape = [lo + hi + (n - 1) * interior + n if n else lo + hi
             for n, (lo, hi, interior) in zip(x.shape, padding_config)]
    out = np.full(shape, padding_value, dtype=x.dtype)
    out[tuple(np.s_[lo:lo + (n - 1) * (interior + 1) + 1:interior + 1]
              for n, (lo, _, interior) in zip(x.shape, padding_config))] = x
    return out
impl_rules[pad_p] = pad_impl
def pad_vjp(ct, x, padding_value, *, out, padding_config):
    shape = get_aval(x).shape
    starts = [lo for lo, _, _ in padding_config]
    limits = [lo + (n - 1) * (interior + 1) + 1 for n, (lo, _, interior)
              in zip(shape, padding_config)]
    strides = [interior + 1 for _, _, interior in padding_config]
    ct_x = slice(ct, starts, limits, strides)
    all_axes = tuple(range(len(shape)))
    ct_value = sub(reduce_sum(ct, all_axes), reduce_sum(ct_x, all_axes))
    return [ct_x, ct_value]
vjp_rules[pad_p] = pad_vjp
jvp_rules[pad_p] = _linear_jvp(pad_p)

slice_p = Primitive("slice", kind=SHAPE)
def slice(x, start_indices, limit_indices, strides=None):  # noqa: A001 -- lax's name
    strides = None if strides is None else tuple(strides)
    return slice_p.bind(x, start_indices=tuple(start_indices),
                        limit_indices=tuple(limit_indices), strides=strides)
def slice_impl(x, *, start_indices, limit_indices, strides):
    strides = strides or (1,) * x.ndim
    return x[tuple(np.s_[a:b:s] for a, b, s in zip(start_indices, limit_indices, strides))]
impl_rules[slice_p] = slice_impl
def slice_vjp(ct, x, *, out, start_indices, limit_indices, strides):
    # The transpose of taking a slice is padding the cotangent back to the operand's shape.
    shape, out_shape = get_aval(x).shape, get_aval(out).shape
    strides = strides or (1,) * len(shape)
    config = []
    for n, start, m, stride in zip(shape, start_indices, out_shape, strides):
        used = start + (m - 1) * stride + 1 if m else start
        config.append((start, n - used, stride - 1 if m else 0))
    return [pad(ct, zeros_like(Array(np.zeros((), get_aval(ct).dtype))), config)]
vjp_rules[slice_p] = slice_vjp
jvp_rules[slice_p] = _linear_jvp(slice_p)

rev_p = Primitive("rev", kind=SHAPE)
def rev(x, dimensions: Sequence[int]): return rev_p.bind(x, dimensions=tuple(dimensions))
impl_rules[rev_p] = lambda x, *, dimensions: np.flip(x, dimensions)
def rev_vjp(ct, x, *, out, dimensions): return [rev(ct, dimensions)]
vjp_rules[rev_p] = rev_vjp
jvp_rules[rev_p] = _linear_jvp(rev_p)

iota_p = Primitive("iota")
def iota(dtype, shape: Shape, dimension: int = 0):
    """Counts 0, 1, 2, ... along ``dimension`` of an array of ``shape``."""
    dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "iota")
    return iota_p.bind(dtype=dtype, shape=tuple(shape), dimension=dimension)
def iota_impl(*, dtype, shape, dimension):
    line = np.arange(shape[dimension], dtype=dtype)
    expanded = [1] * len(shape)
    expanded[dimension] = shape[dimension]
    return np.broadcast_to(line.reshape(expanded), shape)
impl_rules[iota_p] = iota_impl
vjp_rules[iota_p] = _zero_vjp
jvp_rules[iota_p] = _zero_jvp(iota_p)

# ------------------------------------------------------------------------------------------
# Reductions
# ------------------------------------------------------------------------------------------


def _broadcast_back(reduced, operand_shape: Shape, axes: Sequence[int], sharding=None):
    """Broadcasts a reduced array over the dims ``axes`` that were reduced away (laid out by
    ``sharding``, the operand's, when given)."""
    kept = [d for d in range(len(operand_shape)) if d not in axes]
    return broadcast_in_dim(reduced, operand_shape, kept, out_sharding=sharding)


# --8<-- [start:reduce_sum]
reduce_sum_p = Primitive("reduce_sum", kind=REDUCTION, identity=lambda dtype: 0)
def reduce_sum(x, axes: Sequence[int]): return reduce_sum_p.bind(x, axes=tuple(axes))
def reduce_sum_impl(x, *, axes):  # (a narrow float adds up in float32: dtypes.py says why)
    return np.add.reduce(x, axis=axes, dtype=dtypes.accumulation_dtype(x.dtype)).astype(
        x.dtype, copy=False)
impl_rules[reduce_sum_p] = reduce_sum_impl
def reduce_sum_vjp(ct, x, *, out, axes):
    # The cotangent is laid out as x (stage 4): the reduced dims may have been split, and
    # only the primal knows. NB: JAX's _reduce_sum_transpose_rule does the same.
    return [_broadcast_back(ct, get_aval(x).shape, axes, get_aval(x).sharding)]
vjp_rules[reduce_sum_p] = reduce_sum_vjp
jvp_rules[reduce_sum_p] = _linear_jvp(reduce_sum_p)
# --8<-- [end:reduce_sum]


def _chooser_vjp(ct, x, *, out, axes):
    """For max and min: the cotangent goes to the winning elements, split evenly on ties."""
    shape = get_aval(x).shape
    winners = convert_element_type(eq(x, _broadcast_back(out, shape, axes)), get_aval(ct).dtype)
    counts = reduce_sum(winners, axes)
    return [mul(winners, _broadcast_back(div(ct, counts), shape, axes))]


def _chooser_jvp(prim: Primitive):
    def jvp(primals, tangents, *, axes):
        out = prim.bind(primals[0], axes=axes)
        return out, reduce_sum(mul(tangents[0], _chooser_vjp(
            full_like(out, 1), primals[0], out=out, axes=axes)[0]), axes)
    return jvp


reduce_max_p = Primitive("reduce_max", kind=REDUCTION, identity=dtypes.lowest)
def reduce_max(x, axes: Sequence[int]): return reduce_max_p.bind(x, axes=tuple(axes))
def _empty_gives_identity(reduce, identity):  # as XLA's reduce does, where NumPy raises
    return lambda x, *, axes: reduce(x, axis=axes, initial=identity(x.dtype)) if not x.size \
        else reduce(x, axis=axes)
impl_rules[reduce_max_p] = _empty_gives_identity(signed_zeros.max_of, dtypes.lowest)
vjp_rules[reduce_max_p] = _chooser_vjp
jvp_rules[reduce_max_p] = _chooser_jvp(reduce_max_p)

reduce_min_p = Primitive("reduce_min", kind=REDUCTION, identity=dtypes.highest)
def reduce_min(x, axes: Sequence[int]): return reduce_min_p.bind(x, axes=tuple(axes))
impl_rules[reduce_min_p] = _empty_gives_identity(signed_zeros.min_of, dtypes.highest)
vjp_rules[reduce_min_p] = _chooser_vjp
jvp_rules[reduce_min_p] = _chooser_jvp(reduce_min_p)

reduce_prod_p = Primitive("reduce_prod", kind=REDUCTION, identity=lambda dtype: 1)
def reduce_prod(x, axes: Sequence[int]): return reduce_prod_p.bind(x, axes=tuple(axes))
impl_rules[reduce_prod_p] = lambda x, *, axes: np.prod(
    x, axis=axes, dtype=dtypes.accumulation_dtype(x.dtype)).astype(x.dtype, copy=False)
def _prod_of_others(x, axes):
    """d prod(x) / d x_i: the product of all the other reduced elements.

    Computed without division, so it is exact at zeros and differentiable again: the reduced
    dims are flattened into one of size n, each element sees a row of n copies with itself
    replaced by 1, and each row is multiplied out. NB: this costs n^2 memory per output;
    JAX builds exclusive products in a tree instead (jax/_src/lax/lax.py, _reduce_prod_jvp_rule).
    """
    shape = get_aval(x).shape
    kept = [d for d in range(len(shape)) if d not in axes]
    n = math.prod(shape[d] for d in axes)
    batch = tuple(shape[d] for d in kept)
    rows = reshape(transpose(x, kept + list(axes)), batch + (n,))
    grid = broadcast_in_dim(rows, batch + (n, n), tuple(range(len(batch))) + (len(batch) + 1,))
    on_diagonal = eq(iota(np.int32, (n, n), 0), iota(np.int32, (n, n), 1))
    on_diagonal = broadcast_in_dim(on_diagonal, batch + (n, n), (len(batch), len(batch) + 1))
    others = reduce_prod(select_n(on_diagonal, grid, full_like(grid, 1)), (len(batch) + 1,))
    moved = reshape(others, batch + tuple(shape[d] for d in axes))
    return transpose(moved, tuple(np.argsort(kept + list(axes))))


def reduce_prod_vjp(ct, x, *, out, axes):
    return [mul(_broadcast_back(ct, get_aval(x).shape, axes), _prod_of_others(x, axes))]
vjp_rules[reduce_prod_p] = reduce_prod_vjp
def reduce_prod_jvp(primals, tangents, *, axes):
    (x,), (x_dot,) = primals, tangents
    return reduce_prod(x, axes), reduce_sum(mul(x_dot, _prod_of_others(x, axes)), axes)
jvp_rules[reduce_prod_p] = reduce_prod_jvp

reduce_and_p = Primitive("reduce_and", kind=REDUCTION, identity=lambda dtype: True)
def reduce_and(x, axes: Sequence[int]): return reduce_and_p.bind(x, axes=tuple(axes))
impl_rules[reduce_and_p] = lambda x, *, axes: np.all(x, axis=axes)
vjp_rules[reduce_and_p] = _zero_vjp
jvp_rules[reduce_and_p] = _zero_jvp(reduce_and_p)

reduce_or_p = Primitive("reduce_or", kind=REDUCTION, identity=lambda dtype: False)
def reduce_or(x, axes: Sequence[int]): return reduce_or_p.bind(x, axes=tuple(axes))
impl_rules[reduce_or_p] = lambda x, *, axes: np.any(x, axis=axes)
vjp_rules[reduce_or_p] = _zero_vjp
jvp_rules[reduce_or_p] = _zero_jvp(reduce_or_p)

argmax_p = Primitive("argmax")
def argmax(x, axis: int, index_dtype=np.int32):
    return argmax_p.bind(x, axes=(axis,), index_dtype=np.dtype(index_dtype))
def argmax_impl(x, *, axes, index_dtype):
    return np.argmax(x, axis=axes[0]).astype(index_dtype)
impl_rules[argmax_p] = argmax_impl
vjp_rules[argmax_p] = _zero_vjp
jvp_rules[argmax_p] = _zero_jvp(argmax_p)

argmin_p = Primitive("argmin")
def argmin(x, axis: int, index_dtype=np.int32):
    return argmin_p.bind(x, axes=(axis,), index_dtype=np.dtype(index_dtype))
def argmin_impl(x, *, axes, index_dtype):
    return np.argmin(x, axis=axes[0]).astype(index_dtype)
impl_rules[argmin_p] = argmin_impl
vjp_rules[argmin_p] = _zero_vjp
jvp_rules[argmin_p] = _zero_jvp(argmin_p)
ARG_REDUCTIONS = (argmax_p, argmin_p)  # index of the best along an axis: one tuple for all

# ------------------------------------------------------------------------------------------
# The PRNG's hash
# ------------------------------------------------------------------------------------------

# --8<-- [start:threefry]
threefry2x32_p = Primitive("threefry2x32", multiple_results=True, kind=ELEMENTWISE)
def threefry2x32(key1, key2, x1, x2) -> list[Any]:
    """The Threefry-2x32 block cipher (20 rounds) of Salmon et al., "Parallel random numbers:
    as easy as 1, 2, 3" (SC 2011): hashes the counter pair (x1, x2) under the key pair."""
    return threefry2x32_p.bind(key1, key2, x1, x2)

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def _rotate_left(v, distance):
    return (v << np.uint32(distance)) | (v >> np.uint32(32 - distance))


def threefry2x32_impl(key1, key2, x1, x2):
    # --8<-- [start:task1_5]
    ks = [key1, key2, key1 ^ key2 ^ np.uint32(0x1BD11BDA)]
    x = [x1 + ks[0], x2 + ks[1]]
    # --8<-- [end:task1_5]
    for i in range(5):  # 5 groups of 4 rounds, injecting the key after each group
        for distance in _ROTATIONS[i % 2]:
            x[0] = x[0] + x[1]
            x[1] = _rotate_left(x[1], distance) ^ x[0]
        # --8<-- [start:task1_5]
        x[0] = x[0] + ks[(i + 1) % 3]
        x[1] = x[1] + ks[(i + 2) % 3] + np.uint32(i + 1)
        # --8<-- [end:task1_5]
    return [np.asarray(x[0], np.uint32), np.asarray(x[1], np.uint32)]
impl_rules[threefry2x32_p] = threefry2x32_impl
vjp_rules[threefry2x32_p] = _zero_vjp
jvp_rules[threefry2x32_p] = _zero_jvp(threefry2x32_p)
# --8<-- [end:threefry]

