"""Functions that move elements without computing: reshape, transpose, stack, split, ..."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import dtypes
from .. import prims as lax
from ..core import get_aval
from .promotion import (
    as_value,
    broadcast_shapes,
    broadcast_to_shape,
    canonicalize_axes,
    canonicalize_axis,
    convert,
    promote,
)


def _resolve_shape(size: int, shape: Sequence[int]) -> tuple[int, ...]:
    """Fills in one ``-1`` and checks that the element count matches (a ``TypeError``, as
    JAX's: the shape is part of the type)."""
    shape = tuple(int(d) for d in shape)
    if shape.count(-1) > 1:
        raise TypeError(f"reshape: can only specify one unknown dimension (-1), got {shape}.")
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        if known == 0 or size % known:
            raise TypeError(f"cannot reshape array of size {size} into shape {shape}: no "
                            f"size for the -1 dimension makes the element counts equal.")
        shape = tuple(size // known if d == -1 else d for d in shape)
    if math.prod(shape) != size:
        raise TypeError(f"cannot reshape array of size {size} into shape {shape}: the new "
                        f"shape must have the same number of elements.")
    return shape


def reshape(a, shape, order: str = "C", *, copy: bool | None = None, out_sharding=None):
    """``a`` with a new shape and the same elements (one dim may be -1); in column-major
    order with ``order="F"``. ``copy`` changes nothing, as in JAX: ``a`` itself when the
    shape is its own. ``out_sharding`` (stage 4): the result's layout, for a reshape no rule
    can place.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.reshape(jnp.arange(6), (2, -1))
        Array([[0, 1, 2],
               [3, 4, 5]], dtype=int32)
    """
    a = as_value(a)
    aval = get_aval(a)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else shape
    shape = _resolve_shape(aval.size, shape)
    if order == "F":  # column-major: reverse the dims on both sides of a C-order reshape
        reversed_a = lax.transpose(a, tuple(reversed(range(aval.ndim))))
        # (out_sharding lays out the reversed dims, as in JAX)
        out = lax.reshape(reversed_a, tuple(reversed(shape)), out_sharding=out_sharding)
        return lax.transpose(out, tuple(reversed(range(len(shape)))))
    if order != "C":
        raise ValueError(f"reshape: order must be 'C' or 'F', got {order!r}.")
    del copy
    if shape == aval.shape and out_sharding is None:
        return a
    return lax.reshape(a, shape, out_sharding=out_sharding)


def ravel(a, order: str = "C"):
    """``a`` as a 1-d array, in row-major order (column-major with ``order="F"``)."""
    if order not in ("C", "F"):
        raise NotImplementedError(f"ravel: order={order!r} is not implemented, as in JAX: "
                                  f"use 'C' (row-major) or 'F' (column-major).")
    a = as_value(a)
    return reshape(a, (get_aval(a).size,), order)


def transpose(a, axes: Sequence[int] | None = None):
    """Permutes the dims of ``a`` (reverses them when ``axes`` is None).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.transpose(jnp.ones((2, 3, 4)), (2, 0, 1)).shape
        (4, 2, 3)
    """
    a = as_value(a)
    ndim = get_aval(a).ndim
    if axes is None:
        axes = tuple(reversed(range(ndim)))
    axes = tuple(canonicalize_axis(int(ax), ndim, "transpose") for ax in axes)
    if sorted(axes) != list(range(ndim)):
        raise TypeError(f"transpose: axes {axes} are not a permutation of 0..{ndim - 1}.")
    return a if axes == tuple(range(ndim)) else lax.transpose(a, axes)


def swapaxes(a, axis1: int, axis2: int):
    """Exchanges two dims."""
    a = as_value(a)
    ndim = get_aval(a).ndim
    perm = list(range(ndim))
    i = canonicalize_axis(axis1, ndim, "swapaxes")
    j = canonicalize_axis(axis2, ndim, "swapaxes")
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(a, perm)


def moveaxis(a, source: int | Sequence[int], destination: int | Sequence[int]):
    """Moves dims ``source`` to positions ``destination``, keeping the others in order."""
    a = as_value(a)
    ndim = get_aval(a).ndim
    src = canonicalize_axes(source, ndim, "moveaxis")
    dst = canonicalize_axes(destination, ndim, "moveaxis")
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination must have the same number of axes.")
    rest = [d for d in range(ndim) if d not in src]
    perm = [None] * ndim
    for s, d in zip(src, dst):
        perm[d] = s
    rest_iter = iter(rest)
    return transpose(a, [p if p is not None else next(rest_iter) for p in perm])


def expand_dims(a, axis: int | Sequence[int]):
    """Inserts size-1 dims at ``axis`` (positions in the result)."""
    a = as_value(a)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out_ndim = get_aval(a).ndim + len(axes)
    return lax.expand_dims(a, canonicalize_axes(axes, out_ndim, "expand_dims"))


def squeeze(a, axis: int | Sequence[int] | None = None):
    """Removes size-1 dims (all of them, or those in ``axis``)."""
    a = as_value(a)
    shape = get_aval(a).shape
    if axis is None:
        axes = tuple(d for d, n in enumerate(shape) if n == 1)
    else:
        axes = canonicalize_axes(axis, len(shape), "squeeze")
    for d in axes:
        if shape[d] != 1:
            raise ValueError(f"cannot select an axis to squeeze out which has size not equal "
                             f"to one: axis {d} of shape {shape}.")
    return lax.squeeze(a, axes) if axes else a


def broadcast_to(array, shape: Sequence[int]):
    """``array`` broadcast to ``shape`` by NumPy's rules.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.broadcast_to(jnp.array([1, 2]), (2, 2))
        Array([[1, 2],
               [1, 2]], dtype=int32)
    """
    array = as_value(array)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return broadcast_to_shape(array, shape)


def broadcast_arrays(*args):
    """All ``args`` broadcast to their common shape."""
    values = [as_value(a) for a in args]
    shape = broadcast_shapes(*[get_aval(v).shape for v in values], op_name="broadcast_arrays")
    return [broadcast_to_shape(v, shape) for v in values]


def concatenate(arrays: Sequence[Any], axis: int | None = 0, dtype: Any = None):
    """Joins arrays along an existing dim (of the flattened arrays if ``axis`` is None), in
    their promoted type or ``dtype``.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.concatenate([jnp.zeros(2), jnp.ones(1)])
        Array([0., 0., 1.], dtype=float32)
    """
    if not len(arrays):
        raise ValueError("Need at least one array to concatenate.")
    values = _joined(arrays, dtype, "concatenate")
    if axis is None:
        values, axis = [ravel(v) for v in values], 0
    shapes = [get_aval(v).shape for v in values]
    if any(len(s) == 0 for s in shapes):
        raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    axis = canonicalize_axis(axis, len(shapes[0]), "concatenate")
    for s in shapes[1:]:
        if len(s) != len(shapes[0]) or any(
                a != b for d, (a, b) in enumerate(zip(s, shapes[0])) if d != axis):
            raise TypeError(f"concatenate: all input array dimensions except for the "
                            f"concatenation axis {axis} must match exactly, got shapes "
                            f"{', '.join(map(str, shapes))}.")
    return values[0] if len(values) == 1 else lax.concatenate(values, axis)


def _joined(arrays: Sequence[Any], dtype: Any, fun_name: str) -> list[Any]:
    """Arrays to join, in their promoted type or ``dtype``."""
    values = promote(*arrays)
    if dtype is None:
        return values
    dtype = dtypes.check_and_canonicalize_user_dtype(dtype, fun_name)
    return [convert(v, dtype) for v in values]


def stack(arrays: Sequence[Any], axis: int = 0, out: Any = None, dtype: Any = None):
    """Joins arrays of one shape along a new dim (in their promoted type or ``dtype``)."""
    if out is not None:
        raise NotImplementedError("stack: the 'out' argument is not supported: JAX arrays "
                                  "are immutable. Use the returned array instead.")
    if not len(arrays):
        raise ValueError("Need at least one array to stack.")
    values = _joined(arrays, dtype, "stack")
    shapes = {get_aval(v).shape for v in values}
    if len(shapes) != 1:
        raise ValueError(f"All input arrays must have the same shape to stack, got "
                         f"{sorted(shapes)}.")
    ndim = len(shapes.pop()) + 1
    axis = canonicalize_axis(axis, ndim, "stack")
    return concatenate([expand_dims(v, axis) for v in values], axis)


def split(ary, indices_or_sections: int | Sequence[int], axis: int = 0) -> list[Any]:
    """Splits into equal sections, or at the given indices, along ``axis``.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> [p.shape for p in jnp.split(jnp.arange(6), 3)]
        [(2,), (2,), (2,)]
    """
    ary = as_value(ary)
    shape = get_aval(ary).shape
    axis = canonicalize_axis(axis, len(shape), "split")
    n = shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0 or n % sections:
            raise ValueError(f"array split does not result in an equal division: {n} "
                             f"elements along axis {axis} into {sections} sections.")
        bounds = [i * (n // sections) for i in range(sections + 1)]
    else:
        cuts = [int(i) + n if int(i) < 0 else int(i) for i in indices_or_sections]
        bounds = [0, *[min(max(i, 0), n) for i in cuts], n]
    pieces = []
    for start, stop in zip(bounds[:-1], bounds[1:]):
        starts = [0] * len(shape)
        limits = list(shape)
        starts[axis], limits[axis] = start, max(start, stop)
        pieces.append(lax.slice(ary, starts, limits))
    return pieces




def flip(m, axis: int | Sequence[int] | None = None):
    """Reverses the order of elements along ``axis`` (all axes if None)."""
    m = as_value(m)
    axes = canonicalize_axes(axis, get_aval(m).ndim, "flip")
    return lax.rev(m, axes) if axes else m


def tile(A, reps: int | Sequence[int]):
    """Repeats ``A`` ``reps`` times along each dim.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.tile(jnp.array([1, 2]), 2)
        Array([1, 2, 1, 2], dtype=int32)
    """
    A = as_value(A)
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    shape = get_aval(A).shape
    ndim = max(len(shape), len(reps))
    shape = (1,) * (ndim - len(shape)) + shape
    reps = (1,) * (ndim - len(reps)) + reps
    if ndim > len(get_aval(A).shape):  # leading dims of size 1, as JAX adds them
        A = lax.broadcast_in_dim(A, shape, tuple(range(ndim - len(get_aval(A).shape), ndim)))
    return lax.tile(A, reps)


def atleast_1d(x):
    """``x`` with at least one dim."""
    x = as_value(x)
    return reshape(x, (1,)) if get_aval(x).ndim == 0 else x


def atleast_2d(x):
    """``x`` with at least two dims (new dims in front)."""
    x = as_value(x)
    shape = get_aval(x).shape
    return reshape(x, (1,) * (2 - len(shape)) + shape) if len(shape) < 2 else x


def shape(a) -> tuple[int, ...]:
    """The shape of ``a``."""
    return get_aval(as_value(a)).shape


def ndim(a) -> int:
    """The number of dims of ``a``."""
    return get_aval(as_value(a)).ndim


def size(a, axis: int | Sequence[int] | None = None) -> int:
    """The number of elements of ``a`` (along ``axis``, if given)."""
    shape = get_aval(as_value(a)).shape
    if axis is None:
        return math.prod(shape)
    axes = canonicalize_axes(axis, len(shape), "size")
    return math.prod(shape[d] for d in axes)
