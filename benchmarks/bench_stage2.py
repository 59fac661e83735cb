"""Stage 2 benchmark: what ``jit``'s CPU backend (one fused Numba function per program) buys.

1. ``x*x + x*2.0`` on a 5000×5000 float32 array: ``jit(backend="cpu")`` against NumPy, a
   hand-written fused Numba ``prange`` kernel (allocating its output, writing into a new
   NumPy array each call, the target's baseline, and into a preallocated one), stage-1
   eager, the interpreter backend, PyTorch eager and ``jax.jit``; with the bandwidth
   achieved and a plain memory copy (``np.copyto`` into a preallocated array) as the ceiling.
2. Dispatch of a cached tiny jitted function (``lambda x: x + 1.0`` on a (3,) array), per
   call, on the cpu and interpreter backends.
3. Softmax and layer normalization over the rows of a (4096, 1024) float32 array, against
   numerically stable NumPy versions.
4. An MLP training step ``jit(value_and_grad(loss))`` (784-512-512-10, batch 256, tanh,
   softmax cross-entropy against one-hot labels) against stage-1 eager ``value_and_grad``
   and PyTorch.
5. Compile time of the course's ``tanh(x) = (1 - exp(-2x)) / (1 + exp(-2x))``: the first
   call in a fresh process with an empty kernel cache (cold), then in another fresh process
   that finds the kernel in the disk cache (warm); and the first calls of the tour's two
   stage-2 programs (the elementwise example and the MLP training step), against JAX's.

Every result is checked equal to NumPy's (or stage 1's gradients) before it is timed.
PyTorch and JAX are timed in child processes of their own (see benchmarks/README.md). The
speed-ups are drawn to course/assets/bench_stage2.png (not with ``--quick``).

Run from the repository root:

    PYTHONPATH=stage1_autodiff/src:stage2_jit/src python benchmarks/bench_stage2.py [--quick]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import tempfile
from collections.abc import Callable

import numba
import numpy as np
import stage2_jit.numpy as jnp
from common import (  # benchmarks/common.py
    Timing,
    add_malloc_options,
    format_seconds,
    keep_freed_memory,
    machine_summary,
    malloc_summary,
    print_table,
    run_python_child,
    time_call,
    time_in_child,
    time_rows,
)
from plotting import PlotPanel, speedups, write_course_plot  # benchmarks/plotting.py

import stage1_autodiff
import stage2_jit as jax

# Targets (from the stage-2 issues); a verdict is printed for each, never tuned to pass.
ELEMENTWISE_VS_NUMPY = 4.0  # NumPy / ours, at least
ELEMENTWISE_VS_HAND = 1.2  # ours / hand-written kernel into a new NumPy array, at most
ELEMENTWISE_VS_JAX = 2.0  # jax.jit / ours, at least
DISPATCH_TARGET_S = 15e-6  # per call, at most
ROWWISE_VS_NUMPY = 2.0  # NumPy / ours, at least
ROWWISE_VS_JAX = {"softmax": 1.3, "layer norm": 1.0}  # issue 17: jax.jit / ours, at least
MLP_VS_EAGER = 1.5  # stage-1 eager / ours, at least
MLP_VS_JAX = 1.2  # ours / JAX, at most (issue 17)
COLD_COMPILE_S = 0.15  # issue 17: a new function's first call, cold cache
WARM_COMPILE_S = 0.15

ELEMENTWISE_SHAPE = (5000, 5000)
ROWWISE_SHAPE = (4096, 1024)
LAYERNORM_EPS = 1e-5
SIZES, BATCH = (784, 512, 512, 10), 256
TANH_SIZE = 1000

ELEMENTWISE_TITLE = (f"x*x + x*2.0 on a {ELEMENTWISE_SHAPE[0]}x{ELEMENTWISE_SHAPE[1]} "
                     f"float32 array")
DISPATCH_TITLE = "dispatch of a cached jitted lambda x: x + 1.0 on a (3,) float32 array"
SOFTMAX_TITLE = f"softmax over the rows of a {ROWWISE_SHAPE[0]}x{ROWWISE_SHAPE[1]} float32 array"
LAYERNORM_TITLE = (f"layer norm (eps {LAYERNORM_EPS}, scale and shift) over the rows of a "
                   f"{ROWWISE_SHAPE[0]}x{ROWWISE_SHAPE[1]} float32 array")
MLP_TITLE = (f"MLP {'-'.join(map(str, SIZES))} training step (loss and gradient), batch "
             f"{BATCH}, float32, tanh, softmax cross-entropy on one-hot labels")
ALL_TITLES = (ELEMENTWISE_TITLE, DISPATCH_TITLE, SOFTMAX_TITLE, LAYERNORM_TITLE, MLP_TITLE)

Rows = list[tuple[str, Callable[[], object] | str]]  # (name, function to time, or a note)
TimedRows = list[tuple[str, Timing | str]]


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


# ------------------------------------------------------------------------------------------
# The computations, written once for any NumPy-like module
# ------------------------------------------------------------------------------------------


def square_plus_double(x):
    return x * x + x * 2.0


def add_one(x):
    return x + 1.0


def course_tanh(np_module):
    def tanh(x):
        y = np_module.exp(-2.0 * x)
        return (1.0 - y) / (1.0 + y)
    return tanh


def ours_softmax(x):
    return jax.nn.softmax(x, axis=-1)


def ours_layernorm(x, scale, shift):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    centered = x - mean
    var = jnp.mean(centered * centered, axis=-1, keepdims=True)
    return centered / jnp.sqrt(var + LAYERNORM_EPS) * scale + shift


def numpy_softmax(x):
    """Numerically stable: shifted by each row's max, so exp never overflows."""
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def numpy_layernorm(x, scale, shift):
    centered = x - x.mean(axis=-1, keepdims=True)
    var = (centered * centered).mean(axis=-1, keepdims=True)
    return centered / np.sqrt(var + np.float32(LAYERNORM_EPS)) * scale + shift


def mlp_loss(np_module, nn):
    """The MLP's loss, with ``np_module``'s functions and ``nn``'s log_softmax and one_hot."""
    def loss(params, x, labels):
        *hidden, (w_out, b_out) = params
        h = x
        for w, b in hidden:
            h = np_module.tanh(h @ w + b)
        log_probs = nn.log_softmax(h @ w_out + b_out)
        one_hot = nn.one_hot(labels, SIZES[-1])
        return -np_module.mean(np_module.sum(one_hot * log_probs, axis=-1))
    return loss


# --8<-- [start:hand_kernel]
@numba.njit(parallel=True, error_model="numpy")
def hand_fused(x):
    """What the CPU backend should generate: one parallel pass, reading x once."""
    out = np.empty_like(x)
    x_flat, out_flat = x.reshape(-1), out.reshape(-1)
    two = np.float32(2.0)  # a typed constant: a bare 2.0 would make the math float64
    for i in numba.prange(x_flat.size):
        v = x_flat[i]
        out_flat[i] = v * v + v * two
    return out
# --8<-- [end:hand_kernel]


@numba.njit(parallel=True, error_model="numpy")
def hand_fused_into(x, out):
    """The same loop into a preallocated output: no page faults on freshly mapped memory."""
    x_flat, out_flat = x.reshape(-1), out.reshape(-1)
    two = np.float32(2.0)
    for i in numba.prange(x_flat.size):
        v = x_flat[i]
        out_flat[i] = v * v + v * two


# ------------------------------------------------------------------------------------------
# Problems and checks
# ------------------------------------------------------------------------------------------


def elementwise_input(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(ELEMENTWISE_SHAPE, dtype=np.float32)


def rowwise_inputs(seed: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(ROWWISE_SHAPE, dtype=np.float32) * np.float32(3)
    scale = rng.standard_normal(ROWWISE_SHAPE[-1], dtype=np.float32)
    shift = rng.standard_normal(ROWWISE_SHAPE[-1], dtype=np.float32)
    return x, scale, shift


def mlp_problem(seed: int = 2):
    """float32 parameters [(W, b), ...], inputs and integer labels, as NumPy arrays."""
    rng = np.random.default_rng(seed)
    params = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        w = rng.standard_normal((fan_in, fan_out), dtype=np.float32)
        b = rng.standard_normal(fan_out, dtype=np.float32) * np.float32(0.1)
        params.append((w / np.float32(np.sqrt(fan_in)), b))
    x = rng.standard_normal((BATCH, SIZES[0]), dtype=np.float32)
    labels = rng.integers(0, SIZES[-1], size=BATCH).astype(np.int32)
    return params, x, labels


def numpy_backprop(params, x, labels):
    """The loss and gradient by hand in NumPy (float32 throughout), with each layer's input
    ``hs`` and the gradient ``ds`` at each layer's output before its activation."""
    hs = [x]
    for w, b in params[:-1]:
        hs.append(np.tanh(hs[-1] @ w + b))
    w_out, b_out = params[-1]
    logits = hs[-1] @ w_out + b_out
    shifted = logits - logits.max(axis=-1, keepdims=True)
    exp_shifted = np.exp(shifted)
    total = exp_shifted.sum(axis=-1, keepdims=True)
    one_hot = (labels[:, None] == np.arange(SIZES[-1])).astype(np.float32)
    loss = -np.mean(np.sum(one_hot * (shifted - np.log(total)), axis=-1))
    d = (exp_shifted / total - one_hot) / np.float32(BATCH)  # softmax minus targets
    grads, ds = [], [d]
    for (w, _), h in zip(params[:0:-1], hs[:0:-1]):
        grads.append((h.T @ d, d.sum(axis=0)))
        d = (d @ w.T) * (1 - h * h)
        ds.append(d)
    grads.append((hs[0].T @ d, d.sum(axis=0)))
    return loss, grads[::-1], hs, ds[::-1]


def numpy_value_and_grad(params, x, labels):
    loss, grads, _, _ = numpy_backprop(params, x, labels)
    return loss, grads


def numpy_matmuls(params, hs, ds) -> list[np.ndarray]:
    """The step's matrix products alone: what any implementation on this BLAS must spend."""
    forward = [h @ w for h, (w, _) in zip(hs, params)]
    weight_grads = [h.T @ d for h, d in zip(hs, ds)]
    input_grads = [d @ w.T for d, (w, _) in zip(ds[1:], params[1:])]
    return forward + weight_grads + input_grads


def stage1_reference_grads():
    """Stage 1's eager loss and gradient of the MLP: what every other one is checked against."""
    np_params, np_x, np_labels = mlp_problem()
    params = [tuple(stage1_autodiff.numpy.asarray(p) for p in layer) for layer in np_params]
    loss, grads = stage1_autodiff.value_and_grad(
        mlp_loss(stage1_autodiff.numpy, stage1_autodiff.nn))(
        params, stage1_autodiff.numpy.asarray(np_x), stage1_autodiff.numpy.asarray(np_labels))
    return np.asarray(loss), [[np.asarray(g) for g in layer] for layer in grads]


def check_close(name: str, got, want, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """A benchmark of a wrong computation is worthless: results must match first."""
    got = np.asarray(got)
    assert got.dtype == np.float32, f"{name}: dtype {got.dtype}, not float32"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=name)


def check_grads(name: str, loss, grads, ref_loss, ref_grads) -> None:
    check_close(f"{name} loss", loss, ref_loss, rtol=1e-4, atol=1e-5)
    for layer, ref_layer in zip(grads, ref_grads):
        for g, ref_g in zip(layer, ref_layer):
            check_close(f"{name} gradient", g, ref_g, rtol=1e-4, atol=1e-5)


def generated(jitted, *args) -> bool:
    """Whether the CPU backend generated a kernel (False: it fell back to the interpreter)."""
    text = jitted.lower(*args).compile().as_text()
    return not text.startswith(("# Not generated", "# backend"))


# ------------------------------------------------------------------------------------------
# Other frameworks, each timed in a child process: {table title: (row name, function)}
# ------------------------------------------------------------------------------------------


def torch_rows() -> dict[str, tuple[str, Callable[[], object]]]:
    import torch
    name = f"PyTorch {torch.__version__} eager"
    rows = {}

    np_x = elementwise_input()
    x = torch.from_numpy(np_x)
    check_close("PyTorch", square_plus_double(x).numpy(), square_plus_double(np_x))
    rows[ELEMENTWISE_TITLE] = (name, lambda: square_plus_double(x))

    small = torch.ones(3)
    rows[DISPATCH_TITLE] = (name, lambda: add_one(small))

    np_rx, np_scale, np_shift = rowwise_inputs()
    rx, scale, shift = (torch.from_numpy(a) for a in (np_rx, np_scale, np_shift))
    check_close("PyTorch softmax", torch.softmax(rx, -1).numpy(), numpy_softmax(np_rx))
    rows[SOFTMAX_TITLE] = (name, lambda: torch.softmax(rx, -1))

    def layer_norm():
        return torch.nn.functional.layer_norm(rx, (ROWWISE_SHAPE[-1],), scale, shift,
                                              LAYERNORM_EPS)
    check_close("PyTorch layer norm", layer_norm().numpy(),
                numpy_layernorm(np_rx, np_scale, np_shift), rtol=1e-4, atol=1e-5)
    rows[LAYERNORM_TITLE] = (name, layer_norm)

    np_params, np_mx, np_labels = mlp_problem()
    params = [tuple(torch.tensor(p, requires_grad=True) for p in layer) for layer in np_params]
    flat = [p for layer in params for p in layer]
    mx, labels = torch.from_numpy(np_mx), torch.from_numpy(np_labels.astype(np.int64))

    class TorchNN:  # log_softmax and one_hot as mlp_loss wants them
        log_softmax = staticmethod(lambda z: torch.log_softmax(z, dim=-1))
        one_hot = staticmethod(lambda y, n: torch.nn.functional.one_hot(y, n).to(torch.float32))

    loss_fn = mlp_loss(torch, TorchNN)

    def step():
        loss = loss_fn(params, mx, labels)
        return loss, torch.autograd.grad(loss, flat)

    loss, g = step()
    ref_loss, ref_grads = stage1_reference_grads()
    grads = [[g[2 * i].numpy(), g[2 * i + 1].numpy()] for i in range(len(params))]
    check_grads("PyTorch", loss.detach().numpy(), grads, ref_loss, ref_grads)
    rows[MLP_TITLE] = (name, step)
    return rows


def jax_rows() -> dict[str, tuple[str, Callable[[], object]]]:
    import jax as real_jax
    real_jnp = real_jax.numpy
    name = f"JAX {real_jax.__version__} jax.jit"
    rows = {}

    def timed(fn, *args):
        return lambda: real_jax.block_until_ready(fn(*args))

    np_x = elementwise_input()
    f = real_jax.jit(square_plus_double)
    x = real_jax.device_put(np_x)
    check_close("JAX", f(x), square_plus_double(np_x))
    rows[ELEMENTWISE_TITLE] = (name, timed(f, x))

    tiny = real_jax.jit(add_one)
    small = real_jax.device_put(np.ones(3, np.float32))
    rows[DISPATCH_TITLE] = (name, timed(tiny, small))

    np_rx, np_scale, np_shift = rowwise_inputs()
    rx, scale, shift = (real_jax.device_put(a) for a in (np_rx, np_scale, np_shift))
    softmax = real_jax.jit(lambda z: real_jax.nn.softmax(z, axis=-1))
    check_close("JAX softmax", softmax(rx), numpy_softmax(np_rx))
    rows[SOFTMAX_TITLE] = (name, timed(softmax, rx))

    def layernorm(z, s, t):
        centered = z - real_jnp.mean(z, axis=-1, keepdims=True)
        var = real_jnp.mean(centered * centered, axis=-1, keepdims=True)
        return centered / real_jnp.sqrt(var + LAYERNORM_EPS) * s + t
    layernorm = real_jax.jit(layernorm)
    check_close("JAX layer norm", layernorm(rx, scale, shift),
                numpy_layernorm(np_rx, np_scale, np_shift), rtol=1e-4, atol=1e-5)
    rows[LAYERNORM_TITLE] = (name, timed(layernorm, rx, scale, shift))

    np_params, np_mx, np_labels = mlp_problem()
    params = [tuple(real_jax.device_put(p) for p in layer) for layer in np_params]
    mx, labels = real_jax.device_put(np_mx), real_jax.device_put(np_labels)
    step = real_jax.jit(real_jax.value_and_grad(mlp_loss(real_jnp, real_jax.nn)))
    loss, grads = step(params, mx, labels)
    ref_loss, ref_grads = stage1_reference_grads()
    check_grads("JAX", loss, grads, ref_loss, ref_grads)
    rows[MLP_TITLE] = (name, timed(step, params, mx, labels))
    return rows


# Some machines' environments set OPENBLAS_CORETYPE=Haswell, which makes OpenBLAS use its
# AVX2 kernels on a CPU with AVX-512: half the speed of its SkylakeX kernels there, and of
# XLA's matrix products. OpenBLAS reads the variable when it loads (NumPy's import), so no
# library can change it afterwards; a child process shows what the AVX-512 kernels give.
# Only on such a machine: on a CPU without AVX-512 those kernels stop at an illegal
# instruction.
CORETYPE_ROW = "  DIAGNOSTIC: the same, OPENBLAS_CORETYPE=SkylakeX"


def avx512_held_back() -> bool:
    """Whether the environment holds OpenBLAS to other kernels on a CPU with AVX-512."""
    if os.environ.get("OPENBLAS_CORETYPE", "SkylakeX") == "SkylakeX":
        return False
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            return "avx512f" in cpuinfo.read().split()
    except OSError:
        return False


def ours_coretype_rows() -> dict[str, tuple[str, Callable[[], object]]]:
    """Our MLP step in a process whose OpenBLAS uses its AVX-512 (SkylakeX) kernels."""
    np_params, np_x, np_labels = mlp_problem()
    params = [tuple(jnp.asarray(p) for p in layer) for layer in np_params]
    x, labels = jnp.asarray(np_x), jnp.asarray(np_labels)
    ours = jax.jit(jax.value_and_grad(mlp_loss(jnp, jax.nn)), backend="cpu")
    loss, grads = ours(params, x, labels)
    check_grads("jit cpu, SkylakeX BLAS", loss, grads, *stage1_reference_grads())
    return {MLP_TITLE: (CORETYPE_ROW, lambda: ours(params, x, labels))}


def time_coretype_in_child(repeat: int, min_time: float, keep_memory: bool) -> TimedRows:
    if not avx512_held_back():
        return []
    previous = os.environ.get("OPENBLAS_CORETYPE")
    os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"  # the spawned child inherits it
    try:
        timed = time_in_child(ours_coretype_rows, repeat, min_time, keep_memory)
    finally:
        if previous is None:
            del os.environ["OPENBLAS_CORETYPE"]
        else:
            os.environ["OPENBLAS_CORETYPE"] = previous
    return [timed[MLP_TITLE]]


FRAMEWORKS = (  # module, its rows, its name when missing
    ("torch", torch_rows, "PyTorch (CPU) eager"),
    ("jax", jax_rows, "JAX jax.jit"),
)


def other_framework_rows(repeat: int, min_time: float, keep_memory: bool) -> dict[str, TimedRows]:
    """PyTorch's and JAX's timed rows for each table, or a note that one is not installed."""
    others: dict[str, TimedRows] = {title: [] for title in ALL_TITLES}
    for module, make_rows, name in FRAMEWORKS:
        timed = time_in_child(make_rows, repeat, min_time, keep_memory) if installed(module) \
            else {}
        for title in ALL_TITLES:
            others[title].append(timed.get(title, (name, "not installed")))
    return others


def best_of(rows: TimedRows, prefix: str) -> float | None:
    """The best time of the first timed row whose name starts with ``prefix``."""
    for name, timing in rows:
        if name.startswith(prefix) and not isinstance(timing, str):
            return timing.best
    return None


# ------------------------------------------------------------------------------------------
# Diagnostics: page faults and where a call's time goes
# ------------------------------------------------------------------------------------------


def page_faults_per_call(fn: Callable[[], object], calls: int = 3) -> float:
    """Minor page faults per call (every thread of the process): a fresh page costs one."""
    fn()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(calls):
        fn()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / calls


def dispatch_breakdown(jitted, args: tuple, repeat: int, min_time: float) -> str:
    """Times the layers of a cached cpu call: the whole ``Jitted.__call__``, its cache
    lookup (as the call makes it: from the arguments' types alone when they are arrays, else
    after flattening them), ``CpuExecutable.__call__`` (array checks and wrapping) and the
    Numba kernel."""
    try:
        from stage2_jit.jit import _cache_key  # internals: for this diagnosis only
        from stage2_jit.runtime import compile_jaxpr
        entry, _ = jitted._lookup(args, {})
        executable = compile_jaxpr(entry.program, "cpu")
        arrays = [np.asarray(a) for a in (*entry.consts, *jax.tree_leaves(args))]
        kernel_args = [a.reshape(1) if a.ndim == 0 else a for a in arrays]
        outputs = executable.output_buffers()  # the kernel alone: into outputs made once
        tree = jitted._arg_trees.get(len(args))  # set by a call that took the array path
        parts = {
            "Jitted.__call__": lambda: jitted(*args),
            "its cache lookup": (lambda: jitted._cache[_cache_key(tree, args, ())]) if tree
            else lambda: jitted._lookup(args, {}),
            "CpuExecutable.__call__": lambda: executable(*arrays),
            "the Numba kernel alone": lambda: executable.kernel(executable.dims, *kernel_args,
                                                                *outputs),
        }
    except (AttributeError, ImportError, KeyError, TypeError) as e:  # the internals moved
        return f"(breakdown unavailable: {e})"
    times = {name: time_call(fn, repeat, min_time).best for name, fn in parts.items()}
    return ", ".join(f"{name} {format_seconds(t)}" for name, t in times.items())


# ------------------------------------------------------------------------------------------
# The tables
# ------------------------------------------------------------------------------------------


HAND = "hand-written Numba prange kernel"
HAND_INTO_NEW = "  the same, into np.empty_like(x)"  # a new output each call
HAND_PREALLOCATED = "  the same, preallocated output"
COPY = "memory copy (np.copyto, prealloc.)"


def bench_elementwise(timing, others: dict[str, TimedRows], plot: list[PlotPanel],
                      repeat: int, min_time: float) -> None:
    np_x = elementwise_input()
    x = jnp.asarray(np_x)
    expected = square_plus_double(np_x)
    ours = jax.jit(square_plus_double, backend="cpu")
    interpreted = jax.jit(square_plus_double, backend="interpreter")
    preallocated = np.empty_like(np_x)
    copy_target = np.empty_like(np_x)
    for name, result in (("jit cpu", ours(x)), ("jit interpreter", interpreted(x)),
                         ("hand-written", hand_fused(np_x)),
                         ("stage-1 eager", square_plus_double(x))):
        check_close(name, result, expected)
    hand_fused_into(np_x, preallocated)
    check_close("hand-written, preallocated", preallocated, expected)
    assert generated(ours, x), "the CPU backend fell back to the interpreter"

    rows: Rows = [
        ('stage2_jit jit(backend="cpu")', lambda: ours(x)),
        ("NumPy", lambda: square_plus_double(np_x)),
        (HAND, lambda: hand_fused(np_x)),
        # the baseline: the loop writing into an output NumPy allocates for each call
        (HAND_INTO_NEW, lambda: hand_fused_into(np_x, np.empty_like(np_x))),
        (HAND_PREALLOCATED, lambda: hand_fused_into(np_x, preallocated)),
        (COPY, lambda: np.copyto(copy_target, np_x)),
        ("stage-1 eager (no jit)", lambda: square_plus_double(x)),
        ('jit(backend="interpreter")', lambda: interpreted(x)),
    ]
    timed = timing(rows) + others[ELEMENTWISE_TITLE]
    print_table(ELEMENTWISE_TITLE, timed)

    moved = 2 * np_x.nbytes  # read x once, write the result once
    short = {rows[0][0]: "ours", "NumPy": "NumPy", HAND: "hand-written",
             HAND_INTO_NEW: "into a new array", HAND_PREALLOCATED: "preallocated", COPY: "copy"}
    bandwidth = ", ".join(f"{short[name]} {moved / best_of(timed, name) / 1e9:.1f}"
                          for name in short)
    print(f"  GB/s ({moved / 1e6:.0f} MB read + written per call): {bandwidth}")
    faults = {short[name]: page_faults_per_call(fn) for name, fn in rows if name in short}
    print("  minor page faults per call: "
          + ", ".join(f"{name} {n:.0f}" for name, n in faults.items()))
    extra_faults = faults["hand-written"] - faults["preallocated"]
    if extra_faults > 100:
        cost = best_of(timed, HAND) - best_of(timed, HAND_PREALLOCATED)
        print(f"  allocating the output costs the hand-written kernel {format_seconds(cost)} "
              f"per call: {extra_faults:.0f} faults, about {cost / extra_faults * 1e6:.2f} µs each")
    print(f"  ours: {dispatch_breakdown(ours, (x,), repeat, min_time)}")

    t_ours, t_numpy = best_of(timed, "stage2_jit"), best_of(timed, "NumPy")
    t_hand, t_jax = best_of(timed, HAND_INTO_NEW), best_of(timed, "JAX")
    print(f"  target NumPy / ours >= {ELEMENTWISE_VS_NUMPY}: {t_numpy / t_ours:.2f}x, "
          f"{verdict(t_numpy / t_ours >= ELEMENTWISE_VS_NUMPY)}")
    print(f"  target ours / hand-written kernel into a new NumPy array <= "
          f"{ELEMENTWISE_VS_HAND}: {t_ours / t_hand:.2f}x, "
          f"{verdict(t_ours / t_hand <= ELEMENTWISE_VS_HAND)}")
    if t_jax is None:
        print(f"  target jax.jit / ours >= {ELEMENTWISE_VS_JAX}: not measured (JAX not installed)")
    else:
        print(f"  target jax.jit / ours >= {ELEMENTWISE_VS_JAX}: {t_jax / t_ours:.2f}x, "
              f"{verdict(t_jax / t_ours >= ELEMENTWISE_VS_JAX)}")
    plot.append(speedups("x*x + x*2.0 on a 5000x5000 float32 array", timed, "NumPy",
                         skip=("  ",)))


def bench_dispatch(timing, others: dict[str, TimedRows], repeat: int, min_time: float) -> None:
    np_x = np.ones(3, np.float32)
    x = jnp.asarray(np_x)
    ours = {backend: jax.jit(add_one, backend=backend) for backend in ("cpu", "interpreter")}
    for f in ours.values():
        check_close("dispatch", f(x), np_x + 1)
    assert generated(ours["cpu"], x), "the CPU backend fell back to the interpreter"
    timed = timing([
        ('stage2_jit jit(backend="cpu")', lambda: ours["cpu"](x)),
        ('jit(backend="interpreter")', lambda: ours["interpreter"](x)),
        ("stage-1 eager (no jit)", lambda: add_one(x)),
        ("NumPy", lambda: add_one(np_x)),
    ]) + others[DISPATCH_TITLE]
    print_table(DISPATCH_TITLE, timed)
    print(f"  cpu: {dispatch_breakdown(ours['cpu'], (x,), repeat, min_time)}")
    for name, backend in (("stage2_jit", "cpu"), ("jit(backend=\"interpreter\")", "interpreter")):
        t = best_of(timed, name)
        print(f"  target <= {DISPATCH_TARGET_S * 1e6:.0f} µs per call ({backend}): "
              f"{format_seconds(t)}, {verdict(t <= DISPATCH_TARGET_S)}")


def bench_rowwise(timing, others: dict[str, TimedRows], plot: list[PlotPanel]) -> None:
    np_x, np_scale, np_shift = rowwise_inputs()
    x, scale, shift = (jnp.asarray(a) for a in (np_x, np_scale, np_shift))
    cases = (
        (SOFTMAX_TITLE, "softmax", ours_softmax, numpy_softmax, (x,), (np_x,)),
        (LAYERNORM_TITLE, "layer norm", ours_layernorm, numpy_layernorm, (x, scale, shift),
         (np_x, np_scale, np_shift)),
    )
    for title, short, fun, numpy_fun, args, np_args in cases:
        ours = jax.jit(fun, backend="cpu")
        check_close(short, ours(*args), numpy_fun(*np_args), rtol=1e-4, atol=1e-5)
        assert generated(ours, *args), f"the CPU backend fell back to the interpreter ({short})"
        timed = timing([
            ('stage2_jit jit(backend="cpu")', lambda ours=ours, args=args: ours(*args)),
            ("NumPy (stable, by hand)", lambda f=numpy_fun, a=np_args: f(*a)),
        ]) + others[title]
        print_table(title, timed)
        ratio = best_of(timed, "NumPy") / best_of(timed, "stage2_jit")
        print(f"  target NumPy / ours >= {ROWWISE_VS_NUMPY}: {ratio:.2f}x, "
              f"{verdict(ratio >= ROWWISE_VS_NUMPY)}")
        target, t_jax = ROWWISE_VS_JAX[short], best_of(timed, "JAX")
        if t_jax is None:
            print(f"  target jax.jit / ours >= {target}: not measured (JAX not installed)")
        else:
            ratio = t_jax / best_of(timed, "stage2_jit")
            print(f"  target jax.jit / ours >= {target}: {ratio:.2f}x, {verdict(ratio >= target)}")
        plot.append(speedups(f"{short} over the rows of a 4096x1024 float32 array", timed,
                             "NumPy"))


def bench_mlp(timing, others: dict[str, TimedRows], plot: list[PlotPanel], repeat: int,
              min_time: float, diagnostic: TimedRows) -> None:
    np_params, np_x, np_labels = mlp_problem()
    params = [tuple(jnp.asarray(p) for p in layer) for layer in np_params]
    x, labels = jnp.asarray(np_x), jnp.asarray(np_labels)
    eager = stage1_autodiff.value_and_grad(mlp_loss(stage1_autodiff.numpy, stage1_autodiff.nn))
    value_and_grad = jax.value_and_grad(mlp_loss(jnp, jax.nn))
    ours = jax.jit(value_and_grad, backend="cpu")
    interpreted = jax.jit(value_and_grad, backend="interpreter")
    ref_loss, ref_grads = stage1_reference_grads()
    for name, f in (("jit cpu", ours), ("jit interpreter", interpreted)):
        loss, grads = f(params, x, labels)
        check_grads(name, loss, grads, ref_loss, ref_grads)
    assert generated(ours, params, x, labels), "the CPU backend fell back to the interpreter"

    np_loss, np_grads, hs, ds = numpy_backprop(np_params, np_x, np_labels)
    check_grads("NumPy by hand", np_loss, np_grads, ref_loss, ref_grads)

    timed = timing([('stage2_jit jit(backend="cpu")', lambda: ours(params, x, labels))])
    timed += diagnostic + timing([
        ("stage-1 eager value_and_grad", lambda: eager(params, x, labels)),
        ('jit(backend="interpreter")', lambda: interpreted(params, x, labels)),
        ("NumPy, backprop by hand", lambda: numpy_value_and_grad(np_params, np_x, np_labels)),
        ("  its 8 matrix products alone", lambda: numpy_matmuls(np_params, hs, ds)),
    ]) + others[MLP_TITLE]
    print_table(MLP_TITLE, timed)
    print(f"  ours: {dispatch_breakdown(ours, (params, x, labels), repeat, min_time)}")
    t_ours, t_eager, t_jax = (best_of(timed, p) for p in ("stage2_jit", "stage-1", "JAX"))
    print(f"  target stage-1 eager / ours >= {MLP_VS_EAGER}: {t_eager / t_ours:.2f}x, "
          f"{verdict(t_eager / t_ours >= MLP_VS_EAGER)}")
    if t_jax is None:
        print(f"  target ours / JAX <= {MLP_VS_JAX}: not measured (JAX not installed)")
    else:
        print(f"  target ours / JAX <= {MLP_VS_JAX}: {t_ours / t_jax:.2f}x, "
              f"{verdict(t_ours / t_jax <= MLP_VS_JAX)}")
    plot.append(speedups("MLP 784-512-512-10 training step, batch 256", timed, "stage-1",
                         skip=("  ",)))


# ------------------------------------------------------------------------------------------
# Compile time, in fresh processes
# ------------------------------------------------------------------------------------------

# Runs in a fresh interpreter; prints one line of JSON. Process start-up and imports are not
# timed; numba's import is timed apart (stage2_jit imports it only when a kernel is loaded).
# With {init_numba}, a trivial njit function is called first, so that Numba's one-time set-up
# of its compiler (the first compile or cache load of any function in a process imports and
# registers its typing and lowering modules) is timed apart from the kernel's compile or load.
COMPILE_CHILD = """
import json, time
import numpy as np
import stage2_jit as jax, stage2_jit.numpy as jnp
from stage2_jit import kernel_cache, tiers
start = time.perf_counter()
import numba
numba_import = time.perf_counter() - start
numba_init = 0.0
if {init_numba}:
    start = time.perf_counter()
    numba.njit(lambda: 0)()
    numba_init = time.perf_counter() - start

def tanh(x):
    y = jnp.exp(-2.0 * x)
    return (1.0 - y) / (1.0 + y)

f = jax.jit(tanh, backend="cpu")
x = jnp.asarray(np.linspace(-3, 3, {size}, dtype=np.float32))
start = time.perf_counter()
y = f(x)
first = time.perf_counter() - start
tiers.wait()  # the kernel, compiling in the background (tiers.py) while the first call ran
ready = time.perf_counter() - start
start = time.perf_counter()
f(x)
second = time.perf_counter() - start
np.testing.assert_allclose(np.asarray(y), np.tanh(np.asarray(x)), rtol=1e-5, atol=1e-6)
stats = [m.program.stats for m in kernel_cache._modules.values()]
print(json.dumps(dict(numba_import=numba_import, numba_init=numba_init, first=first,
                      ready=ready, second=second, hits=sum(s.cache_hits.total() for s in stats),
                      misses=sum(s.cache_misses.total() for s in stats),
                      source=f.lower(x).as_text())))
"""

JAX_COMPILE_CHILD = """
import json, time
import numpy as np
import jax
x = jax.device_put(np.linspace(-3, 3, {size}, dtype=np.float32))

def tanh(x):
    y = jax.numpy.exp(-2.0 * x)
    return (1.0 - y) / (1.0 + y)

f = jax.jit(tanh)
start = time.perf_counter()
f(x).block_until_ready()
first = time.perf_counter() - start
print(json.dumps(dict(first=first)))
"""


def run_child(code: str, cache: str, init_numba: bool = False, tiered: bool = True) -> dict:
    return run_python_child(code.format(size=TANH_SIZE, init_numba=init_numba),
                            dict(JAX_FROM_NUMPY_CACHE_DIR=cache,
                                 JAX_FROM_NUMPY_TIERED="1" if tiered else "0"),
                            [stage1_autodiff, jax])


def bench_compile(rounds: int) -> None:
    """Cold and warm first calls in fresh processes, each round with a new empty cache
    folder; then the same with Numba's one-time set-up done before the timed call; then
    cold and warm with tiered execution off (the kernel compiled before the first call)."""
    kinds = ("cold", "warm", "cold+", "warm+", "cold-", "warm-")
    runs: dict[str, list[dict]] = {kind: [] for kind in kinds}
    jax_first = []
    for _ in range(rounds):
        for suffix, init_numba, tiered in (("", False, True), ("+", True, False),
                                           ("-", False, False)):
            with tempfile.TemporaryDirectory(prefix="bench_stage2_cache_") as cache:
                for kind in ("cold", "warm"):
                    runs[kind + suffix].append(run_child(COMPILE_CHILD, cache, init_numba,
                                                         tiered))
        if installed("jax"):
            with tempfile.TemporaryDirectory(prefix="bench_stage2_jax_") as cache:
                jax_first.append(run_child(JAX_COMPILE_CHILD, cache)["first"])
    assert "# generated source (cpu)" in runs["cold"][0]["source"], "the CPU backend fell back"
    for kind, results in runs.items():
        for r in results:
            cold = kind.startswith("cold")
            assert (r["misses"] >= 1 and r["hits"] == 0) if cold else \
                (r["hits"] >= 1 and r["misses"] == 0), f"{kind}: the kernel cache was not used"

    def line(name: str, times: list[float]) -> str:
        return (f"  {name:40} {format_seconds(min(times)):>10} "
                f"{format_seconds(float(np.median(times))):>10}")

    def firsts(kind: str) -> list[float]:
        return [r["first"] for r in runs[kind]]

    print(f"\ncompile time of the course tanh, (1 - exp(-2x)) / (1 + exp(-2x)), on a "
          f"({TANH_SIZE},) float32 array: the first call in a fresh process")
    print(f"  {'':40} {'best':>10} {'median':>10}   ({rounds} processes each)")
    print(line("cold: empty kernel cache", firsts("cold")))
    print(line("warm: kernel from the disk cache", firsts("warm")))
    print(line("  cold: the kernel ready after", [r["ready"] for r in runs["cold"]]))
    print(line("  warm: the kernel ready after", [r["ready"] for r in runs["warm"]]))
    print(line("  cold, tiers off (compiled first)", firsts("cold-")))
    print(line("  warm, tiers off (loaded first)", firsts("warm-")))
    print(line("  cold, tiers off, Numba set up before", firsts("cold+")))
    print(line("  Numba's set-up (a trivial njit call)", [r["numba_init"] for r in
                                                         runs["cold+"] + runs["warm+"]]))
    print(line("  numba's import (before, not timed)", [r["numba_import"] for r in runs["cold"]]))
    print(line("second call (cached in the process)", [r["second"] for r in runs["cold"]]))
    if jax_first:
        print(line("JAX jax.jit first call", jax_first))
    else:
        print(f"  {'JAX jax.jit first call':40} not installed")
    t_cold, t_warm = min(firsts("cold")), min(firsts("warm"))
    print(f"  target cold <= {COLD_COMPILE_S} s: {format_seconds(t_cold)}, "
          f"{verdict(t_cold <= COLD_COMPILE_S)}")
    print(f"  target warm <= {WARM_COMPILE_S} s: {format_seconds(t_warm)}, "
          f"{verdict(t_warm <= WARM_COMPILE_S)}")


# The tour's two stage-2 programs, first called in a fresh process with an empty kernel cache:
# x*x + x*2.0 on 5000x5000, then the MLP training step jit(value_and_grad) (2-64-64-4,
# batch 1024, log_softmax cross-entropy against one_hot labels), each after the last one's
# kernel is ready. Imports and making the data are not timed.
TOUR_CHILD = """
import json, time
import numpy as np
{imports}
rng = np.random.default_rng(0)
x = jnp.asarray(rng.random((5000, 5000), dtype=np.float32))
sizes = [2, 64, 64, 4]
params = [(jnp.asarray(rng.standard_normal((m, n)).astype(np.float32) / np.sqrt(m)),
           jnp.asarray(np.zeros(n, np.float32))) for m, n in zip(sizes[:-1], sizes[1:])]
inputs = jnp.asarray(rng.standard_normal((1024, 2)).astype(np.float32))
labels = jnp.asarray(rng.integers(0, 4, 1024).astype(np.int32))

def loss_fn(params, inputs, labels):
    h = inputs
    for w, b in params[:-1]:
        h = jnp.tanh(h @ w + b)
    w, b = params[-1]
    log_probs = jax.nn.log_softmax(h @ w + b)
    return -jnp.mean(jnp.sum(log_probs * jax.nn.one_hot(labels, 4), axis=1))

def step(params, inputs, labels):
    loss, grads = jax.value_and_grad(loss_fn)(params, inputs, labels)
    return loss, jax.tree_util.tree_map(lambda p, g: p - 0.5 * g, params, grads)

out = {{}}
for name, f, args in (("elementwise", lambda x: x * x + x * 2.0, (x,)),
                      ("step", step, (params, inputs, labels))):
    jitted = jax.jit(f)
    start = time.perf_counter()
    first = jax.block_until_ready(jitted(*args))
    out[name] = time.perf_counter() - start
    {wait}
    later = jax.block_until_ready(jitted(*args))
    out[name + " same"] = all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in
                              zip(jax.tree_util.tree_leaves(first),
                                  jax.tree_util.tree_leaves(later)))
print(json.dumps(out))
"""
TOUR_OURS = dict(imports="import stage2_jit as jax, stage2_jit.numpy as jnp\n"
                         "from stage2_jit import tiers", wait="tiers.wait()")
TOUR_JAX = dict(imports="import jax, jax.numpy as jnp", wait="")


def bench_tour_first_calls(rounds: int) -> None:
    """The first calls of the tour's stage-2 programs, in fresh processes: ours tiered (the
    default), ours with the kernels compiled first, and JAX."""
    runs: dict[str, list[dict]] = {"tiered": [], "compiled first": [], "jax": []}
    for _ in range(rounds):
        for kind, tiered in (("tiered", "1"), ("compiled first", "0")):
            with tempfile.TemporaryDirectory(prefix="bench_stage2_tour_") as cache:
                runs[kind].append(run_python_child(
                    TOUR_CHILD.format(**TOUR_OURS), dict(JAX_FROM_NUMPY_CACHE_DIR=cache,
                                                         JAX_FROM_NUMPY_TIERED=tiered),
                    [stage1_autodiff, jax]))
        if installed("jax"):
            runs["jax"].append(run_python_child(TOUR_CHILD.format(**TOUR_JAX), {}, []))
    assert all(r["elementwise same"] and r["step same"] for r in runs["tiered"]), \
        "a first call's bits differ from the kernel's"
    print(f"\nthe tour's programs: the first call in a fresh process, empty kernel cache "
          f"(best, and median in brackets, of {rounds} processes)")
    print(f"  {'':36} {'x*x + x*2.0, 5000²':>22} {'MLP step, batch 1024':>22}")
    for kind, name in (("tiered", "ours, tiered (the default)"),
                       ("compiled first", "ours, tiers off (compiled first)"),
                       ("jax", "JAX jax.jit")):
        if not runs[kind]:
            print(f"  {name:36} not installed")
            continue
        cells = [f"{format_seconds(min(t))} ({format_seconds(float(np.median(t)))})"
                 for t in ([r[p] for r in runs[kind]] for p in ("elementwise", "step"))]
        print(f"  {name:36} {cells[0]:>22} {cells[1]:>22}")
    for program in ("elementwise", "step"):
        best = min(r[program] for r in runs["tiered"])
        print(f"  target {program} first call <= {COLD_COMPILE_S} s: {format_seconds(best)}, "
              f"{verdict(best <= COLD_COMPILE_S)}")


# ------------------------------------------------------------------------------------------


def numba_summary() -> str:
    hand_fused(np.ones((2, 2), np.float32))  # compiles it, and starts the thread pool
    return (f"numba {numba.__version__} ({numba.threading_layer()} threading layer, "
            f"{numba.get_num_threads()} threads)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="few, short repetitions (a smoke test, not a measurement); "
                             "writes no plot")
    add_malloc_options(parser)
    args = parser.parse_args(argv)
    repeat, min_time, rounds = (2, 0.005, 1) if args.quick else (7, 0.3, 3)
    keep_memory = args.tuned_malloc and keep_freed_memory()

    def timing(rows: Rows) -> TimedRows:
        return time_rows(rows, repeat=repeat, min_time=min_time)

    load_at_start = os.getloadavg()[0]
    summary = (f"{machine_summary()}; {numba_summary()}; "
               f"{malloc_summary(keep_memory)}")
    print(f"stage 2 benchmark{' (--quick)' if args.quick else ''}: {summary}")
    if load_at_start > 0.5:
        print("NOTE: the machine is busy (load average above 0.5): Numba's and PyTorch's "
              "threads slow down when a core is taken; the figures are unreliable")
    print("best and median of the repeats, per call; ours / this > 1 means ours is slower")
    others = other_framework_rows(repeat, min_time, keep_memory)
    coretype = time_coretype_in_child(repeat, min_time, keep_memory)
    plot: list[PlotPanel] = []
    bench_elementwise(timing, others, plot, repeat, min_time)
    bench_dispatch(timing, others, repeat, min_time)
    bench_rowwise(timing, others, plot)
    bench_mlp(timing, others, plot, repeat, min_time, coretype)
    bench_compile(rounds)
    bench_tour_first_calls(rounds)
    if args.quick:
        print("\n--quick: no plot written (its times are not measurements)")
    else:
        write_course_plot(plot, "bench_stage2", "Stage 2: jit(backend=\"cpu\") against NumPy "
                          "and JAX", "stage2_jit", load_at_start,
                          note=f"Numba's {numba.threading_layer()} threading layer, "
                          f"{numba.get_num_threads()} threads")


if __name__ == "__main__":
    main()
