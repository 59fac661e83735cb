"""Tracing: running a Python function on abstract values to record it as a jaxpr.

The tracing interpreter is *dynamic* (JAX's "omnistaging"): while it runs it is the default
interpreter, so even operations on constants are recorded rather than computed. Its tracers
carry only an aval; each primitive applied to them appends an equation whose output types
come from ``abstract_eval_rules``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from stage1_autodiff.autodiff import claimed_here, fwd_of_claimed
from stage1_autodiff.core import (
    Array,
    ConcretizationTypeError,
    Primitive,
    ShapedArray,
    Trace,
    Tracer,
    asarray,
    dynamic_trace,
    full_raise,
    new_main,
    trace_state,
)
from stage1_autodiff.extension import set_program_claimer as set_claimer
from stage1_autodiff.extension import set_program_runner

from .abstract_eval import abstract_eval_rules
from .errors import JaxprTypeError
from .jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, map_programs


# --8<-- [start:jaxpr_tracer]
class JaxprTracer(Tracer):
    """A value while tracing: only its type is known. ``debug_name`` says which argument of
    the traced function it is, for error messages."""

    __slots__ = ("_aval", "debug_name")

    def __init__(self, trace: JaxprTrace, aval: ShapedArray, debug_name: str | None = None):
        self._trace = trace
        self._aval = aval
        self.debug_name = debug_name

    @property
    def aval(self) -> ShapedArray:
        return self._aval

    shape = property(lambda self: self._aval.shape)
    dtype = property(lambda self: self._aval.dtype)
    weak_type = property(lambda self: self._aval.weak_type)

    def _concrete_value(self, context: str,
                        error: type[TypeError] = ConcretizationTypeError) -> np.ndarray:
        names = self._trace.builder.argument_names(self)
        origin = (f"the value depends on the argument{'s' if len(names) > 1 else ''} "
                  f"{', '.join(names)}" if names else "the value is traced")
        raise error(
            f"Abstract tracer value encountered where a concrete value is expected: "
            f"{context} was called on a traced {self.aval.str_short()} while tracing with jit "
            f"({origin}). A Python `if`, `while`, bool(), int() or float() needs the actual "
            f"number, which is not known until the compiled function runs. If the value is "
            f"really a constant, mark that argument static with static_argnums or "
            f"static_argnames; to choose between values elementwise, use jnp.where; to "
            f"branch or loop on it, use lax.cond, lax.while_loop, lax.fori_loop or lax.scan.")
# --8<-- [end:jaxpr_tracer]


# --8<-- [start:jaxpr_builder]
class JaxprBuilder:
    """What a trace has recorded: equations, and the variables and constants they use."""

    def __init__(self) -> None:
        self.eqns: list[JaxprEqn] = []
        self.vars: dict[int, Var] = {}        # id(tracer) -> its variable
        self.tracers: list[JaxprTracer] = []  # keeps tracers alive so their ids stay unique
        self.consts: dict[int, JaxprTracer] = {}  # id(constant value) -> its tracer
        self.const_values: dict[Var, Any] = {}

    def new_tracer(self, trace: JaxprTrace, aval: ShapedArray,
                   debug_name: str | None = None) -> JaxprTracer:
        tracer = JaxprTracer(trace, aval, debug_name)
        self.tracers.append(tracer)
        self.vars[id(tracer)] = Var(aval)
        return tracer

    def var(self, tracer: JaxprTracer) -> Var:
        return self.vars[id(tracer)]

    def argument_names(self, tracer: JaxprTracer) -> list[str]:
        """The arguments ``tracer``'s value depends on, found by walking the equations back."""
        needed = {self.var(tracer)}
        for eqn in reversed(self.eqns):
            if needed.intersection(eqn.outvars):
                needed.update(a for a in eqn.invars if isinstance(a, Var))
        named = {self.var(t): t.debug_name for t in self.tracers if t.debug_name}
        return [named[v] for v in sorted(needed & named.keys(), key=lambda v: v.count)]

    def const(self, trace: JaxprTrace, value: Any) -> JaxprTracer:
        """A constant (an array, or a tracer of a lower level) used by the traced function."""
        if id(value) not in self.consts:
            tracer = self.new_tracer(trace, value.aval)
            self.consts[id(value)] = tracer
            self.const_values[self.var(tracer)] = value
        return self.consts[id(value)]

    def build(self, in_tracers: list[JaxprTracer],
              out_tracers: list[JaxprTracer]) -> tuple[Jaxpr, list[Any]]:
        invars = [self.var(t) for t in in_tracers]
        outvars = [self.var(t) for t in out_tracers]
        constvars = list(self.const_values)
        jaxpr = Jaxpr(constvars, invars, outvars, self.eqns)
        return _inline_literals(jaxpr, [self.const_values[v] for v in constvars])


def _inline_literals(jaxpr: Jaxpr, consts: list[Any]) -> tuple[Jaxpr, list[Any]]:
    """Scalar constants are written into the program text (``2.0:f32[]``), not passed in."""
    literals = {v: Literal(c, v.aval) for v, c in zip(jaxpr.constvars, consts)
                if isinstance(c, Array) and c.shape == ()}
    constvars = [v for v in jaxpr.constvars if v not in literals]
    consts = [c for v, c in zip(jaxpr.constvars, consts) if v not in literals]
    eqns = [eqn._replace(invars=[literals.get(a, a) if isinstance(a, Var) else a
                                 for a in eqn.invars]) for eqn in jaxpr.eqns]
    outvars = [literals.get(v, v) for v in jaxpr.outvars]
    return Jaxpr(constvars, jaxpr.invars, outvars, eqns), consts
# --8<-- [end:jaxpr_builder]


# --8<-- [start:type_extensions]
class TypeExtension:
    """What a later stage adds to the types tracing infers. Stage 4 puts each value's sharding
    into its aval (``f32[8@data,4]``): arguments get theirs from the arrays, results from
    the primitive's sharding rule. Stages 2 and 3 have none."""

    def argument_avals(self, avals: list[ShapedArray]) -> list[ShapedArray]:
        return avals

    def result_avals(self, prim: Primitive, avals_in: list[ShapedArray],
                     avals_out: list[ShapedArray], params: dict[str, Any]) -> list[ShapedArray]:
        return avals_out


type_extensions: list[TypeExtension] = []
# --8<-- [end:type_extensions]


# --8<-- [start:jaxpr_trace]
class JaxprTrace(Trace):
    """The tracing interpreter: records each primitive as an equation of the jaxpr."""

    @property
    def builder(self) -> JaxprBuilder:
        return self.main.global_data

    def pure(self, val: Any) -> JaxprTracer:
        return self.builder.const(self, val if isinstance(val, Array) else asarray(val))

    def lift(self, val: Tracer) -> JaxprTracer:
        return self.builder.const(self, val)  # a lower level's value: a constant here

    def process_primitive(self, prim, tracers, params):
        avals_in = [t.aval for t in tracers]
        avals_out = abstract_eval_rules[prim](*avals_in, **params)
        if not prim.multiple_results:
            avals_out = [avals_out]
        for extension in type_extensions:
            avals_out = extension.result_avals(prim, avals_in, avals_out, params)
        outs = [self.builder.new_tracer(self, aval) for aval in avals_out]
        invars = [self.builder.var(t) for t in tracers]
        outvars = [self.builder.var(t) for t in outs]
        self.builder.eqns.append(JaxprEqn(prim, invars, params, outvars))
        return outs
# --8<-- [end:jaxpr_trace]

    def process_custom_vjp_call(self, prim, fun, fwd, bwd, tracers, out_trees):
        if claimed_here(self):  # a grad above differentiates the call: fwd's operations
            return fwd_of_claimed(self, fwd, tracers)
        return self._stage_custom_vjp_call(prim, fun, fwd, bwd, tracers, out_trees)

    def _stage_custom_vjp_call(self, prim, fun, fwd, bwd, tracers, out_trees):
        """Stages one ``custom_vjp_call`` equation rather than the operations of ``fun``, so
        that differentiating the jaxpr later (``grad(jit(f))``) still uses ``bwd``. The
        equation keeps ``fun`` traced to a program, ``call_jaxpr`` (what running the jaxpr
        runs), and ``fwd`` and ``bwd`` as they are (what its tape runs). The values ``fun``
        closes over become its first operands, ``num_consts`` of them.

        ``fwd`` and ``bwd`` run only when the jaxpr is differentiated, perhaps after this
        trace has ended (``grad(jit(f))``): they must not close over its tracers, such as an
        argument of the jitted function (pass it to the custom_vjp function instead).

        NB: JAX's DynamicJaxprTrace.process_custom_vjp_call (jax/_src/interpreters/
        partial_eval.py) also traces ``fwd`` to a jaxpr, lazily; we keep the Python function.
        """
        jaxpr, consts = trace_to_jaxpr(fun, [t.aval for t in tracers])
        call_jaxpr, consts = closed_with_consts_as_args(jaxpr, consts)
        params = dict(name=getattr(fun, "__name__", "fun"), call_jaxpr=call_jaxpr,
                      num_consts=len(consts), fwd=fwd, bwd=bwd, out_trees=out_trees)
        const_tracers = [full_raise(self, c) for c in consts]
        return self.process_primitive(prim, [*const_tracers, *tracers], params)

    def process_custom_jvp_call(self, prim, fun, jvp, tracers):
        """Stages one ``custom_jvp_call`` equation, ``fun`` traced to ``call_jaxpr`` and the
        rule ``jvp`` kept as it is, so that differentiating the jaxpr later still uses the
        rule. Params in JAX's order; ``num_consts`` (values ``fun`` closes over, passed
        first) is ours. NB: JAX's DynamicJaxprTrace.process_custom_jvp_call
        (jax/_src/interpreters/partial_eval.py) traces the rule lazily to a jaxpr."""
        jaxpr, consts = trace_to_jaxpr(fun, [t.aval for t in tracers])
        call_jaxpr, consts = closed_with_consts_as_args(jaxpr, consts)
        params = dict(name=getattr(fun, "__name__", "fun"), call_jaxpr=call_jaxpr, jvp=jvp,
                      symbolic_zeros=False, num_consts=len(consts))
        const_tracers = [full_raise(self, c) for c in consts]
        return self.process_primitive(prim, [*const_tracers, *tracers], params)


_dynamic = dynamic_trace  # ``main`` the default interpreter: constants staged too (omnistaging)


# --8<-- [start:trace_to_jaxpr]
def trace_to_jaxpr(fun: Callable[..., Sequence[Any]], in_avals: Sequence[ShapedArray],
                   debug_names: Sequence[str] | None = None) -> tuple[Jaxpr, list[Any]]:
    """Runs ``fun`` (flat arguments in, a flat list out) on tracers of ``in_avals``."""
    names = debug_names or [None] * len(in_avals)
    for extension in type_extensions:
        in_avals = extension.argument_avals(list(in_avals))
    with new_main(JaxprTrace, JaxprBuilder()) as main, _dynamic(main):
        trace: JaxprTrace = main.trace
        tracers_in = [trace.builder.new_tracer(trace, aval, name)
                      for aval, name in zip(in_avals, names)]
        outs = fun(*tracers_in)
        tracers_out = [full_raise(trace, out) for out in outs]
        return trace.builder.build(tracers_in, tracers_out)
# --8<-- [end:trace_to_jaxpr]


def closed_with_consts_as_args(jaxpr: Jaxpr,
                               consts: list[Any]) -> tuple[ClosedJaxpr, list[Any]]:
    """A program whose constants become leading arguments, so that they (possibly tracers of
    an outer transformation) are passed in by the equation that calls it rather than baked
    in: ``jit``'s call and ``custom_vjp_call``."""
    program = Jaxpr([], [*jaxpr.constvars, *jaxpr.invars], jaxpr.outvars, jaxpr.eqns)
    return ClosedJaxpr(program, []), consts


# --8<-- [start:eval_jaxpr]
def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any]) -> list[Any]:
    """Runs a jaxpr by binding each equation's primitive: under no transformation that is
    NumPy (the reference backend); under grad, vmap or another trace it is transformed."""
    # --8<-- [start:task2_2]
    env: dict[Var, Any] = {}

    def read(atom):
        return atom.val if isinstance(atom, Literal) else env[atom]

    for var, value in zip(jaxpr.constvars, consts):
        env[var] = value
    for var, value in zip(jaxpr.invars, args):
        env[var] = value
    for eqn in jaxpr.eqns:
        outs = eqn.primitive.bind(*[read(a) for a in eqn.invars], **eqn.params)
        outs = outs if eqn.primitive.multiple_results else [outs]
        for var, value in zip(eqn.outvars, outs):
            env[var] = value
    return [read(a) for a in jaxpr.outvars]
    # --8<-- [end:task2_2]
# --8<-- [end:eval_jaxpr]


def jaxpr_as_fun(closed: ClosedJaxpr) -> Callable[..., list[Any]]:
    """The function a closed jaxpr computes: flat arguments in, a flat list out.

    Example:
        >>> import stage2_jit as jax, stage2_jit.numpy as jnp
        >>> double = jaxpr_as_fun(jax.make_jaxpr(lambda x: x * 2.0)(1.0))
        >>> double(jnp.float32(3.0))
        [Array(6., dtype=float32)]
    """
    if closed.claimed:
        return lambda *args: run_claimed(closed, eval_jaxpr, closed.jaxpr, closed.consts, args)
    return lambda *args: eval_jaxpr(closed.jaxpr, closed.consts, args)


def run_claimed(closed: ClosedJaxpr, evaluate: Callable[..., list[Any]], *args: Any
                ) -> list[Any]:
    """``evaluate(*args)``, a run of ``closed`` (``eval_jaxpr``, or remat's replay). If the
    program is claimed, the interpreters now on the stack compute its custom_vjp calls by
    their fwd (a grad begun inside the run is not among them)."""
    if not closed.claimed:
        return evaluate(*args)
    state = trace_state
    before, state.claim_depth = state.claim_depth, len(state.trace_stack)
    try:
        return evaluate(*args)
    finally:
        state.claim_depth = before


_claimed: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # program -> claimed copy


def claim_programs(params: dict[str, Any]) -> dict[str, Any]:
    """An op's params, its programs (and theirs, nested) marked ``claimed``: a ``grad`` above
    runs the op as its primal computation (stage 1's ``autodiff.primal_below``) and
    differentiates the ``custom_vjp`` calls inside by their ``bwd``. Whatever runs such a
    program, then or later (a ``jvp`` of the grad, a second ``grad``, a staged backward
    pass), computes those calls by their ``fwd`` and differentiates that, as in JAX."""
    for value in params.values():  # (most ops hold no program: a look, no copy)
        if type(value) is ClosedJaxpr or type(value) is tuple and value and \
                type(value[0]) is ClosedJaxpr:
            return {name: map_programs(_claimed_copy, value) for name, value in params.items()}
    return params


def _claimed_copy(program: ClosedJaxpr) -> ClosedJaxpr:
    if not program.claimed and program not in _claimed:
        jaxpr = program.jaxpr
        eqns = [eqn._replace(params=claim_programs(eqn.params)) for eqn in jaxpr.eqns]
        _claimed[program] = ClosedJaxpr(
            Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns), program.consts, True)
    return program if program.claimed else _claimed[program]


set_claimer(claim_programs)


# A custom_vjp_call equation carries its function as a program; stage 1 runs it with this.
set_program_runner(jaxpr_as_fun)


# --8<-- [start:typecheck_jaxpr]
def typecheck_jaxpr(jaxpr: Jaxpr) -> None:
    """Checks that every variable is defined before use and every equation's output types
    are what its primitive's abstract-eval rule says. Raises JaxprTypeError otherwise."""
    defined = set(jaxpr.constvars) | set(jaxpr.invars)
    for i, eqn in enumerate(jaxpr.eqns):
        for atom in eqn.invars:
            if isinstance(atom, Var) and atom not in defined:
                raise JaxprTypeError(f"Equation {i} ({eqn.primitive}) uses a variable that is "
                                     f"not defined before it.")
        expected = abstract_eval_rules[eqn.primitive](*[a.aval for a in eqn.invars],
                                                      **eqn.params)
        expected = expected if eqn.primitive.multiple_results else [expected]
        found = [v.aval for v in eqn.outvars]
        if [(a.shape, a.dtype) for a in expected] != [(a.shape, a.dtype) for a in found]:
            raise JaxprTypeError(f"Equation {i} ({eqn.primitive}) has output types "
                                 f"{[a.str_short() for a in found]}, but its rule gives "
                                 f"{[a.str_short() for a in expected]}.")
        defined.update(eqn.outvars)
    for atom in jaxpr.outvars:
        if isinstance(atom, Var) and atom not in defined:
            raise JaxprTypeError("The jaxpr returns a variable that is never defined.")
# --8<-- [end:typecheck_jaxpr]
