"""Sharding and partition rules of structured control flow (``cond``, ``while``, ``scan``).

Types: a carry keeps its sharding (a body that changes it is an error naming the carry and
both types); a ``cond``'s branches must agree on their results' shardings; ``scan`` slices
its ``xs`` along dim 0, which must not be split, and stacks the ``ys`` along a new dim 0,
which is not split.

Partitioning: the primitive stays, with each program it holds partitioned on its own (a
per-device branch, body or predicate), so a loop over sharded values is still one loop
on every device. A body that needs a collective (it sums over a split dim, or contracts
one) keeps it inside: the runtime then steps through that loop itself, one iteration at a
time, with the collectives between the body's segments (``runtime.host_rules``).
"""

from __future__ import annotations

from stage2_jit.control_flow import cond_p, scan_p, while_p
from stage2_jit.jaxpr import ClosedJaxpr

from .partitioner import Partitioner, partition_rules, trace_local_program
from .sharded_types import spec_of_aval
from .sharding_rules import ShardingTypeError, Spec, describe, sharding_rules


def _specs(avals) -> list[Spec]:
    return [spec_of_aval(a) for a in avals]


def _check_kept(what: str, before, after) -> None:
    for k, (a, b) in enumerate(zip(before, after)):
        if spec_of_aval(a) != spec_of_aval(b):
            raise ShardingTypeError(
                f"{what}: carry {k} is {describe(a, spec_of_aval(a))} going in and "
                f"{describe(b, spec_of_aval(b))} coming out; a loop's carry keeps its "
                f"sharding. Reshard it inside the body (jax.sharding.reshard) to the "
                f"sharding it starts with.")


# ------------------------------------------------------------------------------------------
# Types
# ------------------------------------------------------------------------------------------


def cond_sharding_rule(avals, specs, *, branches):
    first = _specs(branches[0].out_avals)
    for k, branch in enumerate(branches[1:], 1):
        if _specs(branch.out_avals) != first:
            raise ShardingTypeError(
                f"cond branches give results of different shardings: branch 0 gives "
                f"{[describe(a, s) for a, s in zip(branches[0].out_avals, first)]}, branch "
                f"{k} gives {[describe(a, spec_of_aval(a)) for a in branch.out_avals]}. "
                f"Reshard the results in the branches so they agree.")
    return first


def while_sharding_rule(avals, specs, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    carry = avals[cond_nconsts + body_nconsts:]
    _check_kept("while_loop", carry, body_jaxpr.out_avals)
    return list(specs[cond_nconsts + body_nconsts:])


def scan_sharding_rule(avals, specs, *, jaxpr, length, reverse, num_consts, num_carry,
                       **params):
    carry = avals[num_consts:num_consts + num_carry]
    for aval, spec in zip(avals[num_consts + num_carry:], specs[num_consts + num_carry:]):
        if spec[0]:
            raise ShardingTypeError(
                f"scan got xs of type {describe(aval, spec)}: it steps along dim 0, which "
                f"is split. Reshard the xs with dim 0 whole (the other dims may stay split).")
    _check_kept("scan", carry, jaxpr.out_avals[:num_carry])
    return [*specs[num_consts:num_consts + num_carry],
            *[((),) + spec_of_aval(a) for a in jaxpr.out_avals[num_carry:]]]


sharding_rules[cond_p] = cond_sharding_rule
sharding_rules[while_p] = while_sharding_rule
sharding_rules[scan_p] = scan_sharding_rule


# ------------------------------------------------------------------------------------------
# Partitioning
# ------------------------------------------------------------------------------------------


def local_program(ctx: Partitioner, program: ClosedJaxpr) -> ClosedJaxpr:
    """The per-device program of a program held by a control-flow primitive (its avals carry
    their shardings, as the enclosing program's do)."""
    return trace_local_program(ctx.mesh, program)


def _operands(ctx, vals, specs, avals):
    return [ctx.convert(v, s, spec_of_aval(a)) for v, s, a in zip(vals, specs, avals)]


def cond_partition_rule(ctx, vals, specs, out_specs, avals_in, avals_out, *, branches):
    index = ctx.convert(vals[0], specs[0], ())
    local = tuple(local_program(ctx, b) for b in branches)
    operands = _operands(ctx, vals[1:], specs[1:], branches[0].in_avals)
    return list(cond_p.bind(index, *operands, branches=local))


def while_partition_rule(ctx, vals, specs, out_specs, avals_in, avals_out, *, cond_jaxpr,
                         body_jaxpr, cond_nconsts, body_nconsts):
    n_cc = cond_nconsts
    cond_in = _operands(ctx, vals[:n_cc] + vals[n_cc + body_nconsts:],
                        specs[:n_cc] + specs[n_cc + body_nconsts:], cond_jaxpr.in_avals)
    body_in = _operands(ctx, vals[n_cc:], specs[n_cc:], body_jaxpr.in_avals)
    cond_local = local_program(ctx, cond_jaxpr)
    body_local = local_program(ctx, body_jaxpr)
    return list(while_p.bind(*cond_in[:n_cc], *body_in, cond_jaxpr=cond_local,
                             body_jaxpr=body_local, cond_nconsts=n_cc,
                             body_nconsts=body_nconsts))


def scan_partition_rule(ctx, vals, specs, out_specs, avals_in, avals_out, *, jaxpr, length,
                        reverse, num_consts, num_carry, linear, unroll, _split_transpose):
    body_avals = jaxpr.in_avals
    n_fixed = num_consts + num_carry
    fixed = _operands(ctx, vals[:n_fixed], specs[:n_fixed], body_avals[:n_fixed])
    xs = [ctx.convert(v, s, ((),) + spec_of_aval(a))
          for v, s, a in zip(vals[n_fixed:], specs[n_fixed:], body_avals[n_fixed:])]
    body = local_program(ctx, jaxpr)
    return list(scan_p.bind(*fixed, *xs, jaxpr=body, length=length, reverse=reverse,
                            num_consts=num_consts, num_carry=num_carry, linear=linear,
                            unroll=unroll, _split_transpose=_split_transpose))


partition_rules[cond_p] = cond_partition_rule
partition_rules[while_p] = while_partition_rule
partition_rules[scan_p] = scan_partition_rule

