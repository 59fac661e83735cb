"""More of NumPy's elementwise functions, each a composition: a float's exponent and
mantissa (``ldexp``, ``frexp``), whole numbers (``gcd``, ``lcm``), the float next door
(``nextafter``), and ``float_power``, ``logaddexp2``, ``isposinf``, ``isneginf``.

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.gcd(jnp.array([12, -18, 0]), 8)
    Array([4, 2, 8], dtype=int32)

NB: JAX's are in ``jax/_src/numpy/ufuncs.py``; its ``gcd`` runs Euclid's algorithm in a
``while_loop``, its ``ldexp`` and ``frexp`` work on the bits.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes
from .. import prims as lax
from ..core import get_aval
from .mathematical import log2, log_add_complex, log_add_with_its_slopes
from .promotion import as_value, convert, promote, promote_and_broadcast, promote_inexact, real_only
from .ufuncs import (
    abs,
    exp2,
    floor,
    floor_divide,
    isinf,
    isnan,
    log1p,
    maximum,
    multiply,
    power,
    remainder,
    where,
)

__all__ = ["float_power", "frexp", "gcd", "isneginf", "isposinf", "lcm", "ldexp",
           "logaddexp2", "nextafter"]


def _check_integers(name: str, *args: Any) -> None:
    for x in args:
        if not dtypes.is_int(get_aval(x).dtype):
            raise ValueError(f"{name} requires integer arguments, got {get_aval(x).dtype}. "
                             f"Round them and convert first (x.astype(int)).")


def _power_of_two(exponent: Any, dtype: np.dtype) -> Any:
    """2**exponent for whole-number exponents of dtype's range: exact (exp2 of a whole
    number is a power of two, normal or subnormal)."""
    return exp2(convert(exponent, dtype))


@real_only(ValueError, "their exponent is not a float's")
def ldexp(x1: Any, x2: Any) -> Any:
    """x1 * 2**x2 for an integer x2. The power is applied in three steps of at most a third
    of it, so that no factor overflows or underflows where the product does not.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.ldexp(1.5, jnp.array([1, -1]))
        Array([3.  , 0.75], dtype=float32)
    """
    x2 = as_value(x2)
    _check_integers("ldexp", x2)
    (x1,) = promote_inexact(x1)
    info = np.finfo(x1.dtype)
    reach = info.maxexp - info.minexp + info.nmant + 2  # past it the result is 0 or inf
    k = lax.clamp(-reach, x2.astype(np.int32), reach)
    third = floor_divide(k, 3)
    out = x1 * _power_of_two(third, x1.dtype) * _power_of_two(third, x1.dtype)
    return convert(out * _power_of_two(k - 2 * third, x1.dtype), x1.dtype)


@real_only(TypeError, "their exponent is not a float's")
def frexp(x: Any) -> tuple[Any, Any]:
    """(mantissa, exponent) with x = mantissa * 2**exponent and 0.5 <= |mantissa| < 1;
    (x, 0) for 0, inf and NaN. The exponent comes from log2, off by at most one near a
    power of two, and is then corrected by comparing the mantissa with 1/2 and 1.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.frexp(jnp.array([8.0, 0.3]))
        (Array([0.5, 0.6], dtype=float32), Array([ 4, -1], dtype=int32))
    """
    (x,) = promote_inexact(x)
    special = (x == 0) | isinf(x) | isnan(x)
    safe = where(special, 1.0, abs(x))
    exponent = convert(floor(log2(safe)), np.dtype(np.int32)) + 1
    for _ in range(2):
        mantissa = _scale_down(safe, exponent)
        exponent = exponent + where(mantissa >= 1, 1, 0) - where(mantissa < 0.5, 1, 0)
    mantissa = _scale_down(x, exponent)
    return where(special, x, mantissa), where(special, 0, exponent)


def _scale_down(x: Any, exponent: Any) -> Any:
    """x * 2**-exponent in two exact steps (neither factor leaves the dtype's range)."""
    half = floor_divide(exponent, 2)
    return x * _power_of_two(-half, x.dtype) * _power_of_two(half - exponent, x.dtype)


def _euclid_steps(dtype: np.dtype) -> int:
    """Euclid's algorithm on numbers below 2**bits ends within log_phi(2**bits) + 2 steps
    (Lame's theorem: the worst case is two consecutive Fibonacci numbers)."""
    bits = 8 * dtype.itemsize
    return int(bits * math.log(2) / math.log((1 + math.sqrt(5)) / 2)) + 2


def gcd(x1: Any, x2: Any) -> Any:
    """The greatest common divisor of |x1| and |x2| (0 for two zeros), by Euclid's
    algorithm, unrolled for as many steps as the dtype's worst case needs; a finished pair
    (b == 0) stays as it is."""
    x1, x2 = promote(x1, x2)
    _check_integers("gcd", x1, x2)
    a, b = abs(x1), abs(x2)
    for _ in range(_euclid_steps(get_aval(a).dtype)):
        done = b == 0
        safe_b = where(done, 1, b)
        a, b = where(done, a, b), where(done, b, remainder(a, safe_b))
    return a


def lcm(x1: Any, x2: Any) -> Any:
    """The least common multiple of |x1| and |x2|: |x1 * (x2 // gcd)| (0 if either is 0)."""
    x1, x2 = promote(x1, x2)
    _check_integers("lcm", x1, x2)
    divisor = gcd(x1, x2)
    safe = where(divisor == 0, 1, divisor)
    return where(divisor == 0, 0, abs(multiply(x1, floor_divide(x2, safe))))


def nextafter(x1: Any, x2: Any) -> Any:
    """The next float after x1 toward x2 (x1's own dtype: promoted, then lax.nextafter)."""
    return lax.nextafter(*promote_and_broadcast("nextafter", x1, x2, inexact=True))


def float_power(x1: Any, x2: Any) -> Any:
    """x1 ** x2 in floating point (integers are promoted first, as in JAX)."""
    return power(*promote_inexact(x1, x2))


def logaddexp2(x1: Any, x2: Any) -> Any:
    """log2(2**x1 + 2**x2) without overflow: the larger plus log2(1 + 2**-|x1 - x2|)."""
    x1, x2 = promote_inexact(x1, x2)
    if dtypes.is_complex(get_aval(x1).dtype):
        return log_add_complex(x1, x2, maximum(x1, x2), exp2, 1 / math.log(2),
                               math.pi / math.log(2))
    return _logaddexp2_real(x1, x2)


_logaddexp2_real = log_add_with_its_slopes(
    "logaddexp2", lambda gap: log1p(exp2(gap)) / math.log(2), math.log(2))


def _equals(x: Any, value: float) -> Any:
    """Where x is ``value`` (never, for integers): a strong bool even for a Python float."""
    x = as_value(x)
    found = x == value if dtypes.is_float(get_aval(x).dtype) else x != x
    return convert(found, np.dtype(np.bool_))


@real_only(ValueError, "they have no sign")
def isposinf(x: Any) -> Any:
    """Where x is +inf."""
    return _equals(x, np.inf)


@real_only(ValueError, "they have no sign")
def isneginf(x: Any) -> Any:
    """Where x is -inf."""
    return _equals(x, -np.inf)
