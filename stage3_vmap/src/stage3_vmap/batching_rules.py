"""Batching rules for every primitive of stages 1 and 2, one block each, in the order of
stage 1's ``primitives.py``.

A rule gets the operands with their batch axes (``dims_in``: an axis, or ``not_mapped``) and
returns the results with theirs. Most rules only renumber the dims a primitive's params name,
so the batch axis stays where it is: a ``reduce_sum`` over dim 1 of each example is a
``reduce_sum`` over dim 2 of examples batched at axis 0. A rule moves a batch axis
(``moveaxis``) only where the primitive cannot take it where it is, and broadcasts an
unbatched operand (``bdim_at``) only where the primitive needs every operand to carry the
batch (binary ops take operands of equal shapes).

``jit_p``, ``custom_vjp_call`` and the collectives have their rules in ``batching.py`` and
``collectives.py``.

NB: in JAX each rule lives beside its primitive (jax/_src/lax/lax.py, slicing.py, ...),
registered in ``batching.primitive_batchers``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from stage1_autodiff.core import Primitive, PrimitiveKind, get_aval, primitives_of_kind
from stage1_autodiff.fft import fft_p
from stage1_autodiff.slicing import (
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
    window_operand_dims,
)
from stage2_jit.callback import io_callback_p, pure_callback_p
from stage2_jit.control_flow import scan
from stage2_jit.debug import debug_print_p

from stage1_autodiff import linalg, random_distributions
from stage1_autodiff import prims as lax

from .batching import (
    AxisData,
    BatchingRule,
    batching_rules,
    bdim_at,
    moveaxis,
    not_mapped,
    with_batch_layout,
)

Dims = list[int | None]


def _renumber(dims: Sequence[int], bdim: int) -> tuple[int, ...]:
    """Dims of one example as dims of the batch, whose batch axis is ``bdim``."""
    return tuple(d + (d >= bdim) for d in dims)


def _aligned(axis_data: AxisData, vals: Sequence[Any], dims: Dims) -> tuple[list[Any], int]:
    """Operands of one rank per example, given one common batch axis: the one the batched
    operands already share (nothing moves), or 0 when they disagree. Unbatched operands are
    broadcast there, since the primitive needs every operand to have the batch."""
    batched = {d for d in dims if d is not not_mapped}
    bdim = batched.pop() if len(batched) == 1 else 0
    return [bdim_at(x, d, bdim, axis_data) for x, d in zip(vals, dims)], bdim


# ------------------------------------------------------------------------------------------
# Elementwise: unary and binary ops, threefry2x32, the type conversions
# ------------------------------------------------------------------------------------------


# --8<-- [start:elementwise_batching_rule]
def _elementwise(prim: Primitive) -> BatchingRule:
    """An elementwise primitive applies to the whole batch at once: ``sin`` of every example
    is ``sin`` of the batch. Operands batched at the same axis go in as they are; the result
    is batched at that axis."""
    def rule(axis_data: AxisData, vals_in: list, dims_in: Dims, **params: Any):
        align = _aligned_with_scalars if len(vals_in) == 2 else _aligned
        vals, bdim = align(axis_data, vals_in, dims_in)
        outs = prim.bind(*vals, **params)
        if prim.multiple_results:
            return outs, [bdim] * len(outs)
        return [outs], [bdim]
    return rule
# --8<-- [end:elementwise_batching_rule]


def _aligned_with_scalars(axis_data: AxisData, vals: Sequence[Any],
                          dims: Dims) -> tuple[list[Any], int]:
    """A binary op's operands, as ``_aligned`` makes them, where one of them may be a scalar
    of each example beside the other's arrays (``mul a 2.0:f32[]``, which a binary op takes
    as it is): an unbatched scalar stays a scalar; a batched one (one scalar per example)
    is broadcast over its example's shape, since the op takes a scalar, not a vector of
    them."""
    ranks = [get_aval(x).ndim - (d is not not_mapped) for x, d in zip(vals, dims)]
    if ranks == [0, 0] and not_mapped in dims:
        return list(vals), next(d for d in dims if d is not not_mapped)  # x * 2.0, batched
    if 0 not in ranks or ranks == [0, 0]:
        return _aligned(axis_data, vals, dims)
    batched = {d for d in dims if d is not not_mapped}
    bdim = batched.pop() if len(batched) == 1 else 0
    array = next(k for k, rank in enumerate(ranks) if rank)
    shape = list(get_aval(vals[array]).shape)
    if dims[array] is not_mapped:
        shape.insert(bdim, axis_data.size)
    else:
        shape.insert(bdim, shape.pop(dims[array]))
    out = []
    for x, d, rank in zip(vals, dims, ranks):
        if rank == 0 and d is not_mapped:
            out.append(x)
        elif rank == 0:
            out.append(lax.broadcast_in_dim(x, tuple(shape), (bdim,)))
        else:
            out.append(bdim_at(x, d, bdim, axis_data))
    return out, bdim


# Every primitive stage 1 declares elementwise (PrimitiveKind), threefry2x32 among them;
# select_n's rule, below, takes the place of the generic one.
for _prim in primitives_of_kind(PrimitiveKind.ELEMENTWISE):
    batching_rules[_prim] = _elementwise(_prim)


def select_n_batching_rule(axis_data: AxisData, vals_in: list, dims_in: Dims):
    """Elementwise, except that the predicate may be a scalar for cases of any shape. One
    scalar predicate for all examples stays a scalar; a scalar per example is spread over its
    example's elements."""
    (which, *cases), (which_bdim, *case_bdims) = vals_in, dims_in
    if which_bdim is not_mapped and get_aval(which).ndim == 0:
        cases, bdim = _aligned(axis_data, cases, case_bdims)
        return [lax.select_n(which, *cases)], [bdim]
    case_ndim = get_aval(cases[0]).ndim - (case_bdims[0] is not not_mapped)
    if which_bdim is not not_mapped and get_aval(which).ndim == 1 and case_ndim > 0:  # (B,)
        cases, bdim = _aligned(axis_data, cases, case_bdims)
        which = lax.broadcast_in_dim(which, get_aval(cases[0]).shape, (bdim,))
        return [lax.select_n(which, *cases)], [bdim]
    operands, bdim = _aligned(axis_data, vals_in, dims_in)
    return [lax.select_n(*operands)], [bdim]
batching_rules[lax.select_n_p] = select_n_batching_rule


# ------------------------------------------------------------------------------------------
# Shapes
# ------------------------------------------------------------------------------------------


# --8<-- [start:broadcast_in_dim_batching_rule]
def broadcast_in_dim_batching_rule(axis_data: AxisData, vals_in: list, dims_in: Dims, *,
                                   shape: tuple[int, ...],
                                   broadcast_dimensions: tuple[int, ...], out_sharding=None):
    """The batch axis is one more operand dim to map to an output dim. It goes right after
    the output dim of the operand dim before it, which keeps ``broadcast_dimensions``
    increasing without moving anything."""
    (x,), (x_bdim,) = vals_in, dims_in
    out_bdim = broadcast_dimensions[x_bdim - 1] + 1 if x_bdim > 0 else 0
    dims = [d + (d >= out_bdim) for d in broadcast_dimensions]
    dims.insert(x_bdim, out_bdim)
    shape = shape[:out_bdim] + (axis_data.size,) + shape[out_bdim:]
    out_sharding = with_batch_layout(out_sharding, out_bdim, x, x_bdim)  # (stage 4)
    return [lax.broadcast_in_dim(x, shape, dims, out_sharding)], [out_bdim]
batching_rules[lax.broadcast_in_dim_p] = broadcast_in_dim_batching_rule
# --8<-- [end:broadcast_in_dim_batching_rule]


# --8<-- [start:reshape_batching_rule]
def reshape_batching_rule(axis_data: AxisData, vals_in: list, dims_in: Dims, *,
                          new_sizes: tuple[int, ...], dimensions: None, out_sharding=None):
    """A reshape reads elements in row-major order, so the batch must lead: then each
    example is one contiguous block, reshaped on its own."""
    (x,), (x_bdim,) = vals_in, dims_in
    x = moveaxis(x, x_bdim, 0)
    new_sizes = (axis_data.size,) + tuple(new_sizes)
    out_sharding = with_batch_layout(out_sharding, 0, x, 0)  # (stage 4)
    return [lax.reshape(x, new_sizes, out_sharding=out_sharding)], [0]
batching_rules[lax.reshape_p] = reshape_batching_rule
# --8<-- [end:reshape_batching_rule]


def transpose_batching_rule(axis_data: AxisData, vals_in: list, dims_in: Dims, *,
                            permutation: tuple[int, ...]):
    """The batch axis stays in place; the permutation moves the other dims around it."""
    (x,), (x_bdim,) = vals_in, dims_in
    perm = list(_renumber(permutation, x_bdim))
    perm.insert(x_bdim, x_bdim)
    return [lax.transpose(x, perm)], [x_bdim]
batching_rules[lax.transpose_p] = transpose_batching_rule


def squeeze_batching_rule(axis_data: AxisData, vals_in: list, dims_in: Dims, *,
                          dimensions: tuple[int, ...]):
    """The batch axis shifts left by the number of dims squeezed away before it."""
    (x,), (x_bdim,) = vals_in, dims_in
    out = lax.squeeze(x, _renumber(dimensions, x_bdim))
    return [out], [x_bdim - sum(d < x_bdim for d in dimensions)]
batching_rules[lax.squeeze_p] = squeeze_batching_rule


def concatenate_batching_rule(axis_data: AxisData, vals_in: list, dims_in: Dims, *,
                              dimension: int):
    """Every operand needs the batch at the same axis (an unbatched one is broadcast)."""
    vals, bdim = _aligned(axis_data, vals_in, dims_in)
    return [lax.concatenate(vals, dimension + (dimension >= bdim))], [bdim]
batching_rules[lax.concatenate_p] = concatenate_batching_rule


def pad_batching_rule(axis_data: AxisData, vals_in: list, dims_in: Dims, *,
                      padding_config: tuple[tuple[int, int, int], ...]):
    """The batch axis gets no padding. A padding value that differs between examples is no
    longer a scalar: pad with zeros, then select each example's value where padding went."""
    (x, padding_value), (x_bdim, value_bdim) = vals_in, dims_in
    bdim = 0 if x_bdim is not_mapped else x_bdim
    x = bdim_at(x, x_bdim, bdim, axis_data)
    config = list(padding_config)
    config.insert(bdim, (0, 0, 0))
    if value_bdim is not_mapped:
        return [lax.pad(x, padding_value, config)], [bdim]
    aval = get_aval(x)
    padded = lax.pad(x, lax.full((), 0, aval.dtype, aval.weak_type), config)
    is_x = lax.pad(lax.full(aval.shape, True, np.dtype(np.bool_)),
                   lax.full((), False, np.dtype(np.bool_)), config)
    value = lax.broadcast_in_dim(padding_value, get_aval(padded).shape, (bdim,))
    return [lax.select_n(is_x, value, padded)], [bdim]
batching_rules[lax.pad_p] = pad_batching_rule


def slice_batching_rule(axis_data: AxisData, vals_in: list, dims_in: Dims, *,
                        start_indices: tuple[int, ...], limit_indices: tuple[int, ...],
                        strides: tuple[int, ...] | None):
    """The whole batch axis is kept: it runs from 0 to the batch size with stride 1."""
    (x,), (x_bdim,) = vals_in, dims_in
    starts, limits = list(start_indices), list(limit_indices)
    starts.insert(x_bdim, 0)
    limits.insert(x_bdim, axis_data.size)
    if strides is not None:
        strides = list(strides)
        strides.insert(x_bdim, 1)
    return [lax.slice(x, starts, limits, strides)], [x_bdim]
batching_rules[lax.slice_p] = slice_batching_rule


def rev_batching_rule(axis_data: AxisData, vals_in: list, dims_in: Dims, *,
                      dimensions: tuple[int, ...]):
    (x,), (x_bdim,) = vals_in, dims_in
    return [lax.rev(x, _renumber(dimensions, x_bdim))], [x_bdim]
batching_rules[lax.rev_p] = rev_batching_rule


def tile_batching_rule(axis_data: AxisData, vals_in: list, dims_in: Dims, *,
                       reps: tuple[int, ...]):
    (x,), (x_bdim,) = vals_in, dims_in
    reps = list(reps)
    reps.insert(x_bdim, 1)  # the batch dim is not repeated
    return [lax.tile(x, reps)], [x_bdim]
batching_rules[lax.tile_p] = tile_batching_rule


def iota_batching_rule(axis_data: AxisData, vals_in: list, dims_in: Dims, **params: Any):
    """For completeness only: iota has no operands, so ``vmap`` never calls this rule (it
    runs rules for batched operands). Its result is the same for every example."""
    return [lax.iota_p.bind(**params)], [not_mapped]
batching_rules[lax.iota_p] = iota_batching_rule

# ------------------------------------------------------------------------------------------
# Reductions
# ------------------------------------------------------------------------------------------


# --8<-- [start:reduction_batching_rule]
def _reduction(prim: Primitive) -> BatchingRule:
    """Reducing some dims of each example is reducing the same dims of the batch, renumbered
    past the batch axis, which shifts left by the dims reduced away before it."""
    def rule(axis_data: AxisData, vals_in: list, dims_in: Dims, *, axes: tuple[int, ...],
             **params: Any):
        # --8<-- [start:task3_2]
        (x,), (x_bdim,) = vals_in, dims_in
        out = prim.bind(x, axes=_renumber(axes, x_bdim), **params)
        return [out], [x_bdim - sum(a < x_bdim for a in axes)]
        # --8<-- [end:task3_2]
    return rule
# --8<-- [end:reduction_batching_rule]


for _prim in primitives_of_kind(PrimitiveKind.REDUCTION):  # reduce_sum, reduce_max, ...
    batching_rules[_prim] = _reduction(_prim)
batching_rules[lax.argmax_p] = _reduction(lax.argmax_p)
batching_rules[lax.argmin_p] = _reduction(lax.argmin_p)

# ------------------------------------------------------------------------------------------
# Contraction
# ------------------------------------------------------------------------------------------


# --8<-- [start:dot_general_batching_rule]
def dot_general_batching_rule(axis_data: AxisData, vals_in: list, dims_in: Dims, *,
                              dimension_numbers, preferred_element_type, out_sharding=None):
    """No operand moves. Both batched: the batch axis is one more batch dim of the
    contraction, put first, so it leads the result. One batched: its batch axis is one more
    free dim of that operand, so a batched matrix-vector product is a matrix-matrix product.
    The result's dims are the batch dims, x's free dims, then y's free dims, each in order,
    which says where the batch axis lands."""
    # --8<-- [start:task3_1]
    (x, y), (x_bdim, y_bdim) = vals_in, dims_in
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    if x_bdim is not not_mapped:
        x_contract, x_batch = _renumber(x_contract, x_bdim), _renumber(x_batch, x_bdim)
    if y_bdim is not not_mapped:
        y_contract, y_batch = _renumber(y_contract, y_bdim), _renumber(y_batch, y_bdim)
    x_free = [d for d in range(get_aval(x).ndim) if d not in x_contract + x_batch]
    y_free = [d for d in range(get_aval(y).ndim) if d not in y_contract + y_batch]
    if x_bdim is not not_mapped and y_bdim is not not_mapped:
        x_batch, y_batch = (x_bdim,) + x_batch, (y_bdim,) + y_batch
        out_bdim = 0
    elif x_bdim is not not_mapped:
        out_bdim = len(x_batch) + x_free.index(x_bdim)
    else:
        out_bdim = len(x_batch) + len(x_free) + y_free.index(y_bdim)
    dims = ((x_contract, y_contract), (x_batch, y_batch))
    batched, bdim = (x, x_bdim) if x_bdim is not not_mapped else (y, y_bdim)
    out_sharding = with_batch_layout(out_sharding, out_bdim, batched, bdim)  # (stage 4)
    return [lax.dot_general(x, y, dims, None, preferred_element_type, out_sharding)], [out_bdim]
    # --8<-- [end:task3_1]
batching_rules[lax.dot_general_p] = dot_general_batching_rule
# --8<-- [end:dot_general_batching_rule]

# ------------------------------------------------------------------------------------------
# Gather and scatter: the batch becomes a dim of their dimension numbers
# ------------------------------------------------------------------------------------------


def _shift(dims: Sequence[int]) -> tuple[int, ...]:
    return tuple(d + 1 for d in dims)


# --8<-- [start:gather_batching_rule]
def gather_batching_rule(axis_data: AxisData, vals_in: list, dims_in: Dims, *,
                         dimension_numbers, slice_sizes, mode, fill_value):
    """The dimension numbers say what the batch is. Only the operand batched: a window dim
    spanning the batch (every example reads at the same positions). Only the indices
    (batch moved to axis 0): one more batch dim of the indices. Both: a pair of batching
    dims, so example b reads example b of the operand."""
    (operand, indices), (operand_bdim, indices_bdim) = vals_in, dims_in
    dn, size = dimension_numbers, axis_data.size
    if indices_bdim is not_mapped:
        return _gather_of_batched_operand(operand, indices, operand_bdim, size, dn, slice_sizes,
                                          mode, fill_value)
    if operand_bdim is not_mapped:
        indices = moveaxis(indices, indices_bdim, 0)
        dn = dn._replace(offset_dims=_shift(dn.offset_dims),
                         start_indices_batching_dims=_shift(dn.start_indices_batching_dims))
    else:
        operand, indices = moveaxis(operand, operand_bdim, 0), moveaxis(indices, indices_bdim, 0)
        dn = GatherDimensionNumbers(
            _shift(dn.offset_dims), _shift(dn.collapsed_slice_dims), _shift(dn.start_index_map),
            (0, *_shift(dn.operand_batching_dims)),
            (0, *_shift(dn.start_indices_batching_dims)))
        slice_sizes = (1, *slice_sizes)
    out = lax.gather_p.bind(operand, indices, dimension_numbers=dn, slice_sizes=slice_sizes,
                            mode=mode, fill_value=fill_value)
    return [out], [0]
batching_rules[lax.gather_p] = gather_batching_rule
# --8<-- [end:gather_batching_rule]


def _gather_of_batched_operand(operand, indices, bdim, size, dn, slice_sizes, mode,
                               fill_value):
    """The batch stays where it is in the operand, as a window dim spanning it; in the
    result it goes where that window dim falls among the others (no transpose)."""
    after = lambda dims: tuple(d + (d >= bdim) for d in dims)
    collapsed, batching = after(dn.collapsed_slice_dims), after(dn.operand_batching_dims)
    window = window_operand_dims(get_aval(operand).ndim, collapsed, batching)
    j = window.index(bdim)  # the batch is the j-th window dim
    offsets = dn.offset_dims
    rank = get_aval(indices).ndim - 1 + len(offsets)
    out_bdim = offsets[j] if j < len(offsets) else rank
    offsets = tuple(sorted([d + (d >= out_bdim) for d in offsets] + [out_bdim]))
    dn = GatherDimensionNumbers(offsets, collapsed, after(dn.start_index_map), batching,
                                dn.start_indices_batching_dims)
    out = lax.gather_p.bind(operand, indices, dimension_numbers=dn,
                            slice_sizes=(*slice_sizes[:bdim], size, *slice_sizes[bdim:]),
                            mode=mode, fill_value=fill_value)
    return [out], [out_bdim]


def _scatter(prim: Primitive) -> BatchingRule:
    """Every example writes its own result: the operand, the indices and the updates all
    get the batch at axis 0 (broadcast where unbatched), and the operand's and the indices'
    batch axes become a pair of batching dims (the updates' is their first batch dim)."""
    def rule(axis_data: AxisData, vals_in: list, dims_in: Dims, *, dimension_numbers, mode):
        dn = dimension_numbers
        operand, indices, updates = (bdim_at(x, d, 0, axis_data) for x, d in zip(vals_in, dims_in))
        dn = ScatterDimensionNumbers(
            _shift(dn.update_window_dims), _shift(dn.inserted_window_dims),
            _shift(dn.scatter_dims_to_operand_dims), (0, *_shift(dn.operand_batching_dims)),
            (0, *_shift(dn.scatter_indices_batching_dims)))
        return [prim.bind(operand, indices, updates, dimension_numbers=dn, mode=mode)], [0]
    return rule


batching_rules[lax.scatter_add_p] = _scatter(lax.scatter_add_p)
batching_rules[lax.scatter_p] = _scatter(lax.scatter_p)
batching_rules[lax.scatter_mul_p] = _scatter(lax.scatter_mul_p)
batching_rules[lax.scatter_min_p] = _scatter(lax.scatter_min_p)
batching_rules[lax.scatter_max_p] = _scatter(lax.scatter_max_p)

# ------------------------------------------------------------------------------------------
# Sorting
# ------------------------------------------------------------------------------------------


# --8<-- [start:sort_batching_rule]
def sort_batching_rule(axis_data: AxisData, vals_in: list, dims_in: Dims, *, dimension: int,
                       num_keys: int):
    """Each example sorts along its own ``dimension``: the same dim of the batch, renumbered
    past the batch axis. The operands are sorted together, so all carry the batch."""
    # --8<-- [start:task3_2]
    vals, bdim = _aligned(axis_data, vals_in, dims_in)
    outs = lax.sort_p.bind(*vals, dimension=dimension + (dimension >= bdim), num_keys=num_keys)
    return outs, [bdim] * len(outs)
    # --8<-- [end:task3_2]
batching_rules[lax.sort_p] = sort_batching_rule
# --8<-- [end:sort_batching_rule]


# ------------------------------------------------------------------------------------------
# Cumulative reductions and top_k: the axis renumbered; dynamic slicing: gather and scatter
# ------------------------------------------------------------------------------------------


def _along_axis(prim: Primitive) -> BatchingRule:
    """Each example works along its own ``axis`` (cumsum, ..., top_k): the same dim of the
    batch, renumbered past the batch axis; the results keep the operand's batch axis."""
    def rule(axis_data: AxisData, vals_in: list, dims_in: Dims, *, axis: int, **params):
        (x,), (bdim,) = vals_in, dims_in
        outs = prim.bind(x, axis=axis + (axis >= bdim), **params)
        return (outs, [bdim] * len(outs)) if prim.multiple_results else ([outs], [bdim])
    return rule


for _prim in (*lax.CUMULATIVE, lax.top_k_p):
    batching_rules[_prim] = _along_axis(_prim)


def _batched_index_vectors(axis_data: AxisData, starts: list, dims: Dims) -> Any:
    """One index vector of starts per example, (size, n): unbatched starts repeated."""
    size = axis_data.size
    return lax.concatenate([lax.broadcast_in_dim(bdim_at(s, d, 0, axis_data), (size, 1), (0,))
                            for s, d in zip(starts, dims)], 1)


def dynamic_slice_batching_rule(axis_data: AxisData, vals_in: list, dims_in: Dims, *,
                                slice_sizes):
    """Starts the same for every example: the batch is one more dim of the window, whole.
    Batched starts: a gather of one clipped window per example, as JAX batches it."""
    (operand, *starts), (operand_bdim, *start_bdims) = vals_in, dims_in
    if all(d is not_mapped for d in start_bdims):
        zero = lax.zeros_like(starts[0]) if starts else lax.full((), 0, np.dtype(np.int32))
        starts.insert(operand_bdim, zero)
        sizes = list(slice_sizes)
        sizes.insert(operand_bdim, axis_data.size)
        out = lax.dynamic_slice_p.bind(operand, *starts, slice_sizes=tuple(sizes))
        return [out], [operand_bdim]
    dims = tuple(range(len(starts)))
    return gather_batching_rule(
        axis_data, [operand, _batched_index_vectors(axis_data, starts, start_bdims)],
        [operand_bdim, 0], dimension_numbers=GatherDimensionNumbers(dims, (), dims),
        slice_sizes=slice_sizes, mode=GatherScatterMode.CLIP, fill_value=None)
batching_rules[lax.dynamic_slice_p] = dynamic_slice_batching_rule


def dynamic_update_slice_batching_rule(axis_data: AxisData, vals_in: list, dims_in: Dims):
    """Starts the same for every example: operand and update batched at axis 0, written
    from start 0 there. Batched starts: a scatter of one clipped window per example."""
    (operand, update, *starts), (operand_bdim, update_bdim, *start_bdims) = vals_in, dims_in
    if all(d is not_mapped for d in start_bdims):
        zero = lax.zeros_like(starts[0]) if starts else lax.full((), 0, np.dtype(np.int32))
        out = lax.dynamic_update_slice_p.bind(bdim_at(operand, operand_bdim, 0, axis_data),
                                              bdim_at(update, update_bdim, 0, axis_data),
                                              zero, *starts)
        return [out], [0]
    dims = tuple(range(len(starts)))
    return batching_rules[lax.scatter_p](
        axis_data, [operand, _batched_index_vectors(axis_data, starts, start_bdims), update],
        [operand_bdim, 0, update_bdim], dimension_numbers=ScatterDimensionNumbers(dims, (), dims),
        mode=GatherScatterMode.CLIP)
batching_rules[lax.dynamic_update_slice_p] = dynamic_update_slice_batching_rule


# ------------------------------------------------------------------------------------------
# Linear algebra (stage 1's linalg.py)
# ------------------------------------------------------------------------------------------


def _linalg(prim: Primitive) -> BatchingRule:
    """A linear-algebra primitive maps over the dims before its matrices: the batch axis,
    moved to the front (an unbatched operand broadcast there), is one more of them.

    NB: JAX's linalg primitives do the same (``batching.expand_dims_batcher``)."""
    def rule(axis_data: AxisData, vals_in: list, dims_in: Dims, **params: Any):
        vals = [bdim_at(x, d, 0, axis_data) for x, d in zip(vals_in, dims_in)]
        outs = prim.bind(*vals, **params)
        outs = outs if prim.multiple_results else [outs]
        return outs, [0] * len(outs)
    return rule


for _prim in linalg.LINALG:
    batching_rules[_prim] = _linalg(_prim)


# ------------------------------------------------------------------------------------------
# Stage 2's debug_print
# ------------------------------------------------------------------------------------------


def _example(x: Any, bdim: int | None, i: int) -> Any:
    """Example ``i`` of a batch (the value itself when it is not batched)."""
    if bdim is not_mapped:
        return x
    starts, limits = [0] * get_aval(x).ndim, list(get_aval(x).shape)
    starts[bdim], limits[bdim] = i, i + 1
    return lax.squeeze(lax.slice(x, starts, limits), (bdim,))


def debug_print_batching_rule(axis_data: AxisData, vals_in: list, dims_in: Dims, **params: Any):
    """Prints once per example, as a loop over the examples would, each line formatted with
    that example's values (JAX unrolls its debug callbacks the same way)."""
    for i in range(axis_data.size):
        debug_print_p.bind(*[_example(x, d, i) for x, d in zip(vals_in, dims_in)], **params)
    return [], []
batching_rules[debug_print_p] = debug_print_batching_rule


# ------------------------------------------------------------------------------------------
# Stage 2's pure_callback
# ------------------------------------------------------------------------------------------


# --8<-- [start:pure_callback_batching_rule]
def pure_callback_batching_rule(axis_data: AxisData, vals_in: list, dims_in: Dims, *,
                                vmap_method: str | None, result_avals, **params: Any):
    """The callback cannot be looked into, so its ``vmap_method`` says how it batches:

    - ``sequential`` (``_unrolled``): a ``scan`` over the examples, one call each;
    - ``expand_dims``: one call, the batched operands with the batch in front and the
      unbatched with a leading dim of size 1 (the callback broadcasts them);
    - ``broadcast_all``: the same, the unbatched broadcast to the whole batch;
    - ``legacy_vectorized``: the unbatched operands as they are.

    The callback then returns results with the batch in front. None refuses, as in JAX."""
    vals = [x if d is not_mapped else moveaxis(x, d, 0) for x, d in zip(vals_in, dims_in)]
    params = dict(params, vmap_method=vmap_method)
    if vmap_method in ("sequential", "sequential_unrolled"):
        outs = _callback_loop(vals, dims_in, result_avals, params)
    elif vmap_method in ("expand_dims", "broadcast_all", "legacy_vectorized"):
        axis = {"expand_dims": AxisData(axis_data.name, 1),  # a dim of 1, not split
                "broadcast_all": axis_data}.get(vmap_method)
        vals = [x if d is not not_mapped or axis is None else bdim_at(x, d, 0, axis)
                for x, d in zip(vals, dims_in)]
        batched = tuple(a._replace(shape=(axis_data.size, *a.shape)) for a in result_avals)
        outs = pure_callback_p.bind(*vals, result_avals=batched, **params)
    else:
        raise NotImplementedError(
            "vmap is only supported for the pure_callback primitive when vmap_method is one "
            "of 'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
            f"'legacy_vectorized'. Got vmap_method={vmap_method!r}.")
    return list(outs), [0] * len(outs)


def _callback_loop(vals: list, dims: Dims, result_avals, params: dict,
                   prim: Any = pure_callback_p) -> list:
    """A scan over the batched operands (batch in front); the unbatched ones are closed
    over, so the loop's program takes them as constants."""
    batched = [x for x, d in zip(vals, dims) if d is not not_mapped]

    def step(carry, xs):
        xs = iter(xs)
        operands = [next(xs) if d is not not_mapped else x for x, d in zip(vals, dims)]
        return carry, prim.bind(*operands, result_avals=result_avals, **params)

    unroll = params.get("vmap_method") == "sequential_unrolled"
    _, outs = scan(step, (), batched, unroll=unroll)
    return outs


batching_rules[pure_callback_p] = pure_callback_batching_rule
# --8<-- [end:pure_callback_batching_rule]


def io_callback_batching_rule(axis_data: AxisData, vals_in: list, dims_in: Dims, *,
                              ordered: bool, result_avals, **params: Any):
    """An effect per example, in order: a loop, as ``vmap_method="sequential"``. An ordered
    callback is refused, as in JAX (its order with the other effects would be the loop's)."""
    if ordered:
        raise ValueError("Cannot vmap an ordered io_callback: its calls would be reordered "
                         "among the program's other effects. Pass ordered=False, or call it "
                         "in a Python loop over the examples.")
    vals = [x if d is not_mapped else moveaxis(x, d, 0) for x, d in zip(vals_in, dims_in)]
    outs = _callback_loop(vals, dims_in, result_avals, dict(params, ordered=False),
                          io_callback_p)
    return list(outs), [0] * len(outs)


batching_rules[io_callback_p] = io_callback_batching_rule


# ------------------------------------------------------------------------------------------
# Stage 1's random_poisson (random_gamma and its gradient are elementwise)
# ------------------------------------------------------------------------------------------


def random_poisson_batching_rule(axis_data: AxisData, vals_in: list, dims_in: Dims, *, dtype):
    """The batch axis goes in front of both the keys and the rates: one more leading key
    dim, whose keys each run their own loops (JAX's batched while_loop does the same)."""
    key_data, lam = [bdim_at(x, d, 0, axis_data) for x, d in zip(vals_in, dims_in)]
    return [random_distributions.random_poisson_p.bind(key_data, lam, dtype=dtype)], [0]
batching_rules[random_distributions.random_poisson_p] = random_poisson_batching_rule


# ------------------------------------------------------------------------------------------
# The FFT (stage 1's fft.py)
# ------------------------------------------------------------------------------------------


def fft_batching_rule(axis_data: AxisData, vals_in: list, dims_in: Dims, *, fft_type,
                      fft_lengths):
    """The FFT transforms trailing dims and maps over the leading ones: the batch axis,
    moved to the front, is one more leading dim. NB: as JAX's ``_fft_batching_rule`` in
    jax/_src/lax/fft.py."""
    (x,), (bdim,) = vals_in, dims_in
    x = bdim_at(x, bdim, 0, axis_data)
    return [fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths)], [0]
batching_rules[fft_p] = fft_batching_rule


# ------------------------------------------------------------------------------------------
# Windowed reductions and convolution (stage 1's windowed.py and convolution.py)
# ------------------------------------------------------------------------------------------


def reduce_window_batching_rule(prim: Primitive) -> BatchingRule:
    """The batch axis gets a window of one element, stride 1, no padding or dilation."""
    def rule(axis_data: AxisData, vals_in: list, dims_in: Dims, **params: Any):
        (x,), (x_bdim,) = vals_in, dims_in
        trivial = dict(window_dimensions=1, window_strides=1, padding=(0, 0),
                       base_dilation=1, window_dilation=1)
        params = {k: v[:x_bdim] + (trivial[k],) + v[x_bdim:] for k, v in params.items()}
        return [prim.bind(x, **params)], [x_bdim]
    return rule


for _prim in lax.REDUCE_WINDOWS:
    batching_rules[_prim] = reduce_window_batching_rule(_prim)


def _fold(x: Any, dim: int, groups: int = 1) -> Any:
    """``x``'s leading batch axis (B) merged into its dim ``1 + dim`` (of size G * m, G =
    ``groups``), which becomes (G, B, m): the batch inside each group, so a grouped
    convolution keeps its groups."""
    shape = list(get_aval(x).shape)
    size = shape[1 + dim]
    x = lax.reshape(x, shape[:1 + dim] + [groups, size // groups] + shape[2 + dim:])
    x = moveaxis(x, 0, dim + 1)  # (G, B, m) at dims dim, dim + 1, dim + 2 of the result
    return lax.reshape(x, shape[1:1 + dim] + [shape[0] * size] + shape[2 + dim:])


def _unfold(y: Any, dim: int, size: int, groups: int = 1) -> Any:
    """The converse: ``y``'s dim ``dim``, (G, B, m), split into B at ``dim`` and (G, m)."""
    shape = list(get_aval(y).shape)
    inner = shape[dim] // (groups * size)
    y = lax.reshape(y, shape[:dim] + [groups, size, inner] + shape[dim + 1:])
    y = moveaxis(y, dim + 1, dim)
    return lax.reshape(y, shape[:dim] + [size, groups * inner] + shape[dim + 1:])


def conv_general_dilated_batching_rule(axis_data: AxisData, vals_in: list, dims_in: Dims,
                                       **params: Any):
    """No loop: the batch folds into the convolution's own dims. A batched lhs alone folds
    into its batch dim (inside each batch group); a batched kernel alone into its output
    features (inside each feature group); both, into the lhs features and the kernel's
    output features, making B times as many feature groups (or, with batch groups, into
    the lhs batch, making B times as many batch groups).

    NB: JAX's rule is ``_conv_general_dilated_batch_rule`` in jax/_src/lax/convolution.py."""
    (lhs, rhs), (lhs_bdim, rhs_bdim), size = vals_in, dims_in, axis_data.size
    (n, c, *_), (o, *_), (out_n, out_c, *_) = params["dimension_numbers"]
    fg, bg = params["feature_group_count"], params["batch_group_count"]
    lhs, rhs = (x if d is not_mapped else moveaxis(x, d, 0)
                for x, d in ((lhs, lhs_bdim), (rhs, rhs_bdim)))
    bind = lax.conv_general_dilated_p.bind
    if rhs_bdim is not_mapped:
        out = bind(_fold(lhs, n, bg), rhs, **params)
        return [_unfold(out, out_n, size)], [out_n]
    if lhs_bdim is not_mapped:
        out = bind(lhs, _fold(rhs, o, fg * bg), **params)
        return [_unfold(out, out_c, size, fg * bg)], [out_c]
    if bg == 1:
        params = dict(params, feature_group_count=fg * size)
        out = bind(_fold(lhs, c), _fold(rhs, o), **params)
    else:
        params = dict(params, batch_group_count=bg * size)
        out = bind(_fold(lhs, n), _fold(rhs, o), **params)
    return [_unfold(out, out_c, size)], [out_c]
batching_rules[lax.conv_general_dilated_p] = conv_general_dilated_batching_rule
