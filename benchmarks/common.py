"""Timing and table helpers shared by the benchmarks of every stage.

Every figure a benchmark prints is measured in the same run, on the same machine; nothing is
compared against numbers written down elsewhere.
"""

from __future__ import annotations

import ctypes
import json
import multiprocessing
import os
import platform
import statistics
import subprocess
import sys
import timeit
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np


class Timing(NamedTuple):
    """Seconds per call: the best repeat (what ratios use) and the median (the spread)."""

    best: float
    median: float


def time_call(fn: Callable[[], object], repeat: int = 7, min_time: float = 0.1) -> Timing:
    """Seconds per call of ``fn()`` through :mod:`timeit`: ``repeat`` rounds of about
    ``min_time`` seconds each. A first call warms up (caches, lazy imports) and sets how many
    calls make a round."""
    timer = timeit.Timer(fn)
    first = timer.timeit(number=1)
    if kernels_ready():  # the first call ran on the interpreter: time the kernel's calls
        first = timer.timeit(number=1)
    number = max(1, round(min_time / max(first, 1e-7)))
    per_call = [t / number for t in timer.repeat(repeat=repeat, number=number)]
    return Timing(min(per_call), statistics.median(per_call))


def kernels_ready() -> bool:
    """Waits for the kernels stage 2 compiles in the background while a new function's first
    calls run on the interpreter (``stage2_jit/tiers.py``): a timing is of the calls a loop
    makes once its kernels are ready. Returns whether there were any."""
    tiers = sys.modules.get("stage2_jit.tiers")
    if tiers is None or not tiers._in_flight:
        return False
    tiers.wait()
    return True


def time_rows(rows: list[tuple[str, Callable[[], object] | str]], repeat: int = 7,
              min_time: float = 0.1) -> list[tuple[str, Timing | str]]:
    """Rows of (name, function or note) become rows of (name, Timing or note).

    Each function's rounds run back to back, not in turns with the others': a library's
    threads spin for a while after its calls (OpenBLAS's about 0.1 s), and would slow the next
    library's round on a small machine.
    """
    return [(name, time_call(fn, repeat, min_time) if callable(fn) else fn)
            for name, fn in rows]


def keep_freed_memory() -> bool:
    """Asks glibc's malloc to serve arrays up to 32 MiB from its heap and to keep what is freed.

    Otherwise whether a large array comes back as fresh pages, each page-faulted on first touch
    (about 2 µs a page on a VM), depends on what the process did before (importing PyTorch is
    enough to flip it), and a timed loop can measure page faults instead of arithmetic.
    Returns False where glibc is not the allocator.
    """
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3  # from glibc's malloc.h
    return bool(mallopt(m_mmap_threshold, 32 << 20) and mallopt(m_trim_threshold, 1 << 30))


def add_malloc_options(parser: Any) -> None:
    """``--tuned-malloc``, a diagnostic: the figures a user gets come from the system's
    allocator as it is, the default (``--system-malloc`` says so explicitly)."""
    parser.add_argument("--tuned-malloc", action="store_true",
                        help="DIAGNOSTIC: tune glibc's malloc to keep freed memory "
                             "(keep_freed_memory in common.py); not what a user gets")
    parser.add_argument("--system-malloc", action="store_true",
                        help="leave malloc as the system has it (the default)")


def malloc_summary(keep_memory: bool) -> str:
    """The header's word on the allocator: a tuned one is labelled a diagnostic."""
    if keep_memory:
        return ("DIAGNOSTIC RUN: malloc tuned by mallopt to keep freed memory, "
                "not what a user gets")
    return "malloc as the system has it"


def format_seconds(seconds: float) -> str:
    """``12.3 µs``, ``4.56 ms`` or ``1.23 s``."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def numpy_blas() -> str:
    """The BLAS NumPy was built with, and its version: ``scipy-openblas 0.3.31.188.0``."""
    blas = np.show_config(mode="dicts").get("Build Dependencies", {}).get("blas", {})
    return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()


def machine_summary() -> str:
    """Python, NumPy and its BLAS, cores, thread settings from the environment, load average."""
    threads = ", ".join(f"{name}={os.environ.get(name, 'unset')}" for name in (
        "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_CORETYPE"))
    return (f"python {platform.python_version()}, numpy {np.__version__} "
            f"({numpy_blas()}), {os.cpu_count()} cores; "
            f"{threads}; load average {os.getloadavg()[0]:.2f}")


def print_table(title: str, rows: list[tuple[str, Timing | str]]) -> None:
    """Prints one comparison. The first row is ours (timed); ``ours / this`` is its best time
    over each row's best (above 1: ours is slower). A string in place of a time is a note."""
    ours = rows[0][1]
    print(f"\n{title}")
    print(f"  {'':34} {'best':>10} {'median':>10} {'ours / this':>12}")
    for name, timing in rows:
        if isinstance(timing, str):
            print(f"  {name:34} {timing}")
            continue
        print(f"  {name:34} {format_seconds(timing.best):>10} "
              f"{format_seconds(timing.median):>10} {ours.best / timing.best:>11.2f}x")


def time_rows_of(make_rows, repeat: int, min_time: float,
                 keep_memory: bool) -> dict[str, tuple[str, Timing]]:
    """Runs in the child process: builds the rows with ``make_rows()`` and times them."""
    if keep_memory:
        keep_freed_memory()
    return {title: time_rows([row], repeat, min_time)[0] for title, row in make_rows().items()}


def time_in_child(make_rows, repeat: int, min_time: float,
                  keep_memory: bool) -> dict[str, tuple[str, Timing]]:
    """Times rows in a fresh process, so that another library's threads (PyTorch's, say) and
    its memory allocations cannot slow ours down, or ours theirs."""
    context = multiprocessing.get_context("spawn")  # a fresh interpreter, nothing inherited
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        job = pool.submit(time_rows_of, make_rows, repeat, min_time, keep_memory)
        return job.result()


def run_python_child(code: str, env: dict[str, str], roots: list[Any]) -> dict:
    """Runs ``code`` in a fresh interpreter, with the source folders of the packages in
    ``roots`` on its path and ``env`` added to this environment (without JAX's persistent
    compilation cache), and returns the JSON object its last line of output printed."""
    folders = [str(Path(m.__file__).resolve().parents[1]) for m in roots]
    path = os.pathsep.join([*folders, *filter(None, [os.environ.get("PYTHONPATH")])])
    env = dict(os.environ, PYTHONPATH=path, **env)
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"a benchmark's child process failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------------------
# What every benchmark script shares: its options, its header, its verdicts
# ------------------------------------------------------------------------------------------

Verdicts = list[tuple[str, str, str, str]]  # (what, measured, target, verdict)


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


class Run(NamedTuple):
    """A benchmark run's settings, from its command line."""
    quick: bool
    repeat: int
    min_time: float
    keep_memory: bool


def start(doc: str, name: str, argv: list[str] | None, extra: str = "") -> Run:
    """Parses ``--quick`` and ``--system-malloc``, sets malloc up, and prints the header:
    the machine, and a warning when it is busy."""
    import argparse
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="small sizes, few, short repetitions (a smoke test, not a "
                             "measurement)")
    add_malloc_options(parser)
    args = parser.parse_args(argv)
    keep_memory = args.tuned_malloc and keep_freed_memory()
    print(f"{name} benchmark{' (--quick: small sizes)' if args.quick else ''}: "
          f"{machine_summary()}; {malloc_summary(keep_memory)}{extra}")
    if os.getloadavg()[0] > 0.5:
        print("NOTE: the machine is busy (load average above 0.5): on 2 cores, BLAS's and "
              "Numba's threads slow down when a core is taken; the figures are unreliable")
    print("best and median of the repeats, per call; ours / this > 1 means ours is slower")
    repeat, min_time = (2, 0.005) if args.quick else (7, 0.3)
    return Run(args.quick, repeat, min_time, keep_memory)


def print_verdicts(verdicts: Verdicts, title: str) -> None:
    """The targets table: what, the measured figure, the target, met or MISSED."""
    width = max(len(what) for what, *_ in verdicts)
    measured = max(len("measured"), *(len(m) for _, m, _, _ in verdicts))
    target = max(len("target"), *(len(t) for _, _, t, _ in verdicts))
    print(f"\n{title}\n  {'':{width}} {'measured':>{measured}} {'target':>{target}}  verdict")
    for what, m, t, outcome in verdicts:
        print(f"  {what:{width}} {m:>{measured}} {t:>{target}}  {outcome}")


def finish(run: Run) -> None:
    if run.quick:
        print("\n--quick: the sizes are small and the times are not measurements; no plot "
              "written")
