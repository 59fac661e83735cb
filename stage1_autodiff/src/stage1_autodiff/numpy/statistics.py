"""Reductions composed of others (NaN-ignoring ones, averages, comparisons of whole arrays),
sorting on the ``sort`` primitive, and the dtype helpers of ``jax.numpy``.

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.nansum(jnp.array([1.0, jnp.nan, 2.0]))
    Array(3., dtype=float32)
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np

from .. import dtypes
from .. import prims as lax
from ..core import Array, Tracer, get_aval
from .concrete import concrete_value
from .creation import arange, linspace
from .indexing import take
from .mathematical import isclose
from .promotion import (
    as_value,
    canonicalize_axes,
    canonicalize_axis,
    convert,
    promote,
    promote_inexact,
    real_only,
)
from .reductions import (
    Axis,
    all,
    any,
    integer_mean_dtype,
    max,
    mean,
    min,
    narrowed,
    sum,
    widened,
)
from .shapes import broadcast_to, concatenate, expand_dims, flip, moveaxis, ravel, reshape
from .ufuncs import (
    astype,
    ceil,
    clip,
    equal,
    floor,
    isnan,
    less,
    less_equal,
    logical_and,
    logical_not,
    logical_or,
    not_equal,
    where,
)

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


where_ = where  # (the reductions below take an argument called ``where``)


def nansum(a, axis: Axis = None, dtype=None, out=None, keepdims: bool = False, initial=None,
           where=None):
    """Sum over ``axis``, NaNs counted as zero."""
    a = as_value(a)
    return sum(where_(isnan(a), 0, a), axis=axis, dtype=dtype, out=out, keepdims=keepdims,
               initial=initial, where=where)


def _nan_extremum(reduce, fill: float, a, axis: Axis, out, keepdims: bool, initial, where):
    a = as_value(a)
    if not dtypes.is_float(get_aval(a).dtype):
        return reduce(a, axis=axis, out=out, keepdims=keepdims, initial=initial, where=where)
    nans = isnan(a)
    result = reduce(where_(nans, fill, a), axis=axis, out=out, keepdims=keepdims,
                    initial=initial, where=where)
    if where is not None:
        nans = logical_or(nans, logical_not(where))
    return where_(all(nans, axis=axis, keepdims=keepdims), np.nan, result)


def nanmax(a, axis: Axis = None, out=None, keepdims: bool = False, initial=None, where=None):
    """Largest element over ``axis``, NaNs ignored (NaN where all are NaN)."""
    return _nan_extremum(max, -np.inf, a, axis, out, keepdims, initial, where)


def nanmin(a, axis: Axis = None, out=None, keepdims: bool = False, initial=None, where=None):
    """Smallest element over ``axis``, NaNs ignored (NaN where all are NaN)."""
    return _nan_extremum(min, np.inf, a, axis, out, keepdims, initial, where)


def nanmean(a, axis: Axis = None, dtype=None, out=None, keepdims: bool = False, where=None):
    """Mean over ``axis`` of the elements that are not NaN (and where ``where`` is true)."""
    if (integer := integer_mean_dtype(dtype, "nanmean")) is not None:
        return convert(nanmean(a, axis, integer[0], out, keepdims, where), integer[1])
    (a,) = promote_inexact(a)
    a, narrow = widened(a, dtype)  # a count of bfloat16 ones stops at 256
    kept = logical_not(isnan(a))
    total = nansum(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, where=where)
    count = sum(kept, axis=axis, keepdims=keepdims, dtype=get_aval(total).dtype, where=where)
    return narrowed(total / count, narrow)


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
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        return dtypes.python_scalar_dtype(x), True
    if isinstance(x, (Array, Tracer)):
        return get_aval(x).dtype, get_aval(x).weak_type
    if hasattr(x, "dtype") and not isinstance(x, type):  # (np.int8.dtype is a descriptor)
        return dtypes.canonicalize_dtype(np.dtype(x.dtype)), False
    return dtypes.canonicalize_dtype(np.dtype(x)), False


def result_type(*args: Any) -> np.dtype:
    """The dtype JAX's promotion gives ``args`` (arrays, dtypes or Python scalars)."""
    return result_type_with_flag(*args)


def result_type_with_flag(*args: Any, return_weak_type_flag: bool = False) -> Any:
    """``jax.dtypes.result_type``: ``result_type``, or ``(dtype, weak)`` with the flag."""
    if not args:
        raise ValueError("at least one array or dtype is required")
    typed = dtypes.promote_types(*(_typed(a) for a in args))
    return typed if return_weak_type_flag else typed[0]


def promote_types(a: Any, b: Any) -> np.dtype:
    """The dtype two dtypes promote to, on JAX's lattice."""
    return dtypes.promote_dtypes(*(x if x in (int, float, complex) and isinstance(x, type)
                                   else dtype(x) for x in (a, b)))


def isscalar(element: Any) -> bool:
    """Whether ``element`` is a scalar: a Python or NumPy scalar, or a 0-d array."""
    if isinstance(element, (Array, Tracer)):
        return get_aval(element).ndim == 0
    return bool(np.isscalar(element))


def dtype(obj: Any, align: bool = False, copy: bool = False) -> np.dtype:
    """``obj`` as a NumPy dtype (``jnp.float32``, ``"int32"``, an array's dtype...)."""
    if not isinstance(obj, type):  # (a NumPy scalar type's ``dtype`` is a descriptor)
        obj = getattr(obj, "dtype", obj)
    return np.dtype(obj, align=align, copy=copy)


def finfo(dtype_like: Any) -> ml_dtypes.finfo:
    """Machine limits of a float dtype (``eps``, ``max``, ``tiny``...), bfloat16 and the
    8-bit floats included.
    The dtype as named, as JAX's: ``finfo(jnp.float64).eps`` is float64's even without x64."""
    return ml_dtypes.finfo(dtype(dtype_like))


def iinfo(int_type: Any) -> ml_dtypes.iinfo:
    """Machine limits of an integer dtype (``min``, ``max``, ``bits``), as named."""
    return ml_dtypes.iinfo(dtype(int_type))


def issubdtype(arg1: Any, arg2: Any) -> bool:
    """Whether ``arg1`` is ``arg2`` or below it in NumPy's type hierarchy (``jnp.floating``,
    ``jnp.integer``...)."""
    def as_type(x: Any) -> Any:
        return x if isinstance(x, type) and issubclass(x, np.generic) else dtype(x)
    extended = [isinstance(a, type) and issubclass(a, dtypes.extended)
                or type(getattr(a, "dtype", a)).__name__ == "KeyDtype" for a in (arg1, arg2)]
    if builtins.any(extended):  # a key's dtype is below prng_key and extended, and nothing else
        kinds = [dtypes.prng_key if not isinstance(a, type) else a for a in (arg1, arg2)]
        return builtins.all(extended) and issubclass(kinds[0], kinds[1])
    first, second = as_type(arg1), as_type(arg2)
    ml_float = first is not np.generic and builtins.any(first == d for d in dtypes.ML_FLOATS)
    if ml_float and second in (np.floating, np.inexact, np.number):
        return True  # ml_dtypes' floats (bfloat16...) are floats to JAX, though not to NumPy
    return bool(np.issubdtype(first, second))


# ------------------------------------------------------------------------------------------
# Quantiles, searching, counting
# ------------------------------------------------------------------------------------------


@real_only(ValueError, "they have no order")
def quantile(a, q, axis: int | None = None, out=None, overwrite_input: bool = False,
             method: str = "linear", keepdims: bool = False):
    """The ``q``-th quantiles (0 to 1) along ``axis``: ``q``'s dims come first. ``method`` is
    linear, lower, higher, midpoint or nearest; a NaN anywhere along the axis gives NaN."""
    del overwrite_input
    if out is not None:
        raise NotImplementedError("The 'out' argument is not supported: JAX arrays are "
                                  "immutable. Use the returned array instead.")
    if method not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise ValueError(f"quantile: method must be linear, lower, higher, midpoint or "
                         f"nearest, got {method!r}.")
    (a,) = promote_inexact(a)  # q takes a's dtype: the result is strong, as JAX's
    a = convert(as_value(a), get_aval(as_value(a)).dtype)
    q = astype(q, get_aval(a).dtype)
    shape = get_aval(a).shape
    flat, axis = (True, 0) if axis is None else (False,
                                                 canonicalize_axis(axis, len(shape), "quantile"))
    a = ravel(a) if flat else a
    n = get_aval(a).shape[axis]
    ordered = sort(a, axis=axis)
    position = q * (n - 1)
    low, high = floor(position), ceil(position)
    low_value, high_value = (_take_quantile(ordered, i, axis, n) for i in (low, high))
    fraction = _spread(position - low, get_aval(low_value).ndim)
    if method == "linear":
        result = low_value * (1 - fraction) + high_value * fraction
    elif method == "midpoint":
        result = (low_value + high_value) * 0.5
    elif method == "nearest":
        result = where(fraction <= 0.5, low_value, high_value)
    else:
        result = low_value if method == "lower" else high_value
    result = where(any(isnan(a), axis=axis), np.nan, result)
    if keepdims:
        kept = [1] * len(shape) if flat else [1 if d == axis else m for d, m in enumerate(shape)]
        result = reshape(result, get_aval(q).shape + tuple(kept))
    return result


def _take_quantile(ordered, index, axis: int, n: int):
    """The elements at ``index`` (an array of positions, clipped) along ``axis``, with
    ``index``'s dims first."""
    index = astype(clip(index, 0, n - 1), dtypes.default_int_dtype())
    index_ndim = get_aval(index).ndim
    picked = take(ordered, index, axis=axis)
    return moveaxis(picked, tuple(range(axis, axis + index_ndim)), tuple(range(index_ndim)))


def _spread(x, ndim: int):
    """``x`` with trailing dims of size 1 up to ``ndim``, to broadcast against a result."""
    return reshape(x, get_aval(x).shape + (1,) * (ndim - get_aval(x).ndim))


@real_only(ValueError, "they have no order")
def percentile(a, q, axis: int | None = None, out=None, overwrite_input: bool = False,
               method: str = "linear", keepdims: bool = False):
    """The ``q``-th percentiles (0 to 100) along ``axis`` (:func:`quantile` of ``q / 100``)."""
    (q,) = promote_inexact(q)
    return quantile(a, q / 100, axis, out, overwrite_input, method, keepdims)


@real_only(ValueError, "they have no order")
def median(a, axis: int | None = None, out=None, overwrite_input: bool = False,
           keepdims: bool = False):
    """The middle value along ``axis`` (the mean of the two middle ones for an even count)."""
    return quantile(a, 0.5, axis, out, overwrite_input, "midpoint", keepdims)


def searchsorted(a, v, side: str = "left", sorter=None, *, method: str = "scan"):
    """Where each element of ``v`` would go in the sorted 1-D ``a`` to keep it sorted: the
    count of elements of ``a`` below it (``"left"``) or not above it (``"right"``)."""
    del method
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}.")
    a = as_value(a)
    if get_aval(a).ndim != 1:
        raise ValueError(f"searchsorted: a must be 1-D, got shape {get_aval(a).shape}.")
    if sorter is not None:
        a = take(a, sorter)
    a, v = promote(a, v)
    a, v = as_value(a), expand_dims(as_value(v), -1)
    below = (less if side == "left" else less_equal)(a, v)
    if dtypes.is_inexact(get_aval(a).dtype):  # NaN sorts last: every number is below it
        nan_v = isnan(v)
        below = logical_or(below, logical_and(nan_v, ~isnan(a)) if side == "left" else nan_v)
    return sum(below, axis=-1, dtype=np.int32)  # int32 even with x64, as in JAX


def bincount(x, weights=None, minlength: int = 0, *, length: int | None = None):
    """How often each non-negative integer occurs in ``x`` (or the sum of its ``weights``);
    ``length`` (the number of bins) must be given unless ``x`` is concrete."""
    x = as_value(x)
    if not dtypes.is_int(get_aval(x).dtype):
        raise TypeError(f"bincount: x must be of integer dtype, got {get_aval(x).dtype}.")
    if length is None:
        if isinstance(x, Tracer):
            raise TypeError("bincount: under a transformation, the number of bins depends on "
                            "the values; pass length= (a Python int).")
        length = builtins.max(minlength, int(np.max(np.asarray(x._value), initial=-1)) + 1)
    weights = lax.full(get_aval(x).shape, 1, dtypes.default_int_dtype()) if weights is None \
        else as_value(weights)
    zeros = lax.full((length,), 0, get_aval(weights).dtype)
    return zeros.at[clip(x, 0, length)].add(weights, mode="drop")


def unravel_index(indices, shape: tuple[int, ...]):
    """The coordinates in an array of ``shape`` of flat ``indices``: a tuple, one array per
    dim. Out-of-bounds indices are clipped; negative ones count from the end."""
    indices = as_value(indices)
    if not dtypes.is_int(get_aval(indices).dtype):
        raise TypeError("unravel_index: indices must be integers.")
    total = int(np.prod(shape))
    flat = clip(indices, -total, total - 1) % builtins.max(total, 1)
    coordinates = []
    for size in reversed(shape):
        coordinates.append(flat % size)
        flat = flat // size
    return tuple(reversed(coordinates))


def select(condlist: Sequence[Any], choicelist: Sequence[Any], default: Any = 0):
    """From the first of ``choicelist`` whose condition in ``condlist`` holds, elementwise;
    ``default`` where none does."""
    if len(condlist) != len(choicelist):
        raise ValueError(f"select: condlist and choicelist must have the same length, got "
                         f"{len(condlist)} and {len(choicelist)}.")
    if not condlist:
        raise ValueError("select: condlist must not be empty.")
    result = default
    for condition, choice in reversed(list(zip(condlist, choicelist))):
        condition = as_value(condition)
        if get_aval(condition).dtype != np.bool_:
            raise TypeError(f"select: condlist entries must be booleans, got "
                            f"{get_aval(condition).dtype}.")
        result = where(condition, choice, result)
    return result


def nonzero(a, *, size: int | None = None, fill_value: Any = None):
    """The indices of the nonzero elements, a tuple of one array per dim. Their number depends
    on the values, so under a transformation ``size`` must say it: the first ``size`` are
    kept, and missing ones are ``fill_value`` (by default 0)."""
    a = as_value(a)
    if size is None:  # known eagerly and under grad; under jit or vmap, size= must say it
        size = int(np.count_nonzero(concrete_value(
            a, "nonzero without size=", "The number of nonzero elements depends on the "
            "values: pass size= (a Python int).")))
    mask = ravel(not_equal(a, 0))
    order = argsort(logical_not(mask))  # stable: the nonzero positions first, in order
    positions = order[:size] if size <= get_aval(mask).shape[0] else \
        concatenate([order, lax.full((size - get_aval(mask).shape[0],), 0, get_aval(order).dtype)])
    found = arange(size) < count_nonzero(mask)
    coordinates = unravel_index(positions, get_aval(a).shape) if get_aval(a).ndim else \
        (positions,)
    fill = 0 if fill_value is None else fill_value
    fills = fill if isinstance(fill, (tuple, list)) else [fill] * len(coordinates)
    return tuple(where(found, c, f) for c, f in zip(coordinates, fills))


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of the points (``xp``, ``fp``), ``xp`` increasing, at
    ``x``; ``left``/``right`` below and above (by default the end values, or
    ``'extrapolate'`` to continue the end segments); with ``period``, ``xp`` is periodic and
    ``left``/``right`` are ignored. ``fp`` may be complex, ``x`` and ``xp`` not."""
    x, xp = (as_value(v) for v in promote_inexact(x, xp))
    (fp,) = (as_value(v) for v in promote_inexact(fp))
    if get_aval(xp).ndim != 1 or get_aval(fp).shape != get_aval(xp).shape:
        raise ValueError(f"interp: xp and fp must be 1-D and of the same length, got "
                         f"shapes {get_aval(xp).shape} and {get_aval(fp).shape}.")
    for name, end in (("left", left), ("right", right)):
        if isinstance(end, str) and end != "extrapolate":
            raise ValueError(f"interp: the only string {name} may be is 'extrapolate' (to "
                             f"continue the end segment), got {end!r}.")
    if dtypes.is_complex(get_aval(x).dtype):
        raise ValueError("jnp.interp: complex x values not supported: interpolate the real "
                         "and imaginary parts of x separately, or pass complex values as fp.")
    if period is not None:
        period = abs(as_value(period))
        x, xp = x % period, xp % period
        order = argsort(xp)
        xp, fp = take(xp, order), take(fp, order)
        xp = concatenate([xp[-1:] - period, xp, xp[:1] + period])
        fp = concatenate([fp[-1:], fp, fp[:1]])
    i = clip(searchsorted(xp, x, side="right"), 1, get_aval(xp).shape[0] - 1)
    x0, x1, f0, f1 = take(xp, i - 1), take(xp, i), take(fp, i - 1), take(fp, i)
    flat = abs(x1 - x0) <= np.spacing(finfo(get_aval(xp).dtype).eps)
    result = where(flat, f0, f0 + (x - x0) / where(flat, 1.0, x1 - x0) * (f1 - f0))
    if period is None and left != "extrapolate":
        result = where(less(x, xp[0]), fp[0] if left is None else left, result)
    if period is None and right != "extrapolate":
        result = where(x > xp[-1], fp[-1] if right is None else right, result)
    return result


def histogram_bin_edges(a, bins: Any = 10, range: Sequence[Any] | None = None,  # noqa: A002
                        weights=None):
    """The edges of ``histogram``'s bins: ``bins`` itself if it is a sequence, else ``bins``
    equal bins over ``range`` (by default the data's smallest to largest; widened by 1/2 on
    each side if that is no width at all)."""
    del weights  # as NumPy's, for the rules that look at them, which take strings for bins
    if isinstance(bins, str):
        raise NotImplementedError("histogram: bins given by name (a string) are not "
                                  "implemented; pass a number of bins or their edges.")
    (a,) = promote_inexact(a)
    dtype = get_aval(a).dtype
    if np.ndim(bins) == 1:
        return astype(as_value(bins), dtype)
    if isinstance(bins, Tracer):
        raise TypeError("histogram: a traced number of bins cannot give a shape; pass it as "
                        "a static argument, or pass the bin edges.")
    low, high = (min(a), max(a)) if range is None else (as_value(r) for r in range)
    low, high = astype(low, dtype), astype(high, dtype)
    empty = equal(high - low, 0)
    return linspace(where(empty, low - 0.5, low), where(empty, high + 0.5, high),
                    int(bins) + 1, dtype=dtype)


def histogram(a, bins: Any = 10, range: Sequence[Any] | None = None,  # noqa: A002
              weights=None, density: bool | None = None):
    """Counts (or summed ``weights``) of ``a``'s elements in ``bins`` (see
    ``histogram_bin_edges``), and the bin edges. The last bin includes its right edge."""
    if weights is None:
        (a,) = promote_inexact(a)
        weights = lax.full(get_aval(as_value(a)).shape, 1, get_aval(as_value(a)).dtype)
    else:
        if np.shape(a) != np.shape(weights):
            raise ValueError(f"histogram: weights should have the same shape as a, got "
                             f"{np.shape(weights)} and {np.shape(a)}.")
        a, weights = promote_inexact(a, weights)
    a, weights = ravel(as_value(a)), ravel(as_value(weights))
    edges = histogram_bin_edges(a, bins, range)
    count = get_aval(edges).shape[0]
    index = searchsorted(edges, a, side="right")
    index = where(a == edges[-1], count - 1, index)
    counts = lax.full((count + 1,), 0, get_aval(weights).dtype).at[index].add(weights)[1:-1]
    if density:
        widths = edges[1:] - edges[:-1]
        counts = counts / widths / sum(counts)
    return counts, edges
