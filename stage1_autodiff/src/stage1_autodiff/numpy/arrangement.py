"""Stacking, splitting, shifting and matrix-shaped helpers, composed of the shape functions,
indexing and ``where``, as they are in JAX.

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.tril(jnp.ones((3, 3)))
    Array([[1., 0., 0.],
           [1., 1., 0.],
           [1., 1., 1.]], dtype=float32)
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import dtypes
from .. import prims as lax
from ..core import Tracer, get_aval
from .creation import asarray, zeros
from .indexing import take
from .promotion import as_value, canonicalize_axis, promote
from .reductions import sum
from .shapes import (
    atleast_1d,
    atleast_2d,
    concatenate,
    expand_dims,
    flip,
    moveaxis,
    ravel,
    reshape,
    split,
    swapaxes,
)
from .ufuncs import not_equal, where


def _static_int(value: Any, what: str, name: str) -> int:
    if isinstance(value, Tracer):
        raise TypeError(f"{name}: {what} must be a concrete integer, not a traced value; pass "
                        f"it as a Python int (a static argument under jit).")
    return operator.index(value)


# ------------------------------------------------------------------------------------------
# Stacking and splitting
# ------------------------------------------------------------------------------------------


def atleast_3d(*arys):
    """Each array with at least three dims: (N,) becomes (1, N, 1), (M, N) becomes (M, N, 1)."""
    def one(x):
        x = as_value(x)
        ndim = get_aval(x).ndim
        if ndim == 0:
            return reshape(x, (1, 1, 1))
        if ndim == 1:
            return expand_dims(x, (0, 2))
        return expand_dims(x, 2) if ndim == 2 else x
    results = [one(a) for a in arys]
    return results[0] if len(results) == 1 else results


def hstack(tup: Sequence[Any], dtype: Any = None):
    """Concatenation along the second dim (the first, for 1-D arrays)."""
    arrays = [atleast_1d(a) for a in tup]
    return concatenate(arrays, axis=0 if get_aval(arrays[0]).ndim == 1 else 1, dtype=dtype)


def vstack(tup: Sequence[Any], dtype: Any = None):
    """Concatenation along the first dim, 1-D arrays as rows."""
    return concatenate([atleast_2d(a) for a in tup], axis=0, dtype=dtype)


def dstack(tup: Sequence[Any], dtype: Any = None):
    """Concatenation along the third dim."""
    return concatenate([atleast_3d(a) for a in tup], axis=2, dtype=dtype)


def column_stack(tup: Sequence[Any]):
    """1-D arrays as columns of a 2-D array; 2-D arrays as they are."""
    columns = []
    for a in tup:
        a = as_value(a)
        columns.append(reshape(a, (-1, 1)) if get_aval(a).ndim < 2 else a)
    return concatenate(columns, axis=1)


def append(arr, values, axis: int | None = None):
    """``values`` after ``arr``: flattened, or along ``axis``."""
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], axis=0)
    return concatenate([arr, values], axis=axis)


def _split_along(name: str, axis: int, least: int):
    def split_at(ary, indices_or_sections):
        ndim = get_aval(as_value(ary)).ndim
        if ndim < least:
            raise np.exceptions.AxisError(f"{name} only works on arrays of {least} or more "
                                          f"dimensions, got one of {ndim}.")
        return split(ary, indices_or_sections, axis=0 if name == "hsplit" and ndim == 1
                     else axis)
    split_at.__name__ = name
    split_at.__doc__ = f"``split`` along dim {axis}."
    return split_at


hsplit = _split_along("hsplit", 1, 1)
vsplit = _split_along("vsplit", 0, 1)  # JAX splits a 1-D array too
dsplit = _split_along("dsplit", 2, 3)


# ------------------------------------------------------------------------------------------
# Flipping, rotating, rolling, differences, repetition
# ------------------------------------------------------------------------------------------


def fliplr(m):
    """The columns in reverse order."""
    if get_aval(as_value(m)).ndim < 2:
        raise ValueError("fliplr requires an array of at least 2 dimensions.")
    return flip(m, 1)


def flipud(m):
    """The rows in reverse order."""
    if get_aval(as_value(m)).ndim < 1:
        raise ValueError("flipud requires an array of at least 1 dimension.")
    return flip(m, 0)


def rot90(m, k: int = 1, axes: tuple[int, int] = (0, 1)):
    """``m`` rotated by 90 degrees ``k`` times, from the first of ``axes`` to the second."""
    m = as_value(m)
    ndim = get_aval(m).ndim
    first, second = (canonicalize_axis(a, ndim, "rot90") for a in axes)
    if first == second:
        raise ValueError(f"rot90: the axes must be different, got {tuple(axes)}.")
    k = _static_int(k, "k", "rot90") % 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, first), second)
    return swapaxes(flip(m, second), first, second) if k == 1 else \
        flip(swapaxes(m, first, second), second)


def roll(a, shift: int | Sequence[int], axis: int | Sequence[int] | None = None):
    """Elements shifted along ``axis`` (the flattened array when None), wrapping around."""
    a = as_value(a)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), get_aval(a).shape)
    shifts = [shift] if np.ndim(shift) == 0 else list(shift)
    axes = [axis] if np.ndim(axis) == 0 else list(axis)
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    if len(axes) == 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise ValueError(f"roll: shift and axis must have the same length, got {len(shifts)} "
                         f"and {len(axes)}.")
    ndim = get_aval(a).ndim
    for s, ax in zip(shifts, axes):
        ax = canonicalize_axis(ax, ndim, "roll")
        n = get_aval(a).shape[ax]
        s = _static_int(s, "shift", "roll") % n if n else 0
        if s:
            head, tail = split(a, [n - s], axis=ax)
            a = concatenate([tail, head], axis=ax)
    return a


def diff(a, n: int = 1, axis: int = -1, prepend=None, append=None):
    """The ``n``-th differences along ``axis`` (booleans: whether neighbours differ)."""
    a = as_value(a)
    n = _static_int(n, "n", "diff")
    if n < 0:
        raise ValueError(f"diff: order must be non-negative, got n={n}.")
    ndim = get_aval(a).ndim
    if ndim == 0:
        raise ValueError("diff requires an input of at least one dimension.")
    axis = canonicalize_axis(axis, ndim, "diff")
    parts = []
    for extra in (prepend, a, append):
        if extra is None:
            continue
        extra = as_value(extra)
        if get_aval(extra).ndim == 0:
            shape = list(get_aval(a).shape)
            shape[axis] = 1
            extra = lax.broadcast_in_dim(extra, tuple(shape), ())
        parts.append(extra)
    a = concatenate(parts, axis=axis) if len(parts) > 1 else a
    for _ in range(n):
        length = get_aval(a).shape[axis]
        later = _slice_in_dim(a, 1, length, axis)
        earlier = _slice_in_dim(a, 0, length - 1, axis)
        a = not_equal(later, earlier) if get_aval(a).dtype == np.bool_ else later - earlier
    return a


def _slice_in_dim(a, start: int, stop: int, axis: int):
    shape = get_aval(a).shape
    starts = [0] * len(shape)
    limits = list(shape)
    starts[axis], limits[axis] = start, stop
    return lax.slice(a, starts, limits)


def repeat(a, repeats, axis: int | None = None, *, total_repeat_length: int | None = None):
    """Each element repeated ``repeats`` times along ``axis`` (the flattened array when None);
    ``repeats`` is an int or a concrete array of one count per element."""
    a = as_value(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = canonicalize_axis(axis, get_aval(a).ndim, "repeat")
    if isinstance(repeats, Tracer):
        raise TypeError("repeat: repeats must be concrete (its values decide the shape); pass "
                        "a NumPy array or a Python int.")
    counts = np.broadcast_to(np.asarray(repeats), (get_aval(a).shape[axis],))
    positions = np.repeat(np.arange(counts.size), counts)
    if total_repeat_length is not None:
        positions = np.resize(positions, total_repeat_length) if positions.size else \
            np.zeros(total_repeat_length, int)
    return take(a, asarray(positions.astype(np.int32)), axis=axis)


# ------------------------------------------------------------------------------------------
# Matrices
# ------------------------------------------------------------------------------------------


def tri(N: int, M: int | None = None, k: int = 0, dtype=None):
    """Ones at and below the ``k``-th diagonal, zeros above; float32 unless ``dtype`` says
    otherwise (even with x64, as in JAX)."""
    dtype = dtypes.check_and_canonicalize_user_dtype(dtype or np.float32, "tri")
    return asarray(np.tri(N, M, k, dtype=dtype))


def _triangle(m, k: int, lower: bool):
    m = as_value(m)
    shape = get_aval(m).shape
    if len(shape) < 2:
        raise ValueError(f"{'tril' if lower else 'triu'} requires an array of at least 2 "
                         f"dimensions, got shape {shape}.")
    below = np.tri(shape[-2], shape[-1], k if lower else k - 1, dtype=bool)
    keep = below if lower else ~below
    return where(asarray(keep), m, lax.full((), 0, get_aval(m).dtype, get_aval(m).weak_type))


def tril(m, k: int = 0):
    """``m`` with the elements above the ``k``-th diagonal zeroed (of its last two dims)."""
    return _triangle(m, k, lower=True)


def triu(m, k: int = 0):
    """``m`` with the elements below the ``k``-th diagonal zeroed (of its last two dims)."""
    return _triangle(m, k, lower=False)


def diagonal(a, offset: int = 0, axis1: int = 0, axis2: int = 1):
    """The ``offset``-th diagonal over ``axis1`` and ``axis2``, as a last dim."""
    a = as_value(a)
    ndim = get_aval(a).ndim
    axis1, axis2 = (canonicalize_axis(x, ndim, "diagonal") for x in (axis1, axis2))
    if axis1 == axis2:
        raise TypeError(f"diagonal: axis1 and axis2 must be different dims, both are "
                        f"{axis1}.")
    moved = moveaxis(a, (axis1, axis2), (-2, -1))
    rows, cols = get_aval(moved).shape[-2:]
    length = max(0, min(rows + min(offset, 0), cols - max(offset, 0)))
    i = np.arange(length) - min(offset, 0)
    return moved[..., asarray(i.astype(np.int32)), asarray((i + offset).astype(np.int32))]


def diag(v, k: int = 0):
    """A 1-D ``v`` on the ``k``-th diagonal of a square matrix; of a 2-D ``v``, its diagonal."""
    v = as_value(v)
    shape = get_aval(v).shape
    if len(shape) == 2:
        return diagonal(v, k)
    if len(shape) != 1:
        raise ValueError(f"diag expects a 1-D or 2-D array, got shape {shape}.")
    n = shape[0] + abs(k)
    i = np.arange(shape[0])
    rows, cols = (i - min(k, 0)).astype(np.int32), (i + max(k, 0)).astype(np.int32)
    return zeros((n, n), get_aval(v).dtype).at[asarray(rows), asarray(cols)].set(v)


def trace(a, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype=None, out=None):
    """The sum of the ``offset``-th diagonal."""
    return sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype, out=out)


def kron(a, b):
    """The Kronecker product: every element of ``a`` times the whole of ``b``."""
    a, b = promote(a, b)
    a, b = as_value(a), as_value(b)
    ndim = max(get_aval(a).ndim, get_aval(b).ndim)
    a = reshape(a, (1,) * (ndim - get_aval(a).ndim) + get_aval(a).shape)
    b = reshape(b, (1,) * (ndim - get_aval(b).ndim) + get_aval(b).shape)
    spread_a = expand_dims(a, tuple(range(1, 2 * ndim, 2)))
    spread_b = expand_dims(b, tuple(range(0, 2 * ndim, 2)))
    shape = tuple(x * y for x, y in zip(get_aval(a).shape, get_aval(b).shape))
    return reshape(spread_a * spread_b, shape)


def cross(a, b, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: int | None = None):
    """The cross product of vectors of 2 or 3 components along ``axisa``/``axisb``."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = promote(a, b)
    a = moveaxis(as_value(a), axisa, -1)
    b = moveaxis(as_value(b), axisb, -1)
    sizes = (get_aval(a).shape[-1], get_aval(b).shape[-1])
    if sizes[0] not in (2, 3) or sizes[1] not in (2, 3):
        raise ValueError(f"cross: incompatible dimensions for cross product (dimension must "
                         f"be 2 or 3), got {sizes[0]} and {sizes[1]}.")
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2] if sizes[0] == 3 else 0
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2] if sizes[1] == 3 else 0
    if sizes == (2, 2):
        return a0 * b1 - a1 * b0
    from .shapes import stack
    c = stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return moveaxis(c, -1, axisc)


def meshgrid(*xi, copy: bool = True, sparse: bool = False, indexing: str = "xy"):
    """Coordinate arrays from 1-D coordinate vectors (``"xy"``: the first two swapped)."""
    del copy
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}.")
    arrays = [ravel(as_value(x)) for x in xi]
    n = len(arrays)
    shape = [get_aval(x).shape[0] for x in arrays]
    if indexing == "xy" and n > 1:
        shape[0], shape[1] = shape[1], shape[0]
    grids = []
    for k, x in enumerate(arrays):
        dim = (1 - k if k < 2 else k) if indexing == "xy" and n > 1 else k
        sparse_shape = [1] * n
        sparse_shape[dim] = get_aval(x).shape[0]
        grid = reshape(x, tuple(sparse_shape))
        grids.append(grid if sparse else lax.broadcast_in_dim(
            grid, tuple(shape), tuple(range(n))))
    return grids


def matrix_transpose(x):
    """Swaps the last two axes: the transpose of each matrix in a stack."""
    x = as_value(x)
    if get_aval(x).ndim < 2:
        raise ValueError(f"matrix_transpose needs an array of at least two dimensions, got "
                         f"shape {get_aval(x).shape}; use x.T or reshape first.")
    return swapaxes(x, -1, -2)


def _indices(function: Any, n: int, k: int, m: int | None) -> tuple[Any, Any]:
    rows, cols = function(operator.index(n), operator.index(k), n if m is None else m)
    int_dtype = dtypes.default_int_dtype()
    return asarray(rows, int_dtype), asarray(cols, int_dtype)


def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Any, Any]:
    """The row and column indices of the lower triangle of an (n, m) matrix, at and below
    the ``k``-th diagonal, as arrays of the default integer type."""
    return _indices(np.tril_indices, n, k, m)


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Any, Any]:
    """The indices of the upper triangle, at and above the ``k``-th diagonal."""
    return _indices(np.triu_indices, n, k, m)
