"""The CPU renderer: a program's kernel plan becomes one Numba function with fused loops.

Fusion (``fusion.py``) has decided which values are *materialized* (written to memory): the
outputs, results of reductions and of BLAS calls, operands those calls need, and elementwise
values used more than once. Everything else is *inlined*: computed inside the loop of the
value that uses it, at the index that value needs (``KernelWriter.expr``). So ``x*x + x*2.0``
is one loop reading ``x`` once, and a softmax is a few passes over memory rather than one per
operation.

This file spells: its table of elementwise rules (``kernel_math``'s intrinsics: LLVM's
NaN-propagating maximum, reassociable sums that vectorise), and its loop templates. A loop
nest is a block of one function; consecutive blocks over the same rows merge into one loop
(``_merged_blocks``), whose outer loop is a ``prange`` when the plan says it is parallel.

The generated source reads every dimension from a ``dims`` array at run time, so one
compiled kernel serves every shape of the same rank and dtype (but for whether a float
reduction is short enough to add in order: ``reduces_in_order``); constants carry the program's
dtype (``np.float32(2.0)``) so a float32 program does no float64 math. A program with an
effect (``debug.print``), or a primitive without a rule, runs on the interpreter backend
instead.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from stage1_autodiff.core import Primitive

from stage1_autodiff import prims as p

from . import kernel_math
from .coverage import CPU_FALLBACK
from .fusion import Loop, can_join, in_place_inputs, is_blas_dot, row_local
from .jaxpr import Jaxpr, JaxprEqn, Literal, Var
from .kernel_cache import source_hash
from .kernel_writer import (
    KernelWriter,
    Rule,
    cast,
    common_rules,
    function,
    has_rule,
    indent,
    loop_index,
    negative_power,
    np_type,
    operator,
    typed_constant,
)
from .loop_rules import LOOP_RULES as SHARED_LOOP_RULES
from .loop_rules import emit_contraction
from .passes import UnsupportedError

__all__ = ["CpuWriter", "generate_source", "has_cpu_rule", "np_type", "typed_constant",
           "UnsupportedError"]


# ------------------------------------------------------------------------------------------
# How the CPU spells a scalar expression
# ------------------------------------------------------------------------------------------


# --8<-- [start:select]
def select(condition: str, a: str, b: str) -> str:
    """``a`` where ``condition``, else ``b``: kernel_math's ``select``, a branch-free LLVM
    select (a conditional expression would stop the loop from vectorising)."""
    return f"select({condition}, {a}, {b})"


def extremum(comparison: str, a: str, b: str, dtype: np.dtype) -> str:
    """``max`` (``">"``) or ``min`` of ``a`` and ``b``. Floats: the NaN-propagating LLVM
    intrinsic. Integers: a compare and select."""
    if dtype.kind == "f":
        return f"{'maximum' if comparison == '>' else 'minimum'}({a}, {b})"
    return select(f"{a} {comparison} {b}", a, b)
# --8<-- [end:select]


def _is_float32(eqn: JaxprEqn) -> bool:
    return eqn.outvars[0].aval.dtype == np.float32


def _transcendental(float32_name: str, libm_name: str) -> Rule:
    """float32 uses kernel_math's vectorisable version; float64 keeps the C library's."""
    return lambda args, eqn: (f"{float32_name if _is_float32(eqn) else libm_name}({args[0]})")


def _math_cast(name: str, widen: bool = False) -> Rule:
    """A scalar function whose result is cast to the output's dtype (math's functions give
    float64 for some float32 arguments); ``widen`` passes it a float64 argument too."""
    def rule(args: list[str], eqn: JaxprEqn) -> str:
        arg = f"np.float64({args[0]})" if widen else args[0]
        return cast(f"{name}({arg})", eqn.outvars[0].aval.dtype)
    return rule


def _logistic(args: list[str], eqn: JaxprEqn) -> str:
    # --8<-- [start:task2_5]
    if _is_float32(eqn):
        return f"logistic_f32({args[0]})"
    one = typed_constant(1, eqn.outvars[0].aval.dtype)
    return f"({one} / ({one} + np.exp(-{args[0]})))"
    # --8<-- [end:task2_5]


def _convert(args: list[str], eqn: JaxprEqn) -> str:
    """XLA's conversion: a float to an integer saturates (kernel_math's ``float_to_int``),
    where Numba's cast is undefined for NaN and for values out of range."""
    new_dtype = eqn.params["new_dtype"]
    if eqn.invars[0].aval.dtype.kind == "f" and new_dtype.kind in "iu":
        return f"float_to_int({args[0]}, {np_type(new_dtype)})"
    return cast(args[0], new_dtype)


def _pow(args: list[str], eqn: JaxprEqn) -> str:
    """``np.power``, but a signed integer's negative power never reaches it (Numba's integer
    power of 0 divides by zero there)."""
    (x, y), dtype = args, eqn.outvars[0].aval.dtype
    if dtype.kind != "i":
        return f"np.power({x}, {y})"
    return (f"(np.power({x}, {y}) if {y} >= {typed_constant(0, dtype)} "
            f"else {negative_power(x, y, dtype)})")


def _integer_or_float(integer_name: str, float_rule: Rule) -> Rule:
    """Division and remainder: Python's ``//`` and ``%`` round toward minus infinity and
    raise on zero, so integers use kernel_math's intrinsics, which round toward zero and
    give eager's results for a zero divisor."""
    def rule(args: list[str], eqn: JaxprEqn) -> str:
        if eqn.outvars[0].aval.dtype.kind in "iu":
            return f"{integer_name}({args[0]}, {args[1]})"
        return float_rule(args, eqn)
    return rule


# --8<-- [start:elementwise_rules]
ELEMENTWISE: dict[Primitive, Rule] = {
    **common_rules(select, extremum),  # operators, comparisons, select_n, max, min...
    p.exp_p: _transcendental("exp_f32", "np.exp"),
    p.log_p: _transcendental("log_f32", "np.log"),
    p.log1p_p: function("np.log1p"),
    p.expm1_p: function("np.expm1"),
    p.sin_p: function("np.sin"),
    p.cos_p: function("np.cos"),
    p.tan_p: function("np.tan"),
    p.tanh_p: _transcendental("tanh_f32", "np.tanh"),
    **{prim: function(f"np.{name}") for prim, name in [
        (p.sinh_p, "sinh"), (p.cosh_p, "cosh"), (p.asin_p, "arcsin"), (p.acos_p, "arccos"),
        (p.atan_p, "arctan"), (p.asinh_p, "arcsinh"), (p.acosh_p, "arccosh"),
        (p.atanh_p, "arctanh"), (p.cbrt_p, "cbrt"), (p.exp2_p, "exp2")]},
    p.logistic_p: _logistic,
    p.sqrt_p: function("np.sqrt"),
    p.abs_p: function("np.abs"),
    p.sign_p: function("np.sign"),
    p.floor_p: function("np.floor"),
    p.ceil_p: function("np.ceil"),
    p.div_p: _integer_or_float("div_toward_zero", operator("/")),
    p.rem_p: _integer_or_float("rem_toward_zero", function("np.fmod")),
    p.pow_p: _pow,
    p.atan2_p: function("np.arctan2"),
    p.shift_left_p: function("shift_left"),
    p.shift_right_logical_p: function("shift_right_logical"),
    p.shift_right_arithmetic_p: function("shift_right_arithmetic"),
    p.convert_element_type_p: _convert,
    p.bitcast_convert_type_p: lambda args, eqn: (
        f"bitcast({args[0]}, {np_type(eqn.params['new_dtype'])})"),
    p.erf_inv_p: _transcendental("erf_inv_f32", "erf_inv_f64"),
    # special.py's: Numba has math's erf, erfc and lgamma; kernel_math has digamma
    **{prim: _math_cast(f"math.{name}") for prim, name in [
        (p.erf_p, "erf"), (p.erfc_p, "erfc"), (p.lgamma_p, "lgamma")]},
    p.digamma_p: _math_cast("digamma_f64", widen=True),
    p.rsqrt_p: lambda args, eqn: (
        f"({typed_constant(1, eqn.outvars[0].aval.dtype)} / np.sqrt({args[0]}))"),
    p.nextafter_p: function("np.nextafter"),
}
# --8<-- [end:elementwise_rules]

# Float reductions whose order may change, so that the loop vectorises (kernel_math).
FLOAT_COMBINES = {p.reduce_sum_p: "add_reassoc", p.reduce_prod_p: "mul_reassoc",
                  p.reduce_max_p: "max_reassoc", p.reduce_min_p: "min_reassoc"}

# --8<-- [start:in_order]
IN_ORDER_EXTENT = 16  # a reduction of this many elements per result gains nothing from SIMD
IN_ORDER_TOTAL = 4096  # a full reduction of this many takes a few microseconds even in order


def reduces_in_order(shape: tuple[int, ...], axes: tuple[int, ...]) -> bool:
    """Whether the kernel combines a float reduction's elements one at a time, in the
    row-major order of the reduced axes, from the identity, rather than reassociated (so the
    interpreter can repeat its bits: ``tiers.py``). It does when the reduced axes lead (a
    column sum: each thread's loop runs across the kept axes, so it vectorises without
    reordering), when there are at most ``IN_ORDER_EXTENT`` elements per result, and in a
    full reduction of at most ``IN_ORDER_TOTAL`` elements (a loss's mean over a batch)."""
    kept = [k for k in range(len(shape)) if k not in axes]
    if kept and kept == list(range(len(axes), len(shape))):
        return True
    limit = IN_ORDER_EXTENT if kept else IN_ORDER_TOTAL
    return int(np.prod([shape[k] for k in axes])) <= limit
# --8<-- [end:in_order]


# ------------------------------------------------------------------------------------------
# The CPU's loop templates
# ------------------------------------------------------------------------------------------


@dataclass
class Block(Loop):
    """One piece of the kernel: an outer loop (or plain statements, when ``index`` is None),
    with what merging needs to know of it (``fusion.Loop``)."""
    setup: list[str] = field(default_factory=list)  # before the loop: allocations, views
    body: list[str] = field(default_factory=list)
    parallel: bool = False
    after: list[str] = field(default_factory=list)  # after the loop (a full reduction's end)
    flat: bool = False  # a loop over flattened arrays
    step: int = 0  # the plan's step it belongs to


_INNER_LOOP = re.compile(r"for \w+ in range\(.+\):$")


def fuse_inner_loops(a: list[str], b: list[str]) -> list[str] | None:
    """Two statements of a row's loop body as one pass over the row, when ``b`` reduces what
    ``a`` computes (softmax's ``exp`` and its sum): ``a`` is a comment and one inner loop,
    ``b`` a comment, its accumulator's start, the same inner loop, and its result. ``b``'s
    loop then runs inside ``a``'s, which is right when it reads what ``a`` writes only
    where ``a`` writes it, in the same iteration. None when they do not fit."""
    if len(a) < 3 or len(b) < 5 or a[1] != b[2] or not _INNER_LOOP.match(a[1]):
        return None
    a_loop, b_loop = a[2:], b[3:-1]
    if not all(line.startswith("    ") for line in a_loop + b_loop) or \
            b[1].startswith(" ") or b[-1].startswith(" "):
        return None
    text = "\n".join(b_loop)
    for name, index in re.findall(r"^\s*(\w+)\[([^\]]+)\] = ", "\n".join(a_loop), re.M):
        if any(read != index for read in re.findall(rf"\b{name}\[([^\]]+)\]", text)):
            return None
    return [a[0], b[0], b[1], a[1], *a_loop, *b_loop, b[-1]]


class CpuWriter(KernelWriter):
    """Writes the source of one Numba function for a program, step by step of its plan."""

    ELEMENTWISE = ELEMENTWISE

    def __init__(self, jaxpr: Jaxpr, functions: list[str] | None = None,
                 nested: bool = False) -> None:
        super().__init__(jaxpr, functions, nested)
        self.blocks: list[Block] = []
        self.allocations: dict[Var, list[str]] = {}  # each materialized value's shape
        self.parallel = False  # whether any loop is parallel (then Numba's parallel=True)
        # The outputs the kernel writes into arrays its caller allocates and passes in, after
        # the inputs (the runtime allocates them: the kernel itself never allocates a result).
        self.output_buffers: list[Var] = []
        # The arrays the program needs while it runs (name, shape, dtype): the runtime
        # allocates them too and passes them after the outputs (``write``).
        self.scratch: list[tuple[str, tuple[int, ...], np.dtype]] = []

    extremum = staticmethod(extremum)

    def write(self) -> str:
        program = self._runtime_scratch(self.function("program"))
        self.in_place = in_place_inputs(self.plan)  # after rendering: the CPU merges loops
        return "\n".join(_prelude() + [*self.functions, program])

    def _runtime_scratch(self, source: str) -> str:
        """``source`` with the arrays it allocates at its top level taken as parameters after
        the outputs, recorded in ``scratch`` with their shapes (the program's dims are known)."""
        sizes = {f"d{i}": var.aval.shape[k] for i, (var, k) in enumerate(self.dims)}
        dtypes = {self.names[var]: var.aval.dtype for var in self.names}
        kept, allocations = _hoisted(source)
        for match in allocations:
            shape = tuple(int(np.prod([int(sizes.get(f.strip(), f)) for f in term.split("*")]))
                          for term in match[2].split(",") if term.strip())
            self.scratch.append((match[1], shape, dtypes[match[1]]))
        header = next(i for i, line in enumerate(kept) if line.startswith("def program("))
        kept[header] = kept[header][:-2] + "".join(f", {n}" for n, _, _ in self.scratch) + "):"
        return "\n".join(kept)

    def function(self, name: str) -> str:
        """The source of the Numba function ``name`` that computes the jaxpr."""
        for eqn in self.jaxpr.eqns:
            if eqn.primitive in CPU_FALLBACK:  # the program runs on the interpreter
                raise UnsupportedError(str(eqn.primitive))
        self._emit_steps()
        outs = [self._output(a) for a in self.jaxpr.outvars]
        body = [*self._merged_blocks(),
                f"return ({', '.join(outs)}{',' if len(outs) == 1 else ''})"]
        header = [f"d{i} = dims[{i}]" for i in range(len(self.dims))]
        args = ", ".join(["dims", *[self.names[v] for v in self.jaxpr.invars],
                          *[self.names[v] for v in self.output_buffers]])
        lines = [f"def {name}({args}):", *indent(header + body)]
        decorator = f'@njit(parallel={self.parallel}, cache=True, error_model="numpy")'
        if self.nested and not self.parallel and len(self.jaxpr.invars) <= _MAX_INLINED_ARGS \
                and "\n".join(lines).count("\n") < _MAX_INLINED_LINES:
            # inlined into the loop: no call, no reference counting of its arrays
            decorator = '@njit(inline="always", cache=True, error_model="numpy")'
        return "\n".join([self._signature(name), decorator, *lines, ""])

    def _output(self, atom: Any) -> str:
        if isinstance(atom, Literal):
            return self._literal_array(typed_constant(atom.val, atom.aval.dtype))
        if self.nested and atom in self.jaxpr.invars:  # a carry passed through: a copy, so
            return f"{self.names[atom]}.copy()"  # its type is the same every step
        return self.names[atom]

    def _statements(self, lines: list[str]) -> None:
        self.blocks.append(Block(None, None, reads=self.reads, body=lines,
                                 step=self._step_number()))

    def _step_number(self) -> int:
        return next(k for k, s in enumerate(self.plan.steps) if s is self.step)

    # --8<-- [start:allocate]
    def _allocate(self, var: Var, shape: list[str]) -> str:
        """The line that allocates ``var``; none for an output of the program, which the
        runtime allocates and passes in (``output_buffers``). Memory from NumPy's allocator
        is backed by huge pages where the system offers them; Numba's allocator inside the
        kernel takes it 4 KiB page by page, a page fault each, on every call."""
        self.allocations[var] = shape
        if not self.nested and var in self.jaxpr.outvars and var not in self.jaxpr.invars:
            if var not in self.output_buffers:
                self.output_buffers.append(var)
            self._name_of(var)
            return ""
        return (f"{self._name_of(var)} = np.empty(({', '.join(shape) or '1'},), "
                f"dtype={np_type(var.aval.dtype)})")
    # --8<-- [end:allocate]

    def owns_dead(self, atom: Any) -> bool:
        """An array this function allocated (not a view of an input, not a loop body's),
        read by one equation and not returned."""
        return (not self.nested and atom in self.allocations and self.uses[atom] == 1
                and atom not in self.jaxpr.outvars)

    def unless_aliased(self, out: Var, operand: Any, shape: list[str],
                       setup: list[str]) -> list[str]:
        if self.nested or not shape or operand not in self.jaxpr.invars:
            return shape
        rows, name = f"{self._name_of(out)}_rows", self._name_of(out)
        setup.append(f"{rows} = 0 if {name}.ctypes.data == {self.names[operand]}.ctypes.data "
                     f"else {shape[0]}  # donated: updated in place")
        return [rows, *shape[1:]]

    def _emit_reshape(self, eqn: JaxprEqn, comment: str) -> None:
        out = eqn.outvars[0]
        shape = self._shape(out) or ["1"]
        operand = self._array(eqn.invars[0])
        self._statements([comment, f"{self._name_of(out)} = np.ascontiguousarray({operand})"
                                   f".reshape(({', '.join(shape)},))"])

    # --8<-- [start:emit_loop]
    def _emit_loop(self, out: Var, comment: str) -> None:
        """A loop nest over ``out``'s shape that computes it from materialized values (one
        loop over the flattened arrays, when the plan says it reads them all in step)."""
        name, shape = self._name_of(out), self._shape(out)
        setup = [self._allocate(out, shape)]
        self.flat = flat = self.step.how == "flat loop"
        index = ("i",) if flat else loop_index(out.aval.ndim)
        body: list[str] = []
        value = self._fused(self.producer[out], index, body, {})
        self.flat = False
        if flat:
            setup += [f"{view}_flat = {view}.reshape(-1)" for view in sorted(self.flat_views)]
            setup.append(f"{name}_flat = {name}.reshape(-1)")
            body.append(f"{name}_flat[i] = {value}")
            shape = [" * ".join(shape)]
        else:
            body.append(f"{name}[{', '.join(index) or '0'}] = {value}")
        self._emit_nest(setup, shape, index, comment, body, {out}, {out})
        self.blocks[-1].flat = flat
    # --8<-- [end:emit_loop]

    # --8<-- [start:emit_nest]
    def _emit_nest(self, setup: list[str], shape: list[str], index: tuple[str, ...],
                   comment: str, body: list[str], produces: set[Var], writes: set[Var],
                   after: list[str] = (), serial: bool = False) -> None:
        """Loops over ``shape``, as a block: the outer one parallel when the plan's step is
        (it does enough work to pay for threads), unless ``serial``."""
        step = self._step_number()
        if not shape:
            self.blocks.append(Block(None, None, produces, reads=self.reads, setup=setup,
                                     body=[comment, *body], after=list(after), step=step))
            return
        parallel = self.step.parallel and not serial
        self.parallel |= parallel
        loops = body
        for k in reversed(range(1, len(shape))):
            loops = [f"for {index[k]} in range({shape[k]}):", *indent(loops)]
        self.blocks.append(Block(index[0], shape[0], produces, writes, self.reads, serial,
                                 setup=setup, body=[comment, *loops], parallel=parallel,
                                 after=list(after), step=step))
    # --8<-- [end:emit_nest]

    # --8<-- [start:emit_reduction]
    def reduction_combine(self, prim: Primitive, dtype: np.dtype, in_order: bool = False) -> str:
        if dtype.kind == "f" and prim in FLOAT_COMBINES and not in_order:
            return f"{FLOAT_COMBINES[prim]}({{acc}}, {{x}})"
        return super().reduction_combine(prim, dtype)

    def _emit_reduction(self, eqn: JaxprEqn, comment: str) -> None:
        """out[kept] = combine over the reduced dims of the (inlined) operand expression."""
        out, operand = eqn.outvars[0], eqn.invars[0]
        axes, dtype = eqn.params["axes"], out.aval.dtype
        init = typed_constant(eqn.primitive.identity(dtype), dtype)
        in_order = reduces_in_order(operand.aval.shape, axes)
        combine = self.reduction_combine(eqn.primitive, dtype, in_order)
        name = self._name_of(out)
        kept = [k for k in range(operand.aval.ndim) if k not in axes]
        index = loop_index(operand.aval.ndim)
        setup = [self._allocate(out, self._shape(out))]
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
            inner = [f"for {index[k]} in range({self.dim(operand, k)}):", *indent(inner)]
        target_index = ", ".join(index[k] for k in kept)
        self._emit_nest(setup, [self.dim(operand, k) for k in kept],
                        tuple(index[k] for k in kept), comment,
                        [f"{acc} = {init}", *inner, f"{target}[{target_index}] = {acc}"],
                        {out}, writes, after)
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
            loops = lines
            for line in reversed(inner_kept):
                loops = [line, *indent(loops)]
            return [f"for {column} in range(block * {block}, "
                    f"min({extent}, (block + 1) * {block})):", *indent(loops)]

        update = over_block([*body, f"{target} = {combine.format(acc=target, x=value)}"])
        for k in reversed(axes):
            update = [f"for {index[k]} in range({self.dim(operand, k)}):", *indent(update)]
        blocks = f"({extent} + {block - 1}) // {block}"
        self._emit_nest(setup, [blocks], ("block",), comment,
                        [*over_block([f"{target} = {init}"]), *update], {out}, set())
    # --8<-- [end:column_reduction]

    def _emit_dot(self, eqn: JaxprEqn, comment: str) -> None:
        """A float product BLAS can do is one ``np.dot`` (kernel_math's ``dot_into``); any
        other is a loop nest."""
        if not is_blas_dot(eqn):
            emit_contraction(self, eqn, comment)
            return
        (lc, rc), _ = eqn.params["dimension_numbers"]
        x_var, y_var = eqn.invars
        out = eqn.outvars[0]
        x, y = (self._array(a) for a in eqn.invars)
        name = self._name_of(out)
        if x_var.aval.ndim == 1:
            x, rows = f"{x}.reshape((1, {self.dim(x_var, 0)}))", "1"
        elif x_var.aval.ndim == 2:
            x, rows = (x, self.dim(x_var, 0)) if lc == (1,) else (f"{x}.T", self.dim(x_var, 1))
        else:  # rows: every dim of x but the contracted last one
            rows = " * ".join(self.dim(x_var, k) for k in range(x_var.aval.ndim - 1))
            x = f"{x}.reshape(({rows}, {self.dim(x_var, x_var.aval.ndim - 1)}))"
        if y_var.aval.ndim == 2 and rc == (1,):
            y = f"{y}.T"
        # BLAS writes into the result's buffer, seen as the matrix (or vector) it computes
        result = [rows] + ([self.dim(y_var, 1 - rc[0])] if y_var.aval.ndim == 2 else [])
        target = name if x_var.aval.ndim == 2 else f"{name}.reshape(({', '.join(result)},))"
        lines = [comment, self._allocate(out, self._shape(out)), f"dot_into({x}, {y}, {target})"
                 f"  # BLAS"]
        self._statements([line for line in lines if line])

    def _multiply_add(self, acc: str, a: str, b: str, dtype: np.dtype) -> str:
        """``acc + a * b``: the sum may be reordered (vectorised) for floats."""
        if dtype.kind == "f":
            return f"add_reassoc({acc}, {a} * {b})"
        return super()._multiply_add(acc, a, b, dtype)

    # --8<-- [start:emit_threefry]
    def _emit_threefry(self, eqn: JaxprEqn, comment: str) -> None:
        """An elementwise loop with two results: kernel_math's ``threefry2x32`` hashes the
        four (inlined) operands and returns both words."""
        first = eqn.outvars[0]
        shape, index = self._shape(first), loop_index(first.aval.ndim)
        body: list[str] = []
        memo: dict[tuple, str] = {}
        args = [self.expr(a, index, body, memo) for a in eqn.invars]
        targets = ", ".join(self._at(out, index) for out in eqn.outvars)
        body.append(f"{targets} = threefry2x32({', '.join(args)})")
        setup = [self._allocate(out, shape) for out in eqn.outvars]
        self._emit_nest(setup, shape, index, comment, body, set(eqn.outvars), set(eqn.outvars))
    # --8<-- [end:emit_threefry]

    # --8<-- [start:merge_blocks]
    def _merged_blocks(self) -> list[str]:
        """The kernel's statements, consecutive loops over the same dim merged into one
        where each reads the earlier ones' results only at its own outer index (fusion's
        ``can_join``); the plan records which step's loop each merged step runs in."""
        lines: list[str] = []
        group: list[Block] = []
        for block in self.blocks:
            if group and not self._joins(group, block):
                lines += self._group_lines(group)
                group = []
            group.append(block)
            if block.index is None or block.after:
                lines += self._group_lines(group)
                group = []
        return lines + (self._group_lines(group) if group else [])

    def _joins(self, group: list[Block], block: Block) -> bool:
        outer = group[0].index
        if block.index != outer and re.search(rf"\b{outer}\b", "\n".join(block.body)):
            return False  # the block uses the group's index name for something else
        return can_join(group, block)

    def _group_lines(self, group: list[Block]) -> list[str]:
        first = group[0]
        setup = list(dict.fromkeys(line for block in group for line in block.setup if line))
        if first.index is None:
            return setup + first.body + first.after
        for block in group:
            if block.step != first.step:
                self.plan.steps[block.step].joins = first.step
        loop = "prange" if any(b.parallel for b in group) else "range"
        bodies: list[list[str]] = []
        for block in group:
            fused = None
            if bodies and block.index == first.index:
                fused = fuse_inner_loops(bodies[-1], block.body)
            if fused:
                bodies[-1] = fused
            elif block.index != first.index:
                bodies.append([f"{block.index} = {first.index}", *block.body])
            else:
                bodies.append(list(block.body))
        body = [line for lines in bodies for line in lines]
        if not first.flat:
            setup, body = self._privatize(group, setup, body)
        return [*setup, f"for {first.index} in {loop}({first.extent}):", *indent(body),
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
        private = row_local(group) - outputs - read_elsewhere
        indices = "|".join(sorted({b.index for b in group}))
        text, allocations = "\n".join(body), []
        in_outputs = _rows_in_outputs(private, outputs, self.names, text)
        for var in sorted(private, key=lambda v: self.names[v]):
            name, shape = self.names[var], self.allocations[var]
            setup = [line for line in setup if not line.startswith(f"{name} = np.empty(")]
            if var in in_outputs:
                text = re.sub(rf"\b{name}\[", f"{self.names[in_outputs[var]]}[", text)
            elif len(shape) == 1:
                text = re.sub(rf"\b{name}\[(?:{indices})\]", name, text)
            else:
                allocations.append(f"{name} = np.empty(({', '.join(shape[1:])},), "
                                   f"dtype={np_type(var.aval.dtype)})  # one row")
                text = re.sub(rf"\b{name}\[(?:{indices}), ", f"{name}[", text)
        return setup, allocations + text.split("\n")
    # --8<-- [end:merge_blocks]

    # --8<-- [start:cpu_control_flow]
    # Control flow (KernelWriter._emit_scan and the others) calls a function written for
    # each body or branch: an @njit function, inlined into the loop when it can be.

    def _nested_writer(self, jaxpr: Jaxpr) -> CpuWriter:
        return CpuWriter(jaxpr, self.functions, nested=True)

    def called_function(self, name: str, scratch: bool) -> tuple[str, list[tuple[str, bool]]]:
        """This (nested) program as the function ``name`` its caller calls; with
        ``scratch`` (a loop's, called once a step), its intermediate arrays taken as
        parameters, and how its caller allocates them once, before the loop."""
        source = self.function(name)
        return _scratch_parameters(source, name) if scratch else (source, [])

    def _dims_variables(self, base: str, dims: str) -> tuple[list[str], list[str]]:
        return [f"{base} = {dims}"], [base]

    def _literal_array(self, constant: str) -> str:
        return f"np.full(1, {constant})"

    def _row_of(self, array: str, x: Var, step: str) -> str:
        return f"{array}[{step}:{step} + 1]" if x.aval.ndim == 1 else f"{array}[{step}]"

    def _store_row(self, y: Var, step: str, value: str) -> str:
        return f"{self.names[y]}[{step}] = {value}{'[0]' if y.aval.ndim == 1 else ''}"

    def _host_value(self, array: str) -> str:
        return f"{array}[0]"
    # --8<-- [end:cpu_control_flow]


COLUMN_BLOCK = 256  # columns per thread's share of a column reduction

# --8<-- [start:loop_rules]
CpuWriter.LOOP_RULES = {**SHARED_LOOP_RULES, p.threefry2x32_p: CpuWriter._emit_threefry}
# --8<-- [end:loop_rules]


# --8<-- [start:has_cpu_rule]
def has_cpu_rule(prim: Primitive) -> bool:
    """Whether the CPU backend writes code for ``prim`` (``kernel_writer.has_rule``): not
    when it is on ``coverage.CPU_FALLBACK``, the list of those it leaves to the interpreter."""
    return prim not in CPU_FALLBACK and has_rule(CpuWriter, prim)
# --8<-- [end:has_cpu_rule]


# --8<-- [start:rows_in_outputs]
def _rows_in_outputs(private: set[Var], outputs: set[Var], names: dict[Var, str],
                     text: str) -> dict[Var, Var]:
    """Row values that can be kept in an output's row rather than a buffer of their own:
    softmax's ``exp(x - max)``, before its row is divided by the row's sum into the output.
    The output must be written on one line only, there read nowhere, and at the same element
    (the same index text) at which every line reads or writes the value; no line after it may
    touch the value. Then each element of the row is the value's until that line reads it
    and the output's from then on. It saves the buffer's stores and loads
    (``course/stage2/cpu-loops.md`` has the measurement)."""
    lines, found = text.split("\n"), {}

    def indexed_only(name: str) -> bool:  # never passed whole (to BLAS, say)
        return len(re.findall(rf"\b{name}\b", text)) == len(re.findall(rf"\b{name}\[", text))

    for var in sorted(private, key=lambda v: names[v]):
        value = names[var]
        if len(var.aval.shape) < 2 or not indexed_only(value):  # a scalar per row anyway
            continue
        touches = [k for k, line in enumerate(lines) if re.search(rf"\b{value}\[", line)]
        where = set(re.findall(rf"\b{value}(\[[^\]]*\])", text))
        for out in sorted(outputs - set(found.values()), key=lambda v: names[v]):
            if (out.aval.shape, out.aval.dtype) != (var.aval.shape, var.aval.dtype) or (
                    not indexed_only(names[out])):
                continue
            uses = [k for k, line in enumerate(lines) if re.search(rf"\b{names[out]}\[", line)]
            write = len(uses) == 1 and re.match(rf"\s*{names[out]}(\[[^\]]*\]) = ", lines[uses[0]])
            if (write and names[out] + "[" not in lines[uses[0]][write.end():]
                    and where == {write[1]} and max(touches) <= uses[0]):
                found[var] = out
                break
    return found
# --8<-- [end:rows_in_outputs]


# --8<-- [start:scratch]
# Python compiles a call of more arguments than this as f(*args), which Numba cannot inline.
_MAX_INLINED_ARGS = 24
# A body of more lines is called rather than inlined. Numba inlines by copying the body's IR
# (``copy.deepcopy``), which grows faster than the body: the three scan bodies (214, 214 and
# 504 lines) of tests/differential/tutorials/transformer.py's training step took 17 s of its
# 50 s cold compilation to inline, and a step ran no faster for it (0.48 ms either way). A
# call costs a body of this size nothing measurable.
_MAX_INLINED_LINES = 120
_ALLOCATION = re.compile(r"^    (v\d+) = np\.empty\(\(([^()]*)\), dtype=([\w.]+)\)$")


def _hoisted(source: str) -> tuple[list[str], list[re.Match]]:
    """The lines of a function's ``source`` but the arrays it allocates at its top level, and
    those allocations (name, shape, dtype): to be taken as parameters instead."""
    kept, found = [], []
    for line in source.split("\n"):
        match = _ALLOCATION.match(line)
        if match is None:
            kept.append(line)
        else:
            found.append(match)
    return kept, found


def _scratch_parameters(source: str, name: str) -> tuple[str, list[tuple[str, bool]]]:
    """A loop body's source with the arrays it allocates at its top level taken as
    parameters instead, and, for the caller, how to allocate each (and whether it needs two
    that alternate): so a loop allocates them once, not once a step. An intermediate array
    is written before it is read in each step, so one is enough; an array the body returns
    (the next carry) is read by the next step while that step writes its own, so two take
    turns."""
    returned = next(line for line in source.split("\n") if line.strip().startswith("return ("))
    kept, found = _hoisted(source)
    params, allocations = [match[1] for match in found], []
    for match in found:
        shape = re.sub(r"\bd(\d+)\b", r"{dims}[\1]", match[2])
        alternate = re.search(rf"\b{match[1]}\b", returned) is not None
        allocations.append((f"np.empty(({shape}), dtype={match[3]})", alternate))
    header = next(i for i, line in enumerate(kept) if line.startswith(f"def {name}("))
    if params:  # one tuple parameter, however many arrays (a call's arguments stay few)
        kept[header] = kept[header][:-2] + ", scratch):"
        kept.insert(header + 1, f"    {', '.join(params)}, = scratch")
    return "\n".join(kept), allocations
# --8<-- [end:scratch]


def _prelude() -> list[str]:
    return ["# Generated by stage2_jit's CPU backend. Comments show the jaxpr's equations.",
            f"# kernel_math {_KERNEL_MATH_HASH}",
            "import math",
            "import numpy as np",
            "from numba import njit, prange",
            "from stage2_jit.kernel_math import (add_reassoc, bitcast, digamma_f64,",
            "    div_toward_zero, dot_into, erf_inv_f32, erf_inv_f64, exp_f32, float_to_int,",
            "    log_f32, logistic_f32, max_reassoc,",
            "    maximum, min_reassoc, minimum, mul_reassoc, rem_toward_zero, select, shift_left,",
            "    shift_right_arithmetic, shift_right_logical, tanh_f32, threefry2x32)",
            ""]


_KERNEL_MATH_HASH = source_hash(inspect.getsource(kernel_math))


def generate_source(jaxpr: Jaxpr) -> tuple[str, CpuWriter]:
    """The kernel source for ``jaxpr`` (nested jit calls already inlined: ``compile_cpu``
    inlines, then optimizes, then generates); the writer holds its plan and dims."""
    writer = CpuWriter(jaxpr)
    return writer.write(), writer
