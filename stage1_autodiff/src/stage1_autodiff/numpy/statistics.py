"""Reductions composed of others (NaN-ignoring ones, averages, comparisons of whole arrays),
sorting on the ``sort`` primitive, and the dtype helpers of ``jax.numpy``.

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.nansum(jnp.array([1.0, jnp.nan, 2.0]))
    Array(3., dtype=float32)
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .. import dtypes
from .. import primitives as lax
from ..core import Array, Tracer, get_aval
from .mathematical import isclose
from .promotion import as_value, canonicalize_axes, canonicalize_axis, promote_inexact
from .reductions import Axis, all, max, mean, min, sum
from .shapes import broadcast_to, flip, ravel
from .ufuncs import equal, isnan, logical_and, logical_not, logical_or, not_equal, where

# ------------------------------------------------------------------------------------------
# Whole-array comparisons and averages
# ------------------------------------------------------------------------------------------


def allclose(a, b, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    """Whether every element of ``a`` is close to ``b``'s (:func:`isclose`)."""
    return all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan: bool = False):
    """Whether two arrays have the same shape and elements."""
    a1, a2 = as_value(a1), as_value(a2)
    if get_aval(a1).shape != get_aval(a2).shape:
        return Array(np.asarray(False))
    same = equal(a1, a2)
    if equal_nan:
        same = logical_or(same, logical_and(isnan(a1), isnan(a2)))
    return all(same)


def count_nonzero(a, axis: Axis = None, keepdims: bool = False):
    """How many elements over ``axis`` are not zero (or not False)."""
    return sum(not_equal(a, 0), axis=axis, keepdims=keepdims, dtype=dtypes.default_int_dtype())


def average(a, axis: Axis = None, weights=None, returned: bool = False,
            keepdims: bool = False):
    """The mean over ``axis``, or the ``weights``-weighted mean; with ``returned``, also the
    sum of the weights."""
    (a,) = promote_inexact(a)
    if weights is None:
        result = mean(a, axis=axis, keepdims=keepdims)
        count = get_aval(a).size // builtins.max(get_aval(result).size, 1)
        scale = lax.full(get_aval(result).shape, count, get_aval(result).dtype, False)
        return (result, scale) if returned else result
    a, weights = promote_inexact(a, weights)
    weights = as_value(weights)
    if get_aval(weights).shape != get_aval(a).shape:
        if axis is None or get_aval(weights).ndim != 1:
            raise ValueError("average: weights of a different shape than a need axis, and "
                             "must be 1-D of the length of that axis.")
        (ax,) = canonicalize_axes(axis, get_aval(a).ndim, "average")
        shape = [1] * get_aval(a).ndim
        shape[ax] = get_aval(weights).shape[0]
        weights = lax.reshape(weights, tuple(shape))
    scale = sum(broadcast_to(weights, get_aval(a).shape), axis=axis, keepdims=keepdims)
    result = sum(a * weights, axis=axis, keepdims=keepdims) / scale
    return (result, scale) if returned else result


# ------------------------------------------------------------------------------------------
# NaN-ignoring reductions
# ------------------------------------------------------------------------------------------


def nansum(a, axis: Axis = None, dtype=None, out=None, keepdims: bool = False):
    """Sum over ``axis``, NaNs counted as zero."""
    a = as_value(a)
    return sum(where(isnan(a), 0, a), axis=axis, dtype=dtype, out=out, keepdims=keepdims)


def _nan_extremum(reduce, fill: float, a, axis: Axis, out, keepdims: bool):
    a = as_value(a)
    if not dtypes.is_float(get_aval(a).dtype):
        return reduce(a, axis=axis, out=out, keepdims=keepdims)
    nans = isnan(a)
    result = reduce(where(nans, fill, a), axis=axis, out=out, keepdims=keepdims)
    return where(all(nans, axis=axis, keepdims=keepdims), np.nan, result)


def nanmax(a, axis: Axis = None, out=None, keepdims: bool = False):
    """Largest element over ``axis``, NaNs ignored (NaN where all are NaN)."""
    return _nan_extremum(max, -np.inf, a, axis, out, keepdims)


def nanmin(a, axis: Axis = None, out=None, keepdims: bool = False):
    """Smallest element over ``axis``, NaNs ignored (NaN where all are NaN)."""
    return _nan_extremum(min, np.inf, a, axis, out, keepdims)


def nanmean(a, axis: Axis = None, dtype=None, out=None, keepdims: bool = False):
    """Mean over ``axis`` of the elements that are not NaN."""
    (a,) = promote_inexact(a)
    kept = logical_not(isnan(a))
    total = nansum(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims)
    count = sum(kept, axis=axis, keepdims=keepdims, dtype=get_aval(total).dtype)
    return total / count


# ------------------------------------------------------------------------------------------
# Sorting
# ------------------------------------------------------------------------------------------


def _sort_axis(a, axis: int | None) -> tuple[Any, int]:
    a = as_value(a)
    if axis is None:
        return ravel(a), 0
    return a, canonicalize_axis(axis, get_aval(a).ndim, "sort")


def sort(a, axis: int | None = -1, *, kind: Any = None, order: Any = None,
         stable: bool = True, descending: bool = False):
    """``a`` sorted along ``axis`` (the flattened array when None); NaNs go last."""
    del kind, stable
    if order is not None:
        raise TypeError("sort: the 'order' argument is not supported (no structured dtypes).")
    a, axis = _sort_axis(a, axis)
    result = lax.sort(a, dimension=axis)
    return flip(result, axis) if descending else result


def argsort(a, axis: int | None = -1, *, kind: Any = None, order: Any = None,
            stable: bool = True, descending: bool = False):
    """The indices that sort ``a`` along ``axis``; ties keep their order."""
    del kind, stable
    if order is not None:
        raise TypeError("argsort: the 'order' argument is not supported.")
    a, axis = _sort_axis(a, axis)
    shape = get_aval(a).shape
    index = lax.iota(dtypes.default_int_dtype(), shape, axis)
    if descending:  # stable among equals: reverse, sort, reverse back
        reversed_a = flip(a, axis)
        _, order_of = lax.sort([reversed_a, index], dimension=axis, num_keys=1)
        return flip(shape[axis] - 1 - order_of, axis)
    _, order_of = lax.sort([a, index], dimension=axis, num_keys=1)
    return order_of


# ------------------------------------------------------------------------------------------
# dtypes
# ------------------------------------------------------------------------------------------


def _typed(x: Any) -> tuple[np.dtype, bool]:
    if isinstance(x, (bool, int, float)) and not isinstance(x, np.generic):
        return dtypes.python_scalar_dtype(x), True
    if isinstance(x, (Array, Tracer)):
        return get_aval(x).dtype, get_aval(x).weak_type
    if hasattr(x, "dtype"):
        return dtypes.canonicalize_dtype(np.dtype(x.dtype)), False
    return dtypes.canonicalize_dtype(np.dtype(x)), False


def result_type(*args: Any) -> np.dtype:
    """The dtype JAX's promotion gives ``args`` (arrays, dtypes or Python scalars)."""
    if not args:
        raise ValueError("at least one array or dtype is required")
    return dtypes.promote_types(*(_typed(a) for a in args))[0]


def promote_types(a: Any, b: Any) -> np.dtype:
    """The dtype two dtypes promote to, on JAX's lattice."""
    return dtypes.promote_types((_typed(a)[0], False), (_typed(b)[0], False))[0]


def isscalar(element: Any) -> bool:
    """Whether ``element`` is a scalar: a Python or NumPy scalar, or a 0-d array."""
    if isinstance(element, (Array, Tracer)):
        return get_aval(element).ndim == 0
    return bool(np.isscalar(element))
