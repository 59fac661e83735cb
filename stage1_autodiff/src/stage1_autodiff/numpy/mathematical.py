"""Elementwise functions that are compositions of the ufuncs, as they are in JAX: no new
primitive, so every transformation of the ones they use applies to them.

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.log2(jnp.array([1.0, 8.0]))
    Array([0., 3.], dtype=float32)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import complex_numbers, dtypes
from .. import prims as lax
from ..core import get_aval
from ..custom_derivatives import custom_jvp
from ..lax_composed import bitcast_convert_type
from .promotion import as_value, promote, promote_inexact, real_only
from .ufuncs import (
    abs,
    ceil,
    divide,
    equal,
    exp,
    floor,
    greater,
    isinf,
    isnan,
    less,
    less_equal,
    log,
    log1p,
    logical_and,
    logical_not,
    logical_or,
    maximum,
    minimum,
    multiply,
    sin,
    sqrt,
    square,
    where,
)


def _constant_like(x: Any, value: float) -> Any:
    """A strongly typed scalar of ``x``'s dtype."""
    return lax.full((), value, get_aval(x).dtype, False)


def log2(x):
    """Base-2 logarithm."""
    (x,) = promote_inexact(x)
    return divide(log(x), log(_constant_like(x, 2.0)))


def log10(x):
    """Base-10 logarithm."""
    (x,) = promote_inexact(x)
    return divide(log(x), log(_constant_like(x, 10.0)))


def deg2rad(x):
    """Degrees to radians."""
    (x,) = promote_inexact(x)
    return multiply(x, np.pi / 180)


def rad2deg(x):
    """Radians to degrees."""
    (x,) = promote_inexact(x)
    return multiply(x, 180 / np.pi)


@real_only(ValueError, "it is for real legs")
def hypot(x1, x2):
    """sqrt(x1**2 + x2**2), without overflow in the squares: the larger magnitude is factored
    out; an infinite operand gives inf even beside a NaN."""
    x1, x2 = promote_inexact(x1, x2)
    x1, x2 = abs(x1), abs(x2)
    infinite = logical_or(isinf(x1), isinf(x2))
    big, small = maximum(x1, x2), minimum(x1, x2)
    safe = where(big == 0, 1.0, big)
    result = where(big == 0, big, big * sqrt(1 + square(divide(small, safe))))
    return where(infinite, np.inf, result)


def logaddexp(x1, x2):
    """log(exp(x1) + exp(x2)) without overflow."""
    x1, x2 = promote_inexact(x1, x2)
    if dtypes.is_complex(get_aval(x1).dtype):
        return log_add_complex(x1, x2, maximum(x1, x2), exp, 1.0, np.pi)
    return _logaddexp_real(x1, x2)


def log_add_with_its_slopes(name: str, log_of_one_plus, scale: float):
    """``logaddexp`` (``log_of_one_plus(gap)`` is log(1 + exp(gap)), ``scale`` 1) or
    ``logaddexp2`` (its base-2 twin, ``scale`` log 2) of real numbers: the larger plus
    ``log_of_one_plus`` of the gap down to the smaller, as a ``custom_jvp`` whose slope in x1
    is sigmoid(scale (x1 - x2)), as JAX's has one.

    Differentiated as written, the maximum and the gap both have a kink at a tie, which
    cancel in the first derivative only when the tie's split matches abs's slope (it does
    not: logaddexp(x, 0) had slope 0 at 0, for 1/2) and never in the second (0 at the tie,
    for 1/4). Two equal infinities have the gap 0 (their slopes are 1/2 each)."""
    def log_add(x1, x2):
        top, bottom = maximum(x1, x2), minimum(x1, x2)
        return top + log_of_one_plus(where(top == bottom, 0.0, bottom - top))

    def log_add_jvp(primals, tangents):
        (x1, x2), (x1_dot, x2_dot) = primals, tangents
        gap = x1 - x2
        gap = where(isnan(gap) & (x1 == x2), 0.0, gap) * scale
        return rule(x1, x2), x1_dot * lax.logistic(gap) + x2_dot * lax.logistic(-gap)

    log_add.__name__ = log_add.__qualname__ = name
    rule = custom_jvp(log_add)
    rule.defjvp(log_add_jvp)
    return rule


_logaddexp_real = log_add_with_its_slopes("logaddexp", lambda gap: log1p(exp(gap)), 1.0)


def log_add_complex(x1, x2, top, exp_, scale: float, half_turn: float):
    """``logaddexp`` (``exp_`` exp, ``scale`` 1) or ``logaddexp2`` of complex numbers, as
    JAX computes it: the larger in lexicographic order, ``top``, plus the log of 1 + the
    other's exp relative to it, the imaginary part (an angle) wrapped into [-half_turn,
    half_turn]."""
    out = top + scale * log1p(exp_(x1 + x2 - 2 * top))
    angle = imag(out) + half_turn
    shifted = lax.rem(angle, lax.full_like(angle, 2 * half_turn))
    shifted = where(less(shifted, 0), shifted + 2 * half_turn, shifted)
    return complex_numbers.complex(real(out), shifted - half_turn)


def sinc(x):
    """sin(pi x) / (pi x), and 1 at 0. Near 0 (|pi x| < 0.1) it is the Taylor series
    1 - s**2/3! + s**4/5! - ... (to s**8: within a float64 rounding there), so that its
    derivatives are right: the quotient's first derivative, cos(s)/s - sin(s)/s**2, cancels
    to noise as s nears 0, and at 0 a ``where`` choosing 1 gave every derivative as 0 (the
    second is -pi**2/3). NB: JAX gives the derivatives at 0 by a custom JVP of the series
    (``_sinc_maclaurin`` in jax/_src/numpy/ufuncs.py), and keeps the quotient elsewhere."""
    (x,) = promote_inexact(x)
    s = np.pi * x
    near = abs(s) < 0.1
    s_far = where(near, 1.0, s)  # each branch sees only its own side: no NaN slope
    s2 = square(where(near, s, 0.0))
    series = 1 + s2 * (-1 / 6 + s2 * (1 / 120 + s2 * (-1 / 5040 + s2 / 362880)))
    return where(near, series, sin(s_far) / s_far)


@real_only(TypeError, "they have no order")
def heaviside(x1, x2):
    """0 where x1 < 0, 1 where x1 > 0, x2 where x1 is 0, and NaN where x1 is NaN."""
    x1, x2 = promote_inexact(x1, x2)
    return where(less(x1, 0), 0, where(greater(x1, 0), 1, where(isnan(x1), x1, x2)))


def fmax(x1, x2):
    """Elementwise max that ignores a NaN when the other operand is a number."""
    x1, x2 = promote(x1, x2)
    return where(logical_or(greater(x1, x2), isnan(x2)), x1, x2)


def fmin(x1, x2):
    """Elementwise min that ignores a NaN when the other operand is a number."""
    x1, x2 = promote(x1, x2)
    return where(logical_or(less(x1, x2), isnan(x2)), x1, x2)


@real_only(TypeError, "rounding is for real numbers")
def trunc(x):
    """Rounds toward zero (integers are returned unchanged)."""
    x = as_value(x)
    if not dtypes.is_float(get_aval(x).dtype):
        return x
    return where(less(x, 0), ceil(x), floor(x))


@real_only(ValueError, "they have no sign bit")
def signbit(x):
    """Whether the sign bit is set: true for -0.0 and negative NaNs too."""
    x = as_value(x)
    dtype = get_aval(x).dtype
    if dtype == np.bool_:
        return lax.full_like(x, False, np.dtype(np.bool_))
    if not dtypes.is_float(dtype):
        return less(x, 0)
    bits = bitcast_convert_type(x, np.dtype(f"int{dtype.itemsize * 8}"))
    return less(bits, 0)


@real_only(TypeError, "they have no sign bit")
def copysign(x1, x2):
    """The magnitude of x1 with the sign of x2."""
    x1, x2 = promote_inexact(x1, x2)
    return where(signbit(x2), -abs(x1), abs(x1))


def real(x):
    """The real part (a real array is its own real part)."""
    x = as_value(x)
    return complex_numbers.real(x) if dtypes.is_complex(get_aval(x).dtype) else x


def imag(x):
    """The imaginary part (zeros for a real array)."""
    x = as_value(x)
    if not dtypes.is_complex(get_aval(x).dtype):
        return lax.full_like(x, 0)
    return complex_numbers.imag(x)


def conj(x):
    """The complex conjugate (a real array is its own conjugate)."""
    x = as_value(x)
    return complex_numbers.conj(x) if dtypes.is_complex(get_aval(x).dtype) else x


def angle(z, deg: bool = False):
    """The argument of each complex number, atan2(imag, real), in radians (or degrees with
    ``deg``); 0 or pi for a real number."""
    z = as_value(z)
    re, im = real(z), imag(z)
    aval = get_aval(z)
    if not dtypes.is_inexact(aval.dtype) or dtypes.is_float(aval.dtype) and aval.ndim == 0:
        float_dtype = dtypes.default_float_dtype()  # strongly typed, as in JAX
        re = lax.convert_element_type(re, float_dtype)
        im = lax.convert_element_type(im, float_dtype)
    result = lax.atan2(im, re)
    return rad2deg(result) if deg else result


conjugate = conj


def isclose(a, b, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    """Whether |a - b| <= atol + rtol * |b| elementwise; infinities are close only to
    themselves, NaN to nothing (or to NaN, with ``equal_nan``)."""
    a, b = promote(a, b)
    if not dtypes.is_float(get_aval(a).dtype):
        a, b = promote_inexact(a, b)
    rtol, atol = _constant_like(a, rtol), _constant_like(a, atol)
    close = less_equal(abs(a - b), atol + rtol * abs(b))
    a_inf, b_inf = isinf(a), isinf(b)
    close = logical_and(close, logical_not(logical_or(a_inf, b_inf)))
    close = logical_or(close, logical_and(logical_and(a_inf, b_inf), equal(a, b)))
    a_nan, b_nan = isnan(a), isnan(b)
    close = logical_and(close, logical_not(logical_or(a_nan, b_nan)))
    return logical_or(close, logical_and(a_nan, b_nan)) if equal_nan else close


def nan_to_num(x, copy: bool = True, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None):
    """NaN replaced by ``nan``, infinities by ``posinf``/``neginf`` (by default the largest
    and the lowest finite values of the dtype). Integers are returned unchanged."""
    del copy
    x = as_value(x)
    dtype = get_aval(x).dtype
    if not dtypes.is_float(dtype):
        return x
    info = np.finfo(dtype)
    x = where(isnan(x), _constant_like(x, nan), x)
    high = info.max if posinf is None else posinf
    low = info.min if neginf is None else neginf
    x = where(logical_and(isinf(x), x > 0), _constant_like(x, high), x)
    return where(logical_and(isinf(x), x < 0), _constant_like(x, low), x)


@real_only(TypeError, "jnp.abs gives their magnitude")
def fabs(x):
    """Absolute value in floating point: integers become floats, complex numbers are
    refused (``abs`` takes them)."""
    (x,) = promote_inexact(x)
    return lax.abs(x)


def positive(x):
    """+x: the array itself, as an array."""
    return as_value(x)
