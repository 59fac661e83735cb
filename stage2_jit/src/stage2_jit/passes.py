"""Compiler passes: small rewrites of a jaxpr that keep its meaning and make it cheaper.

A jaxpr is a list of equations in an order where every variable is defined before it is
used, so each pass is one walk over that list, forwards or backwards:

- **Dead-code elimination** (``dce``) walks *backwards* from the outputs, keeping only the
  equations whose results something still needs. An equation with an *effect* (printing,
  in later stages a collective) is kept even when nobody reads its results: it exists for
  the effect.
- **Common-subexpression elimination** (``cse``) walks *forwards*, remembering each
  equation by its primitive, params and inputs. When the same computation comes again, the
  later copy is dropped and its results are renamed to the earlier ones.
- **Constant folding** (``constant_fold``) walks forwards and computes, at compile time,
  every equation whose inputs are all known (literals, or constants with values), as long
  as the result is small. A scalar result is written into the program as a literal, an
  array of one repeated value as a broadcast of a literal, any other small array becomes a
  new constant; a large result is left to be computed at run time, so folding never bloats
  the program. Broadcasts and iotas themselves are kept (a loop computes them for free,
  where a constant would be read from memory), but their values count as known.
- ``optimize`` runs the three as a pipeline until nothing changes.
- Before code generation, **inlining** (``inline_calls``) replaces each nested ``jit`` (and
  each primitive a kernel computes from others, such as ``tile``) by its equations, and
  **broadcast sinking** (``sink_broadcasts``) moves a broadcast after the elementwise work on
  it. ``prepare_program`` is the pipeline every backend runs: inline, optimize, sink, DCE.

Each pass is a pure function: it builds a new jaxpr and leaves its argument alone, so a
student can print the program before and after.

NB: JAX itself runs only DCE on jaxprs (jax/_src/interpreters/partial_eval.py:dce_jaxpr);
CSE, constant folding and much more happen later in XLA, on HLO. We run them on the jaxpr
because our backends compile the jaxpr itself.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from dataclasses import replace
from typing import Any

import numpy as np
from stage1_autodiff.core import (
    Array,
    Primitive,
    PrimitiveKind,
    ShapedArray,
    Tracer,
    numpy_warnings_off,
    trace_state,
)
from stage1_autodiff.primitives import broadcast_in_dim_p

from stage1_autodiff import prims as p
from stage1_autodiff import windowed

from .callback import io_callback_p
from .debug import debug_print_p
from .jaxpr import Atom, ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, map_programs
from .tracing import _dynamic, trace_to_jaxpr


class UnsupportedError(Exception):
    """The program uses something a code generator does not handle: the backend runs it on
    the interpreter instead."""

# --8<-- [start:effects]
# Primitives that do something besides computing their results. Passes never remove,
# merge or fold them. Later stages add theirs (``effectful_primitives.add(...)``).
effectful_primitives: set[Primitive] = {debug_print_p, io_callback_p}

# The most elements constant folding may write into the program for one equation.
MAX_FOLDED_SIZE = 1_000


# ------------------------------------------------------------------------------------------
# Effects
# ------------------------------------------------------------------------------------------


def _sub_jaxprs(value: Any) -> Iterator[Jaxpr]:
    """The jaxprs inside a param (``jit``'s program; later, the branches of a ``cond``)."""
    if isinstance(value, ClosedJaxpr):
        yield value.jaxpr
    elif isinstance(value, Jaxpr):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _sub_jaxprs(item)


def has_effects(eqn: JaxprEqn) -> bool:
    """Whether ``eqn`` has an effect: an effectful primitive, or a call of a program with
    one (a ``jit`` whose body prints).

    Example:
        >>> import stage2_jit as jax
        >>> printing = jax.jit(lambda x: jax.debug.print("{}", x))
        >>> [has_effects(eqn) for eqn in jax.make_jaxpr(printing)(1.0).jaxpr.eqns]
        [True]
    """
    if eqn.primitive in effectful_primitives:
        return True
    return any(jaxpr_has_effects(sub) for value in eqn.params.values()
               for sub in _sub_jaxprs(value))


def jaxpr_has_effects(jaxpr: Jaxpr) -> bool:
    """Whether any equation of ``jaxpr`` has an effect (see :func:`has_effects`)."""
    return any(has_effects(eqn) for eqn in jaxpr.eqns)
# --8<-- [end:effects]


# ------------------------------------------------------------------------------------------
# Dead-code elimination
# ------------------------------------------------------------------------------------------


# --8<-- [start:dce]
def dce(jaxpr: Jaxpr) -> Jaxpr:
    """Drops the equations whose results are never used and that have no effect.

    Walking backwards, ``live`` holds the variables something later still reads: the
    outputs to begin with, then the inputs of every equation that is kept. Inputs and
    constants are left as they are (see :func:`dce_closed` to drop unused constants).

    Example:
        >>> import stage2_jit as jax, stage2_jit.numpy as jnp
        >>> def f(x):
        ...     unused = jnp.exp(x)
        ...     return x * 2.0
        >>> print(dce(jax.make_jaxpr(f)(1.0).jaxpr))
        { lambda ; a:f32[]. let b:f32[] = mul a 2.0:f32[] in (b,) }
    """
    # --8<-- [start:task2_4]
    live = {v for v in jaxpr.outvars if isinstance(v, Var)}
    kept = []
    for eqn in reversed(jaxpr.eqns):
        if has_effects(eqn) or live.intersection(eqn.outvars):
            kept.append(eqn)
            live.update(v for v in eqn.invars if isinstance(v, Var))
    kept.reverse()
    return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, kept)
    # --8<-- [end:task2_4]


def dce_closed(closed: ClosedJaxpr) -> ClosedJaxpr:
    """:func:`dce`, then also drops the constants that nothing reads any more.

    Example:
        >>> import stage2_jit as jax, stage2_jit.numpy as jnp
        >>> table = jnp.arange(3.0)
        >>> closed = jax.make_jaxpr(lambda x: (x, jnp.sum(table))[0])(1.0)
        >>> print(closed)
        { lambda a:f32[3]; b:f32[]. let
            _:f32[] = reduce_sum[axes=(0,) out_sharding=None] a
          in (b,) }
        >>> print(dce_closed(closed))
        { lambda ; a:f32[]. let  in (a,) }
    """
    jaxpr = dce(closed.jaxpr)
    used = _used_vars(jaxpr)
    pairs = [(v, c) for v, c in zip(jaxpr.constvars, closed.consts) if v in used]
    constvars = [v for v, _ in pairs]
    consts = [c for _, c in pairs]
    return ClosedJaxpr(Jaxpr(constvars, jaxpr.invars, jaxpr.outvars, jaxpr.eqns), consts)
# --8<-- [end:dce]


def _used_vars(jaxpr: Jaxpr) -> set[Var]:
    """The variables read by an equation or returned."""
    used = {v for v in jaxpr.outvars if isinstance(v, Var)}
    for eqn in jaxpr.eqns:
        used.update(v for v in eqn.invars if isinstance(v, Var))
    return used


# ------------------------------------------------------------------------------------------
# Common-subexpression elimination
# ------------------------------------------------------------------------------------------


# --8<-- [start:cse]
def cse(jaxpr: Jaxpr) -> Jaxpr:
    """Merges equations that compute the same thing: same primitive, same params, same
    inputs. The later copy is dropped and its results renamed to the earlier one's.

    Example:
        >>> import stage2_jit as jax, stage2_jit.numpy as jnp
        >>> f = lambda x: jnp.sin(x) + jnp.sin(x)
        >>> print(cse(jax.make_jaxpr(f)(1.0).jaxpr))
        { lambda ; a:f32[]. let b:f32[] = sin a; c:f32[] = add b b in (c,) }
    """
    renamed: dict[Var, Atom] = {}  # a dropped equation's result -> the earlier equal one
    seen: dict[Hashable, JaxprEqn] = {}
    eqns = []
    for eqn in jaxpr.eqns:
        eqn = eqn._replace(invars=[_rename(a, renamed) for a in eqn.invars])
        key = _cse_key(eqn)
        if key is not None and key in seen:
            renamed.update(zip(eqn.outvars, seen[key].outvars))
            continue
        if key is not None:
            seen[key] = eqn
        eqns.append(eqn)
    outvars = [_rename(a, renamed) for a in jaxpr.outvars]
    return Jaxpr(jaxpr.constvars, jaxpr.invars, outvars, eqns)


def _cse_key(eqn: JaxprEqn) -> Hashable | None:
    """What makes two equations equal, or None when ``eqn`` must never be merged: it has an
    effect (two prints print twice), or a param cannot be hashed (then we cannot tell).
    Programs and Python functions in params compare by identity: calls of one jitted function
    merge, but two ``custom_vjp_call``s merge only when their program and both rules are the
    same objects, so a call never takes another's ``fwd`` or ``bwd``."""
    if has_effects(eqn):
        return None
    params = tuple(sorted(eqn.params.items()))
    try:
        hash(params)
    except TypeError:
        return None
    return eqn.primitive, params, tuple(_atom_key(a) for a in eqn.invars)
# --8<-- [end:cse]


def _rename(atom: Atom, renamed: dict[Var, Atom]) -> Atom:
    return renamed.get(atom, atom) if isinstance(atom, Var) else atom


def _atom_key(atom: Atom) -> Hashable:
    """A variable is itself (compared by identity). A literal is its type and its bits:
    ``1.0:f32[]`` and ``1.0:f32[]`` weakly typed differ, and so do ``0.0`` and ``-0.0``."""
    if isinstance(atom, Var):
        return atom
    bits = np.asarray(atom.val, dtype=atom.aval.dtype).tobytes()
    return "literal", atom.aval, bits


# --8<-- [start:merge_scans]
def merge_scans(jaxpr: Jaxpr) -> Jaxpr:
    """Merges a scan into a later one that computes the same results and more: the same
    operands and loop, a body whose first outputs are computed as the earlier body computes
    its outputs. The later scan takes the earlier one's place (its operands are defined
    there) and the earlier one's results are renamed to its first ones.

    ``grad`` under ``jit`` makes such a pair: the tape records the primal scan, and the
    scan's VJP runs it again keeping each step's carry for the backward pass
    (``control_flow.scan_vjp``). JAX's partial evaluation runs one forward scan that saves
    its residuals; after this pass so does ours."""
    scans = [e for e in jaxpr.eqns if e.primitive.name == "scan" and not has_effects(e)]
    taken: dict[int, JaxprEqn] = {}  # id of an earlier scan -> the later one in its place
    moved: set[int] = set()  # ids of the later ones
    for k, early in enumerate(scans):
        for late in scans[k + 1:]:
            if id(early) not in taken and id(late) not in moved and _computes_as(late, early):
                taken[id(early)] = late
                moved.add(id(late))
    if not taken:
        return jaxpr
    renamed = {v: taken[id(early)].outvars[i] for early in scans if id(early) in taken
               for i, v in enumerate(early.outvars)}
    eqns = [taken.get(id(e), e) for e in jaxpr.eqns if id(e) not in moved]
    eqns = [e._replace(invars=[_rename(a, renamed) for a in e.invars]) for e in eqns]
    return Jaxpr(jaxpr.constvars, jaxpr.invars, [_rename(a, renamed) for a in jaxpr.outvars],
                 eqns)


def _computes_as(late: JaxprEqn, early: JaxprEqn) -> bool:
    """Whether scan ``late``'s first results are scan ``early``'s, computed the same way."""
    same = ("length", "reverse", "num_consts", "num_carry", "unroll")
    if [_atom_key(a) for a in late.invars] != [_atom_key(a) for a in early.invars] or any(
            late.params[k] != early.params[k] for k in same):
        return False
    body, model = late.params["jaxpr"], early.params["jaxpr"]
    n = len(model.jaxpr.outvars)
    if body.consts or model.consts or len(body.jaxpr.outvars) < n:
        return False
    head = dce(Jaxpr([], body.jaxpr.invars, body.jaxpr.outvars[:n], body.jaxpr.eqns))
    return _same_program(head, model.jaxpr)


def _same_program(a: Jaxpr, b: Jaxpr) -> bool:
    """Whether ``a`` and ``b`` are the same equations on their inputs, up to the names of
    their variables (params compared as CSE compares them)."""
    if len(a.eqns) != len(b.eqns) or len(a.invars) != len(b.invars):
        return False
    names: dict[Var, Atom] = dict(zip(a.invars, b.invars))
    for x, y in zip(a.eqns, b.eqns):
        key = _cse_key(x._replace(invars=[_rename(v, names) for v in x.invars]))
        if key is None or key != _cse_key(y):
            return False
        names.update(zip(x.outvars, y.outvars))
    return [_atom_key(_rename(v, names)) for v in a.outvars] == list(map(_atom_key, b.outvars))


def drop_unread_ys(jaxpr: Jaxpr) -> Jaxpr:
    """Scans no longer compute the stacked ``ys`` that nothing reads: each is dropped from the
    body's outputs, and what only it needed from the body. (``grad`` alone keeps the ``ys`` of
    the VJP's forward scan, which only ``value_and_grad`` reads.)"""
    used = _used_vars(jaxpr)
    eqns = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name != "scan" or has_effects(eqn):
            eqns.append(eqn)
            continue
        keep = [k < eqn.params["num_carry"] or v in used for k, v in enumerate(eqn.outvars)]
        if not all(keep):
            body = eqn.params["jaxpr"]
            inner = body.jaxpr
            outs = [v for v, k in zip(inner.outvars, keep) if k]
            pruned = dce(Jaxpr(inner.constvars, inner.invars, outs, inner.eqns))
            eqn = eqn._replace(params={**eqn.params, "jaxpr": replace(body, jaxpr=pruned)},
                               outvars=[v for v, k in zip(eqn.outvars, keep) if k])
        eqns.append(eqn)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns)
# --8<-- [end:merge_scans]


# ------------------------------------------------------------------------------------------
# Constant folding
# ------------------------------------------------------------------------------------------


# --8<-- [start:constant_fold]
def constant_fold(closed: ClosedJaxpr, new_constants: bool = True) -> ClosedJaxpr:
    """Computes at compile time every equation whose inputs are all known and whose
    results are small (at most ``MAX_FOLDED_SIZE`` elements). A scalar result becomes a
    literal; an array of one repeated value a broadcast of a literal; any other array a new
    constant (unless ``new_constants`` is False: then such an equation stays). Effects and
    constants that are tracers of an outer transformation are never folded.

    Example:
        >>> import stage2_jit as jax, stage2_jit.numpy as jnp
        >>> f = lambda x: jnp.add(1.0, 2.0) * x
        >>> print(jax.make_jaxpr(f)(1.0))
        { lambda ; a:f32[]. let
            b:f32[] = add 1.0:f32[] 2.0:f32[]
            c:f32[] = mul b a
          in (c,) }
        >>> print(constant_fold(jax.make_jaxpr(f)(1.0)))
        { lambda ; a:f32[]. let b:f32[] = mul 3.0:f32[] a in (b,) }
    """
    jaxpr = closed.jaxpr
    known: dict[Var, Array] = {v: _as_array(c, v.aval.weak_type)
                               for v, c in zip(jaxpr.constvars, closed.consts)
                               if not isinstance(c, Tracer)}
    folded: dict[Var, Atom] = {}  # a folded result -> its literal, or itself as a constant
    eqns = []
    for eqn in jaxpr.eqns:
        eqn = eqn._replace(invars=[_rename(a, folded) for a in eqn.invars])
        if not _can_fold(eqn, known):
            eqns.append(eqn)
            continue
        values = _evaluate(eqn, known)
        known.update(zip(eqn.outvars, values))
        if _cheaper_than_memory(eqn):  # kept as it is; its values are known downstream
            eqns.append(eqn)
            continue
        if not new_constants and not all(v.aval.shape == () or _is_splat(value)
                                         for v, value in zip(eqn.outvars, values)):
            eqns.append(eqn)  # its values are known downstream; it stays an equation
            continue
        for var, value in zip(eqn.outvars, values):
            if var.aval.shape == ():
                folded[var] = Literal(value, var.aval)
            elif _is_splat(value):
                eqns.append(_broadcast_literal(var, value))
            else:
                folded[var] = var  # it becomes a constant
    outvars = [_rename(a, folded) for a in jaxpr.outvars]
    return _with_new_constants(closed, eqns, outvars, folded, known)


def _can_fold(eqn: JaxprEqn, known: dict[Var, Array]) -> bool:
    inputs_known = all(isinstance(a, Literal) or a in known for a in eqn.invars)
    size = sum(v.aval.size for v in eqn.outvars)
    return (inputs_known and size <= MAX_FOLDED_SIZE and not has_effects(eqn)
            and eqn.primitive.name not in _LOOPS and eqn.primitive.name not in _HOST_CALLS)


# A loop run at compile time could take any time (XLA does not fold loops either).
_LOOPS = {"while", "scan"}

# A call back into Python runs when the program runs, as in JAX (XLA never folds a custom
# call), even when its operands are constants.
_HOST_CALLS = {"pure_callback"}


# Folding these would turn a scalar (or a count) into a stored array that generated code must
# read from memory; computed in the loop they cost nothing. XLA's folding skips them too.
_CHEAPER_THAN_MEMORY = {"broadcast_in_dim", "iota"}


def _cheaper_than_memory(eqn: JaxprEqn) -> bool:
    return eqn.primitive.name in _CHEAPER_THAN_MEMORY and eqn.outvars[0].aval.shape != ()


def _is_splat(value: Array) -> bool:
    """Whether every element is the first, bit for bit (so -0.0 and 0.0 differ)."""
    array = value._value
    return array.size > 0 and np.full_like(array, array.flat[0]).tobytes() == array.tobytes()


def _broadcast_literal(var: Var, value: Array) -> JaxprEqn:
    """``var = broadcast_in_dim value[0]``: a splat, written as a literal and a shape."""
    aval = ShapedArray((), var.aval.dtype, var.aval.weak_type)
    scalar = Literal(Array(np.asarray(value._value.flat[0]), aval.weak_type), aval)
    params = {"shape": var.aval.shape, "broadcast_dimensions": ()}
    return JaxprEqn(broadcast_in_dim_p, [scalar], params, [var])
# --8<-- [end:constant_fold]


def _evaluate(eqn: JaxprEqn, known: dict[Var, Array]) -> list[Array]:
    """Runs one equation on concrete values, with the output types the jaxpr gives."""
    args = [a.val if isinstance(a, Literal) else known[a] for a in eqn.invars]
    # The passes may run while an outer function is being traced (a jit inside a jit): make
    # the eval interpreter the default for this bind, or it would be staged out instead.
    with _dynamic(trace_state.trace_stack[0]), numpy_warnings_off():
        outs = eqn.primitive.bind(*args, **eqn.params)
    outs = outs if eqn.primitive.multiple_results else [outs]
    return [_as_array(out, var.aval.weak_type, var.aval.dtype)
            for out, var in zip(outs, eqn.outvars)]


def _as_array(value: Any, weak_type: bool, dtype: np.dtype | None = None) -> Array:
    """A concrete value as an Array of the type the program says it has."""
    value = np.asarray(value._value if isinstance(value, Array) else value, dtype=dtype)
    return Array(value, weak_type)


def _with_new_constants(closed: ClosedJaxpr, eqns: list[JaxprEqn], outvars: list[Atom],
                        folded: dict[Var, Atom], known: dict[Var, Array]) -> ClosedJaxpr:
    """The folded program: folded arrays that are still read become constants."""
    jaxpr = Jaxpr(closed.jaxpr.constvars, closed.jaxpr.invars, outvars, eqns)
    used = _used_vars(jaxpr)
    new_constvars = [v for v, atom in folded.items() if atom is v and v in used]
    constvars = [*jaxpr.constvars, *new_constvars]
    consts = [*closed.consts, *[known[v] for v in new_constvars]]
    return ClosedJaxpr(Jaxpr(constvars, jaxpr.invars, outvars, eqns), consts)


# ------------------------------------------------------------------------------------------
# The pipeline
# ------------------------------------------------------------------------------------------

MAX_ROUNDS = 4


# --8<-- [start:optimize]
def optimize(closed: ClosedJaxpr, new_constants: bool = True) -> ClosedJaxpr:
    """CSE, then constant folding, then DCE, repeated until the program stops shrinking.

    The order: CSE first, so that a value computed twice is folded once (one constant, not
    two equal copies). Folding then turns known values into literals, which can make two
    equations equal that were not before: the next round's CSE merges them. DCE comes last,
    to sweep up what the others leave behind: equations whose results nobody reads any more
    and constants that were folded into others. A pass removes equations, or (folding)
    replaces one by a broadcast: the list of primitives tells whether a round changed
    anything.

    Example:
        >>> import stage2_jit as jax, stage2_jit.numpy as jnp
        >>> def f(x):
        ...     unused = jnp.exp(x)
        ...     return jnp.sin(x) * jnp.add(1.0, 1.0) + jnp.sin(x)
        >>> print(optimize(jax.make_jaxpr(f)(1.0)))
        { lambda ; a:f32[]. let
            b:f32[] = sin a
            c:f32[] = mul b 2.0:f32[]
            d:f32[] = add c b
          in (d,) }
    """
    closed = _optimize_held_programs(closed)
    for _ in range(MAX_ROUNDS):
        before = [eqn.primitive for eqn in closed.jaxpr.eqns]
        jaxpr = merge_scans(cse(closed.jaxpr))
        closed = constant_fold(ClosedJaxpr(jaxpr, closed.consts), new_constants)
        closed = dce_closed(closed)
        closed = ClosedJaxpr(drop_unread_ys(closed.jaxpr), closed.consts)
        if [eqn.primitive for eqn in closed.jaxpr.eqns] == before:
            break
    return closed
# --8<-- [end:optimize]


# --8<-- [start:held_programs]
# Primitives whose params hold programs they run (a loop's body, a cond's branches): the
# passes optimize those programs too, as XLA optimizes the computations a While calls.
_HOLDS_PROGRAMS = {"cond", "while", "scan"}


def _optimize_held_programs(closed: ClosedJaxpr) -> ClosedJaxpr:
    """``closed`` with the programs its loops and branches hold optimized. A held program
    keeps its inputs and outputs (the primitive's operands and results depend on them), and
    gains no constants: folding there makes literals and splats only, since a code generator
    writes a body as a function of its operands. Each held program is optimized once, and
    equations that shared one still share the result, so CSE can still merge them."""
    done: dict[int, tuple[ClosedJaxpr, ClosedJaxpr]] = {}  # id -> (held, optimized)

    def optimized(program: ClosedJaxpr) -> ClosedJaxpr:
        if id(program) not in done:
            done[id(program)] = program, optimize(program, new_constants=False)
        return done[id(program)][1]

    eqns = [eqn._replace(params={k: map_programs(optimized, v) for k, v in eqn.params.items()})
            if eqn.primitive.name in _HOLDS_PROGRAMS else eqn for eqn in closed.jaxpr.eqns]
    jaxpr = closed.jaxpr
    return ClosedJaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns), closed.consts)
# --8<-- [end:held_programs]


# ------------------------------------------------------------------------------------------
# Before code generation: calls inlined, broadcasts sunk (the pipeline both backends run)
# ------------------------------------------------------------------------------------------


# --8<-- [start:inline_calls]
CALL_PARAMS = {"jit": "jaxpr", "custom_vjp_call": "call_jaxpr", "custom_jvp_call": "call_jaxpr",
               "remat2": "jaxpr"}  # primitive: its program
# Primitives a kernel computes from others, each with its decomposition over stage 1's
# primitives, traced at the equation's types (XLA expands such ops the same way).
DECOMPOSED = {p.tile_p: p.tile_by_copies,
              # a window at computed starts: a gather (scatter) of one clipped window
              p.dynamic_slice_p: p.dynamic_slice_by_gather,
              p.dynamic_update_slice_p: p.dynamic_update_slice_by_scatter,
              # windows: a strided slice per tap; a convolution's taps then one dot_general
              **windowed.DECOMPOSITIONS, p.conv_general_dilated_p: p.conv_by_patches}


def _program_of(eqn: JaxprEqn) -> Jaxpr:
    if eqn.primitive in DECOMPOSED:
        rule = DECOMPOSED[eqn.primitive]
        jaxpr, _ = trace_to_jaxpr(lambda *xs: [rule(*xs, **eqn.params)],
                                  [x.aval for x in eqn.invars])
        return jaxpr
    called = eqn.params[CALL_PARAMS[eqn.primitive.name]]
    if called.consts:
        raise UnsupportedError(f"{eqn.primitive} of a program with constants")
    return called.jaxpr


def inline_calls(jaxpr: Jaxpr) -> Jaxpr:
    """Replaces each nested ``jit`` equation, and each ``custom_vjp_call`` (whose forward
    program is all a kernel computes), by the equations of its program, so fusion sees
    through function boundaries (as XLA sees one module); and each ``DECOMPOSED`` primitive
    by the equations of its decomposition."""
    eqns: list[JaxprEqn] = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name not in CALL_PARAMS and eqn.primitive not in DECOMPOSED:
            eqns.append(eqn)
            continue
        inner = inline_calls(_program_of(eqn))
        renamed: dict[Var, Any] = dict(zip(inner.invars, eqn.invars))
        for inner_eqn in inner.eqns:
            invars = [renamed.get(a, a) if isinstance(a, Var) else a for a in inner_eqn.invars]
            # Fresh variables for each copy: a program called twice is inlined twice.
            outvars = [Var(v.aval) for v in inner_eqn.outvars]
            renamed.update(zip(inner_eqn.outvars, outvars))
            eqns.append(inner_eqn._replace(invars=invars, outvars=outvars))
        results = [renamed.get(a, a) if isinstance(a, Var) else a for a in inner.outvars]
        for outer, result in zip(eqn.outvars, results):
            eqns.append(JaxprEqn(p.stop_gradient_p, [result], {}, [outer]))  # a plain copy
    return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns)
# --8<-- [end:inline_calls]


# --8<-- [start:sink_broadcasts]
def sink_broadcasts(jaxpr: Jaxpr) -> Jaxpr:
    """``f(broadcast(a), broadcast(b))`` becomes ``broadcast(f(a, b))`` for an elementwise
    ``f`` (and threefry2x32) whose operands are all broadcast the same way: the values are
    computed once per distinct element, not once per copy. It also keeps loop-invariant
    work out of loops, which matters beyond speed: LLVM's loop vectorizer (LLVM 22, in
    Numba 0.68) does not finish on a loop whose body is a loop-invariant threefry hash."""
    producer = {v: eqn for eqn in jaxpr.eqns for v in eqn.outvars}
    eqns: list[JaxprEqn] = []
    for eqn in jaxpr.eqns:
        sources = [producer.get(a) if isinstance(a, Var) else None for a in eqn.invars]
        first = sources[0] if sources else None
        if (eqn.primitive.kind is PrimitiveKind.ELEMENTWISE
                and first is not None and first.primitive is p.broadcast_in_dim_p
                and all(s is not None and s.primitive is p.broadcast_in_dim_p
                        and s.params == first.params
                        and s.invars[0].aval.shape == first.invars[0].aval.shape
                        for s in sources)):
            shape = first.invars[0].aval.shape
            inner = [Var(out.aval._replace(shape=shape)) for out in eqn.outvars]
            eqns.append(eqn._replace(invars=[s.invars[0] for s in sources], outvars=inner))
            eqns += [first._replace(invars=[small], outvars=[out])
                     for small, out in zip(inner, eqn.outvars)]
            producer.update({out: eqns[-len(inner) + k] for k, out in enumerate(eqn.outvars)})
        else:
            eqns.append(eqn)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns)
# --8<-- [end:sink_broadcasts]


# --8<-- [start:prepare_program]
def prepare_program(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, Jaxpr]:
    """What a code generator writes from (both backends): nested calls inlined, the passes
    run, broadcasts sunk. Returns the optimized program and the same program with its
    constants as leading inputs: folding may leave array constants, which the generated
    function takes as its first arguments."""
    optimized = optimize(ClosedJaxpr(inline_calls(closed.jaxpr), list(closed.consts)))
    optimized = ClosedJaxpr(dce(sink_broadcasts(optimized.jaxpr)), optimized.consts)
    program = Jaxpr([], [*optimized.jaxpr.constvars, *optimized.jaxpr.invars],
                    optimized.jaxpr.outvars, optimized.jaxpr.eqns)
    return optimized, program
# --8<-- [end:prepare_program]
