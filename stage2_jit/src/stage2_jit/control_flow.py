"""Structured control flow: ``cond``, ``switch``, ``while_loop``, ``fori_loop`` and ``scan``.

Under ``jit`` a Python ``if x > 0:`` on a traced ``x`` cannot be staged: tracing follows one
path, and ``bool(tracer)`` raises. These functions take the branches and loop bodies as
functions instead, trace them to jaxprs, and bind one primitive that holds them:

- ``cond_p`` (``cond`` and ``switch``): an index and the branches' operands; the branches
  are closed jaxprs of one type;
- ``while_p``: a predicate program and a body program over a carry of fixed type;
- ``scan_p``: a body over (carry, x) -> (carry, y), run ``length`` times along the leading
  dim of the ``xs``, stacking the ``ys``.

On concrete values, outside any transformation, ``cond`` and ``switch`` run as the ``if``
they stand for, so stage-1 code is unchanged. Once any operand is traced (``jit``, ``grad``,
``vmap``), they bind their primitive. The loops always trace their bodies and bind theirs, as
JAX's do, so a loop's carry is typed (and checked) the same way eagerly and under ``jit``.
Each primitive has a rule for every interpreter, like any other.

What a body closes over (values of an enclosing trace, constants) becomes leading operands
of the primitive (``*_consts``), as ``jit_p`` does with its constants.

NB: JAX's are in jax/_src/lax/control_flow/ (conditionals.py, loops.py); they print the same
way and have the same params, less the ones we do not need (``linear``, ``unroll`` are kept
for the printout's sake only).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from stage1_autodiff.autodiff import jvp, primal_below, vjp
from stage1_autodiff.core import (
    Array,
    Primitive,
    ShapedArray,
    Tracer,
    asarray,
    get_aval,
    impl_rules,
    jvp_rules,
    trace_state,
    vjp_rules,
    vjp_rules_take_needs,
    vjp_rules_take_none,
)
from stage1_autodiff.extension import set_while_loop
from stage1_autodiff.tree_util import (
    keystr,
    tree_flatten,
    tree_flatten_with_path,
    tree_map,
    tree_unflatten,
)

from stage1_autodiff import dtypes
from stage1_autodiff import prims as lax

from .abstract_eval import abstract_eval_rules
from .derived import is_inexact, jvp_program, split_tangents, trace_flat, vjp_program
from .jaxpr import ClosedJaxpr, Jaxpr, Var
from .tracing import eval_jaxpr, jaxpr_as_fun

cond_p = Primitive("cond", multiple_results=True)
while_p = Primitive("while", multiple_results=True)
scan_p = Primitive("scan", multiple_results=True)


# ------------------------------------------------------------------------------------------
# Helpers
# ------------------------------------------------------------------------------------------


def _concrete(*trees: Any) -> bool:
    """True outside any transformation and trace, with no traced value among ``trees``:
    then control flow is plain Python."""
    if trace_state.dynamic_trace.level != 0 or len(trace_state.trace_stack) > 1:
        return False
    return not any(isinstance(leaf, Tracer) for tree in trees for leaf in tree_flatten(tree)[0])


def trace_function(fun: Callable, in_tree: Any, avals: Sequence[ShapedArray]
                   ) -> tuple[ClosedJaxpr, list[Any], Any]:
    """``fun`` (pytree arguments of structure ``in_tree``) traced on ``avals``: the program
    (what it closes over as leading arguments), those values, and the output's structure."""
    out_tree: list[Any] = []

    def flat(*args):
        leaves, tree = tree_flatten(fun(*tree_unflatten(in_tree, list(args))))
        out_tree.append(tree)
        return leaves

    program, consts = trace_flat(flat, avals)
    return program, consts, out_tree[0]


def join_consts(programs: list[tuple[ClosedJaxpr, list[Any]]]) -> tuple[list[ClosedJaxpr],
                                                                        list[Any]]:
    """Programs that each take their own constants first, made to take all of their
    constants (the first program's, then the second's, ...) and ignore the others'."""
    all_consts = [c for _, consts in programs for c in consts]
    joined = []
    for k, (program, consts) in enumerate(programs):
        before = [get_aval(c) for _, cs in programs[:k] for c in cs]
        after = [get_aval(c) for _, cs in programs[k + 1:] for c in cs]
        jaxpr = program.jaxpr
        n = len(consts)
        invars = ([Var(a) for a in before] + jaxpr.invars[:n] + [Var(a) for a in after]
                  + jaxpr.invars[n:])
        joined.append(ClosedJaxpr(Jaxpr(jaxpr.constvars, invars, jaxpr.outvars, jaxpr.eqns),
                                  program.consts))
    return joined, all_consts


def _types(avals: Sequence[ShapedArray]) -> list[tuple]:
    return [(a.shape, a.dtype) for a in avals]


def _type_mismatch(what: str, tree: Any, first: Sequence[ShapedArray],
                   second: Sequence[ShapedArray], names: tuple[str, str]) -> str | None:
    """A message naming the first leaf whose types differ, or None when they all agree."""
    paths = [keystr(path) for path, _ in tree_flatten_with_path(
        tree_unflatten(tree, list(range(len(first)))))[0]] if tree is not None else \
        [f"[{i}]" for i in range(len(first))]
    for path, a, b in zip(paths, first, second):
        if (a.shape, a.dtype) != (b.shape, b.dtype):
            return (f"{what}: {names[0]} gives {a.str_short()} at {path or 'the result'}, "
                    f"but {names[1]} gives {b.str_short()} there. Make them agree (cast with "
                    f"jnp.asarray(x, dtype), or broadcast to one shape).")
    return None


def _weak_joined(avals_list: Sequence[Sequence[ShapedArray]]) -> list[ShapedArray]:
    """The first list's types, weak only where every list's is weak."""
    return [a._replace(weak_type=all(x[i].weak_type for x in avals_list))
            for i, a in enumerate(avals_list[0])]


def _typed(values: Sequence[Any], *avals_lists: Sequence[ShapedArray]) -> list[Array]:
    """An impl's results as Arrays, weak where every list's type is (the abstract eval's
    rule): the generic rule, on the impl's operands, would count an index or a constant."""
    joined = _weak_joined(avals_lists)
    return [Array(np.asarray(v), a.weak_type) for v, a in zip(values, joined)]


# ------------------------------------------------------------------------------------------
# cond and switch
# ------------------------------------------------------------------------------------------


# --8<-- [start:switch]
def switch(index: Any, branches: Sequence[Callable], *operands: Any) -> Any:
    """``branches[index](*operands)``, with ``index`` clamped to the branches' range.

    Example:
        >>> import stage2_jit as jax, stage2_jit.numpy as jnp
        >>> f = jax.jit(lambda i, x: jax.lax.switch(i, [jnp.sin, jnp.cos, jnp.tanh], x))
        >>> f(1, 0.0)
        Array(1., dtype=float32, weak_type=True)
    """
    branches = list(branches)
    if not branches:
        raise ValueError("switch needs at least one branch.")
    shape = get_aval(index).shape if isinstance(index, (Array, Tracer)) else np.shape(index)
    if shape != ():
        raise TypeError(f"switch's index must be a scalar, got an array of shape {shape}.")
    if _concrete(index, operands):
        i = int(np.clip(int(np.asarray(index)), 0, len(branches) - 1))
        return tree_map(asarray, branches[i](*operands))  # arrays, as a traced switch returns
    index = lax.convert_element_type(index, np.dtype(np.int32), False)
    index = lax.min(lax.max(index, np.int32(0)), np.int32(len(branches) - 1))
    return _bind_cond(index, branches, operands, [f"branch {i}" for i in range(len(branches))])
# --8<-- [end:switch]


# --8<-- [start:cond]
def cond(pred: Any, true_fun: Callable, false_fun: Callable, *operands: Any) -> Any:
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``; under a trace both
    branches are traced, and must return the same types.

    Example:
        >>> import stage2_jit as jax, stage2_jit.numpy as jnp
        >>> f = jax.jit(lambda x: jax.lax.cond(x > 0, jnp.sin, jnp.cos, x))
        >>> print(jax.make_jaxpr(f.fun)(1.0))
        { lambda ; a:f32[]. let
            b:bool[] = gt a 0.0:f32[]
            c:i32[] = convert_element_type[new_dtype=int32 weak_type=False] b
            d:f32[] = cond[
              branches=(
                { lambda ; e:f32[]. let f:f32[] = cos e in (f,) }
                { lambda ; g:f32[]. let h:f32[] = sin g in (h,) }
              )
            ] c a
          in (d,) }
    """
    shape = get_aval(pred).shape if isinstance(pred, (Array, Tracer)) else np.shape(pred)
    if shape != ():
        raise TypeError(f"cond's predicate must be a scalar, got an array of shape {shape}. "
                        f"Reduce it first (jnp.all, jnp.any), or use jnp.where for an "
                        f"elementwise choice.")
    if _concrete(pred, operands):
        chosen = true_fun if bool(np.asarray(pred)) else false_fun
        return tree_map(asarray, chosen(*operands))  # arrays, as a traced cond returns
    index = lax.convert_element_type(pred, np.dtype(np.int32), False)
    return _bind_cond(index, [false_fun, true_fun], operands, ["false_fun", "true_fun"])
# --8<-- [end:cond]


def _bind_cond(index: Any, branches: list[Callable], operands: tuple, names: list[str]) -> Any:
    leaves, in_tree = tree_flatten(operands)
    avals = [get_aval(x) for x in leaves]
    traced = [trace_function(b, in_tree, avals) for b in branches]
    out_tree = traced[0][2]
    for k, (program, _, tree) in enumerate(traced[1:], 1):
        if tree != out_tree:
            raise TypeError(f"cond/switch branches must return the same structure: "
                            f"{names[0]} returns {out_tree}, {names[k]} returns {tree}.")
        message = _type_mismatch("cond/switch branches must return the same types", out_tree,
                                 traced[0][0].out_avals, program.out_avals,
                                 (names[0], names[k]))
        if message:
            raise TypeError(message)
    programs, consts = join_consts([(p, c) for p, c, _ in traced])
    outs = cond_p.bind(index, *consts, *leaves, branches=tuple(programs))
    return tree_unflatten(out_tree, outs)


def cond_impl(index, *args, branches):
    outs = eval_jaxpr(branches[int(index)].jaxpr, [], list(args))
    return _typed(outs, *[b.out_avals for b in branches])


def cond_abstract_eval(index: ShapedArray, *avals: ShapedArray, branches):
    if index.shape != () or index.dtype != np.dtype(np.int32):
        raise TypeError(f"cond's index must be an int32 scalar, got {index.str_short()}.")
    for k, branch in enumerate(branches):
        if _types(branch.in_avals) != _types(avals):
            raise TypeError(f"cond branch {k} takes {[a.str_short() for a in branch.in_avals]}"
                            f", but was given {[a.str_short() for a in avals]}.")
        if _types(branch.out_avals) != _types(branches[0].out_avals):
            raise TypeError(f"cond branch {k} returns "
                            f"{[a.str_short() for a in branch.out_avals]}, branch 0 returns "
                            f"{[a.str_short() for a in branches[0].out_avals]}.")
    return _weak_joined([b.out_avals for b in branches])


impl_rules[cond_p] = cond_impl
abstract_eval_rules[cond_p] = cond_abstract_eval


# --8<-- [start:cond_jvp]
def cond_jvp(primals, tangents, *, branches):
    index, operands = primals[0], primals[1:]
    float_in = [is_inexact(get_aval(x)) for x in operands]
    programs, consts = join_consts([jvp_program(b, float_in) for b in branches])
    float_tangents = [t for t, f in zip(tangents[1:], float_in) if f]
    outs = cond_p.bind(index, *consts, *operands, *float_tangents, branches=tuple(programs))
    return split_tangents(list(outs), branches[0].out_avals)
# --8<-- [end:cond_jvp]


jvp_rules[cond_p] = cond_jvp


# --8<-- [start:cond_vjp]
def cond_vjp(cts, index, *operands, out, needs, branches):
    wanted = [n and is_inexact(get_aval(x)) for n, x in zip(needs[1:], operands)]
    if not any(wanted):
        return [None] * (1 + len(operands))
    float_cts = [ct for ct, a in zip(cts, branches[0].out_avals) if is_inexact(a)]
    programs, consts = join_consts([vjp_program(b, wanted, float_cts) for b in branches])
    results = iter(cond_p.bind(index, *consts, *operands,
                               *[ct for ct in float_cts if ct is not None],
                               branches=tuple(programs)))
    return [None, *[next(results) if w else None for w in wanted]]
# --8<-- [end:cond_vjp]


vjp_rules[cond_p] = cond_vjp
vjp_rules_take_needs.add(cond_p)
vjp_rules_take_none.add(cond_p)  # (a result no cotangent reaches: None, see vjp_program)


# ------------------------------------------------------------------------------------------
# while_loop and fori_loop
# ------------------------------------------------------------------------------------------


# --8<-- [start:while_loop]
def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    """``val = init_val; while cond_fun(val): val = body_fun(val)``; the carry ``val`` keeps
    its structure and types.

    Example:
        >>> import stage2_jit as jax
        >>> jax.jit(lambda n: jax.lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1,
        ...     c[1] * 2.0), (0, 1.0)))(10)
        (Array(10, dtype=int32, weak_type=True), Array(1024., dtype=float32, weak_type=True))
    """
    leaves, tree = tree_flatten(init_val)
    leaves = [x if isinstance(x, (Array, Tracer)) else asarray(x) for x in leaves]
    avals = [get_aval(x) for x in leaves]
    one_argument = tree_flatten((init_val,))[1]
    cond_program, cond_consts, _ = trace_function(cond_fun, one_argument, avals)
    body_program, body_consts, body_tree = trace_function(body_fun, one_argument, avals)
    leaves, changed = _promote_weak_carry(leaves, body_program.out_avals)
    if changed:
        avals = [get_aval(x) for x in leaves]
        cond_program, cond_consts, _ = trace_function(cond_fun, one_argument, avals)
        body_program, body_consts, body_tree = trace_function(body_fun, one_argument, avals)
    outs = cond_program.out_avals
    if len(outs) != 1 or outs[0].shape != () or outs[0].dtype != np.dtype(np.bool_):
        raise TypeError(f"while_loop's cond_fun must return a boolean scalar, got "
                        f"{[a.str_short() for a in outs]}.")
    _check_carry("while_loop", "body_fun", tree, avals, body_tree,
                 body_program.out_avals[:len(avals)])
    outs = while_p.bind(*cond_consts, *body_consts, *leaves, cond_jaxpr=cond_program,
                        body_jaxpr=body_program, cond_nconsts=len(cond_consts),
                        body_nconsts=len(body_consts))
    return tree_unflatten(tree, outs)
# --8<-- [end:while_loop]


def _promote_weak_carry(leaves: list[Any], out_avals: Sequence[ShapedArray]
                        ) -> tuple[list[Any], bool]:
    """JAX's rule for a loop's initial carry: a weakly typed leaf (a Python number) of another
    type than the body returns is converted to the type the two promote to, and the loop's
    body is traced again on it. So ``fori_loop(0, n, lambda i, s: s + x[i], 0)`` sums floats.
    Returns the leaves, and whether any changed."""
    new = []
    for x, out in zip(leaves, out_avals):
        a = get_aval(x)
        if a.weak_type and (a.shape, a.dtype) != (out.shape, out.dtype):
            dtype, _ = dtypes.promote_types((a.dtype, True), (out.dtype, out.weak_type))
            x = lax.convert_element_type(x, dtype, False)
        new.append(x)
    return new + list(leaves[len(new):]), any(n is not x for n, x in zip(new, leaves))


def _check_carry(name: str, fun_name: str, tree, avals, out_tree, out_avals) -> None:
    if out_tree != tree:
        raise TypeError(f"{name}: {fun_name} must return a carry of the structure it was "
                        f"given, {tree}; it returned {out_tree}.")
    message = _type_mismatch(f"{name}: {fun_name} must keep the carry's types", tree, avals,
                             out_avals, ("the initial carry", fun_name))
    if message:
        raise TypeError(message)


def while_impl(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cond_consts, body_consts = args[:cond_nconsts], args[cond_nconsts:cond_nconsts + body_nconsts]
    carry = list(args[cond_nconsts + body_nconsts:])
    while bool(np.asarray(eval_jaxpr(cond_jaxpr.jaxpr, [], [*cond_consts, *carry])[0])):
        carry = eval_jaxpr(body_jaxpr.jaxpr, [], [*body_consts, *carry])
    return _typed(carry, body_jaxpr.out_avals)


def while_abstract_eval(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    carry = avals[cond_nconsts + body_nconsts:]
    if _types(body_jaxpr.out_avals) != _types(carry):
        raise TypeError(f"while's body returns {[a.str_short() for a in body_jaxpr.out_avals]}"
                        f" for a carry of {[a.str_short() for a in carry]}.")
    return list(body_jaxpr.out_avals)  # weak as the body returns it (JAX's rule)


impl_rules[while_p] = while_impl
abstract_eval_rules[while_p] = while_abstract_eval


# --8<-- [start:while_jvp]
def while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    """A while over (carry, its tangent): the body's JVP, with the tangents of the body's
    constants as more constants; the predicate reads the primal carry only."""
    cond_consts = primals[:cond_nconsts]
    body_consts = primals[cond_nconsts:cond_nconsts + body_nconsts]
    carry = primals[cond_nconsts + body_nconsts:]
    float_consts = [is_inexact(get_aval(c)) for c in body_consts]
    float_carry = [is_inexact(get_aval(c)) for c in carry]
    const_tangents = [t for t, f in zip(tangents[cond_nconsts:cond_nconsts + body_nconsts],
                                        float_consts) if f]
    carry_tangents = [lax.zeros_like(c) if t is None else t for t, c, f in
                      zip(tangents[cond_nconsts + body_nconsts:], carry, float_carry) if f]
    n_body, n_carry = len(body_consts), len(carry)
    n_const_t = len(const_tangents)

    def body(*args):  # (consts, const tangents, carry, carry tangents)
        consts, const_t = args[:n_body], iter(args[n_body:n_body + n_const_t])
        rest = args[n_body + n_const_t:]
        c, c_t = rest[:n_carry], iter(rest[n_carry:])
        full = [next(const_t) if f else np.zeros(get_aval(x).shape, dtypes.float0)
                for f, x in zip(float_consts, consts)]
        full += [next(c_t) if f else np.zeros(get_aval(x).shape, dtypes.float0)
                 for f, x in zip(float_carry, c)]
        outs, outs_dot = jvp(jaxpr_as_fun(body_jaxpr), [*consts, *c], full)
        return [*outs, *[t for t, f in zip(outs_dot, float_carry) if f]]

    def predicate(*args):  # (cond consts, carry, carry tangents)
        return jaxpr_as_fun(cond_jaxpr)(*args[:cond_nconsts + n_carry])

    carry_t_avals = [get_aval(c) for c, f in zip(carry, float_carry) if f]
    body_program, body_extra = trace_flat(body, [
        *[get_aval(c) for c in body_consts], *[get_aval(t) for t in const_tangents],
        *[get_aval(c) for c in carry], *carry_t_avals])
    cond_program, cond_extra = trace_flat(predicate, [
        *[get_aval(c) for c in cond_consts], *[get_aval(c) for c in carry], *carry_t_avals])
    outs = while_p.bind(*cond_extra, *cond_consts, *body_extra, *body_consts, *const_tangents,
                        *carry, *carry_tangents, cond_jaxpr=cond_program,
                        body_jaxpr=body_program, cond_nconsts=len(cond_extra) + cond_nconsts,
                        body_nconsts=len(body_extra) + n_body + n_const_t)
    return split_tangents(list(outs), [get_aval(c) for c in carry])
# --8<-- [end:while_jvp]


jvp_rules[while_p] = while_jvp


def while_vjp(cts, *primals, out, needs, cond_jaxpr, body_jaxpr, cond_nconsts,
              body_nconsts):
    """Reverse mode through a while loop is refused, unless no output that a cotangent
    reaches depends on an input being differentiated: then every cotangent is zero (the
    tangent loop of ``jvp`` inside ``grad``: it is linear in the tangents alone). JAX's partial
    evaluation finds the same by leaving such a loop out of the linear program."""
    reach = _carry_inputs(body_jaxpr.jaxpr, body_nconsts)
    wanted = {i for i, need in enumerate(needs) if need}
    for j, ct in enumerate(cts):
        if ct is None or not is_inexact(get_aval(ct)):
            continue
        if any(cond_nconsts + k in wanted for k in reach[j]):
            raise ValueError(
                "Reverse-mode differentiation does not work for lax.while_loop: its number of "
                "steps is known only when it runs, so the values each step needs on the way "
                "back cannot be stored in a program of fixed size. Use lax.fori_loop with "
                "Python-int bounds (which becomes a scan), or lax.scan with a fixed length; "
                "forward mode (jax.jvp, jacfwd) works with while_loop.")
    return [None] * len(primals)


def _carry_inputs(body: Jaxpr, nconsts: int) -> list[set[int]]:
    """For each carry the loop returns, the body operands it depends on after any number of
    steps (``k < nconsts`` a constant, else the initial carry ``k - nconsts``): the carries
    each body output reads, followed to a fixed point."""
    reads = _inputs_read(body)
    n_carry = len(body.outvars)
    reach = [{nconsts + j} for j in range(n_carry)]
    changed = True
    while changed:
        changed = False
        for j in range(n_carry):
            grown = reach[j].union(*[reach[k - nconsts] if k >= nconsts else {k}
                                     for k in reads[j]])
            if grown != reach[j]:
                reach[j], changed = grown, True
    return reach


def _inputs_read(jaxpr: Jaxpr) -> list[set[int]]:
    """For each output of ``jaxpr``, the inputs it depends on through its equations (all the
    operands of an equation count, an inner program's included)."""
    reads: dict[Var, set[int]] = {v: {i} for i, v in enumerate(jaxpr.invars)}
    for eqn in jaxpr.eqns:
        depends = set().union(*[reads.get(a, set()) for a in eqn.invars if isinstance(a, Var)])
        for v in eqn.outvars:
            reads[v] = depends
    return [reads.get(v, set()) if isinstance(v, Var) else set() for v in jaxpr.outvars]


vjp_rules[while_p] = while_vjp
vjp_rules_take_needs.add(while_p)
vjp_rules_take_none.add(while_p)  # (an output no cotangent reaches gets None: see above)


set_while_loop(while_loop)  # stage 1's rejection samplers trace their loops with it


# --8<-- [start:fori_loop]
def fori_loop(lower: Any, upper: Any, body_fun: Callable, init_val: Any, *,
              unroll: int | bool | None = None) -> Any:
    """``val = init_val; for i in range(lower, upper): val = body_fun(i, val)``. With bounds
    known when tracing (Python ints, or concrete arrays), a ``scan`` of that length (with
    ``unroll``), so reverse mode works; with traced bounds, a ``while_loop``.

    Example:
        >>> import stage2_jit as jax
        >>> jax.jit(lambda x: jax.lax.fori_loop(0, 5, lambda i, v: v * 2.0 + i, x))(1.0)
        Array(58., dtype=float32, weak_type=True)
    """
    lower, upper, dtype = _fori_bounds(lower, upper)
    if not isinstance(lower, Tracer) and not isinstance(upper, Tracer):
        lo, hi = int(np.asarray(lower)), int(np.asarray(upper))

        def step(carry, _):
            i, val = carry
            return (i + 1, body_fun(i, val)), None

        # The index starts as a Python int, weakly typed, whatever the bounds' type (JAX's).
        (_, val), _ = scan(step, (lo, init_val), None, length=max(hi - lo, 0),
                           unroll=unroll or 1)
        return val
    if unroll not in (None, False, 1):
        raise ValueError("fori_loop: unroll needs loop bounds known when tracing (Python "
                         "ints): with traced bounds the loop is a while_loop, which has no "
                         "fixed number of steps to unroll.")
    lower, upper = (lax.convert_element_type(b, dtype, False) if get_aval(b).dtype != dtype
                    else b for b in (lower, upper))
    (_, _, val) = while_loop(lambda c: c[0] < c[1],
                             lambda c: (c[0] + 1, c[1], body_fun(c[0], c[2])),
                             (lower, upper, init_val))
    return val


def _fori_bounds(lower: Any, upper: Any) -> tuple[Any, Any, np.dtype]:
    """The bounds as arrays, and the index's dtype: theirs, when they agree or one of them
    is weakly typed (a Python int) and the other is not; otherwise a TypeError, as JAX's."""
    lower, upper = (b if isinstance(b, (Array, Tracer)) else asarray(b) for b in (lower, upper))
    (lo, hi) = (get_aval(b) for b in (lower, upper))
    if lo.dtype == hi.dtype:
        return lower, upper, lo.dtype
    signed = all(np.issubdtype(a.dtype, np.signedinteger) for a in (lo, hi))
    if signed and lo.weak_type != hi.weak_type:
        return lower, upper, hi.dtype if lo.weak_type else lo.dtype
    raise TypeError(f"lower and upper arguments to fori_loop must have equal types, got "
                    f"{lo.dtype.name} and {hi.dtype.name}. Cast one of them, or pass a Python "
                    f"int.")
# --8<-- [end:fori_loop]


# ------------------------------------------------------------------------------------------
# scan
# ------------------------------------------------------------------------------------------


# --8<-- [start:scan]
def scan(f: Callable, init: Any, xs: Any = None, length: int | None = None,
         reverse: bool = False, unroll: int = 1) -> tuple[Any, Any]:
    """``carry = init``; for each slice ``x`` of ``xs`` along its leading dim (in reverse
    order if ``reverse``): ``carry, y = f(carry, x)``; returns the last carry and the ``ys``
    stacked along a new leading dim.

    Example:
        >>> import stage2_jit as jax, stage2_jit.numpy as jnp
        >>> jax.lax.scan(lambda c, x: (c + x, c * x), 0.0, jnp.arange(1.0, 4.0))
        (Array(6., dtype=float32), Array([0., 2., 9.], dtype=float32))
    """
    x_leaves, x_tree = tree_flatten(xs)
    lengths = {_leading_dim(x) for x in x_leaves}
    if length is not None:
        lengths.add(int(length))
    if len(lengths) != 1:
        raise ValueError(f"scan got xs with leading dims {sorted(lengths)} and length="
                         f"{length}: they must all be equal." if lengths else
                         "scan needs length= when xs is None (nothing to scan over).")
    n = lengths.pop()
    init_leaves, carry_tree = tree_flatten(init)
    init_leaves = [x if isinstance(x, (Array, Tracer)) else asarray(x) for x in init_leaves]
    x_leaves = [x if isinstance(x, (Array, Tracer)) else asarray(x) for x in x_leaves]
    carry_avals = [get_aval(x) for x in init_leaves]
    x_avals = [step_aval(get_aval(x)) for x in x_leaves]
    in_tree = tree_flatten((init, xs))[1]
    program, consts, out_tree = trace_function(f, in_tree, [*carry_avals, *x_avals])
    carry_out, y_tree = _split_out_tree(out_tree)
    if carry_out == carry_tree:
        init_leaves, changed = _promote_weak_carry(init_leaves, program.out_avals)
        if changed:
            carry_avals = [get_aval(x) for x in init_leaves]
            program, consts, out_tree = trace_function(f, in_tree, [*carry_avals, *x_avals])
            carry_out, y_tree = _split_out_tree(out_tree)
    _check_carry("scan", "f", carry_tree, carry_avals, carry_out,
                 program.out_avals[:len(carry_avals)])
    outs = scan_p.bind(*consts, *init_leaves, *x_leaves, jaxpr=program, length=n,
                       reverse=bool(reverse), num_consts=len(consts),
                       num_carry=len(init_leaves), linear=(False,) * (
                           len(consts) + len(init_leaves) + len(x_leaves)),
                       unroll=(n if unroll else 1) if isinstance(unroll, bool) else int(unroll),
                       _split_transpose=False)
    carry = tree_unflatten(carry_tree, outs[:len(init_leaves)])
    return carry, tree_unflatten(y_tree, outs[len(init_leaves):])
# --8<-- [end:scan]


def step_aval(aval: ShapedArray) -> ShapedArray:
    """The type of one step's slice of a scanned array: without the leading dim (and without
    it in the sharding, which stage 4 puts into types)."""
    sharding = None if aval.sharding is None else aval.sharding.without_dim(0)
    return ShapedArray(aval.shape[1:], aval.dtype, aval.weak_type, sharding)


def _leading_dim(x: Any) -> int:
    shape = get_aval(x).shape if isinstance(x, (Array, Tracer)) else np.shape(x)
    if not shape:
        raise ValueError("scan's xs must be arrays with a leading dim to scan over; got a "
                         "scalar among them.")
    return shape[0]


def _split_out_tree(out_tree: Any) -> tuple[Any, Any]:
    """The structures of the carry and the y that ``f`` returns as a pair."""
    placeholder = tree_unflatten(out_tree, list(range(out_tree.num_leaves)))
    if not isinstance(placeholder, tuple) or len(placeholder) != 2:
        raise TypeError("scan's f must return a pair (carry, y).")
    return tree_flatten(placeholder[0])[1], tree_flatten(placeholder[1])[1]


def scan_impl(*args, jaxpr, length, reverse, num_consts, num_carry, linear, unroll,
              _split_transpose):
    consts, carry = list(args[:num_consts]), list(args[num_consts:num_consts + num_carry])
    xs = args[num_consts + num_carry:]
    ys = []
    for i in (range(length - 1, -1, -1) if reverse else range(length)):
        outs = eval_jaxpr(jaxpr.jaxpr, [], [*consts, *carry, *[x[i] for x in xs]])
        carry, y = outs[:num_carry], outs[num_carry:]
        ys.append(y)
    if reverse:
        ys.reverse()
    y_avals = jaxpr.out_avals[num_carry:]
    stacked = [np.stack([np.asarray(y[k]) for y in ys]) if ys else
               np.zeros((0, *a.shape), a.dtype) for k, a in enumerate(y_avals)]
    return [*_typed(carry, jaxpr.out_avals[:num_carry]),
            *_typed(stacked, y_avals)]


def scan_abstract_eval(*avals, jaxpr, length, reverse, num_consts, num_carry, linear, unroll,
                       _split_transpose):
    carry = avals[num_consts:num_consts + num_carry]
    xs = avals[num_consts + num_carry:]
    for x in xs:
        if not x.shape or x.shape[0] != length:
            raise TypeError(f"scan of length {length} got an xs of type {x.str_short()}.")
    body_in = [*avals[:num_consts], *carry, *[ShapedArray(x.shape[1:], x.dtype) for x in xs]]
    if _types(jaxpr.in_avals) != _types(body_in):
        raise TypeError(f"scan's body takes {[a.str_short() for a in jaxpr.in_avals]}, but "
                        f"was given {[a.str_short() for a in body_in]}.")
    outs = jaxpr.out_avals
    if _types(outs[:num_carry]) != _types(carry):
        raise TypeError(f"scan's body returns the carry {[a.str_short() for a in outs]}, "
                        f"for a carry of {[a.str_short() for a in carry]}.")
    return [*outs[:num_carry],  # weak as the body returns it (JAX's rule)
            *[ShapedArray((length, *y.shape), y.dtype, y.weak_type) for y in outs[num_carry:]]]


impl_rules[scan_p] = scan_impl
abstract_eval_rules[scan_p] = scan_abstract_eval


def scan_jvp(primals, tangents, *, jaxpr, length, reverse, num_consts, num_carry, linear,
             unroll, _split_transpose):
    """A scan of the body's JVP: tangents of the constants as more constants, the carry's
    tangents as more carry, the xs' tangents as more xs."""
    n_in = len(primals)
    float_in = [is_inexact(get_aval(x)) for x in primals]
    groups = [range(num_consts), range(num_consts, num_consts + num_carry),
              range(num_consts + num_carry, n_in)]
    body, body_consts = jvp_program(jaxpr, float_in)
    # jvp_program's arguments: all primals, then the float tangents in order. Regroup them
    # as scan wants them: (consts, const tangents), (carry, carry tangents), (xs, x tangents).
    order = []
    tangent_position = {i: n_in + k for k, i in enumerate(i for i in range(n_in) if float_in[i])}
    for group in groups:
        order += list(group) + [tangent_position[i] for i in group if float_in[i]]
    inner = body.jaxpr
    reordered = Jaxpr(inner.constvars, [*inner.invars[:len(body_consts)],
                                        *[inner.invars[len(body_consts) + k] for k in order]],
                      inner.outvars, inner.eqns)
    # Outputs: the body's (carry, y) then their float tangents: regroup as (carry, carry
    # tangents, y, y tangents).
    out_avals = jaxpr.out_avals
    float_out = [is_inexact(a) for a in out_avals]
    n_out = len(out_avals)
    out_tangent = {i: n_out + k for k, i in enumerate(i for i in range(n_out) if float_out[i])}
    out_order = ([*range(num_carry), *[out_tangent[i] for i in range(num_carry) if float_out[i]],
                  *range(num_carry, n_out),
                  *[out_tangent[i] for i in range(num_carry, n_out) if float_out[i]]])
    reordered = Jaxpr(reordered.constvars, reordered.invars,
                      [reordered.outvars[k] for k in out_order], reordered.eqns)
    program = ClosedJaxpr(reordered, body.consts)
    carry_t_in = [i - num_consts for i in groups[1] if float_in[i]]
    carry_t_out = [i for i in range(num_carry) if float_out[i]]
    if carry_t_in != carry_t_out:
        raise AssertionError("scan's carry changed between float and not")

    def tangent(i):
        return lax.zeros_like(primals[i]) if tangents[i] is None else tangents[i]

    args = [*body_consts]
    for group in groups:
        args += [primals[i] for i in group] + [tangent(i) for i in group if float_in[i]]
    n_consts = len(body_consts) + num_consts + sum(float_in[i] for i in groups[0])
    n_carry = num_carry + len(carry_t_in)
    outs = scan_p.bind(*args, jaxpr=program, length=length, reverse=reverse,
                       num_consts=n_consts, num_carry=n_carry,
                       linear=(False,) * len(args), unroll=unroll, _split_transpose=False)
    carry_out, rest = outs[:n_carry], outs[n_carry:]
    carry_primal, carry_tangent = carry_out[:num_carry], iter(carry_out[num_carry:])
    n_y = n_out - num_carry
    ys, y_tangent = rest[:n_y], iter(rest[n_y:])
    primals_out = [*carry_primal, *ys]
    tangents_out = ([next(carry_tangent) if float_out[i] else lax.zeros_like(carry_primal[i])
                     for i in range(num_carry)]
                    + [next(y_tangent) if float_out[num_carry + k] else lax.zeros_like(y)
                       for k, y in enumerate(ys)])
    return primals_out, tangents_out


jvp_rules[scan_p] = scan_jvp


# --8<-- [start:scan_vjp]
def _scan_keeping_carries(jaxpr: ClosedJaxpr, primals, length, reverse, num_consts,
                          num_carry, unroll) -> list:
    """The scan again, with the carry that goes into each step as extra ys: its results,
    then the stacked carries (the residuals of the backward scan). Under ``jit`` it is the
    tape's primal scan with outputs added, so ``passes.merge_scans`` computes both in one."""
    run = jaxpr_as_fun(jaxpr)

    def forward(*args):
        return [*run(*args), *args[num_consts:num_consts + num_carry]]

    program, consts = trace_flat(forward, jaxpr.in_avals)
    # (the tape's primal computation, run again: its custom_vjp calls are the tape's)
    return primal_below(scan_p, [*consts, *primals], dict(
        jaxpr=program, length=length, reverse=reverse, num_consts=len(consts) + num_consts,
        num_carry=num_carry, linear=(False,) * (len(consts) + len(primals)), unroll=unroll,
        _split_transpose=False))


def scan_vjp(cts, *primals, out, needs, jaxpr, length, reverse, num_consts, num_carry, linear,
             unroll, _split_transpose):
    """Reverse mode through a scan: a forward scan that also stacks each step's incoming
    carry (the residuals, stored as scan stores its ys), then a scan the other way that
    pulls the cotangents back through one step at a time, summing the constants'
    cotangents in its carry."""
    consts = list(primals[:num_consts])
    init = list(primals[num_consts:num_consts + num_carry])
    xs = list(primals[num_consts + num_carry:])
    run = jaxpr_as_fun(jaxpr)
    # 1. the forward pass again, keeping the carry that goes into each step
    fwd = _scan_keeping_carries(jaxpr, primals, length, reverse, num_consts, num_carry, unroll)
    carries = fwd[len(jaxpr.out_avals):]  # stacked: the carry before each step
    # 2. the backward scan
    # Only constants being differentiated get cotangents: the others (a NumPy array in the
    # body, say) stay constants in the backward step, as a custom_vjp inside it needs.
    float_consts = [is_inexact(get_aval(c)) and need for c, need in zip(consts, needs)]
    float_carry = [is_inexact(get_aval(c)) for c in init]
    float_xs = [is_inexact(get_aval(x)) for x in xs]
    float_ys = [is_inexact(a) for a in jaxpr.out_avals[num_carry:]]
    n_fc, n_fca = sum(float_consts), sum(float_carry)

    def backward(*args):
        # (consts, ct_carry [float], ct_consts_sum [float], carry_t, x_t, ct_y_t [float])
        k = 0
        cs = args[k:k + num_consts]; k += num_consts
        ct_c = list(args[k:k + n_fca]); k += n_fca
        acc = list(args[k:k + n_fc]); k += n_fc
        c_t = args[k:k + num_carry]; k += num_carry
        x_t = args[k:k + len(xs)]; k += len(xs)
        ct_y = iter(args[k:])
        wanted = [*float_consts, *float_carry, *float_xs]
        primal_in = [*cs, *c_t, *x_t]

        def of_wanted(*values):
            values = iter(values)
            return run(*[next(values) if w else p for w, p in zip(wanted, primal_in)])

        outs, pullback = vjp(of_wanted, *[p for p, w in zip(primal_in, wanted) if w])
        ct_c_iter = iter(ct_c)
        full = [next(ct_c_iter) if f else lax.zeros_like(o)
                for f, o in zip(float_carry, outs[:num_carry])]
        full += [next(ct_y) if f else lax.zeros_like(o)
                 for f, o in zip(float_ys, outs[num_carry:])]
        grads = [lax.zeros_like(p) if g is None else g
                 for g, p in zip(pullback(full), [p for p, w in zip(primal_in, wanted) if w])]
        g_consts, g_carry, g_xs = grads[:n_fc], grads[n_fc:n_fc + n_fca], grads[n_fc + n_fca:]
        return [*g_carry, *[a + g for a, g in zip(acc, g_consts)], *g_xs]

    # The backward scan's carry is the cotangent of the forward carry, and a carry keeps its
    # type: laid out as the carry (stage 4; the forward scan's result has its type even
    # eagerly, where a plain array is replicated), whatever layout the cotangent arrives in.
    ct_carry = [lax.with_sharding_of(ct, c) for ct, c, f in zip(cts[:num_carry], fwd,
                                                                 float_carry) if f]
    ct_ys = [ct for ct, f in zip(cts[num_carry:], float_ys) if f]
    acc0 = [lax.zeros_like(c) for c, f in zip(consts, float_consts) if f]
    avals = [*map(get_aval, consts), *map(get_aval, ct_carry), *map(get_aval, acc0),
             *[step_aval(get_aval(v)) for v in [*carries, *xs, *ct_ys]]]
    bwd_program, bwd_consts = trace_flat(backward, avals)
    n_bwd_consts = len(bwd_consts) + num_consts
    results = scan_p.bind(*bwd_consts, *consts, *ct_carry, *acc0, *carries, *xs, *ct_ys,
                          jaxpr=bwd_program, length=length, reverse=not reverse,
                          num_consts=n_bwd_consts, num_carry=n_fca + n_fc,
                          linear=(False,) * (n_bwd_consts + n_fca + n_fc + len(carries)
                                             + len(xs) + len(ct_ys)),
                          unroll=unroll, _split_transpose=False)
    g_carry, g_consts = iter(results[:n_fca]), iter(results[n_fca:n_fca + n_fc])
    g_xs = iter(results[n_fca + n_fc:])
    out_cts = ([next(g_consts) if f else None for f in float_consts]
               + [next(g_carry) if f else None for f in float_carry]
               + [next(g_xs) if f else None for f in float_xs])
    return [ct if need else None for ct, need in zip(out_cts, needs)]
# --8<-- [end:scan_vjp]


vjp_rules[scan_p] = scan_vjp
vjp_rules_take_needs.add(scan_p)
