"""Polynomials as 1-D arrays of coefficients, highest power first (NumPy's ``poly1d``
order): evaluation by Horner's rule, sums, products (a convolution), long division,
derivatives and integrals, the Vandermonde matrix of powers, least-squares fits, the
polynomial of given roots, and the roots of a polynomial.

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.polyval(jnp.array([1.0, 0.0, -2.0]), jnp.array([0.0, 2.0]))  # x**2 - 2
    Array([-2.,  2.], dtype=float32)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import prims as lax
from ..core import get_aval
from .assembly import trim_zeros
from .concrete import concrete_value, static_int
from .contractions import dot, outer
from .creation import arange, full, zeros
from .linalg import eigvals, inv, lstsq
from .promotion import as_value, broadcast_shapes, promote, promote_inexact
from .reductions import prod, sum
from .shapes import atleast_1d, concatenate, expand_dims, stack
from .signals import convolve
from .ufuncs import maximum, power, sqrt


def _static_order(m: Any, name: str) -> int:
    return static_int(m, f"{name}'s order (it gives the result's length)")


def polyval(p, x, *, unroll: int = 16):
    """The polynomial with coefficients ``p`` (along its first dim) at ``x``, by Horner's
    rule: ``(...(p[0] * x + p[1]) * x + ...) + p[-1]``.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.polyval(jnp.array([2, 1]), 3)
        Array(7, dtype=int32)
    """
    del unroll  # a Python loop, unrolled whole
    p, x = (as_value(v) for v in promote(p, x))
    shape = broadcast_shapes(get_aval(p).shape[1:], get_aval(x).shape)
    y = lax.full(shape, 0, get_aval(x).dtype)
    for k in range(get_aval(p).shape[0]):
        y = y * x + p[k]
    return y


def polyadd(a1, a2):
    """The sum of two polynomials (the shorter one aligned to the end, the constant terms).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.polyadd(jnp.array([1, 2, 3]), jnp.array([10, 20]))
        Array([ 1, 12, 23], dtype=int32)
    """
    a1, a2 = (as_value(v) for v in promote(a1, a2))
    if get_aval(a2).shape[0] > get_aval(a1).shape[0]:
        a1, a2 = a2, a1
    return a1.at[-get_aval(a2).shape[0]:].add(a2) if get_aval(a2).shape[0] else a1


def polysub(a1, a2):
    """The difference of two polynomials (:func:`polyadd` of ``a1`` and ``-a2``)."""
    a1, a2 = promote(a1, a2)
    return polyadd(a1, -as_value(a2))


def polymul(a1, a2, *, trim_leading_zeros: bool = False):
    """The product of two polynomials: the convolution of their coefficients (in an inexact
    type); with ``trim_leading_zeros``, leading zero coefficients are dropped first.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.polymul(jnp.array([1, 1]), jnp.array([1, -1]))
        Array([ 1.,  0., -1.], dtype=float32)
    """
    a1, a2 = (as_value(v) for v in promote_inexact(a1, a2))
    if trim_leading_zeros and (get_aval(a1).shape[0] > 1 or get_aval(a2).shape[0] > 1):
        a1, a2 = trim_zeros(a1, trim="f"), trim_zeros(a2, trim="f")
    if get_aval(a1).shape[0] == 0:
        a1 = zeros(1, dtype=get_aval(a2).dtype)
    if get_aval(a2).shape[0] == 0:
        a2 = zeros(1, dtype=get_aval(a1).dtype)
    return convolve(a1, a2, mode="full")


def _falling_factorials(dtype: Any, m: int, n: int, offset: int):
    """For each power ``j`` of ``offset`` to ``n - 1``: ``j (j - 1) ... (j - m + 1)``,
    counting each factor below 1 as 1 (the factors a derivative or integral brings)."""
    grid = arange(offset, n, dtype=dtype)[None] - arange(m, dtype=dtype)[:, None]
    return prod(maximum(1, grid), axis=0)


def polyder(p, m: int = 1):
    """The ``m``-th derivative of the polynomial ``p``.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.polyder(jnp.array([1.0, 1.0, 1.0, 1.0]))  # of x**3 + x**2 + x + 1
        Array([3., 2., 1.], dtype=float32)
    """
    m = _static_order(m, "polyder")
    (p,) = (as_value(v) for v in promote_inexact(p))
    if m < 0:
        raise ValueError(f"polyder: the order of the derivative must be positive, got {m}; "
                         f"for integrals use polyint.")
    if m == 0:
        return p
    factors = _falling_factorials(get_aval(p).dtype, m, get_aval(p).shape[0], m)
    return p[:-m] * factors[::-1]


def polyint(p, m: int = 1, k: Any = None):
    """The ``m``-th integral of the polynomial ``p``, with integration constants ``k`` (one
    for all, or ``m``, the first for the highest power; 0 by default).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.polyint(jnp.array([3.0, 2.0, 1.0]), k=5.0)
        Array([1., 1., 1., 5.], dtype=float32)
    """
    m = _static_order(m, "polyint")
    p, k = (as_value(v) for v in promote_inexact(p, 0 if k is None else k))
    if m < 0:
        raise ValueError(f"polyint: the order of the integral must be positive, got {m}; "
                         f"for derivatives use polyder.")
    k = atleast_1d(k)
    if get_aval(k).shape[0] == 1:
        k = full((m,), k[0])
    if get_aval(k).shape != (m,):
        raise ValueError(f"polyint: k must be a scalar or 1-D of length 1 or m={m}, got "
                         f"shape {get_aval(k).shape}.")
    if m == 0:
        return p
    factors = _falling_factorials(get_aval(p).dtype, m, get_aval(p).shape[0] + m, 0)
    return concatenate([p, k]) / factors[::-1]


def vander(x, N: int | None = None, increasing: bool = False):
    """The Vandermonde matrix of the 1-D ``x``: column ``j`` is ``x ** (N - 1 - j)`` (or
    ``x ** j`` if ``increasing``), ``N`` columns (by default ``len(x)``).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.vander(jnp.array([1, 2, 3]), 3)
        Array([[1, 1, 1],
               [4, 2, 1],
               [9, 3, 1]], dtype=int32)
    """
    x = as_value(x)
    if get_aval(x).ndim != 1:
        raise ValueError(f"vander: x must be 1-D, got shape {get_aval(x).shape}.")
    n = get_aval(x).shape[0] if N is None else _static_order(N, "vander")
    if n < 0:
        raise ValueError(f"vander: N must be nonnegative, got {n}.")
    powers = lax.iota(get_aval(x).dtype, (n,))
    if not increasing:
        powers = (n - 1) - powers
    return power(x[..., None], expand_dims(powers, 0))


def polydiv(u, v, *, trim_leading_zeros: bool = False) -> tuple[Any, Any]:
    """The quotient and remainder of dividing the polynomial ``u`` by ``v``, by long
    division; the remainder keeps ``u``'s length unless ``trim_leading_zeros`` (then its
    leading near-zeros go, which needs concrete values).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.polydiv(jnp.array([1.0, -3.0, 2.0]), jnp.array([1.0, -1.0]))
        (Array([ 1., -2.], dtype=float32), Array([0., 0., 0.], dtype=float32))
    """
    u, v = (as_value(x) for x in promote_inexact(u, v))
    m, n = get_aval(u).shape[0] - 1, get_aval(v).shape[0] - 1
    scale = 1.0 / v[0]
    quotient = zeros(max(m - n + 1, 1), dtype=get_aval(u).dtype)
    for k in range(m - n + 1):
        digit = scale * u[k]
        quotient = quotient.at[k].set(digit)
        u = u.at[k:k + n + 1].add(-digit * v)
    if trim_leading_zeros:
        u = _trim_small_leading(u, float(np.sqrt(np.finfo(get_aval(u).dtype).eps)))
    return quotient, u


def _trim_small_leading(u, tolerance: float):
    """``u`` (concrete) without its leading elements of magnitude under ``tolerance``."""
    values = concrete_value(u, "polydiv with trim_leading_zeros=True (the remainder's "
                               "length depends on the values)", "Pass trim_leading_zeros=False.")
    small = np.abs(values) < tolerance
    if small.all():
        return zeros(0, dtype=get_aval(u).dtype)
    return u[int(np.argmin(small)):]


def polyfit(x, y, deg: int, rcond: float | None = None, full: bool = False, w: Any = None,
            cov: bool | str = False):
    """The least-squares polynomial of degree ``deg`` through the points (``x``, ``y``)
    (``y`` 1-D, or 2-D for several fits at once), optionally weighted by ``w``. With
    ``full``, also the residuals, rank, singular values and ``rcond``; with ``cov``, also
    the coefficients' covariance matrix (``'unscaled'``: not scaled by the residuals).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> x = jnp.array([0.0, 1.0, 2.0, 3.0])
        >>> jnp.round(jnp.polyfit(x, 2 * x + 1, 1), 4)
        Array([2., 1.], dtype=float32)
    """
    deg = _static_order(deg, "polyfit")
    x, y = (as_value(a) for a in promote_inexact(x, y))
    _check_fit_shapes(x, y, deg)
    order = deg + 1
    rcond = get_aval(x).shape[0] * float(np.finfo(get_aval(x).dtype).eps) if rcond is None \
        else float(rcond)
    lhs, rhs = vander(x, order), y
    if w is not None:
        (w,) = (as_value(a) for a in promote_inexact(w))
        if get_aval(w).ndim != 1 or get_aval(w).shape[0] != get_aval(y).shape[0]:
            raise TypeError("polyfit: w must be 1-D, one weight per point.")
        lhs = lhs * w[:, None]
        rhs = rhs * (w[:, None] if get_aval(rhs).ndim == 2 else w)
    scale = sqrt(sum(lhs * lhs, axis=0))
    lhs = lhs / scale[None, :]  # columns of unit norm, for a better-conditioned solve
    coefficients, residuals, rank, singular = lstsq(lhs, rhs, rcond)
    coefficients = (coefficients.T / scale).T
    if full:
        return coefficients, residuals, rank, singular, as_value(rcond)
    if cov:
        return coefficients, _fit_covariance(lhs, scale, residuals, x, y, order, cov)
    return coefficients


def _check_fit_shapes(x, y, deg: int) -> None:
    if deg < 0:
        raise ValueError(f"polyfit: expected deg >= 0, got {deg}.")
    if get_aval(x).ndim != 1 or get_aval(x).size == 0:
        raise TypeError(f"polyfit: x must be a non-empty 1-D array, got shape "
                        f"{get_aval(x).shape}.")
    if get_aval(y).ndim not in (1, 2):
        raise TypeError(f"polyfit: y must be 1-D or 2-D, got shape {get_aval(y).shape}.")
    if get_aval(x).shape[0] != get_aval(y).shape[0]:
        raise TypeError(f"polyfit: x and y must have the same length, got "
                        f"{get_aval(x).shape[0]} and {get_aval(y).shape[0]}.")


def _fit_covariance(lhs, scale, residuals, x, y, order: int, cov: bool | str):
    """The covariance of the fitted coefficients: ``inv(lhs.T lhs)`` (of the scaled
    columns, then unscaled), times the residual variance unless ``cov == 'unscaled'``."""
    base = inv(dot(lhs.T, lhs)) / outer(scale, scale)
    if cov == "unscaled":
        factor = as_value(1.0)
    else:
        if get_aval(x).shape[0] <= order:
            raise ValueError("polyfit: the number of data points must exceed the order to "
                             "scale the covariance matrix; pass cov='unscaled'.")
        factor = residuals / (get_aval(x).shape[0] - order)
    if get_aval(y).ndim == 1:
        return base * atleast_1d(factor)[None]
    return base[:, :, None] * atleast_1d(factor)[None, None, :]


def poly(seq_of_zeros):
    """The coefficients of the monic polynomial with the given roots (a 1-D array).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.poly(jnp.array([1.0, 2.0]))  # (x - 1)(x - 2)
        Array([ 1., -3.,  2.], dtype=float32)
    """
    (roots,) = (atleast_1d(as_value(a)) for a in promote_inexact(seq_of_zeros))
    shape = get_aval(roots).shape
    if len(shape) == 2 and shape[0] == shape[1] and shape[0]:
        roots = eigvals(roots)  # the characteristic polynomial of the matrix
        shape = get_aval(roots).shape
    if len(shape) != 1:
        raise ValueError(f"poly: the input must be 1-D or a non-empty square matrix, got "
                         f"shape {shape}.")
    dtype = get_aval(roots).dtype
    result = lax.full((1,) if shape[0] else (), 1, dtype)
    for k in range(shape[0]):
        result = convolve(result, stack([lax.full((), 1, dtype), -roots[k]]), mode="full")
    return result


def roots(p, *, strip_zeros: bool = True):
    """The roots of the polynomial with coefficients ``p`` (highest power first), complex:
    the eigenvalues of its companion matrix. Leading zeros are dropped (``strip_zeros``,
    which needs ``p``'s values); with ``strip_zeros=False`` they give NaN roots, last.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.sort_complex(jnp.roots(jnp.array([1.0, -3.0, 2.0])))  # (x - 1)(x - 2)
        Array([1.+0.j, 2.+0.j], dtype=complex64)
    """
    (p,) = (atleast_1d(as_value(a)) for a in promote_inexact(p))
    if get_aval(p).ndim != 1:
        raise ValueError(f"roots: the input must be a rank-1 array, got shape "
                         f"{get_aval(p).shape}.")
    n = get_aval(p).shape[0]
    complex_dtype = np.result_type(get_aval(p).dtype, np.complex64)
    if strip_zeros:
        values = concrete_value(p, "jnp.roots(p) with strip_zeros=True (it drops p's leading "
                                "zeros, which sets the number of roots)",
                                "Pass strip_zeros=False: leading zeros then give NaN roots.")
        nonzero = np.flatnonzero(values)
        return _companion_roots(p[int(nonzero[0]) if len(nonzero) else n:], complex_dtype)
    if n < 2:
        return zeros((0,), complex_dtype)
    from .. import numpy as jnp  # the whole module: this one is part of it

    zero = p == 0
    leading = jnp.where(jnp.all(zero), n, jnp.argmin(zero))  # how many leading zeros
    rotated = p[(arange(n) + leading) % n]  # moved to the end: they become zero roots
    found = _companion_roots(jnp.where(leading == n, jnp.ones_like(p), rotated), complex_dtype)
    found = found[jnp.argsort(found == 0, stable=True)]  # the zero roots last, then NaN
    return jnp.where(arange(n - 1) < n - 1 - leading, found, complex(np.nan, np.nan))


def _companion_roots(p, complex_dtype):
    """The eigenvalues of the companion matrix of ``p`` (its first coefficient nonzero)."""
    if get_aval(p).shape[0] < 2:
        return zeros((0,), complex_dtype)
    from ..scipy.special_matrices import companion  # jax.scipy.linalg's, built on this module

    return eigvals(companion(p))
