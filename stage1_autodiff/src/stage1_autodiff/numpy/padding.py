"""``jnp.pad``: NumPy's padding modes, each composed of slices, flips, reductions and
concatenations (a constant is one ``lax.pad``). As in NumPy, the axes are padded one after
another, so an axis padded later sees the elements added to the earlier ones: a corner of
``mode="mean"`` is a mean of means.

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.pad(jnp.arange(3.0), (2, 1), mode="reflect")
    Array([2., 1., 0., 1., 2., 1.], dtype=float32)
    >>> jnp.pad(jnp.arange(3.0), 2, mode="linear_ramp", end_values=(10, 0))
    Array([10.,  5.,  0.,  1.,  2.,  1.,  0.], dtype=float32)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from .. import prims as lax
from ..core import Tracer, get_aval
from .arrangement import _slice_in_dim
from .promotion import as_value, convert
from .rounding import rint
from .shapes import concatenate, flip
from .ufuncs import astype

# The keyword arguments each mode takes (as NumPy's).
_OPTIONS = {"constant": {"constant_values"}, "empty": set(), "edge": set(), "wrap": set(),
            "reflect": {"reflect_type"}, "symmetric": {"reflect_type"},
            "linear_ramp": {"end_values"}, "maximum": {"stat_length"},
            "minimum": {"stat_length"}, "mean": {"stat_length"}, "median": {"stat_length"}}


def pad(array, pad_width, mode: str = "constant", **kwargs):
    """``array`` padded by ``pad_width`` (an int, a (before, after) pair, or a pair per dim):
    with ``constant_values`` (mode "constant", the default, or "empty"); the edge values
    ("edge"); a mirror image ("reflect" without the edge, "symmetric" with it; with
    ``reflect_type="odd"``, reflected through the edge value); the other end ("wrap"); a
    ramp from the edge to ``end_values`` ("linear_ramp"); or the maximum, minimum, mean or
    median of the ``stat_length`` elements nearest each end (all of them by default)."""
    x = as_value(array)
    ndim = get_aval(x).ndim
    widths = _pad_widths(pad_width, ndim)
    if not isinstance(mode, str) or mode not in _OPTIONS:
        raise NotImplementedError(f"pad: mode {mode!r} is not implemented; the modes are "
                                  f"{', '.join(_OPTIONS)}.")
    unknown = set(kwargs) - _OPTIONS[mode]
    if unknown:
        raise ValueError(f"pad: unsupported keyword arguments for mode {mode!r}: "
                         f"{sorted(unknown)}; it takes {sorted(_OPTIONS[mode]) or 'none'}.")
    if mode in ("constant", "empty"):
        return _pad_constant(x, widths, kwargs.get("constant_values", 0))
    if kwargs.get("reflect_type", "even") not in ("even", "odd"):
        raise ValueError(f"pad: reflect_type must be 'even' or 'odd', got "
                         f"{kwargs['reflect_type']!r}.")
    option = (_per_side(kwargs.get("end_values", 0), ndim, "end_values", integers=False)
              if mode == "linear_ramp" else
              _per_side(kwargs.get("stat_length"), ndim, "stat_length", integers=True)
              if "stat_length" in _OPTIONS[mode] else kwargs.get("reflect_type", "even"))
    for axis, (before, after) in enumerate(widths):
        if get_aval(x).shape[axis] == 0 and (before or after):
            raise ValueError(f"pad: can't extend an empty axis {axis} using mode {mode!r}.")
        sides = [option[axis][0], option[axis][1]] if isinstance(option, np.ndarray) \
            else [option, option]
        parts = [_block(x, axis, before, False, mode, sides[0])] if before else []
        parts.append(x)
        if after:
            parts.append(_block(x, axis, after, True, mode, sides[1]))
        # (the padding takes the array's weak type, as JAX's: its blocks may have lost it)
        parts = [convert(p, get_aval(x).dtype, True) if get_aval(x).weak_type else p
                 for p in parts]
        x = concatenate(parts, axis=axis) if len(parts) > 1 else x
    return x


def _pad_widths(pad_width: Any, ndim: int) -> list[tuple[int, int]]:
    """``pad_width`` as one (before, after) pair per dim, as NumPy broadcasts it."""
    if isinstance(pad_width, Tracer):
        raise TypeError("pad: pad_width must be concrete integers, not a traced value.")
    widths = np.asarray(pad_width)
    if widths.dtype.kind not in "iu":
        raise TypeError(f"pad: pad_width must be integers, got {pad_width!r}.")
    widths = _broadcast_pairs(widths, ndim, "pad_width", pad_width)
    if (widths < 0).any():
        raise ValueError(f"pad: pad_width must be non-negative, got {pad_width!r}.")
    return [(int(b), int(a)) for b, a in widths]


def _broadcast_pairs(values: np.ndarray, ndim: int, name: str, given: Any) -> np.ndarray:
    try:
        return np.broadcast_to(values, (ndim, 2))
    except ValueError:
        raise ValueError(f"pad: {name} {given!r} does not fit an array of {ndim} dimensions: "
                         f"give one value, one (before, after) pair, or a pair per "
                         f"dimension.") from None


def _per_side(values: Any, ndim: int, name: str, integers: bool) -> np.ndarray:
    """``end_values`` or ``stat_length`` as one value per dim and side (None: no limit)."""
    if isinstance(values, Tracer):
        raise TypeError(f"pad: {name} must be concrete values, not a traced value.")
    if values is None:
        return np.full((ndim, 2), None, object)
    array = np.asarray(values)
    if integers and (array.dtype.kind not in "iu" or (array < 0).any()):
        raise ValueError(f"pad: {name} must be non-negative integers, got {values!r}.")
    return _broadcast_pairs(array, ndim, name, values)


def _block(x, axis: int, count: int, at_end: bool, mode: str, option: Any):
    """The ``count`` elements ``mode`` puts before (or after) ``x`` along ``axis``."""
    if mode == "linear_ramp":
        return _ramp(x, axis, count, at_end, option)
    if mode in ("maximum", "minimum", "mean", "median"):
        return _statistic(x, axis, count, at_end, mode, option)
    return _edge_block(x, axis, count, at_end, mode, option == "odd")


def _broadcast_along(x, axis: int, count: int):
    shape = list(get_aval(x).shape)
    shape[axis] = count
    return lax.broadcast_in_dim(x, tuple(shape), tuple(range(len(shape))))


def _as_type_of(values, x):
    """``values`` (computed in floats) in ``x``'s dtype: integers rounded half to even, as
    NumPy's padding rounds them."""
    dtype = get_aval(x).dtype
    if dtypes.kind(dtype) in "iu":
        values = rint(values)
    return astype(values, dtype)


def _statistic(x, axis: int, count: int, at_end: bool, mode: str, length: Any):
    """The statistic of the ``length`` elements nearest that end, repeated ``count`` times."""
    from .reductions import max, mean
    from .reductions import min as minimum
    from .statistics import median

    n = get_aval(x).shape[axis]
    length = n if length is None else min(int(length), n)  # (Python's min)
    if length == 0:
        raise ValueError("pad: stat_length of 0 yields no value for padding.")
    region = _slice_in_dim(x, n - length, n, axis) if at_end else _slice_in_dim(x, 0, length,
                                                                                axis)
    reduce = {"maximum": max, "minimum": minimum, "mean": mean, "median": median}[mode]
    value = reduce(region, axis=axis, keepdims=True)
    if mode in ("mean", "median"):
        value = _as_type_of(value, x)
    return _broadcast_along(value, axis, count)


def _ramp(x, axis: int, count: int, at_end: bool, end_value: Any):
    """From ``end_value`` to the edge, in ``count`` equal steps that stop before the edge
    (NumPy's ``linspace(end, edge, count, endpoint=False)``), reversed after the array."""
    n = get_aval(x).shape[axis]
    edge = _slice_in_dim(x, n - 1, n, axis) if at_end else _slice_in_dim(x, 0, 1, axis)
    dtype = dtypes.inexact_dtype(get_aval(x).dtype)
    edge = astype(edge, dtype)
    end = lax.full((), end_value, dtype, False)
    shape = [1] * get_aval(x).ndim
    shape[axis] = count
    fraction = lax.div(lax.iota(dtype, tuple(shape), axis), lax.full(tuple(shape), count, dtype))
    ramp = end + (edge - end) * fraction
    # (integers are truncated, as NumPy's linspace converts to an integer dtype)
    return astype(flip(ramp, axis) if at_end else ramp, get_aval(x).dtype)


def _edge_block(x, axis: int, count: int, at_end: bool, mode: str, odd: bool = False):
    """``count`` elements of "edge", "wrap", "reflect" or "symmetric" padding."""
    n = get_aval(x).shape[axis]
    if mode == "edge":
        end = _slice_in_dim(x, n - 1, n, axis) if at_end else _slice_in_dim(x, 0, 1, axis)
        return _broadcast_along(end, axis, count)
    if mode == "wrap":
        blocks, left = [], count
        while left > 0:
            take_now = min(left, n)
            blocks.append(_slice_in_dim(x, 0, take_now, axis) if at_end
                          else _slice_in_dim(x, n - take_now, n, axis))
            left -= take_now
        return concatenate(blocks if at_end else blocks[::-1], axis=axis)
    # reflect (the edge not repeated) and symmetric (the edge repeated), period by period; an
    # odd reflection goes through the edge value: 2 * edge - the mirrored elements
    skip = 1 if mode == "reflect" else 0
    blocks, left, current = [], count, x
    while left > 0:
        n = get_aval(current).shape[axis]
        size = min(left, n - skip)
        if size <= 0:
            raise ValueError(f"pad: mode {mode!r} needs at least 2 elements along axis "
                             f"{axis}.")
        if at_end:
            block = flip(_slice_in_dim(current, n - skip - size, n - skip, axis), axis)
        else:
            block = flip(_slice_in_dim(current, skip, skip + size, axis), axis)
        if odd:
            edge = _slice_in_dim(current, n - 1, n, axis) if at_end else \
                _slice_in_dim(current, 0, 1, axis)
            block = edge + edge - block
        blocks.append(block)
        current = concatenate([current, block] if at_end else [block, current], axis=axis)
        left -= size
    return concatenate(blocks if at_end else blocks[::-1], axis=axis)


def _pad_constant(x, widths: list[tuple[int, int]], values: Any):
    """``x`` padded with ``values`` (one scalar, or one per dim and side), in ``x``'s dtype."""
    dtype, weak = get_aval(x).dtype, get_aval(x).weak_type  # (a weak x stays weak, as JAX)
    if isinstance(values, Tracer) or np.ndim(values) == 0:
        fill = astype(values, dtype) if isinstance(values, Tracer) else \
            lax.full((), values, dtype, weak)
        if get_aval(fill).ndim:
            raise ValueError("pad: traced constant_values must be a scalar.")
        return lax.pad(x, fill, [(b, a, 0) for b, a in widths])
    ndim = get_aval(x).ndim
    per_side = np.broadcast_to(np.asarray(values), (ndim, 2))
    for axis, (before, after) in enumerate(widths):
        for side, count in enumerate((before, after)):
            config = [(0, 0, 0)] * ndim
            config[axis] = (count, 0, 0) if side == 0 else (0, count, 0)
            x = lax.pad(x, lax.full((), per_side[axis][side], dtype, weak), config)
    return x
