"""Statistics that skip NaNs: variance, product, arg-extrema and quantiles over the elements
that are numbers. Each is composed of the plain reductions, with NaNs (and the elements
``where`` leaves out) replaced by the value that does not change the result.

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.nanvar(jnp.array([1.0, jnp.nan, 3.0]))
    Array(1., dtype=float32)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import dtypes
from .. import prims as lax
from ..core import get_aval
from .cumulative import cumsum
from .indexing import take_along_axis
from .mathematical import conj, real
from .promotion import as_value, canonicalize_axes, convert, promote_inexact
from .reductions import (
    Axis,
    _check_no_out,
    _requested_dtype,
    all,
    any,
    argmax,
    argmin,
    prod,
    refuse_integer_dtype,
    sum,
)
from .shapes import broadcast_to, moveaxis, reshape
from .statistics import sort
from .ufuncs import astype, ceil, clip, floor, isnan, logical_and, logical_not, sqrt
from .ufuncs import where as _where  # ``where`` is also the reductions' mask argument

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _kept(a, where_: Any):
    """Where ``a`` holds a number that the reduction should count."""
    kept = logical_not(isnan(a))
    return kept if where_ is None else logical_and(kept, where_)


def nanvar(a, axis: Axis = None, dtype: Any = None, out: None = None, ddof: int = 0,
           keepdims: bool = False, where: Any = None, mean: Any = None):
    """Variance over ``axis`` of the elements that are not NaN (and where ``where`` holds),
    divided by their count less ``ddof``; NaN where that is not positive. ``mean``, if
    given, is used instead of computing it (it must keep the reduced dims).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.nanvar(jnp.array([[1.0, jnp.nan], [2.0, 4.0]]), axis=1)
        Array([0., 1.], dtype=float32)
    """
    _check_no_out(out)
    refuse_integer_dtype(dtype, "nanvar")
    (a,) = promote_inexact(_requested_dtype(as_value(a), dtype, "nanvar"))
    a = convert(a, get_aval(a).dtype)
    kept = _kept(a, where)
    count = sum(kept, axis=axis, keepdims=True, dtype=get_aval(a).dtype)
    if mean is None:
        mean = sum(_where(kept, a, 0), axis=axis, keepdims=True) / count
    centered = _where(kept, a - astype(mean, get_aval(a).dtype), 0)
    if dtypes.is_complex(get_aval(centered).dtype):
        squares = real(centered * conj(centered))
    else:
        squares = centered * centered
    normalizer = sum(kept, axis=axis, keepdims=keepdims) - ddof
    empty = normalizer <= 0
    total = _where(empty, np.nan, sum(squares, axis=axis, keepdims=keepdims))
    return total / astype(_where(empty, 1, normalizer), get_aval(total).dtype)




def nanstd(a, axis: Axis = None, dtype: Any = None, out: None = None, ddof: int = 0,
           keepdims: bool = False, where: Any = None, mean: Any = None):
    """Standard deviation over ``axis`` of the elements that are not NaN: the square root
    of :func:`nanvar`."""
    refuse_integer_dtype(dtype, "nanstd")
    return sqrt(nanvar(a, axis, dtype, out, ddof, keepdims, where, mean))


def nanprod(a, axis: Axis = None, dtype: Any = None, out: None = None, keepdims: bool = False,
            initial: Any = None, where: Any = None):
    """Product over ``axis``, NaNs (and elements where ``where`` is False) counted as one,
    times ``initial`` if given.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.nanprod(jnp.array([2.0, jnp.nan, 3.0]))
        Array(6., dtype=float32)
    """
    a = as_value(a)
    if dtypes.is_inexact(get_aval(a).dtype):
        a = _where(isnan(a), 1, a)
    return prod(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial,
                where=where)


def _nan_arg_extremum(arg_reduce, fill: float, a, axis: int | None, out: None,
                      keepdims: bool | None):
    _check_no_out(out)
    a = as_value(a)
    keepdims = bool(keepdims)
    if not dtypes.is_inexact(get_aval(a).dtype):
        return arg_reduce(a, axis=axis, keepdims=keepdims)
    nans = isnan(a)
    found = arg_reduce(_where(nans, fill, a), axis=axis, keepdims=keepdims)
    return _where(all(nans, axis=axis, keepdims=keepdims), -1, found)


def nanargmax(a, axis: int | None = None, out: None = None, keepdims: bool | None = None):
    """Index of the largest element along ``axis``, NaNs ignored; -1 where all are NaN.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.nanargmax(jnp.array([1.0, jnp.nan, 3.0]))
        Array(2, dtype=int32)
    """
    return _nan_arg_extremum(argmax, -np.inf, a, axis, out, keepdims)


def nanargmin(a, axis: int | None = None, out: None = None, keepdims: bool | None = None):
    """Index of the smallest element along ``axis``, NaNs ignored; -1 where all are NaN."""
    return _nan_arg_extremum(argmin, np.inf, a, axis, out, keepdims)


# ------------------------------------------------------------------------------------------
# Quantiles that skip NaNs
# ------------------------------------------------------------------------------------------


def _reduced_last(a, axis: int | Sequence[int] | None) -> tuple[Any, tuple[int, ...]]:
    """``a`` with the reduced axes merged into one last axis, and the shape ``keepdims``
    gives the result (without ``q``'s dims)."""
    shape = get_aval(a).shape
    axes = canonicalize_axes(axis, len(shape), "nanquantile")
    kept_shape = tuple(1 if d in axes else n for d, n in enumerate(shape))
    moved = moveaxis(a, axes, tuple(range(len(shape) - len(axes), len(shape))))
    rest = tuple(n for d, n in enumerate(shape) if d not in axes)
    merged = reshape(moved, rest + (math.prod(shape[d] for d in axes),))
    return merged, kept_shape


def _check_quantile_args(out: None, method: str, weights: Any) -> None:
    _check_no_out(out)
    if method not in (*_METHODS, "inverted_cdf"):
        raise ValueError(f"nanquantile: method must be one of {', '.join(_METHODS)} or "
                         f"inverted_cdf, got {method!r}.")
    if weights is not None:
        if dtypes.is_complex(get_aval(as_value(weights)).dtype):
            raise ValueError("nanquantile: weights cannot be complex.")
        if method != "inverted_cdf":
            raise NotImplementedError(f"nanquantile: method {method!r} does not take weights; "
                                      f"only method='inverted_cdf' does.")


def _weights_like(weights, a, axis: int | Sequence[int] | None):
    """``weights`` broadcast to ``a``'s shape: they are its shape, or the reduced axes'."""
    shape = get_aval(a).shape
    if get_aval(weights).shape == shape:
        return weights
    if axis is None:
        raise ValueError(f"nanquantile: weights must have a's shape {shape} when axis is "
                         f"None, got {get_aval(weights).shape}.")
    axes = canonicalize_axes(axis, len(shape), "nanquantile")
    if get_aval(weights).shape != tuple(shape[d] for d in axes):
        raise ValueError(f"nanquantile: weights of shape {get_aval(weights).shape} must "
                         f"match the reduced axes {tuple(shape[d] for d in axes)}.")
    return lax.broadcast_in_dim(weights, shape, axes)


def nanquantile(a, q, axis: int | tuple[int, ...] | None = None, out: None = None,
                overwrite_input: bool = False, method: str = "linear",
                keepdims: bool = False, *, weights: Any = None):
    """The ``q``-th quantiles (0 to 1) over ``axis`` of the elements that are not NaN
    (``q``'s dim comes first); NaN where all are NaN. ``method`` is linear, lower, higher,
    midpoint, nearest, or inverted_cdf (the only one that takes ``weights``: of ``a``'s
    shape, or of the reduced axes').

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.nanquantile(jnp.array([3.0, jnp.nan, 1.0, 2.0]), 0.5)
        Array(2., dtype=float32)
    """
    del overwrite_input
    _check_quantile_args(out, method, weights)
    if weights is None:
        (a,) = promote_inexact(a)
    else:
        a, weights = (as_value(x) for x in promote_inexact(a, weights))
        weights = _weights_like(weights, a, axis)
    a = convert(a, get_aval(a).dtype)  # the result is strong, even of a Python scalar
    if dtypes.is_complex(get_aval(a).dtype):
        raise ValueError("nanquantile: complex numbers have no order; take jnp.real, "
                         "jnp.imag or jnp.abs first.")
    if dtypes.is_complex(get_aval(as_value(q)).dtype):
        raise TypeError("nanquantile: q must be real (fractions from 0 to 1), got complex "
                        "numbers.")
    q = astype(q, get_aval(a).dtype)
    if get_aval(q).ndim > 1:
        raise ValueError(f"nanquantile: q must be a scalar or 1-D, got shape "
                         f"{get_aval(q).shape}.")
    merged, kept_shape = _reduced_last(a, axis)
    count = sum(logical_not(isnan(merged)), axis=-1, dtype=get_aval(a).dtype)
    q = reshape(q, get_aval(q).shape + (1,) * get_aval(count).ndim)  # q's dims first
    if method == "inverted_cdf":
        weights = None if weights is None else _reduced_last(weights, axis)[0]
        result = _inverted_cdf(merged, weights, q, count)
    else:
        ordered = sort(merged, axis=-1)  # NaNs sort last
        position = q * (count - 1)
        low, high = floor(position), ceil(position)
        low_value, high_value = (_value_at(ordered, i, count) for i in (low, high))
        result = _interpolated(method, low_value, high_value, position - low)
    q_shape = get_aval(q).shape[:get_aval(q).ndim - get_aval(count).ndim]
    if keepdims:
        result = reshape(result, q_shape + kept_shape)
    return result


def _value_at(ordered, index, count):
    """The element at ``index`` (clipped to the numbers) of each row of ``ordered``, for
    each ``q``: the result has ``index``'s shape."""
    index = astype(clip(index, 0, clip(count - 1, 0, None)), dtypes.default_int_dtype())
    shape = get_aval(index).shape
    rows = broadcast_to(ordered, shape + get_aval(ordered).shape[-1:])
    return take_along_axis(rows, index[..., None], axis=-1)[..., 0]


def _inverted_cdf(merged, weights, q, count):
    """The first element (in sorted order) at which the running sum of the weights (of the
    numbers) reaches ``q`` of their total; NaN where a weight is negative or NaN, or where
    every element is NaN."""
    weights = lax.full(get_aval(merged).shape, 1, get_aval(merged).dtype) if weights is None \
        else weights
    bad = (weights < 0) | isnan(weights)
    weights = _where(bad | isnan(merged), 0, weights)
    ordered, weights = lax.sort([merged, weights], get_aval(merged).ndim - 1, num_keys=1)
    running = cumsum(weights, axis=-1)
    target = q * running[..., -1]
    index = sum(running < target[..., None], axis=-1, dtype=dtypes.default_int_dtype())
    return _where(any(bad, axis=-1) | (count == 0), np.nan, _value_at(ordered, index, count))


def _interpolated(method: str, low_value, high_value, fraction):
    if method == "linear":
        return low_value * (1 - fraction) + high_value * fraction
    if method == "midpoint":
        return (low_value + high_value) * 0.5
    if method == "nearest":
        return _where(fraction <= 0.5, low_value, high_value)
    return low_value if method == "lower" else high_value


def nanpercentile(a, q, axis: int | tuple[int, ...] | None = None, out: None = None,
                  overwrite_input: bool = False, method: str = "linear",
                  keepdims: bool = False, *, weights: Any = None):
    """The ``q``-th percentiles (0 to 100) of the elements that are not NaN
    (:func:`nanquantile` of ``q / 100``)."""
    (q,) = promote_inexact(q)
    return nanquantile(a, q / 100, axis, out, overwrite_input, method, keepdims,
                       weights=weights)


def nanmedian(a, axis: int | tuple[int, ...] | None = None, out: None = None,
              overwrite_input: bool = False, keepdims: bool = False):
    """The middle value over ``axis`` of the elements that are not NaN (the mean of the two
    middle ones for an even count); NaN where all are NaN.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.nanmedian(jnp.array([4.0, jnp.nan, 1.0, 2.0]))
        Array(2., dtype=float32)
    """
    return nanquantile(a, 0.5, axis, out, overwrite_input, "midpoint", keepdims)
