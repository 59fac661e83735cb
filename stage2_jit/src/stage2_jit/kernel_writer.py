"""The loop-nest writer: what the CPU and CUDA renderers share.

Both renderers follow a ``KernelPlan`` (``fusion.py``) and spell each step as Numba source.
What they share is here: naming values and run-time dims, the scalar expression of a value
at an index with its fusible producers inlined (``expr``, reading through ``fusion.read_index``),
the spellings both backends write the same way (``common_rules``), and control flow (a loop or
branch calling a function written for its program). The rules that describe their work as
loop nests of their own (gather, scatter, sort, pad, concatenate, argmax, contractions) are in
``loop_rules.py``.

What each renderer adds is how to spell: its table of elementwise rules, its ``select`` and
``extremum`` (each written once), and its templates: what a loop nest becomes
(``_emit_nest``: a ``prange`` loop in one function, or a grid-stride CUDA kernel), how a
value is allocated, and where statements go. Neither renderer subclasses the other.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from stage1_autodiff.core import Primitive

from stage1_autodiff import prims as p

from .control_flow import cond_p, scan_p, while_p
from .fusion import (
    INDEX_MAPS,
    DimClasses,
    KernelPlan,
    Step,
    is_elementwise,
    is_fusible,
    is_reduction,
    plan_kernels,
    read_index,
    use_counts,
)
from .jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, names_in_order
from .passes import CALL_PARAMS, DECOMPOSED, UnsupportedError, dce, inline_calls

Rule = Callable[[list[str], JaxprEqn], str]  # operands' expressions, equation -> expression
Spelling = Callable[..., str]


# ------------------------------------------------------------------------------------------
# Constants, types and small pieces of source
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


def cast(value: str, dtype: np.dtype) -> str:
    """``value`` converted to ``dtype``, as NumPy's ``astype`` (to bool: nonzero)."""
    return f"({value} != 0)" if dtype == np.bool_ else f"{np_type(dtype)}({value})"


def indent(lines: list[str]) -> list[str]:
    return ["    " + line for line in lines]


def loop_index(ndim: int) -> tuple[str, ...]:
    return tuple(f"i{k}" for k in range(ndim))


def nest(body: list[str], index: tuple[str, ...], shape: list[str]) -> list[str]:
    """``body`` inside loops over ``shape``, the first index outermost."""
    for i, extent in reversed(list(zip(index, shape))):
        body = [f"for {i} in range({extent}):", *indent(body)]
    return body


def comment_param(value: Any) -> str:
    """A param as a comment shows it: a program held by a loop or branch by its size only
    (its function, written above, shows it in full); a string with ``repr``, and any other
    value whose text is not one printable line too. A param comes from the user (a function's
    name, a format string, an axis name): a newline in it must not end the comment line and
    turn the rest into code."""
    if isinstance(value, ClosedJaxpr):
        return f"<{len(value.jaxpr.eqns)} equations>"
    if isinstance(value, tuple) and value and all(isinstance(v, ClosedJaxpr) for v in value):
        return "(" + ", ".join(comment_param(v) for v in value) + ")"
    if isinstance(value, str):
        return repr(value)
    text = str(value)
    return text if text.isprintable() else repr(text)


# Params that restate shapes, which the kernel reads at run time instead.
SHAPE_PARAMS = {"shape", "new_sizes", "limit_indices", "dimensions_sizes"}


# ------------------------------------------------------------------------------------------
# Spellings both backends share, built on each one's ``select`` and ``extremum``
# ------------------------------------------------------------------------------------------


def _integer_pow(args: list[str], eqn: JaxprEqn) -> str:
    # --8<-- [start:task2_5]
    y, dtype = eqn.params["y"], eqn.outvars[0].aval.dtype
    if y == 0:
        return typed_constant(1, dtype)
    product = " * ".join([args[0]] * abs(y))
    return f"({product})" if y > 0 else f"({typed_constant(1, dtype)} / ({product}))"
    # --8<-- [end:task2_5]


def function(name: str) -> Rule:
    return lambda args, eqn: f"{name}({', '.join(args)})"


def negative_power(x: str, y: str, dtype: np.dtype) -> str:
    """A signed integer ``x`` to the power ``y < 0``, as eager computes it: the true power
    truncated toward zero, so 0 but for 1 and -1 (and 0 for 0)."""
    one, zero = typed_constant(1, dtype), typed_constant(0, dtype)
    odd = f"(({y} & {one}) == {one})"
    return (f"({x} if {x} == {one} or ({x} == -{one} and {odd}) else "
            f"({one} if {x} == -{one} else {zero}))")


def operator(symbol: str) -> Rule:
    return lambda args, eqn: f"({args[0]} {symbol} {args[1]})"


def _select_n(select: Spelling) -> Rule:
    """``cases[which]``: for a boolean ``which``, one select; else a chain of them."""
    def rule(args: list[str], eqn: JaxprEqn) -> str:
        which, *cases = args
        if eqn.invars[0].aval.dtype == np.bool_:
            return select(which, cases[1], cases[0])
        expr = cases[-1]
        for i in reversed(range(len(cases) - 1)):
            expr = select(f"{which} == {i}", cases[i], expr)
        return expr
    return rule


def _extremum_rule(extremum: Spelling, comparison: str) -> Rule:
    return lambda args, eqn: extremum(comparison, *args, eqn.outvars[0].aval.dtype)


def _clamp_rule(extremum: Spelling) -> Rule:
    """clamp(low, x, high) = min(max(x, low), high): NaN in x stays NaN, as in XLA."""
    def rule(args: list[str], eqn: JaxprEqn) -> str:
        (low, x, high), dtype = args, eqn.outvars[0].aval.dtype
        return extremum("<", extremum(">", x, low, dtype), high, dtype)
    return rule


# --8<-- [start:common_rules]
def common_rules(select: Spelling, extremum: Spelling) -> dict[Primitive, Rule]:
    """The elementwise rules both backends spell alike, given each one's ``select(c, a, b)``
    and ``extremum(comparison, a, b, dtype)`` (NaN-propagating ``max`` for ``">"``)."""
    return {
        p.neg_p: lambda args, eqn: f"(-{args[0]})",
        p.integer_pow_p: _integer_pow,
        p.add_p: operator("+"),
        p.sub_p: operator("-"),
        p.mul_p: operator("*"),
        p.eq_p: operator("=="),
        p.ne_p: operator("!="),
        p.lt_p: operator("<"),
        p.le_p: operator("<="),
        p.gt_p: operator(">"),
        p.ge_p: operator(">="),
        p.and_p: operator("&"),
        p.or_p: operator("|"),
        p.xor_p: operator("^"),
        p.not_p: lambda args, eqn: (f"(not {args[0]})" if eqn.invars[0].aval.dtype == np.bool_
                                    else f"(~{args[0]})"),
        p.max_p: _extremum_rule(extremum, ">"),
        p.min_p: _extremum_rule(extremum, "<"),
        p.clamp_p: _clamp_rule(extremum),
        p.select_n_p: _select_n(select),
        p.convert_element_type_p: lambda args, eqn: cast(args[0], eqn.params["new_dtype"]),
        p.stop_gradient_p: lambda args, eqn: args[0],
        p.copy_p: lambda args, eqn: args[0],
        p.name_p: lambda args, eqn: args[0],
    }
# --8<-- [end:common_rules]

_IDENTITIES = (p.stop_gradient_p, p.copy_p, p.name_p)  # their operand, read where it is


# --8<-- [start:reductions]
# Each reduction's combine(acc, x): an operator, or an extremum's comparison. The accumulator
# starts at the primitive's identity (declared with it in stage 1).
REDUCTION_COMBINES = {p.reduce_sum_p: "+", p.reduce_prod_p: "*", p.reduce_max_p: ">",
                      p.reduce_min_p: "<", p.reduce_and_p: "&", p.reduce_or_p: "|"}
# --8<-- [end:reductions]



# ------------------------------------------------------------------------------------------
# Calls of the functions written for a loop's or a branch's program
# ------------------------------------------------------------------------------------------


@dataclass
class Kernel:
    """One ``@cuda.jit`` kernel of the CUDA renderers (``codegen_cuda``, ``cuda_matmul``): it
    computes one materialized value."""
    name: str
    params: list[str]  # after ``dims``: arrays read, then the result (flat views end in _flat)
    arrays: list[tuple[np.dtype, int]]  # each param's (dtype, ndim): a signature for compile_ptx
    lines: list[str]
    size: str  # the number of elements, in dims


@dataclass
class Call:
    """How control flow calls the function written for one of its programs."""
    name: str
    dims: list[str]  # the arguments before the operands: the run-time dims
    setup: list[str]  # lines before the loop: the dims, the scratch arrays
    pick: list[str]  # lines at the top of each trip: which of two scratch arrays
    scratch: list[str]  # the argument after the operands (a tuple of arrays), if any

    def text(self, operands: list[str]) -> str:
        return f"{self.name}({', '.join([*self.dims, *operands, *self.scratch])})"


def scratch_buffers(allocations: list[tuple[str, bool]], base: str,
                    parity: str) -> tuple[list[str], list[str], list[str]]:
    """What to pass for a called function's scratch arrays (a tuple, or nothing), the lines
    that allocate them (before the loop), and the lines that pick, each step, one of two that
    alternate (``parity``). NB: the pick is a statement of its own: Numba rejects a
    conditional expression among many call arguments."""
    names: list[str] = []
    allocate, pick = [], []
    for k, (allocation, alternate) in enumerate(allocations):
        allocation = allocation.replace("{dims}", base)
        name = f"{base}_s{k}"
        names.append(name)
        if alternate:
            allocate += [f"{name}a = {allocation}", f"{name}b = {allocation}"]
            pick.append(f"{name} = {name}a if {parity} == 0 else {name}b")
        else:
            allocate.append(f"{name} = {allocation}")
    return ([f"({', '.join(names)},)"] if names else []), allocate, pick


# ------------------------------------------------------------------------------------------
# The writer
# ------------------------------------------------------------------------------------------


class KernelWriter:
    """Writes a program's steps, as its plan orders them, with a renderer's spellings."""

    ELEMENTWISE: dict[Primitive, Rule] = {}  # a renderer's table of elementwise rules
    STATEMENTS: dict[Primitive, Callable] = {}  # rules that need statements (CUDA's)
    NAMED_OPERANDS: set[Primitive] = set()  # rules that use an operand more than once
    LOOP_RULES: dict[Primitive, Callable] = {}
    ROW_GROUPS = False  # whether the plan groups row reductions (the GPU's kernel per row)
    FLAT_LOOPS: bool | None = None  # loops over flattened arrays: None, unless it reduces
    # The dtypes the kernels compute in. Numba has no bfloat16 or (on the CPU) float16, and
    # the elementwise rules (kernel_math's float intrinsics, NaN-aware comparisons) are
    # written for real numbers: a program with a value of another dtype runs on the
    # interpreter backend, each step one NumPy call, rather than risk a wrong kernel.
    DTYPES = frozenset(np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64,
                                             np.uint8, np.uint16, np.uint32, np.uint64,
                                             np.float32, np.float64))

    def __init__(self, jaxpr: Jaxpr, functions: list[str] | None = None,
                 nested: bool = False) -> None:
        self.jaxpr = jaxpr
        # Functions the program calls (loop bodies, branches), written before it: one list
        # for the whole module, so that their names are unique.
        self.functions = functions if functions is not None else []
        self.nested = nested  # a loop body or branch: returns fresh arrays, never its inputs
        self.producer = {v: eqn for eqn in jaxpr.eqns for v in eqn.outvars}
        self.uses = use_counts(jaxpr)
        self.names: dict[Var, str] = {v: f"in{i}" for i, v in enumerate(jaxpr.invars)}
        self.dim_classes = DimClasses(jaxpr)
        self.dims: list[tuple[Var, int]] = []  # one (value, axis) per run-time dim read
        self.reads: list[tuple[Var, str]] = []  # what the loop being written reads
        self.temporaries = 0
        self.plan: KernelPlan = self._plan()
        self.materialized = self.plan.materialized
        self.step: Step | None = None  # the step being written
        self.flat = False  # while writing a loop over flattened arrays
        self.flat_views: set[str] = set()
        self.comment_names = names_in_order(jaxpr)  # for the comments

    def _plan(self) -> KernelPlan:
        for var in [*self.jaxpr.invars, *(v for eqn in self.jaxpr.eqns for v in eqn.outvars),
                    *self.jaxpr.outvars]:  # (an output may be a literal, computed by nothing)
            if var.aval.dtype not in self.DTYPES:
                raise UnsupportedError(f"a value of dtype {var.aval.dtype} (the kernels do "
                                       f"not compute in it)")
        for eqn in self.jaxpr.eqns:
            if not eqn.outvars:
                raise UnsupportedError(f"{eqn.primitive} (an equation with an effect)")
        return plan_kernels(self.jaxpr, rows=self.ROW_GROUPS, flat_loops=self.FLAT_LOOPS)

    # --- names -------------------------------------------------------------------------

    def dim(self, var: Var, axis: int) -> str:
        """The name of a run-time dimension: ``d3`` is ``dims[3]``."""
        key = self.dim_classes.find((var, axis))
        if key not in self.dims:
            self.dims.append(key)
        return f"d{self.dims.index(key)}"

    def _shape(self, var: Var) -> list[str]:
        return [self.dim(var, k) for k in range(var.aval.ndim)]

    def eqn_text(self, eqn: JaxprEqn) -> str:
        """``d = mul a c``: the equation, in the jaxpr's names, without shapes (so that the
        source, and the compiled kernel, is the same for every shape)."""
        outs = " ".join(self.comment_names[v] for v in eqn.outvars)
        ins = " ".join(self._comment_atom(a) for a in eqn.invars)
        params = {k: comment_param(v) for k, v in eqn.params.items() if k not in SHAPE_PARAMS}
        shown = "".join(f" {k}={v}" for k, v in sorted(params.items()))
        return f"{outs} = {eqn.primitive}{'[' + shown[1:] + ']' if shown else ''} {ins}"

    def _comment_atom(self, atom: Any) -> str:
        if isinstance(atom, Literal):
            return typed_constant(atom.val, atom.aval.dtype)
        return self.comment_names[atom]

    def _signature(self, name: str) -> str:
        ins = " ".join(self.comment_names[v] for v in self.jaxpr.invars)
        outs = " ".join(self._comment_atom(a) for a in self.jaxpr.outvars)
        return f"# {name}: inputs {ins}; outputs {outs}"

    def _name_of(self, var: Var) -> str:
        if var not in self.names:
            self.names[var] = f"v{len(self.names)}"
        return self.names[var]

    def _temporary(self) -> str:
        self.temporaries += 1
        return f"t{self.temporaries - 1}"

    def _at(self, var: Var, index: tuple[str, ...]) -> str:
        """``var`` at ``index`` as an assignment target (a 0-d array is stored as shape (1,))."""
        return f"{self._name_of(var)}[{', '.join(index) or '0'}]"

    def owns_dead(self, atom: Any) -> bool:
        """Whether ``atom`` is an array this kernel made and only one equation reads, which
        may then write into it (a scatter). A renderer that can tell says so."""
        return False

    def unless_aliased(self, out: Var, operand: Any, shape: list[str],
                       setup: list[str]) -> list[str]:
        """The dims of a loop that copies ``operand`` into ``out``: none when the runtime
        gave ``out`` the operand's own buffer (a donated argument), which a renderer that can
        tell finds out in lines it adds to ``setup``."""
        return shape

    def _array(self, atom: Any) -> str:
        if isinstance(atom, Literal):
            raise UnsupportedError("a literal operand of a library call")
        self.reads.append((atom, ":"))  # the whole array
        return self.names[atom]

    def _operand(self, atom: Any) -> str:
        """An operand as an array (a literal becomes an array of one element, as 0-d values
        are stored)."""
        if isinstance(atom, Literal):
            return self._literal_array(typed_constant(atom.val, atom.aval.dtype))
        return self._array(atom)

    # --- steps -------------------------------------------------------------------------

    def _emit_steps(self) -> None:
        for step in self.plan.steps:
            self.step, self.flat_views = step, set()
            if step.how == "rows":
                self._emit_row_group(step)
            else:
                self._emit(step.eqns[0])

    def _emit(self, eqn: JaxprEqn) -> None:
        self.reads = []
        prim, comment = eqn.primitive, f"# {self.eqn_text(eqn)}"
        if is_reduction(prim):
            if not eqn.params["axes"]:
                raise UnsupportedError(f"{prim} over no axes")
            self._emit_reduction(eqn, comment)
        elif is_fusible(eqn):
            self._emit_loop(eqn.outvars[0], comment)
        elif prim in self.LOOP_RULES:
            self.LOOP_RULES[prim](self, eqn, comment)
        elif prim is p.dot_general_p:
            self._emit_dot(eqn, comment)
        elif prim is p.reshape_p:
            self._emit_reshape(eqn, comment)
        elif prim in CONTROL_FLOW:
            CONTROL_FLOW[prim](self, eqn, comment)
        else:
            raise UnsupportedError(str(prim))

    def _emit_row_group(self, step: Step) -> None:
        raise NotImplementedError("only a renderer that plans row groups writes them")

    # --8<-- [start:expr]
    def expr(self, atom: Any, index: tuple[str, ...], body: list[str],
             memo: dict[tuple, str]) -> str:
        """A scalar expression for ``atom`` at ``index``, inlining fusible producers."""
        if isinstance(atom, Literal):
            return typed_constant(atom.val, atom.aval.dtype)
        if atom in self.names and (atom in self.materialized or atom in self.jaxpr.invars):
            return self._read(atom, index)
        eqn = self.producer[atom]
        if not is_elementwise(eqn.primitive) or eqn.primitive in _IDENTITIES:
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
        if prim in self.STATEMENTS:  # rules that need statements: temporaries, branches
            args = [self._named(self.expr(a, index, body, memo), body) for a in eqn.invars]
            return self.STATEMENTS[prim](self, args, eqn, body)
        if is_elementwise(prim):
            args = [self.expr(a, index, body, memo) for a in eqn.invars]
            if prim in self.NAMED_OPERANDS:  # a name for each, rather than repeated reads
                args = [self._named(arg, body) for arg in args]
            value = self.ELEMENTWISE[prim](args, eqn)
            if out.aval.dtype.kind in "iu":  # Numba widens int32 + int32 to int64: wrap back
                return f"{np_type(out.aval.dtype)}({value})"
            return value
        if prim is p.iota_p:
            return f"{np_type(out.aval.dtype)}({index[eqn.params['dimension']]})"
        operand = eqn.invars[0]
        return self.expr(operand, self._operand_index(eqn, index), body, memo)

    def _named(self, value: str, body: list[str]) -> str:
        """``value``, or a temporary holding it when it is more than a name or a constant."""
        if value.isidentifier() or re.fullmatch(r"np\.\w+\([^()]*\)", value):
            return value
        name = self._temporary()
        body.append(f"{name} = {value}")
        return name

    def _operand_index(self, eqn: JaxprEqn, index: tuple[str, ...]) -> tuple[str, ...]:
        """Where in its operand an index-mapping primitive reads for ``index``."""
        return read_index(eqn, index, self.dim)

    def reduction_combine(self, prim: Primitive, dtype: np.dtype) -> str:
        """combine(acc, x) of a reduction, with ``{acc}`` and ``{x}`` to fill in."""
        op = REDUCTION_COMBINES[prim]
        if op in "<>":
            return self.extremum(op, "{x}", "{acc}", dtype)
        if dtype.kind in "iu":  # Numba widens int32 + int32 to int64: wrap, as NumPy does
            return f"{np_type(dtype)}({{acc}} {op} {{x}})"
        return f"({{acc}} {op} {{x}})"

    def _multiply_add(self, acc: str, a: str, b: str, dtype: np.dtype) -> str:
        if dtype == np.bool_:  # NumPy's boolean dot: any(x and y)
            return f"{acc} | ({a} & {b})"
        return f"{acc} + {a} * {b}"

    # ---------------------------------------------------------------------------------------
    # Control flow: a loop or branch calls a function written for its program, whose steps
    # are planned and fused as any program's
    # ---------------------------------------------------------------------------------------

    # --8<-- [start:emit_control_flow]
    def _called(self, program: ClosedJaxpr, kind: str,
                scratch: bool) -> tuple[str, str, list[tuple[str, bool]]]:
        """A program a loop or branch runs, written as a function of its own: its name, the
        tuple of run-time dims to call it with, and (with ``scratch``, for a function called
        once a step) the arrays it takes as parameters instead of allocating them, each as
        (how to allocate it, whether two must alternate)."""
        if program.consts:
            raise UnsupportedError(f"a {kind} program with constants")
        writer = self._nested_writer(dce(inline_calls(program.jaxpr)))
        slot = len(self.functions)
        self.functions.append("")  # the name is taken before the functions it calls take theirs
        name = f"{kind}_{slot}"
        source, allocations = writer.called_function(name, scratch)
        self.functions[slot] = source
        dims = [self.dim(var, axis) for var, axis in writer.dims]
        return name, f"({', '.join(dims)},)" if dims else "(0,)", allocations

    def _call(self, program: ClosedJaxpr, kind: str, base: str, parity: str,
              scratch: bool = True) -> Call:
        """How to call ``program``'s function: its dims (and scratch arrays) in variables
        named after ``base``, made before the loop."""
        name, dims, allocations = self._called(program, kind, scratch)
        buffers, allocate, pick = scratch_buffers(allocations, base, parity)
        setup, args = self._dims_variables(base, dims)
        return Call(name, args, setup + allocate, pick, buffers)

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
        step's row of the xs goes in, its ys are written at the step's row."""
        params = eqn.params
        n_consts, n_carry = params["num_consts"], params["num_carry"]
        base = self._temporary()
        body = self._call(params["jaxpr"], "scan_body", f"{base}_d", f"{base}_i % 2")
        ops = [self._operand(a) for a in eqn.invars]
        carry = [f"{base}_c{k}" for k in range(n_carry)]
        xs, ys = eqn.invars[n_consts + n_carry:], eqn.outvars[n_carry:]
        length, step = self._scan_length(eqn), f"{base}_t"
        lines = [comment, *[f"{c} = {op}" for c, op in zip(carry, ops[n_consts:])]]
        lines += [self._allocate(y, self._shape(y)) for y in ys]
        lines += body.setup
        rows = [self._row_of(op, x, step) for op, x in zip(ops[n_consts + n_carry:], xs)]
        loop = [f"{step} = {length} - 1 - {base}_i" if params["reverse"] else
                f"{step} = {base}_i", *body.pick,
                f"{base}_r = {body.text([*ops[:n_consts], *carry, *rows])}"]
        loop += [f"{c} = {base}_r[{k}]" for k, c in enumerate(carry)]
        loop += [self._store_row(y, step, f"{base}_r[{n_carry + j}]") for j, y in enumerate(ys)]
        lines += [f"for {base}_i in range({length}):", *indent(loop)]
        lines += [f"{self._name_of(v)} = {c}" for v, c in zip(eqn.outvars, carry)]
        self._statements(lines)

    def _emit_while(self, eqn: JaxprEqn, comment: str) -> None:
        """A while loop that calls the predicate's function, then the body's."""
        params = eqn.params
        n_cond, n_body = params["cond_nconsts"], params["body_nconsts"]
        base = self._temporary()
        predicate = self._call(params["cond_jaxpr"], "while_cond", f"{base}_pd", f"{base}_k")
        body = self._call(params["body_jaxpr"], "while_body", f"{base}_bd", f"{base}_k")
        ops = [self._operand(a) for a in eqn.invars]
        carry = [f"{base}_c{k}" for k in range(len(ops) - n_cond - n_body)]
        lines = [comment, *[f"{c} = {op}" for c, op in zip(carry, ops[n_cond + n_body:])]]
        lines += [*predicate.setup, *body.setup, f"{base}_k = 0"]
        test = self._host_value(f"{predicate.text([*ops[:n_cond], *carry])}[0]")
        trip = [*body.pick,
                f"{base}_r = {body.text([*ops[n_cond:n_cond + n_body], *carry])}"]
        trip += [f"{c} = {base}_r[{k}]" for k, c in enumerate(carry)]
        trip += [f"{base}_k = 1 - {base}_k", *predicate.pick]  # the other set of buffers next
        lines += [*predicate.pick, f"while {test}:", *indent(trip)]
        lines += [f"{self._name_of(v)} = {c}" for v, c in zip(eqn.outvars, carry)]
        self._statements(lines)

    def _emit_cond(self, eqn: JaxprEqn, comment: str) -> None:
        """An if/elif chain on the index, each arm calling its branch's function."""
        ops = [self._operand(a) for a in eqn.invars]
        base = self._temporary()
        lines = [comment, f"{base}_i = {self._host_value(ops[0])}"]
        branches = eqn.params["branches"]
        for k, branch in enumerate(branches):
            call = self._call(branch, "branch", f"{base}_d", "0", scratch=False)
            test = ("else:" if k == len(branches) - 1 else
                    f"{'if' if k == 0 else 'elif'} {base}_i == {k}:")
            lines += [test, *indent([*call.setup, f"{base}_r = {call.text(ops[1:])}"])]
        lines += [f"{self._name_of(v)} = {base}_r[{k}]" for k, v in enumerate(eqn.outvars)]
        self._statements(lines)
    # --8<-- [end:emit_control_flow]


CONTROL_FLOW: dict[Primitive, Callable[[KernelWriter, JaxprEqn, str], None]] = {
    scan_p: KernelWriter._emit_scan,
    while_p: KernelWriter._emit_while,
    cond_p: KernelWriter._emit_cond,
}



# --8<-- [start:has_rule]
def has_rule(writer: type[KernelWriter], prim: Primitive) -> bool:
    """Whether a renderer writes code for ``prim``: a spelled elementwise expression, an
    index map, a reduction, a loop rule, a product, a reshape, control flow, or a call or
    decomposition that the passes inline first."""
    return (prim in writer.ELEMENTWISE or prim in writer.STATEMENTS or prim in INDEX_MAPS
            or prim in REDUCTION_COMBINES
            or prim in writer.LOOP_RULES or prim in CONTROL_FLOW
            or prim in (p.dot_general_p, p.reshape_p)
            or prim.name in CALL_PARAMS or prim in DECOMPOSED)
# --8<-- [end:has_rule]
