"""Elementwise functions: NumPy broadcasting and JAX's type promotion over ``lax``.

Every function here promotes its operands to one dtype, broadcasts them to one shape and
binds one primitive (a few bind several). Example:

    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.multiply(jnp.arange(3), 2.5)
    Array([0. , 2.5, 5. ], dtype=float32, weak_type=True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from .. import prims as lax
from ..core import get_aval
from .creation import placed
from .promotion import (
    as_value,
    broadcast_shapes,
    broadcast_to_shape,
    convert,
    promote,
    promote_and_broadcast,
    promote_inexact,
    real_only,
)


def _float_unary(lax_fn, x: Any) -> Any:
    """Transcendental functions compute in floating point, as in JAX: ints are promoted."""
    (x,) = promote_inexact(x)
    return lax_fn(x)


# --8<-- [start:unary]
def negative(x):
    """-x, elementwise."""
    return lax.neg(as_value(x))

def exp(x):
    """e to the power x."""
    return _float_unary(lax.exp, x)

def log(x):
    """Natural logarithm."""
    return _float_unary(lax.log, x)

def log1p(x):
    """log(1 + x), accurate for small x."""
    return _float_unary(lax.log1p, x)

def expm1(x):
    """exp(x) - 1, accurate for small x."""
    return _float_unary(lax.expm1, x)

def sin(x):
    """Sine."""
    return _float_unary(lax.sin, x)

def cos(x):
    """Cosine."""
    return _float_unary(lax.cos, x)

def tan(x):
    """Tangent."""
    return _float_unary(lax.tan, x)

def tanh(x):
    """Hyperbolic tangent."""
    return _float_unary(lax.tanh, x)

def sqrt(x):
    """Square root."""
    return _float_unary(lax.sqrt, x)

def cbrt(x):
    """Cube root."""
    return _float_unary(lax.cbrt, x)

def exp2(x):
    """2 to the power x."""
    return _float_unary(lax.exp2, x)

def sinh(x):
    """Hyperbolic sine."""
    return _float_unary(lax.sinh, x)

def cosh(x):
    """Hyperbolic cosine."""
    return _float_unary(lax.cosh, x)

def arcsin(x):
    """Inverse sine."""
    return _float_unary(lax.asin, x)

def arccos(x):
    """Inverse cosine."""
    return _float_unary(lax.acos, x)

def arctan(x):
    """Inverse tangent."""
    return _float_unary(lax.atan, x)

def arcsinh(x):
    """Inverse hyperbolic sine."""
    return _float_unary(lax.asinh, x)

def arccosh(x):
    """Inverse hyperbolic cosine."""
    return _float_unary(lax.acosh, x)

def arctanh(x):
    """Inverse hyperbolic tangent."""
    return _float_unary(lax.atanh, x)

def abs(x):
    """Absolute value."""
    return lax.abs(as_value(x))  # noqa: A001

def sign(x):
    """-1, 0 or 1 by the sign of x."""
    return lax.sign(as_value(x))

# --8<-- [end:unary]


absolute = abs


def square(x):
    """x * x, elementwise."""
    return lax.integer_pow(as_value(x), 2)


def reciprocal(x):
    """1 / x, elementwise (integers are promoted to float)."""
    return _float_unary(lambda v: lax.integer_pow(v, -1), x)


@real_only(TypeError, "rounding is for real numbers")
def floor(x):
    """The largest integer not greater than x (integers are returned unchanged)."""
    x = as_value(x)
    return x if not dtypes.is_float(get_aval(x).dtype) else lax.floor(x)


@real_only(TypeError, "rounding is for real numbers")
def ceil(x):
    """The smallest integer not less than x (integers are returned unchanged)."""
    x = as_value(x)
    return x if not dtypes.is_float(get_aval(x).dtype) else lax.ceil(x)


# --8<-- [start:binary]
def add(x, y):
    """x + y, with broadcasting and promotion.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.add(jnp.ones(3), 2)
        Array([3., 3., 3.], dtype=float32)
    """
    return lax.add(*promote_and_broadcast("add", x, y))


def subtract(x, y):
    """x - y."""
    return lax.sub(*promote_and_broadcast("subtract", x, y))

def multiply(x, y):
    """x * y."""
    return lax.mul(*promote_and_broadcast("multiply", x, y))

def maximum(x, y):
    """Elementwise max (NaN wins)."""
    return lax.max(*promote_and_broadcast("maximum", x, y))

def minimum(x, y):
    """Elementwise min (NaN wins)."""
    return lax.min(*promote_and_broadcast("minimum", x, y))

# --8<-- [end:binary]


def true_divide(x, y):
    """x / y in floating point (integers are promoted to float)."""
    return lax.div(*promote_and_broadcast("true_divide", x, y, inexact=True))


divide = true_divide


def floor_divide(x, y):
    """x // y, rounding toward minus infinity as Python does.

    Integers divide by zero as JAX's do (no error, no warning): -1 (all ones) where x and y
    have the same sign (x == 0), and -2 otherwise (-1 stepped down, since the signs of x and
    0 differ); unsigned integers give the largest value.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.floor_divide(jnp.array([7, -7, 7]), jnp.array([2, 2, 0]))
        Array([ 3, -4, -2], dtype=int32)
    """
    x, y = promote_and_broadcast("floor_divide", x, y, keep_scalars=False)
    dtype = get_aval(x).dtype
    if dtypes.is_float(dtype):
        return _float_floor_divide(x, y)
    quotient = lax.div(x, y)  # rounds toward zero, the same as down for unsigned integers
    if dtype.kind == "u":
        return quotient
    # Step down where the division was inexact and the signs differ (with sign(0) == 0).
    inexact = lax.ne(lax.rem(x, y), lax.zeros_like(x))
    signs_differ = lax.ne(lax.sign(x), lax.sign(y))
    adjust = lax.bitwise_and(inexact, signs_differ)
    return lax.select_n(adjust, quotient, lax.sub(quotient, lax.full_like(quotient, 1)))


def _float_floor_divide(x, y):
    """CPython's float ``//`` (which JAX follows): divide x minus the remainder, which is
    nearly a multiple of y, then round. ``floor(x / y)`` would be wrong where x / y rounds
    up to a whole number: ``1.0 // 0.1`` is 9.0, since 0.1 is a little more than a tenth."""
    r = lax.rem(x, y)
    corrected = lax.select_n(lax.eq(y, lax.zeros_like(y)), lax.sub(x, r), x)
    quotient = lax.div(corrected, y)
    signs_differ = lax.ne(lax.sign(y), lax.sign(r))
    step_down = lax.bitwise_and(lax.ne(r, lax.zeros_like(r)), signs_differ)
    one = lax.full_like(quotient, 1)
    quotient = lax.select_n(step_down, quotient, lax.sub(quotient, one))
    down = lax.floor(quotient)  # quotient is within rounding of a whole number: round it
    return lax.select_n(lax.gt(lax.sub(quotient, down), lax.full_like(down, 0.5)), down,
                        lax.add(down, one))


def _nonzero_divisor(y):
    """An integer divisor with each 0 replaced by 1, so that ``%`` by zero gives 0, as in
    JAX (``lax.rem`` by zero gives x)."""
    if dtypes.is_float(get_aval(y).dtype):
        return y
    return lax.select_n(lax.eq(y, lax.zeros_like(y)), y, lax.full_like(y, 1))


def remainder(x, y):
    """x % y with the sign of y, as Python's ``%``; for integers, 0 where y == 0 (as JAX,
    without NumPy's warning).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.remainder(jnp.array([7, -7, 7]), jnp.array([3, 3, 0]))
        Array([1, 2, 0], dtype=int32)
    """
    x, y = promote_and_broadcast("remainder", x, y, keep_scalars=False)
    y = _nonzero_divisor(y)
    r = lax.rem(x, y)
    nonzero = lax.ne(r, lax.zeros_like(r))
    signs_differ = lax.ne(lax.lt(r, lax.zeros_like(r)), lax.lt(y, lax.zeros_like(y)))
    return lax.select_n(lax.bitwise_and(nonzero, signs_differ), r, lax.add(r, y))


mod = remainder


def fmod(x, y):
    """The remainder of x / y rounded toward zero: the sign of x, as C's ``fmod``; for
    integers, 0 where y == 0 (as JAX).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.fmod(jnp.array([7, -7, 7]), jnp.array([3, 3, 0]))
        Array([ 1, -1,  0], dtype=int32)
    """
    x, y = promote_and_broadcast("fmod", x, y, keep_scalars=False)
    return lax.rem(x, _nonzero_divisor(y))


def divmod(x, y):  # noqa: A001 -- NumPy's name
    """``(x // y, x % y)``."""
    return floor_divide(x, y), remainder(x, y)


def power(x, y):
    """x ** y. A Python int exponent becomes ``integer_pow`` (repeated multiplication).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.power(jnp.array([1.0, 2.0]), 3)
        Array([1., 8.], dtype=float32)
    """
    if isinstance(y, int) and not isinstance(y, bool):
        return lax.integer_pow(as_value(x), y)  # (an integer x and y < 0: a TypeError)
    return lax.pow(*promote_and_broadcast("power", x, y))


def arctan2(x1, x2):
    """The angle of the point (x2, x1), in (-pi, pi]."""
    return lax.atan2(*promote_and_broadcast("arctan2", x1, x2, inexact=True))


@real_only(ValueError, "they have no order")
def clip(x, min=None, max=None):  # noqa: A002 -- JAX's names
    """Limits ``x`` to [min, max]; either bound may be None.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.clip(jnp.array([-2.0, 0.5, 3.0]), -1, 1)
        Array([-1. ,  0.5,  1. ], dtype=float32)
    """
    x = as_value(x)
    if min is not None:
        x = maximum(x, min)
    if max is not None:
        x = minimum(x, max)
    return x


def where(condition, x=None, y=None, /, *, size: int | None = None, fill_value: Any = None):
    """``x`` where ``condition`` holds, else ``y``, with broadcasting. With ``condition``
    alone, ``nonzero(condition, size=size, fill_value=fill_value)``.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.where(jnp.array([True, False]), 1.0, 0.0)
        Array([1., 0.], dtype=float32, weak_type=True)
    """
    if x is None and y is None:
        from .statistics import nonzero
        return nonzero(condition, size=size, fill_value=fill_value)
    if size is not None or fill_value is not None:
        raise ValueError("where: size and fill_value are for the one-argument form, "
                         "where(condition), which gives the indices of true elements.")
    if x is None or y is None:
        raise TypeError("where takes both x and y or neither: got only "
                        f"{'y' if x is None else 'x'}.")
    condition = as_value(condition)
    if get_aval(condition).dtype != np.bool_:
        condition = not_equal(condition, 0)
    x, y = promote(x, y)
    operands = (condition, as_value(x), as_value(y))
    shape = broadcast_shapes(*(get_aval(v).shape for v in operands), op_name="where")
    if any(get_aval(v).shape != shape for v in operands):
        # As in JAX (stage 4 on): when one operand is broadcast, all three take one layout,
        # merged from theirs (a split dim stays split); otherwise select_n's rule holds.
        operands = [broadcast_to_shape(v, shape) for v in operands]
        layout = _merged_layout(operands)
        operands = [v if layout is None else lax.with_sharding(v, layout) for v in operands]
    condition, x, y = operands
    return lax.select_n(condition, y, x)


def _merged_layout(operands: list[Any]) -> Any:
    """The layout of operands of one shape, merged as JAX's broadcast does: a dim split in
    any of theirs is split. None: no layouts here, or one dim split two ways (select_n then
    refuses, as JAX's broadcast does)."""
    shardings = [get_aval(v).sharding for v in operands if get_aval(v).sharding is not None]
    if not shardings:
        return None
    ndim = get_aval(operands[0]).ndim
    specs = [sharding.padded(ndim).spec for sharding in shardings]
    entries = []
    for d in range(ndim):
        axes = {spec.axes_of(d) for spec in specs} - {()}
        if len(axes) > 1:
            return None
        (names,) = axes or {()}
        entries.append(None if not names else names[0] if len(names) == 1 else names)
    return shardings[0].padded(ndim).with_spec(type(specs[0])(*entries))


# Comparisons return booleans.
def equal(x, y):
    """x == y."""
    return lax.eq(*promote_and_broadcast("equal", x, y))

def not_equal(x, y):
    """x != y."""
    return lax.ne(*promote_and_broadcast("not_equal", x, y))

def less(x, y):
    """x < y."""
    return lax.lt(*promote_and_broadcast("less", x, y))

def less_equal(x, y):
    """x <= y."""
    return lax.le(*promote_and_broadcast("less_equal", x, y))

def greater(x, y):
    """x > y."""
    return lax.gt(*promote_and_broadcast("greater", x, y))

def greater_equal(x, y):
    """x >= y."""
    return lax.ge(*promote_and_broadcast("greater_equal", x, y))



def _check_integer_or_bool(name: str, *values: Any) -> None:
    for v in values:
        if dtypes.is_float(get_aval(v).dtype):
            raise TypeError(f"{name} is only defined for integer and boolean arrays, got "
                            f"{get_aval(v).dtype}. Use logical_* or convert with .astype().")


def _bitwise(name: str, lax_fn, x, y):
    x, y = promote_and_broadcast(name, x, y)
    _check_integer_or_bool(name, x)
    return lax_fn(x, y)


def bitwise_and(x, y):
    """x & y."""
    return _bitwise("bitwise_and", lax.bitwise_and, x, y)

def bitwise_or(x, y):
    """x | y."""
    return _bitwise("bitwise_or", lax.bitwise_or, x, y)

def bitwise_xor(x, y):
    """x ^ y."""
    return _bitwise("bitwise_xor", lax.bitwise_xor, x, y)



def invert(x):
    """~x: bitwise not (logical not for booleans)."""
    x = as_value(x)
    _check_integer_or_bool("invert", x)
    return lax.bitwise_not(x)


bitwise_not = invert


def left_shift(x, y):
    """x << y for integers."""
    return _bitwise("left_shift", lax.shift_left, x, y)


def right_shift(x, y):
    """x >> y: logical for unsigned integers, arithmetic for signed ones."""
    x, y = promote_and_broadcast("right_shift", x, y)
    _check_integer_or_bool("right_shift", x)
    if get_aval(x).dtype.kind == "u":
        return lax.shift_right_logical(x, y)
    return lax.shift_right_arithmetic(x, y)


def _as_bool(x):
    x = as_value(x)
    return x if get_aval(x).dtype == np.bool_ else not_equal(x, 0)


def logical_and(x, y):
    """x and y, elementwise, on truth values."""
    return bitwise_and(_as_bool(x), _as_bool(y))

def logical_or(x, y):
    """x or y, elementwise, on truth values."""
    return bitwise_or(_as_bool(x), _as_bool(y))

def logical_xor(x, y):
    """x xor y, elementwise, on truth values."""
    return bitwise_xor(_as_bool(x), _as_bool(y))

def logical_not(x):
    """not x, elementwise, on truth values."""
    return lax.bitwise_not(_as_bool(x))



def isfinite(x):
    """Whether each element is neither infinite nor NaN."""
    x = as_value(x)
    if not dtypes.is_float(get_aval(x).dtype):
        return lax.full(get_aval(x).shape, True, np.dtype(np.bool_))
    if get_aval(x).dtype in dtypes.NARROW_FLOATS:  # (float8_e4m3fn has no inf to compare to)
        x = lax.convert_element_type(x, np.float32)
    return lax.lt(lax.abs(x), lax.full_like(x, np.inf))


def isinf(x):
    """Whether each element is +inf or -inf."""
    x = as_value(x)
    if not dtypes.is_float(get_aval(x).dtype):
        return lax.full(get_aval(x).shape, False, np.dtype(np.bool_))
    aval = get_aval(x)
    # A strong inf, so the result is strong even for a Python scalar, as JAX's isinf is
    inf = lax.full(aval.shape, np.inf, aval.dtype, False, aval.sharding)
    return lax.eq(lax.abs(x), inf)


def isnan(x):
    """Whether each element is NaN (the one value not equal to itself)."""
    x = as_value(x)
    return lax.ne(x, x)


def astype(x, dtype, /, *, copy: bool = False, device=None):
    """``x`` converted to ``dtype`` (canonicalized: float64 needs jax_enable_x64); a new
    array with ``copy=True`` even when the dtype is ``x``'s; on ``device`` when given.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.astype(jnp.array([1.7, -1.7]), jnp.int32)
        Array([ 1, -1], dtype=int32)
    """
    x = as_value(x)
    out = convert(x, dtypes.check_and_canonicalize_user_dtype(dtype, "astype"), False)
    out = lax.copy(out) if copy and out is x else out
    return placed(out, device, None)
