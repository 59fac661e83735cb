"""Stage 2 GPU benchmark: the ``cuda`` backend (issue 4) against ceilings measured on the same GPU.

1. ``x*x + x*2.0`` over a 5000×5000 float32 array: at least 70% of the bandwidth of a plain
   device-to-device copy (bytes: the array read once and the result written once).
2. ``jnp.sum(x, axis=1)`` and ``jax.nn.softmax(x, axis=1)`` over an (8192, 4096) float32 array:
   at least 60% of the copy's bandwidth (the sum reads x; the softmax reads x and writes its
   result, once each).
3. A float32 matrix product ``x @ y``, 4096×4096×4096: at least 20% of cuBLAS float32 (through
   PyTorch, else CuPy, with TF32 off), counting 2·n³ floating-point operations.
4. A cached jitted ``x + 1.0`` on a 16-element GPU array, end to end (the call, then
   ``block_until_ready``): at most 50 µs per call.

The ceilings are measured in the same run: the copy with Numba (``dst.copy_to_device(src)``
between two device arrays, bytes read and written), cuBLAS in a child process of its own. Where
JAX is installed with a GPU backend, ``jax.jit`` runs the same programs in another child
process (no target: for comparison only).

Every result is checked against NumPy on fresh random inputs (the seed is printed; ``--seed``
repeats a run) before it is timed. Ours are timed with CUDA events recorded on Numba's default
stream, where the generated kernels run, around one call (its launch overhead included), after
warm-up calls: the median of many calls. The references (cuBLAS, ``jax.jit``) and the
"back to back" figures are timed by the wall clock over calls queued one after another and
waited for at the end: throughput, as JAX's asynchronous dispatch gives it.

``--smoke``: tiny sizes and a single timed call of each, to check the script under Numba's
CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``). The checks against NumPy still run; the simulator's
events record no time, so ``perf_counter`` times the calls there, and every time, ratio and
verdict it prints is meaningless.

Run from the repository root (``benchmarks/run_gpu_check.sh`` does it on a lent GPU machine):

    PYTHONPATH=stage1_autodiff/src:stage2_jit/src python benchmarks/bench_stage2_gpu.py
    NUMBA_ENABLE_CUDASIM=1 PYTHONPATH=stage1_autodiff/src:stage2_jit/src \\
        python benchmarks/bench_stage2_gpu.py --smoke
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.util
import multiprocessing
import os
import platform
import re
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any, NamedTuple

import numpy as np
import stage2_jit.numpy as jnp
from common import format_seconds  # benchmarks/common.py
from stage2_jit.devices import cuda_unavailable_reason

import stage2_jit as jax

# Targets (from issue 4); a verdict is printed for each, never tuned to pass.
ELEMENTWISE_OF_COPY = 0.70  # of the copy's bandwidth, at least
ROWWISE_OF_COPY = 0.60
MATMUL_OF_CUBLAS = 0.20  # of cuBLAS float32's TFLOP/s, at least
TINY_CALL_S = 50e-6  # per call, at most


class Sizes(NamedTuple):
    elementwise: tuple[int, int]
    rows: tuple[int, int]
    matmul: int  # n of the n×n×n product
    tiny: int
    copy_elements: int  # float32 elements in each buffer of the copy
    repeat: int  # timed calls of each case (matmul: fewer, see for_matmul)
    warmup: int
    back_to_back: int  # calls queued per round of a back-to-back timing
    rounds: int  # rounds of back-to-back and tiny-call timings
    tiny_calls: int  # calls per round of the tiny case

    def for_matmul(self) -> Sizes:
        """A fifth of the calls: a slow matrix product could take a second a call."""
        return self._replace(repeat=max(1, self.repeat // 5),
                             back_to_back=max(1, self.back_to_back // 5))

    def describe(self) -> str:
        (m, n), (r, c) = self.elementwise, self.rows
        return (f"x*x + x*2.0 over {m}x{n}, rows {r}x{c}, matmul {self.matmul}^3, "
                f"x + 1.0 on {self.tiny} elements")


FULL = Sizes(elementwise=(5000, 5000), rows=(8192, 4096), matmul=4096, tiny=16,
             copy_elements=1 << 26, repeat=50, warmup=3, back_to_back=20, rounds=5,
             tiny_calls=2000)
# Under the simulator every CUDA thread is an OS thread and every syncthreads a barrier
# between them: a reduction over 64 rows takes seconds, a 32x32x32 matrix product 15 s.
SMOKE = Sizes(elementwise=(64, 32), rows=(8, 32), matmul=8, tiny=16, copy_elements=1 << 10,
              repeat=1, warmup=0, back_to_back=1, rounds=1, tiny_calls=1)

CASE_TITLES = {
    "elementwise": "x*x + x*2.0",
    "sum": "jnp.sum(x, axis=1)",
    "softmax": "jax.nn.softmax(x, axis=1)",
    "matmul": "x @ y, float32",
    "tiny": "x + 1.0, end to end",
}


# ------------------------------------------------------------------------------------------
# The programs, written once for ours and for JAX's numpy and nn modules
# ------------------------------------------------------------------------------------------


def programs(jnp_module: Any, nn_module: Any) -> dict[str, Callable]:
    return {
        "elementwise": lambda x: x * x + x * 2.0,
        "sum": lambda x: jnp_module.sum(x, axis=1),
        "softmax": lambda x: nn_module.softmax(x, axis=1),
        "matmul": lambda x, y: x @ y,
        "tiny": lambda x: x + 1.0,
    }


class Problem(NamedTuple):
    """A case's float32 inputs, NumPy's result and how close ours must be."""
    inputs: tuple[np.ndarray, ...]
    expected: np.ndarray
    rtol: float
    atol: float


def numpy_softmax(x: np.ndarray) -> np.ndarray:
    """In float64, shifted by each row's max so that exp never overflows."""
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def make_problem(name: str, sizes: Sizes, seed: int) -> Problem:
    """The same inputs for the same seed, in this process and in the reference children.

    Tolerances: a float32 sum against a float64 one (a row of 4096 standard normals sums to
    about 64, and a GPU adds in another order); the softmax against float64 too; the product
    against NumPy's float32 one, whose entries, sums of n products of standard normals, are
    about sqrt(n) in size, so that another order of additions changes them by a few roundings
    of that size. Each is about 30 times what JAX's results were seen to need on the CPU."""
    rng = np.random.default_rng([seed, list(CASE_TITLES).index(name)])

    def normal(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape, dtype=np.float32)

    if name == "elementwise":
        x = normal(*sizes.elementwise)
        return Problem((x,), x * x + x * np.float32(2.0), rtol=1e-5, atol=1e-5)
    if name == "sum":
        x = normal(*sizes.rows)
        return Problem((x,), x.sum(axis=1, dtype=np.float64), rtol=1e-5, atol=1e-3)
    if name == "softmax":
        x = normal(*sizes.rows)
        return Problem((x,), numpy_softmax(x), rtol=1e-4, atol=1e-9)
    if name == "matmul":
        n = sizes.matmul
        x, y = normal(n, n), normal(n, n)
        return Problem((x, y), x @ y, rtol=1e-4, atol=1e-4 * np.sqrt(n))
    x = normal(sizes.tiny)
    return Problem((x,), x + np.float32(1.0), rtol=1e-6, atol=1e-6)


def check(name: str, got: Any, problem: Problem) -> None:
    """A benchmark of a wrong computation is worthless: results must match first."""
    got = np.asarray(got)
    assert got.dtype == np.float32, f"{name}: result is {got.dtype}, not float32"
    assert got.shape == problem.expected.shape, \
        f"{name}: result has shape {got.shape}, NumPy's {problem.expected.shape}"
    np.testing.assert_allclose(got, problem.expected, rtol=problem.rtol, atol=problem.atol,
                               err_msg=f"{name}: differs from NumPy")


def moved(name: str, problem: Problem) -> float:
    """Bytes a case must move at least (bandwidth cases) or operations it does (matmul)."""
    x = problem.inputs[0]
    if name == "elementwise" or name == "softmax":
        return 2.0 * x.nbytes  # read once, written once
    if name == "sum":
        return float(x.nbytes)  # read once; the 8192 sums written are negligible
    if name == "matmul":
        return 2.0 * x.shape[0] ** 3
    return 0.0


# ------------------------------------------------------------------------------------------
# Timing
# ------------------------------------------------------------------------------------------


class EventClock:
    """Seconds of one call of ``fn``, from CUDA events recorded on Numba's default stream
    before and after it. An idle GPU passes the first event at once, so the time runs from the
    start of the call (Python's work before the first launch included) to the end of its last
    kernel. In the simulator, whose events record no time, ``perf_counter`` around the call
    and a synchronize instead."""

    def __init__(self, cuda: Any, events: bool) -> None:
        self.cuda = cuda
        self.events = events

    def once(self, fn: Callable[[], object]) -> float:
        if not self.events:
            start = time.perf_counter()
            fn()
            self.cuda.synchronize()
            return time.perf_counter() - start
        start, end = self.cuda.event(), self.cuda.event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3  # elapsed_time is in milliseconds

    def median(self, fn: Callable[[], object], repeat: int, warmup: int) -> float:
        for _ in range(warmup):
            fn()
        self.cuda.synchronize()
        return statistics.median(self.once(fn) for _ in range(repeat))


def back_to_back(call: Callable[[], Any], wait: Callable[[Any], object], sizes: Sizes) -> float:
    """Seconds per call of ``sizes.back_to_back`` calls queued one after another, then
    waited for (``wait`` on the last result): while the GPU runs one call, Python queues the
    next. The median of ``sizes.rounds``, after ``sizes.warmup`` calls."""
    number, rounds = sizes.back_to_back, sizes.rounds
    for _ in range(sizes.warmup):
        wait(call())
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(number):
            result = call()
        wait(result)
        times.append((time.perf_counter() - start) / number)
    return statistics.median(times)


def each_waited(call: Callable[[], Any], sizes: Sizes) -> float:
    """Seconds per call, each call's result waited for (``block_until_ready``) before the
    next call: the end-to-end latency of a small call. ``sizes.tiny_calls`` calls a round,
    the median of ``sizes.rounds``, after ``sizes.warmup`` calls."""
    number, rounds = sizes.tiny_calls, sizes.rounds
    for _ in range(sizes.warmup):
        call().block_until_ready()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(number):
            call().block_until_ready()
        times.append((time.perf_counter() - start) / number)
    return statistics.median(times)


def block(result: Any) -> None:
    result.block_until_ready()


# ------------------------------------------------------------------------------------------
# Ceilings and references
# ------------------------------------------------------------------------------------------


def copy_bandwidth(cuda: Any, clock: EventClock, sizes: Sizes) -> float:
    """Bytes per second of a device-to-device copy (read and written) between two buffers
    larger than the GPU's L2 cache: what a kernel that streams through memory can hope for."""
    host = np.arange(sizes.copy_elements, dtype=np.float32)
    src, dst = cuda.to_device(host), cuda.device_array_like(host)
    seconds = clock.median(lambda: dst.copy_to_device(src), sizes.repeat, sizes.warmup)
    np.testing.assert_array_equal(dst.copy_to_host(), host, err_msg="the copy is wrong")
    return 2.0 * host.nbytes / seconds


def cublas_reference(sizes: Sizes, seed: int, device: str = "cuda") -> tuple[str, float] | str:
    """(library, seconds) of a float32 matrix product through cuBLAS, PyTorch's else CuPy's,
    checked against NumPy first; or why there is none. Runs in a child process.
    ``device="cpu"`` runs PyTorch's CPU product instead: a check of this function where there
    is no GPU."""
    problem = make_problem("matmul", sizes, seed)
    missing = []
    if importlib.util.find_spec("torch") is not None:
        torch = importlib.import_module("torch")
        missing.append(f"PyTorch {torch.__version__} has no CUDA")
        if device != "cuda" or torch.cuda.is_available():
            torch.backends.cuda.matmul.allow_tf32 = False  # true float32, not TF32
            x, y = (torch.from_numpy(a).to(device) for a in problem.inputs)
            check("PyTorch matmul", (x @ y).cpu().numpy(), problem)
            sync = torch.cuda.synchronize if device == "cuda" else lambda: None
            seconds = back_to_back(lambda: x @ y, lambda _: sync(), sizes)
            return f"cuBLAS (PyTorch {torch.__version__})", seconds
    else:
        missing.append("PyTorch is not installed")
    if importlib.util.find_spec("cupy") is not None:
        cupy = importlib.import_module("cupy")
        missing.append(f"CuPy {cupy.__version__} has no CUDA")
        if cupy.cuda.is_available():
            x, y = (cupy.asarray(a) for a in problem.inputs)
            check("CuPy matmul", cupy.asnumpy(x @ y), problem)
            seconds = back_to_back(lambda: x @ y, lambda _: cupy.cuda.Device().synchronize(),
                                   sizes)
            return f"cuBLAS (CuPy {cupy.__version__})", seconds
    else:
        missing.append("CuPy is not installed")
    return f"no cuBLAS reference ({'; '.join(missing)})"


def jax_reference(sizes: Sizes, seed: int, platform_name: str = "gpu") -> dict[str, float] | str:
    """Seconds per call of ``jax.jit`` of each program on JAX's GPU, checked against NumPy
    first (back to back; the tiny case each call waited for); or why there are none. Runs in a
    child process. ``platform_name="cpu"`` checks this function where there is no GPU."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # leave the GPU's memory
    import jax as real_jax
    try:
        device = real_jax.devices(platform_name)[0]
    except RuntimeError as e:
        return f"JAX {real_jax.__version__} has no GPU backend here ({str(e).splitlines()[0]})"
    real_jax.config.update("jax_default_matmul_precision", "highest")  # float32, not TF32
    seconds = {}
    for name, fun in programs(real_jax.numpy, real_jax.nn).items():
        problem = make_problem(name, sizes, seed)
        f = real_jax.jit(fun)
        args = [real_jax.device_put(a, device) for a in problem.inputs]
        check(f"jax.jit {name}", f(*args), problem)
        if name == "tiny":
            seconds[name] = each_waited(lambda: f(*args), sizes)
        else:
            seconds[name] = back_to_back(lambda: f(*args), block, sizes)
    seconds["version"] = real_jax.__version__
    return seconds


def in_child(fn: Callable, *args: Any) -> Any:
    """``fn(*args)`` in a fresh process: another library's CUDA context, memory pool and
    threads cannot disturb ours, and a library that fails to load or crashes takes only its
    own figures with it."""
    context = multiprocessing.get_context("spawn")  # a fresh interpreter, nothing inherited
    try:
        with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
            return pool.submit(fn, *args).result()
    except Exception as e:  # noqa: BLE001 -- reported in place of the figures
        return f"failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


# ------------------------------------------------------------------------------------------
# Our cases
# ------------------------------------------------------------------------------------------


class Row(NamedTuple):
    case: str
    ours: str
    reference: str
    ratio: str
    target: str
    verdict: str


class Ours(NamedTuple):
    """What a case measured of ours: seconds of one call (events) and back to back."""
    one_call: float
    back_to_back: float


def not_generated(f: Any, args: list) -> str | None:
    """Why ``f`` did not become CUDA kernels for ``args``, or None when it did (otherwise it
    runs on a fallback, and its time says nothing of the CUDA backend)."""
    text = f.lower(*args).as_text()
    if "# generated source (cuda)" not in text:
        return "not lowered for the cuda backend"
    found = re.search(r"Not generated: .*", text)
    return found.group(0) if found else None


def run_ours(name: str, problem: Problem, gpu: Any, clock: EventClock,
             sizes: Sizes) -> Ours | str:
    """Checks ours against NumPy, then times it; or says why it was not timed."""
    f = jax.jit(programs(jnp, jax.nn)[name])
    args = [jax.device_put(a, gpu) for a in problem.inputs]
    result = f(*args)
    assert gpu in result.devices(), f"{name}: the result is on {result.devices()}, not the GPU"
    check(f"ours {name}", result, problem)
    fallback = not_generated(f, args)
    if fallback is not None:
        return fallback
    if name == "tiny":
        seconds = each_waited(lambda: f(*args), sizes)
        ours = Ours(seconds, seconds)
    else:
        if name == "matmul":
            sizes = sizes.for_matmul()
        one_call = clock.median(lambda: f(*args), sizes.repeat, sizes.warmup)
        ours = Ours(one_call, back_to_back(lambda: f(*args), block, sizes))
    # The first call launched through Numba's dispatcher, later ones the trimmed path
    # (stage2_jit/cuda_launch.py): check a later one too.
    check(f"ours {name}, after the timed calls", f(*args), problem)
    return ours


def gigabytes_per_second(bytes_per_second: float) -> str:
    value = bytes_per_second / 1e9
    return f"{value:.0f} GB/s" if value >= 10 else f"{value:.3g} GB/s"


def rate(name: str, amount: float, seconds: float) -> str:
    """TFLOP/s for the matmul, GB/s for the others."""
    if name == "matmul":
        return f"{amount / seconds / 1e12:.3g} TFLOP/s"
    return gigabytes_per_second(amount / seconds)


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def reference_for(name: str, amount: float, copy_bps: float,
                  cublas: tuple[str, float] | str) -> tuple[str, float | None, float, str]:
    """A bandwidth or matmul case's (reference as text, its rate or None when it is missing,
    the fraction of it to reach, the target as text)."""
    if name != "matmul":
        fraction = ELEMENTWISE_OF_COPY if name == "elementwise" else ROWWISE_OF_COPY
        return (f"copy {gigabytes_per_second(copy_bps)}", copy_bps, fraction,
                f">= {fraction:.2f} x copy")
    target = f">= {MATMUL_OF_CUBLAS:.2f} x cuBLAS"
    if isinstance(cublas, str):
        return cublas, None, MATMUL_OF_CUBLAS, target
    library, seconds = cublas
    return f"{library} {rate(name, amount, seconds)}", amount / seconds, MATMUL_OF_CUBLAS, target


def target_row(name: str, ours: Ours | str, amount: float, copy_bps: float,
               cublas: tuple[str, float] | str) -> Row:
    """The row that judges a case against its target."""
    case = CASE_TITLES[name]
    if name == "tiny":
        target = f"<= {format_seconds(TINY_CALL_S)}"
        if isinstance(ours, str):
            return Row(case, ours, "", "", target, "MISSED")
        return Row(case, f"{format_seconds(ours.one_call)} per call", "", "", target,
                   verdict(ours.one_call <= TINY_CALL_S))
    reference, reference_rate, fraction, target = reference_for(name, amount, copy_bps, cublas)
    if isinstance(ours, str):
        return Row(case, ours, reference, "", target, "MISSED")
    ours_text = f"{rate(name, amount, ours.one_call)} ({format_seconds(ours.one_call)})"
    if reference_rate is None:
        return Row(case, ours_text, reference, "", target, "not measured")
    ratio = amount / ours.one_call / reference_rate
    return Row(case, ours_text, reference, f"{ratio:.2f}", target, verdict(ratio >= fraction))


def jax_row(name: str, ours: Ours | str, amount: float, jax_seconds: dict[str, float]) -> Row:
    """Ours against ``jax.jit``, both timed back to back (the tiny case: each call waited
    for); ratio above 1: ours is faster. No target."""
    case = f"  {CASE_TITLES[name]} vs jax.jit"
    theirs = jax_seconds[name]
    if name == "tiny":
        reference = f"jax.jit {format_seconds(theirs)}"
    else:
        reference = f"jax.jit {rate(name, amount, theirs)}"
    if isinstance(ours, str):
        return Row(case, "not timed", reference, "", "none", "")
    if name == "tiny":
        ours_text = format_seconds(ours.back_to_back)
    else:
        ours_text = rate(name, amount, ours.back_to_back)
    return Row(case, ours_text, reference, f"{theirs / ours.back_to_back:.2f}", "none", "")


def print_table(rows: list[Row]) -> None:
    header = Row("case", "ours", "ceiling / reference", "ratio", "target", "verdict")
    widths = [max(len(row[k]) for row in [header, *rows]) for k in range(len(header))]
    for row in [header, *rows]:
        print("  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


# ------------------------------------------------------------------------------------------


def gpu_summary(cuda: Any, simulator: bool) -> str:
    numba = importlib.import_module("numba")
    versions = (f"python {platform.python_version()}, numpy {np.__version__}, "
                f"numba {numba.__version__}")
    if importlib.util.find_spec("numba_cuda") is not None:
        versions += f", numba-cuda {importlib.import_module('numba_cuda').__version__}"
    if simulator:
        return f"Numba's CUDA simulator; {versions}"
    device = cuda.get_current_device()
    name = device.name.decode() if isinstance(device.name, bytes) else device.name
    cc = ".".join(map(str, device.compute_capability))
    return f"{name} (compute capability {cc}); {versions}"


def progress(name: str, amount: float, ours: Ours | str) -> str:
    """One line as soon as a case is measured: a run stopped by its time limit keeps them."""
    title = CASE_TITLES[name]
    if isinstance(ours, str):
        return f"  {title}: {ours}"
    if name == "tiny":
        return f"  {title}: {format_seconds(ours.one_call)} per call"
    return (f"  {title}: one call {format_seconds(ours.one_call)} "
            f"({rate(name, amount, ours.one_call)}); back to back "
            f"{format_seconds(ours.back_to_back)} per call "
            f"({rate(name, amount, ours.back_to_back)})")


def measure_ours(sizes: Sizes, seed: int,
                 simulator: bool) -> tuple[float, dict[str, Ours | str], dict[str, float], bool]:
    """(the copy's bytes per second, each case's figures or why it has none, each case's bytes
    or operations, whether every check passed)."""
    from numba import cuda
    clock = EventClock(cuda, events=not simulator)
    gpu = jax.devices("gpu")[0]
    copy_bps = copy_bandwidth(cuda, clock, sizes)
    print(f"  copy: {gigabytes_per_second(copy_bps)} ({sizes.copy_elements * 4:,} bytes read "
          f"and as many written)")
    ours, amounts, passed = {}, {}, True
    for name in CASE_TITLES:
        problem = make_problem(name, sizes, seed)
        amounts[name] = moved(name, problem)
        try:  # a one-shot run on a lent GPU should report every case it can
            ours[name] = run_ours(name, problem, gpu, clock, sizes)
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            ours[name] = f"failed: {type(e).__name__}"
            passed = False
        print(progress(name, amounts[name], ours[name]))
    return copy_bps, ours, amounts, passed and pool_check(gpu)


def pool_check(gpu: Any) -> bool:
    """The caching allocator on this GPU: a dead result's device memory is lent to the next
    call, and calls in a loop leave the bytes in use and the pool's size as they were."""
    f = jax.jit(lambda x: x * 2.0 + 1.0, backend="cuda")
    x = jax.device_put(np.ones((256, 256), np.float32), gpu)

    def address(a: Any) -> int:  # the simulator's device arrays have no CUDA interface
        buffer = a._buffer
        if hasattr(buffer, "__cuda_array_interface__"):
            return buffer.__cuda_array_interface__["data"][0]
        return buffer._ary.ctypes.data

    first = f(x)
    kept = address(first)
    del first
    gc.collect()
    reused = address(f(x)) == kept
    gc.collect()
    before = gpu.memory_stats()
    for _ in range(100):
        f(x)
    gc.collect()
    after = gpu.memory_stats()
    steady = (after["bytes_in_use"], after["pool_bytes"]) == \
        (before["bytes_in_use"], before["pool_bytes"])
    print(f"  device pool: a dead result's memory lent again: {reused}; 100 calls leave bytes "
          f"in use and pool bytes as they were: {steady} ({after['pool_bytes']:,} pool bytes)")
    return reused and steady


def measure(sizes: Sizes, seed: int, simulator: bool) -> tuple[list[Row], bool]:
    """Every case, ceiling and reference: (table rows, whether every check passed)."""
    print("\nours, checked against NumPy, then timed:")
    copy_bps, ours, amounts, passed = measure_ours(sizes, seed, simulator)
    cublas = in_child(cublas_reference, sizes, seed)
    if isinstance(cublas, str):
        print(f"  cuBLAS: {cublas}")
    else:
        print(f"  {cublas[0]}: {format_seconds(cublas[1])} per product, TF32 off")
    rows = [target_row(name, ours[name], amounts[name], copy_bps, cublas)
            for name in CASE_TITLES]
    jax_seconds = in_child(jax_reference, sizes, seed) if importlib.util.find_spec("jax") \
        else "JAX is not installed"
    if isinstance(jax_seconds, str):
        print(f"  jax.jit: not measured: {jax_seconds}")
    else:
        print(f"  jax.jit: JAX {jax_seconds['version']}, matmul precision 'highest'")
        rows += [jax_row(name, ours[name], amounts[name], jax_seconds)
                 for name in CASE_TITLES]
    return rows, passed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes, one timed call of each: checks the script (under "
                             "NUMBA_ENABLE_CUDASIM=1 too); its times mean nothing")
    parser.add_argument("--seed", type=int, default=None,
                        help="the seed of the random inputs (default: a fresh one)")
    args = parser.parse_args(argv)
    reason = cuda_unavailable_reason()
    if reason is not None:
        print(f"stage 2 GPU benchmark: not run: {reason}.")
        print("The GPU benchmark is owed: run benchmarks/run_gpu_check.sh on a machine with "
              "an NVIDIA GPU (or --smoke under NUMBA_ENABLE_CUDASIM=1 to check the script).")
        return 0
    from numba import config, cuda
    simulator = bool(config.ENABLE_CUDASIM)
    smoke = args.smoke or simulator
    sizes = SMOKE if smoke else FULL
    seed = args.seed if args.seed is not None else int(np.random.SeedSequence().entropy % 2**32)
    print(f"stage 2 GPU benchmark{' (--smoke)' if smoke else ''}: {gpu_summary(cuda, simulator)}")
    if simulator and not args.smoke:
        print("NUMBA_ENABLE_CUDASIM=1: the simulator runs kernels as Python; smoke sizes only")
    print(f"sizes: {sizes.describe()}")
    print(f"jax.default_backend() = {jax.default_backend()!r}; inputs drawn with --seed {seed}")
    if simulator:
        print("timing: perf_counter (the simulator's CUDA events record no time)")
    else:
        print(f"timing: CUDA events around one call, median of {sizes.repeat} "
              f"({sizes.for_matmul().repeat} for the matmul) after {sizes.warmup} warm-up "
              f"calls")
    rows, passed = measure(sizes, seed, simulator)
    print("\nratio: ours over the ceiling or reference (above 1: ours is faster); jax.jit "
          "rows: both back to back")
    print_table(rows)
    if smoke:
        print("\n--smoke: tiny sizes, one timed call each: the checks against NumPy ran; the "
              "times, ratios and verdicts above mean nothing")
    if not passed:
        print("\nSome cases failed (tracebacks above).")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
