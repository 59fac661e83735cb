"""Gather, scatter, sort and tile: the primitives that move elements to or from computed
positions.

Gather and scatter take XLA's dimension numbers, as JAX's do (jax/_src/lax/slicing.py). The
last dim of ``indices`` holds index vectors; the other dims are its *batch* dims. For each
index vector a gather reads one *window* of the operand:

- the window starts at the index vector, placed on the operand dims ``start_index_map``
  (0 on the others), and has the shape ``slice_sizes``;
- the result's ``offset_dims`` are the window's dims, in the operand's order, without the
  ``collapsed_slice_dims`` (size-1 dims dropped); its other dims are the indices' batch dims,
  in order;
- ``operand_batching_dims`` pair operand dims with indices batch dims
  (``start_indices_batching_dims``): example ``b`` of the indices reads example ``b`` of the
  operand (what ``vmap`` of a gather needs).

A scatter is the converse: each window of ``updates`` (its ``update_window_dims``; the other
dims of ``updates`` are the indices' batch dims) is combined into the operand at its index
vector, the operand dims ``inserted_window_dims`` being size-1 dims the window lacks.

``mode`` says what an index vector whose window does not fit in the operand does:
``CLIP`` moves the window back inside; ``FILL_OR_DROP`` gives ``fill_value`` for a gather
and drops the update for a scatter; ``PROMISE_IN_BOUNDS`` is the caller's promise that every
window fits (a gather then clips, a scatter drops, as XLA does on CPU).
"""

from __future__ import annotations

import enum
import math
from typing import Any, NamedTuple

import numpy as np

from . import dtypes
from .core import SHAPE, Primitive, get_aval, impl_rules, jvp_rules, vjp_rules
from .primitives import (
    Shape,
    _linear_jvp,
    add,
    broadcast_in_dim,
    concatenate,
    convert_element_type,
    defjvp,
    div,
    eq,
    full,
    full_like,
    iota,
    max,
    mul,
    reduce_sum,
    reshape,
    select_n,
    with_sharding_of,
    zeros_like,
)

# primitives.py names these too: it stays the one table of stage 1's primitives.
__all__ = [
    "GatherDimensionNumbers", "GatherScatterMode", "SCATTERS", "ScatterDimensionNumbers", "gather",
    "gather_p", "index_grid", "point_dimension_numbers", "point_gather", "scatter",
    "scatter_add", "scatter_add_p", "scatter_max", "scatter_max_p", "scatter_min",
    "scatter_min_p", "scatter_mul", "scatter_mul_p", "scatter_p", "sort", "sort_p", "tile",
    "tile_by_copies", "tile_p",
]


class GatherDimensionNumbers(NamedTuple):
    """Which dims of a gather's result are window dims, which operand dims are dropped or
    indexed (see the module docstring). The index vectors are the last dim of ``indices``."""
    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
    """Which dims of a scatter's updates are window dims, which operand dims the window lacks
    or the index vectors index (see the module docstring)."""
    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()


class GatherScatterMode(enum.Enum):
    """What an out-of-bounds index does (see the module docstring)."""
    CLIP = "clip"
    FILL_OR_DROP = "fill"
    PROMISE_IN_BOUNDS = "promise_in_bounds"

    @staticmethod
    def from_any(mode: str | GatherScatterMode | None) -> GatherScatterMode:
        """A mode from JAX's spellings: None, "fill" and "drop" are ``FILL_OR_DROP``."""
        if isinstance(mode, GatherScatterMode):
            return mode
        names = {None: "fill", "drop": "fill", "fill": "fill", "clip": "clip",
                 "promise_in_bounds": "promise_in_bounds"}
        if mode not in names:
            raise ValueError(f"Unknown gather/scatter mode {mode!r}: expected one of 'clip', "
                             f"'fill', 'drop' or 'promise_in_bounds' (or None).")
        return GatherScatterMode(names[mode])

    def __repr__(self) -> str:  # as JAX prints it in a jaxpr
        return f"GatherScatterMode.{self.name}"


def default_fill_value(dtype: np.dtype) -> Any:
    """A gather's fill for out-of-bounds windows when none is given, as JAX's: NaN for
    floats (and NaN + 0j for complex numbers), the most negative value for signed ints, the
    largest for unsigned, True."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return True
    if dtypes.is_inexact(dtype):
        return np.nan
    return np.iinfo(dtype).min if dtype.kind == "i" else np.iinfo(dtype).max


def window_operand_dims(ndim: int, dropped: tuple[int, ...], batching: tuple[int, ...]):
    """The operand dims a window keeps, in order: the ones neither dropped nor batching."""
    return [d for d in range(ndim) if d not in dropped and d not in batching]


def gather_shape(operand_shape: Shape, indices_shape: Shape,
                 dimension_numbers: GatherDimensionNumbers, slice_sizes: Shape) -> Shape:
    dn = dimension_numbers
    window = window_operand_dims(len(operand_shape), dn.collapsed_slice_dims,
                                 dn.operand_batching_dims)
    batch = iter(indices_shape[:-1])
    offsets = dict(zip(dn.offset_dims, (slice_sizes[d] for d in window)))
    rank = len(indices_shape) - 1 + len(dn.offset_dims)
    return tuple(offsets[d] if d in offsets else next(batch) for d in range(rank))


# --8<-- [start:operand_position]
def _operand_position(operand_shape, starts, batch, window, *, indexed, dropped, batching,
                      indices_batching, sizes, clip):
    """For every element of a gather's result (a scatter's updates), given as open grids
    ``batch`` (one per indices batch dim) and ``window`` (one per window dim), the operand
    position it reads (writes), and whether its window fits in the operand."""
    position, fits, window = [], np.bool_(True), iter(window)
    for d, n in enumerate(operand_shape):
        if d in batching:  # example b reads example b
            position.append(batch[indices_batching[batching.index(d)]])
            continue
        start = starts[..., indexed.index(d)].astype(np.int64) if d in indexed else 0
        fits = fits & (0 <= start) & (start <= n - sizes[d])
        if clip:
            start = np.clip(start, 0, n - sizes[d])
        position.append(start if d in dropped else start + next(window))
    return position, fits
# --8<-- [end:operand_position]


# --8<-- [start:gather]
gather_p = Primitive("gather")
def gather(operand, indices, dimension_numbers: GatherDimensionNumbers, slice_sizes: Shape, *,
           mode: str | GatherScatterMode | None = None, fill_value: Any = None,
           unique_indices: bool = False, indices_are_sorted: bool = False):
    """``lax.gather`` (see the module docstring). The two hints are accepted and unused.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> from stage1_autodiff import lax
        >>> rows = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
        ...                                   start_index_map=(0,))
        >>> x = jnp.arange(6.0).reshape(3, 2)
        >>> lax.gather(x, jnp.array([[2], [0], [7]]), rows, (1, 2), mode="fill")
        Array([[ 4.,  5.],
               [ 0.,  1.],
               [nan, nan]], dtype=float32)
    """
    del unique_indices, indices_are_sorted
    mode = GatherScatterMode.from_any(mode)
    if mode is GatherScatterMode.FILL_OR_DROP and fill_value is None:
        fill_value = default_fill_value(get_aval(operand).dtype)
    return gather_p.bind(operand, indices, dimension_numbers=dimension_numbers,
                         slice_sizes=tuple(slice_sizes), mode=mode,
                         fill_value=None if mode is not GatherScatterMode.FILL_OR_DROP
                         else fill_value)
def gather_impl(operand, indices, *, dimension_numbers, slice_sizes, mode, fill_value):
    dn = dimension_numbers
    shape = gather_shape(operand.shape, indices.shape, dn, slice_sizes)
    grid = np.indices(shape, sparse=True) if shape else []
    batch = [grid[d] for d in range(len(shape)) if d not in dn.offset_dims]
    position, fits = _operand_position(
        operand.shape, indices[tuple(batch)], batch, [grid[d] for d in dn.offset_dims],
        indexed=dn.start_index_map, dropped=dn.collapsed_slice_dims,
        batching=dn.operand_batching_dims, indices_batching=dn.start_indices_batching_dims,
        sizes=slice_sizes, clip=True)
    out = np.broadcast_to(operand[tuple(position)], shape)
    if mode is GatherScatterMode.FILL_OR_DROP:
        out = np.where(fits, out, np.asarray(fill_value).astype(operand.dtype))
    return np.array(out, dtype=operand.dtype)
impl_rules[gather_p] = gather_impl
def gather_vjp(ct, operand, indices, *, out, dimension_numbers, slice_sizes, mode,
               fill_value):
    return [scatter_add(zeros_like(operand), indices, ct, _scatter_of(dimension_numbers),
                        mode=mode), None]
vjp_rules[gather_p] = gather_vjp
def gather_jvp(primals, tangents, **params):
    (operand, indices), (operand_dot, _) = primals, tangents
    tangent_params = {**params, "fill_value": None if params["fill_value"] is None else 0}
    return gather_p.bind(operand, indices, **params), gather_p.bind(operand_dot, indices,
                                                                    **tangent_params)
jvp_rules[gather_p] = gather_jvp
# --8<-- [end:gather]


def _scatter_of(dn: GatherDimensionNumbers) -> ScatterDimensionNumbers:
    """The scatter that puts a gather's windows back where they came from."""
    return ScatterDimensionNumbers(dn.offset_dims, dn.collapsed_slice_dims, dn.start_index_map,
                                   dn.operand_batching_dims, dn.start_indices_batching_dims)


def _gather_of(x, indices, updates, dn: ScatterDimensionNumbers, mode):
    """``x`` read at the windows a scatter with ``indices`` writes: a scatter's transpose,
    a gather with the scatter's mode, as JAX's transpose is. An update that ``FILL_OR_DROP``
    drops reads 0; under ``PROMISE_IN_BOUNDS`` an index past the end reads the clamped window,
    as the gather does (the scatter itself drops that update: the promise was broken)."""
    x_shape, u_shape = get_aval(x).shape, get_aval(updates).shape
    window = window_operand_dims(len(x_shape), dn.inserted_window_dims, dn.operand_batching_dims)
    sizes = [1] * len(x_shape)
    for d, u in zip(window, dn.update_window_dims):
        sizes[d] = u_shape[u]
    gather_dn = GatherDimensionNumbers(dn.update_window_dims, dn.inserted_window_dims,
                                       dn.scatter_dims_to_operand_dims, dn.operand_batching_dims,
                                       dn.scatter_indices_batching_dims)
    fill = mode is GatherScatterMode.FILL_OR_DROP
    return gather(x, indices, gather_dn, tuple(sizes), mode=mode, fill_value=0 if fill else None)


def _scatter_impl(combine):
    def impl(operand, indices, updates, *, dimension_numbers, mode):
        dn = dimension_numbers
        grid = np.indices(updates.shape, sparse=True) if updates.ndim else []
        batch = [grid[d] for d in range(updates.ndim) if d not in dn.update_window_dims]
        sizes = [1] * operand.ndim
        window = window_operand_dims(operand.ndim, dn.inserted_window_dims,
                                     dn.operand_batching_dims)
        for d, u in zip(window, dn.update_window_dims):
            sizes[d] = updates.shape[u]
        position, fits = _operand_position(
            operand.shape, indices[tuple(batch)], batch,
            [grid[d] for d in dn.update_window_dims], indexed=dn.scatter_dims_to_operand_dims,
            dropped=dn.inserted_window_dims, batching=dn.operand_batching_dims,
            indices_batching=dn.scatter_indices_batching_dims, sizes=sizes,
            clip=mode is GatherScatterMode.CLIP)
        if mode is GatherScatterMode.CLIP:
            fits = np.bool_(True)  # clipped into range: every update lands
        keep = np.broadcast_to(fits, updates.shape)  # dropped updates: windows that don't fit
        position = tuple(np.broadcast_to(i, updates.shape)[keep] for i in position)
        out = operand.copy()
        if combine is None:
            out[position] = updates[keep]
        else:
            combine.at(out, position, updates[keep])
        return out
    return impl


def _scatter_bind(prim, operand, indices, updates, dimension_numbers, mode):
    return prim.bind(operand, indices, updates, dimension_numbers=dimension_numbers,
                     mode=GatherScatterMode.from_any(mode))


# --8<-- [start:scatter_add]
scatter_add_p = Primitive("scatter_add")
def scatter_add(operand, indices, updates, dimension_numbers: ScatterDimensionNumbers, *,
                mode=None, indices_are_sorted: bool = False, unique_indices: bool = False):
    """``lax.scatter_add``: ``updates`` added into ``operand`` (repeated indices add up).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> from stage1_autodiff import lax
        >>> points = lax.ScatterDimensionNumbers(update_window_dims=(),
        ...                                      inserted_window_dims=(0,),
        ...                                      scatter_dims_to_operand_dims=(0,))
        >>> lax.scatter_add(jnp.zeros(3), jnp.array([[1], [1], [5]]), jnp.ones(3), points)
        Array([0., 2., 0.], dtype=float32)
    """
    return _scatter_bind(scatter_add_p, operand, indices, updates, dimension_numbers, mode)
impl_rules[scatter_add_p] = _scatter_impl(np.add)
def scatter_add_vjp(ct, operand, indices, updates, *, out, dimension_numbers, mode):
    return [ct, None, _gather_of(ct, indices, updates, dimension_numbers, mode)]
vjp_rules[scatter_add_p] = scatter_add_vjp
def scatter_add_jvp(primals, tangents, **params):
    (operand, indices, updates), (operand_dot, _, updates_dot) = primals, tangents
    return (scatter_add_p.bind(operand, indices, updates, **params),
            scatter_add_p.bind(operand_dot, indices, updates_dot, **params))
jvp_rules[scatter_add_p] = scatter_add_jvp
# --8<-- [end:scatter_add]

scatter_p = Primitive("scatter")
def scatter(operand, indices, updates, dimension_numbers: ScatterDimensionNumbers, *,
            mode=None, indices_are_sorted: bool = False, unique_indices: bool = False):
    """``lax.scatter``: ``updates`` written into ``operand`` (of repeated indices, the last
    update wins)."""
    return _scatter_bind(scatter_p, operand, indices, updates, dimension_numbers, mode)
impl_rules[scatter_p] = _scatter_impl(None)
def scatter_vjp(ct, operand, indices, updates, *, out, dimension_numbers, mode):
    dn = dimension_numbers
    ct_updates = select_n(_won_its_place(operand, indices, updates, dn, mode),
                          zeros_like(updates), _gather_of(ct, indices, updates, dn, mode))
    return [scatter_p.bind(ct, indices, zeros_like(updates), dimension_numbers=dn, mode=mode),
            None, ct_updates]
vjp_rules[scatter_p] = scatter_vjp


def _won_its_place(operand, indices, updates, dn: ScatterDimensionNumbers, mode):
    """Which elements of ``updates`` a scatter writes: of several updates to one place only
    one is written (the last), and only it has a derivative, as in JAX. Each update's own
    number (from 1) is scattered the same way; an update whose number comes back won."""
    shape = get_aval(updates).shape
    numbers = reshape(iota(np.dtype(np.int32), (math.prod(shape),)), shape)
    numbers = add(numbers, full_like(numbers, 1))  # 0: no update (a dropped one reads 0)
    placed = scatter_p.bind(full(get_aval(operand).shape, 0, np.dtype(np.int32)), indices,
                            numbers, dimension_numbers=dn, mode=mode)
    return eq(_gather_of(placed, indices, updates, dn, mode), numbers)
def scatter_jvp(primals, tangents, **params):
    (operand, indices, updates), (operand_dot, _, updates_dot) = primals, tangents
    return (scatter_p.bind(operand, indices, updates, **params),
            scatter_p.bind(operand_dot, indices, updates_dot, **params))
jvp_rules[scatter_p] = scatter_jvp

scatter_mul_p = Primitive("scatter_mul")
def scatter_mul(operand, indices, updates, dimension_numbers: ScatterDimensionNumbers, *,
                mode=None, indices_are_sorted: bool = False, unique_indices: bool = False):
    """``lax.scatter_mul``: ``operand`` multiplied by ``updates`` where they land."""
    return _scatter_bind(scatter_mul_p, operand, indices, updates, dimension_numbers, mode)
impl_rules[scatter_mul_p] = _scatter_impl(np.multiply)


def _product_of_the_others(operand, indices, updates, params):
    """For each update, the product of the *other* updates landing where it lands (times
    the operand's element): the derivative of the result there by that update. Exact with
    repeated indices and zeros (NB: JAX refuses the derivative unless unique_indices).

    An update alone at its place gets the operand's element itself, not the product divided
    by the update, which is a NaN for an infinite update and overflows for a huge one."""
    dn, mode = params["dimension_numbers"], params["mode"]
    dtype = get_aval(operand).dtype
    zero = eq(updates, zeros_like(updates))
    nonzero = _select(zero, updates, full_like(updates, 1))
    nonzero_product = scatter_mul_p.bind(operand, indices, nonzero, **params)
    zeros_there, updates_there = (
        scatter_add_p.bind(zeros_like(operand), indices, convert_element_type(v, dtype),
                           **params) for v in (zero, full_like(updates, 1)))
    product, count, landed, own = (_gather_of(v, indices, updates, dn, mode) for v in
                                   (nonzero_product, zeros_there, updates_there, operand))
    # no zero among the others: the product over this one; one zero, this one: the rest
    alone = _select(eq(count, zeros_like(count)), zeros_like(count), div(product, nonzero))
    others = _select(zero, alone, _select(eq(count, full_like(count, 1)), zeros_like(count),
                                          product))
    return _select(eq(landed, full_like(landed, 1)), others, own)


def _select(which, case0, case1):
    """``select_n`` of values that gathers and scatters may have laid out differently (stage
    4): the predicate and ``case0`` are laid out as ``case1`` first."""
    return select_n(with_sharding_of(which, case1), with_sharding_of(case0, case1), case1)


def scatter_mul_vjp(ct, operand, indices, updates, *, out, **params):
    others = _product_of_the_others(operand, indices, updates, params)
    ct_updates = mul(_gather_of(ct, indices, updates, params["dimension_numbers"],
                                params["mode"]), others)
    return [scatter_mul_p.bind(ct, indices, updates, **params), None, ct_updates]
vjp_rules[scatter_mul_p] = scatter_mul_vjp
def _scatter_mul_jvp_updates(updates_dot, operand, indices, updates, *, out, **params):
    others = _product_of_the_others(operand, indices, updates, params)
    return scatter_add_p.bind(zeros_like(operand), indices, mul(others, updates_dot), **params)
jvp_rules[scatter_mul_p] = defjvp(
    scatter_mul_p, lambda operand_dot, operand, indices, updates, *, out, **params:
    scatter_mul_p.bind(operand_dot, indices, updates, **params), None, _scatter_mul_jvp_updates)


def _scatter_chooser_vjp(ct, operand, indices, updates, *, out, dimension_numbers, mode):
    """For scatter_min/max: the cotangent goes to whichever sides ended up in ``out``, split
    evenly among ties (the operand's element and each update equal to the result), as
    JAX's rule splits it."""
    dtype = get_aval(ct).dtype
    operand_won = convert_element_type(eq(out, operand), dtype)
    landed = _gather_of(out, indices, updates, dimension_numbers, mode)
    update_won = convert_element_type(eq(landed, updates), dtype)
    winners = add(operand_won, scatter_add_p.bind(zeros_like(operand), indices, update_won,
                                                  dimension_numbers=dimension_numbers,
                                                  mode=mode))
    share = div(ct, max(winners, full_like(winners, 1)))  # a NaN result: no winner
    return [mul(share, operand_won), None,
            mul(_gather_of(share, indices, updates, dimension_numbers, mode), update_won)]


def _scatter_chooser_jvp(prim):
    def jvp(primals, tangents, **params):
        operand, indices, updates = primals
        out = prim.bind(operand, indices, updates, **params)
        ct_operand, _, ct_updates = _scatter_chooser_vjp(
            full_like(out, 1), operand, indices, updates, out=out, **params)
        from_updates = scatter_add_p.bind(zeros_like(operand), indices,
                                          mul(ct_updates, tangents[2]), **params)
        return out, add(mul(ct_operand, tangents[0]), from_updates)
    return jvp


scatter_min_p = Primitive("scatter_min")
def scatter_min(operand, indices, updates, dimension_numbers: ScatterDimensionNumbers, *,
                mode=None, indices_are_sorted: bool = False, unique_indices: bool = False):
    """``lax.scatter_min``: the smaller of ``operand`` and ``updates`` where they land."""
    return _scatter_bind(scatter_min_p, operand, indices, updates, dimension_numbers, mode)
impl_rules[scatter_min_p] = _scatter_impl(np.minimum)
vjp_rules[scatter_min_p] = _scatter_chooser_vjp
jvp_rules[scatter_min_p] = _scatter_chooser_jvp(scatter_min_p)

scatter_max_p = Primitive("scatter_max")
def scatter_max(operand, indices, updates, dimension_numbers: ScatterDimensionNumbers, *,
                mode=None, indices_are_sorted: bool = False, unique_indices: bool = False):
    """``lax.scatter_max``: the larger of ``operand`` and ``updates`` where they land."""
    return _scatter_bind(scatter_max_p, operand, indices, updates, dimension_numbers, mode)
impl_rules[scatter_max_p] = _scatter_impl(np.maximum)
vjp_rules[scatter_max_p] = _scatter_chooser_vjp
jvp_rules[scatter_max_p] = _scatter_chooser_jvp(scatter_max_p)

# The scatters, one tuple for the later stages' tables (they share a rule, a spelling each).
SCATTERS = (scatter_p, scatter_add_p, scatter_mul_p, scatter_min_p, scatter_max_p)


def point_dimension_numbers(ndim: int) -> ScatterDimensionNumbers:
    """Index vectors that name one element each of an ``ndim``-dim operand: every dim
    indexed, no window (``point_gather`` reads the same way)."""
    dims = tuple(range(ndim))
    return ScatterDimensionNumbers((), dims, dims)


def point_gather(operand, indices, mode=GatherScatterMode.PROMISE_IN_BOUNDS, fill_value=None):
    """``operand[indices[..., 0], ..., indices[..., ndim-1]]``: one element per vector."""
    ndim = get_aval(operand).ndim
    dims = tuple(range(ndim))
    batch = get_aval(indices).shape[:-1]
    if 0 in batch:  # nothing to read (a slice of an empty operand dim would not fit)
        return full_like(operand, 0, shape=batch)
    return gather(operand, indices, GatherDimensionNumbers((), dims, dims), (1,) * ndim,
                  mode=mode, fill_value=fill_value)


def index_grid(shape: Shape, axis: int, index_along_axis) -> Any:
    """Indices (shape + (ndim,)) that pick ``x[..., index_along_axis, ...]`` from every
    position: an iota for each dim, with ``index_along_axis`` in place of dim ``axis``."""
    columns = []
    for d in range(len(shape)):
        column = index_along_axis if d == axis else iota(np.int32, shape, d)
        columns.append(broadcast_in_dim(column, tuple(shape) + (1,), tuple(range(len(shape)))))
    return concatenate(columns, len(shape))

# ------------------------------------------------------------------------------------------
# Sorting
# ------------------------------------------------------------------------------------------


sort_p = Primitive("sort", multiple_results=True)
def sort(operand: Any, dimension: int = -1, is_stable: bool = True,
         num_keys: int = 1) -> Any:
    """Sorts ``operand`` along ``dimension``; given a sequence of arrays, sorts them all by
    the first ``num_keys`` and returns a tuple. The sort is always stable."""
    del is_stable
    single = not isinstance(operand, (list, tuple))
    operands = [operand] if single else list(operand)
    ndim = get_aval(operands[0]).ndim
    outs = sort_p.bind(*operands, dimension=dimension % ndim, num_keys=num_keys)
    return outs[0] if single else tuple(outs)
def sort_impl(*operands, dimension, num_keys):
    keys = [np.moveaxis(k, dimension, -1) for k in operands[:num_keys]]
    order = np.moveaxis(np.lexsort(keys[::-1], axis=-1), -1, dimension)
    return [np.take_along_axis(x, order, axis=dimension) for x in operands]
impl_rules[sort_p] = sort_impl
def _sort_permutation(operands, dimension, num_keys):
    shape = get_aval(operands[0]).shape
    return sort([*operands[:num_keys], iota(np.int32, shape, dimension)],
                dimension, num_keys=num_keys)[-1]
def sort_vjp(cts, *operands, out, dimension, num_keys):
    # Each output element came from position perm[i]: send its cotangent back there.
    shape = get_aval(operands[0]).shape
    indices = index_grid(shape, dimension, _sort_permutation(operands, dimension, num_keys))
    numbers = point_dimension_numbers(len(shape))
    return [scatter_add(zeros_like(x), indices, ct, numbers)
            if dtypes.is_inexact(get_aval(x).dtype) else None for x, ct in zip(operands, cts)]
vjp_rules[sort_p] = sort_vjp
def sort_jvp(primals, tangents, *, dimension, num_keys):
    shape = get_aval(primals[0]).shape
    indices = index_grid(shape, dimension, _sort_permutation(primals, dimension, num_keys))
    outs = sort(primals, dimension, num_keys=num_keys)
    return outs, [point_gather(t, indices) for t in tangents]
jvp_rules[sort_p] = sort_jvp


# --8<-- [start:tile]
tile_p = Primitive("tile", kind=SHAPE)
def tile(x, reps: Shape):
    """``lax.tile``: ``x`` repeated ``reps[d]`` times along each dim ``d`` (one rep per dim;
    ``jnp.tile`` adds the leading dims)."""
    reps = tuple(int(r) for r in reps)
    if len(reps) != get_aval(x).ndim or any(r < 0 for r in reps):
        raise ValueError(f"tile: reps {reps} must be one count of at least 0 for each of the "
                         f"operand's {get_aval(x).ndim} dims")
    return tile_p.bind(x, reps=reps)
impl_rules[tile_p] = lambda x, *, reps: np.tile(x, reps)
def _with_copies(reps, shape) -> tuple[Shape, Shape, Shape]:
    """The shape (r0, n0, r1, n1, ...), less each repetition count of 1 (a dim kept whole
    keeps its split in stage 4), with where the operand's dims and the counts' dims are."""
    full: list[int] = []
    operand_dims, copy_dims = [], []
    for r, n in zip(reps, shape):
        if r != 1:
            copy_dims.append(len(full))
            full.append(r)
        operand_dims.append(len(full))
        full.append(n)
    return tuple(full), tuple(operand_dims), tuple(copy_dims)
def tile_by_copies(x, *, reps):
    """Tile from other primitives, for a backend with no rule of its own: ``x`` broadcast to
    (r0, n0, r1, n1, ...), a copy per repetition, then each pair of dims merged."""
    shape = get_aval(x).shape
    full, operand_dims, _ = _with_copies(reps, shape)
    return reshape(broadcast_in_dim(x, full, operand_dims),
                   tuple(r * n for r, n in zip(reps, shape)))
def tile_vjp(ct, x, *, out, reps):
    # An element's copies all add to its cotangent: the sum over the repetitions' dims.
    full, _, copy_dims = _with_copies(reps, get_aval(x).shape)
    return [reduce_sum(reshape(ct, full), copy_dims)]
vjp_rules[tile_p] = tile_vjp
jvp_rules[tile_p] = _linear_jvp(tile_p)
# --8<-- [end:tile]
