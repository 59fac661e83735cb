"""Programs derived from programs: the JVP and the VJP of a closed jaxpr, as programs again.

A primitive that holds a program (``jit``, ``cond``, ``shard_map``) is differentiated by
binding itself again with the derivative of its program: the JVP program maps (primals,
tangents of the floating-point inputs) to (outputs, tangents of the floating-point outputs);
the VJP program maps (primals, cotangents of the floating-point outputs) to the cotangents
of the inputs being differentiated. Each is traced once per program and kept with it.

NB: JAX derives them with ``ad.jvp_jaxpr`` and partial evaluation
(jax/_src/interpreters/ad.py and partial_eval.py); its VJP saves residuals where ours
recomputes the forward pass inside the backward program.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from stage1_autodiff.autodiff import jvp, vjp_flat
from stage1_autodiff.core import ShapedArray, get_aval

from stage1_autodiff import dtypes
from stage1_autodiff import prims as lax

from .jaxpr import ClosedJaxpr
from .tracing import closed_with_consts_as_args, jaxpr_as_fun, trace_to_jaxpr

Tracer = Callable[[Callable, list[ShapedArray]], tuple[ClosedJaxpr, list[Any]]]
_derived: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # program -> {key: ...}


def trace_flat(fun: Callable, avals: Sequence[ShapedArray]) -> tuple[ClosedJaxpr, list[Any]]:
    """A flat function (a list of arguments in, a list out) traced on ``avals``: the program,
    taking what it closes over as leading arguments, and those values."""
    jaxpr, consts = trace_to_jaxpr(fun, list(avals))
    return closed_with_consts_as_args(jaxpr, consts)


def is_inexact(aval: ShapedArray) -> bool:
    """Whether values of ``aval`` have tangents: floats and complex numbers."""
    return dtypes.is_inexact(aval.dtype)


def _cached(program: ClosedJaxpr, key: Any, make: Callable[[], Any], trace: Tracer) -> Any:
    if trace is not trace_flat:  # another tracer (stage 4's, per mesh): not shared
        return make()
    cache = _derived.setdefault(program, {})
    if key not in cache:
        cache[key] = make()
    return cache[key]


# --8<-- [start:jvp_program]
def jvp_program(program: ClosedJaxpr, float_in: Sequence[bool],
                trace: Tracer = trace_flat) -> tuple[ClosedJaxpr, list[Any]]:
    """The program of (primals, tangents of the float inputs) -> (outputs, tangents of the
    float outputs), and the constants it takes first."""
    float_out = [is_inexact(a) for a in program.out_avals]

    def jvp_of_program(*args):
        primals, tangents = args[:len(float_in)], iter(args[len(float_in):])
        full = [next(tangents) if f else np.zeros(a.shape, dtypes.float0)
                for f, a in zip(float_in, program.in_avals)]
        outs, outs_dot = jvp(jaxpr_as_fun(program), list(primals), full)
        return [*outs, *[t for t, f in zip(outs_dot, float_out) if f]]

    avals = list(program.in_avals) + [a for a, f in zip(program.in_avals, float_in) if f]
    return _cached(program, ("jvp", tuple(float_in)),
                   lambda: trace(jvp_of_program, avals), trace)
# --8<-- [end:jvp_program]


# --8<-- [start:vjp_program]
def vjp_program(program: ClosedJaxpr, wanted: Sequence[bool], cts: Sequence[Any] = (),
                trace: Tracer = trace_flat) -> tuple[ClosedJaxpr, list[Any]]:
    """The program of (primals, cotangents of the float outputs) -> cotangents of the wanted
    inputs (zeros where an input does not matter), and the constants it takes first. The
    cotangents ``cts``, when given, say which are weakly typed (as the results then are, in
    JAX; by default, those of weakly typed outputs), and None for an output that no cotangent
    reaches: the program takes none for it, and no rule inside sees one."""
    float_avals = [a for a in program.out_avals if is_inexact(a)]
    given = [ct is not None for ct in cts] if cts else [True] * len(float_avals)
    run = jaxpr_as_fun(program)

    def vjp_of_program(*args):
        primals, cts = args[:len(wanted)], iter(args[len(wanted):])

        def of_wanted(*xs):  # the program as a function of the wanted inputs alone
            xs = iter(xs)
            return run(*[next(xs) if w else p for w, p in zip(wanted, primals)])

        chosen = [p for p, w in zip(primals, wanted) if w]
        _, pullback = vjp_flat(of_wanted, *chosen)
        present = iter(given)
        full = [next(cts) if is_inexact(a) and next(present) else None
                for a in program.out_avals]
        return [lax.zeros_like(p) if ct is None else ct for ct, p in zip(pullback(full), chosen)]

    ct_avals = [a if not cts else a._replace(weak_type=get_aval(ct).weak_type)
                for a, ct, g in zip(float_avals, cts or float_avals, given) if g]
    avals = list(program.in_avals) + ct_avals
    key = ("vjp", tuple(wanted), tuple(given), tuple(a.weak_type for a in ct_avals))
    return _cached(program, key, lambda: trace(vjp_of_program, avals), trace)
# --8<-- [end:vjp_program]


def split_tangents(outs: list, out_avals: Sequence[ShapedArray]) -> tuple[list, list]:
    """A JVP program's results as (outputs, tangents), zeros for the non-float outputs."""
    float_out = [is_inexact(a) for a in out_avals]
    primals, tangents = outs[:len(float_out)], iter(outs[len(float_out):])
    return primals, [next(tangents) if f else lax.zeros_like(p)
                     for f, p in zip(float_out, primals)]
