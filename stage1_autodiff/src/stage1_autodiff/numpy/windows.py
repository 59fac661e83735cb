"""Window functions, which taper a signal to zero at its ends before a Fourier transform:
Hann, Hamming, Blackman, Bartlett (triangular) and Kaiser, each of ``M`` points in the
default float type; and ``i0``, the modified Bessel function the Kaiser window is made of.

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.hanning(5)
    Array([0. , 0.5, 1. , 0.5, 0. ], dtype=float32)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes
from .. import prims as lax
from ..core import get_aval
from .concrete import static_int
from .promotion import as_value, promote_inexact
from .ufuncs import abs, cos, exp, sqrt, where


def _points(name: str, M: int) -> Any:
    """The positions 0, 1, ..., M - 1 as floats; None when the window is all ones (M <= 1)."""
    M = static_int(M, f"jnp.{name}'s M (the window's length)")
    if M <= 1:
        return None
    return lax.iota(dtypes.default_float_dtype(), (M,))


def _ones(M: int):
    return lax.full((max(int(M), 0),), 1, dtypes.default_float_dtype())


def hanning(M: int):
    """The Hann window: ``0.5 - 0.5 cos(2 pi n / (M - 1))``."""
    n = _points("hanning", M)
    return _ones(M) if n is None else 0.5 * (1 - cos(2 * np.pi * n / (M - 1)))


def hamming(M: int):
    """The Hamming window: ``0.54 - 0.46 cos(2 pi n / (M - 1))``.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.round(jnp.hamming(3), 4)
        Array([0.08, 1.  , 0.08], dtype=float32)
    """
    n = _points("hamming", M)
    return _ones(M) if n is None else 0.54 - 0.46 * cos(2 * np.pi * n / (M - 1))


def blackman(M: int):
    """The Blackman window: ``0.42 - 0.5 cos(2 pi n / (M - 1)) + 0.08 cos(4 pi n / (M - 1))``."""
    n = _points("blackman", M)
    if n is None:
        return _ones(M)
    return 0.42 - 0.5 * cos(2 * np.pi * n / (M - 1)) + 0.08 * cos(4 * np.pi * n / (M - 1))


def bartlett(M: int):
    """The Bartlett (triangular) window: rising from 0 to 1 in the middle, and back.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.bartlett(5)
        Array([0. , 0.5, 1. , 0.5, 0. ], dtype=float32)
    """
    n = _points("bartlett", M)
    return _ones(M) if n is None else 1 - abs(2 * n + 1 - M) / (M - 1)


def kaiser(M: int, beta: Any):
    """The Kaiser window of shape ``beta``: ``i0(beta sqrt(1 - ((n - a) / a)**2)) / i0(beta)``
    with ``a = (M - 1) / 2`` (0 is a rectangle; larger ``beta`` narrows it)."""
    n = _points("kaiser", M)
    if n is None:
        return _ones(M)
    middle = 0.5 * (M - 1)
    return i0(beta * sqrt(1 - ((n - middle) / middle) ** 2)) / i0(beta)


# ------------------------------------------------------------------------------------------
# The modified Bessel function of the first kind, of order 0
# ------------------------------------------------------------------------------------------

_SERIES_TERMS = 60  # enough for |x| up to _LARGE in float64, term by term
_LARGE = 20.0  # from here on, the asymptotic expansion is as accurate (in float64 too)
_ASYMPTOTIC_TERMS = 30  # its terms shrink until k is about 2x


def _i0_series(x):
    """``sum_k (x/2)^(2k) / (k!)^2``: every term positive, so no cancellation."""
    quarter_square = x * x * 0.25
    term, total = 1.0 + 0 * x, 1.0 + 0 * x
    for k in range(1, _SERIES_TERMS):
        term = term * quarter_square / (k * k)
        total = total + term
    return total


def _i0_asymptotic(x):
    """``e^x / sqrt(2 pi x) * sum_k ((2k - 1)!!)^2 / (k! (8x)^k)`` for large ``x > 0``."""
    total, term = 1.0 + 0 * x, 1.0 + 0 * x
    for k in range(1, _ASYMPTOTIC_TERMS):
        term = term * (2 * k - 1) ** 2 / (k * 8 * x)
        total = total + term
    # (sqrt(x) apart: 2 pi x overflows for x near the largest float, and inf / inf is NaN)
    return exp(x) / sqrt(x) * (total / math.sqrt(2 * math.pi))


def i0(x):
    """The modified Bessel function of the first kind of order 0, ``I0(x)``, of real ``x``.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.round(jnp.i0(jnp.array([0.0, 1.0])), 4)
        Array([1.    , 1.2661], dtype=float32)
    """
    (x,) = promote_inexact(x)
    x = as_value(x)
    if not dtypes.is_float(get_aval(x).dtype):
        raise ValueError(f"jnp.i0 is defined for real numbers only, got "
                         f"{get_aval(x).dtype}.")
    size = abs(x)
    large = size >= _LARGE
    # NB: each branch sees only its own inputs, so neither one's gradient is NaN. JAX
    # computes exp(|x|) * bessel_i0e(|x|) with XLA's Chebyshev fits instead.
    small_part = _i0_series(where(large, 0.0, x))
    large_part = _i0_asymptotic(where(large, size, _LARGE))
    return where(large, large_part, small_part)
