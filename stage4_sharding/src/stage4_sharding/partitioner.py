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
reduce-scatter too (XLA's ReduceScatterCreator does the same).

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
    ShapedArray,
    get_aval,
    impl_rules,
    jvp_rules,
    trace_state,
    vjp_rules,
)
from stage2_jit.abstract_eval import abstract_eval_rules
from stage2_jit.codegen_cpu import ELEMENTWISE
from stage2_jit.debug import debug_print_p
from stage2_jit.jaxpr import ClosedJaxpr, Jaxpr, Literal, Var
from stage2_jit.jit import jit_p
from stage2_jit.passes import dce
from stage2_jit.tracing import trace_to_jaxpr
from stage3_vmap.batching import AxisData, BoundAxis, axis_frame, batching_rules, bound_axes
from stage3_vmap.collectives import (
    all_gather_p,
    all_to_all_p,
    pmax_p,
    pmin_p,
    psum_p,
    psum_scatter_p,
)

from stage1_autodiff import primitives as p

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


def _same_layout(prim: Primitive, params_for: Callable | None = None) -> PartitionRule:
    """Each operand of the result's rank brought to the result's layout, then the same
    primitive on the blocks: elementwise ops, and ops whose rule keeps every split dim whole
    on its own (transpose permutes the spec; sort, rev, pad, concatenate need whole only
    the dims they touch)."""
    def rule(ctx, vals, specs, out_specs, avals_in, avals_out, **params):
        target = out_specs[0]
        vals = [ctx.convert(v, s, _operand_target(prim, a, target, params))
                if a.ndim else v for v, s, a in zip(vals, specs, avals_in)]
        if params_for is not None:
            params = params_for(ctx, avals_in, avals_out, out_specs, **params)
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


for _prim in [*ELEMENTWISE, p.threefry2x32_p, p.transpose_p, p.squeeze_p, p.rev_p, p.sort_p,
              p.pad_p, p.concatenate_p]:
    partition_rules[_prim] = _same_layout(_prim)


def _local_slice_params(ctx, avals_in, avals_out, out_specs, *, start_indices, limit_indices,
                        strides):
    """A split dim is not sliced (the sharding rule saw to that): its limit is the block's."""
    block = local_shape(avals_in[0].shape, out_specs[0], ctx.mesh)
    limits = tuple(block[d] if out_specs[0][d] else hi for d, hi in enumerate(limit_indices))
    return dict(start_indices=start_indices, limit_indices=limits, strides=strides)


partition_rules[p.slice_p] = _same_layout(p.slice_p, _local_slice_params)


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


def reshape_partition_rule(ctx, vals, specs, out_specs, avals_in, avals_out, *, new_sizes,
                           dimensions):
    """The sharding rule kept a split only on a dim the reshape leaves whole and in place,
    so the blocks reshape on their own."""
    new_local = local_shape(new_sizes, out_specs[0], ctx.mesh)
    if dimensions is None and tuple(get_aval(vals[0]).shape) == new_local:
        return [vals[0]]  # the same shape: nothing to do (and the peepholes still see it)
    return [p.reshape_p.bind(vals[0], new_sizes=new_local, dimensions=dimensions)]


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
    for dx, dy in zip(lb, rb):
        if xs[dx] != ys[dy]:
            xs[dx] = ys[dy] = xs[dx] or ys[dy]
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


def gather_partition_rule(ctx, vals, specs, out_specs, avals_in, avals_out):
    """Indices' batch dims and the operand's unindexed dims keep their splits: each device
    gathers its block (gather has no shape parameter)."""
    (operand, indices), (os_, is_), (out,) = vals, specs, out_specs
    k = avals_in[1].shape[-1]
    nbatch = avals_in[1].ndim - 1
    operand = ctx.convert(operand, os_, ((),) * k + tuple(out[nbatch:]))
    indices = ctx.convert(indices, is_, tuple(out[:nbatch]) + ((),))
    return [p.gather_p.bind(operand, indices)]


partition_rules[p.gather_p] = gather_partition_rule


def _scatter_rule(prim: Primitive) -> PartitionRule:
    def rule(ctx, vals, specs, out_specs, avals_in, avals_out):
        (operand, indices, updates), (os_, is_, us), (out,) = vals, specs, out_specs
        k = avals_in[1].shape[-1]
        nbatch = avals_in[1].ndim - 1
        operand = ctx.convert(operand, os_, out)
        indices = ctx.convert(indices, is_, unsplit(len(is_)))
        updates = ctx.convert(updates, us, ((),) * nbatch + tuple(out[k:]))
        return [prim.bind(operand, indices, updates)]
    return rule


for _prim in [p.scatter_p, p.scatter_add_p, p.scatter_mul_p, p.scatter_min_p,
              p.scatter_max_p]:
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
# --8<-- [end:inline_rules]


def debug_print_partition_rule(ctx, vals, specs, out_specs, avals_in, avals_out, **params):
    """Prints the global values once per device that runs it."""
    whole = [ctx.convert(v, s, unsplit(len(s))) for v, s in zip(vals, specs)]
    return _bind(debug_print_p, whole, params)


partition_rules[debug_print_p] = debug_print_partition_rule


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

