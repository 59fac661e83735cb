"""Where a memory-bound kernel's time goes: into the arithmetic, or into its output's memory.

The same loop, ``y = x * x + x * 2.0`` over float32, is timed with its output memory from
four places, at several sizes, next to NumPy's expression (four passes, four temporaries) and
``jit`` (the runtime's pool, ``stage2_jit/buffers.py``):

- allocated inside the Numba function (``np.empty`` in nopython mode: Numba's allocator);
- ``np.empty`` in Python, passed in (NumPy's allocator, huge pages where the OS offers them);
- one buffer reused by every call (the floor: no allocation at all);
- the minor page faults per call are counted too (``getrusage``): a fresh page is a fault.

Run: ``python benchmarks/bench_buffers.py [--quick]``. It prints a table per size, checks
every variant against NumPy first, and draws ``course/assets/bench_buffers.png`` (the "Buffers
and the runtime" page shows it). Nothing here tunes the process: the system allocator, as a
user runs it.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys

import numpy as np
from common import Timing, format_seconds, machine_summary, time_call
from plotting import SizesPanel, write_sizes_plot  # benchmarks/plotting.py

import stage2_jit as jax


def _kernels():
    from numba import njit, prange

    @njit(parallel=True, cache=True)
    def allocating(x):
        y = np.empty(x.size, dtype=np.float32)
        for i in prange(x.size):
            y[i] = x[i] * x[i] + x[i] * np.float32(2.0)
        return y

    @njit(parallel=True, cache=True)
    def into(x, y):
        for i in prange(x.size):
            y[i] = x[i] * x[i] + x[i] * np.float32(2.0)
        return y

    return allocating, into


def _faults(fn, calls: int = 5) -> float:
    """Minor page faults per call of ``fn``."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(calls):
        fn()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / calls


def measure(n: int, repeat: int, min_time: float) -> list[tuple[str, Timing, float]]:
    allocating, into = _kernels()
    x = np.random.default_rng(0).random(n * n, dtype=np.float32)
    reused = np.empty_like(x)
    jitted = jax.jit(lambda x: x * x + x * 2.0)
    xj = jax.numpy.asarray(x)
    expected = x * x + x * np.float32(2.0)
    variants = [
        ("NumPy x*x + x*2.0", lambda: x * x + x * np.float32(2.0)),
        ("loop, output allocated in Numba", lambda: allocating(x)),
        ("loop, output from np.empty", lambda: into(x, np.empty_like(x))),
        ("loop, one reused output", lambda: into(x, reused)),
        ("ours: jit (the runtime's pool)", lambda: jitted(xj)),
    ]
    rows = []
    for name, fn in variants:
        np.testing.assert_allclose(np.asarray(fn()), expected, rtol=1e-6)
        rows.append((name, time_call(fn, repeat, min_time), _faults(fn)))
    return rows


def plot(results: dict[int, list[tuple[str, Timing, float]]], load_at_start: float) -> None:
    """Time and page faults per call against the output's size, a curve per variant."""
    sizes = sorted(results)
    names = [name for name, _, _ in results[sizes[0]]]
    times = {name: [results[n][k][1].best * 1e3 for n in sizes] for k, name in enumerate(names)}
    faults = {name: [results[n][k][2] for n in sizes] for k, name in enumerate(names)}
    write_sizes_plot([SizesPanel("time per call", "ms per call (best of 7; log scale)", "log",
                                 times),
                      SizesPanel("page faults per call", "minor page faults per call "
                                 "(log scale above 1)", "symlog", faults)],
                     [4 * n * n / 2**20 for n in sizes], "bench_buffers",
                     "Where the time of y = x*x + x*2.0 (float32) goes: its output's memory",
                     "ours", load_at_start)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    parser.add_argument("--no-plot", action="store_true")
    args = parser.parse_args(argv)
    sizes = [256, 512] if args.quick else [512, 1024, 2048, 4096, 5000]
    repeat, min_time = (2, 0.01) if args.quick else (7, 0.2)
    load_at_start = os.getloadavg()[0]
    print(machine_summary())
    results = {}
    for n in sizes:
        results[n] = rows = measure(n, repeat, min_time)
        print(f"\n{n}x{n} float32 ({4 * n * n / 2**20:.0f} MB)")
        for name, timing, faults in rows:
            print(f"  {name:34s} {format_seconds(timing.best):>10s}  {faults:9.0f} faults/call")
        numpy_time = rows[0][1].best
        print(f"  target: ours at least 3x NumPy: {numpy_time / rows[-1][1].best:.1f}x")
    if not args.no_plot and not args.quick:
        plot(results, load_at_start)


if __name__ == "__main__":
    sys.exit(main())
