"""The CPU backend: a jaxpr becomes one Numba function with fused loops.

Fusion decides which values are *materialized* (written to memory): the outputs, results of
reductions and of BLAS calls, operands those calls need, and elementwise values used more
than once. Everything else is *inlined*: computed inside the loop of the value that uses it,
at the index that value needs. So ``x*x + x*2.0`` is one loop reading ``x`` once, and a
softmax is a few passes over memory rather than one per operation.

The generated source reads every dimension from a ``dims`` array at run time, so one
compiled kernel serves every shape of the same rank and dtype; constants carry the program's
dtype (``np.float32(2.0)``) so a float32 program does no float64 math. Primitives without a
code generation rule yet make the whole program run on the interpreter backend instead.
"""

from __future__ import annotations

import inspect
import pickle
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from stage1_autodiff.core import Array, Primitive

from stage1_autodiff import primitives as p

from . import kernel_math
from .jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, _Names
from .kernel_cache import cache_dir, forget_compiled_code, load_kernel_module, source_hash
from .passes import optimize

PARALLEL_MIN_ELEMENTS = 1 << 15  # smaller loops run serially: threads cost more than they save


class UnsupportedError(Exception):
    """The program uses a primitive the CPU code generator does not handle yet."""


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
    y, dtype = eqn.params["y"], eqn.outvars[0].aval.dtype
    if y == 0:
        return typed_constant(1, dtype)
    product = " * ".join([args[0]] * abs(y))
    return f"({product})" if y > 0 else f"({typed_constant(1, dtype)} / ({product}))"


def _is_float32(eqn: JaxprEqn) -> bool:
    return eqn.outvars[0].aval.dtype == np.float32


def _transcendental(float32_name: str, libm_name: str) -> Callable[[list[str], JaxprEqn], str]:
    """float32 uses kernel_math's vectorisable version; float64 keeps the C library's."""
    return lambda args, eqn: (f"{float32_name if _is_float32(eqn) else libm_name}({args[0]})")


def _logistic(args: list[str], eqn: JaxprEqn) -> str:
    if _is_float32(eqn):
        return f"logistic_f32({args[0]})"
    one = typed_constant(1, eqn.outvars[0].aval.dtype)
    return f"({one} / ({one} + np.exp(-{args[0]})))"


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


def _convert(args: list[str], eqn: JaxprEqn) -> str:
    new_dtype = eqn.params["new_dtype"]
    if new_dtype == np.bool_:
        return f"({args[0]} != 0)"
    return f"{np_type(new_dtype)}({args[0]})"


def _function(name: str) -> Callable[[list[str], JaxprEqn], str]:
    return lambda args, eqn: f"{name}({', '.join(args)})"


def _operator(symbol: str) -> Callable[[list[str], JaxprEqn], str]:
    return lambda args, eqn: f"({args[0]} {symbol} {args[1]})"


def _float_only(rule: Callable[[list[str], JaxprEqn], str]) -> Callable:
    """Integer division and remainder round differently in Python; not generated yet."""
    def checked(args: list[str], eqn: JaxprEqn) -> str:
        if eqn.outvars[0].aval.dtype.kind != "f":
            raise UnsupportedError(f"{eqn.primitive} on integers")
        return rule(args, eqn)
    return checked


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
    p.div_p: _float_only(_operator("/")),
    p.rem_p: _float_only(_function("np.fmod")),
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
    p.not_p: lambda args, eqn: (f"(not {args[0]})" if eqn.invars[0].aval.dtype == np.bool_
                                else f"(~{args[0]})"),
    p.select_n_p: _select_n,
    p.convert_element_type_p: _convert,
    p.stop_gradient_p: lambda args, eqn: args[0],
}
# --8<-- [end:elementwise_rules]

# What an inlined value costs to recompute at each use, in simple operations.
_EXPENSIVE = {p.exp_p, p.log_p, p.log1p_p, p.expm1_p, p.sin_p, p.cos_p, p.tan_p, p.tanh_p,
              p.logistic_p, p.pow_p, p.atan2_p, p.div_p, p.rem_p, p.sqrt_p}
RECOMPUTE_LIMIT = 2  # a value this cheap is recomputed where used rather than stored

# Primitives that only say where to read: fused as index arithmetic.
INDEX_MAPS = {p.broadcast_in_dim_p, p.transpose_p, p.squeeze_p, p.slice_p, p.rev_p, p.iota_p}


# --8<-- [start:reductions]
def _float_or(float_form: str, other_form: str) -> Callable[[np.dtype], str]:
    return lambda dtype: float_form if dtype.kind == "f" else other_form


REDUCTIONS = {
    # primitive: (initial value, combine(acc, x) for a dtype)
    p.reduce_sum_p: (lambda dtype: 0, _float_or("add_reassoc({acc}, {x})", "({acc} + {x})")),
    p.reduce_prod_p: (lambda dtype: 1, _float_or("mul_reassoc({acc}, {x})", "({acc} * {x})")),
    p.reduce_max_p: (lambda dtype: -np.inf if dtype.kind == "f" else np.iinfo(dtype).min,
                     _float_or("max_reassoc({acc}, {x})", "select({x} > {acc}, {x}, {acc})")),
    p.reduce_min_p: (lambda dtype: np.inf if dtype.kind == "f" else np.iinfo(dtype).max,
                     _float_or("min_reassoc({acc}, {x})", "select({x} < {acc}, {x}, {acc})")),
    p.reduce_and_p: (lambda dtype: True, lambda dtype: "({acc} & {x})"),
    p.reduce_or_p: (lambda dtype: False, lambda dtype: "({acc} | {x})"),
}
# --8<-- [end:reductions]


def _is_trivial_reshape(eqn: JaxprEqn) -> bool:
    """A reshape that only adds or removes size-1 dims (keepdims): index arithmetic."""
    before, after = eqn.invars[0].aval.shape, eqn.outvars[0].aval.shape
    return [d for d in before if d != 1] == [d for d in after if d != 1]


def _is_fusible(eqn: JaxprEqn) -> bool:
    if eqn.primitive in ELEMENTWISE or eqn.primitive in INDEX_MAPS:
        return True
    return eqn.primitive is p.reshape_p and _is_trivial_reshape(eqn)


def _is_blas_dot(eqn: JaxprEqn) -> bool:
    (lc, rc), (lb, _) = eqn.params["dimension_numbers"]
    x, y = (a.aval for a in eqn.invars)
    return (not lb and x.ndim == y.ndim == 2 and len(lc) == 1 and x.dtype == y.dtype
            and x.dtype.kind == "f")


# ------------------------------------------------------------------------------------------
# Dimensions: which axes of which values are the same size by construction
# ------------------------------------------------------------------------------------------


class DimClasses:
    """Union-find over (value, axis): two axes are in one class when the program's types make
    them equal (an elementwise operand and its result, a transposed axis, a kept axis of a
    reduction...). Each class is one run-time dim of the kernel, ``d0``, ``d1``...; so the
    source names a softmax's rows and columns once each, and two loops over the same class are
    visibly over the same range (which is what lets them merge)."""

    def __init__(self, jaxpr: Jaxpr) -> None:
        self.parent: dict[tuple[Var, int], tuple[Var, int]] = {}
        for eqn in jaxpr.eqns:
            for a, k, b, j in _equal_axes(eqn):
                self.union((a, k), (b, j))

    def find(self, key: tuple[Var, int]) -> tuple[Var, int]:
        root = key
        while self.parent.get(root, root) != root:
            root = self.parent[root]
        while key != root:  # path compression
            self.parent[key], key = root, self.parent.get(key, key)
        return root

    def union(self, a: tuple[Var, int], b: tuple[Var, int]) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra


def _equal_axes(eqn: JaxprEqn):
    """(operand, axis, result, axis) pairs that the primitive's typing makes equal."""
    out = eqn.outvars[0] if eqn.outvars else None
    operands = [a for a in eqn.invars if isinstance(a, Var)]
    prim = eqn.primitive
    if prim in ELEMENTWISE:
        for a in operands:
            if a.aval.ndim == out.aval.ndim:
                yield from ((a, k, out, k) for k in range(out.aval.ndim))
    elif prim is p.broadcast_in_dim_p and operands:
        for k, d in enumerate(eqn.params["broadcast_dimensions"]):
            if operands[0].aval.shape[k] == out.aval.shape[d]:
                yield operands[0], k, out, d
    elif prim is p.transpose_p:
        yield from ((operands[0], k, out, j) for j, k in enumerate(eqn.params["permutation"]))
    elif prim in (p.rev_p,) or prim in REDUCTIONS or prim is p.squeeze_p or (
            prim is p.reshape_p and _is_trivial_reshape(eqn)):
        yield from _kept_axes(eqn)
    elif prim is p.dot_general_p:
        x, y = eqn.invars
        (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
        yield from ((x, i, y, j) for i, j in zip(lc, rc))
        x_free = [k for k in range(x.aval.ndim) if k not in lc and k not in lb]
        y_free = [k for k in range(y.aval.ndim) if k not in rc and k not in rb]
        for n, (i, j) in enumerate(zip(lb, rb)):
            yield x, i, out, n
            yield y, j, out, n
        yield from ((x, k, out, len(lb) + n) for n, k in enumerate(x_free))
        yield from ((y, k, out, len(lb) + len(x_free) + n) for n, k in enumerate(y_free))


def _kept_axes(eqn: JaxprEqn):
    operand, out = eqn.invars[0], eqn.outvars[0]
    if eqn.primitive is p.rev_p:
        yield from ((operand, k, out, k) for k in range(out.aval.ndim))
        return
    if eqn.primitive in REDUCTIONS:
        kept = [k for k in range(operand.aval.ndim) if k not in eqn.params["axes"]]
        yield from ((operand, k, out, j) for j, k in enumerate(kept))
        return
    before = [k for k, n in enumerate(operand.aval.shape) if n != 1]
    after = [k for k, n in enumerate(out.aval.shape) if n != 1]
    yield from ((operand, k, out, j) for k, j in zip(before, after))


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


class ProgramWriter:
    """Writes the source of one Numba function for a jaxpr."""

    def __init__(self, jaxpr: Jaxpr) -> None:
        self.jaxpr = jaxpr
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
            if eqn.primitive in REDUCTIONS or not _is_fusible(eqn):
                chosen.update(eqn.outvars)
            if not _is_fusible(eqn) and eqn.primitive not in REDUCTIONS:
                # A library call (BLAS, reshape) needs its operands as arrays.
                chosen.update(a for a in eqn.invars if isinstance(a, Var))
            if not _is_fusible(eqn):
                continue
            out = eqn.outvars[0]
            own = 0 if eqn.primitive not in ELEMENTWISE else (
                4 if eqn.primitive in _EXPENSIVE else 1)
            cost[out] = own + sum(cost.get(a, 0) for a in eqn.invars
                                  if isinstance(a, Var) and a not in chosen)
            if eqn.primitive in ELEMENTWISE and self.uses[out] > 1 and (
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
        lines = [f"def program({args}):", *_indent(header + body)]
        ins = " ".join(self.comment_names[v] for v in self.jaxpr.invars)
        outs_text = " ".join(self._comment_atom(a) for a in self.jaxpr.outvars)
        summary = [f"# inputs: {ins}; outputs: {outs_text}"]
        decorator = f'@njit(parallel={self.parallel}, cache=True, error_model="numpy")'
        return "\n".join(_prelude() + summary + ["", decorator, *lines, ""])

    def eqn_text(self, eqn: JaxprEqn) -> str:
        """``d = mul a c``: the equation, in the jaxpr's names, without shapes (so that the
        source, and the compiled kernel, is the same for every shape)."""
        outs = " ".join(self.comment_names[v] for v in eqn.outvars)
        ins = " ".join(self._comment_atom(a) for a in eqn.invars)
        params = {k: v for k, v in eqn.params.items() if k not in _SHAPE_PARAMS}
        shown = "".join(f" {k}={v}" for k, v in sorted(params.items()))
        return f"{outs} = {eqn.primitive}{'[' + shown[1:] + ']' if shown else ''} {ins}"

    def _comment_atom(self, atom: Any) -> str:
        if isinstance(atom, Literal):
            return typed_constant(atom.val, atom.aval.dtype)
        return self.comment_names[atom]

    def _output(self, atom: Any) -> str:
        if isinstance(atom, Literal):
            return f"np.full(1, {typed_constant(atom.val, atom.aval.dtype)})"
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
        if eqn.primitive in REDUCTIONS:
            self._emit_reduction(eqn, comment)
        elif _is_fusible(eqn):
            self._emit_loop(eqn.outvars[0], comment)
        elif eqn.primitive is p.dot_general_p and _is_blas_dot(eqn):
            self._emit_dot(eqn, comment)
        elif eqn.primitive is p.reshape_p:
            self._emit_reshape(eqn, comment)
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
        if out.aval.ndim > 1 and self._eqn_reads_in_step(self.producer[out], out.aval.shape):
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
        if eqn.primitive not in ELEMENTWISE:
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

    def _emit_nest(self, setup: list[str], shape: list[str], index: tuple[str, ...],
                   comment: str, body: list[str], work: int, produces: set[Var], writes: set[Var],
                   after: list[str] = ()) -> None:
        """Loops over ``shape``, as a block: the outer one parallel when the traced program
        does enough ``work`` (elements) to pay for threads. The choice is part of the source,
        so a kernel is shared by the shapes on the same side of the threshold."""
        if not shape:
            self.blocks.append(Block(setup, None, False, [comment, *body], produces,
                                     after=list(after)))
            return
        parallel = work >= PARALLEL_MIN_ELEMENTS
        self.parallel |= parallel
        nest = body
        for k in reversed(range(1, len(shape))):
            nest = [f"for {index[k]} in range({shape[k]}):", *_indent(nest)]
        self.blocks.append(Block(setup, (index[0], shape[0]), parallel, [comment, *nest],
                                 produces, writes,
                                 self.reads, list(after)))

    # --8<-- [start:expr]
    def expr(self, atom: Any, index: tuple[str, ...], body: list[str],
             memo: dict[tuple, str]) -> str:
        """A scalar expression for ``atom`` at ``index``, inlining fusible producers."""
        if isinstance(atom, Literal):
            return typed_constant(atom.val, atom.aval.dtype)
        if atom in self.names and (atom in self.materialized or atom in self.jaxpr.invars):
            return self._read(atom, index)
        eqn = self.producer[atom]
        if eqn.primitive not in ELEMENTWISE or eqn.primitive is p.stop_gradient_p:
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
        if prim in ELEMENTWISE:
            args = [self.expr(a, index, body, memo) for a in eqn.invars]
            value = ELEMENTWISE[prim](args, eqn)
            return value if out.aval.dtype.kind != "i" else f"{np_type(out.aval.dtype)}({value})"
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
            return tuple(f"({start} + {i} * {stride})" for start, i, stride
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
        initial, combine_for = REDUCTIONS[eqn.primitive]
        init, combine = typed_constant(initial(dtype), dtype), combine_for(dtype)
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
            return [f"for {column} in range(b * {block}, min({extent}, (b + 1) * {block})):",
                    *_indent(nest)]

        update = over_block([*body, f"{target} = {combine.format(acc=target, x=value)}"])
        for k in reversed(axes):
            update = [f"for {index[k]} in range({self.dim(operand, k)}):", *_indent(update)]
        blocks = f"({extent} + {block - 1}) // {block}"
        self._emit_nest(setup, [blocks], ("b",), comment,
                        [*over_block([f"{target} = {init}"]), *update],
                        operand.aval.size, {out}, set())

    def _emit_dot(self, eqn: JaxprEqn, comment: str) -> None:
        (lc, rc), _ = eqn.params["dimension_numbers"]
        x, y = (self._array(a) for a in eqn.invars)
        x = x if lc == (1,) else f"{x}.T"
        y = y if rc == (0,) else f"{y}.T"
        self._statements([comment,
                          f"{self._name_of(eqn.outvars[0])} = np.dot({x}, {y})  # BLAS"])

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
        setup = [line for block in group for line in block.setup]
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
        private = set().union(*(b.writes for b in group)) - outputs - read_elsewhere
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


COLUMN_BLOCK = 256  # columns per thread's share of a column reduction


def _can_join(group: list[Block], block: Block) -> bool:
    """Whether ``block``'s loop can run inside the group's: same range, and it reads what
    the group computes only at its own outer index."""
    first = group[0]
    if block.loop is None or first.loop is None or block.loop[1] != first.loop[1]:
        return False
    outer, index = first.loop[0], block.loop[0]
    if index != outer and re.search(rf"\b{outer}\b", "\n".join(block.body)):
        return False  # the block uses the group's index name for something else
    produced = set().union(*(b.produces for b in group))
    row_local = set().union(*(b.writes for b in group))
    return all(var in row_local and first_index == index
               for var, first_index in block.reads if var in produced)




def _prelude() -> list[str]:
    return ["# Generated by stage2_jit's CPU backend. Comments show the jaxpr's equations.",
            f"# kernel_math {_KERNEL_MATH_HASH}",
            "import numpy as np",
            "from numba import njit, prange",
            "from stage2_jit.kernel_math import (add_reassoc, exp_f32, logistic_f32, max_reassoc,",
            "    maximum, min_reassoc, minimum, mul_reassoc, select, tanh_f32)",
            ""]


_KERNEL_MATH_HASH = source_hash(inspect.getsource(kernel_math))


def _indent(lines: list[str]) -> list[str]:
    return ["    " + line for line in lines]


# Params that restate shapes, which the kernel reads at run time instead.
_SHAPE_PARAMS = {"shape", "new_sizes", "limit_indices", "dimensions_sizes"}


# ------------------------------------------------------------------------------------------
# Compiling and running
# ------------------------------------------------------------------------------------------


class CpuExecutable:
    """Runs the generated function: flattens 0-d arrays, passes the dims, wraps results."""

    def __init__(self, closed: ClosedJaxpr, source: str, writer: ProgramWriter,
                 optimized: ClosedJaxpr) -> None:
        self.closed = closed
        self.optimized = optimized  # the program the kernel computes, for reading
        self.consts = [np.ascontiguousarray(np.asarray(c)) for c in optimized.consts]
        self.source = source
        self.kernel = load_kernel_module(source).program
        self.checked = False  # whether a first call has loaded or compiled the kernel
        self.dims = np.array([var.aval.shape[k] for var, k in writer.dims], dtype=np.int64)
        self.in_avals = closed.in_avals
        self.out_avals = closed.out_avals

    def __call__(self, *args: np.ndarray) -> list[Array]:
        arrays = [np.ascontiguousarray(x).reshape(1) if not aval.shape else
                  np.ascontiguousarray(x) for x, aval in zip(args, self.in_avals)]
        outs = self._call(self.consts + arrays)
        return [Array(np.asarray(o).reshape(aval.shape), aval.weak_type)
                for o, aval in zip(outs, self.out_avals)]

    def _call(self, arrays: list[np.ndarray]) -> Any:
        if self.checked:
            return self.kernel(self.dims, *arrays)
        try:
            outs = self.kernel(self.dims, *arrays)
        except (EOFError, pickle.UnpicklingError, ImportError, AttributeError):
            # Numba's cached code for this kernel was unreadable: forget it and compile.
            forget_compiled_code(cache_dir(), source_hash(self.source))
            outs = self.kernel(self.dims, *arrays)
        self.checked = True
        return outs


def inline_calls(jaxpr: Jaxpr) -> Jaxpr:
    """Replaces each nested ``jit`` equation by the equations of its program, so fusion
    sees through function boundaries (as XLA sees one module)."""
    eqns: list[JaxprEqn] = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name != "jit":
            eqns.append(eqn)
            continue
        inner = inline_calls(eqn.params["jaxpr"].jaxpr)
        renamed: dict[Var, Any] = dict(zip(inner.invars, eqn.invars))
        for inner_eqn in inner.eqns:
            invars = [renamed.get(a, a) if isinstance(a, Var) else a for a in inner_eqn.invars]
            eqns.append(inner_eqn._replace(invars=invars))
        results = [renamed.get(a, a) if isinstance(a, Var) else a for a in inner.outvars]
        for outer, result in zip(eqn.outvars, results):
            eqns.append(JaxprEqn(p.stop_gradient_p, [result], {}, [outer]))  # a plain copy
    return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns)


def generate_source(jaxpr: Jaxpr) -> tuple[str, ProgramWriter]:
    """The kernel source for ``jaxpr`` (nested jit calls already inlined: ``compile_cpu``
    inlines, then optimizes, then generates)."""
    writer = ProgramWriter(jaxpr)
    return writer.write(), writer


def compile_cpu(closed: ClosedJaxpr, fallback: Callable[[ClosedJaxpr], Callable]) -> Callable:
    """The CPU executable for ``closed``: the program is optimized (constant folding, CSE,
    DCE), then generated; when a primitive is not covered, ``fallback``'s executable."""
    if closed.consts:
        raise ValueError("compile_cpu expects constants already turned into arguments.")
    optimized = optimize(ClosedJaxpr(inline_calls(closed.jaxpr), []))
    # Folding may leave array constants: the kernel takes them as its first arguments.
    program = Jaxpr([], [*optimized.jaxpr.constvars, *optimized.jaxpr.invars],
                    optimized.jaxpr.outvars, optimized.jaxpr.eqns)
    try:
        source, writer = generate_source(program)
    except UnsupportedError as e:
        run = fallback(closed)
        run.source = f"# Not generated: {e} has no CPU code generation rule yet.\n"
        return run
    return CpuExecutable(closed, source, writer, optimized)
