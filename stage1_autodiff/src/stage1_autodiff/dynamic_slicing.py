"""Dynamic slicing: ``dynamic_slice`` reads a window of static shape whose start indices are
values (traced scalars under ``jit``); ``dynamic_update_slice`` writes one into a copy of the
operand. As in XLA, a start is clamped so that the window fits: along a dim of size ``n``, a
window of size ``m`` starts at ``min(max(start, 0), n - m)``. The ``lax`` wrappers first count
a negative start from the end, as Python indexing does.

The two are each other's derivatives: the cotangent of a slice is written into zeros by an
update slice; the cotangent of an update slice is, for the operand, the cotangent with the
window zeroed, and for the update, the window of the cotangent.

Each is a gather (scatter) with one index vector and ``mode="clip"``, which is how a kernel
computes them (``dynamic_slice_by_gather``, ``dynamic_update_slice_by_scatter``): so the
stage-2 backends need no rule of their own, and an update into a donated or dead operand is
written in place, as a scatter's is.

NB: JAX's are ``dynamic_slice_p`` and ``dynamic_update_slice_p`` in
``jax/_src/lax/slicing.py``, lowered to StableHLO's ``dynamic_slice`` and
``dynamic_update_slice``.

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> x = jnp.arange(12).reshape(3, 4)
    >>> dynamic_slice(x, (1, 1), (2, 4))  # the start 1 of dim 1 is clamped to 0
    Array([[ 4,  5,  6,  7],
           [ 8,  9, 10, 11]], dtype=int32)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import dtypes
from .core import (
    Array,
    Primitive,
    Tracer,
    asarray,
    get_aval,
    impl_rules,
    jvp_rules,
    vjp_rules,
)
from .primitives import (
    Shape,
    add,
    broadcast_in_dim,
    concatenate,
    convert_element_type,
    full,
    lt,
    select_n,
    squeeze,
    zeros_like,
)
from .slicing import (
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
    gather,
    scatter,
)

__all__ = [
    "dynamic_index_in_dim", "dynamic_slice", "dynamic_slice_by_gather", "dynamic_slice_in_dim",
    "dynamic_slice_p", "dynamic_update_index_in_dim", "dynamic_update_slice",
    "dynamic_update_slice_by_scatter", "dynamic_update_slice_in_dim", "dynamic_update_slice_p",
]


def _check_starts(name: str, starts: Sequence[Any]) -> None:
    """JAX's type rules, checked here too so that eager calls fail as traced ones do."""
    avals = [get_aval(s) for s in starts]
    if any(a.ndim != 0 for a in avals):
        raise TypeError(f"start_indices arguments to {name} must be scalars, got indices "
                        f"{[a.str_short() for a in avals]}")
    if any(a.dtype.kind not in "iu" or a.dtype != avals[0].dtype for a in avals):
        raise TypeError(f"index arguments to {name} must be integers of the same type, got: "
                        f"{', '.join(a.dtype.name for a in avals)}")


def _start(i: Any, n: int, allow_negative: bool) -> Any:
    """One start index as a scalar array, a negative one counted from the end."""
    if isinstance(i, (int, np.integer)) and not isinstance(i, bool):
        if i < 0 and not allow_negative:
            raise ValueError(f"Index {i} is out of bounds for dimension {n} if "
                             f"allow_negative_indices=False")
        dtype = i.dtype if isinstance(i, np.integer) else dtypes.default_int_dtype()
        return asarray(np.asarray(i + n if i < 0 else i, dtype))
    if not isinstance(i, (Array, Tracer)):
        i = asarray(i)
    aval = get_aval(i)
    if not allow_negative or aval.dtype.kind != "i" or aval.ndim:
        return i
    return select_n(lt(i, zeros_like(i)), i, add(i, full((), n, aval.dtype)))


def _starts(name: str, operand: Any, start_indices: Any, allow_negative: Any) -> list[Any]:
    shape = get_aval(operand).shape
    if len(start_indices) != len(shape):
        raise ValueError(f"Length of slice indices must match number of operand dimensions "
                         f"({len(start_indices)} vs {shape})")
    if isinstance(start_indices, (Array, Tracer)):
        if get_aval(start_indices).ndim != 1:
            raise ValueError(f"Slice indices must be a 1D sequence, got "
                             f"{get_aval(start_indices).shape}")
        start_indices = [start_indices[k] for k in range(len(shape))]
    flags = ([allow_negative] * len(shape) if isinstance(allow_negative, bool)
             else list(allow_negative))
    starts = [_start(i, n, a) for i, n, a in zip(start_indices, shape, flags)]
    _check_starts(name, starts)
    return starts


def _window(x: np.ndarray, starts: Sequence[Any], sizes: Shape) -> tuple:
    """The clamped window, as a NumPy index."""
    return tuple(np.s_[a:a + m] for a, m in (
        (int(np.clip(np.int64(s), 0, n - m)), m) for s, n, m in zip(starts, x.shape, sizes)))


# --8<-- [start:dynamic_slice]
dynamic_slice_p = Primitive("dynamic_slice")
def dynamic_slice(operand: Any, start_indices: Any, slice_sizes: Shape, *,
                  allow_negative_indices: bool | Sequence[bool] = True) -> Any:
    """``lax.dynamic_slice``: the window of shape ``slice_sizes`` at ``start_indices`` (one
    scalar per dim, clamped so the window fits; see the module docstring)."""
    starts = _starts("dynamic_slice", operand, start_indices, allow_negative_indices)
    sizes = tuple(int(s) for s in slice_sizes)
    shape = get_aval(operand).shape
    if len(sizes) != len(shape) or any(not 0 <= m <= n for m, n in zip(sizes, shape)):
        raise TypeError(f"slice slice_sizes must be between zero and the operand shape, got "
                        f"slice_sizes {sizes} for operand shape {shape}.")
    return dynamic_slice_p.bind(operand, *starts, slice_sizes=sizes)
def dynamic_slice_impl(x, *starts, slice_sizes):
    return np.array(x[_window(x, starts, slice_sizes)])
impl_rules[dynamic_slice_p] = dynamic_slice_impl
def dynamic_slice_vjp(ct, x, *starts, out, slice_sizes):
    return [dynamic_update_slice_p.bind(zeros_like(x), ct, *starts)] + [None] * len(starts)
vjp_rules[dynamic_slice_p] = dynamic_slice_vjp
def dynamic_slice_jvp(primals, tangents, *, slice_sizes):
    x, *starts = primals
    return (dynamic_slice_p.bind(x, *starts, slice_sizes=slice_sizes),
            dynamic_slice_p.bind(tangents[0], *starts, slice_sizes=slice_sizes))
jvp_rules[dynamic_slice_p] = dynamic_slice_jvp
# --8<-- [end:dynamic_slice]


# --8<-- [start:dynamic_update_slice]
dynamic_update_slice_p = Primitive("dynamic_update_slice")
def dynamic_update_slice(operand: Any, update: Any, start_indices: Any, *,
                         allow_negative_indices: bool | Sequence[bool] = True) -> Any:
    """``lax.dynamic_update_slice``: ``operand`` with ``update`` written at ``start_indices``
    (clamped so that it fits)."""
    starts = _starts("dynamic_update_slice", operand, start_indices, allow_negative_indices)
    x, u = get_aval(operand), get_aval(update)
    if x.dtype != u.dtype:
        raise TypeError(f"lax.dynamic_update_slice requires arguments to have the same "
                        f"dtypes, got {x.dtype.name}, {u.dtype.name}.")
    if u.ndim != x.ndim or any(m > n for m, n in zip(u.shape, x.shape)):
        raise TypeError(f"dynamic_update_slice update shape must be smaller than operand "
                        f"shape and of its rank, got update shape {u.shape} for operand "
                        f"shape {x.shape}.")
    return dynamic_update_slice_p.bind(operand, update, *starts)
def dynamic_update_slice_impl(x, update, *starts):
    out = x.copy()
    out[_window(x, starts, update.shape)] = update
    return out
impl_rules[dynamic_update_slice_p] = dynamic_update_slice_impl
def dynamic_update_slice_vjp(ct, x, update, *starts, out):
    ct_x = dynamic_update_slice_p.bind(ct, zeros_like(update), *starts)
    ct_update = dynamic_slice_p.bind(ct, *starts, slice_sizes=get_aval(update).shape)
    return [ct_x, ct_update] + [None] * len(starts)
vjp_rules[dynamic_update_slice_p] = dynamic_update_slice_vjp
def dynamic_update_slice_jvp(primals, tangents):
    x, update, *starts = primals
    return (dynamic_update_slice_p.bind(x, update, *starts),
            dynamic_update_slice_p.bind(tangents[0], tangents[1], *starts))
jvp_rules[dynamic_update_slice_p] = dynamic_update_slice_jvp
# --8<-- [end:dynamic_update_slice]


# --8<-- [start:by_gather]
def _index_vector(starts: Sequence[Any]) -> Any:
    """The starts as one int32 index vector, for a gather or scatter."""
    return concatenate([broadcast_in_dim(convert_element_type(s, np.int32), (1,), ())
                        for s in starts], 0)


def dynamic_slice_by_gather(x: Any, *starts: Any, slice_sizes: Shape) -> Any:
    """A dynamic slice as a gather of one clipped window, for the kernels."""
    if not starts:
        return x
    dims = tuple(range(len(starts)))
    return gather(x, _index_vector(starts), GatherDimensionNumbers(dims, (), dims),
                  slice_sizes, mode=GatherScatterMode.CLIP)


def dynamic_update_slice_by_scatter(x: Any, update: Any, *starts: Any) -> Any:
    """A dynamic update slice as a scatter of one clipped window, for the kernels."""
    if not starts:
        return update
    dims = tuple(range(len(starts)))
    return scatter(x, _index_vector(starts), update, ScatterDimensionNumbers(dims, (), dims),
                   mode=GatherScatterMode.CLIP)
# --8<-- [end:by_gather]


def _in_dim(operand: Any, start: Any, axis: int) -> tuple[list[Any], int]:
    """Starts that are ``start`` along ``axis`` and zeros (of its type) elsewhere."""
    ndim = get_aval(operand).ndim
    axis = int(axis) % ndim if -ndim <= int(axis) < ndim else int(axis)
    if isinstance(start, (Array, Tracer)):
        zero = zeros_like(start)
    elif isinstance(start, (np.integer, np.ndarray)):  # (a NumPy int32 under x64)
        zero = np.zeros((), np.asarray(start).dtype)[()]
    else:
        zero = 0
    return [start if d == axis else zero for d in range(ndim)], axis


def dynamic_slice_in_dim(operand: Any, start_index: Any, slice_size: int, axis: int = 0, *,
                         allow_negative_indices: bool = True) -> Any:
    """``lax.dynamic_slice_in_dim``: ``slice_size`` entries from ``start_index`` along
    ``axis``, everything along the other dims."""
    starts, axis = _in_dim(operand, start_index, axis)
    sizes = list(get_aval(operand).shape)
    sizes[axis] = slice_size
    return dynamic_slice(operand, starts, sizes, allow_negative_indices=allow_negative_indices)


def dynamic_index_in_dim(operand: Any, index: Any, axis: int = 0, keepdims: bool = True, *,
                         allow_negative_indices: bool = True) -> Any:
    """``lax.dynamic_index_in_dim``: entry ``index`` along ``axis`` (that dim dropped unless
    ``keepdims``)."""
    out = dynamic_slice_in_dim(operand, index, 1, axis,
                               allow_negative_indices=allow_negative_indices)
    return out if keepdims else squeeze(out, (_in_dim(operand, index, axis)[1],))


def dynamic_update_slice_in_dim(operand: Any, update: Any, start_index: Any, axis: int, *,
                                allow_negative_indices: bool = True) -> Any:
    """``lax.dynamic_update_slice_in_dim``: ``update`` written from ``start_index`` along
    ``axis``."""
    starts, _ = _in_dim(operand, start_index, axis)
    return dynamic_update_slice(operand, update, starts,
                                allow_negative_indices=allow_negative_indices)


def dynamic_update_index_in_dim(operand: Any, update: Any, index: Any, axis: int, *,
                                allow_negative_indices: bool = True) -> Any:
    """``lax.dynamic_update_index_in_dim``: ``update`` (with or without the dim ``axis``)
    written at entry ``index`` along ``axis``."""
    starts, axis = _in_dim(operand, index, axis)
    if get_aval(update).ndim == get_aval(operand).ndim - 1:
        shape = list(get_aval(update).shape)
        shape.insert(axis, 1)
        kept = [d for d in range(len(shape)) if d != axis]
        update = broadcast_in_dim(update, tuple(shape), kept)
    return dynamic_update_slice(operand, update, starts,
                                allow_negative_indices=allow_negative_indices)
