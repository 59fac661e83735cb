"""Batching rules of structured control flow (``cond``, ``while``, ``scan``).

Each rule batches the programs the primitive holds (traced again on batched types), and
keeps the primitive: a batched loop is still one loop.

- ``cond`` with an unbatched index stays a ``cond`` of batched branches. With a batched
  index the members take different branches, so every branch runs on the whole batch and
  ``select_n`` picks each member's result.
- ``while`` and ``scan``: a carry that the body makes batched must be batched from the
  start (its type cannot change between steps), so the rule finds the batched carries by
  iterating to a fixed point. A ``while`` whose predicate is batched runs until every member
  is done; the members already done keep their carry (a ``select_n`` in the body).
- ``scan`` slices its ``xs`` along dim 0, so their batch dim goes to dim 1 (and the stacked
  ``ys`` come out batched at dim 1).

NB: JAX's are ``_cond_batching_rule``, ``_while_loop_batching_rule`` and
``_scan_batching_rule`` in jax/_src/lax/control_flow/, which find the batched carries the
same way.
"""

from __future__ import annotations

from typing import Any

from stage1_autodiff.core import get_aval
from stage2_jit.control_flow import cond_p, join_consts, scan_p, step_aval, while_p
from stage2_jit.derived import trace_flat
from stage2_jit.jaxpr import ClosedJaxpr
from stage2_jit.tracing import jaxpr_as_fun

from stage1_autodiff import prims as lax

from .batching import (
    AxisData,
    _laid_out_as,
    _with_batch,
    batch_fun,
    batching_rules,
    bdim_at,
    not_mapped,
)


def batch_program(program: ClosedJaxpr, axis_data: AxisData, in_batched: list[bool],
                  force_out: list[bool] | None = None, operands: list | None = None
                  ) -> tuple[ClosedJaxpr, list[Any], list[bool]]:
    """``program`` over a batch: inputs batched at dim 0 where ``in_batched``; outputs
    batched at dim 0 where the batch reaches them or ``force_out`` says. Returns the
    program, the constants it takes first, and which outputs are batched. ``operands``: the
    types of the values the primitive will pass the program, where known; their shardings
    (stage 4's) become the inputs' (a batched carry split over a mesh stays split)."""
    size = axis_data.size
    avals = [_with_batch(a, 0, size) if b else a for a, b in zip(program.in_avals, in_batched)]
    if operands is not None:
        avals = [_laid_out_as(a, o) for a, o in zip(avals, operands)]
    batched_out: list[list[bool]] = []

    def run(*args):
        dims = [0 if b else not_mapped for b in in_batched]
        outs, out_dims = batch_fun(jaxpr_as_fun(program), axis_data, list(args), dims)
        force = force_out or [False] * len(outs)
        batched = [f or d is not not_mapped for f, d in zip(force, out_dims)]
        batched_out.append(batched)
        return [bdim_at(o, d, 0, axis_data) if b else o
                for o, d, b in zip(outs, out_dims, batched)]

    traced, consts = trace_flat(run, avals)
    return traced, consts, batched_out[0]


def _at(values: list, dims: list, dst: int, axis_data: AxisData,
        wanted: list[bool] | None = None):
    """Each value batched at ``dst`` where batched (or where ``wanted``: broadcast)."""
    wanted = wanted or [d is not not_mapped for d in dims]
    return [bdim_at(v, d, dst, axis_data) if w else v for v, d, w in zip(values, dims, wanted)]


# --8<-- [start:cond_batching]
def cond_batching_rule(axis_data: AxisData, vals, dims, *, branches):
    index, index_dim = vals[0], dims[0]
    operands = _at(list(vals[1:]), list(dims[1:]), 0, axis_data)
    in_batched = [d is not not_mapped for d in dims[1:]]
    n_out = len(branches[0].out_avals)
    if index_dim is not_mapped:  # one branch for all: a cond of batched branches
        types = [get_aval(o) for o in operands]
        first = [batch_program(b, axis_data, in_batched, operands=types)[2] for b in branches]
        force = [any(f[k] for f in first) for k in range(n_out)]
        traced = [batch_program(b, axis_data, in_batched, force, types) for b in branches]
        programs, consts = join_consts([(p, c) for p, c, _ in traced])
        outs = cond_p.bind(index, *consts, *operands, branches=tuple(programs))
        return list(outs), [0 if f else not_mapped for f in force]
    # Each member its own branch: all branches on the whole batch, then pick per member.
    # --8<-- [start:task2_11]
    index = bdim_at(index, index_dim, 0, axis_data)
    per_branch = []
    for branch in branches:
        outs, out_dims = batch_fun(jaxpr_as_fun(branch), axis_data, operands,
                                   [0 if b else not_mapped for b in in_batched])
        per_branch.append([bdim_at(o, d, 0, axis_data) for o, d in zip(outs, out_dims)])
    results = []
    for k in range(n_out):
        cases = [outs[k] for outs in per_branch]
        shape = get_aval(cases[0]).shape
        which = lax.broadcast_in_dim(index, shape, (0,))
        results.append(lax.select_n(which, *cases))
    return results, [0] * n_out
    # --8<-- [end:task2_11]
# --8<-- [end:cond_batching]


batching_rules[cond_p] = cond_batching_rule


def _carry_fixed_point(body: ClosedJaxpr, axis_data: AxisData, consts_batched: list[bool],
                       carry_batched: list[bool], rest_batched: list[bool]) -> list[bool]:
    """The carries that end up batched: those given batched, and those the body batches."""
    while True:
        out = batch_program(body, axis_data, consts_batched + carry_batched + rest_batched)[2]
        new = [a or b for a, b in zip(carry_batched, out[:len(carry_batched)])]
        if new == carry_batched:
            return carry_batched
        carry_batched = new


# --8<-- [start:while_batching]
def while_batching_rule(axis_data: AxisData, vals, dims, *, cond_jaxpr, body_jaxpr,
                        cond_nconsts, body_nconsts):
    vals = _at(list(vals), list(dims), 0, axis_data)
    batched = [d is not not_mapped for d in dims]
    cc, bc = vals[:cond_nconsts], vals[cond_nconsts:cond_nconsts + body_nconsts]
    carry = vals[cond_nconsts + body_nconsts:]
    cc_b, bc_b = batched[:cond_nconsts], batched[cond_nconsts:cond_nconsts + body_nconsts]
    carry_b = _carry_fixed_point(body_jaxpr, axis_data, bc_b,
                                 batched[cond_nconsts + body_nconsts:], [])
    pred_batched = batch_program(cond_jaxpr, axis_data, cc_b + carry_b)[2][0]
    if pred_batched:
        carry_b = [True] * len(carry)
    carry = [bdim_at(c, not_mapped, 0, axis_data) if want and not has else c
             for c, want, has in zip(carry, carry_b, batched[cond_nconsts + body_nconsts:])]
    if not pred_batched:  # all members stop together
        carry_types = [get_aval(c) for c in carry]
        body, body_consts, _ = batch_program(body_jaxpr, axis_data, bc_b + carry_b, carry_b,
                                             [*map(get_aval, bc), *carry_types])
        pred, pred_consts, _ = batch_program(cond_jaxpr, axis_data, cc_b + carry_b,
                                             operands=[*map(get_aval, cc), *carry_types])
        outs = while_p.bind(*pred_consts, *cc, *body_consts, *bc, *carry, cond_jaxpr=pred,
                            body_jaxpr=body, cond_nconsts=len(pred_consts) + len(cc),
                            body_nconsts=len(body_consts) + len(bc))
        return list(outs), [0 if b else not_mapped for b in carry_b]
    # Each member stops on its own: loop while any goes on; the others keep their carry.
    n_cc, n_bc = len(cc), len(bc)

    def member_predicates(cond_consts, carry_values):
        preds, pred_dims = batch_fun(jaxpr_as_fun(cond_jaxpr), axis_data,
                                     [*cond_consts, *carry_values],
                                     [0 if b else not_mapped for b in cc_b] + [0] * len(carry))
        return bdim_at(preds[0], pred_dims[0], 0, axis_data)

    def any_member(*args):
        return [lax.reduce_or(member_predicates(args[:n_cc], args[n_cc:]), (0,))]

    def step(*args):  # (cond consts, body consts, carry)
        cond_consts, body_consts = args[:n_cc], args[n_cc:n_cc + n_bc]
        old = args[n_cc + n_bc:]
        going = member_predicates(cond_consts, old)
        new, new_dims = batch_fun(jaxpr_as_fun(body_jaxpr), axis_data, [*body_consts, *old],
                                  [0 if b else not_mapped for b in bc_b] + [0] * len(old))
        new = [bdim_at(v, d, 0, axis_data) for v, d in zip(new, new_dims)]
        return [lax.select_n(lax.broadcast_in_dim(going, get_aval(o).shape, (0,)), o, n)
                for o, n in zip(old, new)]

    carry_avals = [get_aval(c) for c in carry]
    pred, pred_consts = trace_flat(any_member, [*map(get_aval, cc), *carry_avals])
    body, body_consts = trace_flat(step, [*map(get_aval, cc), *map(get_aval, bc), *carry_avals])
    outs = while_p.bind(*pred_consts, *cc, *body_consts, *cc, *bc, *carry, cond_jaxpr=pred,
                        body_jaxpr=body, cond_nconsts=len(pred_consts) + n_cc,
                        body_nconsts=len(body_consts) + n_cc + n_bc)
    return list(outs), [0] * len(carry)
# --8<-- [end:while_batching]


batching_rules[while_p] = while_batching_rule


# --8<-- [start:scan_batching]
def scan_batching_rule(axis_data: AxisData, vals, dims, *, jaxpr, length, reverse, num_consts,
                       num_carry, linear, unroll, _split_transpose):
    batched = [d is not not_mapped for d in dims]
    consts = _at(list(vals[:num_consts]), list(dims[:num_consts]), 0, axis_data)
    carry = _at(list(vals[num_consts:num_consts + num_carry]),
                list(dims[num_consts:num_consts + num_carry]), 0, axis_data)
    xs = _at(list(vals[num_consts + num_carry:]), list(dims[num_consts + num_carry:]), 1,
             axis_data)
    consts_b = batched[:num_consts]
    xs_b = batched[num_consts + num_carry:]
    carry_b = _carry_fixed_point(jaxpr, axis_data, consts_b,
                                 batched[num_consts:num_consts + num_carry], xs_b)
    carry = [bdim_at(c, not_mapped, 0, axis_data) if want and not has else c
             for c, want, has in zip(carry, carry_b, batched[num_consts:num_consts + num_carry])]
    n_y = len(jaxpr.out_avals) - num_carry
    types = [*map(get_aval, consts), *map(get_aval, carry),
             *(step_aval(get_aval(x)) for x in xs)]
    body, body_consts, out_b = batch_program(jaxpr, axis_data, consts_b + carry_b + xs_b,
                                             carry_b + [False] * n_y, types)
    outs = scan_p.bind(*body_consts, *consts, *carry, *xs, jaxpr=body, length=length,
                       reverse=reverse, num_consts=len(body_consts) + num_consts,
                       num_carry=num_carry,
                       linear=(False,) * (len(body_consts) + len(vals)), unroll=unroll,
                       _split_transpose=_split_transpose)
    return list(outs), ([0 if b else not_mapped for b in carry_b]
                        + [1 if b else not_mapped for b in out_b[num_carry:]])
# --8<-- [end:scan_batching]


batching_rules[scan_p] = scan_batching_rule
