"""NumPy indexing on primitives: ``x[idx]``, ``x.at[idx].set(y)``, ``take``,
``take_along_axis``.

``x[idx]`` is done in two passes. *Basic* indices (slices, Python ints, ``None``, ``...``)
become one ``slice`` (plus ``rev`` for negative steps, ``reshape`` for ints and ``None``).
*Advanced* indices (integer arrays) become one ``gather``: the indexed dims are moved to the
front, the index arrays broadcast and stacked, and the batch dims put where NumPy puts them.

``x.at[idx].op(y)`` reuses ``x[idx]`` itself: indexing an array of flat positions
``arange(x.size).reshape(x.shape)[idx]`` tells, for every element of ``x[idx]``, where it
lives in ``x``, so every kind of index becomes a scatter into the flattened ``x``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from .. import primitives as lax
from ..core import Array, Tracer, get_aval
from ._promote import as_value, broadcast_shapes, broadcast_to_shape, convert


def _normalize_entry(entry: Any, position: int) -> list[Any]:
    """One index entry as a list of entries: a boolean mask expands to its nonzero indices."""
    if entry is None or entry is Ellipsis or isinstance(entry, slice):
        return [entry]
    if isinstance(entry, (bool, np.bool_)):
        raise TypeError("Boolean scalar indices are not supported; use jnp.where.")
    if isinstance(entry, (int, np.integer)):
        return [int(entry)]
    if isinstance(entry, (list, tuple)):
        entry = as_value(entry)
    if isinstance(entry, np.ndarray):
        entry = Array(entry)
    if not isinstance(entry, (Array, Tracer)):
        raise TypeError(f"Indexer at position {position} must be an int, slice, None, "
                        f"Ellipsis or an integer array, got {type(entry).__name__}.")
    dtype = get_aval(entry).dtype
    if dtype == np.bool_:
        if isinstance(entry, Tracer):
            raise IndexError(
                f"Array boolean indices must be concrete; got a traced boolean index at "
                f"position {position}. Boolean masks give data-dependent shapes: use "
                f"jnp.where(mask, x, 0) instead.")
        return [Array(i.astype(np.int32)) for i in np.nonzero(entry._value)]
    if not dtypes.is_int(dtype):
        raise TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                        f"{dtype} at position {position}.")
    return [entry]


def _expand_index(idx: Any, ndim: int) -> list[Any]:
    """The index as a list with one entry per dim of the operand, ``None`` kept in place."""
    entries = []
    for position, entry in enumerate(idx if isinstance(idx, tuple) else (idx,)):
        entries.extend(_normalize_entry(entry, position))
    if sum(e is Ellipsis for e in entries) > 1:
        raise IndexError("An index can only have a single ellipsis ('...').")
    consumed = sum(e is not None and e is not Ellipsis for e in entries)
    if consumed > ndim:
        raise IndexError(f"Too many indices for array: {consumed} non-None/Ellipsis indices "
                         f"for an array of dimension {ndim}.")
    fill = [slice(None)] * (ndim - consumed)
    if any(e is Ellipsis for e in entries):
        at = next(i for i, e in enumerate(entries) if e is Ellipsis)
        return entries[:at] + fill + entries[at + 1:]
    return entries + fill


def _is_advanced(entry: Any) -> bool:
    return isinstance(entry, (Array, Tracer))


# --8<-- [start:getitem]
def getitem(x: Any, idx: Any) -> Any:
    """``x[idx]`` with NumPy's semantics. Out-of-bounds *array* indices are clamped, as JAX
    does; NB: an out-of-bounds Python int raises IndexError here, where JAX clamps it too,
    because a static index past the end is almost always a bug.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> x = jnp.arange(12).reshape(3, 4)
        >>> x[1:, jnp.array([0, 3])]
        Array([[ 4,  7],
               [ 8, 11]], dtype=int32)
    """
    x = as_value(x)
    entries = _expand_index(idx, get_aval(x).ndim)
    x, entries = _insert_new_axes(x, entries)
    if any(_is_advanced(e) for e in entries):
        # With an advanced index present, NumPy treats integer scalars as advanced too.
        entries = [Array(np.asarray(e, np.int32)) if isinstance(e, int) else e for e in entries]
    x, entries = _basic_indexing(x, entries)
    if any(_is_advanced(e) for e in entries):
        x = _advanced_indexing(x, entries)
    return x
# --8<-- [end:getitem]


def _insert_new_axes(x: Any, entries: list[Any]) -> tuple[Any, list[Any]]:
    """``x[None, i]`` is ``expand_dims(x, 0)[:, i]``: give each None a size-1 dim."""
    new_axes = [d for d, e in enumerate(entries) if e is None]
    if not new_axes:
        return x, entries
    x = lax.expand_dims(x, new_axes)
    return x, [slice(None) if e is None else e for e in entries]


def _basic_indexing(x: Any, entries: list[Any]) -> tuple[Any, list[Any]]:
    """Applies the slices and integers; returns the result and the remaining entries."""
    shape = get_aval(x).shape
    starts, limits, strides, reversed_dims, dropped = [], [], [], [], []
    for d, (entry, n) in enumerate(zip(entries, shape)):
        if isinstance(entry, int):
            i = entry + n if entry < 0 else entry
            if not 0 <= i < n:
                raise IndexError(f"index {entry} is out of bounds for axis {d} with size {n}.")
            entry, dropped = slice(i, i + 1), dropped + [d]
        if not isinstance(entry, slice):  # an advanced index: keep the whole dim
            starts.append(0)
            limits.append(n)
            strides.append(1)
            continue
        start, stop, step = entry.indices(n)
        length = len(range(start, stop, step))
        if step < 0:  # walk the reversed dim forward
            reversed_dims.append(d)
            start, step = n - 1 - start, -step
        starts.append(start)
        limits.append(start + (length - 1) * step + 1 if length else start)
        strides.append(step)
    if reversed_dims:
        x = lax.rev(x, reversed_dims)
    if (starts, limits) != ([0] * len(shape), list(shape)) or any(s != 1 for s in strides):
        x = lax.slice(x, starts, limits, None if all(s == 1 for s in strides) else strides)
    if dropped:
        x = lax.squeeze(x, dropped)
    remaining = [e for d, e in enumerate(entries) if d not in dropped]
    return x, remaining


def _advanced_indexing(x: Any, entries: list[Any]) -> Any:
    shape = get_aval(x).shape
    adv_dims = [d for d, e in enumerate(entries) if _is_advanced(e)]
    rest_dims = [d for d in range(len(shape)) if d not in adv_dims]
    indices = [_normalize_negative(entries[d], shape[d]) for d in adv_dims]
    batch_shape = broadcast_shapes(*[get_aval(i).shape for i in indices], op_name="indexing")
    columns = [lax.broadcast_in_dim(i, batch_shape + (1,), tuple(range(
        len(batch_shape) - get_aval(i).ndim, len(batch_shape)))) for i in indices]
    stacked = columns[0] if len(columns) == 1 else lax.concatenate(columns, len(batch_shape))
    moved = x if adv_dims + rest_dims == list(range(len(shape))) else lax.transpose(
        x, adv_dims + rest_dims)
    out = lax.gather(moved, stacked)
    adjacent = adv_dims == list(range(adv_dims[0], adv_dims[-1] + 1))
    if not adjacent or adv_dims[0] == 0:
        return out  # NumPy puts the batch dims first
    # Adjacent advanced indices: the batch dims go where the indexed dims were.
    nb, before = len(batch_shape), adv_dims[0]
    perm = list(range(nb, nb + before)) + list(range(nb)) + list(
        range(nb + before, nb + len(rest_dims)))
    return lax.transpose(out, perm)


def _normalize_negative(index: Any, n: int) -> Any:
    """Negative indices count from the end."""
    index = convert(index, np.dtype(np.int32))
    if isinstance(index, Array):
        return Array(np.where(index._value < 0, index._value + n, index._value).astype(np.int32))
    return lax.select_n(lax.lt(index, lax.zeros_like(index)), index,
                        lax.add(index, lax.full_like(index, n)))


# --8<-- [start:at]
class IndexUpdateHelper:
    """``x.at``: ``x.at[idx].set(y)`` returns a copy of ``x`` with ``x[idx]`` replaced."""

    def __init__(self, array: Any) -> None:
        self.array = array

    def __getitem__(self, idx: Any) -> IndexUpdateRef:
        return IndexUpdateRef(self.array, idx)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self.array!r})"


class IndexUpdateRef:
    """The functional updates of ``x[idx]``, each returning a new array.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.zeros(4).at[1:3].add(1.0)
        Array([0., 1., 1., 0.], dtype=float32)
    """

    def __init__(self, array: Any, idx: Any) -> None:
        self.array, self.idx = array, idx

    def get(self) -> Any:
        return getitem(self.array, self.idx)

    def set(self, values: Any) -> Any:
        return _scatter(self.array, self.idx, values, lax.scatter)

    def add(self, values: Any) -> Any:
        return _scatter(self.array, self.idx, values, lax.scatter_add)

    def multiply(self, values: Any) -> Any:
        return _scatter(self.array, self.idx, values, lax.scatter_mul)

    mul = multiply

    def divide(self, values: Any) -> Any:
        from .ufuncs import true_divide
        x = as_value(self.array)
        divisors = _scatter(lax.full_like(x, 1), self.idx, values, lax.scatter_mul)
        return true_divide(x, divisors)

    def min(self, values: Any) -> Any:  # noqa: A003
        return _scatter(self.array, self.idx, values, lax.scatter_min)

    def max(self, values: Any) -> Any:  # noqa: A003
        return _scatter(self.array, self.idx, values, lax.scatter_max)


def _scatter(x: Any, idx: Any, values: Any, scatter_fn) -> Any:
    x = as_value(x)
    aval = get_aval(x)
    flat_positions = lax.reshape(lax.iota(np.int32, (aval.size,)), aval.shape)
    positions = getitem(flat_positions, idx)  # where each element of x[idx] lives in x
    positions_shape = get_aval(positions).shape
    values = convert(as_value(values), aval.dtype, aval.weak_type)
    values_shape = get_aval(values).shape
    if broadcast_shapes(values_shape, positions_shape, op_name="at[]") != positions_shape:
        raise ValueError(f"at[].set/add/...: values of shape {values_shape} cannot be "
                         f"broadcast to the indexed shape {positions_shape}.")
    values = broadcast_to_shape(values, positions_shape)
    count = get_aval(positions).size
    out = scatter_fn(lax.reshape(x, (aval.size,)), lax.reshape(positions, (count, 1)),
                     lax.reshape(values, (count,)))
    return lax.reshape(out, aval.shape)
# --8<-- [end:at]


def take(a, indices, axis: int | None = None):
    """Elements of ``a`` at ``indices`` along ``axis`` (of the flattened ``a`` if None).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.take(jnp.array([10, 20, 30]), jnp.array([2, 0]))
        Array([30, 10], dtype=int32)
    """
    from .shapes import ravel
    a = as_value(a)
    if axis is None:
        a, axis = ravel(a), 0
    ndim = get_aval(a).ndim
    axis = axis % ndim if ndim else 0
    return getitem(a, (slice(None),) * axis + (as_value(indices),))


def take_along_axis(arr, indices, axis: int | None):
    """``arr`` picked along ``axis`` at ``indices``, which has the same number of dims.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> x = jnp.array([[3.0, 1.0], [2.0, 5.0]])
        >>> jnp.take_along_axis(x, jnp.array([[1], [0]]), axis=1)
        Array([[1.],
               [2.]], dtype=float32)
    """
    from .shapes import ravel
    arr, indices = as_value(arr), as_value(indices)
    if axis is None:
        arr, indices, axis = ravel(arr), ravel(indices), 0
    arr_shape, idx_shape = get_aval(arr).shape, get_aval(indices).shape
    if len(arr_shape) != len(idx_shape):
        raise ValueError(f"take_along_axis: indices and arr must have the same number of "
                         f"dims, got {len(idx_shape)} vs {len(arr_shape)}.")
    axis = axis % len(arr_shape)
    shape = list(broadcast_shapes(
        [1 if d == axis else n for d, n in enumerate(arr_shape)],
        [1 if d == axis else n for d, n in enumerate(idx_shape)], op_name="take_along_axis"))
    arr = broadcast_to_shape(arr, tuple(arr_shape[axis] if d == axis else n
                                        for d, n in enumerate(shape)))
    shape[axis] = idx_shape[axis]
    indices = broadcast_to_shape(_normalize_negative(indices, arr_shape[axis]), tuple(shape))
    return lax.gather(arr, lax.index_grid(tuple(shape), axis, indices))
