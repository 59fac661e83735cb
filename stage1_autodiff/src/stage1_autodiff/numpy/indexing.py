"""NumPy indexing on primitives: ``x[idx]``, ``x.at[idx].set(y)``, ``take``,
``take_along_axis``.

``x[idx]`` with only *basic* indices (slices, Python ints, ``None``, ``...``) is one ``slice``
(plus ``rev`` for negative steps, ``squeeze`` for ints, ``expand_dims`` for ``None``). With
*advanced* indices (integer arrays) it is one ``gather`` whose dimension numbers say which
dims of ``x[idx]`` are windows (slices) and which come from the index vectors (the arrays, the
ints among them, strided slices), placed where NumPy places them: ``_index_plan``.

``x.at[idx].op(y)`` is one scatter with the same plan: the windows of ``x[idx]`` are where the
updates land, and an update whose index is out of bounds is dropped (or, with ``mode="clip"``,
clamped), as in JAX.
"""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import numpy as np

from .. import dtypes
from .. import prims as lax
from ..core import Array, Tracer, dynamic_trace, get_aval, trace_state
from ..errors import ConcretizationTypeError, NonConcreteBooleanIndexError
from .promotion import as_value, broadcast_shapes, broadcast_to_shape, convert


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
        return [Array(i.astype(np.int32)) for i in np.nonzero(_concrete_mask(entry, position))]
    if not dtypes.is_int(dtype):
        raise TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                        f"{dtype} at position {position}.")
    return [entry]


def _concrete_mask(mask: Array | Tracer, position: int) -> np.ndarray:
    """A boolean index's values. They are known eagerly and under ``grad`` or ``jvp`` (the
    primal's), not under ``jit`` or ``vmap``: there the result's shape would depend on them."""
    try:
        return mask._concrete_value("a boolean index")
    except ConcretizationTypeError:
        raise NonConcreteBooleanIndexError(
            f"Array boolean indices must be concrete; got a traced boolean index "
            f"{get_aval(mask).str_short()} at position {position}. Boolean masks give "
            f"data-dependent shapes: use jnp.where(mask, x, 0) instead, or pass the mask as "
            f"a NumPy array (a constant).") from None


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
def getitem(x: Any, idx: Any, *, mode: Any = None, fill_value: Any = None) -> Any:
    """``x[idx]`` with NumPy's semantics. Out-of-bounds indices are clamped into range, as
    JAX's default mode (``"promise_in_bounds"``) does on CPU; ``mode="fill"`` (which a
    ``fill_value`` implies) gives ``fill_value`` there instead, ``"clip"`` clamps.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> x = jnp.arange(12).reshape(3, 4)
        >>> x[1:, jnp.array([0, 3])]
        Array([[ 4,  7],
               [ 8, 11]], dtype=int32)
    """
    x = as_value(x)
    mode = _read_mode(mode, fill_value)
    entries = _expand_index(idx, get_aval(x).ndim)
    x, entries = _insert_new_axes(x, entries)
    if mode is lax.GatherScatterMode.FILL_OR_DROP or any(_is_advanced(e) for e in entries):
        # An integer among array indices is one too (NumPy), and a filled read of a
        # Python int must see it out of bounds: both become 0-d index arrays.
        entries = [_as_index_array(e) for e in entries]
    if not any(_is_advanced(e) for e in entries):
        return _basic_indexing(x, entries)
    if mode is lax.GatherScatterMode.PROMISE_IN_BOUNDS and all(
            get_aval(e).ndim == 0 for e in entries if _is_advanced(e)):
        # Scalar indices only: JAX reads with dynamic_slice, whose start (and gradient)
        # is clamped; a clipping gather is the same in both directions.
        mode = lax.GatherScatterMode.CLIP
    plan = _index_plan(get_aval(x).shape, entries)
    if 0 in plan.shape:  # nothing to read (a gather's slice of an empty dim would not fit)
        return lax.full_like(x, 0, shape=plan.shape)
    numbers = lax.GatherDimensionNumbers(plan.window_dims, plan.dropped_dims,
                                         plan.indexed_dims)
    return lax.gather(x, plan.indices, numbers, plan.window_sizes, mode=mode,
                      fill_value=fill_value)
# --8<-- [end:getitem]


def _read_mode(mode: Any, fill_value: Any) -> Any:
    if mode is None:
        return "fill" if fill_value is not None else lax.GatherScatterMode.PROMISE_IN_BOUNDS
    return lax.GatherScatterMode.from_any(mode)


def _as_index_array(entry: Any) -> Any:
    return Array(np.asarray(entry, np.int32)) if isinstance(entry, int) else entry


def _insert_new_axes(x: Any, entries: list[Any]) -> tuple[Any, list[Any]]:
    """``x[None, i]`` is ``expand_dims(x, 0)[:, i]``: give each None a size-1 dim."""
    new_axes = [d for d, e in enumerate(entries) if e is None]
    if not new_axes:
        return x, entries
    x = lax.expand_dims(x, new_axes)
    return x, [slice(None) if e is None else e for e in entries]


def _basic_indexing(x: Any, entries: list[Any]) -> Any:
    """Slices and Python ints: one ``slice`` (``rev`` first for negative steps), then a
    ``squeeze`` of the integer-indexed dims. An integer out of range is clamped into it, as
    JAX does (its ``dynamic_slice`` clamps the start)."""
    shape = get_aval(x).shape
    starts, limits, strides, reversed_dims, dropped = [], [], [], [], []
    for d, (entry, n) in enumerate(zip(entries, shape)):
        if isinstance(entry, int):
            if n == 0:
                raise IndexError(f"index {entry} is out of bounds for axis {d} with size 0.")
            i = min(max(entry + n if entry < 0 else entry, 0), n - 1)
            entry, dropped = slice(i, i + 1), dropped + [d]
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
    return lax.squeeze(x, dropped) if dropped else x


# --8<-- [start:index_plan]
class _IndexPlan(NamedTuple):
    """``x[idx]`` as one gather (or the windows of one scatter). Each dim of ``x[idx]`` is a
    window dim (a step-1 slice: its window starts at the slice's start) or a dim of the
    index vectors' batch (an advanced index's, or a strided slice's, made an index array)."""
    indices: Any  # int32, (*batch, k): the start of each window on the indexed dims
    window_dims: tuple[int, ...]  # the dims of x[idx] that are window dims
    dropped_dims: tuple[int, ...]  # operand dims picked one element at a time
    indexed_dims: tuple[int, ...]  # the operand dim of each of the k index components
    window_sizes: tuple[int, ...]  # per operand dim
    shape: tuple[int, ...]  # of x[idx]


def _index_plan(shape: tuple[int, ...], entries: list[Any]) -> _IndexPlan:
    advanced = [d for d, e in enumerate(entries) if _is_advanced(e)]
    arrays = {d: _normalize_negative(entries[d], shape[d]) for d in advanced}
    batch = broadcast_shapes(*[get_aval(a).shape for a in arrays.values()], op_name="indexing")
    # NumPy: the advanced indices' batch dims go where they are if they are adjacent,
    # else first. ``dims``: for each dim of x[idx], ("batch", j) or (operand dim, slice).
    adjacent = advanced == list(range(advanced[0], advanced[-1] + 1)) if advanced else True
    at = advanced[0] if advanced and adjacent else 0
    dims: list[tuple[Any, Any]] = []
    for d, entry in enumerate(entries):
        if d == at:
            dims += [("batch", j) for j in range(len(batch))]
        if isinstance(entry, slice):
            dims.append((d, range(*entry.indices(shape[d]))))
    sizes = tuple(batch[x] if kind == "batch" else len(x) for kind, x in dims)
    index_dims = [i for i, (kind, r) in enumerate(dims) if kind == "batch" or r.step != 1]
    index_shape = tuple(sizes[i] for i in index_dims)
    columns, indexed, window_sizes = [], [], list(shape)
    for d in range(len(shape)):
        column = _index_column(d, arrays, dims, index_dims, index_shape, shape[d])
        if column is not None:
            columns.append(column)
            indexed.append(d)
    for kind, r in dims:
        if kind != "batch":
            window_sizes[kind] = len(r) if r.step == 1 else 1
    for d in advanced:
        window_sizes[d] = 1
    dropped = tuple(d for d in range(len(shape)) if d in advanced or any(
        kind == d and r.step != 1 for kind, r in dims))
    window = tuple(i for i in range(len(dims)) if i not in index_dims)
    return _IndexPlan(_stack(columns, index_shape), window, dropped, tuple(indexed),
                      tuple(window_sizes), sizes)
# --8<-- [end:index_plan]


def _index_column(d, arrays, dims, index_dims, index_shape, n) -> Any:
    """The index component for operand dim ``d``, broadcast to the index batch shape: its
    advanced index, its strided slice's positions, a sliced window's start, or None (a
    whole dim: the window covers it)."""
    positions = {dims[i][0]: i for i in range(len(dims))}
    if d in arrays:
        batch_axes = [index_dims.index(i) for i, (kind, _) in enumerate(dims) if kind == "batch"]
        ndim = get_aval(arrays[d]).ndim
        if get_aval(arrays[d]).shape == index_shape:
            return arrays[d]
        return lax.broadcast_in_dim(arrays[d], index_shape, batch_axes[len(batch_axes) - ndim:])
    r = dims[positions[d]][1]
    if r.step != 1:  # a strided slice: its positions, one index dim of their own
        column = Array(np.asarray(r, np.int32))
        return lax.broadcast_in_dim(column, index_shape, (index_dims.index(positions[d]),))
    if r.start == 0 and len(r) == n:
        return None
    return lax.full(index_shape, r.start, np.dtype(np.int32))


def _stack(columns: list[Any], index_shape: tuple[int, ...]) -> Any:
    """The index vectors: the columns side by side along a new last dim."""
    if not columns:
        return Array(np.zeros(index_shape + (0,), np.int32))
    nd = len(index_shape)
    columns = [lax.broadcast_in_dim(c, index_shape + (1,), tuple(range(nd))) for c in columns]
    return columns[0] if len(columns) == 1 else lax.concatenate(columns, nd)


def _normalize_negative(index: Any, n: int) -> Any:
    """Negative indices count from the end (one past that is still out of bounds)."""
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
    """The functional updates of ``x[idx]``, each returning a new array. As in JAX, an
    update at an out-of-bounds index is dropped (``mode="drop"``, the default) or moved to
    the nearest element (``mode="clip"``).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.zeros(4).at[1:3].add(1.0)
        Array([0., 1., 1., 0.], dtype=float32)
        >>> jnp.zeros(4).at[9].set(1.0)
        Array([0., 0., 0., 0.], dtype=float32)
    """

    def __init__(self, array: Any, idx: Any) -> None:
        self.array, self.idx = array, idx

    def get(self, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: Any = None, fill_value: Any = None) -> Any:
        return getitem(self.array, self.idx, mode=mode, fill_value=fill_value)

    def set(self, values: Any, *, indices_are_sorted: bool = False,
            unique_indices: bool = False, mode: Any = None) -> Any:
        return _scatter(self.array, self.idx, values, lax.scatter, mode)

    def add(self, values: Any, *, indices_are_sorted: bool = False,
            unique_indices: bool = False, mode: Any = None) -> Any:
        return _scatter(self.array, self.idx, values, lax.scatter_add, mode)

    def multiply(self, values: Any, *, indices_are_sorted: bool = False,
                 unique_indices: bool = False, mode: Any = None) -> Any:
        return _scatter(self.array, self.idx, values, lax.scatter_mul, mode)

    mul = multiply

    def divide(self, values: Any, *, indices_are_sorted: bool = False,
               unique_indices: bool = False, mode: Any = None) -> Any:
        from .ufuncs import true_divide
        x = as_value(self.array)
        divisors = _scatter(lax.full_like(x, 1), self.idx, values, lax.scatter_mul, mode)
        return true_divide(x, divisors)

    def power(self, values: Any, *, indices_are_sorted: bool = False,
              unique_indices: bool = False, mode: Any = None) -> Any:
        """``x[idx] **= values``; a repeated index multiplies its exponents, as in JAX."""
        from .ufuncs import power
        x = as_value(self.array)
        exponents = _scatter(lax.full_like(x, 1), self.idx, values, lax.scatter_mul, mode)
        return power(x, exponents)

    def apply(self, func: Any, *, indices_are_sorted: bool = False,
              unique_indices: bool = False, mode: Any = None) -> Any:
        """``func`` applied at ``x[idx]``, once per time an element is indexed (NumPy's
        ``ufunc.at``): ``func`` maps arrays elementwise."""
        x = as_value(self.array)
        aval = get_aval(x)
        entries = self.idx if isinstance(self.idx, tuple) else (self.idx,)
        static = not any(isinstance(entry, Tracer) for entry in entries)
        with dynamic_trace(trace_state.trace_stack[0] if static else trace_state.dynamic_trace):
            counts = _scatter(lax.full(aval.shape, 0, np.dtype(np.int32)), self.idx, 1,
                              lax.scatter_add, mode)  # how often each element is indexed
        if static:
            times = int(np.max(np.asarray(counts), initial=0))
        elif unique_indices:
            times = 1
        else:
            raise ConcretizationTypeError(
                "at[].apply with traced indices cannot know how often an element is indexed: "
                "pass unique_indices=True if no index repeats, or apply the function in a "
                "lax.fori_loop.")
        for time in range(times):
            x = lax.select_n(lax.gt(counts, lax.full(aval.shape, time, np.dtype(np.int32))),
                             x, convert(func(x), aval.dtype, aval.weak_type))
        return x

    def min(self, values: Any, *, indices_are_sorted: bool = False,  # noqa: A003
            unique_indices: bool = False, mode: Any = None) -> Any:
        return _scatter(self.array, self.idx, values, lax.scatter_min, mode)

    def max(self, values: Any, *, indices_are_sorted: bool = False,  # noqa: A003
            unique_indices: bool = False, mode: Any = None) -> Any:
        return _scatter(self.array, self.idx, values, lax.scatter_max, mode)


def _scatter(x: Any, idx: Any, values: Any, scatter_fn, mode: Any) -> Any:
    """One scatter whose windows are ``x[idx]``'s: a None in ``idx`` is a size-1 dim of
    ``x`` for the update's sake, squeezed away after."""
    x = as_value(x)
    aval = get_aval(x)
    entries = _expand_index(idx, aval.ndim)
    expanded, entries = _insert_new_axes(x, entries)
    entries = [_as_index_array(e) for e in entries]
    plan = _index_plan(get_aval(expanded).shape, entries)
    values = as_value(values)
    _warn_if_lossy(get_aval(values), aval)
    values = convert(values, aval.dtype, aval.weak_type)
    values_shape = get_aval(values).shape
    if broadcast_shapes(values_shape, plan.shape, op_name="at[]") != plan.shape:
        raise ValueError(f"at[].set/add/...: values of shape {values_shape} cannot be "
                         f"broadcast to the indexed shape {plan.shape}.")
    if 0 in plan.shape:  # nothing to write
        return x
    numbers = lax.ScatterDimensionNumbers(plan.window_dims, plan.dropped_dims,
                                          plan.indexed_dims)
    out = scatter_fn(expanded, plan.indices, broadcast_to_shape(values, plan.shape), numbers,
                     mode=mode)
    return out if get_aval(out).shape == aval.shape else lax.reshape(out, aval.shape)
# --8<-- [end:at]


def _warn_if_lossy(values: Any, array: Any) -> None:
    """JAX's FutureWarning when the updates do not promote to the array's dtype (a float
    into an integer array, float32 into float16): they are converted, rounding quietly."""
    promoted, _ = dtypes.promote_types((values.dtype, values.weak_type),
                                       (array.dtype, array.weak_type))
    if promoted != array.dtype:
        warnings.warn(f"at[]: scatter inputs have incompatible types: values of dtype "
                      f"{values.dtype} do not convert to the array's dtype {array.dtype} "
                      f"without loss, so they are rounded. JAX will make this an error; "
                      f"convert them first, with .astype({array.dtype}).", FutureWarning,
                      stacklevel=dtypes.caller_stacklevel())


def take(a, indices, axis: int | None = None, out: None = None, mode: str | None = None,
         unique_indices: bool = False, indices_are_sorted: bool = False,
         fill_value: Any = None):
    """Elements of ``a`` at ``indices`` along ``axis`` (of the flattened ``a`` if None).
    Out-of-bounds indices give ``fill_value`` (by default NaN, or the most negative int) as
    JAX's default ``mode="fill"`` does; ``"clip"`` clamps (a negative index to 0),
    ``"wrap"`` wraps around.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.take(jnp.array([10.0, 20.0, 30.0]), jnp.array([2, 0, 5]))
        Array([30., 10., nan], dtype=float32)
    """
    from .shapes import ravel
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.take is not supported.")
    if mode == "raise":
        raise NotImplementedError("The 'raise' mode to jnp.take is not supported: indices "
                                  "are not checked at run time; use mode='fill' or 'clip'.")
    if mode not in (None, "fill", "clip", "wrap", "promise_in_bounds", "drop"):
        raise ValueError(f"Invalid mode {mode!r} for np.take: expected 'fill', 'clip', "
                         f"'wrap' or 'promise_in_bounds'.")
    a, indices = as_value(a), as_value(indices)
    if axis is None:
        a, axis = ravel(a), 0
    ndim = get_aval(a).ndim
    if not -max(ndim, 1) <= axis < max(ndim, 1):
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}: "
                         f"jnp.take picks along one of the array's axes.")
    axis = axis % ndim if ndim else 0
    if mode == "wrap":
        from .ufuncs import remainder
        indices, mode = remainder(indices, get_aval(a).shape[axis]), "promise_in_bounds"
    elif mode == "clip":  # as JAX's take: a negative index clips to 0, it does not wrap once
        from .ufuncs import maximum
        indices = maximum(indices, 0)
    return getitem(a, (slice(None),) * axis + (indices,), mode=mode or "fill",
                   fill_value=fill_value)


def take_along_axis(arr, indices, axis: int | None, mode: str | None = None,
                    fill_value: Any = None):
    """``arr`` picked along ``axis`` at ``indices``, which has the same number of dims.
    Out-of-bounds indices give ``fill_value``, as JAX's default ``mode="fill"``.

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
    grid = lax.index_grid(tuple(shape), axis, indices)
    return lax.point_gather(arr, grid, lax.GatherScatterMode.from_any(mode), fill_value)
