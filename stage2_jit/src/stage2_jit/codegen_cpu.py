"""The CPU backend: a jaxpr becomes one Numba function with fused loops.

Fusion decides which values are *materialized* (written to memory): the outputs, results of
reductions and of BLAS calls, operands those calls need, and elementwise values used more
than once. Everything else is *inlined*: computed inside the loop of the value that uses it,
at the index that value needs. So ``x*x + x*2.0`` is one loop reading ``x`` once, and a
softmax is a few passes over memory rather than one per operation.

Primitives that are not elementwise or index maps have rules that write loops of their own
(``LOOP_RULES``: gather, scatter, sort, argmax, the PRNG's hash...): their results are
materialized, but they read their operands through the same inlining, so a gather of
``exp(x)`` computes only the elements it picks.

The generated source reads every dimension from a ``dims`` array at run time, so one
compiled kernel serves every shape of the same rank and dtype; constants carry the program's
dtype (``np.float32(2.0)``) so a float32 program does no float64 math. A program with an
effect (``debug.print``), or a primitive without a rule, runs on the interpreter backend
instead.
"""

from __future__ import annotations

import inspect
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from stage1_autodiff.core import Primitive
from stage1_autodiff.slicing import GatherScatterMode

from stage1_autodiff import dtypes
from stage1_autodiff import primitives as p

from . import kernel_math
from .control_flow import cond_p, scan_p, while_p
from .debug import debug_print_p
from .fusion import (
    ARRAY_OPERANDS,
    EXPENSIVE,
    INDEX_MAPS,
    RECOMPUTE_LIMIT,
    DimClasses,
    batch_and_window,
    index_dims,
    is_blas_dot,
    is_elementwise,
    is_fusible,
    is_reduction,
    window_layout,
)
from .jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, _Names
from .kernel_cache import source_hash
from .passes import CALL_PARAMS, DECOMPOSED, UnsupportedError, dce, inline_calls

PARALLEL_MIN_ELEMENTS = 1 << 15  # smaller loops run serially: threads cost more than they save


# ------------------------------------------------------------------------------------------
# Elementwise primitives: how each becomes a scalar expression
# ------------------------------------------------------------------------------------------


def np_type(dtype: np.dtype) -> str:
    return "np.bool_" if dtype == np.bool_ else f"np.{dtype.name}"


def typed_constant(value: Any, dtype: np.dtype) -> str:
    """A constant of the program's dtype, never a bare Python float (that would be float64)."""
    value = np.asarray(value).item()
    if dtype == np.bool_:
        return repr(bool(value))
    if isinstance(value, float) and not np.isfinite(value):
        value = "np.nan" if np.isnan(value) else ("np.inf" if value > 0 else "-np.inf")
    return f"{np_type(dtype)}({value})"


def _integer_pow(args: list[str], eqn: JaxprEqn) -> str:
    # --8<-- [start:task2_5]
    y, dtype = eqn.params["y"], eqn.outvars[0].aval.dtype
    if y == 0:
        return typed_constant(1, dtype)
    product = " * ".join([args[0]] * abs(y))
    return f"({product})" if y > 0 else f"({typed_constant(1, dtype)} / ({product}))"
    # --8<-- [end:task2_5]


def _is_float32(eqn: JaxprEqn) -> bool:
    return eqn.outvars[0].aval.dtype == np.float32


def _transcendental(float32_name: str, libm_name: str) -> Callable[[list[str], JaxprEqn], str]:
    """float32 uses kernel_math's vectorisable version; float64 keeps the C library's."""
    return lambda args, eqn: (f"{float32_name if _is_float32(eqn) else libm_name}({args[0]})")


def _logistic(args: list[str], eqn: JaxprEqn) -> str:
    # --8<-- [start:task2_5]
    if _is_float32(eqn):
        return f"logistic_f32({args[0]})"
    one = typed_constant(1, eqn.outvars[0].aval.dtype)
    return f"({one} / ({one} + np.exp(-{args[0]})))"
    # --8<-- [end:task2_5]


def _extremum(float_name: str, comparison: str) -> Callable[[list[str], JaxprEqn], str]:
    """Floats: the NaN-propagating LLVM intrinsic. Integers: a compare and select."""
    def rule(args: list[str], eqn: JaxprEqn) -> str:
        a, b = args
        if eqn.outvars[0].aval.dtype.kind == "f":
            return f"{float_name}({a}, {b})"
        return f"select({a} {comparison} {b}, {a}, {b})"
    return rule


def _select_n(args: list[str], eqn: JaxprEqn) -> str:
    which, *cases = args
    if eqn.invars[0].aval.dtype == np.bool_:
        return f"select({which}, {cases[1]}, {cases[0]})"
    expr = cases[-1]
    for i in reversed(range(len(cases) - 1)):
        expr = f"select({which} == {i}, {cases[i]}, {expr})"
    return expr


def _cast(value: str, dtype: np.dtype) -> str:
    """``value`` converted to ``dtype``, as NumPy's ``astype`` (to bool: nonzero)."""
    return f"({value} != 0)" if dtype == np.bool_ else f"{np_type(dtype)}({value})"


def _convert(args: list[str], eqn: JaxprEqn) -> str:
    """XLA's conversion: a float to an integer saturates (kernel_math's ``float_to_int``),
    where Numba's cast is undefined for NaN and for values out of range."""
    new_dtype = eqn.params["new_dtype"]
    if eqn.invars[0].aval.dtype.kind == "f" and new_dtype.kind in "iu":
        return f"float_to_int({args[0]}, {np_type(new_dtype)})"
    return _cast(args[0], new_dtype)


def _bitcast(args: list[str], eqn: JaxprEqn) -> str:
    return f"bitcast({args[0]}, {np_type(eqn.params['new_dtype'])})"


def _function(name: str) -> Callable[[list[str], JaxprEqn], str]:
    return lambda args, eqn: f"{name}({', '.join(args)})"


def _operator(symbol: str) -> Callable[[list[str], JaxprEqn], str]:
    return lambda args, eqn: f"({args[0]} {symbol} {args[1]})"


def _integer_or_float(integer_name: str, float_rule: Callable) -> Callable:
    """Division and remainder: Python's ``//`` and ``%`` round toward minus infinity and
    raise on zero, so integers use kernel_math's intrinsics, which round toward zero and
    give eager's results for a zero divisor."""
    def rule(args: list[str], eqn: JaxprEqn) -> str:
        if eqn.outvars[0].aval.dtype.kind in "iu":
            return f"{integer_name}({args[0]}, {args[1]})"
        return float_rule(args, eqn)
    return rule


# --8<-- [start:elementwise_rules]
ELEMENTWISE: dict[Primitive, Callable[[list[str], JaxprEqn], str]] = {
    p.neg_p: lambda args, eqn: f"(-{args[0]})",
    p.exp_p: _transcendental("exp_f32", "np.exp"),
    p.log_p: _function("np.log"),
    p.log1p_p: _function("np.log1p"),
    p.expm1_p: _function("np.expm1"),
    p.sin_p: _function("np.sin"),
    p.cos_p: _function("np.cos"),
    p.tan_p: _function("np.tan"),
    p.tanh_p: _transcendental("tanh_f32", "np.tanh"),
    p.logistic_p: _logistic,
    p.sqrt_p: _function("np.sqrt"),
    p.abs_p: _function("np.abs"),
    p.sign_p: _function("np.sign"),
    p.floor_p: _function("np.floor"),
    p.ceil_p: _function("np.ceil"),
    p.integer_pow_p: _integer_pow,
    p.add_p: _operator("+"),
    p.sub_p: _operator("-"),
    p.mul_p: _operator("*"),
    p.div_p: _integer_or_float("div_toward_zero", _operator("/")),
    p.rem_p: _integer_or_float("rem_toward_zero", _function("np.fmod")),
    p.pow_p: _function("np.power"),
    p.max_p: _extremum("maximum", ">"),
    p.min_p: _extremum("minimum", "<"),
    p.atan2_p: _function("np.arctan2"),
    p.eq_p: _operator("=="),
    p.ne_p: _operator("!="),
    p.lt_p: _operator("<"),
    p.le_p: _operator("<="),
    p.gt_p: _operator(">"),
    p.ge_p: _operator(">="),
    p.and_p: _operator("&"),
    p.or_p: _operator("|"),
    p.xor_p: _operator("^"),
    p.shift_left_p: _function("shift_left"),
    p.shift_right_logical_p: _function("shift_right_logical"),
    p.shift_right_arithmetic_p: _function("shift_right_arithmetic"),
    p.not_p: lambda args, eqn: (f"(not {args[0]})" if eqn.invars[0].aval.dtype == np.bool_
                                else f"(~{args[0]})"),
    p.select_n_p: _select_n,
    p.convert_element_type_p: _convert,
    p.bitcast_convert_type_p: _bitcast,
    p.erf_inv_p: _transcendental("erf_inv_f32", "erf_inv_f64"),
    p.stop_gradient_p: lambda args, eqn: args[0],
}
# --8<-- [end:elementwise_rules]

# --8<-- [start:reductions]
def _float_or(float_form: str, other_form: str) -> Callable[[np.dtype], str]:
    return lambda dtype: float_form if dtype.kind == "f" else other_form


REDUCTIONS = {
    # primitive: combine(acc, x) for a dtype; the accumulator starts at the primitive's
    # identity (declared with it in stage 1)
    p.reduce_sum_p: _float_or("add_reassoc({acc}, {x})", "({acc} + {x})"),
    p.reduce_prod_p: _float_or("mul_reassoc({acc}, {x})", "({acc} * {x})"),
    p.reduce_max_p: _float_or("max_reassoc({acc}, {x})", "select({x} > {acc}, {x}, {acc})"),
    p.reduce_min_p: _float_or("min_reassoc({acc}, {x})", "select({x} < {acc}, {x}, {acc})"),
    p.reduce_and_p: lambda dtype: "({acc} & {x})",
    p.reduce_or_p: lambda dtype: "({acc} | {x})",
}
# --8<-- [end:reductions]


ARG_REDUCTIONS = {p.argmax_p: ">", p.argmin_p: "<"}  # primitive: "better than" comparison

# --8<-- [start:scatters]
SCATTERS = {
    # primitive: how an update {new} combines with the element {old}, for
    # (floats, integers, bools); NumPy's add of bools is or, its multiply is and
    p.scatter_p: ("{new}", "{new}", "{new}"),
    p.scatter_add_p: ("({old} + {new})", "({old} + {new})", "({old} | {new})"),
    p.scatter_mul_p: ("({old} * {new})", "({old} * {new})", "({old} & {new})"),
    p.scatter_min_p: ("minimum({old}, {new})", "select({new} < {old}, {new}, {old})",
                      "({old} & {new})"),
    p.scatter_max_p: ("maximum({old}, {new})", "select({new} > {old}, {new}, {old})",
                      "({old} | {new})"),
}
# --8<-- [end:scatters]


# ------------------------------------------------------------------------------------------
# The program writer
# ------------------------------------------------------------------------------------------


@dataclass
class Block:
    """One piece of the kernel: an outer loop (or plain statements, when ``loop`` is None).

    Consecutive blocks whose outer loops run over the same dim merge into one loop when each
    reads what the earlier ones wrote only at its own outer index (the same row): a softmax
    becomes one parallel loop over rows, each row's passes running while the row is in cache.
    """
    setup: list[str]  # before the loop: allocations and views
    loop: tuple[str, str] | None  # (index, extent) of the outer loop
    parallel: bool
    body: list[str]
    produces: set[Var] = field(default_factory=set)  # the values it computes
    writes: set[Var] = field(default_factory=set)  # of those, written at [outer index, ...]
    reads: list[tuple[Var, str]] = field(default_factory=list)  # read at [first index, ...]
    after: list[str] = field(default_factory=list)  # after the loop (a full reduction's end)
    flat: bool = False  # a loop over flattened arrays
    serial: bool = False  # iterations must run in order (a scatter): never merged


class ProgramWriter:
    """Writes the source of one Numba function for a jaxpr."""

    def __init__(self, jaxpr: Jaxpr, functions: list[str] | None = None,
                 nested: bool = False) -> None:
        self.jaxpr = jaxpr
        # Functions the program calls (loop bodies, branches), written before it: one list
        # for the whole module, so that their names are unique.
        self.functions = functions if functions is not None else []
        self.nested = nested  # a loop body or branch: returns fresh arrays, never its inputs
        self.producer = {v: eqn for eqn in jaxpr.eqns for v in eqn.outvars}
        self.uses = Counter(a for eqn in jaxpr.eqns for a in eqn.invars if isinstance(a, Var))
        self.uses.update(v for v in jaxpr.outvars if isinstance(v, Var))
        self.names: dict[Var, str] = {v: f"in{i}" for i, v in enumerate(jaxpr.invars)}
        self.dim_classes = DimClasses(jaxpr)
        self.dims: list[tuple[Var, int]] = []  # one (value, axis) per run-time dim read
        self.blocks: list[Block] = []
        self.allocations: dict[Var, list[str]] = {}  # each materialized value's shape
        self.reads: list[tuple[Var, str]] = []  # what the block being written reads
        self.temporaries = 0
        self.materialized = self._choose_materialized()
        self.parallel = False  # whether any loop is parallel (then Numba's parallel=True)
        self.flat = False  # while writing a loop over flattened arrays
        # Elementwise loops may run over flattened arrays (one loop, however many dims),
        # unless the program reduces: then loops over rows can merge with the reductions'.
        self.flat_loops = not any(is_reduction(eqn.primitive) for eqn in jaxpr.eqns)
        self.flat_views: set[str] = set()
        self.comment_names = _Names()  # names as the jaxpr prints them, for the comments
        for var in [*jaxpr.invars, *(v for eqn in jaxpr.eqns for v in eqn.outvars)]:
            self.comment_names[var]

    # --8<-- [start:choose_materialized]
    def _choose_materialized(self) -> set[Var]:
        """The values written to memory; the rest are computed where they are used."""
        chosen = {v for v in self.jaxpr.outvars if isinstance(v, Var)}
        cost: dict[Var, int] = {}  # operations to recompute an inlined value
        for eqn in self.jaxpr.eqns:
            if is_reduction(eqn.primitive) or not is_fusible(eqn):
                chosen.update(eqn.outvars)
            if eqn.primitive in ARRAY_OPERANDS and not is_fusible(eqn):
                chosen.update(a for a in eqn.invars if isinstance(a, Var))
            if not is_fusible(eqn):
                continue
            out = eqn.outvars[0]
            own = 0 if not is_elementwise(eqn.primitive) else (
                4 if eqn.primitive in EXPENSIVE else 1)
            cost[out] = own + sum(cost.get(a, 0) for a in eqn.invars
                                  if isinstance(a, Var) and a not in chosen)
            if is_elementwise(eqn.primitive) and self.uses[out] > 1 and (
                    cost[out] > RECOMPUTE_LIMIT):
                chosen.add(out)  # computed once, not once per use
        return chosen - set(self.jaxpr.invars)
    # --8<-- [end:choose_materialized]

    def dim(self, var: Var, axis: int) -> str:
        """The name of a run-time dimension: ``d3`` is ``dims[3]``."""
        key = self.dim_classes.find((var, axis))
        if key not in self.dims:
            self.dims.append(key)
        return f"d{self.dims.index(key)}"

    def write(self) -> str:
        program = self.function("program")
        return "\n".join(_prelude() + [*self.functions, program])

    def function(self, name: str) -> str:
        """The source of the Numba function ``name`` that computes the jaxpr."""
        for eqn in self.jaxpr.eqns:
            if not eqn.outvars:
                raise UnsupportedError(f"{eqn.primitive} (an equation with an effect)")
            if eqn.outvars[0] in self.materialized:
                self._emit(eqn)
        outs = [self._output(a) for a in self.jaxpr.outvars]
        body = [*self._merged_blocks(),
                f"return ({', '.join(outs)}{',' if len(outs) == 1 else ''})"]
        header = [f"d{i} = dims[{i}]" for i in range(len(self.dims))]
        args = ", ".join(["dims", *[self.names[v] for v in self.jaxpr.invars]])
        lines = [f"def {name}({args}):", *_indent(header + body)]
        ins = " ".join(self.comment_names[v] for v in self.jaxpr.invars)
        outs_text = " ".join(self._comment_atom(a) for a in self.jaxpr.outvars)
        summary = [f"# {name}: inputs {ins}; outputs {outs_text}"]
        decorator = f'@njit(parallel={self.parallel}, cache=True, error_model="numpy")'
        if self.nested and not self.parallel and len(self.jaxpr.invars) <= _MAX_INLINED_ARGS:
            # inlined into the loop: no call, no reference counting of its arrays
            decorator = '@njit(inline="always", cache=True, error_model="numpy")'
        return "\n".join(summary + [decorator, *lines, ""])

    def eqn_text(self, eqn: JaxprEqn) -> str:
        """``d = mul a c``: the equation, in the jaxpr's names, without shapes (so that the
        source, and the compiled kernel, is the same for every shape)."""
        outs = " ".join(self.comment_names[v] for v in eqn.outvars)
        ins = " ".join(self._comment_atom(a) for a in eqn.invars)
        params = {k: _comment_param(v) for k, v in eqn.params.items()
                  if k not in _SHAPE_PARAMS}
        shown = "".join(f" {k}={v}" for k, v in sorted(params.items()))
        return f"{outs} = {eqn.primitive}{'[' + shown[1:] + ']' if shown else ''} {ins}"

    def _comment_atom(self, atom: Any) -> str:
        if isinstance(atom, Literal):
            return typed_constant(atom.val, atom.aval.dtype)
        return self.comment_names[atom]

    def _output(self, atom: Any) -> str:
        if isinstance(atom, Literal):
            return f"np.full(1, {typed_constant(atom.val, atom.aval.dtype)})"
        if self.nested and atom in self.jaxpr.invars:  # a carry passed through: a copy, so
            return f"{self.names[atom]}.copy()"  # its type is the same every step
        return self.names[atom]

    def _name_of(self, var: Var) -> str:
        if var not in self.names:
            self.names[var] = f"v{len(self.names)}"
        return self.names[var]

    def _temporary(self) -> str:
        self.temporaries += 1
        return f"t{self.temporaries - 1}"

    def _emit(self, eqn: JaxprEqn) -> None:
        self.reads = []
        comment = f"# {self.eqn_text(eqn)}"
        if is_reduction(eqn.primitive):
            self._emit_reduction(eqn, comment)
        elif is_fusible(eqn):
            self._emit_loop(eqn.outvars[0], comment)
        elif eqn.primitive in LOOP_RULES:
            LOOP_RULES[eqn.primitive](self, eqn, comment)
        elif eqn.primitive is p.dot_general_p and is_blas_dot(eqn):
            self._emit_dot(eqn, comment)
        elif eqn.primitive is p.dot_general_p:
            self._emit_contraction(eqn, comment)
        elif eqn.primitive is p.reshape_p:
            self._emit_reshape(eqn, comment)
        elif eqn.primitive in CONTROL_FLOW:
            CONTROL_FLOW[eqn.primitive](self, eqn, comment)
        else:
            raise UnsupportedError(str(eqn.primitive))

    def _statements(self, lines: list[str]) -> None:
        self.blocks.append(Block(setup=[], loop=None, parallel=False, body=lines,
                                 reads=self.reads))

    def _emit_reshape(self, eqn: JaxprEqn, comment: str) -> None:
        out = eqn.outvars[0]
        shape = [self.dim(out, k) for k in range(out.aval.ndim)] or ["1"]
        operand = self._array(eqn.invars[0])
        self._statements([comment, f"{self._name_of(out)} = np.ascontiguousarray({operand})"
                                   f".reshape(({', '.join(shape)},))"])

    def _array(self, atom: Any) -> str:
        if isinstance(atom, Literal):
            raise UnsupportedError("a literal operand of a library call")
        self.reads.append((atom, ":"))  # the whole array
        return self.names[atom]

    def _allocate(self, var: Var, shape: list[str]) -> str:
        self.allocations[var] = shape
        return (f"{self._name_of(var)} = np.empty(({', '.join(shape) or '1'},), "
                f"dtype={np_type(var.aval.dtype)})")

    # --8<-- [start:emit_loop]
    def _emit_loop(self, out: Var, comment: str) -> None:
        """A loop nest over ``out``'s shape that computes it from materialized values."""
        name = self._name_of(out)
        shape = [self.dim(out, k) for k in range(out.aval.ndim)]
        setup = [self._allocate(out, shape)]
        if (out.aval.ndim > 1 and self.flat_loops
                and self._eqn_reads_in_step(self.producer[out], out.aval.shape)):
            self._emit_flat_loop(out, name, shape, setup, comment)
            return
        index = tuple(f"i{k}" for k in range(out.aval.ndim))
        body: list[str] = []
        value = self._fused(self.producer[out], index, body, {})
        body.append(f"{name}[{', '.join(index) or '0'}] = {value}")
        self._emit_nest(setup, shape, index, comment, body, out.aval.size, {out}, {out})
    # --8<-- [end:emit_loop]

    def _reads_in_step(self, var: Var, shape: tuple[int, ...]) -> bool:
        """Whether computing ``var`` reads every array at the same position as it writes,
        so that the loop can run over the flattened arrays (one index, no nest)."""
        if var in self.materialized or var in self.jaxpr.invars:
            return var.aval.shape == shape or var.aval.shape == ()
        return self._eqn_reads_in_step(self.producer[var], shape)

    def _eqn_reads_in_step(self, eqn: JaxprEqn, shape: tuple[int, ...]) -> bool:
        if eqn.primitive is p.broadcast_in_dim_p:  # only a scalar may be broadcast
            operand = eqn.invars[0]
            return operand.aval.shape == () and (
                isinstance(operand, Literal) or self._reads_in_step(operand, ()))
        if not is_elementwise(eqn.primitive):
            return False
        return all(isinstance(a, Literal) or self._reads_in_step(a, shape) for a in eqn.invars)

    def _emit_flat_loop(self, out: Var, name: str, shape: list[str], setup: list[str],
                        comment: str) -> None:
        self.flat, self.flat_views = True, set()
        body: list[str] = []
        value = self._fused(self.producer[out], ("i",), body, {})
        self.flat = False
        setup += [f"{view}_flat = {view}.reshape(-1)" for view in sorted(self.flat_views)]
        setup.append(f"{name}_flat = {name}.reshape(-1)")
        body.append(f"{name}_flat[i] = {value}")
        self._emit_nest(setup, [" * ".join(shape)], ("i",), comment, body, out.aval.size,
                        {out}, {out})
        self.blocks[-1].flat = True

    # --8<-- [start:emit_nest]
    def _emit_nest(self, setup: list[str], shape: list[str], index: tuple[str, ...],
                   comment: str, body: list[str], work: int, produces: set[Var], writes: set[Var],
                   after: list[str] = (), serial: bool = False) -> None:
        """Loops over ``shape``, as a block: the outer one parallel when the traced program
        does enough ``work`` (elements) to pay for threads, unless ``serial``. The choice is
        part of the source, so a kernel is shared by the shapes on the same side of the
        threshold."""
        if not shape:
            self.blocks.append(Block(setup, None, False, [comment, *body], produces,
                                     reads=self.reads, after=list(after)))
            return
        parallel = work >= PARALLEL_MIN_ELEMENTS and not serial
        self.parallel |= parallel
        nest = body
        for k in reversed(range(1, len(shape))):
            nest = [f"for {index[k]} in range({shape[k]}):", *_indent(nest)]
        self.blocks.append(Block(setup, (index[0], shape[0]), parallel, [comment, *nest],
                                 produces, writes,
                                 self.reads, list(after), serial=serial))
    # --8<-- [end:emit_nest]

    # --8<-- [start:expr]
    def expr(self, atom: Any, index: tuple[str, ...], body: list[str],
             memo: dict[tuple, str]) -> str:
        """A scalar expression for ``atom`` at ``index``, inlining fusible producers."""
        if isinstance(atom, Literal):
            return typed_constant(atom.val, atom.aval.dtype)
        if atom in self.names and (atom in self.materialized or atom in self.jaxpr.invars):
            return self._read(atom, index)
        eqn = self.producer[atom]
        if not is_elementwise(eqn.primitive) or eqn.primitive is p.stop_gradient_p:
            return self._fused(eqn, index, body, memo)  # a read elsewhere: no temporary
        key = (atom, index)
        if key not in memo:
            value = self._fused(eqn, index, body, memo)
            memo[key] = self._temporary()
            body.append(f"{memo[key]} = {value}  # {self.eqn_text(eqn)}")
        return memo[key]
    # --8<-- [end:expr]

    def _read(self, var: Var, index: tuple[str, ...]) -> str:
        name = self.names[var]
        if not var.aval.shape:
            self.reads.append((var, "0"))
            return f"{name}[0]"
        self.reads.append((var, index[0]))
        if self.flat:
            self.flat_views.add(name)
            return f"{name}_flat[{index[0]}]"
        return f"{name}[{', '.join(index)}]"

    def _fused(self, eqn: JaxprEqn, index: tuple[str, ...], body: list[str],
               memo: dict[tuple, str]) -> str:
        prim, out = eqn.primitive, eqn.outvars[0]
        if is_elementwise(prim):
            args = [self.expr(a, index, body, memo) for a in eqn.invars]
            value = ELEMENTWISE[prim](args, eqn)
            if out.aval.dtype.kind in "iu":  # Numba widens int32 + int32 to int64: wrap back
                return f"{np_type(out.aval.dtype)}({value})"
            return value
        if prim is p.iota_p:
            return f"{np_type(out.aval.dtype)}({index[eqn.params['dimension']]})"
        operand = eqn.invars[0]
        return self.expr(operand, self._operand_index(eqn, index), body, memo)

    def _operand_index(self, eqn: JaxprEqn, index: tuple[str, ...]) -> tuple[str, ...]:
        """Where in its operand an index-mapping primitive reads for ``index``."""
        prim, operand = eqn.primitive, eqn.invars[0].aval
        if prim is p.broadcast_in_dim_p:
            dims, out_shape = eqn.params["broadcast_dimensions"], eqn.outvars[0].aval.shape
            return tuple("0" if operand.shape[k] == 1 and out_shape[d] != 1 else index[d]
                         for k, d in enumerate(dims))
        if prim is p.transpose_p:
            result = [""] * operand.ndim
            for j, k in enumerate(eqn.params["permutation"]):
                result[k] = index[j]
            return tuple(result)
        if prim is p.slice_p:
            strides = eqn.params["strides"] or (1,) * operand.ndim
            return tuple(_strided(start, i, stride) for start, i, stride
                         in zip(eqn.params["start_indices"], index, strides))
        if prim is p.rev_p:
            var = eqn.invars[0]
            return tuple(f"({self.dim(var, k)} - 1 - {i})" if k in eqn.params["dimensions"]
                         else i for k, i in enumerate(index))
        # squeeze, or a reshape that only adds or removes size-1 dims
        kept = iter(i for i, n in zip(index, eqn.outvars[0].aval.shape) if n != 1)
        return tuple("0" if n == 1 else next(kept) for n in operand.shape)

    # --8<-- [start:emit_reduction]
    def _emit_reduction(self, eqn: JaxprEqn, comment: str) -> None:
        """out[kept] = combine over the reduced dims of the (inlined) operand expression."""
        out, operand = eqn.outvars[0], eqn.invars[0]
        axes, dtype = eqn.params["axes"], out.aval.dtype
        if not axes:
            raise UnsupportedError(f"{eqn.primitive} over no axes")
        init = typed_constant(eqn.primitive.identity(dtype), dtype)
        combine = REDUCTIONS[eqn.primitive](dtype)
        name = self._name_of(out)
        kept = [k for k in range(operand.aval.ndim) if k not in axes]
        index = tuple(f"i{k}" for k in range(operand.aval.ndim))
        setup = [self._allocate(out, [self.dim(out, k) for k in range(out.aval.ndim)])]
        acc = f"{name}_acc"
        if not kept:  # a full reduction: partial results along the first reduced dim
            kept, axes = [axes[0]], axes[1:]
            partials = f"{name}_partial"
            first = self.dim(operand, kept[0])
            setup.append(f"{partials} = np.empty({first}, dtype={np_type(dtype)})")
            finish = [f"{acc} = {init}", f"for p in range({first}):",
                      f"    {acc} = {combine.format(acc=acc, x=f'{partials}[p]')}",
                      f"{name}[0] = {acc}"]
            self._emit_reduction_nest(operand, out, kept, axes, index, init, combine,
                                      partials, setup, comment, writes=set(), after=finish)
        elif kept == list(range(len(axes), operand.aval.ndim)):
            # Reducing leading axes (a column sum): rows outside, a row of accumulators.
            self._emit_column_reduction(operand, out, kept, axes, index, init, combine,
                                        setup, comment)
        else:
            self._emit_reduction_nest(operand, out, kept, axes, index, init, combine, name,
                                      setup, comment, writes={out})

    def _emit_reduction_nest(self, operand, out, kept, axes, index, init, combine, target,
                             setup, comment, writes, after=()):
        body: list[str] = []
        value = self.expr(operand, index, body, {})
        acc = f"{target}_acc"
        inner = [*body, f"{acc} = {combine.format(acc=acc, x=value)}"]
        for k in reversed(axes):
            inner = [f"for {index[k]} in range({self.dim(operand, k)}):", *_indent(inner)]
        target_index = ", ".join(index[k] for k in kept)
        self._emit_nest(setup, [self.dim(operand, k) for k in kept],
                        tuple(index[k] for k in kept), comment,
                        [f"{acc} = {init}", *inner, f"{target}[{target_index}] = {acc}"],
                        operand.aval.size, {out}, writes, after)
    # --8<-- [end:emit_reduction]

    # --8<-- [start:column_reduction]
    def _emit_column_reduction(self, operand, out, kept, axes, index, init, combine, setup,
                               comment):
        """Reduces the leading ``axes``: the kept (trailing) axes run innermost, so memory is
        read in order and the loop over a row vectorises; threads take blocks of columns."""
        name = self._name_of(out)
        body: list[str] = []
        value = self.expr(operand, index, body, {})
        target = f"{name}[{', '.join(index[k] for k in kept)}]"
        first, block = kept[0], COLUMN_BLOCK
        extent = self.dim(operand, first)
        column = index[first]
        inner_kept = [f"for {index[k]} in range({self.dim(operand, k)}):" for k in kept[1:]]

        def over_block(lines: list[str]) -> list[str]:
            nest = lines
            for line in reversed(inner_kept):
                nest = [line, *_indent(nest)]
            return [f"for {column} in range(block * {block}, "
                    f"min({extent}, (block + 1) * {block})):",
                    *_indent(nest)]

        update = over_block([*body, f"{target} = {combine.format(acc=target, x=value)}"])
        for k in reversed(axes):
            update = [f"for {index[k]} in range({self.dim(operand, k)}):", *_indent(update)]
        blocks = f"({extent} + {block - 1}) // {block}"
        self._emit_nest(setup, [blocks], ("block",), comment,
                        [*over_block([f"{target} = {init}"]), *update],
                        operand.aval.size, {out}, set())
    # --8<-- [end:column_reduction]

    def _emit_dot(self, eqn: JaxprEqn, comment: str) -> None:
        (lc, rc), _ = eqn.params["dimension_numbers"]
        x_var, y_var = eqn.invars
        out = eqn.outvars[0]
        x, y = (self._array(a) for a in eqn.invars)
        if x_var.aval.ndim == 2 and lc == (1,) or x_var.aval.ndim == 1:
            x = x if x_var.aval.ndim == 2 else f"{x}.reshape((1, {self.dim(x_var, 0)}))"
        elif lc == (0,) and x_var.aval.ndim == 2:
            x = f"{x}.T"
        else:  # rows: every dim of x but the contracted last one
            rows = " * ".join(self.dim(x_var, k) for k in range(x_var.aval.ndim - 1))
            x = f"{x}.reshape(({rows}, {self.dim(x_var, x_var.aval.ndim - 1)}))"
        if y_var.aval.ndim == 2 and rc == (1,):
            y = f"{y}.T"
        product = f"np.dot({x}, {y})"
        if x_var.aval.ndim != 2:  # back from rows to the result's dims
            shape = [self.dim(out, k) for k in range(out.aval.ndim)] or ["1"]
            product += f".reshape(({', '.join(shape)},))"
        self._statements([comment, f"{self._name_of(out)} = {product}  # BLAS"])

    # ---------------------------------------------------------------------------------------
    # Rules that write loops of their own (LOOP_RULES, after the class). Each allocates its
    # results and reads its operands through ``expr``, so inlined operands stay inlined.
    # ---------------------------------------------------------------------------------------

    def _at(self, var: Var, index: tuple[str, ...]) -> str:
        """``var`` at ``index`` as an assignment target (a 0-d array is stored as shape (1,))."""
        return f"{self._name_of(var)}[{', '.join(index) or '0'}]"

    def _shape(self, var: Var) -> list[str]:
        return [self.dim(var, k) for k in range(var.aval.ndim)]

    # --8<-- [start:emit_contraction]
    def _emit_contraction(self, eqn: JaxprEqn, comment: str) -> None:
        """A dot_general that is not a plain float matrix product, as loops: each result
        element (batch dims, x's free dims, y's free dims) sums ``x * y`` over the contracting
        dims. The sum is in the operands' dtype (integers wrap, as NumPy's do), then
        converted to the result's (``preferred_element_type``)."""
        x, y = eqn.invars
        out = eqn.outvars[0]
        (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
        index = _loop_index(out.aval.ndim)
        # A contracted dim of size 1 needs no loop (per-example outer products, as vmap of
        # a weight's gradient makes): the innermost loop is then over y's free dim, which
        # vectorizes.
        sums = tuple("0" if x.aval.shape[d] == 1 else f"k{n}" for n, d in enumerate(lc))
        # The result's dims: batch, then x's free dims, then y's free dims.
        x_index = _contraction_index(x.aval.ndim, lb, lc, index, sums, first_free=len(lb))
        y_index = _contraction_index(y.aval.ndim, rb, rc, index, sums,
                                     first_free=x.aval.ndim - len(lc))
        dtype, acc = x.aval.dtype, f"{self._name_of(out)}_acc"
        inner: list[str] = []
        a, b = self.expr(x, x_index, inner, {}), self.expr(y, y_index, inner, {})
        nest = [*inner, f"{acc} = {self._multiply_add(acc, a, b, dtype)}"]
        for n in reversed(range(len(lc))):
            if sums[n] != "0":
                nest = [f"for {sums[n]} in range({self.dim(x, lc[n])}):", *_indent(nest)]
        result = acc if dtype.kind not in "iu" else f"{np_type(dtype)}({acc})"  # wrap
        if out.aval.dtype != dtype:
            result = _cast(result, out.aval.dtype)
        body = [f"{acc} = {typed_constant(0, dtype)}", *nest,
                f"{self._at(out, index)} = {result}"]
        shape = self._shape(out)
        work = out.aval.size * math.prod(x.aval.shape[d] for d in lc)  # multiply-adds
        self._emit_nest([self._allocate(out, shape)], shape, index, comment, body, work,
                        {out}, {out})
    # --8<-- [end:emit_contraction]

    def _multiply_add(self, acc: str, a: str, b: str, dtype: np.dtype) -> str:
        """``acc + a * b``: the sum may be reordered (vectorised) for floats."""
        if dtype == np.bool_:  # NumPy's boolean dot: any(x and y)
            return f"{acc} | ({a} & {b})"
        if dtype.kind == "f":
            return f"add_reassoc({acc}, {a} * {b})"
        return f"{acc} + {a} * {b}"

    def _emit_arg_reduction(self, eqn: JaxprEqn, comment: str) -> None:
        """argmax (argmin): a running best value and its index along the axis, replaced by a
        strictly larger (smaller) value, so the first of equal ones wins, or by the first NaN
        (NumPy's argmax and argmin return the index of the first NaN)."""
        operand, out = eqn.invars[0], eqn.outvars[0]
        axis, dtype = eqn.params["axes"][0], operand.aval.dtype
        better = ARG_REDUCTIONS[eqn.primitive]
        index = _loop_index(operand.aval.ndim)
        kept = [k for k in range(operand.aval.ndim) if k != axis]
        name = self._name_of(out)
        best, best_index, value = f"{name}_best", f"{name}_index", f"{name}_value"
        inner: list[str] = []
        inner.append(f"{value} = {self.expr(operand, index, inner, {})}")
        condition = f"{value} {better} {best}"
        if dtype.kind == "f":
            condition += f" or ({value} != {value} and {best} == {best})"
        body = [f"{best} = {typed_constant(_worst(dtype, better), dtype)}",
                f"{best_index} = 0",
                f"for {index[axis]} in range({self.dim(operand, axis)}):",
                *_indent([*inner, f"if {condition}:",
                          f"    {best}, {best_index} = {value}, {index[axis]}"]),
                f"{self._at(out, tuple(index[k] for k in kept))} = "
                f"{np_type(out.aval.dtype)}({best_index})"]
        shape = self._shape(out)
        self._emit_nest([self._allocate(out, shape)], shape, tuple(index[k] for k in kept),
                        comment, body, operand.aval.size, {out}, {out})

    # --8<-- [start:emit_gather]
    def _emit_gather(self, eqn: JaxprEqn, comment: str) -> None:
        """Loops over the result: the outer ones over the indices' batch dims, where each
        index vector is read once and its window's start put inside the operand (or, in
        ``fill`` mode, found not to fit: the fill value); the inner ones over the window,
        reading the operand at start + offset."""
        operand, out = eqn.invars[0], eqn.outvars[0]
        shape, index = self._shape(out), _loop_index(out.aval.ndim)
        body: list[str] = []
        position, fits = self._window_position(eqn, out, index, body, clip=True)
        copy: list[str] = []
        value = self.expr(operand, position, copy, {})
        copy.append(f"{self._at(out, index)} = {value}")
        if eqn.params["mode"] is GatherScatterMode.FILL_OR_DROP:
            fill = typed_constant(eqn.params["fill_value"], out.aval.dtype)
            copy = [f"if {fits}:", *_indent(copy),
                    "else:", f"    {self._at(out, index)} = {fill}"]
        outer, inner = batch_and_window(eqn, out)
        body += _nest(copy, tuple(index[d] for d in inner), [shape[d] for d in inner])
        rows = {out} if outer == list(range(len(outer))) else set()  # written at [row, ...]?
        self._emit_nest([self._allocate(out, shape)], [shape[d] for d in outer],
                        tuple(index[d] for d in outer), comment, body, out.aval.size, {out},
                        rows)
    # --8<-- [end:emit_gather]

    # --8<-- [start:window_position]
    def _window_position(self, eqn: JaxprEqn, gathered: Var, index: tuple[str, ...],
                         body: list[str], clip: bool) -> tuple[tuple[str, ...], str]:
        """The operand position that element ``index`` of a gather's result (a scatter's
        updates, ``gathered``) reads (writes), and a condition: its window fits."""
        operand, indices = eqn.invars[:2]
        indexed, batching, indices_batching = index_dims(eqn)
        window, batch = window_layout(eqn)
        batch_index = [index[d] for d in batch]
        position, fits = [], []
        for d in range(operand.aval.ndim):
            if d in batching:  # example b reads example b
                position.append(batch_index[indices_batching[batching.index(d)]])
                continue
            offset = index[window[d]] if d in window else None
            if d not in indexed:
                position.append(offset or "0")
                continue
            size = self.dim(gathered, window[d]) if d in window else "1"
            bound = f"{self.dim(operand, d)} - {size}"
            raw = self.expr(indices, (*batch_index, str(indexed.index(d))), body, {})
            start = self._temporary()
            body.append(f"{start} = np.int64({raw})  # start on operand dim {d}")
            fits.append(f"0 <= {start} <= {bound}")
            if clip:
                clipped = self._temporary()
                body.append(f"{clipped} = min(max({start}, 0), {bound})")
                start = clipped
            position.append(start if offset is None else f"{start} + {offset}")
        return tuple(position), " and ".join(fits) or "True"
    # --8<-- [end:window_position]

    def _emit_scatter(self, eqn: JaxprEqn, comment: str) -> None:
        """Two loops: a copy of the operand, then one serial pass over the updates in order,
        each combined into the element its index vector and window offset pick. An update
        whose window does not fit is dropped (clamped into range in ``clip`` mode);
        repeated indices combine one after another, as eager's ``ufunc.at`` does (for plain
        scatter, the last one wins)."""
        operand, updates = eqn.invars[0], eqn.invars[2]
        out = eqn.outvars[0]
        shape, index = self._shape(out), _loop_index(out.aval.ndim)
        body: list[str] = []
        body.append(f"{self._at(out, index)} = {self.expr(operand, index, body, {})}")
        self._emit_nest([self._allocate(out, shape)], shape, index, comment, body,
                        out.aval.size, {out}, {out})
        self.reads = [(out, ":")]  # read anywhere: this pass cannot join the copy's loop
        update_index = _loop_index(updates.aval.ndim)
        body = []
        clip = eqn.params["mode"] is GatherScatterMode.CLIP
        position, fits = self._window_position(eqn, updates, update_index, body, clip)
        update: list[str] = []
        new = self.expr(updates, update_index, update, {})
        target = self._at(out, position)
        combined = self._scatter_combine(eqn.primitive, out.aval.dtype, target, new)
        update.append(f"{target} = {combined}")
        outer, inner = batch_and_window(eqn, updates)
        update_shape = self._shape(updates)
        update = _nest(update, tuple(update_index[d] for d in inner),
                       [update_shape[d] for d in inner])
        body += update if clip else [f"if {fits}:", *_indent(update)]
        self._emit_nest([], [update_shape[d] for d in outer],
                        tuple(update_index[d] for d in outer),
                        "#   then the updates, in order (serial: repeated indices combine)",
                        body, updates.aval.size, {out}, set(), serial=True)

    def _scatter_combine(self, prim: Primitive, dtype: np.dtype, old: str, new: str) -> str:
        float_form, integer_form, bool_form = SCATTERS[prim]
        if dtype == np.bool_:
            return bool_form.format(old=old, new=new)
        if dtype.kind == "f":
            return float_form.format(old=old, new=new)
        return f"{np_type(dtype)}({integer_form.format(old=old, new=new)})"  # wrap, as NumPy

    # --8<-- [start:emit_sort]
    def _emit_sort(self, eqn: JaxprEqn, comment: str) -> None:
        """Sorts each line along ``dimension``. Per line: the keys go into buffers; a stable
        argsort by the last key, then by each earlier one, gives the lexicographic order of
        eager's ``np.lexsort`` (NaN last, equal keys in their original order); every operand
        is then written in that order."""
        dimension, num_keys = eqn.params["dimension"], eqn.params["num_keys"]
        first = eqn.outvars[0]
        ndim, name = first.aval.ndim, self._name_of(first)
        used = [(x, out) for x, out in zip(eqn.invars, eqn.outvars) if self.uses[out]]
        setup = [self._allocate(out, self._shape(out)) for _, out in used]
        index = _loop_index(ndim)
        line, length, order = index[dimension], self.dim(first, dimension), f"{name}_order"
        body: list[str] = []
        keys = []
        for j, key in enumerate(eqn.invars[:num_keys]):
            buffer = f"{name}_key{j}"
            fill: list[str] = []
            fill.append(f"{buffer}[{line}] = {self.expr(key, index, fill, {})}")
            body += [f"{buffer} = np.empty({length}, dtype={np_type(key.aval.dtype)})",
                     f"for {line} in range({length}):", *_indent(fill)]
            keys.append(buffer)
        body.append(f"{order} = np.argsort({keys[-1]}, kind='mergesort')  # stable")
        for buffer in reversed(keys[:-1]):
            body.append(f"{order} = {order}[np.argsort({buffer}[{order}], kind='mergesort')]")
        sorted_index = tuple(f"{order}[{line}]" if k == dimension else i
                             for k, i in enumerate(index))
        write: list[str] = []
        memo: dict[tuple, str] = {}
        for operand, out in used:  # a result nothing reads is not written
            write.append(f"{self._at(out, index)} = "
                         f"{self.expr(operand, sorted_index, write, memo)}")
        body += [f"for {line} in range({length}):", *_indent(write)]
        outer = [k for k in range(ndim) if k != dimension]
        written = {out for _, out in used}
        self._emit_nest(setup, [self.dim(first, k) for k in outer],
                        tuple(index[k] for k in outer), comment, body,
                        first.aval.size * len(eqn.invars), written,
                        written if dimension != 0 else set())
    # --8<-- [end:emit_sort]

    def _emit_pad(self, eqn: JaxprEqn, comment: str) -> None:
        """Two loops: the result filled with the padding value, then the operand copied in at
        ``low + i * (interior + 1)`` along each dim."""
        operand, padding_value = eqn.invars
        out = eqn.outvars[0]
        shape, index = self._shape(out), _loop_index(out.aval.ndim)
        body: list[str] = []
        body.append(f"{self._at(out, index)} = {self.expr(padding_value, (), body, {})}")
        self._emit_nest([self._allocate(out, shape)], shape, index, comment, body,
                        out.aval.size, {out}, {out})
        self.reads = []
        body = []
        value = self.expr(operand, index, body, {})
        target = tuple(_strided(low, i, interior + 1)
                       for (low, _, interior), i in zip(eqn.params["padding_config"], index))
        body.append(f"{self._at(out, target)} = {value}")
        self._emit_nest([], self._shape(operand), index,
                        "#   then the operand, at its place among the padding", body,
                        operand.aval.size, {out}, {out} if target[:1] == index[:1] else set())

    def _emit_concatenate(self, eqn: JaxprEqn, comment: str) -> None:
        """One loop per operand, copying it into the result along ``dimension`` after the
        operands before it."""
        out, dimension = eqn.outvars[0], eqn.params["dimension"]
        index = _loop_index(out.aval.ndim)
        setup = [self._allocate(out, self._shape(out))]
        offset: list[str] = []
        for n, operand in enumerate(eqn.invars):
            self.reads = []
            body: list[str] = []
            value = self.expr(operand, index, body, {})
            target = list(index)
            if offset:
                target[dimension] = f"({' + '.join(offset)} + {index[dimension]})"
            body.append(f"{self._at(out, tuple(target))} = {value}")
            note = comment if n == 0 else f"#   operand {n}, after {' + '.join(offset)}"
            self._emit_nest(setup, self._shape(operand), index, note, body,
                            operand.aval.size, {out}, {out} if dimension != 0 else set())
            setup = []
            offset.append(self.dim(operand, dimension))

    # --8<-- [start:emit_threefry]
    def _emit_threefry(self, eqn: JaxprEqn, comment: str) -> None:
        """An elementwise loop with two results: kernel_math's ``threefry2x32`` hashes the
        four (inlined) operands and returns both words."""
        first = eqn.outvars[0]
        shape, index = self._shape(first), _loop_index(first.aval.ndim)
        body: list[str] = []
        memo: dict[tuple, str] = {}
        args = [self.expr(a, index, body, memo) for a in eqn.invars]
        targets = ", ".join(self._at(out, index) for out in eqn.outvars)
        body.append(f"{targets} = threefry2x32({', '.join(args)})")
        setup = [self._allocate(out, shape) for out in eqn.outvars]
        self._emit_nest(setup, shape, index, comment, body, first.aval.size,
                        set(eqn.outvars), set(eqn.outvars))
    # --8<-- [end:emit_threefry]

    # --8<-- [start:merge_blocks]
    def _merged_blocks(self) -> list[str]:
        """The kernel's statements, consecutive loops over the same dim merged into one
        where each reads the earlier ones' results only at its own outer index."""
        lines: list[str] = []
        group: list[Block] = []
        for block in self.blocks:
            if group and not _can_join(group, block):
                lines += self._group_lines(group)
                group = []
            group.append(block)
            if block.loop is None or block.after:
                lines += self._group_lines(group)
                group = []
        return lines + (self._group_lines(group) if group else [])

    def _group_lines(self, group: list[Block]) -> list[str]:
        first = group[0]
        setup = list(dict.fromkeys(line for block in group for line in block.setup))
        if first.loop is None:
            return setup + first.body + first.after
        outer, extent = first.loop
        loop = "prange" if any(b.parallel for b in group) else "range"
        body: list[str] = []
        for block in group:
            if block.loop[0] != outer:
                body.append(f"{block.loop[0]} = {outer}")
            body += block.body
        if not first.flat:
            setup, body = self._privatize(group, setup, body)
        return [*setup, f"for {outer} in {loop}({extent}):", *_indent(body),
                *group[-1].after]

    def _privatize(self, group: list[Block], setup: list[str],
                   body: list[str]) -> tuple[list[str], list[str]]:
        """Values that only this loop reads, each row at its own row, need not be whole
        arrays: each becomes a scalar (a value per row) or a row buffer made inside the loop.
        That saves the memory traffic of writing them out, and the page faults of a fresh
        large temporary on every call."""
        outputs = {v for v in self.jaxpr.outvars if isinstance(v, Var)}
        read_elsewhere = {var for block in self.blocks if not any(block is b for b in group)
                          for var, _ in block.reads}
        private = _row_local(group) - outputs - read_elsewhere
        indices = "|".join(sorted({b.loop[0] for b in group}))
        text, allocations = "\n".join(body), []
        for var in sorted(private, key=lambda v: self.names[v]):
            name, shape = self.names[var], self.allocations[var]
            setup = [line for line in setup if not line.startswith(f"{name} = np.empty(")]
            if len(shape) == 1:
                text = re.sub(rf"\b{name}\[(?:{indices})\]", name, text)
            else:
                allocations.append(f"{name} = np.empty(({', '.join(shape[1:])},), "
                                   f"dtype={np_type(var.aval.dtype)})  # one row")
                text = re.sub(rf"\b{name}\[(?:{indices}), ", f"{name}[", text)
        return setup, allocations + text.split("\n")
    # --8<-- [end:merge_blocks]

    # --8<-- [start:emit_control_flow]
    def _called(self, program: ClosedJaxpr, kind: str,
                scratch: list[tuple[str, bool]] | None = None) -> tuple[str, str]:
        """A program a loop or branch runs, written as a function of its own; its name and
        the tuple of run-time dims to call it with. With ``scratch`` (a loop's, called once a
        step), the function's intermediate arrays become parameters: the lines that allocate
        them once, before the loop, are added to ``scratch``, and the call must pass them
        (``{dims}`` in those lines stands for the dims tuple)."""
        if program.consts:
            raise UnsupportedError(f"a {kind} program with constants")
        writer = self._nested_writer(dce(inline_calls(program.jaxpr)))
        slot = len(self.functions)
        self.functions.append("")  # the name is taken before the functions it calls take theirs
        name = f"{kind}_{slot}"
        source = writer.called_function(name)
        if scratch is not None:
            source, allocations = _scratch_parameters(source, name)
            scratch += allocations
        self.functions[slot] = source
        dims = [self.dim(var, axis) for var, axis in writer.dims]
        return name, f"({', '.join(dims)},)" if dims else "(0,)"

    def _nested_writer(self, jaxpr: Jaxpr) -> ProgramWriter:
        """The writer of a program this one calls (a backend's own kind of writer)."""
        return ProgramWriter(jaxpr, self.functions, nested=True)

    def called_function(self, name: str) -> str:
        """The source of this (nested) program as the function ``name`` its caller calls."""
        return self.function(name)

    def _operand(self, atom: Any) -> str:
        """An operand as an array (a literal becomes an array of one element, as 0-d values
        are stored)."""
        if isinstance(atom, Literal):
            return f"np.full(1, {typed_constant(atom.val, atom.aval.dtype)})"
        return self._array(atom)

    def _scan_length(self, eqn: JaxprEqn) -> str:
        """A scan's number of steps: the xs' (or the ys') leading dim, read at run time like
        every dim, or the ``length`` param when it has neither."""
        n_carry = eqn.params["num_carry"]
        xs = eqn.invars[eqn.params["num_consts"] + n_carry:]
        ys = eqn.outvars[n_carry:]
        if xs:
            return self.dim(xs[0], 0)
        if ys:
            return self.dim(ys[0], 0)
        return str(eqn.params["length"])

    def _emit_scan(self, eqn: JaxprEqn, comment: str) -> None:
        """A scan is a loop that calls its body once per step: the carry goes around, each
        step's slice of the xs goes in, its ys are written at the step's row."""
        params = eqn.params
        n_consts, n_carry = params["num_consts"], params["num_carry"]
        scratch: list[tuple[str, bool]] = []
        body, dims = self._called(params["jaxpr"], "scan_body", scratch)
        ops = [self._operand(a) for a in eqn.invars]
        base = self._temporary()
        buffers, allocate, pick = _scratch_buffers(scratch, base, f"{base}_d", f"{base}_i % 2")
        carry = [f"{base}_c{k}" for k in range(n_carry)]
        xs, ys = eqn.invars[n_consts + n_carry:], eqn.outvars[n_carry:]
        length = self._scan_length(eqn)
        step = f"{base}_t"
        lines = [comment, *[f"{c} = {op}" for c, op in zip(carry, ops[n_consts:])]]
        lines += [self._allocate(y, self._shape(y)) for y in ys]
        lines += [f"{base}_d = {dims}", *allocate]
        sliced = [f"{op}[{step}:{step} + 1]" if x.aval.ndim == 1 else f"{op}[{step}]"
                  for op, x in zip(ops[n_consts + n_carry:], xs)]
        call = (f"{body}({base}_d, "
                f"{', '.join([*ops[:n_consts], *carry, *sliced, *buffers])})")
        loop = [f"{step} = {length} - 1 - {base}_i" if params["reverse"] else
                f"{step} = {base}_i", *pick, f"{base}_r = {call}"]
        loop += [f"{c} = {base}_r[{k}]" for k, c in enumerate(carry)]
        loop += [f"{self.names[y]}[{step}] = {base}_r[{n_carry + j}]"
                 f"{'[0]' if y.aval.ndim == 1 else ''}" for j, y in enumerate(ys)]
        lines += [f"for {base}_i in range({length}):", *_indent(loop)]
        lines += [f"{self._name_of(v)} = {c}" for v, c in zip(eqn.outvars, carry)]
        self._statements(lines)

    def _emit_while(self, eqn: JaxprEqn, comment: str) -> None:
        """A while loop that calls the predicate's function, then the body's."""
        params = eqn.params
        n_cond, n_body = params["cond_nconsts"], params["body_nconsts"]
        pred_scratch: list[tuple[str, bool]] = []
        body_scratch: list[tuple[str, bool]] = []
        predicate, pred_dims = self._called(params["cond_jaxpr"], "while_cond", pred_scratch)
        body, body_dims = self._called(params["body_jaxpr"], "while_body", body_scratch)
        ops = [self._operand(a) for a in eqn.invars]
        base = self._temporary()
        pred_buffers, pred_allocate, pred_pick = _scratch_buffers(
            pred_scratch, f"{base}_p", f"{base}_pd", f"{base}_k")
        body_buffers, body_allocate, body_pick = _scratch_buffers(
            body_scratch, f"{base}_b", f"{base}_bd", f"{base}_k")
        carry = [f"{base}_c{k}" for k in range(len(ops) - n_cond - n_body)]
        lines = [comment, *[f"{c} = {op}" for c, op in zip(carry, ops[n_cond + n_body:])]]
        lines += [f"{base}_pd = {pred_dims}", f"{base}_bd = {body_dims}", *pred_allocate,
                  *body_allocate, f"{base}_k = 0"]
        test = (f"{predicate}({base}_pd, "
                f"{', '.join([*ops[:n_cond], *carry, *pred_buffers])})[0][0]")
        step = [*body_pick, f"{base}_r = {body}({base}_bd, "
                f"{', '.join([*ops[n_cond:n_cond + n_body], *carry, *body_buffers])})"]
        step += [f"{c} = {base}_r[{k}]" for k, c in enumerate(carry)]
        step += [f"{base}_k = 1 - {base}_k", *pred_pick]  # the other set of buffers next
        lines += [*pred_pick, f"while {test}:", *_indent(step)]
        lines += [f"{self._name_of(v)} = {c}" for v, c in zip(eqn.outvars, carry)]
        self._statements(lines)

    def _emit_cond(self, eqn: JaxprEqn, comment: str) -> None:
        """An if/elif chain on the index, each arm calling its branch's function."""
        ops = [self._operand(a) for a in eqn.invars]
        base = self._temporary()
        lines = [comment, f"{base}_i = {ops[0]}[0]"]
        branches = eqn.params["branches"]
        for k, branch in enumerate(branches):
            name, dims = self._called(branch, "branch")
            test = ("else:" if k == len(branches) - 1 else
                    f"{'if' if k == 0 else 'elif'} {base}_i == {k}:")
            lines += [test, f"    {base}_r = {name}({dims}, {', '.join(ops[1:])})"]
        lines += [f"{self._name_of(v)} = {base}_r[{k}]" for k, v in enumerate(eqn.outvars)]
        self._statements(lines)
    # --8<-- [end:emit_control_flow]


COLUMN_BLOCK = 256  # columns per thread's share of a column reduction



CONTROL_FLOW: dict[Primitive, Callable[[ProgramWriter, JaxprEqn, str], None]] = {
    scan_p: ProgramWriter._emit_scan,
    while_p: ProgramWriter._emit_while,
    cond_p: ProgramWriter._emit_cond,
}


# --8<-- [start:loop_rules]
LOOP_RULES: dict[Primitive, Callable[[ProgramWriter, JaxprEqn, str], None]] = {
    p.argmax_p: ProgramWriter._emit_arg_reduction,
    p.argmin_p: ProgramWriter._emit_arg_reduction,
    p.gather_p: ProgramWriter._emit_gather,
    p.scatter_p: ProgramWriter._emit_scatter,
    p.scatter_add_p: ProgramWriter._emit_scatter,
    p.scatter_mul_p: ProgramWriter._emit_scatter,
    p.scatter_min_p: ProgramWriter._emit_scatter,
    p.scatter_max_p: ProgramWriter._emit_scatter,
    p.sort_p: ProgramWriter._emit_sort,
    p.pad_p: ProgramWriter._emit_pad,
    p.concatenate_p: ProgramWriter._emit_concatenate,
    p.threefry2x32_p: ProgramWriter._emit_threefry,
}
# --8<-- [end:loop_rules]


# --8<-- [start:cpu_coverage]
# Primitives the CPU backend does not generate, each with its reason: a program that uses one
# runs on the interpreter backend instead (a test checks that every primitive of stages 1
# and 2 has a rule or is listed here).
CPU_FALLBACK: dict[Primitive, str] = {
    debug_print_p: "an effect (printing on every call), which a compiled kernel cannot do",
}


def has_cpu_rule(prim: Primitive) -> bool:
    """Whether the CPU backend writes code for ``prim``: a spelled elementwise expression,
    an index map, a reduction, a loop rule, BLAS or a contraction, a reshape, control flow,
    or a call or decomposition that the passes inline first."""
    return (prim in ELEMENTWISE or prim in REDUCTIONS or prim in INDEX_MAPS
            or prim in LOOP_RULES or prim in CONTROL_FLOW
            or prim in (p.dot_general_p, p.reshape_p)
            or prim.name in CALL_PARAMS or prim in DECOMPOSED)
# --8<-- [end:cpu_coverage]


# --8<-- [start:scratch]
# Python compiles a call of more arguments than this as f(*args), which Numba cannot inline.
_MAX_INLINED_ARGS = 24
_ALLOCATION = re.compile(r"^    (v\d+) = np\.empty\(\(([^()]*)\), dtype=([\w.]+)\)$")


def _scratch_parameters(source: str, name: str) -> tuple[str, list[tuple[str, bool]]]:
    """A loop body's source with the arrays it allocates at its top level taken as
    parameters instead, and, for the caller, how to allocate each (and whether it needs two
    that alternate): so a loop allocates them once, not once a step. An intermediate array
    is written before it is read in each step, so one is enough; an array the body returns
    (the next carry) is read by the next step while that step writes its own, so two take
    turns."""
    lines = source.split("\n")
    returned = next(line for line in lines if line.strip().startswith("return ("))
    kept, allocations, params = [], [], []
    for line in lines:
        match = _ALLOCATION.match(line)
        if match:
            params.append(match[1])
            shape = re.sub(r"\bd(\d+)\b", r"{dims}[\1]", match[2])
            alternate = re.search(rf"\b{match[1]}\b", returned) is not None
            allocations.append((f"np.empty(({shape}), dtype={match[3]})", alternate))
            continue
        kept.append(line)
    header = next(i for i, line in enumerate(kept) if line.startswith(f"def {name}("))
    if params:  # one tuple parameter, however many arrays (a call's arguments stay few)
        kept[header] = kept[header][:-2] + ", scratch):"
        kept.insert(header + 1, f"    {', '.join(params)}, = scratch")
    return "\n".join(kept), allocations


def _scratch_buffers(allocations: list[tuple[str, bool]], base: str, dims: str,
                     parity: str) -> tuple[list[str], list[str], list[str]]:
    """What to pass for a called function's scratch arrays (a tuple, or nothing), the lines
    that allocate them (before the loop), and the lines that pick, each step, one of two that
    alternate (``parity``). NB: the pick is a statement of its own: Numba rejects a
    conditional expression among many call arguments."""
    names: list[str] = []
    allocate, pick = [], []
    for k, (allocation, alternate) in enumerate(allocations):
        allocation = allocation.replace("{dims}", dims)
        name = f"{base}_s{k}"
        names.append(name)
        if alternate:
            allocate += [f"{name}a = {allocation}", f"{name}b = {allocation}"]
            pick.append(f"{name} = {name}a if {parity} == 0 else {name}b")
        else:
            allocate.append(f"{name} = {allocation}")
    return ([f"({', '.join(names)},)"] if names else []), allocate, pick
# --8<-- [end:scratch]


def _comment_param(value: Any) -> str:
    """A param as a comment shows it: a program held by a loop or branch by its size only
    (its function, written above, shows it in full); a string with ``repr``, and any other
    value whose text is not one printable line too. A param comes from the user (a function's
    name, a format string, an axis name): a newline in it must not end the comment line and
    turn the rest into code."""
    if isinstance(value, ClosedJaxpr):
        return f"<{len(value.jaxpr.eqns)} equations>"
    if isinstance(value, tuple) and value and all(isinstance(v, ClosedJaxpr) for v in value):
        return "(" + ", ".join(_comment_param(v) for v in value) + ")"
    if isinstance(value, str):
        return repr(value)
    text = str(value)
    return text if text.isprintable() else repr(text)


def _loop_index(ndim: int) -> tuple[str, ...]:
    return tuple(f"i{k}" for k in range(ndim))


def _contraction_index(ndim: int, batch: tuple[int, ...], contract: tuple[int, ...],
                       index: tuple[str, ...], sums: tuple[str, ...],
                       first_free: int) -> tuple[str, ...]:
    """Where a dot_general operand is read: its batch dims at the result's batch indices,
    its free dims at the result's indices from ``first_free`` on, its contracting dims at the
    summation indices."""
    result = [""] * ndim
    for n, d in enumerate(batch):
        result[d] = index[n]
    for n, d in enumerate(contract):
        result[d] = sums[n]
    free = [d for d in range(ndim) if d not in batch and d not in contract]
    for n, d in enumerate(free):
        result[d] = index[first_free + n]
    return tuple(result)


def _worst(dtype: np.dtype, better: str) -> Any:
    """A start value every element ties or beats: the lowest (for ``>``) or highest."""
    return dtypes.lowest(dtype) if better == ">" else dtypes.highest(dtype)


def _strided(start: int, i: str, stride: int) -> str:
    """``start + i * stride`` as plain as it can be written (a number, for a number ``i``)."""
    if i.isdigit():
        return str(start + int(i) * stride)
    scaled = i if stride == 1 else f"{i} * {stride}"
    return scaled if start == 0 else f"({start} + {scaled})"


def _nest(body: list[str], index: tuple[str, ...], shape: list[str]) -> list[str]:
    """``body`` inside loops over ``shape``, the first index outermost."""
    for i, extent in reversed(list(zip(index, shape))):
        body = [f"for {i} in range({extent}):", *_indent(body)]
    return body


# --8<-- [start:can_join]
def _row_local(group: list[Block]) -> set[Var]:
    """The values the group writes only at its own outer index: a value that one block
    writes row by row and another anywhere (a pad's fill, then its copy) is not."""
    written = set().union(*(b.writes for b in group))
    return written - set().union(*(b.produces - b.writes for b in group))


def _can_join(group: list[Block], block: Block) -> bool:
    """Whether ``block``'s loop can run inside the group's: same range, and it reads what
    the group computes only at its own outer index."""
    first = group[0]
    if block.loop is None or first.loop is None or block.loop[1] != first.loop[1]:
        return False
    if block.serial or any(b.serial for b in group):
        return False  # a parallel loop joined to it would run it in parallel
    outer, index = first.loop[0], block.loop[0]
    if index != outer and re.search(rf"\b{outer}\b", "\n".join(block.body)):
        return False  # the block uses the group's index name for something else
    produced = set().union(*(b.produces for b in group))
    row_local = _row_local(group)
    return all(var in row_local and first_index == index
               for var, first_index in block.reads if var in produced)
# --8<-- [end:can_join]


def _prelude() -> list[str]:
    return ["# Generated by stage2_jit's CPU backend. Comments show the jaxpr's equations.",
            f"# kernel_math {_KERNEL_MATH_HASH}",
            "import numpy as np",
            "from numba import njit, prange",
            "from stage2_jit.kernel_math import (add_reassoc, bitcast, div_toward_zero,",
            "    erf_inv_f32, erf_inv_f64, exp_f32, float_to_int, logistic_f32, max_reassoc,",
            "    maximum, min_reassoc, minimum, mul_reassoc, rem_toward_zero, select, shift_left,",
            "    shift_right_arithmetic, shift_right_logical, tanh_f32, threefry2x32)",
            ""]


_KERNEL_MATH_HASH = source_hash(inspect.getsource(kernel_math))


def _indent(lines: list[str]) -> list[str]:
    return ["    " + line for line in lines]


# Params that restate shapes, which the kernel reads at run time instead.
_SHAPE_PARAMS = {"shape", "new_sizes", "limit_indices", "dimensions_sizes"}




def generate_source(jaxpr: Jaxpr) -> tuple[str, ProgramWriter]:
    """The kernel source for ``jaxpr`` (nested jit calls already inlined: ``compile_cpu``
    inlines, then optimizes, then generates)."""
    writer = ProgramWriter(jaxpr)
    return writer.write(), writer
