"""The SPMD partitioner: a program over global, sharded values becomes one per-device program
over blocks, with the collectives its shardings imply.

The global jaxpr's avals carry their shardings (``sharded_types.py``), so each equation's
operands and results have known layouts. The partitioner traces a new program with the
per-device (local) shapes: for each global equation its *partition rule* emits the local
equations that compute this device's block of each result from this device's blocks of the
operands. Where the layouts do not line up, ``Partitioner.convert`` moves data:

- a dim split in the operand but wanted whole: ``all_gather`` over its mesh axes;
- a dim whole in the operand but wanted split: ``shard_slice`` keeps this device's block
  (no communication);
- a mesh axis moving from one dim to another: ``all_to_all``.

Reductions over a split dim reduce locally, then combine across devices (``psum``, ``pmax``,
``pmin``: an all-reduce). A contraction whose contracted dim is split on both sides sums
partial products: ``psum``, or ``psum_scatter`` when the result is to be split over the same
axis (a reduce-scatter, half the bytes). An all-reduce whose result is then sliced becomes a
reduce-scatter too (XLA's ReduceScatterCreator does the same). Reversing a split dim trades
blocks between devices (``ppermute``, a collective permute); slicing, padding, concatenating or
reshaping it computes on the blocks where each keeps its elements, and otherwise on the dim
gathered whole.

The local program names mesh axes in its collectives, as a ``shard_map`` body does; the
runtime (``runtime.py``) runs it on every device.

NB: XLA's SPMD partitioner (xla/service/spmd/spmd_partitioner.cc) works on HLO with the same
idea: a handler per op, and resharding by all-gather, all-to-all and dynamic-slice.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from stage1_autodiff.autodiff import custom_vjp_call_p
from stage1_autodiff.core import (
    Primitive,
    PrimitiveKind,
    ShapedArray,
    get_aval,
    impl_rules,
    jvp_rules,
    primitives_of_kind,
    trace_state,
    vjp_rules,
)
from stage1_autodiff.custom_derivatives import custom_jvp_call_p
from stage1_autodiff.fft import fft_p
from stage1_autodiff.slicing import window_operand_dims
from stage2_jit.abstract_eval import abstract_eval_rules
from stage2_jit.callback import io_callback_p, pure_callback_p
from stage2_jit.debug import debug_print_p
from stage2_jit.jaxpr import ClosedJaxpr, Jaxpr, Literal, Var
from stage2_jit.jit import jit_p
from stage2_jit.passes import dce
from stage2_jit.remat import remat_p
from stage2_jit.tracing import trace_to_jaxpr
from stage3_vmap.batching import AxisData, BoundAxis, axis_frame, batching_rules, bound_axes
from stage3_vmap.collectives import (
    all_gather_p,
    all_to_all_p,
    pmax_p,
    pmin_p,
    ppermute_p,
    psum_p,
    psum_scatter_p,
)

from stage1_autodiff import linalg, random_distributions
from stage1_autodiff import prims as p

from .mesh import Mesh
from .sharded_types import spec_of_aval
from .sharding_rules import Spec, unsplit

# ------------------------------------------------------------------------------------------
# shard_slice: this device's block (a dynamic slice at the device's position; no bytes move)
# ------------------------------------------------------------------------------------------

# --8<-- [start:shard_slice]
shard_slice_p = Primitive("shard_slice")


def shard_slice_abstract_eval(x: ShapedArray, *, axes: Spec) -> ShapedArray:
    shape = tuple(n // math.prod(axis_frame(a).global_data.size for a in names)
                  for n, names in zip(x.shape, axes))
    return ShapedArray(shape, x.dtype, x.weak_type)


abstract_eval_rules[shard_slice_p] = shard_slice_abstract_eval


def _only_on_devices(*args: Any, **params: Any) -> Any:
    raise NotImplementedError("shard_slice runs in a partitioned program, on devices.")


impl_rules[shard_slice_p] = _only_on_devices
jvp_rules[shard_slice_p] = lambda primals, tangents, *, axes: (
    shard_slice_p.bind(primals[0], axes=axes), shard_slice_p.bind(tangents[0], axes=axes))


def _differentiated_before(*args: Any, **params: Any) -> Any:
    raise NotImplementedError("shard_slice is made by the partitioner, after differentiation: "
                              "take gradients of the global program (or inside shard_map).")


vjp_rules[shard_slice_p] = _differentiated_before


def shard_slice_batching_rule(axis_data, vals, dims, *, axes):
    (x,), (bdim,) = vals, dims
    return [shard_slice_p.bind(x, axes=axes[:bdim] + ((),) + axes[bdim:])], [bdim]


batching_rules[shard_slice_p] = shard_slice_batching_rule
# --8<-- [end:shard_slice]


def local_shape(shape: Sequence[int], spec: Spec, mesh: Mesh) -> tuple[int, ...]:
    return tuple(n // math.prod(mesh.shape[a] for a in axes) for n, axes in zip(shape, spec))


def local_aval(aval: ShapedArray, mesh: Mesh) -> ShapedArray:
    return ShapedArray(local_shape(aval.shape, spec_of_aval(aval), mesh), aval.dtype,
                       aval.weak_type)


# ------------------------------------------------------------------------------------------
# Moving blocks between layouts
# ------------------------------------------------------------------------------------------


# --8<-- [start:convert]
class Partitioner:
    """Emits a device's share of each global equation while the local program is traced."""

    def __init__(self, mesh: Mesh) -> None:
        self.mesh = mesh
        # How some local values were made, for the peepholes in ``slice``: id -> (value,
        # kind, details). The value is kept so that its id is not reused.
        self.made_by: dict[int, tuple[Any, str, Any]] = {}

    def convert(self, x: Any, src: Spec, dst: Spec) -> Any:
        """This device's block of a value laid out by ``dst``, from its block under ``src``."""
        # --8<-- [start:task4_2]
        src, dst = list(src), list(dst)
        if src == dst:
            return x
        for a, axes in enumerate(src):  # an axis moving from dim a to dim b: all-to-all
            if len(axes) == 1 and not dst[a]:
                for b in range(len(dst)):
                    if b != a and dst[b] == axes and not src[b]:
                        x = all_to_all_p.bind(x, axis_name=axes[0], split_axis=b,
                                              concat_axis=a, tiled=True)
                        src[a], src[b] = (), axes
                        break
        for d, axes in enumerate(src):  # splits that are not kept: gather, minor axis first
            if axes and tuple(dst[d][:len(axes)]) != tuple(axes):
                for name in reversed(axes):
                    x = all_gather_p.bind(x, axis_name=name, axis=d, tiled=True)
                src[d] = ()
        extra = tuple(tuple(dst[d][len(src[d]):]) for d in range(len(dst)))
        return self.slice(x, extra) if any(extra) else x
        # --8<-- [end:task4_2]

    def gather_whole(self, x: Any, spec: Spec, dims: Sequence[int]) -> tuple[Any, Spec]:
        """``x`` with ``dims`` made whole; the new spec."""
        wanted = tuple(() if d in dims else axes for d, axes in enumerate(spec))
        return self.convert(x, spec, wanted), wanted

    def slice(self, x: Any, extra: Spec) -> Any:
        """This device's block of ``x`` along ``extra``'s axes. Two peepholes: a summed
        value is reduce-scattered instead of all-reduced and sliced, and a broadcast is
        redone at the block's shape instead of made whole and sliced."""
        made = self.made_by.get(id(x))
        if made is not None and made[0] is x:
            _, kind, details = made
            split = [d for d, axes in enumerate(extra) if axes]
            if kind == "psum" and len(split) == 1 and set(extra[split[0]]) <= set(details[1]):
                operand, names = details
                d = split[0]
                for name in names:
                    if name not in extra[d]:
                        operand = psum_p.bind(operand, axis_name=name)
                for name in extra[d]:  # major axis first: blocks nest as the spec says
                    operand = psum_scatter_p.bind(operand, axis_name=name,
                                                  scatter_dimension=d, tiled=True)
                return operand
            if kind == "broadcast":  # slice the operand (if at all), broadcast the block
                operand, dims = details
                operand_shape, shape = get_aval(operand).shape, get_aval(x).shape
                operand_extra = tuple(extra[d] if n == shape[d] else ()
                                      for n, d in zip(operand_shape, dims))
                if all(not extra[d] or n == shape[d] for n, d in zip(operand_shape, dims)):
                    if any(operand_extra):
                        operand = self.slice(operand, operand_extra)
                    return self.note(p.broadcast_in_dim_p.bind(
                        operand, shape=local_shape(shape, extra, self.mesh),
                        broadcast_dimensions=dims), "broadcast", (operand, dims))
        return shard_slice_p.bind(x, axes=extra)

    def note(self, value: Any, kind: str, details: Any) -> Any:
        self.made_by[id(value)] = (value, kind, details)
        return value
# --8<-- [end:convert]

    # --------------------------------------------------------------------------------------
    # Running the global program's equations as local ones
    # --------------------------------------------------------------------------------------

    def run(self, jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any],
            arg_specs: Sequence[Spec]) -> list[tuple[Any, Spec]]:
        """The local values (and their layouts) of ``jaxpr``'s outputs."""
        env: dict[Var, tuple[Any, Spec]] = {}

        def read(atom):
            if isinstance(atom, Literal):
                return atom.val, unsplit(atom.aval.ndim)
            return env[atom]

        for var, value in zip(jaxpr.constvars, consts):
            env[var] = (value, unsplit(var.aval.ndim))
        for var, value, spec in zip(jaxpr.invars, args, arg_specs):
            env[var] = (value, tuple(spec))
        for eqn in jaxpr.eqns:
            vals, specs = zip(*[read(a) for a in eqn.invars]) if eqn.invars else ((), ())
            avals_in = [a.aval for a in eqn.invars]
            out_specs = [spec_of_aval(v.aval) for v in eqn.outvars]
            rule = partition_rules.get(eqn.primitive) or generic_rule(eqn.primitive)
            outs = rule(self, list(vals), list(specs), out_specs, avals_in,
                        [v.aval for v in eqn.outvars], **eqn.params)
            for var, value, spec in zip(eqn.outvars, outs, out_specs):
                wanted = local_shape(var.aval.shape, spec, self.mesh)
                if get_aval(value).shape != wanted:  # a rule's bug, not the user's
                    raise AssertionError(f"partitioning {eqn.primitive.name} gave a block of "
                                         f"shape {get_aval(value).shape}, expected {wanted}")
                env[var] = (value, spec)
        return [read(v) for v in jaxpr.outvars]


# ------------------------------------------------------------------------------------------
# Partition rules
# ------------------------------------------------------------------------------------------

# rule(partitioner, local values, their specs, result specs, global avals in, global avals
# out, **params) -> the local results, laid out by the result specs.
PartitionRule = Callable[..., list[Any]]
partition_rules: dict[Primitive, PartitionRule] = {}


def _bind(prim: Primitive, vals: Sequence[Any], params: dict[str, Any]) -> list[Any]:
    outs = prim.bind(*vals, **params)
    return list(outs) if prim.multiple_results else [outs]


# --8<-- [start:generic_rule]
def generic_rule(prim: Primitive) -> PartitionRule:
    """Correct for any primitive, and the most communication: every operand gathered whole,
    the global operation computed on every device, each result sliced to its layout."""
    def rule(ctx, vals, specs, out_specs, avals_in, avals_out, **params):
        whole = [ctx.convert(v, s, unsplit(len(s))) for v, s in zip(vals, specs)]
        if "out_sharding" in params:
            params = dict(params, out_sharding=None)
        outs = _bind(prim, whole, params)
        return [ctx.convert(o, unsplit(len(s)), s) for o, s in zip(outs, out_specs)]
    return rule
# --8<-- [end:generic_rule]


def _same_layout(prim: Primitive) -> PartitionRule:
    """Each operand of the result's rank brought to the result's layout, then the same
    primitive on the blocks: elementwise ops, and ops whose rule keeps every split dim whole
    on its own (transpose permutes the spec; squeeze drops dims of size 1; sort needs whole
    only the dim it sorts along; tile only the dims it repeats)."""
    def rule(ctx, vals, specs, out_specs, avals_in, avals_out, **params):
        target = out_specs[0]
        vals = [ctx.convert(v, s, _operand_target(prim, a, target, params))
                if a.ndim else v for v, s, a in zip(vals, specs, avals_in)]
        return _bind(prim, vals, params)
    return rule


def _operand_target(prim: Primitive, aval: ShapedArray, out_spec: Spec, params) -> Spec:
    if prim is p.transpose_p:  # the operand's dim perm[i] is the result's dim i
        spec = [()] * aval.ndim
        for i, d in enumerate(params["permutation"]):
            spec[d] = out_spec[i]
        return tuple(spec)
    if prim is p.squeeze_p:  # squeezed dims (size 1) are whole
        kept = iter(out_spec)
        return tuple(() if d in params["dimensions"] else next(kept) for d in range(aval.ndim))
    return out_spec


for _prim in [*primitives_of_kind(PrimitiveKind.ELEMENTWISE), p.transpose_p, p.squeeze_p,
              p.sort_p, p.tile_p, *p.CUMULATIVE, p.top_k_p]:
    partition_rules[_prim] = _same_layout(_prim)
# The FFT keeps its transformed dims whole (its sharding rule), so each device transforms
# the signals of its block of the leading dims.
partition_rules[fft_p] = _same_layout(fft_p)


def dynamic_slice_partition_rule(ctx, vals, specs, out_specs, avals_in, avals_out, *,
                                 slice_sizes):
    """A split dim read whole is sliced block by block (its start clamps to 0); one sliced
    at a computed start is gathered whole, sliced, and this device's block of the window
    kept, as a static slice across devices is."""
    gathered = [d for d, (m, n) in enumerate(zip(slice_sizes, avals_in[0].shape))
                if out_specs[0][d] and m != n]
    inner = tuple(() if d in gathered else axes for d, axes in enumerate(out_specs[0]))
    block = local_shape(avals_in[0].shape, inner, ctx.mesh)
    sizes = tuple(block[d] if inner[d] else m for d, m in enumerate(slice_sizes))
    return _with_dims_whole(ctx, p.dynamic_slice_p, vals, specs, out_specs[0], gathered,
                            dict(slice_sizes=sizes))


partition_rules[p.dynamic_slice_p] = dynamic_slice_partition_rule


def dynamic_update_slice_partition_rule(ctx, vals, specs, out_specs, avals_in, avals_out):
    """Each device writes into its block where the update covers a split dim whole; a split
    dim it covers in part is gathered whole (operand and update), written, and this
    device's block kept."""
    gathered = [d for d, (m, n) in enumerate(zip(avals_in[1].shape, avals_in[0].shape))
                if out_specs[0][d] and m != n]
    return _with_dims_whole(ctx, p.dynamic_update_slice_p, vals, specs, out_specs[0],
                            gathered, {})


partition_rules[p.dynamic_update_slice_p] = dynamic_update_slice_partition_rule


def _with_dims_whole(ctx: Partitioner, prim: Primitive, vals: Sequence[Any],
                     specs: Sequence[Spec], out_spec: Spec, dims: Sequence[int],
                     params: dict[str, Any]) -> list[Any]:
    """``prim`` on blocks that hold ``dims`` whole (an all-gather of those, where split),
    then this device's block of the result (a slice: no bytes move)."""
    inner = tuple(() if d in dims else axes for d, axes in enumerate(out_spec))
    vals = [ctx.convert(v, s, inner) if len(s) else v for v, s in zip(vals, specs)]
    return [ctx.convert(prim.bind(*vals, **params), inner, out_spec)]


# --8<-- [start:rev_rule]
def rev_partition_rule(ctx, vals, specs, out_specs, avals_in, avals_out, *, dimensions):
    """Each device reverses its block, and the blocks along a reversed split dim trade
    places: block k goes to device n-1-k. Reversing a block's index over several mesh axes
    (major first) reverses its index along each axis, so one collective permute per axis.

    NB: XLA's SPMD partitioner does the same (spmd_partitioner.cc, HandleReverse): the
    operand is resharded to the mirrored tile order, a collective permute, then each
    device reverses its block."""
    (x,), (spec,), (out_spec,) = vals, specs, out_specs
    x = p.rev_p.bind(ctx.convert(x, spec, out_spec), dimensions=dimensions)
    for d in dimensions:
        for name in out_spec[d]:
            n = ctx.mesh.shape[name]
            x = ppermute_p.bind(x, axis_name=name, perm=tuple((i, n - 1 - i) for i in range(n)))
    return [x]
# --8<-- [end:rev_rule]


partition_rules[p.rev_p] = rev_partition_rule


def _linalg_rule(prim: Primitive) -> PartitionRule:
    """Stage 1's linalg.py: each device decomposes the matrices of its batch block (the
    sharding rule keeps matrix dims whole), so the primitive runs on the blocks as they are;
    the conversions move nothing unless a layout was asked for that differs."""
    def rule(ctx, vals, specs, out_specs, avals_in, avals_out, **params):
        n = avals_in[0].ndim - linalg.LINALG[prim].ranks[0]  # the batch dims
        batch = tuple(out_specs[0][:n])
        vals = [ctx.convert(v, s, batch + unsplit(len(s) - n)) for v, s in zip(vals, specs)]
        outs = _bind(prim, vals, params)
        return [ctx.convert(o, batch + unsplit(len(s) - n), s) for o, s in zip(outs, out_specs)]
    return rule


for _prim in linalg.LINALG:
    partition_rules[_prim] = _linalg_rule(_prim)

# Poisson's rounds couple one key's samples: run it whole (rare, and host-bound anyway).
partition_rules[random_distributions.random_poisson_p] = generic_rule(
    random_distributions.random_poisson_p)


def slice_partition_rule(ctx, vals, specs, out_specs, avals_in, avals_out, *, start_indices,
                         limit_indices, strides):
    """A split dim whose blocks each keep their own elements is sliced block by block: the
    slice takes all of it, or steps through every block alike (``x[::2]`` of blocks of even
    size). Another sliced split dim is gathered whole, sliced, and this device's block kept.

    NB: XLA's SPMD partitioner (HandleSlice) fetches only the neighbouring elements a block
    needs (a halo exchange by collective permutes) where it can; gathering is simpler and
    moves more bytes."""
    (spec,), (out_spec,) = specs, out_specs
    strides = strides or (1,) * len(spec)
    in_block = local_shape(avals_in[0].shape, out_spec, ctx.mesh)
    out_block = local_shape(avals_out[0].shape, out_spec, ctx.mesh)
    limits, gathered = list(limit_indices), []
    for d, (lo, step, b, m) in enumerate(zip(start_indices, strides, in_block, out_block)):
        if not out_spec[d]:
            continue
        if m * step == b and lo + (m - 1) * step < b:  # output block k from input block k
            limits[d] = lo + (m - 1) * step + 1
        else:
            gathered.append(d)
    params = dict(start_indices=start_indices, limit_indices=tuple(limits), strides=strides)
    return _with_dims_whole(ctx, p.slice_p, vals, specs, out_spec, gathered, params)


partition_rules[p.slice_p] = slice_partition_rule


def pad_partition_rule(ctx, vals, specs, out_specs, avals_in, avals_out, *, padding_config):
    """A padded split dim is gathered whole, padded, and this device's block kept (its
    elements move by a stride and an offset that need not keep blocks on their devices);
    an unpadded one is padded block by block."""
    padded = [d for d, cfg in enumerate(padding_config)
              if out_specs[0][d] and tuple(cfg) != (0, 0, 0)]
    return _with_dims_whole(ctx, p.pad_p, vals, specs, out_specs[0], padded,
                            dict(padding_config=padding_config))


partition_rules[p.pad_p] = pad_partition_rule


def _reduce_window_rule(prim: Primitive) -> PartitionRule:
    """Dims whose window is one element (stride 1, no padding or dilation) are reduced block
    by block; the others are gathered whole first (windows straddle blocks)."""
    def rule(ctx, vals, specs, out_specs, avals_in, avals_out, **params):
        trivial = (1, 1, (0, 0), 1, 1)
        spanning = [d for d, window in enumerate(zip(*params.values())) if window != trivial]
        return _with_dims_whole(ctx, prim, vals, specs, out_specs[0], spanning, params)
    return rule


for _prim in p.REDUCE_WINDOWS:
    partition_rules[_prim] = _reduce_window_rule(_prim)


def conv_general_dilated_partition_rule(ctx, vals, specs, out_specs, avals_in, avals_out,
                                        **params):
    """Each device convolves its block of the batch with the whole kernel: the lhs keeps
    only its batch split (none with batch groups, which mix examples), the kernel is whole;
    the result's other splits are then slices of it (no bytes move). A contracted feature
    dim split alike in both operands (a kernel's cotangent, whose contraction runs over the
    batch) stays split: each device sums its share, then ``psum`` adds the shares."""
    (lhs, rhs), (lhs_spec, rhs_spec), (out,) = vals, specs, out_specs
    dn = params["dimension_numbers"]
    batch = out[dn.out_spec[0]] if params["batch_group_count"] == 1 else ()
    contracted = lhs_spec[dn.lhs_spec[1]]
    if contracted != rhs_spec[dn.rhs_spec[1]] or params["feature_group_count"] != 1 or any(
            a in batch for a in contracted):
        contracted = ()
    lhs_target, rhs_target, inner = [()] * len(lhs_spec), [()] * len(rhs_spec), [()] * len(out)
    lhs_target[dn.lhs_spec[0]] = inner[dn.out_spec[0]] = batch
    lhs_target[dn.lhs_spec[1]] = rhs_target[dn.rhs_spec[1]] = contracted
    lhs = ctx.convert(lhs, lhs_spec, tuple(lhs_target))
    rhs = ctx.convert(rhs, rhs_spec, tuple(rhs_target))
    y = p.conv_general_dilated_p.bind(lhs, rhs, **dict(params, out_sharding=None))
    for name in contracted:
        y = psum_p.bind(y, axis_name=name)
    return [ctx.convert(y, tuple(inner), out)]


partition_rules[p.conv_general_dilated_p] = conv_general_dilated_partition_rule


def concatenate_partition_rule(ctx, vals, specs, out_specs, avals_in, avals_out, *,
                               dimension):
    """Concatenated along a split dim: the operands are gathered along it, joined, and this
    device's block kept. Along an unsplit dim the blocks are joined where they are.

    NB: XLA's SPMD partitioner (HandleConcatenate) does much the same with an all-reduce:
    each device writes its pieces into a zeroed buffer of the whole result, the buffers are
    summed, and each device keeps its block."""
    dims = [dimension] if out_specs[0][dimension] else []
    return _with_dims_whole(ctx, p.concatenate_p, vals, specs, out_specs[0], dims,
                            dict(dimension=dimension))


partition_rules[p.concatenate_p] = concatenate_partition_rule


def broadcast_in_dim_partition_rule(ctx, vals, specs, out_specs, avals_in, avals_out, *,
                                    shape, broadcast_dimensions, out_sharding=None):
    (x,), (spec,), (out_spec,), (aval,) = vals, specs, out_specs, avals_in
    dims = tuple(broadcast_dimensions)
    wanted = tuple(out_spec[d] if aval.shape[i] == shape[d] else ()
                   for i, d in enumerate(dims))
    x = ctx.convert(x, spec, wanted)
    out = p.broadcast_in_dim_p.bind(x, shape=local_shape(shape, out_spec, ctx.mesh),
                                    broadcast_dimensions=dims)
    return [ctx.note(out, "broadcast", (x, dims))]


partition_rules[p.broadcast_in_dim_p] = broadcast_in_dim_partition_rule


# --8<-- [start:reshape_rule]
def reshape_partition_rule(ctx, vals, specs, out_specs, avals_in, avals_out, *, new_sizes,
                           dimensions, out_sharding=None):
    """The reshape, run by run: a run of dims that becomes a run of new dims (the finest
    such runs) is reshaped block by block where each device's block is one contiguous range
    of the run's elements, the same range before and after (``8@data,3`` to ``24@data``).
    Other runs are gathered whole, reshaped, and this device's block kept (``8@x,4@y`` to
    ``32@(x,y)``: the elements of a block change devices).

    NB: XLA's SPMD partitioner (HandleReshape) also reshapes blocks where the sharding
    allows, and otherwise reshards the operand first."""
    (x,), (spec,), (out_spec,) = vals, specs, out_specs
    shape = avals_in[0].shape
    old_whole, new_whole = [], []
    for old_run, new_run in _matching_runs(shape, new_sizes):
        axes = _contiguous_axes(shape, spec, old_run, ctx.mesh)
        if axes is None or axes != _contiguous_axes(new_sizes, out_spec, new_run, ctx.mesh):
            old_whole += old_run
            new_whole += new_run
    inner_in = tuple(() if d in old_whole else axes for d, axes in enumerate(spec))
    inner_out = tuple(() if d in new_whole else axes for d, axes in enumerate(out_spec))
    x = ctx.convert(x, spec, inner_in)
    new_local = local_shape(new_sizes, inner_out, ctx.mesh)
    if tuple(get_aval(x).shape) != new_local:  # else the same blocks (peepholes still see x)
        x = p.reshape_p.bind(x, new_sizes=new_local, dimensions=dimensions)
    return [ctx.convert(x, inner_out, out_spec)]


def _matching_runs(shape: Sequence[int],
                   new_sizes: Sequence[int]) -> list[tuple[list[int], list[int]]]:
    """Runs of dims, each with the run of new dims it becomes (equal sizes, one each side
    where it can); a run on one side may be empty (dims of size 1)."""
    if math.prod(shape) == 0:  # no elements: one run, nothing to keep in place
        return [(list(range(len(shape))), list(range(len(new_sizes))))]
    runs, i, j = [], 0, 0
    while i < len(shape) or j < len(new_sizes):
        old_run, new_run = [i] if i < len(shape) else [], [j] if j < len(new_sizes) else []
        old_size = shape[i] if old_run else 1
        new_size = new_sizes[j] if new_run else 1
        i, j = i + len(old_run), j + len(new_run)
        while old_size != new_size:
            if old_size < new_size:
                old_size *= shape[i]
                old_run.append(i)
                i += 1
            else:
                new_size *= new_sizes[j]
                new_run.append(j)
                j += 1
        runs.append((old_run, new_run))
    return runs


def _contiguous_axes(shape: Sequence[int], spec: Spec, run: Sequence[int],
                     mesh: Mesh) -> tuple[str, ...] | None:
    """The mesh axes splitting a run of dims, major first, when each device's block is one
    contiguous range of the run's elements: dims of size 1 before the split dims, blocks of
    one element in every split dim but the last, whole dims after it. None when it is not."""
    split = [d for d in run if spec[d]]
    if not split:
        return ()
    block = local_shape(shape, spec, mesh)
    if any(shape[d] != 1 for d in run if d < split[0]):
        return None
    if any(block[d] != 1 for d in run if split[0] <= d < split[-1]):
        return None
    return tuple(name for d in split for name in spec[d])
# --8<-- [end:reshape_rule]


partition_rules[p.reshape_p] = reshape_partition_rule


# --8<-- [start:reduction_rule]
def _reduction(prim: Primitive, combine: Primitive | None) -> PartitionRule:
    """Reduce the block, then combine the partial results of the devices that split a
    reduced dim (an all-reduce). Without a combining collective (a product, an argmax), the
    reduced dims are gathered first."""
    def rule(ctx, vals, specs, out_specs, avals_in, avals_out, *, axes, **params):
        (x,), (spec,) = vals, specs
        if combine is None:
            x, spec = ctx.gather_whole(x, spec, axes)
        out = prim.bind(x, axes=axes, **params)
        names = [name for d in axes for name in spec[d]]
        if names:
            partial = out
            for name in names:
                out = combine.bind(out, axis_name=name)
            if combine is psum_p:
                ctx.note(out, "psum", (partial, names))
        kept = tuple(s for d, s in enumerate(spec) if d not in axes)
        return [ctx.convert(out, kept, out_specs[0])]
    return rule
# --8<-- [end:reduction_rule]


for _prim, _combine in [(p.reduce_sum_p, psum_p), (p.reduce_max_p, pmax_p),
                        (p.reduce_min_p, pmin_p), (p.reduce_or_p, pmax_p),
                        (p.reduce_and_p, pmin_p), (p.reduce_prod_p, None),
                        (p.argmax_p, None), (p.argmin_p, None)]:
    partition_rules[_prim] = _reduction(_prim, _combine)


# --8<-- [start:dot_general_rule]
def dot_general_partition_rule(ctx, vals, specs, out_specs, avals_in, avals_out, *,
                               dimension_numbers, preferred_element_type, out_sharding=None):
    """Contracting dims split alike on both sides: local products are partial sums, combined
    by ``psum`` (or ``psum_scatter`` into a result split over the same axis). Split on one
    side only: that operand is gathered along it, or the other one is sliced to match and
    the partial sums all-reduced, whichever moves fewer bytes. Batch dims are brought to one
    layout; free dims keep theirs."""
    (x, y), (xs, ys) = vals, [list(s) for s in specs]
    (lc, rc), (lb, rb) = dimension_numbers
    partial: list[str] = []
    for dx, dy in zip(lc, rc):
        if xs[dx] and not ys[dy] and _cheaper_to_slice(ctx, avals_in[0], xs, dx, ys,
                                                       avals_out[0], out_specs[0]):
            ys[dy] = xs[dx]
        elif ys[dy] and not xs[dx] and _cheaper_to_slice(ctx, avals_in[1], ys, dy, xs,
                                                         avals_out[0], out_specs[0]):
            xs[dx] = ys[dy]
        if xs[dx] and xs[dx] == ys[dy]:
            partial += xs[dx]
        else:
            xs[dx] = ys[dy] = ()
    _distinct_axes(xs, ys, lb, rb, rc)
    x, y = ctx.convert(x, specs[0], tuple(xs)), ctx.convert(y, specs[1], tuple(ys))
    out = p.dot_general_p.bind(x, y, dimension_numbers=dimension_numbers, out_sharding=None,
                               preferred_element_type=preferred_element_type)
    x_free = [xs[d] for d in range(len(xs)) if d not in lc and d not in lb]
    y_free = [ys[d] for d in range(len(ys)) if d not in rc and d not in rb]
    natural = [tuple(xs[d]) for d in lb] + [tuple(a) for a in x_free + y_free]
    wanted = out_specs[0]
    remaining = []
    for name in partial:  # into a dim that wants this axis next: a reduce-scatter
        d = next((d for d in range(len(wanted)) if wanted[d][:len(natural[d]) + 1]
                  == natural[d] + (name,)), None)
        if d is None:
            remaining.append(name)
        else:
            out = psum_scatter_p.bind(out, axis_name=name, scatter_dimension=d, tiled=True)
            natural[d] = natural[d] + (name,)
    if remaining:
        partial_out = out
        for name in remaining:
            out = psum_p.bind(out, axis_name=name)
        ctx.note(out, "psum", (partial_out, remaining))
    return [ctx.convert(out, tuple(natural), wanted)]
# --8<-- [end:dot_general_rule]


partition_rules[p.dot_general_p] = dot_general_partition_rule


def _distinct_axes(xs: list, ys: list, lb, rb, rc) -> None:
    """Batch dims brought to one layout, and no mesh axis splitting two dims of the product:
    a batch dim whose split the other dims already use is gathered on both sides, and so is
    a free dim of ``y`` split over an axis that ``x`` uses (``x @ x.T`` with ``x``'s rows
    split: each device's rows times its own rows would be only the diagonal blocks)."""
    for dx, dy in zip(lb, rb):
        if xs[dx] != ys[dy]:
            both = xs[dx] or ys[dy]
            others = {a for k, s in enumerate(xs) if k != dx for a in s}
            others |= {a for k, s in enumerate(ys) if k != dy for a in s}
            xs[dx] = ys[dy] = () if others & set(both) else both
    used_by_x = {a for s in xs for a in s}
    for d in range(len(ys)):
        if d not in rc and d not in rb and used_by_x & set(ys[d]):
            ys[d] = ()


def _cheaper_to_slice(ctx, split_aval, split_spec, dim, other_spec, out_aval, out_spec) -> bool:
    """A contracting dim split on one side only: gathering that operand costs (N-1) of its
    blocks per device; slicing the other operand to match (free) and all-reducing the partial
    products costs 2 (N-1)/N of a result block. Which moves fewer bytes?"""
    axes = split_spec[dim]
    if any(a in names for names in other_spec for a in axes):
        return False  # the other operand already splits another dim over these axes
    n = math.prod(ctx.mesh.shape[a] for a in axes)
    block = math.prod(local_shape(split_aval.shape, split_spec, ctx.mesh))
    result = math.prod(local_shape(out_aval.shape, out_spec, ctx.mesh))
    return 2 * (n - 1) / n * result < (n - 1) * block


def gather_partition_rule(ctx, vals, specs, out_specs, avals_in, avals_out, *,
                          dimension_numbers, slice_sizes, **params):
    """Each device gathers from its block: the operand keeps its splits on whole-dim windows
    (and batching dims, matched by the indices'), the indices are laid out as the result's
    batch dims. A split window reads the whole local block: its slice size is the block's."""
    (operand, indices), (os_, is_), (out,) = vals, specs, out_specs
    dn = dimension_numbers
    window = window_operand_dims(len(os_), dn.collapsed_slice_dims, dn.operand_batching_dims)
    batch = [out[d] for d in range(len(out)) if d not in dn.offset_dims]
    operand_spec = [()] * len(os_)
    for d, o in zip(window, dn.offset_dims):
        operand_spec[d] = out[o]
    for d, i in zip(dn.operand_batching_dims, dn.start_indices_batching_dims):
        operand_spec[d] = batch[i]
    operand = ctx.convert(operand, os_, tuple(operand_spec))
    indices = ctx.convert(indices, is_, (*batch, ()))
    block = local_shape(avals_in[0].shape, operand_spec, ctx.mesh)
    sizes = tuple(block[d] if operand_spec[d] else n for d, n in enumerate(slice_sizes))
    return [p.gather_p.bind(operand, indices, dimension_numbers=dn, slice_sizes=sizes,
                            **params)]


partition_rules[p.gather_p] = gather_partition_rule


def _scatter_rule(prim: Primitive) -> PartitionRule:
    """Each device scatters into its block of the operand: the updates' window dims take the
    operand's splits, their other dims (and the indices) are whole but for batching dims,
    split as the operand's."""
    def rule(ctx, vals, specs, out_specs, avals_in, avals_out, *, dimension_numbers,
             **params):
        (operand, indices, updates), (os_, is_, us), (out,) = vals, specs, out_specs
        dn = dimension_numbers
        window = window_operand_dims(len(out), dn.inserted_window_dims,
                                     dn.operand_batching_dims)
        update_spec = [()] * len(us)
        for d, u in zip(window, dn.update_window_dims):
            update_spec[u] = out[d]
        index_spec = [()] * len(is_)
        scatter_dims = [u for u in range(len(us)) if u not in dn.update_window_dims]
        for d, i in zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims):
            index_spec[i] = update_spec[scatter_dims[i]] = out[d]
        operand = ctx.convert(operand, os_, out)
        indices = ctx.convert(indices, is_, tuple(index_spec))
        updates = ctx.convert(updates, us, tuple(update_spec))
        return [prim.bind(operand, indices, updates, dimension_numbers=dn, **params)]
    return rule


for _prim in p.SCATTERS:
    partition_rules[_prim] = _scatter_rule(_prim)


# --8<-- [start:inline_rules]
def jit_partition_rule(ctx, vals, specs, out_specs, avals_in, avals_out, *, jaxpr, **params):
    """A nested program is partitioned in place (its avals carry shardings too)."""
    inner = [spec_of_aval(a) for a in jaxpr.in_avals]
    vals = [ctx.convert(v, s, t) for v, s, t in zip(vals, specs, inner)]
    outs = ctx.run(jaxpr.jaxpr, jaxpr.consts, vals, inner)
    return [ctx.convert(v, s, t) for (v, s), t in zip(outs, out_specs)]


partition_rules[jit_p] = jit_partition_rule


def custom_vjp_partition_rule(ctx, vals, specs, out_specs, avals_in, avals_out, *,
                              call_jaxpr, **params):
    return jit_partition_rule(ctx, vals, specs, out_specs, avals_in, avals_out,
                              jaxpr=call_jaxpr)


partition_rules[custom_vjp_call_p] = custom_vjp_partition_rule
partition_rules[custom_jvp_call_p] = custom_vjp_partition_rule  # the same: a call
partition_rules[remat_p] = jit_partition_rule  # a call too (stage 2's remat.py)
# --8<-- [end:inline_rules]


def _once_rule(prim):
    """The global values on every device; the runtime runs the effect ``once`` (its host
    rule): a print, or an io_callback, whose results every device gets."""
    def rule(ctx, vals, specs, out_specs, avals_in, avals_out, **params):
        whole = [ctx.convert(v, s, unsplit(len(s))) for v, s in zip(vals, specs)]
        return _bind(prim, whole, {**params, "once": True})
    return rule


partition_rules[debug_print_p] = _once_rule(debug_print_p)
partition_rules[io_callback_p] = _once_rule(io_callback_p)
# A callback is called with the global values on every device, each getting the whole
# (replicated) results. NB: XLA calls it once, on one device, and sends the results on.
partition_rules[pure_callback_p] = generic_rule(pure_callback_p)


# ------------------------------------------------------------------------------------------
# The whole program
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Partitioned:
    """A global program lowered for a mesh: the per-device program, and the layouts of the
    global program's arguments and results."""
    global_program: ClosedJaxpr
    local: ClosedJaxpr
    mesh: Mesh
    in_specs: list[Spec]
    out_specs: list[Spec]


# --8<-- [start:trace_local]
def trace_local(fun: Callable[..., list[Any]], mesh: Mesh,
                avals: Sequence[ShapedArray]) -> ClosedJaxpr:
    """Traces a per-device program: ``fun`` sees blocks, and collectives over ``mesh``'s
    axes are staged into the program (the axes are bound while it runs)."""
    def with_mesh_axes(*args):
        main = trace_state.dynamic_trace
        axes = [BoundAxis(main, AxisData(name, size)) for name, size in mesh.shape.items()]
        bound_axes.extend(axes)
        try:
            return fun(*args)
        finally:
            del bound_axes[-len(axes):]

    jaxpr, consts = trace_to_jaxpr(with_mesh_axes, list(avals))
    return ClosedJaxpr(dce(jaxpr), consts)  # an all-reduce a reduce-scatter replaced goes
# --8<-- [end:trace_local]


_partitioned: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


# --8<-- [start:partition]
def partition(program: ClosedJaxpr, mesh: Mesh) -> Partitioned:
    """The per-device program of ``program``, made once and kept with it."""
    cached = _partitioned.get(program)
    if cached is not None and cached.mesh == mesh:
        return cached
    in_specs = [spec_of_aval(a) for a in program.in_avals]
    out_specs = [spec_of_aval(a) for a in program.out_avals]
    local = trace_local_program(mesh, program)
    result = Partitioned(program, local, mesh, in_specs, out_specs)
    _partitioned[program] = result
    return result
# --8<-- [end:partition]


def trace_local_program(mesh: Mesh, program: ClosedJaxpr) -> ClosedJaxpr:
    """The per-device program of ``program``: blocks in, blocks out, laid out as its types
    say (also for the programs a loop or a branch holds)."""
    in_specs = [spec_of_aval(a) for a in program.in_avals]
    out_specs = [spec_of_aval(a) for a in program.out_avals]

    def per_device(*blocks):
        ctx = Partitioner(mesh)
        outs = ctx.run(program.jaxpr, program.consts, blocks, in_specs)
        return [ctx.convert(v, s, t) for (v, s), t in zip(outs, out_specs)]

    return trace_local(per_device, mesh, [local_aval(a, mesh) for a in program.in_avals])


def is_sharded(program: ClosedJaxpr) -> bool:
    """Whether a program has sharded types anywhere (then it runs through the partitioner)."""
    jaxpr = program.jaxpr
    return any(v.aval.sharding is not None for v in [*jaxpr.invars, *jaxpr.outvars]
               if isinstance(v, Var)) or any(
        v.aval.sharding is not None for eqn in jaxpr.eqns for v in eqn.outvars)

