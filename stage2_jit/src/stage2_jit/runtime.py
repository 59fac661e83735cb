"""The runtime: executables, the arguments they take, and the compiled kernels they run.

A backend's code generator turns a program into source (``codegen_cpu``, ``codegen_cuda``);
the runtime turns that source into something to call, and calls it:

- ``compile_jaxpr`` makes one executable per program and backend (``BACKEND_COMPILERS``), and
  keeps it with the program;
- ``values_for`` and the backend choice say what an executable is called with, and where a
  call runs when ``jit`` was not told (computation follows data);
- ``CpuExecutable`` and ``CudaExecutable`` run a generated module, whose compiled kernels
  come from the disk cache (``kernel_cache.py``, which only the runtime uses), and wrap the
  results as arrays; on the GPU, the helpers the generated host functions call
  (``device_array``, ``to_device``, ``row``, ``host_scalar``) are here too.

NB: in JAX this is PjRt (``xla/pjrt``): ``PjRtLoadedExecutable`` runs a compiled program on
device buffers, and ``jax/_src/interpreters/pxla.py`` hands it its arguments.
"""

from __future__ import annotations

import sys
import threading
import warnings
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from stage1_autodiff.config import config
from stage1_autodiff.core import Array, ShapedArray, asarray, numpy_warnings_off
from stage1_autodiff.threads import COORDINATOR

from . import codegen_cpu, tiers
from .arrays import GpuArray
from .buffers import POOL, Lease, device_empty, to_device
from .cuda_launch import trim_launches
from .cuda_simulator import use_ieee_math
from .devices import cuda_unavailable_reason, gpu_device
from .jaxpr import ClosedJaxpr
from .kernel_cache import call_kernel, compile_kernel, load_kernel_module
from .passes import UnsupportedError, optimize, prepare_program
from .tracing import eval_jaxpr

BACKENDS = ("interpreter", "cpu", "cuda")
BACKEND_ALIASES = {"gpu": "cuda"}  # JAX's platform name for the same backend


# --8<-- [start:compile_jaxpr]
_compiled: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # jaxpr -> {backend: fn}
_compile_lock = threading.Lock()


def compile_jaxpr(jaxpr: ClosedJaxpr, backend: str) -> Callable[..., list[Array]]:
    """The executable for ``jaxpr`` on ``backend``, made once and kept with the jaxpr."""
    per_backend = _compiled.get(jaxpr)
    if per_backend is not None and backend in per_backend:  # the common case: no lock
        return per_backend[backend]
    with _compile_lock:
        per_backend = _compiled.setdefault(jaxpr, {})
        if backend not in per_backend:
            per_backend[backend] = BACKEND_COMPILERS[backend](jaxpr)
        return per_backend[backend]


def _interpreter_compile(jaxpr: ClosedJaxpr) -> Callable[..., list[Array]]:
    """The reference backend: the optimized program (``passes.optimize``), its equations
    evaluated one by one with NumPy."""
    # NB: ``run`` closes over the avals, not ``jaxpr``: ``_compiled`` is weakly keyed by the
    # program, and an executable that referred to its key would keep both alive for ever.
    in_avals, out_avals, optimized = jaxpr.in_avals, jaxpr.out_avals, optimize(jaxpr)

    def run(*args: np.ndarray) -> list[Array]:
        arrays = [Array(np.asarray(x), aval.weak_type) for x, aval in zip(args, in_avals)]
        with numpy_warnings_off():
            outs = eval_jaxpr(optimized.jaxpr, optimized.consts, arrays)
        return [_as_output(o, aval) for o, aval in zip(outs, out_avals)]

    run.optimized = optimized
    return run


def _as_output(value: Any, aval: ShapedArray) -> Array:
    value = value if isinstance(value, Array) else asarray(value)
    return Array(value._value, aval.weak_type)


# --8<-- [start:values_for]
def values_for(backend: str, arrays: Sequence[Array]) -> list[Any]:
    """What an executable of ``backend`` is called with: the buffers of GPU arrays as they
    are for the ``cuda`` backend (no copy), NumPy arrays for the host backends (a GPU array
    is copied to the host)."""
    if backend == "cuda":
        return [a._buffer if type(a) is GpuArray else a._value for a in arrays]
    return [a._value for a in arrays]


def backend_for(chosen: str | None, arrays: Sequence[Any]) -> str:
    """The backend a call runs on: the one ``jit`` was given; else the GPU when an argument
    lives there (computation follows data, as in JAX); else the default device's, or the
    configured default backend."""
    if chosen is not None:
        return chosen
    if any(type(a) is GpuArray for a in arrays):
        return "cuda"
    name = config.jax_default_device or config.jax_default_backend  # (jax.default_device)
    name = name if isinstance(name, str) else name.platform
    return BACKEND_ALIASES.get(name, name)
# --8<-- [end:values_for]


# --8<-- [start:call_donating]
def call_donating(program: ClosedJaxpr, backend: str, arrays: list[Array],
                  donated: list[int]) -> list[Any]:
    """Runs ``program`` on ``arrays``, donating those at positions ``donated``, as JAX does:
    each is paired with the first output of its shape and dtype not yet paired, and a paired
    argument is deleted by the call; its buffer may then hold that output (``run_donating``).
    An argument left unpaired is kept, with JAX's warning."""
    pairs, free, unusable = {}, list(enumerate(program.out_avals)), []
    ids = [id(a) for a in arrays]
    for j in donated:
        if ids.count(ids[j]) > 1:
            raise ValueError(f"Attempt to use a buffer that was previously donated in the "
                             f"same call (argument {j}): `f(donate(a), a)` is not allowed. "
                             f"Pass a copy of the array as the other argument.")
        aval = arrays[j].aval
        match = next((k for k, out in free if (out.shape, out.dtype) ==
                      (aval.shape, aval.dtype)), None)
        if match is None:
            unusable.append(f"{aval.dtype.name}[{','.join(map(str, aval.shape))}]")
            continue
        free = [(k, out) for k, out in free if k != match]
        pairs[j] = match
    if unusable:
        warnings.warn(f"Some donated buffers were not usable: {', '.join(unusable)}.\nSee an "
                      f"explanation at https://docs.jax.dev/en/latest/faq.html#buffer-donation.",
                      stacklevel=4)  # the caller of the jitted function
    executable = compile_jaxpr(program, backend)
    values = values_for(backend, arrays)
    for j in pairs:  # deleted first: then ``values`` is the only holder of the buffer
        arrays[j].delete()
    run = getattr(executable, "run_donating", None)
    try:
        return run(values, pairs) if run is not None else executable(*values)
    except BaseException:
        for j in pairs:  # the call failed: the caller keeps its arrays
            arrays[j]._value = values[j]
        raise
# --8<-- [end:call_donating]


# Each backend's compiler, from a program to its executable. Stage 4 wraps each, to send
# programs over sharded types to its partitioner first.
BACKEND_COMPILERS: dict[str, Callable[[ClosedJaxpr], Callable[..., list[Array]]]] = {
    "interpreter": _interpreter_compile,
    "cpu": lambda closed: compile_cpu(closed, fallback=_interpreter_compile),
    "cuda": lambda closed: compile_cuda(closed, fallback=_interpreter_compile),
}
# --8<-- [end:compile_jaxpr]


# ------------------------------------------------------------------------------------------
# The CPU
# ------------------------------------------------------------------------------------------


# --8<-- [start:cpu_executable]
class CpuExecutable:
    """Runs the generated function: flattens 0-d arrays, allocates the outputs and scratch
    arrays the kernel writes into, passes the dims, wraps results."""

    def __init__(self, closed: ClosedJaxpr, source: str, writer: Any,
                 optimized: ClosedJaxpr) -> None:
        # NB: nothing here refers to ``closed``: jit keeps executables in a table weakly keyed
        # by the program, and a reference back would keep both alive for ever.
        self.optimized = optimized  # the program the kernel computes, for reading
        self.consts = [np.ascontiguousarray(np.asarray(c)) for c in optimized.consts]
        self.source = source
        self.plan = writer.plan.text()  # what fusion decided, for reading
        self.module = load_kernel_module(source)
        self.kernel = self.module.program
        self.dims = np.array([var.aval.shape[k] for var, k in writer.dims], dtype=np.int64)
        # what the runtime allocates for each call: the outputs, then the scratch arrays
        self.buffers = [(v.aval.shape or (1,), v.aval.dtype) for v in writer.output_buffers]
        self.buffers += [(shape, dtype) for _, shape, dtype in writer.scratch]
        # output position -> (its buffer, the argument positions it may be written into)
        invars, n = writer.jaxpr.invars, len(self.consts)
        self.in_place = {k: (b, [invars.index(x) - n for x in writer.in_place[v]])
                         for b, v in enumerate(writer.output_buffers) if writer.in_place.get(v)
                         for k, o in enumerate(writer.jaxpr.outvars) if o is v}
        self.in_avals = closed.in_avals
        self.out_avals = closed.out_avals
        self.uses_blas = "  # BLAS" in source  # its threads are coordinated (threads.py)
        if self.uses_blas:  # SciPy's BLAS is loaded now: it gets the others' thread count
            COORDINATOR.libraries_loaded()

    def __call__(self, *args: np.ndarray) -> list[Array]:
        return self.run_donating(list(args), {})

    def output_buffers(self, reuse: dict[int, np.ndarray] | None = None) -> list[np.ndarray]:
        """The arrays one call writes into: its outputs (0-d ones as shape (1,)), then its
        scratch arrays, from the pool, but for those ``reuse`` gives (buffer -> array)."""
        reuse = reuse or {}
        return [reuse[b] if b in reuse else POOL.empty(shape, dtype)
                for b, (shape, dtype) in enumerate(self.buffers)]

    def run_donating(self, args: list[np.ndarray], donated: dict[int, int]) -> list[Array]:
        """Runs the kernel; an output may be written into the buffer of an argument donated
        for it (``donated``: argument position -> output position) when the plan allows it
        (``in_place``) and nothing but ``args`` holds the buffer, which the pool lent."""
        reuse = {}
        for j, out in donated.items():
            buffer, allowed = self.in_place.get(out, (None, ()))
            if j in allowed and type(args[j].base) is Lease and sys.getrefcount(args[j]) == 2:
                reuse[buffer] = args[j]
        buffers = self.output_buffers(reuse)
        if self.uses_blas:
            COORDINATOR.coordinate()
        outs = self._call(self.consts + self._inputs(args) + buffers)
        return [Array(o if o.shape == aval.shape else o.reshape(aval.shape), aval.weak_type)
                for o, aval in zip(outs, self.out_avals)]

    def _inputs(self, args: list[np.ndarray]) -> list[np.ndarray]:
        return [np.ascontiguousarray(x).reshape(1) if not aval.shape else
                np.ascontiguousarray(x) for x, aval in zip(args, self.in_avals)]

    def _call(self, arrays: list[np.ndarray]) -> Any:
        return call_kernel(self.module, self.kernel, self.dims, *arrays)

    def compile_for(self, args: list[np.ndarray]) -> None:
        """Compiles the kernel (or loads it from the disk cache) for the types a call with
        ``args`` passes, without running it (``tiers.Tiered`` does this in a thread)."""
        buffers = [np.empty((1,) * len(shape), dtype) for shape, dtype in self.buffers]
        compile_kernel(self.module, self.kernel,
                       [self.dims, *self.consts, *self._inputs(args), *buffers])
# --8<-- [end:cpu_executable]


def compile_cpu(closed: ClosedJaxpr, fallback: Callable[[ClosedJaxpr], Callable]) -> Callable:
    """The CPU executable for ``closed``: the program is optimized (constant folding, CSE,
    DCE), then generated; when a primitive is not covered, ``fallback``'s executable."""
    if closed.consts:
        raise ValueError("compile_cpu expects constants already turned into arguments.")
    try:
        optimized, program = prepare_program(closed)
        source, writer = codegen_cpu.generate_source(program)
    except UnsupportedError as e:
        run = fallback(closed)
        run.source = f"# Not generated: {e} has no CPU code generation rule yet.\n"
        return run
    executable = CpuExecutable(closed, source, writer, optimized)
    if config.jax_from_numpy_tiered and tiers.reproducible(optimized.jaxpr):
        return tiers.Tiered(executable)
    return executable


# ------------------------------------------------------------------------------------------
# The GPU
# ------------------------------------------------------------------------------------------


# --8<-- [start:cuda_executable]
class CudaExecutable:
    """Runs the generated host function on device buffers: arguments already on the GPU are
    used as they are, host arrays are copied there, and the results stay there (GpuArrays)."""

    def __init__(self, closed: ClosedJaxpr, source: str, writer: Any,
                 optimized: ClosedJaxpr) -> None:
        from numba import cuda
        gpu_device()  # found before the first device buffer is taken from its pool
        self.optimized = optimized
        self.source = source
        self.plan = writer.plan.text()
        self.module = load_kernel_module(source)
        use_ieee_math(self.module)  # under the simulator: math's values as a GPU's
        trim_launches(self.module)  # on a GPU: launches skip Numba's dispatcher
        self.program = self.module.program
        self.consts = [to_device(np.asarray(c)) for c in optimized.consts]  # copied once
        # Python ints on the host: a launch's grid is computed from them, and CUDA's launch
        # (cuda.core's LaunchConfig) refuses NumPy integers, where the simulator takes them.
        self.dims_host = tuple(int(var.aval.shape[k]) for var, k in writer.dims)
        self.dims = cuda.to_device(np.array(self.dims_host or (0,), dtype=np.int64))
        self.out_avals = closed.out_avals
        self.launched = False  # once the kernels have run, calls skip the cache's checks

    def __call__(self, *args: Any) -> list[GpuArray]:
        args = (self.dims_host, self.dims, *self.consts, *map(to_device, args))
        if self.launched:
            try:
                outs = self.program(*args)
            except Exception:  # noqa: BLE001 -- new argument types read a damaged file?
                outs = call_kernel(self.module, self.program, *args)
        else:
            outs = call_kernel(self.module, self.program, *args)
            self.launched = True
        device = gpu_device()
        return [GpuArray(o, aval, device) for o, aval in zip(outs, self.out_avals)]


def device_array(shape: tuple[int, ...], dtype: Any) -> Any:
    """An uninitialised device array, from the GPU's caching allocator (``buffers.py``).
    The host function calls this rather than ``cuda.device_array``, which would ask the
    driver for memory on every call (and the simulator swaps ``cuda`` in a kernel's module for
    a fake while the kernel runs, which a host function in the same module would see)."""
    return device_empty(shape, dtype)


def row(x: Any, t: int) -> Any:
    """Row ``t`` of a device array, a view: a scan step's slice of an ``xs``, or where its
    ``y`` goes. A row of a 1-D array is a scalar, which kernels store as one element."""
    return x[t:t + 1] if x.ndim == 1 else x[t]


def host_scalar(x: Any) -> Any:
    """The value of a device scalar (stored as one element) on the host: a predicate or an
    index that host code branches on. It waits for the kernels that compute it."""
    return x.copy_to_host()[0]


def _on_the_host(run: Callable[..., list[Array]], out_avals: list) -> Callable:
    """``run`` (a host executable) for device arguments: they are copied to the host, and the
    results back to the GPU, so the arrays a caller sees stay GpuArrays."""
    def on_host(*args: Any) -> list[GpuArray]:
        host = [x.copy_to_host() if hasattr(x, "copy_to_host") else x for x in args]
        device = gpu_device()
        return [GpuArray(to_device(np.asarray(o)), aval, device)
                for o, aval in zip(run(*host), out_avals)]
    on_host.optimized = getattr(run, "optimized", None)
    return on_host
# --8<-- [end:cuda_executable]


def compile_cuda(closed: ClosedJaxpr, fallback: Callable[[ClosedJaxpr], Callable]) -> Callable:
    """The CUDA executable for ``closed``; ``fallback``'s when the program uses a primitive
    this backend does not generate yet."""
    reason = cuda_unavailable_reason()
    if reason is not None:
        raise RuntimeError(f"jit(..., backend='cuda') cannot run: {reason}. "
                           f"Use backend='cpu' instead.")
    from .codegen_cuda import generate_source  # NB: numba-cuda is optional: imported on use
    try:
        source, writer, optimized = generate_source(closed)
    except UnsupportedError as e:
        run = _on_the_host(fallback(closed), closed.out_avals)
        run.source = (f"# Not generated: {e} has no CUDA code generation rule: the program "
                      f"runs on the host (arrays are copied there and back).\n")
        return run
    return CudaExecutable(closed, source, writer, optimized)
