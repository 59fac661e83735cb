"""The CUDA renderer: a program's kernel plan becomes ``@cuda.jit`` kernels on device arrays.

Fusion is the same as the CPU's (``fusion.py``): the same materialized values, the same scalar
expressions with inlined producers (``KernelWriter.expr``), the same dims read at run time;
the plan adds row groups. What changes is the spelling and the loop. On the CPU a
materialized value is a ``prange`` loop inside one big function; here it is one kernel
whose threads walk the flattened result with a grid-stride loop (thread ``t`` of ``T``
handles elements ``t, t + T, t + 2T, ...``), so any grid size
covers any array, and a small grid keeps Numba's CUDA simulator fast. A host function,
also generated, allocates the results on the device and launches the kernels in program
order; the results stay there (``GpuArray``), so jitted calls chain without copies.

- A reduction is a kernel with its elementwise producers inlined: one block per result,
  whose threads each combine a share of the reduced elements, then combine their partial
  results in shared memory (``_emit_reduction``). A full reduction has one partial result
  per block, and a second kernel combines those.
- A run of reductions over the same rows and the values computed from them is one kernel,
  a block per row (``_emit_row_group``): softmax and layer norm read each row once from
  memory and write only their result.
- A float matrix product is a tiled kernel with register blocking (``cuda_matmul.py``).
- The shared loop rules (gather, scatter, argmax, pad, concatenate, contractions:
  ``loop_rules.py``) describe loop nests; here a nest becomes a kernel (``_emit_nest``).
  The Threefry hash is written out in the kernel; bitcasts and ``erf_inv`` are statement
  rules (``CUDA_STATEMENTS``).
- ``cond``, ``while`` and ``scan`` stay control flow in the host function: a Python loop or
  if/elif chain (``KernelWriter._emit_scan`` and the others) that calls a host function
  written for each body or branch, which launches that body's fused kernels.

Indices are 64-bit (``np.int64``), so arrays past 2**31 elements work; constants carry the
program's dtype, as on the CPU, so a float32 program does no float64 math. Kernels call no
device functions (compiling one needs a GPU's driver, which would stop the PTX check from
running without one): every rule is inline code. Only ``sort`` has no rule: a program with
it runs on the host, its arrays copied there and back. In JAX the GPU path is XLA's
(jax/_src/interpreters/pxla.py down to XLA's GPU emitters), not Python source.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from stage1_autodiff.core import Primitive
from stage1_autodiff.special import ERFINV_CENTRAL, ERFINV_TAIL

from stage1_autodiff import prims as p

from .coverage import CUDA_MISSING
from .cuda_matmul import emit_matmul, tiled_matmul_layout
from .fusion import Step, is_reduction, kept_dims, row_index
from .jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var
from .kernel_cache import load_kernel_module
from .kernel_writer import (
    Kernel,
    KernelWriter,
    Rule,
    cast,
    common_rules,
    function,
    has_rule,
    loop_index,
    negative_power,
    np_type,
    typed_constant,
)
from .kernel_writer import indent as _indent
from .loop_rules import LOOP_RULES as SHARED_LOOP_RULES
from .loop_rules import emit_contraction
from .passes import UnsupportedError, prepare_program

# --8<-- [start:launch_config]
THREADS_PER_BLOCK = 256
MAX_BLOCKS = 1024  # enough to fill a GPU; the grid-stride loop covers the rest
# A reduction's rows each take a block, up to 65,535 of them (blocks then take several). On
# an H200, the row sums of an (8192, 4096) array took 147 to 186 µs with 1024 blocks, at most
# 109 µs with one per row: a row's threads wait on their tree, so more blocks keep SMs busy.
MAX_ROW_BLOCKS = 65535
# A row loop's elements a trip (``_over_row``), their loads in flight together. Measured on
# an H200 (8192 x 4096 float32): the row sum's kernel 71-91 µs with 1, 48 µs with 4 or 8;
# the softmax's 211 µs with 1, 174-181 µs with 4, 174 with 8.
ROW_LOADS_IN_FLIGHT = 4
SIMULATOR_THREADS, SIMULATOR_BLOCKS = 8, 2  # the simulator runs one OS thread per CUDA thread


def launch_config(n: int) -> tuple[int, int]:
    """(blocks, threads per block) for ``n`` elements: a grid-stride loop does the rest."""
    from numba import config
    if config.ENABLE_CUDASIM:
        return SIMULATOR_BLOCKS, SIMULATOR_THREADS
    blocks = (max(n, 1) + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK
    return min(blocks, MAX_BLOCKS), THREADS_PER_BLOCK


def reduction_config(rows: int) -> tuple[int, int]:
    """(blocks, threads per block) for a reduction to ``rows`` results: a block per result,
    up to ``MAX_ROW_BLOCKS`` (then blocks take several). Threads per block are a power of two."""
    from numba import config
    if config.ENABLE_CUDASIM:
        return min(max(rows, 1), SIMULATOR_BLOCKS), SIMULATOR_THREADS
    return min(max(rows, 1), MAX_ROW_BLOCKS), THREADS_PER_BLOCK
# --8<-- [end:launch_config]


# ------------------------------------------------------------------------------------------
# Elementwise rules that differ on CUDA
# ------------------------------------------------------------------------------------------

# NB: kernel_math's intrinsics (exp_f32, maximum, div_toward_zero...) are CPU-only: LLVM
# intrinsics for Numba's CPU target, and the simulator runs kernels as plain Python. Here the
# C math library's functions take their place (libdevice has float32 versions: math.exp on a
# float32 is __nv_expf), and everything else is written inline with conditional expressions,
# which the compiler turns into selects: a kernel calls no device function of ours.


def _math(name: str, numpy_name: str = "") -> Rule:
    """``math.<name>`` cast back to the result's dtype: a no-op when compiled (libdevice's
    float32 version is chosen), a rounding step in the simulator (which computes in float64).
    An integer operand (``pow``) takes NumPy's function."""
    def rule(args: list[str], eqn: JaxprEqn) -> str:
        dtype = eqn.outvars[0].aval.dtype
        if dtype.kind != "f":
            return function(f"np.{numpy_name or name}")(args, eqn)
        return f"{np_type(dtype)}(math.{name}({', '.join(args)}))"
    return rule


def _logistic(args: list[str], eqn: JaxprEqn) -> str:
    dtype = eqn.outvars[0].aval.dtype
    one = typed_constant(1, dtype)
    return f"({one} / ({one} + {np_type(dtype)}(math.exp(-{args[0]}))))"


def _sign(args: list[str], eqn: JaxprEqn) -> str:
    # --8<-- [start:task2_6]
    dtype, x = eqn.outvars[0].aval.dtype, args[0]
    one, zero = typed_constant(1, dtype), typed_constant(0, dtype)
    if dtype.kind == "u":
        return f"({one} if {x} > {zero} else {zero})"
    return f"({one} if {x} > {zero} else (-{one} if {x} < {zero} else {x}))"  # 0, -0.0, NaN
    # --8<-- [end:task2_6]


def _rounding(name: str) -> Callable[[list[str], JaxprEqn], str]:
    """floor and ceil. ``math.floor`` of a float gives an integer in CUDA Python, so only a
    float with a fraction goes through it: a larger one (2**23 and up in float32) is whole
    already, and NaN and inf stay as they are. ``copysign`` keeps eager's -0.0 (ceil(-0.5))."""
    def rule(args: list[str], eqn: JaxprEqn) -> str:
        dtype, x = eqn.outvars[0].aval.dtype, args[0]
        whole = typed_constant(2.0 ** (np.finfo(dtype).nmant), dtype)
        rounded = f"{np_type(dtype)}(math.copysign({np_type(dtype)}(math.{name}({x})), {x}))"
        return f"({rounded} if abs({x}) < {whole} else {x})"
    return rule


# --8<-- [start:select]
def select(condition: str, a: str, b: str) -> str:
    """``a`` where ``condition``, else ``b``: a conditional expression, which the compiler
    turns into a select (both sides are plain expressions, computed either way)."""
    return f"({a} if {condition} else {b})"


def extremum(comparison: str, a: str, b: str, dtype: np.dtype) -> str:
    """``max`` (``">"``) or ``min`` of ``a`` and ``b``, as eager's (and XLA's): for floats,
    a NaN operand gives NaN (``a != a`` is NaN's test), and +0 is above -0."""
    # --8<-- [start:task2_6]
    if dtype.kind != "f":
        return select(f"{a} {comparison} {b}", a, b)
    # of two equal operands (zeros of both signs), the one whose sign the comparison prefers
    one = typed_constant(1, dtype)  # (a float64 1.0 would make the comparison float64)
    tie = f"{a} == {b} and math.copysign({one}, {a}) {comparison} math.copysign({one}, {b})"
    return select(f"{a} {comparison} {b} or {a} != {a} or ({tie})", a, b)
    # --8<-- [end:task2_6]
# --8<-- [end:select]


def _quotient_toward_zero(x: str, y: str, dtype: np.dtype) -> str:
    """x // y rounds toward minus infinity: one step back up when inexact with mixed signs.
    Only for y other than 0 and -1 (callers test those first)."""
    one, zero = typed_constant(1, dtype), typed_constant(0, dtype)
    if dtype.kind == "u":
        return f"({x} // {y})"
    inexact = f"{x} % {y} != {zero} and ({x} < {zero}) != ({y} < {zero})"
    return f"({x} // {y} + ({one} if {inexact} else {zero}))"


def _div(args: list[str], eqn: JaxprEqn) -> str:
    """Integers: C's (and XLA's) division, toward zero; all ones where y == 0 and -x where
    y == -1, as eager gives. The conditional tests y before any division is done."""
    dtype, (x, y) = eqn.outvars[0].aval.dtype, args
    if dtype.kind not in "iu":
        return f"({x} / {y})"
    zero, all_ones = typed_constant(0, dtype), typed_constant(~np.array(0, dtype), dtype)
    quotient = _quotient_toward_zero(x, y, dtype)
    if dtype.kind == "i":
        quotient = f"(-{x} if {y} == {all_ones} else {quotient})"
    return f"({all_ones} if {y} == {zero} else {quotient})"


def _rem(args: list[str], eqn: JaxprEqn) -> str:
    """Integers: the remainder with x's sign (``np.fmod``); x where y == 0, 0 where y == -1.
    Floats: C's ``fmod``, NaN where y == 0 or x is infinite, which the conditional decides
    before calling ``math.fmod`` (Python's, which the simulator runs, raises there)."""
    dtype, (x, y) = eqn.outvars[0].aval.dtype, args
    zero = typed_constant(0, dtype)
    if dtype.kind not in "iu":
        inf, nan = typed_constant(np.inf, dtype), typed_constant(np.nan, dtype)
        return f"({_math('fmod')(args, eqn)} if {y} != {zero} and abs({x}) != {inf} else {nan})"
    remainder = f"({x} - {y} * {_quotient_toward_zero(x, y, dtype)})"
    if dtype.kind == "i":
        remainder = f"({zero} if {y} == {typed_constant(-1, dtype)} else {remainder})"
    return f"({x} if {y} == {zero} else {remainder})"


def _convert(args: list[str], eqn: JaxprEqn) -> str:
    """XLA's conversion, as kernel_math's ``float_to_int`` on the CPU: a float becomes an
    integer rounded toward zero, NaN gives 0, and a value past the integer's range (inf too)
    the nearest end of it. The conditional tests x before the cast, which is done only for
    values in range (LLVM's cast is undefined for the others)."""
    source, target = eqn.invars[0].aval.dtype, eqn.params["new_dtype"]
    if source.kind != "f" or target.kind not in "iu":
        return cast(args[0], target)
    x, info = args[0], np.iinfo(target)
    low = typed_constant(info.min, source)  # 0 or -2**(bits-1): exact in every float type
    past_high = typed_constant(2.0 ** (info.bits - (info.min < 0)), source)  # a power of 2
    in_range = f"({np_type(target)}({x}) if {x} == {x} else {typed_constant(0, target)})"
    return (f"({typed_constant(info.max, target)} if {x} >= {past_high} else "
            f"({typed_constant(info.min, target)} if {x} <= {low} else {in_range}))")


def _shift(direction: str) -> Callable[[list[str], JaxprEqn], str]:
    """Shifts of the bit pattern, as XLA's: the logical shift works on an unsigned view, the
    arithmetic one on a signed view, whatever x's type. An amount outside [0, bits) (a
    negative one too) gives 0, or only copies of the sign bit for the arithmetic shift."""
    def rule(args: list[str], eqn: JaxprEqn) -> str:
        dtype, (x, y) = eqn.outvars[0].aval.dtype, args
        bits = 8 * dtype.itemsize
        in_range = f"{typed_constant(0, dtype)} <= {y} < {typed_constant(bits, dtype)}"
        if direction == "left":
            return f"({x} << {y} if {in_range} else {typed_constant(0, dtype)})"
        if direction == "right_logical":
            unsigned = np.dtype(f"uint{bits}")
            view, zero = np_type(unsigned), typed_constant(0, unsigned)
            return f"({view}({x}) >> {view}({y}) if {in_range} else {zero})"
        signed = np_type(np.dtype(f"int{bits}"))
        return f"({signed}({x}) >> {signed}({y} if {in_range} else {bits - 1}))"
    return rule


# --8<-- [start:cuda_elementwise]
CUDA_ELEMENTWISE: dict[Primitive, Rule] = {
    **common_rules(select, extremum),  # operators, comparisons, select_n, max, min...
    p.exp_p: _math("exp"),
    p.log_p: _math("log"),
    p.log1p_p: _math("log1p"),
    p.expm1_p: _math("expm1"),
    p.sin_p: _math("sin"),
    p.cos_p: _math("cos"),
    p.tan_p: _math("tan"),
    p.tanh_p: _math("tanh"),
    **{prim: _math(name) for prim, name in [
        (p.sinh_p, "sinh"), (p.cosh_p, "cosh"), (p.asin_p, "asin"), (p.acos_p, "acos"),
        (p.atan_p, "atan"), (p.asinh_p, "asinh"), (p.acosh_p, "acosh"), (p.atanh_p, "atanh")]},
    p.exp2_p: lambda args, eqn: _math("pow")(
        [typed_constant(2, eqn.outvars[0].aval.dtype), *args], eqn),
    p.sqrt_p: _math("sqrt"),
    p.atan2_p: _math("atan2", "arctan2"),
    p.floor_p: _rounding("floor"),
    p.ceil_p: _rounding("ceil"),
    p.div_p: _div,
    p.rem_p: _rem,
    p.convert_element_type_p: _convert,
    p.shift_left_p: _shift("left"),
    p.shift_right_logical_p: _shift("right_logical"),
    p.shift_right_arithmetic_p: _shift("right_arithmetic"),
    p.abs_p: lambda args, eqn: f"abs({args[0]})",
    p.logistic_p: _logistic,
    p.sign_p: _sign,
    **{prim: _math(name) for prim, name in [
        (p.erf_p, "erf"), (p.erfc_p, "erfc"), (p.lgamma_p, "lgamma")]},
    p.rsqrt_p: lambda args, eqn: (
        f"({typed_constant(1, eqn.outvars[0].aval.dtype)} / {_math('sqrt')(args, eqn)})"),
}
# --8<-- [end:cuda_elementwise]

# Rules whose expression uses an operand more than once.
REPEATED_OPERANDS = {p.sign_p, p.floor_p, p.ceil_p, p.div_p, p.rem_p, p.max_p, p.min_p,
                     p.shift_left_p, p.shift_right_logical_p, p.shift_right_arithmetic_p,
                     p.convert_element_type_p, p.clamp_p}

# --8<-- [start:cuda_statements]
# Rules written as statements (temporaries, both branches computed, then selected): each
# appends lines to ``body`` and returns the name of its result.


def _bitcast(writer: CudaWriter, args: list[str], eqn: JaxprEqn, body: list[str]) -> str:
    """The same bits read as another type of the same width, by integer arithmetic (CUDA
    Python has no reinterpreting cast that compiles without a GPU): an integer's fields give
    a float through ``ldexp``, a float's ``frexp`` gives the fields. NB: every NaN becomes
    the canonical quiet NaN."""
    source, target = eqn.invars[0].aval.dtype, np.dtype(eqn.params["new_dtype"])
    x, out = args[0], writer._temporary()
    if source == target:
        return x
    if source.kind in "iub" and target.kind in "iub":  # a signed or unsigned view
        body.append(f"{out} = {np_type(target)}({x})")
        return out
    info = np.finfo(target if target.kind == "f" else source)
    mant, bias, bits = info.nmant, -info.minexp + 1, 8 * source.itemsize
    top = 2 * bias + 1  # the exponent field of inf and NaN
    real = np_type(info.dtype)
    if target.kind == "f":  # integer fields -> float
        word = typed_constant
        e, m, sign = writer._temporary(), writer._temporary(), writer._temporary()
        body += [f"{e} = np.int32(({x} >> {word(mant, source)}) & {word(top, source)})",
                 f"{m} = {x} & {word(2 ** mant - 1, source)}",
                 f"{sign} = ({x} >> {word(bits - 1, source)}) & {word(1, source)}",
                 f"if {e} == {top}:  # inf or NaN",
                 f"    {out} = {real}(np.inf) if {m} == 0 else {real}(np.nan)",
                 f"elif {e} == 0:  # zero or subnormal",
                 f"    {out} = {real}(math.ldexp({real}({m}), {1 - bias - mant}))",
                 "else:",
                 f"    {out} = {real}(math.ldexp({real}({m} + {word(2 ** mant, source)}), "
                 f"int({e} - np.int32({bias + mant}))))",
                 f"{out} = -{out} if {sign} != 0 else {out}"]
        return out
    # float -> integer fields, assembled in uint64
    fraction, e, biased, field = (writer._temporary() for _ in range(4))
    u64 = "np.uint64"
    body += [f"{fraction}, {e} = math.frexp(abs({x}))",
             f"{biased} = np.int64({e}) + {bias - 1}",
             f"if {x} != {x}:  # NaN: the canonical quiet NaN",
             f"    {field} = {u64}({top << mant | 1 << (mant - 1)})",
             f"elif abs({x}) == {real}(np.inf):",
             f"    {field} = {u64}({top << mant})",
             f"elif {x} == {real}(0):",
             f"    {field} = {u64}(0)",
             f"elif {biased} >= 1:",
             f"    {field} = ({u64}({biased}) << {u64}({mant})) | ({u64}(math.ldexp({fraction}, "
             f"{mant + 1})) - {u64}({2 ** mant}))",
             "else:  # subnormal",
             f"    {field} = {u64}(math.ldexp(abs({x}), {bias - 1 + mant}))",
             f"if math.copysign({real}(1), {x}) < {real}(0):",
             f"    {field} = {field} | ({u64}(1) << {u64}({bits - 1}))",
             f"{out} = {np_type(target)}({field})"]
    return out


def _erf_inv(writer: CudaWriter, args: list[str], eqn: JaxprEqn, body: list[str]) -> str:
    """erfinv as eager's: Giles' two polynomials in w = -log(1 - x**2) (the central one for
    w < 5), both evaluated, one chosen; float64 adds two Newton steps on erf(z) = x."""
    dtype, x = eqn.outvars[0].aval.dtype, args[0]
    real = np_type(dtype)
    w, central, tail, out = (writer._temporary() for _ in range(4))
    body += [f"{w} = -{real}(math.log1p(-{x} * {x})) if abs({x}) < {real}(1) else {real}(np.inf)",
             f"{central} = {typed_constant(ERFINV_CENTRAL[0], dtype)}",
             f"{tail} = {typed_constant(ERFINV_TAIL[0], dtype)}"]
    for c, t in zip(ERFINV_CENTRAL[1:], ERFINV_TAIL[1:]):
        body += [f"{central} = {typed_constant(c, dtype)} + {central} * ({w} - {real}(2.5))",
                 f"{tail} = {typed_constant(t, dtype)} + {tail} * "
                 f"({real}(math.sqrt({w})) - {real}(3.0))"]
    body.append(f"{out} = ({central} if {w} < {real}(5.0) else {tail}) * {x}")
    if dtype == np.float64:
        body += ["for _ in range(2):",
                 f"    {out} = {out} - (math.erf({out}) - {x}) / "
                 f"({2 / np.sqrt(np.pi)!r} * math.exp(-{out} * {out}))"]
    body += [f"if abs({x}) >= {real}(1):  # +-1 gives +-inf, beyond it NaN",
             f"    {out} = {x} * {real}(np.inf) if abs({x}) == {real}(1) else {real}(np.nan)"]
    return out


def _pow(writer: CudaWriter, args: list[str], eqn: JaxprEqn, body: list[str]) -> str:
    """``math.pow`` for floats; an integer power by squaring, wrapping around as eager's
    does (numba-cuda's ``np.power`` takes floats only), with eager's negative powers."""
    dtype, (x, y) = eqn.outvars[0].aval.dtype, args
    if dtype.kind == "f":
        return _math("pow")(args, eqn)
    kind = np_type(dtype)
    base, exponent, out = (writer._temporary() for _ in range(3))
    body += [f"{out} = {typed_constant(1, dtype)}", f"{base} = {x}", f"{exponent} = {y}",
             f"while {exponent} > 0:",
             f"    if {exponent} & 1:",
             f"        {out} = {kind}({out} * {base})",
             f"    {base} = {kind}({base} * {base})",
             f"    {exponent} = {exponent} >> 1"]
    if dtype.kind == "i":
        body += [f"if {y} < 0:", f"    {out} = {negative_power(x, y, dtype)}"]
    return out


CUDA_STATEMENTS = {p.bitcast_convert_type_p: _bitcast, p.erf_inv_p: _erf_inv, p.pow_p: _pow}
# --8<-- [end:cuda_statements]


def _threefry_lines(k0: str, k1: str, a: str, b: str) -> list[str]:
    """Straight-line Threefry-2x32 of words (a, b) under key (k0, k1), into ``a`` and ``b``.
    Numba widens uint32 arithmetic, so every step is wrapped back to uint32."""
    u = "np.uint32"
    lines = [f"k2 = {u}({k0} ^ {k1} ^ {u}(0x1BD11BDA))",
             f"a = {u}({a} + {k0})", f"b = {u}({b} + {k1})"]
    keys = [k0, k1, "k2"]
    rotations = [(13, 15, 26, 6), (17, 29, 16, 24)]
    for group in range(1, 6):
        for r in rotations[(group - 1) % 2]:
            lines += ["a = np.uint32(a + b)",
                      f"b = {u}({u}(({u}(b) << {u}({r})) | (b >> {u}({32 - r}))) ^ a)"]
        lines += [f"a = {u}(a + {keys[group % 3]})",
                  f"b = {u}(b + {keys[(group + 1) % 3]} + {u}({group}))"]
    return lines


# ------------------------------------------------------------------------------------------
# The program writer
# ------------------------------------------------------------------------------------------


@dataclass
class _Row:
    """What the lines of a row group are written from."""
    index: tuple[str, ...]  # one name per operand dim
    kept: int  # the rows' dims (leading); the others are reduced
    reduced: list[str]  # the reduced dims' sizes, in dims
    used_outside: set[Var]  # values stored for other steps (or outputs)
    row_values: set[Var]  # values of the operand's shape
    shared: dict[str, str] = field(default_factory=dict)  # dtype name -> its shared array


@dataclass
class _Reduction:
    """What the kernels of one reduction are written from."""
    out: Var
    operand: Var
    index: tuple[str, ...]  # one name per operand dim
    axes: tuple[int, ...]  # the reduced dims
    kept: list[int]  # the others
    init: str
    combine: str  # combine(acc, x) with {acc} and {x} to fill in
    body: list[str]  # the lines before the combine (the operand's loads and arithmetic)
    value: str  # the operand's value at ``index``, after ``body``


class CudaWriter(KernelWriter):
    """Writes kernels (one per step of the plan) and the host function that runs them."""

    ELEMENTWISE = CUDA_ELEMENTWISE
    STATEMENTS = CUDA_STATEMENTS
    NAMED_OPERANDS = REPEATED_OPERANDS
    ROW_GROUPS = True  # softmax and layer norm: one kernel, a block per row
    FLAT_LOOPS = True
    extremum = staticmethod(extremum)

    def __init__(self, jaxpr: Jaxpr, kernels: list[Kernel] | None = None,
                 functions: list[str] | None = None) -> None:
        super().__init__(jaxpr, functions)
        # One list of kernels (and of host functions) for the whole module: a loop body's
        # writer adds its kernels to its caller's, so every name is unique.
        self.kernels: list[Kernel] = kernels if kernels is not None else []
        self.host: list[str] = []  # the host function's body: allocations and launches
        self.row_scalars: dict[Var, str] = {}  # inside a row group: each row's scalars

    def write(self) -> str:
        host = self.host_function("program")
        kernels = [line for k in self.kernels for line in ["", *k.lines, ""]]
        return "\n".join([*_prelude(), *kernels, *self.functions, "", *host, ""])

    def host_function(self, name: str) -> list[str]:
        """The lines of the host function ``name(dims_host, dims, *inputs)``, which
        allocates the results and launches the kernels (added to ``self.kernels``)."""
        for eqn in self.jaxpr.eqns:
            if eqn.primitive in CUDA_MISSING:
                raise UnsupportedError(str(eqn.primitive))
        self._emit_steps()
        outs = [self._output(a) for a in self.jaxpr.outvars]
        header = [f"d{i} = dims_host[{i}]" for i in range(len(self.dims))]
        args = ", ".join(["dims_host", "dims", *[self.names[v] for v in self.jaxpr.invars]])
        return [self._signature(name), f"def {name}({args}):",
                *_indent(header + self.host
                         + [f"return ({', '.join(outs)}{',' if len(outs) == 1 else ''})"]),
                ""]

    def _output(self, atom: Any) -> str:
        return self._operand(atom) if not isinstance(atom, Var) else self.names[atom]

    def _statements(self, lines: list[str]) -> None:
        self.host += lines

    # --8<-- [start:cuda_emit]
    # The shared loop rules (gather, scatter, argmax, pad, concatenate, contraction)
    # describe their work as loop nests with ``_allocate`` and ``_emit_nest``: here a nest
    # becomes a kernel whose threads take the nest's iterations, and an allocation a device
    # array allocated by the host function.

    def _allocate(self, var: Var, shape: list[str]) -> str:
        return (f"{self._name_of(var)} = device_array(({', '.join(shape) or '1'},), "
                f"dtype={np_type(var.aval.dtype)})")

    def _emit_nest(self, setup: list[str], shape: list[str], index: tuple[str, ...],
                   comment: str, body: list[str], produces: set[Var],
                   writes: set[Var], after: list[str] = (), serial: bool = False) -> None:
        """A grid-stride kernel over the iterations of a loop nest: iteration ``f`` of
        ``prod(shape)`` is unravelled into ``index``. ``serial``: one thread does them all, in
        order (a scatter's updates, whose repeated indices must combine in order)."""
        del writes, after
        self.host += setup
        params, arrays = self._params(produces)
        kernel = f"kernel{len(self.kernels)}_{self.names[sorted(produces, key=str)[0]]}"
        size = " * ".join(shape) or "1"
        loop = _unravel("f", index, shape) if shape else []
        lines = ["@cuda.jit(cache=True)", f"def {kernel}({', '.join(['dims', *params])}):",
                 *_indent([comment, *(f"d{i} = dims[{i}]" for i in range(len(self.dims))),
                           f"n = np.int64({size})",
                           "for f in range(np.int64(cuda.grid(1)), n, "
                           "np.int64(cuda.gridsize(1))):", *_indent(loop + body)])]
        self.kernels.append(Kernel(kernel, params, arrays, lines, size))
        launch = "1, 1" if serial else "blocks, threads"
        if not serial:
            self.host.append(f"blocks, threads = launch_config({size})")
        self.host.append(f"{kernel}[{launch}]({', '.join(['dims', *params])})")

    def _params(self, written: set[Var], flat: bool = False) -> tuple[list[str], list[tuple]]:
        """The arrays a kernel reads (first-read order, flat views as ``x_flat``), then
        those it writes, each once; and each one's (dtype, ndim) as the kernel sees it, a
        signature for ``compile_ptx``."""
        params: list[str] = []
        arrays: list[tuple[np.dtype, int]] = []
        for var, is_flat in [*((v, self.names[v] in self.flat_views) for v, _ in self.reads),
                             *((v, flat) for v in sorted(written, key=str))]:
            param = f"{self.names[var]}_flat" if is_flat else self.names[var]
            if param not in params:
                params.append(param)
                arrays.append((var.aval.dtype, 1 if is_flat else max(var.aval.ndim, 1)))
        return params, arrays

    # --8<-- [start:cuda_threefry]
    def _emit_threefry(self, eqn: JaxprEqn, comment: str) -> None:
        """The Threefry-2x32 hash, written out in the kernel: 20 rounds of add, rotate and
        xor on uint32 words, the key injected every four rounds."""
        first = eqn.outvars[0]
        shape, index = self._shape(first), loop_index(first.aval.ndim)
        body: list[str] = []
        memo: dict[tuple, str] = {}
        k0, k1, a, b = (self._named(self.expr(x, index, body, memo), body) for x in eqn.invars)
        body += _threefry_lines(k0, k1, a, b)
        body += [f"{self._at(out, index)} = {word}" for out, word in zip(eqn.outvars, "ab")]
        setup = [self._allocate(out, shape) for out in eqn.outvars]
        self._emit_nest(setup, shape, index, comment, body, set(eqn.outvars), set(eqn.outvars))
    # --8<-- [end:cuda_threefry]

    def _emit_dot(self, eqn: JaxprEqn, comment: str) -> None:
        """A float matrix product is a tiled kernel; any other dot_general the shared
        contraction's loop nest, as a kernel."""
        if tiled_matmul_layout(eqn) is None:
            emit_contraction(self, eqn, comment)
        else:
            emit_matmul(self, eqn, comment)

    def _emit_reshape(self, eqn: JaxprEqn, comment: str) -> None:
        shape = self._shape(eqn.outvars[0]) or ["1"]
        self.host += [comment, f"{self._name_of(eqn.outvars[0])} = "
                               f"{self._array(eqn.invars[0])}.reshape(({', '.join(shape)},))"]
    # --8<-- [end:cuda_emit]


    # --8<-- [start:row_group]
    def _emit_row_group(self, step: Step) -> None:
        """One kernel for a run of reductions over the same rows and the values computed
        from them (a step fusion planned, ``fusion._row_step``): a block per row, whose
        threads compute each reduction in turn (a tree in shared memory, the result then a
        scalar every thread holds) and write each row value. A value used only inside the
        group is never stored: it is recomputed where it is used, from the row's scalars. So
        softmax reads each row from memory once (later passes find it in cache) and writes it
        once, instead of four kernels and six passes."""
        group, first = step.eqns, step.eqns[0]
        shape, kept = first.invars[0].aval.shape, len(kept_dims(first))
        rows = [self.dim(first.invars[0], k) for k in range(kept)]
        row = _Row(loop_index(len(shape)), kept,
                   [self.dim(first.invars[0], k) for k in range(kept, len(shape))],
                   used_outside=step.stored, row_values=step.row_values)
        self.materialized -= row.row_values  # inside the group they are recomputed
        self.row_scalars = {}
        # the row's indices, without its dims of size 1 (a row scalar's 0 there)
        self.row_names = tuple(row.index[k] for k in range(kept) if shape[k] != 1)
        self.reads = []
        steps = [line for eqn in group for line in self._row_member(eqn, row)]
        self.row_scalars = {}
        self.materialized |= row.used_outside
        params, arrays = self._params(row.used_outside)
        kernel = f"kernel{len(self.kernels)}_{self.names[first.outvars[0]]}"
        size = " * ".join(rows)
        lines = ["@cuda.jit(cache=True)", f"def {kernel}({', '.join(['dims', *params])}):",
                 *_indent([f"# one block per row: {len(group)} equations",
                           *(f"d{i} = dims[{i}]" for i in range(len(self.dims))),
                           f"n = np.int64({size})",
                           f"m = np.int64({' * '.join(row.reduced)})  # elements per row",
                           *(f"{array} = cuda.shared.array({THREADS_PER_BLOCK}, {dtype})"
                             for dtype, array in row.shared.items()),
                           "tid = cuda.threadIdx.x",
                           "for o in range(np.int64(cuda.blockIdx.x), n, "
                           "np.int64(cuda.gridDim.x)):",
                           *_indent([*_unravel("o", row.index[:kept], rows), *steps])])]
        self.kernels.append(Kernel(kernel, params, arrays, lines, size))
        for var in sorted(row.used_outside, key=str):
            self.host.append(self._allocate(var, self._shape(var)))
        self.host += [f"blocks, threads = reduction_config({size})",
                      f"{kernel}[blocks, threads]({', '.join(['dims', *params])})"]

    def _row_member(self, eqn: JaxprEqn, row: _Row) -> list[str]:
        """The lines of one equation of a row group, inside the loop over rows."""
        out, body = eqn.outvars[0], []
        name, comment = self._name_of(out), f"# {self.eqn_text(eqn)}"
        over_row = ["for r in range(np.int64(tid), m, np.int64(cuda.blockDim.x)):",
                    *_indent(_unravel("r", row.index[row.kept:], row.reduced))]
        if is_reduction(eqn.primitive):
            dtype = out.aval.dtype
            array = row.shared.setdefault(np_type(dtype), f"shared{len(row.shared)}")
            combine = self.reduction_combine(eqn.primitive, dtype)
            value = self._named(self.expr(eqn.invars[0], row.index, body, {}), body)
            lines = [comment, f"acc = {typed_constant(eqn.primitive.identity(dtype), dtype)}",
                     *_over_row(row.index[row.kept:], row.reduced, body, value, combine),
                     *_tree(combine, array), f"{name}_row = {array}[0]",
                     "cuda.syncthreads()  # all have read it before the array is reused"]
        elif out in row.row_values:
            if out not in row.used_outside:
                return []  # recomputed where it is used
            value = self._fused(eqn, row.index, body, {})
            return [comment, *over_row,
                    *_indent([*body, f"{name}[{', '.join(row.index)}] = {value}"])]
        else:  # a scalar per row, every thread computing it
            value = self._fused(eqn, row_index(out.aval.shape, self.row_names), body, {})
            lines = [comment, *body, f"{name}_row = {value}"]
        self.row_scalars[out] = f"{name}_row"
        if out in row.used_outside:
            target = row_index(out.aval.shape, self.row_names)
            lines += ["if tid == 0:", f"    {name}[{', '.join(target) or '0'}] = {name}_row"]
        return lines

    def _read(self, var: Var, index: tuple[str, ...]) -> str:
        if var in self.row_scalars:  # inside a row group: this row's (fusion checked it)
            return self.row_scalars[var]
        return super()._read(var, index)
    # --8<-- [end:row_group]

    # --8<-- [start:emit_kernel]
    def _emit_loop(self, out: Var, comment: str) -> None:
        """A grid-stride kernel over ``out``'s elements, from materialized values (over the
        flattened arrays, when the plan says it reads them all in step)."""
        name = self._name_of(out)
        shape = self._shape(out)
        size = " * ".join(shape) or "1"
        self.flat = self.step.how == "flat loop"
        body: list[str] = []
        if out.aval.ndim == 0:
            index = ()
        elif self.flat or out.aval.ndim == 1:
            index = ("i",)
        else:
            index = tuple(f"i{k}" for k in range(out.aval.ndim))
            body += _unravel("i", index, shape)
        value = self._fused(self.producer[out], index, body, {})
        target = f"{name}_flat[i]" if self.flat else f"{name}[{', '.join(index) or '0'}]"
        body.append(f"{target} = {value}")
        flat, self.flat = self.flat, False
        params, arrays = self._params({out}, flat)
        kernel = f"kernel{len(self.kernels)}_{name}"
        dims = [f"d{i} = dims[{i}]" for i in range(len(self.dims))]
        lines = ["@cuda.jit(cache=True)", f"def {kernel}({', '.join(['dims', *params])}):",
                 *_indent([comment, *dims, f"n = np.int64({size})",
                           "start = np.int64(cuda.grid(1))",
                           "stride = np.int64(cuda.gridsize(1))",
                           "for i in range(start, n, stride):", *_indent(body)])]
        self.kernels.append(Kernel(kernel, params, arrays, lines, size))
        self._emit_launch(out, shape, kernel, params, size)
    # --8<-- [end:emit_kernel]

    # --8<-- [start:emit_reduction]
    def _emit_reduction(self, eqn: JaxprEqn, comment: str) -> None:
        """One block per output element: its threads stride over the reduced elements, each
        with its own accumulator, then combine them in shared memory. The operand expression
        is inlined, so ``sum(exp(x - m))`` reads ``x`` once."""
        out, operand = eqn.outvars[0], eqn.invars[0]
        dtype = out.aval.dtype
        combine = self.reduction_combine(eqn.primitive, dtype)
        self._name_of(out)
        index = loop_index(operand.aval.ndim)
        body: list[str] = []
        value = self.expr(operand, index, body, {})
        if not value.isidentifier():  # a name for it: combines may use it more than once
            body.append(f"x = {value}")
            value = "x"
        reduction = _Reduction(
            out, operand, index, eqn.params["axes"],
            [k for k in range(operand.aval.ndim) if k not in eqn.params["axes"]],
            typed_constant(eqn.primitive.identity(dtype), dtype), combine,
            body, value)
        if reduction.kept:
            self._emit_row_reduction(reduction, comment)
        else:
            self._emit_full_reduction(reduction, comment)

    def _emit_row_reduction(self, r: _Reduction, comment: str) -> None:
        name, dtype = self.names[r.out], r.out.aval.dtype
        rows = [self.dim(r.operand, k) for k in r.kept]
        reduced = [self.dim(r.operand, k) for k in r.axes]
        kept_index = tuple(r.index[k] for k in r.kept)
        lines = [f"m = np.int64({' * '.join(reduced)})  # reduced elements per output",
                 "for o in range(np.int64(cuda.blockIdx.x), n, np.int64(cuda.gridDim.x)):",
                 *_indent([*_unravel("o", kept_index, rows),
                           f"acc = {r.init}",
                           *_over_row(tuple(r.index[k] for k in r.axes), reduced, r.body,
                                      r.value, r.combine),
                           *_tree(r.combine),
                           "if tid == 0:",
                           f"    {name}[{', '.join(kept_index)}] = shared[0]"])]
        params, arrays = self._reduction_params(name, dtype, len(r.kept))
        size = " * ".join(rows)
        kernel = self._reduction_kernel(name, params, arrays, comment, size, lines)
        self.host += [f"{name} = device_array(({', '.join(rows)},), "
                      f"dtype={np_type(dtype)})",
                      f"blocks, threads = reduction_config({size})",
                      f"{kernel}[blocks, threads]({', '.join(['dims', *params])})"]

    def _emit_full_reduction(self, r: _Reduction, comment: str) -> None:
        """All threads of the grid stride over every element; each block writes one partial
        result, and a second kernel (one block) combines the partials."""
        name, dtype = self.names[r.out], r.out.aval.dtype
        size = " * ".join(self.dim(r.operand, k) for k in r.axes)
        partials = f"{name}_partials"
        lines = [f"acc = {r.init}",
                 "for r in range(np.int64(cuda.grid(1)), n, np.int64(cuda.gridsize(1))):",
                 *_indent(_unravel("r", r.index, self._shape(r.operand))
                          + [*r.body, f"acc = {r.combine.format(acc='acc', x=r.value)}"]),
                 *_tree(r.combine),
                 "if tid == 0:",
                 f"    {partials}[cuda.blockIdx.x] = shared[0]"]
        params, arrays = self._reduction_params(partials, dtype, 1)
        first = self._reduction_kernel(name, params, arrays, comment, size, lines)
        finish = [f"acc = {r.init}",
                  f"for r in range(tid, {partials}.shape[0], cuda.blockDim.x):",
                  f"    x = {partials}[r]",
                  f"    acc = {r.combine.format(acc='acc', x='x')}",
                  *_tree(r.combine),
                  "if tid == 0:",
                  f"    {name}[0] = shared[0]"]
        second = self._reduction_kernel(name, [partials, name], [(dtype, 1)] * 2,
                                        "# the partial results of each block, combined",
                                        None, finish)
        self.host += [f"{name} = device_array((1,), dtype={np_type(dtype)})",
                      f"blocks, threads = launch_config({size})",
                      f"{partials} = device_array((blocks,), dtype={np_type(dtype)})",
                      f"{first}[blocks, threads]({', '.join(['dims', *params])})",
                      f"{second}[1, threads](dims, {partials}, {name})"]

    def _reduction_params(self, target: str, dtype: np.dtype,
                          ndim: int) -> tuple[list[str], list]:
        """The arrays a reduction kernel reads, in first-read order, then its ``target``."""
        params, arrays = self._params(set())
        return [*params, target], [*arrays, (dtype, ndim)]

    def _reduction_kernel(self, name: str, params: list[str], arrays: list, comment: str,
                          size: str | None, lines: list[str]) -> str:
        """A kernel with a shared array of one element per thread; ``n = size`` (elements
        or rows, in dims) unless ``size`` is None (a kernel that reads no dims)."""
        kernel = f"kernel{len(self.kernels)}_{name}"
        header = [] if size is None else [*(f"d{i} = dims[{i}]" for i in range(len(self.dims))),
                                          f"n = np.int64({size})"]
        source = ["@cuda.jit(cache=True)", f"def {kernel}({', '.join(['dims', *params])}):",
                  *_indent([comment, *header,
                            f"shared = cuda.shared.array({THREADS_PER_BLOCK}, "
                            f"{np_type(arrays[-1][0])})",
                            "tid = cuda.threadIdx.x", *lines])]
        self.kernels.append(Kernel(kernel, params, arrays, source, size or "1"))
        return kernel
    # --8<-- [end:emit_reduction]

    def _emit_launch(self, out: Var, shape: list[str], kernel: str, params: list[str],
                     size: str) -> None:
        name = self.names[out]
        self.host.append(f"{name} = device_array(({', '.join(shape or ['1'])},), "
                         f"dtype={np_type(out.aval.dtype)})")
        for param in params:
            if param.endswith("_flat"):
                self.host.append(f"{param} = {param[:-5]}.reshape(-1)")
        self.host.append(f"blocks, threads = launch_config({size})")
        self.host.append(f"{kernel}[blocks, threads]({', '.join(['dims', *params])})")

    # --8<-- [start:cuda_control_flow]
    # Loops and branches run on the host: the generated host function keeps a Python loop
    # (or if/elif chain, KernelWriter._emit_scan and the others) that calls, each trip, a host
    # function written for the body, whose kernels are fused as any program's. XLA's GPU
    # backend runs a While the same way: the body's kernels are launched from the host, and
    # the predicate is copied back each trip.

    def _nested_writer(self, jaxpr: Jaxpr) -> CudaWriter:
        """A body's writer: its kernels join this module's, and it writes a host function
        that allocates its arrays each trip (see the course page)."""
        return CudaWriter(jaxpr, self.kernels, self.functions)

    def called_function(self, name: str, scratch: bool) -> tuple[str, list]:
        return "\n".join(self.host_function(name)), []

    def _dims_variables(self, base: str, dims: str) -> tuple[list[str], list[str]]:
        """A called function's dims, on the host and on the device, made once before the
        loop: ``{base}`` and ``{base}_dev``."""
        return ([f"{base} = {dims}", f"{base}_dev = to_device(np.array({base}, dtype=np.int64))"],
                [base, f"{base}_dev"])

    def _literal_array(self, constant: str) -> str:
        return f"to_device(np.full(1, {constant}))"

    def _row_of(self, array: str, x: Var, step: str) -> str:
        return f"row({array}, {step})"  # a view, no copy

    def _store_row(self, y: Var, step: str, value: str) -> str:
        return f"row({self.names[y]}, {step}).copy_to_device({value})"

    def _host_value(self, array: str) -> str:
        return f"host_scalar({array})"  # copied from the GPU
    # --8<-- [end:cuda_control_flow]


CudaWriter.LOOP_RULES = {
    **{prim: rule for prim, rule in SHARED_LOOP_RULES.items() if prim not in CUDA_MISSING},
    p.threefry2x32_p: CudaWriter._emit_threefry,
}


def has_cuda_rule(prim: Primitive) -> bool:
    """Whether the CUDA backend writes kernels for ``prim`` (``kernel_writer.has_rule``)."""
    return prim not in CUDA_MISSING and has_rule(CudaWriter, prim)


def _over_row(index: tuple[str, ...], reduced: list[str], body: list[str], value: str,
              combine: str) -> list[str]:
    """Lines that combine a row's elements into ``acc``: thread ``tid`` takes elements
    ``tid``, ``tid + blockDim.x``, and so on, ``ROW_LOADS_IN_FLIGHT`` of them a trip. Each
    element's loads and arithmetic (``body``, then ``value``) are written before the trip's
    combines, so its loads are in flight together; the combines keep the elements' order, so
    the result is the same as one at a time. ``index`` names the reduced dims (``reduced``)."""
    one = [*_unravel("r", index, reduced), *body]
    per_trip = ROW_LOADS_IN_FLIGHT
    assigned = {m.group(1) for line in one if (m := re.match(r"\s*(\w+) = ", line))}
    names = re.compile(r"\b(" + "|".join(sorted({"r", *index, *assigned})) + r")\b")

    def copy(text: str, u: int) -> str:
        return names.sub(lambda m: f"{m.group(1)}_{u}", text)

    trip = [f"r_{u} = r + {u} * row_step" for u in range(per_trip)]
    trip += [copy(line, u) for u in range(per_trip) for line in one]
    trip += [f"acc = {combine.format(acc='acc', x=copy(value, u))}" for u in range(per_trip)]
    return ["row_step = np.int64(cuda.blockDim.x)", "r = np.int64(tid)",
            f"while r + {per_trip - 1} * row_step < m:",
            *_indent([*trip, f"r += {per_trip} * row_step"]),
            "while r < m:",
            *_indent([*one, f"acc = {combine.format(acc='acc', x=value)}", "r += row_step"])]


# --8<-- [start:reduction_tree]
def _tree(combine: str, shared: str = "shared") -> list[str]:
    """Lines that combine each thread's ``acc`` into ``shared[0]``: a tree, halving the
    active threads each step (the block size is a power of two)."""
    return [f"{shared}[tid] = acc  # then {shared}[tid] is always this thread's acc",
            "cuda.syncthreads()",
            "step = cuda.blockDim.x // 2",
            "while step > 0:",
            "    if tid < step:",
            f"        x = {shared}[tid + step]",
            f"        acc = {combine.format(acc='acc', x='x')}",
            f"        {shared}[tid] = acc",
            "    cuda.syncthreads()",
            "    step //= 2"]
# --8<-- [end:reduction_tree]


def _unravel(flat: str, index: tuple[str, ...], shape: list[str]) -> list[str]:
    """Lines that split a flat (row-major) position into one index per dim."""
    if len(index) == 1:
        return [f"{index[0]} = {flat}"]
    lines = [f"rest = {flat}"]
    for k in reversed(range(1, len(index))):
        lines += [f"{index[k]} = rest % {shape[k]}", f"rest = rest // {shape[k]}"]
    return [*lines, f"{index[0]} = rest"]


def _prelude() -> list[str]:
    return ["# Generated by stage2_jit's CUDA backend. Comments show the jaxpr's equations.",
            "import math",
            "import numpy as np",
            "from numba import cuda",
            "from stage2_jit.codegen_cuda import launch_config, reduction_config",
            "from stage2_jit.runtime import device_array, host_scalar, row, to_device"]




def generate_source(closed: ClosedJaxpr) -> tuple[str, CudaWriter, ClosedJaxpr]:
    """The source for ``closed``, optimized as for the CPU (calls inlined, constants folded,
    broadcasts sunk); raises ``UnsupportedError`` for a program this backend cannot write.
    It needs no GPU: the kernels are compiled on their first launch (or by ``kernels_ptx``)."""
    optimized, program = prepare_program(closed)
    writer = CudaWriter(program)
    return writer.write(), writer, optimized


# --8<-- [start:kernels_ptx]
def kernels_ptx(source: str, writer: CudaWriter,
                cc: tuple[int, int] = (9, 0)) -> dict[str, str]:
    """Each kernel of ``source`` compiled to PTX for compute capability ``cc``: no GPU is
    needed, only the CUDA compiler libraries (pip install 'numba-cuda[cu13]'), and not the
    simulator (which compiles nothing)."""
    from numba import cuda, from_dtype, types
    module = load_kernel_module(source)
    ptx = {}
    for kernel in writer.kernels:
        signature = (types.int64[::1], *(types.Array(from_dtype(dtype), ndim, "C")
                                         for dtype, ndim in kernel.arrays))
        function = getattr(module, kernel.name).py_func
        ptx[kernel.name], _ = cuda.compile_ptx(function, signature, cc=cc)
    return ptx
# --8<-- [end:kernels_ptx]
