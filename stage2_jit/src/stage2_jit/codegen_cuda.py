"""The CUDA backend (a first step): fused elementwise groups become ``@cuda.jit`` kernels.

Fusion is the CPU backend's: the same materialized values (``ProgramWriter``), the same
scalar expressions with inlined producers (``expr``), the same dims read at run time. What
changes is the loop. On the CPU a materialized value is a ``prange`` loop inside one big
function; here it is one kernel whose threads walk the flattened result with a grid-stride
loop (thread ``t`` of ``T`` handles elements ``t, t + T, t + 2T, ...``), so any grid size
covers any array, and a small grid keeps Numba's CUDA simulator fast. A host function,
also generated, allocates the results and launches the kernels in program order.

Indices are 64-bit (``np.int64``), so arrays past 2**31 elements work; constants carry the
program's dtype, as on the CPU, so a float32 program does no float64 math.

NB: this prototype covers programs made only of elementwise and index-map primitives;
anything else raises ``UnsupportedError`` and ``compile_cuda`` falls back. Arrays are copied
to the device and back on every call: device-resident arrays are a later step. In JAX the GPU
path is XLA's (jax/_src/interpreters/pxla.py down to XLA's GPU emitters), not Python source.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from stage1_autodiff.core import Array, Primitive

from stage1_autodiff import primitives as p

from .codegen_cpu import (
    ELEMENTWISE,
    REDUCTIONS,
    ProgramWriter,
    UnsupportedError,
    _indent,
    _is_fusible,
    inline_calls,
    np_type,
    sink_broadcasts,
    typed_constant,
)
from .jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var
from .kernel_cache import load_kernel_module
from .passes import dce, optimize

THREADS_PER_BLOCK = 256
MAX_BLOCKS = 1024  # enough to fill a GPU; the grid-stride loop covers the rest
SIMULATOR_THREADS, SIMULATOR_BLOCKS = 8, 2  # the simulator runs one OS thread per CUDA thread


def cuda_unavailable_reason() -> str | None:
    """Why the CUDA backend cannot run here, or None when it can."""
    try:
        from numba import config, cuda
    except ImportError:
        return "numba-cuda is not installed (pip install 'numba-cuda[cu13]')"
    if config.ENABLE_CUDASIM or cuda.is_available():
        return None
    return ("no CUDA GPU was found; to run the CUDA backend without one, set "
            "NUMBA_ENABLE_CUDASIM=1 (Numba's CUDA simulator) before importing numba")


def launch_config(n: int) -> tuple[int, int]:
    """(blocks, threads per block) for ``n`` elements: a grid-stride loop does the rest."""
    from numba import config
    if config.ENABLE_CUDASIM:
        return SIMULATOR_BLOCKS, SIMULATOR_THREADS
    blocks = (max(n, 1) + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK
    return min(blocks, MAX_BLOCKS), THREADS_PER_BLOCK


# ------------------------------------------------------------------------------------------
# Elementwise rules that differ on CUDA
# ------------------------------------------------------------------------------------------

# NB: kernel_math's intrinsics (exp_f32, maximum, div_toward_zero...) are CPU-only: LLVM
# intrinsics for Numba's CPU target, and the simulator runs kernels as plain Python. Here the
# C math library's functions (libdevice has float32 versions: math.exp on a float32 is
# __nv_expf) and small device functions in the generated prelude take their place.


def _math(name: str) -> Callable[[list[str], JaxprEqn], str]:
    """``math.<name>`` cast back to the result's dtype: a no-op when compiled (libdevice's
    float32 version is chosen), a rounding step in the simulator (which computes in float64)."""
    def rule(args: list[str], eqn: JaxprEqn) -> str:
        dtype = eqn.outvars[0].aval.dtype
        if dtype.kind != "f":
            return ELEMENTWISE[eqn.primitive](args, eqn)
        return f"{np_type(dtype)}(math.{name}({', '.join(args)}))"
    return rule


def _logistic(args: list[str], eqn: JaxprEqn) -> str:
    dtype = eqn.outvars[0].aval.dtype
    one = typed_constant(1, dtype)
    return f"({one} / ({one} + {np_type(dtype)}(math.exp(-{args[0]}))))"


def _sign(args: list[str], eqn: JaxprEqn) -> str:
    dtype, x = eqn.outvars[0].aval.dtype, args[0]
    one, zero = typed_constant(1, dtype), typed_constant(0, dtype)
    if dtype.kind == "u":
        return f"select({x} > {zero}, {one}, {zero})"
    return f"select({x} > {zero}, {one}, select({x} < {zero}, -{one}, {x}))"  # NaN stays


CUDA_ELEMENTWISE: dict[Primitive, Callable[[list[str], JaxprEqn], str]] = {
    **ELEMENTWISE,
    p.exp_p: _math("exp"),
    p.log_p: _math("log"),
    p.log1p_p: _math("log1p"),
    p.expm1_p: _math("expm1"),
    p.sin_p: _math("sin"),
    p.cos_p: _math("cos"),
    p.tan_p: _math("tan"),
    p.tanh_p: _math("tanh"),
    p.sqrt_p: _math("sqrt"),
    p.pow_p: _math("pow"),
    p.atan2_p: _math("atan2"),
    p.rem_p: _math("fmod"),  # integers: rem_toward_zero, below
    p.abs_p: lambda args, eqn: f"abs({args[0]})",
    p.logistic_p: _logistic,
    p.sign_p: _sign,
}

# Not yet: their CPU rules call kernel_math intrinsics, or NumPy ufuncs that numba-cuda 0.30
# does not compile (np.floor, np.ceil; math.floor returns an int64).
CUDA_MISSING = {p.bitcast_convert_type_p, p.erf_inv_p, p.shift_left_p,
                p.shift_right_logical_p, p.shift_right_arithmetic_p, p.floor_p, p.ceil_p}

# Device functions the rules call, written so that the simulator (plain Python on NumPy
# scalars) and the compiler (Numba types) give the same results as eager.
_DEVICE_FUNCTIONS = '''
@cuda.jit(device=True)
def select(condition, if_true, if_false):
    return if_true if condition else if_false


@cuda.jit(device=True)
def maximum(a, b):  # NaN in, NaN out, as np.maximum
    return a if (a > b or a != a) else b


@cuda.jit(device=True)
def minimum(a, b):
    return a if (a < b or a != a) else b


@cuda.jit(device=True)
def div_toward_zero(x, y):  # C's integer division; eager's results for y == 0 and y == -1
    if y == 0:
        return ~(x ^ x)  # all ones, in x's type
    if x < 0 and y == -1:
        return -x
    quotient = x // y  # rounds toward minus infinity: step back toward zero if inexact
    if quotient * y != x and (x < 0) != (y < 0):
        quotient += 1
    return quotient


@cuda.jit(device=True)
def rem_toward_zero(x, y):  # the remainder with x's sign (np.fmod); x where y == 0
    if y == 0:
        return x
    if x < 0 and y == -1:
        return x ^ x
    return x - div_toward_zero(x, y) * y
'''


# ------------------------------------------------------------------------------------------
# The program writer
# ------------------------------------------------------------------------------------------


@dataclass
class Kernel:
    """One ``@cuda.jit`` kernel: it computes one materialized value."""
    name: str
    params: list[str]  # after ``dims``: arrays read, then the result (flat views end in _flat)
    arrays: list[tuple[np.dtype, int]]  # each param's (dtype, ndim): a signature for compile_ptx
    lines: list[str]
    size: str  # the number of elements, in dims


class CudaProgramWriter(ProgramWriter):
    """Writes kernels (one per materialized value) and the host function that runs them."""

    def __init__(self, jaxpr: Jaxpr) -> None:
        super().__init__(jaxpr)
        self.kernels: list[Kernel] = []
        self.host: list[str] = []  # the host function's body: allocations and launches

    def write(self) -> str:
        for eqn in self.jaxpr.eqns:
            _check_supported(eqn)
            if eqn.outvars[0] in self.materialized:
                self._emit_kernel(eqn.outvars[0], f"# {self.eqn_text(eqn)}")
        outs = [self._host_output(a) for a in self.jaxpr.outvars]
        header = [f"d{i} = dims_host[{i}]" for i in range(len(self.dims))]
        args = ", ".join(["dims_host", "dims", *[self.names[v] for v in self.jaxpr.invars]])
        host = [f"def program({args}):", *_indent(
            header + self.host + [f"return ({', '.join(outs)}{',' if len(outs) == 1 else ''})"])]
        ins = " ".join(self.comment_names[v] for v in self.jaxpr.invars)
        outs_text = " ".join(self._comment_atom(a) for a in self.jaxpr.outvars)
        kernels = [line for k in self.kernels for line in ["", *k.lines, ""]]
        return "\n".join([*_prelude(), "", f"# inputs: {ins}; outputs: {outs_text}",
                          *kernels, "", *host, ""])

    def _fused(self, eqn: JaxprEqn, index: tuple[str, ...], body: list[str],
               memo: dict[tuple, str]) -> str:
        prim, out = eqn.primitive, eqn.outvars[0]
        if prim not in CUDA_ELEMENTWISE:
            return super()._fused(eqn, index, body, memo)  # index maps: where to read
        args = [self.expr(a, index, body, memo) for a in eqn.invars]
        value = CUDA_ELEMENTWISE[prim](args, eqn)
        if out.aval.dtype.kind in "iu":  # Numba widens int32 + int32 to int64: wrap back
            return f"{np_type(out.aval.dtype)}({value})"
        return value

    # --8<-- [start:emit_kernel]
    def _emit_kernel(self, out: Var, comment: str) -> None:
        """A grid-stride kernel over ``out``'s elements, from materialized values."""
        self.reads = []
        name = self._name_of(out)
        shape = [self.dim(out, k) for k in range(out.aval.ndim)]
        size = " * ".join(shape) or "1"
        self.flat = out.aval.ndim > 1 and self._eqn_reads_in_step(self.producer[out],
                                                                  out.aval.shape)
        self.flat_views = set()
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
        params, arrays = self._kernel_params(out, flat)
        kernel = f"kernel{len(self.kernels)}_{name}"
        dims = [f"d{i} = dims[{i}]" for i in range(len(self.dims))]
        lines = ["@cuda.jit", f"def {kernel}({', '.join(['dims', *params])}):",
                 *_indent([comment, *dims, f"n = np.int64({size})",
                           "start = np.int64(cuda.grid(1))",
                           "stride = np.int64(cuda.gridsize(1))",
                           "for i in range(start, n, stride):", *_indent(body)])]
        self.kernels.append(Kernel(kernel, params, arrays, lines, size))
        self._emit_launch(out, shape, kernel, params, size)
    # --8<-- [end:emit_kernel]

    def _kernel_params(self, out: Var, flat: bool) -> tuple[list[str], list[tuple]]:
        """The arrays the kernel reads (in first-read order, flat views as ``x_flat``),
        then its result; and each one's (dtype, ndim) as the kernel sees it."""
        params: list[str] = []
        arrays: list[tuple[np.dtype, int]] = []
        for var, is_flat in [*((v, self.names[v] in self.flat_views) for v, _ in self.reads),
                             (out, flat)]:
            param = f"{self.names[var]}_flat" if is_flat else self.names[var]
            if param not in params:
                params.append(param)
                arrays.append((var.aval.dtype, 1 if is_flat else max(var.aval.ndim, 1)))
        return params, arrays

    def _emit_launch(self, out: Var, shape: list[str], kernel: str, params: list[str],
                     size: str) -> None:
        name = self.names[out]
        self.host.append(f"{name} = cuda.device_array(({', '.join(shape or ['1'])},), "
                         f"dtype={np_type(out.aval.dtype)})")
        for param in params:
            if param.endswith("_flat"):
                self.host.append(f"{param} = {param[:-5]}.reshape(-1)")
        self.host.append(f"blocks, threads = launch_config({size})")
        self.host.append(f"{kernel}[blocks, threads]({', '.join(['dims', *params])})")

    def _host_output(self, atom: Any) -> str:
        if isinstance(atom, Literal):
            return f"np.full(1, {typed_constant(atom.val, atom.aval.dtype)})"
        return f"{self.names[atom]}.copy_to_host()"


def _check_supported(eqn: JaxprEqn) -> None:
    if not eqn.outvars:
        raise UnsupportedError(f"{eqn.primitive} (an equation with an effect)")
    if eqn.primitive in REDUCTIONS or not _is_fusible(eqn):
        raise UnsupportedError(str(eqn.primitive))
    if eqn.primitive in CUDA_MISSING:
        raise UnsupportedError(str(eqn.primitive))


def _unravel(flat: str, index: tuple[str, ...], shape: list[str]) -> list[str]:
    """Lines that split a flat (row-major) position into one index per dim."""
    lines = [f"rest = {flat}"]
    for k in reversed(range(1, len(index))):
        lines += [f"{index[k]} = rest % {shape[k]}", f"rest = rest // {shape[k]}"]
    return [*lines, f"{index[0]} = rest"]


def _prelude() -> list[str]:
    return ["# Generated by stage2_jit's CUDA backend. Comments show the jaxpr's equations.",
            "import math",
            "import numpy as np",
            "from numba import cuda",
            "from stage2_jit.codegen_cuda import launch_config",
            *_DEVICE_FUNCTIONS.splitlines()]


# ------------------------------------------------------------------------------------------
# Compiling and running
# ------------------------------------------------------------------------------------------


class CudaExecutable:
    """Runs the generated host function: inputs to the device, results back to the host."""

    def __init__(self, closed: ClosedJaxpr, source: str, writer: CudaProgramWriter,
                 optimized: ClosedJaxpr) -> None:
        from numba import cuda
        self.optimized = optimized
        self.consts = [np.ascontiguousarray(np.asarray(c)) for c in optimized.consts]
        self.source = source
        self.program = load_kernel_module(source).program
        self.dims_host = np.array([var.aval.shape[k] for var, k in writer.dims], dtype=np.int64)
        self.dims = cuda.to_device(self.dims_host if self.dims_host.size else np.zeros(1, np.int64))
        self.in_avals, self.out_avals = closed.in_avals, closed.out_avals

    def __call__(self, *args: np.ndarray) -> list[Array]:
        from numba import cuda
        arrays = [np.ascontiguousarray(x).reshape(-1 if not aval.shape else aval.shape)
                  for x, aval in zip(args, self.in_avals)]
        device = [cuda.to_device(x) for x in self.consts + arrays]
        outs = self.program(self.dims_host, self.dims, *device)
        return [Array(np.asarray(o).reshape(aval.shape), aval.weak_type)
                for o, aval in zip(outs, self.out_avals)]


def generate_source(closed: ClosedJaxpr) -> tuple[str, CudaProgramWriter, ClosedJaxpr]:
    """The source for ``closed``, optimized as for the CPU (calls inlined, constants folded,
    broadcasts sunk); raises ``UnsupportedError`` for a program this backend cannot write.
    It needs no GPU: the kernels are compiled on their first launch (or by ``kernels_ptx``)."""
    optimized = optimize(ClosedJaxpr(inline_calls(closed.jaxpr), []))
    optimized = ClosedJaxpr(dce(sink_broadcasts(optimized.jaxpr)), optimized.consts)
    # Folding may leave array constants: the host function takes them as its first arguments.
    program = Jaxpr([], [*optimized.jaxpr.constvars, *optimized.jaxpr.invars],
                    optimized.jaxpr.outvars, optimized.jaxpr.eqns)
    writer = CudaProgramWriter(program)
    return writer.write(), writer, optimized


def compile_cuda(closed: ClosedJaxpr, fallback: Callable[[ClosedJaxpr], Callable]) -> Callable:
    """The CUDA executable for ``closed``; ``fallback``'s when the program uses a primitive
    this backend does not generate yet."""
    reason = cuda_unavailable_reason()
    if reason is not None:
        raise RuntimeError(f"jit(..., backend='cuda') cannot run: {reason}. "
                           f"Use backend='cpu' instead.")
    try:
        source, writer, optimized = generate_source(closed)
    except UnsupportedError as e:
        run = fallback(closed)
        run.source = f"# Not generated: {e} has no CUDA code generation rule yet.\n"
        return run
    return CudaExecutable(closed, source, writer, optimized)


def kernels_ptx(source: str, writer: CudaProgramWriter,
                cc: tuple[int, int] = (9, 0)) -> dict[str, str]:
    """Each kernel of ``source`` compiled to PTX for compute capability ``cc``: no GPU is
    needed, only the CUDA compiler libraries (pip install 'numba-cuda[cu13]'), and not the
    simulator (which compiles nothing)."""
    from unittest import mock

    from numba import cuda, from_dtype, types
    from numba.cuda import dispatcher
    module = load_kernel_module(source)
    ptx = {}
    # NB: numba-cuda 0.30 compiles a called device function for the current device's compute
    # capability, which needs a driver; here a stand-in device answers ``cc`` instead.
    # Writing the helpers as inline expressions would remove the need (a later step).
    device = mock.Mock(compute_capability=cc)
    with mock.patch.object(dispatcher, "get_current_device", return_value=device):
        for kernel in writer.kernels:
            signature = (types.int64[::1], *(types.Array(from_dtype(dtype), ndim, "C")
                                             for dtype, ndim in kernel.arrays))
            function = getattr(module, kernel.name).py_func
            ptx[kernel.name], _ = cuda.compile_ptx(function, signature, cc=cc)
    return ptx
