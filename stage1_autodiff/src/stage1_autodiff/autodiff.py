"""Reverse mode on a tape (``vjp``, ``grad``, ``value_and_grad``), forward mode (``jvp``),
``custom_vjp`` and ``stop_gradient``.

Reverse mode here is a *tape* (a Wengert list), as in PyTorch or HIPS autograd: while the
function runs, every primitive applied to a tracked value is appended to the tape, and the
backward pass walks the tape in reverse, applying each primitive's VJP rule. NB: JAX gets
reverse mode differently, by linearizing with JVP and transposing the linear jaxpr
(jax/_src/interpreters/ad.py: ``backward_pass``). A tape needs no transposition rules, and the
rules it uses are written with primitives, so a backward pass is itself taped by an outer
``grad`` (higher order) or traced by ``jit`` (stage 2).
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import numpy as np

from . import dtypes
from . import primitives as lax
from .api_util import (
    check_callable,
    check_enough_positional,
    ensure_index_tuple,
    is_single_index,
    normalize_argnums,
)
from .core import (
    Array,
    ConcretizationTypeError,
    MainTrace,
    Primitive,
    PrimitiveKind,
    Trace,
    Tracer,
    asarray,
    bind_below,
    find_top_trace,
    full_raise,
    get_aval,
    impl_rules,
    jvp_rules,
    jvp_rules_take_none,
    new_main,
    numpy_warnings_off,
    trace_state,
    vjp_rules,
    vjp_rules_take_needs,
    vjp_rules_take_none,
)
from .errors import UnexpectedTracerError
from .extension import claim_programs, run_program
from .tree_util import (
    keystr,
    tree_flatten,
    tree_flatten_with_path,
    tree_map,
    tree_unflatten,
)

# ------------------------------------------------------------------------------------------
# The tape
# ------------------------------------------------------------------------------------------


# --8<-- [start:tape]
@dataclass(slots=True)
class TapeEntry:
    """One primitive application: which nodes went in, which came out, and the primal
    values its VJP rule needs."""

    prim: Primitive
    params: dict[str, Any]
    in_nodes: list[int | None]  # None: a constant at this level, no gradient flows to it
    out_nodes: list[int]
    primals_in: list[Any]
    primals_out: list[Any]


@dataclass
class Tape:
    entries: list[TapeEntry] = field(default_factory=list)
    _ids: Any = field(default_factory=itertools.count)

    def new_node(self) -> int:
        return next(self._ids)

    def new_nodes(self, n: int) -> list[int]:
        return list(itertools.islice(self._ids, n))


class PrimalTracer(Tracer):
    """A tracer of the autodiff interpreters: it carries the primal value (from the level
    below), which answers for its shape, dtype and concrete value."""

    __slots__ = ("primal",)

    @property
    def aval(self):
        return self.primal.aval

    # Shortcuts past ``aval``: the primal knows its own shape and dtype.
    shape = property(attrgetter("primal.shape"))
    dtype = property(attrgetter("primal.dtype"))
    weak_type = property(attrgetter("primal.weak_type"))

    def _concrete_value(self, context: str,
                        error: type[TypeError] = ConcretizationTypeError) -> np.ndarray:
        # The primal is known, so Python control flow on it just works.
        return self.primal._concrete_value(context, error)

    # NB: float() and tolist() are refused even though the primal is known, as in JAX
    # (jax/_src/core.py: Tracer.__float__): a Python number would carry the value without
    # its derivative, so the gradient would be silently cut. bool(), int() and item() stay
    # allowed: Python control flow needs them.
    def __float__(self) -> float:
        raise self._lost_derivative("float(x)", "x.astype(float)")

    def tolist(self) -> Any:
        raise self._lost_derivative("x.tolist()", "the array itself")

    def tobytes(self, order: str = "C") -> bytes:
        raise self._lost_derivative("x.tobytes()", "the array itself")

    def _lost_derivative(self, context: str, instead: str) -> ConcretizationTypeError:
        return ConcretizationTypeError(
            f"{context} was called on {self.aval.str_short()} while it is being "
            f"differentiated ({type(self).__name__}): the Python value would have no "
            f"derivative. Use {instead} to keep it an array, or compute the Python value "
            f"outside the differentiated function.")


class TapeTracer(PrimalTracer):
    """A value seen by ``grad``: its primal value and its node on the tape."""

    __slots__ = ("node",)

    def __init__(self, trace: TapeTrace, primal: Any, node: int | None) -> None:
        self._trace = trace
        self.primal = primal
        self.node = node


_primal_of, _node_of = attrgetter("primal"), attrgetter("node")


class TapeTrace(Trace):
    def pure(self, val: Any) -> TapeTracer:
        return TapeTracer(self, val, None)

    lift = pure

    def process_primitive(self, prim, tracers, params):
        primals_in = list(map(_primal_of, tracers))  # (C loops: ``[t.primal for t in
        in_nodes = list(map(_node_of, tracers))      # tracers]``, once per op)
        # (a program is a param of an OTHER primitive only; the eval level needs no claim)
        outs = (primal_below(prim, primals_in, params) if prim.kind is PrimitiveKind.OTHER
                and self.main.level > 1 else bind_below(prim, primals_in, params))
        if in_nodes.count(None) == len(in_nodes) or vjp_rules.get(prim) is lax._zero_vjp:
            # constants only (nodes are ints or None), or a zero derivative (stop_gradient,
            # sign, comparisons): the results are constants, no gradient flows back through
            return [TapeTracer(self, out, None) for out in outs]
        tape: Tape = self.main.global_data
        out_nodes = tape.new_nodes(len(outs))
        tape.entries.append(TapeEntry(prim, params, in_nodes, out_nodes, primals_in, outs))
        return list(map(TapeTracer, itertools.repeat(self), outs, out_nodes))
# --8<-- [end:tape]

    def process_custom_vjp_call(self, prim, fun, fwd, bwd, tracers, out_trees):
        if claimed_here(self):  # a grad above differentiates the call: see primal_below
            return fwd_of_claimed(self, fwd, tracers)
        primals_in = [t.primal for t in tracers]
        outs, residuals = fwd(*primals_in)
        tape: Tape = self.main.global_data
        out_nodes = tape.new_nodes(len(outs))
        params = dict(bwd=bwd, residuals=residuals)
        in_nodes = [t.node for t in tracers]
        tape.entries.append(TapeEntry(prim, params, in_nodes, out_nodes, primals_in, outs))
        return [TapeTracer(self, out, node) for out, node in zip(outs, out_nodes)]


# --8<-- [start:primal_below]
def primal_below(prim: Primitive, primals: list[Any], params: dict[str, Any]) -> list[Any]:
    """``bind_below`` for an op that may hold a program (a ``cond``'s branches, a loop's body,
    a ``jit``), run by the levels below a tape as its primal computation: by the tape itself,
    or by a VJP rule that runs the forward pass again (a scan's).

    A ``custom_vjp`` call inside that program is this tape's to differentiate, by its
    ``bwd``. As in JAX, the levels below compute it by its ``fwd`` and differentiate that:
    a ``jvp`` below (``jvp(grad(f))``), which would refuse the call itself, and a ``grad``
    below (``grad(grad(f))``), which would apply ``bwd`` a second time. So the programs go
    down marked as claimed (stage 2's ``tracing.claim_programs``), and while one runs, the
    interpreters on the stack compute its calls by ``fwd`` (``claimed_here``)."""
    return bind_below(prim, primals, claim_programs(params))


def claimed_here(trace: Trace) -> bool:
    """Whether a custom_vjp call met by ``trace`` is inside a program a grad claimed."""
    return trace.main.level < trace_state.claim_depth


def fwd_of_claimed(trace: Trace, fwd: Callable, tracers: list[Any]) -> list[Any]:
    """A claimed call's results, computed by its ``fwd`` on ``trace``'s values. A call that
    ``fwd`` itself makes (it often calls the function it belongs to) is a new call on this
    level, outside the claimed program: no claim holds while ``fwd`` runs."""
    state = trace_state
    before, state.claim_depth = state.claim_depth, 0
    try:
        outs = fwd(*tracers)[0]
    finally:
        state.claim_depth = before
    return [full_raise(trace, _as_value(out)) for out in outs]
# --8<-- [end:primal_below]


# --8<-- [start:backward_pass]
def backward_pass(tape: Tape, cts_out: dict[int, Any]) -> dict[int, Any]:
    """Walks the tape in reverse, turning output cotangents into cotangents of every node."""
    with numpy_warnings_off():
        return _backward_pass(tape, cts_out)


# Hooks on cotangents, the innermost last: each takes an operand's primal, its cotangent and
# the primitive's results, and returns the cotangent to use. Stage 4's shard_map sets one
# while it traces a body: the cotangent of a value that is the same on every device, used
# with one that varies, is summed over the devices, as JAX's types make it (its implicit
# ``pvary``, whose transpose is ``psum``).
cotangent_hooks: list[Callable[[Any, Any, list[Any]], Any]] = []


def _backward_pass(tape: Tape, cts_out: dict[int, Any]) -> dict[int, Any]:
    # --8<-- [start:task1_1]
    cts = dict(cts_out)
    hook = cotangent_hooks[-1] if cotangent_hooks else None  # (stage 4's; None otherwise)
    for entry in reversed(tape.entries):
        if entry.prim.multiple_results:
            ct, out = _result_cotangents(entry, cts), entry.primals_out
        else:
            ct, out = cts.pop(entry.out_nodes[0], None), entry.primals_out[0]
        if ct is None:
            continue  # this entry does not reach the output
        rule = vjp_rules[entry.prim]
        if entry.prim in vjp_rules_take_needs:
            needs = [node is not None for node in entry.in_nodes]
            cts_in = rule(ct, *entry.primals_in, out=out, needs=needs, **entry.params)
        else:
            cts_in = rule(ct, *entry.primals_in, out=out, **entry.params)
        if hook is not None:
            cts_in = [None if ct is None else hook(x, ct, entry.primals_out)
                      for x, ct in zip(entry.primals_in, cts_in)]
        for node, ct_in in zip(entry.in_nodes, cts_in):
            if node is not None and ct_in is not None:
                cts[node] = ct_in if node not in cts else lax.add(cts[node], ct_in)
    return cts
    # --8<-- [end:task1_1]


def _result_cotangents(entry: TapeEntry, cts: dict[int, Any]) -> list[Any] | None:
    """The cotangents of a primitive's several results, taken from ``cts``: None when no
    cotangent reached any of them, zeros for those none reached (None for a rule that
    takes None)."""
    cts_here = [cts.pop(node, None) for node in entry.out_nodes]
    if all(ct is None for ct in cts_here):
        return None
    if entry.prim in vjp_rules_take_none:
        return cts_here
    return [lax.zeros_like(out) if ct is None else ct
            for ct, out in zip(cts_here, entry.primals_out)]
# --8<-- [end:backward_pass]


# ------------------------------------------------------------------------------------------
# vjp, grad, value_and_grad
# ------------------------------------------------------------------------------------------


def _as_value(x: Any) -> Any:
    """Arguments may be Python scalars, NumPy arrays, arrays or tracers of outer levels."""
    return x if isinstance(x, (Array, Tracer)) else asarray(x)


# --8<-- [start:vjp]
def vjp(fun: Callable, *primals: Any, has_aux: bool = False):
    """Runs ``fun`` on ``primals`` and returns its output and a function from output
    cotangents to input cotangents (and ``aux`` when ``has_aux``).

    Example:
        >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
        >>> y, f_vjp = jax.vjp(jnp.sin, 0.0)
        >>> f_vjp(1.0)
        (Array(1., dtype=float32, weak_type=True),)
    """
    check_callable(fun)
    out_primal, pullback, out_tree, primals_out, aux = _vjp(fun, primals, has_aux)

    def vjp_fun(ct: Any) -> tuple[Any, ...]:
        return pullback(_check_cotangents(ct, out_tree, primals_out))

    return (out_primal, vjp_fun, aux) if has_aux else (out_primal, vjp_fun)


def _vjp(fun: Callable, primals: tuple[Any, ...], has_aux: bool,
         trace_type: type[TapeTrace] | None = None):
    """Runs ``fun`` on the tape; returns its output and a pullback of flat cotangents.
    (``trace_type``: a tape that checks what it records, as ``linear_transpose``'s does.)"""
    primals_flat, in_tree = tree_flatten(primals)
    primals_flat = [_as_value(x) for x in primals_flat]
    with new_main(trace_type or TapeTrace, Tape()) as main:
        trace = main.trace
        tape: Tape = main.global_data
        tracers_in = [TapeTracer(trace, x, tape.new_node()) for x in primals_flat]
        out = fun(*tree_unflatten(in_tree, tracers_in))
        out, aux = _split_aux(out, has_aux, "vjp")
        out_flat, out_tree = tree_flatten(out)
        out_tracers = [full_raise(trace, _as_value(o)) for o in out_flat]
        if has_aux:
            aux = tree_map(lambda x: _lower(x, main), aux)
    primals_out = [t.primal for t in out_tracers]

    def pullback(cts_flat: list[Any]) -> tuple[Any, ...]:
        cts_out: dict[int, Any] = {}
        for t, ct in zip(out_tracers, cts_flat):
            # An integer or boolean output carries no derivative (JAX's cotangent for it is a
            # float0): nothing flows back from it, so no rule sees an integer cotangent.
            # (None: no cotangent at all, JAX's symbolic zero; see vjp_flat)
            if t.node is not None and ct is not None and dtypes.is_inexact(
                    get_aval(t.primal).dtype):
                # an output may appear twice: add its cotangents
                cts_out[t.node] = ct if t.node not in cts_out else lax.add(cts_out[t.node], ct)
        cts = backward_pass(tape, cts_out)
        cts_in = [zero_derivative(x) if t.node not in cts else _like_primal(cts[t.node], x)
                  for x, t in zip(primals_flat, tracers_in)]
        return tuple(tree_unflatten(in_tree, cts_in))

    out_primal = tree_unflatten(out_tree, primals_out)
    return out_primal, pullback, out_tree, primals_out, aux
# --8<-- [end:vjp]


def vjp_flat(fun: Callable, *primals: Any) -> tuple[Any, Callable[[list[Any]], tuple]]:
    """``vjp`` for the rules of stage 2: the pullback takes the cotangents of ``fun``'s flat
    outputs as a list, None for an output no cotangent reaches (JAX's symbolic zero), so the
    rules only it reaches see None, where an array of zeros would be a cotangent to them (a
    ``while_loop``'s rule refuses one that depends on the inputs)."""
    out, pullback, *_ = _vjp(fun, primals, False)
    return out, pullback


def _split_aux(out: Any, has_aux: bool, name: str) -> tuple[Any, Any]:
    if not has_aux:
        return out, None
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(f"{name} with has_aux=True requires the function to return a pair "
                        f"(output, auxiliary data), but it returned {type(out).__name__}.")
    return out[0], out[1]


def _lower(x: Any, main: MainTrace) -> Any:
    """Auxiliary outputs leave the transformation as plain values of the level below."""
    while isinstance(x, Tracer) and x._trace.main is main:
        x = x.primal
    return x


def _like_primal(ct: Any, x: Any) -> Any:
    """An input's cotangent with the input's type, its sharding included (stage 4): the
    gradient of a loop's carry must have the carry's layout, and ``grad`` returns each
    gradient laid out as its argument, as JAX's does."""
    if ct is None or type(ct) is type(x) is Array:  # host arrays: no layout to give
        return ct
    if not dtypes.is_inexact(get_aval(x).dtype):
        return ct
    return lax.with_sharding_of(ct, x)


def zero_derivative(x: Any) -> Any:
    """A zero tangent or cotangent of ``x``; for an integer ``x``, a NumPy array of dtype
    float0, as in JAX."""
    aval = get_aval(x)
    if dtypes.is_inexact(aval.dtype):
        return lax.zeros_like(x)
    return np.zeros(aval.shape, dtypes.float0)


def _check_cotangents(ct: Any, out_tree: Any, primals_out: list[Any]) -> list[Any]:
    cts_flat, ct_tree = tree_flatten(ct)
    if ct_tree != out_tree:
        raise ValueError(
            f"The cotangent passed to the function returned by vjp must have the same tree "
            f"structure as the primal output: the output has structure {out_tree}, but the "
            f"cotangent has structure {ct_tree}.")
    checked = []
    for i, (c, p) in enumerate(zip(cts_flat, primals_out)):
        c, p_aval = _as_value(c), get_aval(p)
        if get_aval(c).shape != p_aval.shape:
            raise ValueError(
                f"Shape of cotangent input to vjp pullback function {get_aval(c).shape} must "
                f"be the same as the shape of the corresponding primal output {p_aval.shape} "
                f"(output leaf {i}).")
        if dtypes.is_inexact(p_aval.dtype) and get_aval(c).dtype != p_aval.dtype:
            c = lax.convert_element_type(c, p_aval.dtype, p_aval.weak_type)
        checked.append(c)
    return checked


def _check_argnums(nums: tuple[int, ...], num_args: int, name: str) -> tuple[int, ...]:
    """As JAX: too few positional arguments for ``argnums`` is a ``TypeError`` (as for a
    Python call missing an argument), a negative number past the start a ``ValueError``."""
    if nums and 0 <= min(nums) and max(nums) < num_args:
        return nums  # the usual case, checked in one step: every ``grad`` call asks
    check_enough_positional(nums, num_args, name)
    return normalize_argnums(nums, num_args, name)


def _leaf_dtype(leaf: Any) -> np.dtype:
    if isinstance(leaf, float):
        return dtypes.default_float_dtype()
    return get_aval(_as_value(leaf)).dtype


def _check_input_dtypes(args: tuple[Any, ...], argnums: tuple[int, ...], allow_int: bool,
                        name: str, holomorphic: bool = False) -> None:
    for argnum in argnums:
        arg = args[argnum]
        if not holomorphic and (type(arg) is float or (
                type(arg) is Array and dtypes.is_inexact(arg.dtype))):
            continue  # the usual case, a float or a float array: no tree to walk
        leaves = tree_flatten(arg)[0]
        if holomorphic:
            check_complex([_leaf_dtype(x) for x in leaves], name, "inputs")
            continue
        if allow_int or all(dtypes.is_inexact(_leaf_dtype(x)) for x in leaves):
            continue
        for path, leaf in tree_flatten_with_path(arg)[0]:
            dtype = _leaf_dtype(leaf)
            if dtypes.is_inexact(dtype):
                continue
            raise TypeError(
                f"{name} requires real-valued inputs (input dtype that is a sub-dtype of "
                f"np.inexact: float or complex), but got {dtype.name} for argument "
                f"{argnum}{keystr(path)}. "
                f"If you want to differentiate with respect to integer or boolean inputs, "
                f"use allow_int=True (the gradient has dtype float0), or use vjp.")


def check_complex(dtypes_: list[np.dtype], name: str, what: str) -> None:
    """With ``holomorphic=True`` the inputs and the outputs are complex, as in JAX."""
    for dtype in dtypes_:
        if not dtypes.is_complex(dtype):
            raise TypeError(f"{name} with holomorphic=True requires {what} with complex dtype, "
                            f"but got {dtype.name}.")


def _check_scalar_output(out: Any, name: str, holomorphic: bool = False) -> None:
    if not isinstance(out, (Array, Tracer)):
        raise TypeError(f"{name} requires a scalar array output, but the function returned a "
                        f"{type(out).__name__}. Return a single scalar array, or use vjp.")
    if out.shape != ():
        raise TypeError(
            f"Gradient only defined for scalar-output functions. Output had shape: "
            f"{out.shape}. Reduce the output to a scalar (for example with .sum() or "
            f".mean()), or use jacrev/jacfwd (stage 3) or vjp for a vector-valued function.")
    dtype = out.dtype
    if holomorphic:
        check_complex([dtype], name, "outputs")
    elif not dtypes.is_float(dtype):
        hint = (" For holomorphic differentiation, pass holomorphic=True. Otherwise take a real "
                "part first (jnp.real, jnp.abs), or use jax.vjp directly."
                if dtypes.is_complex(dtype) else "")
        raise TypeError(f"{name} requires real-valued outputs (output dtype that is a sub-dtype "
                        f"of np.floating), but got {dtype.name}.{hint}")


# --8<-- [start:value_and_grad]
def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """Returns a function computing ``fun`` and its gradient with respect to ``argnums``.
    ``holomorphic=True``: complex inputs and a complex output, and the gradient is the
    complex derivative ``f'(z)`` (the pullback of 1; no conjugation, as in JAX).

    Example:
        >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
        >>> value, g = jax.value_and_grad(lambda x: jnp.sum(x ** 2))(jnp.array([1.0, 2.0]))
        >>> print(value, g)
        5.0 [2. 4.]
    """
    check_callable(fun)
    index_tuple = ensure_index_tuple(argnums)  # a malformed argnums fails here, its range at
    single = is_single_index(argnums)          # the call

    def value_and_grad_f(*args, **kwargs):
        nums = _check_argnums(index_tuple, len(args), "grad")
        _check_input_dtypes(args, nums, allow_int, "grad", holomorphic)

        def f_of_diff_args(*diff_args):
            full_args = list(args)
            for n, arg in zip(nums, diff_args):
                full_args[n] = arg
            return fun(*full_args, **kwargs)

        diff_args = tuple(args[n] for n in nums)
        with numpy_warnings_off():  # once for both passes (each would otherwise enter it)
            value, pullback, _, _, aux = _vjp(f_of_diff_args, diff_args, has_aux)
            _check_scalar_output(value, "grad", holomorphic)
            g = pullback([_one_like(value)])
        g = g[0] if single else g
        return ((value, aux), g) if has_aux else (value, g)

    return value_and_grad_f


def _one_like(value: Any) -> Any:
    """The cotangent that starts the backward pass: a 1 of the scalar output's type."""
    if type(value) is Array:  # (a host array: no layout to copy, no tracer to lift)
        return Array(np.asarray(1, value.dtype), value.weak_type)
    return lax.full_like(value, 1)
# --8<-- [end:value_and_grad]


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
         holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """Returns a function computing the gradient of scalar-valued ``fun``.

    Example:
        >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
        >>> print(jax.grad(jnp.tanh)(1.0))
        0.41997433
    """
    value_and_grad_f = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    def grad_f(*args, **kwargs):
        (value, g) = value_and_grad_f(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return grad_f


# ------------------------------------------------------------------------------------------
# Forward mode
# ------------------------------------------------------------------------------------------


# --8<-- [start:jvp_trace]
class JVPTracer(PrimalTracer):
    """A value seen by ``jvp``: its primal and its tangent (``None`` for a zero tangent)."""

    __slots__ = ("tangent",)

    def __init__(self, trace: JVPTrace, primal: Any, tangent: Any) -> None:
        self._trace = trace
        self.primal = primal
        self.tangent = tangent


class JVPTrace(Trace):
    def pure(self, val: Any) -> JVPTracer:
        return JVPTracer(self, val, None)

    lift = pure

    def process_primitive(self, prim, tracers, params):
        primals = [t.primal for t in tracers]
        if all(t.tangent is None for t in tracers):
            outs = prim.bind(*primals, **params)
            outs = outs if prim.multiple_results else [outs]
            return [JVPTracer(self, out, None) for out in outs]
        tangents = [t.tangent for t in tracers]
        if prim not in jvp_rules_take_none:  # a rule that wants arrays gets zeros for None
            tangents = [lax.zeros_like(p) if t is None else t for p, t in zip(primals, tangents)]
        primal_out, tangent_out = jvp_rules[prim](primals, tangents, **params)
        if not prim.multiple_results:
            primal_out, tangent_out = [primal_out], [tangent_out]
        return [JVPTracer(self, p, t if dtypes.is_inexact(get_aval(p).dtype) else None)
                for p, t in zip(primal_out, tangent_out)]
# --8<-- [end:jvp_trace]

    def process_custom_vjp_call(self, prim, fun, fwd, bwd, tracers, out_trees):
        if claimed_here(self):  # a grad above differentiates the call: see primal_below
            return fwd_of_claimed(self, fwd, tracers)
        raise TypeError(
            "can't apply forward-mode autodiff (jvp) to a custom_vjp function. A custom_vjp "
            "function only defines reverse mode: use grad or vjp, or define it with "
            "ordinary operations so that jvp can differentiate it.")


def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool = False):
    """Evaluates ``fun`` at ``primals`` and its directional derivative along ``tangents``.

    Example:
        >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
        >>> y, y_dot = jax.jvp(jnp.sin, (0.0,), (2.0,))
        >>> print(y, y_dot)
        0.0 2.0
    """
    check_callable(fun)
    primals_flat, tangents_flat, in_tree = _check_jvp_args(primals, tangents)
    with new_main(JVPTrace) as main:
        trace = main.trace
        tracers_in = [JVPTracer(trace, p, t) for p, t in zip(primals_flat, tangents_flat)]
        out = fun(*tree_unflatten(in_tree, tracers_in))
        out, aux = _split_aux(out, has_aux, "jvp")
        out_flat, out_tree = tree_flatten(out)
        out_tracers = [full_raise(trace, _as_value(o)) for o in out_flat]
        aux = tree_map(lambda x: _lower(x, main), aux)
    primals_out = [t.primal for t in out_tracers]
    tangents_out = [zero_derivative(t.primal) if t.tangent is None else t.tangent
                    for t in out_tracers]
    result = (tree_unflatten(out_tree, primals_out), tree_unflatten(out_tree, tangents_out))
    return (*result, aux) if has_aux else result


def _tangent_dtype(t: Any) -> np.dtype:
    if dtypes.is_float0(t):
        return t.dtype
    return get_aval(_as_value(t)).dtype


def _check_jvp_args(primals, tangents):
    for name, value in (("primals", primals), ("tangents", tangents)):
        if not isinstance(value, (tuple, list)):
            raise TypeError(f"{name} argument to jvp should be a tuple or a list, got "
                            f"{type(value).__name__}. Wrap a single argument: jvp(f, (x,), (t,)).")
    primals_flat, in_tree = tree_flatten(tuple(primals))
    tangents_flat, tangent_tree = tree_flatten(tuple(tangents))
    if in_tree != tangent_tree:
        raise TypeError(
            f"primal and tangent arguments to jvp must have the same tree structure; primals "
            f"have tree structure {in_tree} whereas tangents have tree structure {tangent_tree}.")
    primals_flat = [_as_value(p) for p in primals_flat]
    paths = [keystr(path) for path, _ in tree_flatten_with_path(tuple(primals))[0]]
    checked = []
    for path, p, t in zip(paths, primals_flat, tangents_flat):
        p_aval = get_aval(p)
        t_shape, t_dtype = np.shape(t), _tangent_dtype(t)
        if p_aval.shape != t_shape:
            raise ValueError(
                f"jvp called with different primal and tangent shapes at primals{path}: "
                f"primal shape {p_aval.shape}, tangent shape {t_shape}.")
        expected = p_aval.dtype if dtypes.is_inexact(p_aval.dtype) else dtypes.float0
        if t_dtype != expected:
            raise TypeError(
                f"primal and tangent arguments to jvp do not match at primals{path}: dtypes "
                f"must be equal, or for an integer or boolean primal the tangent must have "
                f"dtype float0. Got primal dtype {p_aval.dtype}, so expected tangent dtype "
                f"{expected}, but got {t_dtype}.")
        checked.append(_as_value(t) if dtypes.is_inexact(p_aval.dtype) else None)
    tangents_flat = checked
    return primals_flat, tangents_flat, in_tree


# ------------------------------------------------------------------------------------------
# custom_vjp and stop_gradient
# ------------------------------------------------------------------------------------------

class CustomVJPCallPrimitive(Primitive):
    """The class of ``custom_vjp_call_p``. Binding it hands the interpreter the function *and*
    its rules (``trace.process_custom_vjp_call``), not only the primitive, so that each
    interpreter chooses: eval runs ``fun``, the tape runs ``fwd`` and records ``bwd``, jvp
    refuses, and stage 2's tracer stages one equation that keeps all three.

    ``custom_vjp.__call__`` goes to the interpreter directly, with the user's functions. An
    equation of a jaxpr (stage 2) is bound with its params instead: the function as a
    program, ``call_jaxpr``, whose first ``num_consts`` operands are the values the function
    closed over. Stage 1 has no programs: stage 2 registers how one runs (``extension.py``).

    NB: in JAX this is jax/_src/custom_derivatives.py:CustomVJPCallPrimitive; there
    ``get_bind_params`` turns an equation's jaxpr back into a function in the same way.
    """

    def bind(self, *args: Any, fun: Callable | None = None, call_jaxpr: Any = None,
             num_consts: int = 0, name: str = "fun", fwd: Callable | None = None,
             bwd: Callable | None = None, out_trees: Callable | None = None) -> list[Any]:
        trace = find_top_trace(args)
        tracers = [full_raise(trace, x) for x in args]
        if call_jaxpr is not None:  # an equation of a jaxpr
            _check_closure_not_differentiated(tracers[:num_consts], name)
            fun, fwd, bwd = _consts_as_operands(run_program(call_jaxpr), fwd, bwd,
                                                num_consts, name)
        return trace.process_custom_vjp_call(self, fun, fwd, bwd, tracers, out_trees)


def _consts_as_operands(program: Callable, fwd: Callable, bwd: Callable, n: int,
                        name: str) -> tuple[Callable, Callable, Callable]:
    """An equation's function and rules, its ``n`` closed-over values kept as its first
    operands rather than closed over again: each interpreter then sees them, as it sees the
    arguments (``vmap`` unwraps its own tracers among them, where a closure would hide them
    from it). They are constants of the rule: ``fwd`` does not see them, and ``bwd`` gives
    them no cotangent."""
    if not n:
        return _named(program, name), fwd, bwd

    def fun(*args):
        return program(*args)

    def fwd_without_consts(*args):
        return fwd(*args[n:])

    def bwd_with_consts(residuals, cts):
        return [None] * n + list(bwd(residuals, cts))

    if hasattr(bwd, "linear_in"):  # (the operands it is linear in: stage 2's linear solves)
        bwd_with_consts.linear_in = tuple(i + n for i in bwd.linear_in)
    return _named(fun, name), fwd_without_consts, bwd_with_consts


def _named(fun: Callable, name: str) -> Callable:
    fun.__name__ = name  # stage 2 names the equation after it
    return fun


def _check_closure_not_differentiated(consts: list[Any], name: str) -> None:
    """``bwd`` gives cotangents for the arguments only: a closed-over value the tape is
    differentiating would silently get none."""
    if any(isinstance(c, TapeTracer) and c.node is not None for c in consts):
        raise TypeError(
            f"Differentiating the custom_vjp function {name} with respect to a value it closes "
            f"over: its bwd rule only gives cotangents for its explicit arguments. Pass that "
            f"value as an argument instead, and return its cotangent from bwd.")


custom_vjp_call_p = CustomVJPCallPrimitive("custom_vjp_call", multiple_results=True)


# Called by EvalTrace.process_custom_vjp_call, with Arrays (``fun`` binds primitives).
def custom_vjp_call_impl(*args, fun):
    return fun(*args)


impl_rules[custom_vjp_call_p] = custom_vjp_call_impl


# --8<-- [start:custom_vjp_rule]
def custom_vjp_call_vjp(cts, *primals, out, bwd, residuals):
    return bwd(residuals, cts)


vjp_rules[custom_vjp_call_p] = custom_vjp_call_vjp
# --8<-- [end:custom_vjp_rule]


def custom_vjp_call_jvp(primals, tangents, **params):
    raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")


jvp_rules[custom_vjp_call_p] = custom_vjp_call_jvp


def nondiff_positions(fun: Callable, nums: Sequence[int], names: Sequence[str]
                      ) -> tuple[int, ...]:
    """The arguments a custom rule does not differentiate, as positions: ``nondiff_argnums``
    and the positions of ``nondiff_argnames`` in ``fun``'s signature."""
    params = list(inspect.signature(fun).parameters) if names else []
    return tuple(sorted({*nums, *(params.index(n) for n in names)}))


def split_nondiff(args: Sequence[Any], nums: Sequence[int]) -> tuple[dict[int, Any], tuple]:
    """The arguments at ``nums`` by position (negative ones count from the end), and the
    others in order."""
    static = {n % len(args): args[n] for n in nums}
    return static, tuple(a for i, a in enumerate(args) if i not in static)


def merge_nondiff(static: dict[int, Any], diff_args: Sequence[Any]) -> list[Any]:
    """``split_nondiff`` undone."""
    diff = iter(diff_args)
    return [static[i] if i in static else next(diff)
            for i in range(len(static) + len(diff_args))]


class custom_vjp:  # noqa: N801 -- JAX's name
    """A function with a hand-written reverse-mode rule.

    Example:
        >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
        >>> @jax.custom_vjp
        ... def clip_gradient(x):
        ...     return x
        >>> def fwd(x):
        ...     return x, None
        >>> def bwd(_, ct):
        ...     return (jnp.clip(ct, -1.0, 1.0),)
        >>> clip_gradient.defvjp(fwd, bwd)
        >>> print(jax.grad(lambda x: 5.0 * clip_gradient(x))(2.0))
        1.0
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = (),
                 nondiff_argnames: Sequence[str] = ()) -> None:
        self.fun = fun
        self.nondiff_argnums = nondiff_positions(fun, nondiff_argnums, nondiff_argnames)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None
        self.__wrapped__ = fun
        self.__name__ = getattr(fun, "__name__", "custom_vjp_fun")

    def defvjp(self, fwd: Callable, bwd: Callable) -> None:
        """``fwd(*args) -> (out, residuals)``; ``bwd(residuals, ct_out) -> ct_args`` (a tuple).
        With ``nondiff_argnums``, ``bwd`` takes those arguments first and returns cotangents
        for the others only."""
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {self.__name__} "
                                 f"using defvjp.")
        if kwargs:
            args = inspect.signature(self.fun).bind(*args, **kwargs).args
        static, diff_args = split_nondiff(args, self.nondiff_argnums)
        if any(isinstance(leaf, Tracer) for leaf in tree_flatten(list(static.values()))[0]):
            raise UnexpectedTracerError(
                f"custom_vjp function {self.__name__} got a traced value in a position that "
                f"nondiff_argnums marks as not differentiated. Such arguments are for values "
                f"that are never traced (functions, shapes, flags): pass an array as an "
                f"ordinary argument, and give it a zero cotangent in bwd if it needs none.")
        args_flat, in_tree = tree_flatten(diff_args)
        args_flat = [_as_value(x) for x in args_flat]
        out_tree_box: list[Any] = []
        in_avals = [get_aval(x) for x in args_flat]
        fun_flat, fwd_flat, bwd_flat = self._flat_functions(static, in_tree, in_avals,
                                                            out_tree_box)
        trace = find_top_trace(args_flat)
        tracers = [full_raise(trace, x) for x in args_flat]
        outs = trace.process_custom_vjp_call(custom_vjp_call_p, fun_flat, fwd_flat, bwd_flat,
                                             tracers, lambda: out_tree_box[0])
        return tree_unflatten(out_tree_box[0], outs)

    def _flat_functions(self, static, in_tree, in_avals, out_tree_box):
        """The user's functions on flat lists of the differentiated arguments' leaves (the
        others, ``static``, put back in their places), recording the output structure."""
        def fun_flat(*xs):
            args = merge_nondiff(static, tree_unflatten(in_tree, xs))
            out_flat, out_tree = tree_flatten(self.fun(*args))
            out_tree_box[:] = [out_tree]
            return out_flat

        def fwd_flat(*xs):
            out, residuals = self.fwd(*merge_nondiff(static, tree_unflatten(in_tree, xs)))
            out_flat, out_tree = tree_flatten(out)
            out_tree_box[:] = [out_tree]
            return out_flat, residuals

        def bwd_flat(residuals, cts_flat):
            cts_in = self.bwd(*[static[i] for i in sorted(static)], residuals,
                              tree_unflatten(out_tree_box[0], cts_flat))
            if not isinstance(cts_in, tuple):
                raise TypeError(f"Custom VJP bwd rule of {self.__name__} must return a tuple "
                                f"with one cotangent per primal argument, got "
                                f"{type(cts_in).__name__}.")
            cts_flat_in, ct_tree = tree_flatten(cts_in)
            if ct_tree != in_tree:
                raise TypeError(
                    f"Custom VJP bwd rule of {self.__name__} must produce an output with the "
                    f"same container (pytree) structure as the args tuple of the primal "
                    f"function: expected {in_tree}, got {ct_tree}.")
            cts_flat_in = [None if c is None else _as_value(c) for c in cts_flat_in]
            for i, (ct, aval) in enumerate(zip(cts_flat_in, in_avals)):
                if ct is not None and ct.shape != aval.shape:
                    raise ValueError(
                        f"Custom VJP bwd rule of {self.__name__} returned a cotangent of shape "
                        f"{ct.shape} for argument leaf {i}, whose primal has shape "
                        f"{aval.shape}. Each cotangent must have its primal's shape.")
            return cts_flat_in

        # Named as the user's functions, so that a jaxpr prints ``name=f fwd=f_fwd``.
        fun_flat.__name__ = self.__name__
        fwd_flat.__name__ = getattr(self.fwd, "__name__", "fwd")
        bwd_flat.__name__ = getattr(self.bwd, "__name__", "bwd")
        return fun_flat, fwd_flat, bwd_flat


def custom_gradient(fun: Callable) -> Callable:
    """A function that returns its own reverse-mode rule: ``fun(*args)`` returns ``(out,
    vjp)``, where ``vjp(ct_out)`` gives one cotangent per argument (a tuple; one argument's
    may be bare). A ``custom_vjp`` whose ``fwd`` keeps ``vjp`` as its residual, so it closes
    over ``fun``'s intermediate values, as JAX's.

    Example:
        >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
        >>> @jax.custom_gradient
        ... def log1pexp(x):
        ...     e = jnp.exp(x)
        ...     return jnp.log1p(e), lambda g: (g * (1 - 1 / (1 + e)),)
        >>> print(jax.grad(log1pexp)(100.0))
        1.0
    """
    def fwd(*args: Any) -> tuple[Any, Any]:
        return fun(*args)

    def bwd(vjp: Callable, ct: Any) -> tuple[Any, ...]:
        cts = vjp(ct)
        return cts if isinstance(cts, tuple) else (cts,)

    wrapped = custom_vjp(lambda *args: fun(*args)[0])
    wrapped.defvjp(fwd, bwd)
    wrapped.__name__ = fwd.__name__ = getattr(fun, "__name__", "custom_gradient_fun")
    bwd.__name__ = f"{wrapped.__name__}_vjp"
    wrapped.__wrapped__ = fun
    return wrapped


def stop_gradient(x: Any) -> Any:
    """Returns ``x`` unchanged, but with no gradient flowing through it (a pytree).

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.grad(lambda x: x * jax.lax.stop_gradient(x))(3.0))
        3.0
    """
    def stop(leaf):
        leaf = _as_value(leaf)
        return lax.stop_gradient(leaf) if dtypes.is_inexact(get_aval(leaf).dtype) else leaf
    return tree_map(stop, x)
