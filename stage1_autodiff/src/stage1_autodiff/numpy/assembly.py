"""Putting arrays together from pieces and taking them apart: ``block`` (nested lists of
blocks), ``array_split`` (into nearly equal parts), ``unstack``, ``rollaxis``, ``diagflat``,
``trim_zeros``, ``delete``, ``insert`` and ``resize``.

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.block([[jnp.eye(2), jnp.zeros((2, 1))], [jnp.ones((1, 2)), jnp.full((1, 1), 5.0)]])
    Array([[1., 0., 0.],
           [0., 1., 0.],
           [1., 1., 5.]], dtype=float32)
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import dtypes
from .. import prims as lax
from ..core import Array, Tracer, get_aval
from .arrangement import diag
from .concrete import concrete_value, static_int
from .creation import arange, full, zeros_like
from .promotion import as_value, broadcast_shapes, canonicalize_axis, convert
from .reductions import sum
from .shapes import concatenate, moveaxis, ravel, reshape, split, tile
from .statistics import argsort, nonzero, sort
from .ufuncs import astype, clip, where


def _at_least(x, ndim: int):
    """``x`` with leading dims of size 1 up to ``ndim``."""
    shape = get_aval(x).shape
    return reshape(x, (1,) * (ndim - len(shape)) + shape)


def _block(blocks: Any) -> tuple[Any, int]:
    """The array a nested list of blocks makes, and how deep the lists were: the innermost
    lists join along the last axis, the ones around them along the one before, and so on."""
    if isinstance(blocks, tuple):
        raise ValueError(f"jnp.block takes nested lists, not tuples; got {blocks!r}. Make "
                         f"each tuple a list.")
    if not isinstance(blocks, list):
        return as_value(blocks), 1
    if not blocks:
        raise ValueError("jnp.block does not take empty lists.")
    parts, depths = zip(*(_block(b) for b in blocks))
    if any(d != depths[0] for d in depths):
        raise ValueError(f"jnp.block: mismatched list depths {list(depths)}: every block "
                         f"must be nested in as many lists.")
    rank = max(depths[0], max(get_aval(p).ndim for p in parts))
    return concatenate([_at_least(p, rank) for p in parts], axis=-depths[0]), depths[0] + 1


def block(arrays: Any | list[Any]):
    """One array from a nested list of blocks (see NumPy's ``block``).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.block([jnp.array([1, 2]), 3])
        Array([1, 2, 3], dtype=int32)
    """
    result, _ = _block(arrays)
    return result


def array_split(ary, indices_or_sections: int | Sequence[int] | Any, axis: int = 0):
    """Splits ``ary`` along ``axis`` at the given indices, or into ``indices_or_sections``
    parts whose sizes differ by at most one (the first ones larger).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> [p.tolist() for p in jnp.array_split(jnp.arange(5), 3)]
        [[0, 1], [2, 3], [4]]
    """
    ary = as_value(ary)
    axis = static_int(axis, "array_split's axis")
    n = get_aval(ary).shape[canonicalize_axis(axis, get_aval(ary).ndim, "array_split")]
    if isinstance(indices_or_sections, (tuple, list)) or np.ndim(indices_or_sections) > 0:
        cuts = concrete_value(as_value(list(indices_or_sections)) if isinstance(
            indices_or_sections, (tuple, list)) else indices_or_sections,
            "array_split's indices", "Pass them as Python ints: they give the parts' shapes.")
        return split(ary, [int(i) for i in cuts], axis)
    sections = static_int(indices_or_sections, "array_split's number of sections")
    if sections == 0:  # the error JAX's division by the number of sections raises
        raise ZeroDivisionError("array_split: cannot split into 0 sections; pass a positive "
                                "number of sections, or the indices to split at.")
    if sections < 0:
        raise ValueError(f"array_split: the number of sections must be positive, got "
                         f"{sections}.")
    size, extra = divmod(n, sections)
    sizes = [size + 1] * extra + [size] * (sections - extra)
    return split(ary, list(np.cumsum(sizes)[:-1]), axis)


def unstack(x, /, *, axis: int = 0) -> tuple[Any, ...]:
    """The slices of ``x`` along ``axis``, as a tuple (the inverse of ``stack``).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.unstack(jnp.array([[1, 2], [3, 4]]), axis=1)
        (Array([1, 3], dtype=int32), Array([2, 4], dtype=int32))
    """
    x = as_value(x)
    if get_aval(x).ndim == 0:
        raise ValueError("unstack: x must have at least one dim to unstack along; it is a "
                         "scalar.")
    moved = moveaxis(x, canonicalize_axis(axis, get_aval(x).ndim, "unstack"), 0)
    return tuple(moved[i] for i in range(get_aval(moved).shape[0]))


def rollaxis(a, axis: int, start: int = 0):
    """``a`` with ``axis`` moved to stand before position ``start`` (NumPy's older
    :func:`moveaxis`).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.rollaxis(jnp.ones((2, 3, 4)), 2).shape
        (4, 2, 3)
    """
    a = as_value(a)
    ndim = get_aval(a).ndim
    axis = canonicalize_axis(axis, ndim, "rollaxis")
    start = operator.index(start)
    if not -ndim <= start <= ndim:
        raise ValueError(f"rollaxis: start={start} must be from {-ndim} to {ndim}.")
    start = start + ndim if start < 0 else start
    return moveaxis(a, axis, start - 1 if start > axis else start)


def diagflat(v, k: int = 0):
    """A square matrix with the flattened ``v`` on its ``k``-th diagonal, zeros elsewhere.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.diagflat(jnp.array([[1, 2]]), k=1)
        Array([[0, 1, 0],
               [0, 0, 2],
               [0, 0, 0]], dtype=int32)
    """
    flat = ravel(as_value(v))
    return diag(convert(flat, get_aval(flat).dtype), k)  # never weak, as a new array


def trim_zeros(filt, trim: str = "fb", axis: int | Sequence[int] | None = None):
    """``filt`` without its leading ('f' in ``trim``) and trailing ('b') zeros along each
    of ``axis`` (every axis by default): slices that are all zero are cut off. The result's
    shape depends on the values, so ``filt`` must be concrete.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.trim_zeros(jnp.array([0, 0, 3, 0, 2, 0]))
        Array([3, 0, 2], dtype=int32)
    """
    filt = as_value(filt)
    values = concrete_value(filt, "trim_zeros (its result's shape depends on the values)",
                            "Under jit, mask the zeros instead.")
    axes = range(values.ndim) if axis is None else \
        [canonicalize_axis(a, values.ndim, "trim_zeros") for a in np.atleast_1d(axis)]
    front, back = "f" in trim.lower(), "b" in trim.lower()
    slices = [slice(None)] * values.ndim
    for ax in axes:
        occupied = np.any(values != 0, axis=tuple(d for d in range(values.ndim) if d != ax))
        if not occupied.any():
            slices[ax] = slice(0, 0)
            continue
        found = np.flatnonzero(occupied)
        slices[ax] = slice(found[0] if front else None, found[-1] + 1 if back else None)
    return filt[tuple(slices)]


# ------------------------------------------------------------------------------------------
# Deleting, inserting, resizing
# ------------------------------------------------------------------------------------------


def _check_not_a_list(name: str, obj: Any) -> None:
    if isinstance(obj, (list, tuple)):  # as JAX, which takes no lists where it wants arrays
        raise TypeError(f"{name}: obj must be an array, a scalar or a slice, got a "
                        f"{type(obj).__name__}; pass jnp.array({obj!r}) instead.")


def _kept_positions(a, obj: Any, axis: int) -> Any:
    """Which positions along ``axis`` ``delete`` keeps: a boolean mask (concrete ``obj``),
    or the kept indices (``obj`` unique integers, which may be traced)."""
    n = get_aval(a).shape[axis]
    if isinstance(obj, slice):
        obj = np.arange(n)[obj]
    obj = concrete_value(obj, "delete (the number of elements left depends on obj)",
                         "Pass unique integer indices with assume_unique_indices=True.")
    if obj.dtype == np.bool_:
        if obj.shape != (n,):
            raise ValueError(f"delete: a boolean obj must be 1-D of the axis' length {n}, "
                             f"got shape {obj.shape}.")
        return ~obj
    if not np.issubdtype(obj.dtype, np.integer):
        raise ValueError(f"delete: obj must be integers or booleans, got {obj.dtype}.")
    mask = np.ones(n, dtype=bool)
    mask[obj] = False
    return mask


def delete(arr, obj: Any, axis: int | None = None, *, assume_unique_indices: bool = False):
    """``arr`` without the entries ``obj`` (an index, indices, a slice or a boolean mask)
    along ``axis`` (of the flattened ``arr`` if None).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.delete(jnp.array([[1, 2, 3], [4, 5, 6]]), jnp.array([0, 2]), axis=1)
        Array([[2],
               [5]], dtype=int32)
    """
    _check_not_a_list("delete", obj)
    a = ravel(as_value(arr)) if axis is None else as_value(arr)
    axis = canonicalize_axis(0 if axis is None else axis, get_aval(a).ndim, "delete")
    before = (slice(None),) * axis
    n = get_aval(a).shape[axis]
    if isinstance(obj, (int, np.integer)):
        i = canonicalize_axis(int(obj), n, "delete: index")
        return concatenate([a[before + (slice(0, i),)], a[before + (slice(i + 1, None),)]],
                           axis=axis)
    if assume_unique_indices and not isinstance(obj, slice):
        obj = as_value(obj)
        removed = sort(clip(where(obj < 0, obj + n, obj), 0, n).ravel())
        removed = removed - arange(get_aval(removed).size, dtype=get_aval(removed).dtype)
        kept = arange(n - get_aval(removed).size, dtype=get_aval(removed).dtype)
        kept = kept + sum(kept[None, :] >= removed[:, None], axis=0, dtype=get_aval(kept).dtype)
        return a[before + (kept,)]
    return a[before + (_kept_positions(a, obj, axis),)]


def _insert_values(values, a, index_ndim: int, axis: int):
    """``values`` in ``a``'s dtype, with leading dims of size 1 up to ``a``'s; for a single
    scalar index, its first dim moved to ``axis`` (NumPy's rule)."""
    values = _at_least(astype(values, get_aval(a).dtype), get_aval(a).ndim)
    return moveaxis(values, 0, axis) if index_ndim == 0 else values


def insert(arr, obj: Any, values: Any, axis: int | None = None):
    """``arr`` with ``values`` inserted before the indices ``obj`` (an index, indices or a
    slice) along ``axis`` (of the flattened ``arr`` if None).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.insert(jnp.array([1, 2, 3]), 1, jnp.array([8, 9]))
        Array([1, 8, 9, 2, 3], dtype=int32)
    """
    _check_not_a_list("insert", obj)
    a = ravel(as_value(arr)) if axis is None else as_value(arr)
    axis = canonicalize_axis(0 if axis is None else axis, get_aval(a).ndim, "insert")
    n = get_aval(a).shape[axis]
    index = arange(*obj.indices(n)) if isinstance(obj, slice) else as_value(obj)
    if get_aval(index).ndim > 1:
        raise ValueError(f"insert: obj must be a slice, a 1-D array or a scalar, got shape "
                         f"{get_aval(index).shape}.")
    if not dtypes.is_int(get_aval(index).dtype):
        if get_aval(index).size or isinstance(obj, (Array, Tracer)):
            raise ValueError(f"insert: the indices must be integers, got "
                             f"{get_aval(index).dtype}.")
        index = astype(index, int)
    values = _insert_values(values, a, get_aval(index).ndim, axis)
    if get_aval(index).size == 1:
        index = full(get_aval(values).shape[axis], ravel(index)[0])
    count = broadcast_shapes(get_aval(index).shape, (get_aval(values).shape[axis],))[0]
    index = clip(where(index < 0, index + n, index), 0, n)
    # where each inserted value lands: its index, plus the values inserted before it
    landed = index.at[argsort(index)].add(arange(count, dtype=get_aval(index).dtype))
    old = lax.full((n + count,), True, np.dtype(np.bool_)).at[landed].set(False)
    old_positions = nonzero(old, size=n)[0]
    shape = list(get_aval(a).shape)
    shape[axis] += count
    before = (slice(None),) * axis
    out = lax.full(tuple(shape), 0, get_aval(a).dtype, get_aval(a).weak_type)
    out = out.at[before + (landed,)].set(values)
    return out.at[before + (old_positions,)].set(a)


def resize(a, new_shape: int | Sequence[int]):
    """An array of ``new_shape`` filled with ``a``'s elements (flattened), repeated as often
    as needed.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.resize(jnp.array([1, 2, 3]), (2, 4))
        Array([[1, 2, 3, 1],
               [2, 3, 1, 2]], dtype=int32)
    """
    shape = (new_shape,) if np.ndim(new_shape) == 0 else tuple(new_shape)
    shape = tuple(operator.index(d) for d in shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"resize: all elements of new_shape must be nonnegative, got "
                         f"{shape}.")
    flat = ravel(as_value(a))
    size, have = int(np.prod(shape)), get_aval(flat).size
    if have == 0 or size == 0:
        return zeros_like(flat, shape=shape)
    return reshape(tile(flat, -(-size // have))[:size], shape)
