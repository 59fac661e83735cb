"""``checkpoint`` (also ``remat``): trade compute for memory in reverse mode.

Reverse mode keeps, from the forward pass, every value a VJP rule will need (on our tape: each
entry's inputs and outputs). For a deep network that is most of the memory. A checkpointed
function keeps only its *inputs*, and the residuals its ``policy`` allows; the backward pass
runs its forward pass again to get the rest.

``checkpoint(f)`` traces ``f`` to a program and binds ``remat_p`` (printed ``remat2``, JAX's
name) holding it. Its rules:

- eval and ``jit`` run the program as it is (``differentiated=False``);
- on the tape (``RematPrimitive.bind``), the forward pass runs the program with the
  policy's residuals as extra outputs, and the entry keeps them; the VJP rule binds
  ``remat2`` again (``differentiated=True``) with the *backward program*: the forward
  equations replayed, a saved equation taking its residual instead of computing, then the
  VJP. So in ``make_jaxpr(grad(checkpoint(f)))`` the forward equations appear twice;
- JVP: ``remat2`` of the JVP program; ``vmap``: ``remat2`` of the batched program.

Policies (``checkpoint_policies``) say which equations' results are saved:
``nothing_saveable`` (the default), ``everything_saveable``, ``dots_saveable`` and
``dots_with_no_batch_dims_saveable``. A policy is called as JAX calls it:
``policy(prim, *avals_in, **params) -> bool``.

NB: in JAX this is jax/_src/ad_checkpoint.py (``checkpoint``, ``remat_p``, the policies in
``checkpoint_policies``); there partial evaluation (``remat_partial_eval``) splits the program
into a known part, run in the forward pass, and a staged part that recomputes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from stage1_autodiff.autodiff import TapeEntry, TapeTrace, TapeTracer, primal_below, vjp
from stage1_autodiff.core import (
    Primitive,
    ShapedArray,
    find_top_trace,
    full_raise,
    get_aval,
    impl_rules,
    jvp_rules,
    vjp_rules,
    vjp_rules_take_needs,
)
from stage1_autodiff.numpy.promotion import as_value
from stage1_autodiff.tree_util import tree_flatten, tree_map, tree_unflatten

from stage1_autodiff import prims as lax

from .abstract_eval import abstract_eval_rules
from .derived import is_inexact, jvp_program, split_tangents, trace_flat
from .jaxpr import ClosedJaxpr, Jaxpr, Literal
from .passes import dce
from .runtime import compile_jaxpr
from .tracing import run_claimed


# --8<-- [start:policies]
def nothing_saveable(*_: Any, **__: Any) -> bool:
    """Save nothing: recompute every value (the default, ``policy=None``)."""
    return False


def everything_saveable(*_: Any, **__: Any) -> bool:
    """Save everything: no recomputation (as if there were no checkpoint)."""
    return True


@dataclass(frozen=True)
class DotsSaveable:
    """Save the results of matrix products (``dot_general``), recompute the cheap rest;
    with ``only_if_no_batch_dims``, only products without batch dimensions."""

    only_if_no_batch_dims: bool = False

    @property
    def __name__(self) -> str:  # a jaxpr shows a policy by name: this one as JAX shows it
        return repr(self)

    def __call__(self, prim: Primitive, *avals: ShapedArray, **params: Any) -> bool:
        if prim.name != "dot_general":
            return False
        (_, (lhs_batch, _)) = params["dimension_numbers"]
        return not (self.only_if_no_batch_dims and lhs_batch)


# --8<-- [end:policies]


# --8<-- [start:names]
def checkpoint_name(x: Any, name: str) -> Any:
    """``x`` unchanged (any pytree of arrays), each leaf named ``name`` for the policies that
    choose by name (``checkpoint_policies.save_only_these_names`` and the others below). The
    name is an equation of its own, ``name[name=...]``, which a policy is asked about like
    any other; outside a checkpoint it does nothing.

    Example:
        >>> import stage2_jit as jax, stage2_jit.numpy as jnp
        >>> from stage2_jit.ad_checkpoint import checkpoint_name
        >>> policy = jax.checkpoint_policies.save_only_these_names("hidden")
        >>> f = jax.checkpoint(lambda x: jnp.sin(checkpoint_name(jnp.sin(x), "hidden")),
        ...                    policy=policy)
        >>> print(jax.grad(f)(1.0))
        0.36003944
    """
    if not isinstance(name, str):
        raise TypeError(f"checkpoint_name's name must be a string, got {name!r} of type "
                        f"{type(name).__name__}: a policy such as save_only_these_names "
                        f"compares it with the names it is given.")
    return tree_map(lambda leaf: lax.name_p.bind(as_value(leaf), name=name), x)


class _Named:
    """A policy shown in a jaxpr by its repr, as JAX shows it (``SaveOnlyTheseNames(...)``)."""

    @property
    def __name__(self) -> str:
        return repr(self)


@dataclass(frozen=True)
class SaveOnlyTheseNames(_Named):
    """Save the values named (``checkpoint_name``) with one of ``saveable_names``; recompute
    everything else."""

    saveable_names: frozenset[str]

    def __call__(self, prim: Primitive, *_: ShapedArray, **params: Any) -> bool:
        return prim is lax.name_p and params["name"] in self.saveable_names


@dataclass(frozen=True)
class SaveAnyNamesButThese(_Named):
    """Save every named value except those named with one of ``names``; recompute the
    rest."""

    names: frozenset[str]

    def __call__(self, prim: Primitive, *_: ShapedArray, **params: Any) -> bool:
        return prim is lax.name_p and params["name"] not in self.names


def save_only_these_names(*names: str) -> SaveOnlyTheseNames:
    """The policy that saves only values named with one of ``names``."""
    return SaveOnlyTheseNames(frozenset(names))


def save_any_names_but_these(*names: str) -> SaveAnyNamesButThese:
    """The policy that saves every named value except those named with one of ``names``."""
    return SaveAnyNamesButThese(frozenset(names))


def save_anything_except_these_names(*names: str) -> Callable[..., bool]:
    """Meant to save every value but those named with one of ``names``; it saves every value,
    as JAX 0.10.2's does. Not saving a named value would not help: the value is also the
    result of the equation before its ``name``, which this policy saves."""
    return everything_saveable


def save_from_both_policies(policy_1: Callable, policy_2: Callable) -> Callable[..., bool]:
    """Saves what either policy saves. Both must answer True or False."""
    def policy(prim: Primitive, *avals: ShapedArray, **params: Any) -> bool:
        first, second = policy_1(prim, *avals, **params), policy_2(prim, *avals, **params)
        if not (isinstance(first, bool) and isinstance(second, bool)):
            raise ValueError(f"save_from_both_policies needs policies that return True or "
                             f"False, got {first!r} and {second!r} for {prim}. Write the "
                             f"combined policy as a function of your own instead.")
        return first or second
    return policy
# --8<-- [end:names]


# --8<-- [start:decisions]
class _Decision:
    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


Saveable, Recompute = _Decision("Saveable"), _Decision("Recompute")


class Offloadable(NamedTuple):
    """Save the value in another memory (``src`` to ``dst``, JAX's memory kinds such as
    ``"pinned_host"``). Our devices have one memory each, the host's, so it is saved."""

    src: str
    dst: str


def save_and_offload_only_these_names(*, names_which_can_be_saved: Sequence[str],
                                      names_which_can_be_offloaded: Sequence[str],
                                      offload_src: str, offload_dst: str) -> Callable:
    """``save_only_these_names``, and the values of the second list offloaded (here: saved)."""
    saved, offloaded = set(names_which_can_be_saved), set(names_which_can_be_offloaded)
    if saved & offloaded:
        raise ValueError(f"A name may be saved or offloaded, not both: {sorted(saved & offloaded)}"
                         f" appear in names_which_can_be_saved and "
                         f"names_which_can_be_offloaded.")

    def policy(prim: Primitive, *_: ShapedArray, **params: Any):
        name = params.get("name") if prim is lax.name_p else None
        if name in saved:
            return Saveable
        return Offloadable(offload_src, offload_dst) if name in offloaded else Recompute
    return policy


def offload_dot_with_no_batch_dims(offload_src: str, offload_dst: str) -> Callable:
    """``dots_with_no_batch_dims_saveable``, the products offloaded (here: saved)."""
    def policy(prim: Primitive, *avals: ShapedArray, **params: Any):
        keep = DotsSaveable(only_if_no_batch_dims=True)(prim, *avals, **params)
        return Offloadable(offload_src, offload_dst) if keep else Recompute
    return policy


def _saves(decision: Any, policy: Callable) -> bool:
    """A policy's answer: True or False, or JAX's ``Saveable``, ``Recompute`` or
    ``Offloadable(...)``."""
    if isinstance(decision, bool) or decision is Saveable or decision is Recompute:
        return decision is True or decision is Saveable
    if isinstance(decision, Offloadable):
        return True
    raise TypeError(f"The checkpoint policy {getattr(policy, '__name__', policy)} returned "
                    f"{decision!r} of type {type(decision).__name__}: a policy returns True "
                    f"or False, or ad_checkpoint.Saveable, Recompute or Offloadable(src, dst).")
# --8<-- [end:decisions]


class checkpoint_policies:  # noqa: N801 -- a module in JAX: jax.checkpoint_policies
    """The policies, by JAX's names."""

    nothing_saveable = staticmethod(nothing_saveable)
    everything_saveable = staticmethod(everything_saveable)
    dots_saveable = checkpoint_dots = DotsSaveable()
    dots_with_no_batch_dims_saveable = DotsSaveable(only_if_no_batch_dims=True)
    checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable
    save_only_these_names = staticmethod(save_only_these_names)
    save_any_names_but_these = staticmethod(save_any_names_but_these)
    save_anything_except_these_names = staticmethod(save_anything_except_these_names)
    save_from_both_policies = staticmethod(save_from_both_policies)
    save_and_offload_only_these_names = staticmethod(save_and_offload_only_these_names)
    offload_dot_with_no_batch_dims = staticmethod(offload_dot_with_no_batch_dims)


def _saved_eqns(jaxpr: Jaxpr, policy: Callable | None) -> list[int]:
    """The equations whose (floating-point) results the policy saves."""
    if policy is None:
        return []
    return [i for i, eqn in enumerate(jaxpr.eqns)
            if all(is_inexact(v.aval) for v in eqn.outvars)
            and _saves(policy(eqn.primitive, *[a.aval for a in eqn.invars], **eqn.params),
                       policy)]


# --8<-- [start:remat_p]
class RematPrimitive(Primitive):
    """The class of ``remat_p``: on the tape it records its own entry, with the residuals
    its policy saves (every other interpreter treats it as a plain primitive)."""

    def bind(self, *args: Any, **params: Any) -> list[Any]:
        trace = find_top_trace(args)
        if not isinstance(trace, TapeTrace):
            return super().bind(*args, **params)
        tracers = [full_raise(trace, x) for x in args]
        if all(t.node is None for t in tracers):
            return super().bind(*args, **params)
        return _taped_forward(trace, tracers, params)


remat_p = RematPrimitive("remat2", multiple_results=True)


def _taped_forward(trace: TapeTrace, tracers: list[TapeTracer], params: dict) -> list[Any]:
    """The forward pass: the program with its saved values as extra outputs, run by the
    level below; the tape keeps the inputs and those residuals, nothing else."""
    jaxpr: ClosedJaxpr = params["jaxpr"]
    saved = _saved_eqns(jaxpr.jaxpr, params["policy"])
    extra = [v for i in saved for v in jaxpr.jaxpr.eqns[i].outvars]
    inner = jaxpr.jaxpr
    forward = ClosedJaxpr(Jaxpr(inner.constvars, inner.invars, [*inner.outvars, *extra],
                                inner.eqns), jaxpr.consts)
    primals_in = [t.primal for t in tracers]
    outs = primal_below(remat_p, primals_in, dict(params, jaxpr=forward))
    outs, residuals = outs[:len(inner.outvars)], outs[len(inner.outvars):]
    tape = trace.main.global_data
    out_nodes = tape.new_nodes(len(outs))
    in_nodes = [t.node for t in tracers]
    entry_params = dict(params, residuals=tuple(residuals))
    tape.entries.append(TapeEntry(remat_p, entry_params, in_nodes, out_nodes, primals_in, outs))
    return [TapeTracer(trace, out, node) for out, node in zip(outs, out_nodes)]
# --8<-- [end:remat_p]


def remat_impl(*args, jaxpr: ClosedJaxpr, prevent_cse: bool, differentiated: bool,
               policy: Any):
    return compile_jaxpr(jaxpr, "interpreter")(*args)


impl_rules[remat_p] = remat_impl


def remat_abstract_eval(*avals: ShapedArray, jaxpr: ClosedJaxpr, **params: Any):
    expected = jaxpr.in_avals
    if [(a.shape, a.dtype) for a in avals] != [(a.shape, a.dtype) for a in expected]:
        raise TypeError(f"remat2 was given operands of types {[a.str_short() for a in avals]}, "
                        f"but its program takes {[a.str_short() for a in expected]}.")
    return list(jaxpr.out_avals)


abstract_eval_rules[remat_p] = remat_abstract_eval


def remat_jvp(primals, tangents, *, jaxpr: ClosedJaxpr, **params: Any):
    """The JVP of a checkpointed call is a checkpointed call of the JVP program."""
    float_in = [is_inexact(a) for a in jaxpr.in_avals]
    program, consts = jvp_program(jaxpr, float_in)
    float_tangents = [t for t, f in zip(tangents, float_in) if f]
    params = dict(params, differentiated=True)
    outs = remat_p.bind(*consts, *primals, *float_tangents, jaxpr=program, **params)
    return split_tangents(list(outs), jaxpr.out_avals)


jvp_rules[remat_p] = remat_jvp


# --8<-- [start:remat_vjp]
def remat_vjp(cts, *primals, out, needs, jaxpr: ClosedJaxpr, prevent_cse: bool,
              differentiated: bool, policy: Any, residuals: tuple = ()):
    """The backward pass: ``remat2`` of the backward program, which recomputes the forward
    values the policy did not save, then runs their VJP rules."""
    wanted = [need and is_inexact(a) for need, a in zip(needs, jaxpr.in_avals)]
    if not any(wanted):
        return [None] * len(wanted)
    float_cts = [ct for ct, a in zip(cts, jaxpr.out_avals) if is_inexact(a)]
    program, consts = _backward_program(jaxpr, tuple(wanted), policy,
                                        [get_aval(ct) for ct in float_cts])
    results = iter(remat_p.bind(*consts, *primals, *residuals, *float_cts, jaxpr=program,
                                prevent_cse=prevent_cse, differentiated=True, policy=policy))
    return [next(results) if w else None for w in wanted]


vjp_rules[remat_p] = remat_vjp
vjp_rules_take_needs.add(remat_p)
# --8<-- [end:remat_vjp]


def _backward_program(jaxpr: ClosedJaxpr, wanted: tuple[bool, ...], policy: Any,
                      ct_avals: list[Any]) -> tuple[ClosedJaxpr, list[Any]]:
    """(primals, residuals, cotangents of the float outputs) -> cotangents of the wanted
    inputs, traced to a program."""
    saved = _saved_eqns(jaxpr.jaxpr, policy)
    res_avals = [v.aval for i in saved for v in jaxpr.jaxpr.eqns[i].outvars]
    float_out = [is_inexact(a) for a in jaxpr.out_avals]
    n_in, n_res = len(wanted), len(res_avals)

    def backward(*args):
        primals, residuals, cts = args[:n_in], args[n_in:n_in + n_res], iter(args[n_in + n_res:])

        def of_wanted(*xs):
            xs = iter(xs)
            full = [next(xs) if w else p for w, p in zip(wanted, primals)]
            replay = dict(_by_eqn(jaxpr.jaxpr, saved, residuals))
            return run_claimed(jaxpr, _replay, jaxpr, full, replay)  # (a claimed one's claim)

        chosen = [p for p, w in zip(primals, wanted) if w]
        outs, pullback = vjp(of_wanted, *chosen)
        full_cts = [next(cts) if f else lax.zeros_like(o) for f, o in zip(float_out, outs)]
        return [lax.zeros_like(p) if ct is None else ct
                for ct, p in zip(pullback(full_cts), chosen)]

    cts_in = [a for a in jaxpr.out_avals if is_inexact(a)]
    cts_in = [a._replace(weak_type=c.weak_type) for a, c in zip(cts_in, ct_avals)]
    program, consts = trace_flat(backward, [*jaxpr.in_avals, *res_avals, *cts_in])
    return ClosedJaxpr(dce(program.jaxpr), program.consts), consts


def _by_eqn(jaxpr: Jaxpr, saved: list[int], residuals: Sequence[Any]):
    """The residuals, grouped by the equation that made them: (index, its results)."""
    residuals = iter(residuals)
    for i in saved:
        yield i, [next(residuals) for _ in jaxpr.eqns[i].outvars]


# --8<-- [start:replay]
def _replay(closed: ClosedJaxpr, args: Sequence[Any], saved: dict[int, list[Any]]) -> list:
    """Runs the program again, as ``eval_jaxpr`` does, except that a saved equation takes its
    residual instead of computing: on the tape it is recorded with the residual as its
    output, so its VJP rule runs as if it had computed it."""
    jaxpr = closed.jaxpr
    env = dict(zip(jaxpr.constvars, closed.consts))
    env.update(zip(jaxpr.invars, args))

    def read(atom):
        return atom.val if isinstance(atom, Literal) else env[atom]

    for i, eqn in enumerate(jaxpr.eqns):
        ins = [read(a) for a in eqn.invars]
        if i in saved:
            outs = _record_saved(eqn.primitive, eqn.params, ins, saved[i])
        else:
            outs = eqn.primitive.bind(*ins, **eqn.params)
            outs = outs if eqn.primitive.multiple_results else [outs]
        env.update(zip(eqn.outvars, outs))
    return [read(a) for a in jaxpr.outvars]


def _record_saved(prim: Primitive, params: dict, ins: list[Any], outs: list[Any]) -> list:
    trace = find_top_trace(ins)
    if not isinstance(trace, TapeTrace):
        return outs
    tracers = [full_raise(trace, x) for x in ins]
    in_nodes = [t.node for t in tracers]
    if all(n is None for n in in_nodes):
        return outs
    tape = trace.main.global_data
    out_nodes = [tape.new_node() for _ in outs]
    primals_in = [t.primal for t in tracers]
    tape.entries.append(TapeEntry(prim, params, in_nodes, out_nodes, primals_in, list(outs)))
    return [TapeTracer(trace, o, n) for o, n in zip(outs, out_nodes)]
# --8<-- [end:replay]


# --8<-- [start:checkpoint]
def checkpoint(fun: Callable, *, prevent_cse: bool = True, policy: Callable | None = None,
               static_argnums: int | tuple[int, ...] = (),
               static_argnames: str | Sequence[str] = ()) -> Callable:
    """``fun``, recomputed in the backward pass instead of having its intermediate values
    kept (except those ``policy`` saves). Values are unchanged; only what reverse mode keeps
    in memory, and computes twice, changes.

    Example:
        >>> import stage2_jit as jax, stage2_jit.numpy as jnp
        >>> f = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)))
        >>> print(jax.grad(f)(1.0))
        0.36003944
    """
    statics = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)

    @functools.wraps(fun)
    def checkpointed(*args: Any, **kwargs: Any) -> Any:
        nums = {n % len(args) for n in statics}
        static_kw = {k: v for k, v in kwargs.items() if k in names}
        dynamic = ([a for i, a in enumerate(args) if i not in nums],
                   {k: v for k, v in kwargs.items() if k not in names})
        leaves, in_tree = tree_flatten(dynamic)
        out_tree_box: list[Any] = []

        def flat_fun(*xs):
            dyn_args, dyn_kwargs = tree_unflatten(in_tree, xs)
            it = iter(dyn_args)
            full = [args[i] if i in nums else next(it) for i in range(len(args))]
            out_flat, out_tree = tree_flatten(fun(*full, **dyn_kwargs, **static_kw))
            out_tree_box.append(out_tree)
            return out_flat

        leaves = [as_value(x) for x in leaves]
        program, consts = trace_flat(flat_fun, [x.aval for x in leaves])
        outs = remat_p.bind(*consts, *leaves, jaxpr=program, prevent_cse=prevent_cse,
                            differentiated=False, policy=policy)
        return tree_unflatten(out_tree_box[0], outs)

    return checkpointed


remat = checkpoint
# --8<-- [end:checkpoint]
