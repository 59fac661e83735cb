"""Running sums and products (``cumsum``, ``cumprod`` and their NaN-ignoring forms) on the
cumulative primitives, ``unique`` on sorting, and ``round`` (half to even) on ``floor``.

``unique``'s result has as many elements as there are distinct values, which only the data
says: under a transformation, ``size=`` must give it (the first ``size`` unique values are
kept, padded with ``fill_value``), as in JAX.

NB: JAX's are in ``jax/_src/numpy/reductions.py`` (``_cumulative_reduction``),
``jax/_src/numpy/setops.py`` (``_unique``) and ``jax/_src/numpy/lax_numpy.py`` (``round``).

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.cumsum(jnp.array([[1, 2], [3, 4]]))
    Array([ 1,  3,  6, 10], dtype=int32)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from .. import prims as lax
from ..core import dynamic_trace, get_aval, trace_state
from .concrete import concrete_array
from .promotion import as_value, canonicalize_axis, convert
from .reductions import _accumulation_dtype, _check_no_out, any, sum
from .shapes import concatenate, expand_dims, moveaxis, ravel, reshape
from .statistics import nonzero
from .ufuncs import equal, floor, isnan, logical_and, logical_not, not_equal, where

__all__ = ["around", "cumprod", "cumsum", "nancumprod", "nancumsum", "round", "unique"]


def _cumulative(name: str, reduction, a, axis, dtype, out, nan_fill=None):
    _check_no_out(out)
    a = as_value(a)
    if axis is None or get_aval(a).ndim == 0:
        a = ravel(a)
    axis = canonicalize_axis(0 if axis is None else axis, get_aval(a).ndim, name)
    if nan_fill is not None and dtypes.is_inexact(get_aval(a).dtype):
        a = where(isnan(a), nan_fill, a)
    as_bool = dtype is not None and np.dtype(dtype) == np.bool_
    if dtype is None and get_aval(a).dtype != np.bool_:
        dtype = get_aval(a).dtype  # unlike sum, a running sum keeps a narrow int's type (JAX)
    a = _accumulation_dtype(a, None if as_bool else dtype, name)
    result = reduction(a, axis)
    return convert(result, np.dtype(np.bool_)) if as_bool else result


def cumsum(a, axis: int | None = None, dtype: Any = None, out: None = None):
    """Running sums along ``axis`` (of the flattened array when None). Booleans accumulate
    in the default integer; other types keep theirs (unlike ``sum``, as in JAX)."""
    return _cumulative("cumsum", lax.cumsum, a, axis, dtype, out)


def cumprod(a, axis: int | None = None, dtype: Any = None, out: None = None):
    """Running products along ``axis`` (of the flattened array when None)."""
    return _cumulative("cumprod", lax.cumprod, a, axis, dtype, out)


def nancumsum(a, axis: int | None = None, dtype: Any = None, out: None = None):
    """``cumsum`` with NaNs counted as zeros."""
    return _cumulative("nancumsum", lax.cumsum, a, axis, dtype, out, nan_fill=0)


def nancumprod(a, axis: int | None = None, dtype: Any = None, out: None = None):
    """``cumprod`` with NaNs counted as ones."""
    return _cumulative("nancumprod", lax.cumprod, a, axis, dtype, out, nan_fill=1)


def round(a, decimals: int = 0, out: None = None):  # noqa: A001 -- NumPy's name
    """Rounds to ``decimals`` decimal places, halves to the even neighbour (as NumPy and JAX:
    ``round(2.5) == 2``). Integers are returned as they are."""
    _check_no_out(out)
    a = as_value(a)
    if dtypes.is_complex(get_aval(a).dtype):  # each part on its own, as JAX
        return lax.complex(round(lax.real(a), decimals), round(lax.imag(a), decimals))
    if not dtypes.is_float(get_aval(a).dtype):
        if decimals < 0:
            raise NotImplementedError("integer np.round not implemented for decimals < 0")
        return a
    scaled = a if decimals == 0 else a * 10.0 ** decimals
    rounded = where(scaled < 0, -_half_to_even(-scaled), _half_to_even(scaled))  # -0.5 -> -0.
    return rounded if decimals == 0 else rounded / 10.0 ** decimals


def _half_to_even(x):
    low = floor(x)
    fraction = x - low
    low_is_even = equal(low - 2.0 * floor(low * 0.5), 0.0)
    up = (fraction > 0.5) | (equal(fraction, 0.5) & logical_not(low_is_even))
    return where(up, low + 1.0, low)


around = round


# --8<-- [start:unique]
def _sorted_with_mask(ar, axis: int, equal_nan: bool):
    """The slices along ``axis`` sorted (lexicographically), where they came from, and
    whether each differs from the one before it (the first of a run of equal ones)."""
    aux = moveaxis(ar, axis, 0)
    n, rest = get_aval(aux).shape[0], get_aval(aux).shape[1:]
    rows = reshape(aux, (n, int(np.prod(rest))))
    columns = [rows[:, k] for k in range(get_aval(rows).shape[1])]
    index = lax.iota(dtypes.default_int_dtype(), (n,))
    # the first column the primary key, as lexsort of the reversed columns (JAX's order)
    perm = lax.sort([*columns, index], 0, num_keys=len(columns))[-1] if columns else index
    aux = aux[perm]
    if n == 0:
        return aux, lax.full((0,), False, np.dtype(np.bool_)), perm
    differ = not_equal(aux[1:], aux[:-1])
    if equal_nan and dtypes.is_float(get_aval(aux).dtype):
        differ = logical_and(differ, logical_not(isnan(aux[1:]) & isnan(aux[:-1])))
    if get_aval(aux).ndim > 1:
        differ = any(differ, axis=tuple(range(1, get_aval(aux).ndim)))
    mask = concatenate([lax.full((1,), True, np.dtype(np.bool_)), differ])
    return aux, mask, perm


def unique(ar, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis: int | None = None, *, equal_nan: bool = True,
           size: int | None = None, fill_value: Any = None, sorted: bool = True):
    """The sorted unique values of ``ar`` (flattened when ``axis`` is None; unique slices
    along ``axis`` otherwise), with, on request, the index of each one's first occurrence,
    the indices that rebuild ``ar`` from them, and their counts. ``size=`` makes it
    traceable (see the module docstring); ``fill_value`` defaults to the smallest value."""
    del sorted
    ar = as_value(ar)
    options = (return_index, return_inverse, return_counts, axis, equal_nan, size, fill_value)
    if size is not None:
        return _unique(ar, *options)
    # its size is read from the values, constants then (no gradient, as JAX), and the whole
    # result is a constant: computed now, even inside a jit that stages every operation
    ar = concrete_array(ar, "jnp.unique without size=", "The number of unique values depends "
                        "on the data: pass size= (a Python int), as JAX asks.")
    with dynamic_trace(trace_state.trace_stack[0]):  # the eval interpreter: run now
        return _unique(ar, *options)


def _unique(ar, return_index, return_inverse, return_counts, axis, equal_nan, size,
            fill_value):
    shape = get_aval(ar).shape if axis is None else None  # the inverse's, flattened
    if axis is None:
        ar, axis = ravel(ar), 0
    axis = canonicalize_axis(axis, get_aval(ar).ndim, "unique")
    n = get_aval(ar).shape[axis]
    if n == 0 and size and fill_value is None:
        raise ValueError("jnp.unique: for zero-sized input with nonzero size argument, "
                         "fill_value must be specified")
    aux, mask, perm = _sorted_with_mask(ar, axis, equal_nan)
    count = int(np.count_nonzero(np.asarray(mask))) if size is None else size
    ind = nonzero(mask, size=count)[0]
    result = aux[ind] if n else aux
    if n == 0 and size:  # JAX's result: the fill value, size times (and no index or count)
        result = lax.full((size, *get_aval(aux).shape[1:]), fill_value, get_aval(aux).dtype)
    if size is not None and fill_value is not None and n:
        valid = expand_dims(lax.iota(np.int32, (size,)) < sum(mask),
                            tuple(range(1, get_aval(result).ndim)))
        result = where(valid, result, convert(as_value(fill_value), get_aval(result).dtype))
    ret = [moveaxis(result, 0, axis)]
    if return_index:
        ret.append(perm[ind] if n else perm)
    if return_inverse:
        inverse = _inverse(mask, perm, n)
        ret.append(inverse if shape is None else reshape(inverse, shape))  # as JAX shapes it
    if return_counts:
        ret.append(_counts(mask, size, n) if n else lax.full((0,), 0, dtypes.default_int_dtype()))
    return ret[0] if len(ret) == 1 else tuple(ret)
# --8<-- [end:unique]


def _inverse(mask, perm, n: int):
    """For each original slice, the position of its value among the unique ones."""
    position = lax.cumsum(convert(mask, dtypes.default_int_dtype()), 0) - 1
    return lax.full((n,), 0, dtypes.default_int_dtype()).at[perm].set(position)


def _counts(mask, size: int | None, n: int):
    """Each unique value's count: the gaps between the starts of the runs."""
    if size is None:
        starts = concatenate([nonzero(mask)[0], lax.full((1,), n, dtypes.default_int_dtype())])
    else:
        starts = nonzero(mask, size=size + 1)[0]
        starts = starts.at[1:].set(where(starts[1:] != 0, starts[1:], n))
    return starts[1:] - starts[:-1]
