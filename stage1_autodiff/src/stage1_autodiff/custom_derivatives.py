"""``custom_jvp``: a function with a hand-written forward-mode rule, and reverse mode for free
(``custom_vjp``, its reverse-mode sibling, is in ``autodiff.py``).

A ``custom_jvp`` function is applied by binding ``custom_jvp_call_p`` with the function and
its rule. Each interpreter chooses what to do with them:

- eval calls the function;
- ``jvp`` calls the rule (``custom_jvp_call_jvp``): primals and tangents in, primal outputs
  and tangent outputs back;
- the tape runs the function and records the call; its VJP rule (``custom_jvp_call_vjp``)
  *transposes* the custom rule: the rule is linear in the tangents, so the tape records the
  map from input tangents to output tangents and runs that small tape backwards. The rule must
  really be linear in the tangents: a tape that applies ``exp`` to a tangent, or multiplies
  two tangents, is refused (:func:`check_linear`);
- stage 2's tracer stages one ``custom_jvp_call`` equation holding the function as a program
  and the rule as it is; stage 3 batches both.

NB: in JAX this is jax/_src/custom_derivatives.py (``custom_jvp``, ``CustomJVPCallPrimitive``)
with its rules in jax/_src/interpreters/ad.py; JAX gets the VJP the same way, by linearizing
with the custom rule and transposing the linear part (``ad.backward_pass``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from . import dtypes
from . import prims as lax
from .autodiff import (  # noqa: F401 (custom_gradient, custom_vjp: as in JAX's module)
    JVPTracer,
    Tape,
    TapeTrace,
    TapeTracer,
    _as_value,
    backward_pass,
    custom_gradient,
    custom_vjp,
    merge_nondiff,
    nondiff_positions,
    split_nondiff,
    zero_derivative,
)
from .core import (
    Primitive,
    PrimitiveKind,
    find_top_trace,
    full_raise,
    get_aval,
    impl_rules,
    jvp_rules,
    new_main,
    vjp_rules,
)
from .extension import run_program
from .tree_util import tree_flatten, tree_map, tree_unflatten


# --8<-- [start:custom_jvp_call_p]
class CustomJVPCallPrimitive(Primitive):
    """The class of ``custom_jvp_call_p``. Binding it hands the interpreter the function and
    its rule (``trace.process_custom_jvp_call``). An equation of a jaxpr (stage 2) is bound
    with its params instead: the function as a program ``call_jaxpr`` (its first
    ``num_consts`` operands are values it closed over) and the rule ``jvp``."""

    def bind(self, *args: Any, fun: Callable | None = None, jvp: Callable | None = None,
             call_jaxpr: Any = None, num_consts: int = 0, name: str = "fun",
             symbolic_zeros: bool = False) -> list[Any]:
        del symbolic_zeros  # always False: zero tangents are arrays of zeros here
        trace = find_top_trace(args)
        tracers = [full_raise(trace, x) for x in args]
        if call_jaxpr is not None:  # an equation of a jaxpr
            _check_closure_not_differentiated(tracers[:num_consts], name)
            fun, jvp = _consts_as_operands(run_program(call_jaxpr), jvp, num_consts, name)
        return trace.process_custom_jvp_call(self, fun, jvp, tracers)


def _consts_as_operands(program: Callable, jvp: Callable, n: int,
                        name: str) -> tuple[Callable, Callable]:
    """An equation's function and rule, its ``n`` closed-over values kept as its first
    operands rather than closed over again, so that every interpreter sees them as it sees
    the arguments (``vmap`` unwraps its own tracers among them, where a closure would hide
    them from it). The rule does not see them: they are its constants."""
    if not n:
        return _named(program, name), jvp

    def fun(*args):
        return program(*args)

    def jvp_without_consts(primals, tangents):
        return jvp(primals[n:], tangents[n:])

    jvp_without_consts.__name__ = getattr(jvp, "__name__", "jvp")
    return _named(fun, name), jvp_without_consts


def _named(fun: Callable, name: str) -> Callable:
    fun.__name__ = name  # stage 2 names the equation after it
    return fun


def _check_closure_not_differentiated(consts: list[Any], name: str) -> None:
    """The rule gives tangents for the arguments only: a closed-over value being
    differentiated would silently get none."""
    if any((isinstance(c, TapeTracer) and c.node is not None)
           or (isinstance(c, JVPTracer) and c.tangent is not None) for c in consts):
        raise TypeError(
            f"Differentiating the custom_jvp function {name} with respect to a value it closes "
            f"over: its JVP rule only gives tangents for its explicit arguments. Pass that "
            f"value as an argument instead.")


custom_jvp_call_p = CustomJVPCallPrimitive("custom_jvp_call", multiple_results=True)


# Only EvalTrace.process_custom_jvp_call runs ``fun``, with Arrays (it binds primitives).
def custom_jvp_call_impl(*args, fun, jvp):
    return fun(*args)


impl_rules[custom_jvp_call_p] = custom_jvp_call_impl
# --8<-- [end:custom_jvp_call_p]


# --8<-- [start:custom_jvp_call_jvp]
def custom_jvp_call_jvp(primals, tangents, *, fun, jvp):
    """Forward mode calls the user's rule. An integer argument's tangent is a float0 zero,
    as in JAX."""
    tangents = [t if dtypes.is_inexact(get_aval(p).dtype) else zero_derivative(p)
                for p, t in zip(primals, tangents)]
    return jvp(list(primals), tangents)


jvp_rules[custom_jvp_call_p] = custom_jvp_call_jvp
# --8<-- [end:custom_jvp_call_jvp]


# --8<-- [start:custom_jvp_call_vjp]
def custom_jvp_call_vjp(cts, *primals, out, fun, jvp):
    """Reverse mode by transposition: record, on a tape of its own, how the rule maps input
    tangents to output tangents (at zero tangents: the map is linear, so where it is
    recorded does not matter), check that the map is linear, and run that tape backwards
    from the output cotangents."""
    is_float = [dtypes.is_inexact(get_aval(p).dtype) for p in primals]
    with new_main(TapeTrace, Tape()) as main:
        tape: Tape = main.global_data
        tangents = [TapeTracer(main.trace, lax.zeros_like(p), tape.new_node()) if f
                    else zero_derivative(p) for p, f in zip(primals, is_float)]
        _, tangents_out = jvp(list(primals), tangents)
        # (an integer output's tangent is a float0 zero: no gradient flows back through it)
        tangents_out = [None if dtypes.is_float0(t) else full_raise(main.trace, _as_value(t))
                        for t in tangents_out]
    check_linear(tape, getattr(jvp, "__name__", "jvp"))
    cts_out = {t.node: ct for t, ct in zip(tangents_out, cts)
               if t is not None and t.node is not None and dtypes.is_inexact(get_aval(ct).dtype)}
    cts_in = backward_pass(tape, cts_out)
    return [cts_in.get(t.node) if f else None for t, f in zip(tangents, is_float)]


vjp_rules[custom_jvp_call_p] = custom_jvp_call_vjp
# --8<-- [end:custom_jvp_call_vjp]


# --8<-- [start:check_linear]
# Which operands of a primitive may carry a tangent in a linear map. A primitive absent here
# is not linear in any operand; names, not objects, so that primitives of later stages and
# later work (``cumsum``, the collectives) are covered where they exist.
_LINEAR_IN_ALL = {"add", "sub", "neg", "convert_element_type", "reduce_sum", "stop_gradient",
                  "scatter_add", "cumsum", "dynamic_update_slice", "copy", "psum", "all_gather",
                  "psum_scatter", "ppermute", "all_to_all", "reshard", "shard_slice",
                  "reduce_window_sum", "real", "imag", "conj", "fft"}
_LINEAR_IN_ONE = {"mul", "dot_general", "conv_general_dilated"}  # in either, not both
_LINEAR_IN = {"div": {0}, "gather": {0}, "dynamic_slice": {0}, "triangular_solve": {1},
              "select_n": None}  # select_n: in every operand but the predicate


def _linear_positions_ok(prim: Primitive, positions: list[int], params: dict[str, Any]
                         ) -> bool:
    name = prim.name
    if name == "custom_vjp_call":  # linear where its bwd says so (stage 2's linear solves)
        return set(positions) <= set(getattr(params["bwd"], "linear_in", ()))
    if prim.kind is PrimitiveKind.SHAPE or name in _LINEAR_IN_ALL:
        return True
    if name in _LINEAR_IN_ONE:
        return len(positions) <= 1
    if name == "select_n":
        return 0 not in positions
    return name in _LINEAR_IN and set(positions) <= _LINEAR_IN[name]


def check_linear(tape: Tape, rule_name: str) -> None:
    """Every operation the rule applied to a tangent must be linear in it: otherwise the map
    from input tangents to output tangents cannot be transposed, and reverse mode through
    the rule would be silently wrong."""
    for entry in tape.entries:
        positions = [i for i, node in enumerate(entry.in_nodes) if node is not None]
        if not _linear_positions_ok(entry.prim, positions, entry.params):
            raise TypeError(
                f"The custom JVP rule {rule_name} is not linear in the tangents: it applies "
                f"{entry.prim.name} to tangent values (operands {positions}), so reverse mode "
                f"(grad, vjp), which transposes the rule, cannot use it. The tangent output "
                f"must be linear in the input tangents (sums, negations, scalings by primal "
                f"values, matrix products with primal values); compute nonlinear quantities "
                f"from the primals.")
# --8<-- [end:check_linear]


# --8<-- [start:custom_jvp]
class custom_jvp:  # noqa: N801 -- JAX's name
    """A function with a hand-written forward-mode (JVP) rule; reverse mode transposes it.

    Example:
        >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
        >>> @jax.custom_jvp
        ... def log1pexp(x):
        ...     return jnp.log(1.0 + jnp.exp(x))
        >>> @log1pexp.defjvp
        ... def log1pexp_jvp(primals, tangents):
        ...     (x,), (x_dot,) = primals, tangents
        ...     return log1pexp(x), x_dot * (1.0 - 1.0 / (1.0 + jnp.exp(x)))
        >>> print(jax.grad(log1pexp)(100.0))
        1.0
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = (),
                 nondiff_argnames: Sequence[str] = ()) -> None:
        self.fun = fun
        self.nondiff_argnums = nondiff_positions(fun, nondiff_argnums, nondiff_argnames)
        self.jvp: Callable | None = None
        self.__wrapped__ = fun
        self.__name__ = getattr(fun, "__name__", "custom_jvp_fun")
        self.__doc__ = getattr(fun, "__doc__", None)

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        """``jvp(primals, tangents) -> (primal_out, tangent_out)``, the arguments as tuples
        (after the ``nondiff_argnums`` arguments, passed first). Returns ``jvp``, so that it
        can decorate the rule."""
        if symbolic_zeros:
            raise NotImplementedError("custom_jvp: symbolic_zeros=True is not supported; "
                                      "zero tangents are arrays of zeros here.")
        self.jvp = jvp
        return jvp

    def defjvps(self, *jvps: Callable | None) -> None:
        """One rule per argument, ``rule(x_dot, primal_out, *primals) -> tangent_out``, or
        None for an argument with a zero derivative; the tangents they give are summed."""
        if self.nondiff_argnums:
            raise TypeError("Can't use custom_jvp.defjvps with nondiff_argnums.")

        def jvp(primals, tangents):
            out = self(*primals)
            terms = [rule(t, out, *primals) for rule, t in zip(jvps, tangents)
                     if rule is not None]
            zero = tree_map(lax.zeros_like, out)
            return out, tree_map(lambda z, *ts: sum(ts, z), zero, *terms)

        jvp.__name__ = f"{self.__name__}_jvp"
        self.defjvp(jvp)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {self.__name__} "
                                 f"using defjvp.")
        if kwargs:
            args = inspect.signature(self.fun).bind(*args, **kwargs).args
        static, diff_args = split_nondiff(args, self.nondiff_argnums)
        args_flat, in_tree = tree_flatten(diff_args)
        args_flat = [_as_value(x) for x in args_flat]
        out_tree_box: list[Any] = []
        fun_flat, jvp_flat = self._flat_functions(static, in_tree, out_tree_box)
        trace = find_top_trace(args_flat)
        tracers = [full_raise(trace, x) for x in args_flat]
        outs = trace.process_custom_jvp_call(custom_jvp_call_p, fun_flat, jvp_flat, tracers)
        return tree_unflatten(out_tree_box[0], outs)
# --8<-- [end:custom_jvp]

    def _flat_functions(self, static: dict[int, Any], in_tree: Any, out_tree_box: list[Any]):
        """The function and its rule on flat lists of leaves, recording the output structure
        (the rule may run after the function's trace has ended: ``grad(jit(f))``)."""
        def fun_flat(*xs):
            args = merge_nondiff(static, tree_unflatten(in_tree, xs))
            out_flat, out_tree = tree_flatten(self.fun(*args))
            out_tree_box[:] = [out_tree]
            return out_flat

        def jvp_flat(primals, tangents):
            nondiff = [static[i] for i in sorted(static)]
            outs = self.jvp(*nondiff, tree_unflatten(in_tree, primals),
                            tree_unflatten(in_tree, tangents))
            return _check_rule_outputs(self.__name__, outs, out_tree_box)

        fun_flat.__name__ = self.__name__
        jvp_flat.__name__ = getattr(self.jvp, "__name__", "jvp")
        return fun_flat, jvp_flat


def _check_rule_outputs(name: str, outs: Any, out_tree_box: list[Any]) -> tuple[list, list]:
    """The rule returns a pair (primal output, tangent output) of one structure, each tangent
    of its primal's shape and dtype, as JAX requires."""
    if not (isinstance(outs, (tuple, list)) and len(outs) == 2):
        raise TypeError(f"Custom JVP rule of {name} must produce a pair (list or tuple of "
                        f"length two) representing primal and tangent outputs, got "
                        f"{type(outs).__name__}.")
    primal_out, tangent_out = outs
    primals_flat, primal_tree = tree_flatten(primal_out)
    tangents_flat, tangent_tree = tree_flatten(tangent_out)
    if primal_tree != tangent_tree:
        raise TypeError(f"Custom JVP rule of {name} must produce primal and tangent outputs "
                        f"with equal container (pytree) structures, but got {primal_tree} and "
                        f"{tangent_tree} respectively.")
    if out_tree_box and out_tree_box[0] != primal_tree:
        raise TypeError(f"Custom JVP rule of {name} must produce a primal output with the "
                        f"structure of the function's output, {out_tree_box[0]}, but got "
                        f"{primal_tree}.")
    out_tree_box[:] = [primal_tree]
    primals_flat = [_as_value(p) for p in primals_flat]
    tangents_flat = [_checked_tangent(name, p, t) for p, t in zip(primals_flat, tangents_flat)]
    return primals_flat, tangents_flat


def _checked_tangent(name: str, primal: Any, tangent: Any) -> Any:
    p_aval = get_aval(primal)
    if dtypes.is_float0(tangent):
        return tangent
    t_aval = get_aval(_as_value(tangent))
    expected = p_aval.dtype if dtypes.is_inexact(p_aval.dtype) else dtypes.float0
    if t_aval.shape != p_aval.shape or (dtypes.is_inexact(p_aval.dtype)
                                        and t_aval.dtype != expected):
        raise TypeError(f"Custom JVP rule of {name} must produce primal and tangent outputs "
                        f"with corresponding shapes and dtypes: a primal output of type "
                        f"{p_aval.str_short()} got a tangent of type {t_aval.str_short()}.")
    return _as_value(tangent)

