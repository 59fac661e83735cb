"""MPI benchmark: stage 4's communication cost model against MPI's own collectives.

1. A ping-pong between ranks 0 and 1 with mpi4py's buffer methods (``Send`` and ``Recv`` of
   NumPy arrays), over messages of 8 B to 64 MB. A message's one-way time is half the best
   round trip. A line t = α + n β is fitted to these times: α is the latency (seconds) and
   β the seconds per byte (1/β the bandwidth). The fit minimises the relative errors
   (α + n β) / t - 1, so every size counts alike. Plain least squares over seven decades of
   sizes would follow the large messages alone and leave α to chance.
2. MPI's own collectives over all N processes, on float32 arrays of several sizes:
   ``Allreduce`` (sum), ``Allgather``, ``Reduce_scatter_block``, ``Alltoall``, and
   ``Sendrecv`` around a ring (``ppermute``). Each result is checked once, then timed: every
   repeat starts at a ``Barrier``, the figure is the slowest rank's time per call, and the
   best repeat counts. The repeats go round all collectives and sizes in turn (the
   ping-pong's too), so that a burst of work from another process spoils one repeat of
   each, not every repeat of one. Each collective is predicted by stage 4's cost model
   (``stage4_sharding.cost_model.collective_cost``, the ring algorithms of its docstring),
   with the fitted α as ``jax_collective_latency`` and 1/β as ``jax_link_bandwidth``.

The table gives measured and predicted time and their ratio; what the model leaves out is
printed under it. The ping-pong with its fitted line, and measured against predicted time,
are drawn to course/assets/bench_mpi.png (not with ``--quick``).

Run from the repository root. The script starts itself under ``mpiexec -n N`` with the same
interpreter (the venv's ``mpiexec`` first, then the one on ``PATH``), or runs under a launcher
of your own:

    PYTHONPATH=stage1_autodiff/src:stage2_jit/src:stage3_vmap/src:stage4_sharding/src \\
        python benchmarks/bench_mpi.py [--processes N] [--quick]
    mpiexec -n 4 python benchmarks/bench_mpi.py
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from common import machine_summary  # benchmarks/common.py

if TYPE_CHECKING:  # mpi4py is imported only under an MPI launcher
    from mpi4py.MPI import Intracomm

KB, MB = 1 << 10, 1 << 20
# Environment variables that MPI launchers set in the processes they start: MPICH's and
# Intel MPI's Hydra (PMI_*), Open MPI's, and PMIx's.
LAUNCHER_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK")
INSTALL_HINT = "pip install mpi4py mpich (or mpi4py with an MPI library of the system)"


class Sizes(NamedTuple):
    """The message sizes of a run (bytes), and how long each is timed."""
    ping_pong: tuple[int, ...]
    collectives: tuple[int, ...]  # bytes of each process's operand, about (float32)
    repeat: int
    min_time: float  # seconds, about, of one repeat


FULL = Sizes(ping_pong=(*(2**k for k in range(3, 26, 2)), 64 * MB),  # 8 B, 32 B, ..., 64 MB
             collectives=(64, 4 * KB, 256 * KB, 16 * MB), repeat=7, min_time=0.05)
QUICK = Sizes(ping_pong=(8, 32 * KB, 1 * MB), collectives=(64, 4 * KB), repeat=2,
              min_time=0.002)


# ------------------------------------------------------------------------------------------
# Starting under MPI
# ------------------------------------------------------------------------------------------


def under_mpi_launcher() -> bool:
    return any(name in os.environ for name in LAUNCHER_VARIABLES)


def find_mpiexec() -> str | None:
    """The ``mpiexec`` beside this interpreter (a venv's, from pip's mpich), else on PATH."""
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.is_file() else shutil.which("mpiexec")


def launch(processes: int, argv: list[str]) -> int:
    """Runs this script under ``mpiexec -n processes`` with this interpreter, through
    ``python -m mpi4py``: a rank that raises aborts the others instead of leaving them
    waiting forever in a collective."""
    if importlib.util.find_spec("mpi4py") is None:
        print(f"bench_mpi.py needs mpi4py and an MPI library: {INSTALL_HINT}")
        return 1
    mpiexec = find_mpiexec()
    if mpiexec is None:
        print(f"bench_mpi.py found no mpiexec beside {sys.executable} or on PATH: "
              f"{INSTALL_HINT}")
        return 1
    command = [mpiexec, "-n", str(processes), sys.executable, "-m", "mpi4py", __file__, *argv]
    print(f"launching: {shlex.join(command)}", flush=True)
    return subprocess.run(command).returncode


# ------------------------------------------------------------------------------------------
# Timing
# ------------------------------------------------------------------------------------------


def calls_for(seconds_per_call: float, min_time: float) -> int:
    return max(1, round(min_time / max(seconds_per_call, 1e-7)))


def seconds_per_call(comm: Intracomm, calls: list[Callable[[], None]],
                     sizes: Sizes) -> list[float]:
    """Each call's best repeat of the slowest rank's seconds per call.

    A repeat of a call starts at a Barrier and makes enough calls back to back to last about
    ``sizes.min_time``; every rank makes as many, since they take the number from the same
    reduction. The repeats go round all the calls in turn, so that a burst of work from
    another process slows one repeat of every call, not every repeat of one."""
    from mpi4py import MPI

    def per_call(call: Callable[[], None], number: int) -> float:
        comm.Barrier()
        start = MPI.Wtime()
        for _ in range(number):
            call()
        return comm.allreduce((MPI.Wtime() - start) / number, op=MPI.MAX)

    for call in calls:
        call()  # warm up: connections, buffers, the algorithm's first choice
    numbers = [calls_for(per_call(call, 1), sizes.min_time) for call in calls]
    best = [float("inf")] * len(calls)
    for _ in range(sizes.repeat):
        for i, (call, number) in enumerate(zip(calls, numbers)):
            best[i] = min(best[i], per_call(call, number))
    return best


def sleep_until_all_arrive(comm: Intracomm) -> None:
    """A barrier that sleeps while it waits. MPICH's blocking calls poll on a core; a rank
    left out of the ping-pong would take a core from it on a 2-core machine."""
    request = comm.Ibarrier()
    while not request.Test():
        time.sleep(1e-3)


# ------------------------------------------------------------------------------------------
# 1. The ping-pong, and the α-β fit
# ------------------------------------------------------------------------------------------


def round_trip(pair: Intracomm, nbytes: int) -> Callable[[], None]:
    """Rank 0 sends ``nbytes`` to rank 1, which sends them back. Checked once."""
    pattern = np.resize(np.arange(256, dtype=np.uint8), nbytes)
    message = pattern.copy() if pair.rank == 0 else np.zeros(nbytes, np.uint8)

    def call() -> None:
        if pair.rank == 0:
            pair.Send(message, dest=1)
            pair.Recv(message, source=1)
        else:
            pair.Recv(message, source=0)
            pair.Send(message, dest=0)

    call()
    if not np.array_equal(message, pattern):
        raise AssertionError(f"ping-pong of {nbytes} B: rank {pair.rank} received other bytes "
                             f"than were sent")
    return call


def measure_ping_pong(comm: Intracomm, sizes: Sizes) -> list[float]:
    """One-way seconds for each size of ``sizes.ping_pong`` (on rank 0; [] elsewhere)."""
    from mpi4py import MPI

    pair = comm.Split(0 if comm.rank < 2 else MPI.UNDEFINED, comm.rank)
    seconds = []
    if pair != MPI.COMM_NULL:
        round_trips = [round_trip(pair, nbytes) for nbytes in sizes.ping_pong]
        seconds = [t / 2 for t in seconds_per_call(pair, round_trips, sizes)]
        pair.Free()
    sleep_until_all_arrive(comm)
    return seconds if comm.rank == 0 else []


def fit_alpha_beta(nbytes: list[int], seconds: list[float]) -> tuple[float, float]:
    """α (s) and β (s per byte) of t = α + n β, minimising sum(((α + n β) / t - 1)²).

    Divided by t, each equation α + n β = t reads α / t + β n / t = 1: a linear least
    squares problem in α and β whose residuals are the relative errors."""
    t = np.asarray(seconds)
    n = np.asarray(nbytes, dtype=np.float64)
    equations = np.stack([1 / t, n / t], axis=1)
    (alpha, beta), *_ = np.linalg.lstsq(equations, np.ones_like(t), rcond=None)
    if alpha <= 0 or beta <= 0:
        raise RuntimeError(f"the ping-pong's times fit no positive latency and bandwidth "
                           f"(α = {alpha:.3g} s, β = {beta:.3g} s/B): {seconds}. Run on a "
                           f"quieter machine, or without --quick")
    return float(alpha), float(beta)


# ------------------------------------------------------------------------------------------
# 2. MPI's collectives: each sets up its buffers for ``count`` float32 per process, checks
#    its result once, and returns the call to time
# ------------------------------------------------------------------------------------------


def allreduce(comm: Intracomm, count: int) -> Callable[[], None]:
    from mpi4py import MPI
    x = np.full(count, comm.rank + 1, np.float32)
    out = np.empty_like(x)
    call = lambda: comm.Allreduce(x, out, op=MPI.SUM)
    call()
    check(out, np.full(count, comm.size * (comm.size + 1) / 2), "Allreduce", comm)
    return call


def allgather(comm: Intracomm, count: int) -> Callable[[], None]:
    x = np.full(count, comm.rank, np.float32)
    out = np.empty(comm.size * count, np.float32)
    call = lambda: comm.Allgather(x, out)
    call()
    check(out, np.repeat(np.arange(comm.size), count), "Allgather", comm)
    return call


def reduce_scatter(comm: Intracomm, count: int) -> Callable[[], None]:
    """Every process sends piece p filled with p; process r gets the sum of the pieces r."""
    from mpi4py import MPI
    x = np.repeat(np.arange(comm.size, dtype=np.float32), count // comm.size)
    out = np.empty(count // comm.size, np.float32)
    call = lambda: comm.Reduce_scatter_block(x, out, op=MPI.SUM)
    call()
    check(out, np.full(out.size, comm.size * comm.rank), "Reduce_scatter_block", comm)
    return call


def all_to_all(comm: Intracomm, count: int) -> Callable[[], None]:
    """Process q sends q N + p to process p, which gets q N + p from every q."""
    n = comm.size
    x = np.repeat(comm.rank * n + np.arange(n, dtype=np.float32), count // n)
    out = np.empty_like(x)
    call = lambda: comm.Alltoall(x, out)
    call()
    check(out, np.repeat(np.arange(n) * n + comm.rank, count // n), "Alltoall", comm)
    return call


def ring_permute(comm: Intracomm, count: int) -> Callable[[], None]:
    """Each process sends its block to the next around the ring, as ``ppermute`` does with
    the permutation [(i, (i + 1) % N)]."""
    x = np.full(count, comm.rank, np.float32)
    out = np.empty_like(x)
    after, before = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    call = lambda: comm.Sendrecv(x, dest=after, recvbuf=out, source=before)
    call()
    check(out, np.full(count, before), "Sendrecv around the ring", comm)
    return call


def check(out: np.ndarray, want: np.ndarray, name: str, comm: Intracomm) -> None:
    """A benchmark of a wrong computation is worthless: each result must be right first."""
    if not np.array_equal(out, want.astype(np.float32)):
        raise AssertionError(f"{name} of {out.size} float32 on rank {comm.rank} of "
                             f"{comm.size}: wrong result {out[:8]}..., want {want[:8]}...")


# MPI's call, stage 4's primitive whose cost the model gives, and the setup above.
COLLECTIVES = [("Allreduce (sum)", "psum", allreduce),
               ("Allgather", "all_gather", allgather),
               ("Reduce_scatter_block", "psum_scatter", reduce_scatter),
               ("Alltoall", "all_to_all", all_to_all),
               ("Sendrecv, ring", "ppermute", ring_permute)]


class Row(NamedTuple):
    """One collective at one size: bytes of each process's operand, seconds per call."""
    name: str
    primitive: str
    nbytes: int
    measured: float


def float32_count(target_bytes: int, processes: int) -> int:
    """About ``target_bytes`` of float32, a multiple of the processes (each gets a piece)."""
    return max(1, round(target_bytes / 4 / processes)) * processes


def measure_collectives(comm: Intracomm, sizes: Sizes) -> list[Row]:
    cells = [(name, primitive, setup, float32_count(target, comm.size))
             for name, primitive, setup in COLLECTIVES for target in sizes.collectives]
    calls = [setup(comm, count) for _, _, setup, count in cells]
    measured = seconds_per_call(comm, calls, sizes)
    return [Row(name, primitive, 4 * count, seconds)
            for (name, primitive, _, count), seconds in zip(cells, measured)]


# ------------------------------------------------------------------------------------------
# The model's prediction, and the report (rank 0)
# ------------------------------------------------------------------------------------------


def predicted_seconds(row: Row, processes: int, alpha: float, beta: float) -> float:
    """stage4_sharding.cost_model's time for the row's collective, its latency and link
    bandwidth set to the ping-pong's fit."""
    from stage1_autodiff.config import config
    from stage1_autodiff.core import ShapedArray
    from stage4_sharding.cost_model import collective_cost

    config.update("jax_collective_latency", alpha)
    config.update("jax_link_bandwidth", 1 / beta)
    operand = ShapedArray((row.nbytes // 4,), np.dtype(np.float32))
    return collective_cost(row.primitive, operand, ("i",), processes, {}).seconds


def microseconds(seconds: float) -> str:
    us = seconds * 1e6
    return f"{us:,.2f}" if us < 100 else f"{us:,.0f}"


def size_label(nbytes: float) -> str:
    for unit, scale in (("MB", MB), ("kB", KB)):
        if nbytes >= scale:
            return f"{nbytes / scale:g} {unit}"
    return f"{nbytes:g} B"


def print_ping_pong(sizes: Sizes, seconds: list[float], alpha: float, beta: float) -> None:
    print("\nping-pong between ranks 0 and 1 (Send and Recv of uint8 arrays); one way: half "
          "the best round trip")
    print(f"  {'bytes':>10} {'one way (µs)':>13} {'α + nβ (µs)':>12} {'measured/fit':>13} "
          f"{'GB/s':>8}")
    for nbytes, t in zip(sizes.ping_pong, seconds):
        fitted = alpha + nbytes * beta
        print(f"  {size_label(nbytes):>10} {microseconds(t):>13} {microseconds(fitted):>12} "
              f"{t / fitted:>12.2f}x {nbytes / t / 1e9:>8.3g}")
    print(f"fit t = α + n β, minimising the relative error of every size alike: latency α = "
          f"{alpha * 1e6:.3g} µs, bandwidth 1/β = {1 / beta / 1e9:.3g} GB/s "
          f"(β = {beta * 1e9:.3g} ns per byte)")


def print_collectives(rows: list[Row], predicted: list[float], processes: int) -> None:
    print(f"\nMPI's collectives on float32 over {processes} processes: the slowest rank's time "
          f"per call, best of the repeats; predicted by stage4_sharding.cost_model")
    print(f"  {'collective':22} {'N':>3} {'bytes/process':>14} {'measured (µs)':>14} "
          f"{'predicted (µs)':>15} {'measured/predicted':>19}")
    for row, model in zip(rows, predicted):
        print(f"  {row.name:22} {processes:>3} {row.nbytes:>14,} "
              f"{microseconds(row.measured):>14} {microseconds(model):>15} "
              f"{row.measured / model:>18.2f}x")
    print("  the model: a ring, each step α + (bytes sent) β, B the bytes of each process's "
          "operand:\n    Allreduce 2(N-1)(α + B/N β); Allgather (N-1)(α + B β); "
          "Reduce_scatter_block and Alltoall\n    (N-1)(α + B/N β); Sendrecv α + B β")


def print_what_the_model_leaves_out(processes: int) -> None:
    cores = os.cpu_count() or 1
    notes = [
        "MPI's algorithms: MPICH and Open MPI choose one per collective and size, and for "
        "small messages they take about log2 N steps (recursive doubling, Bruck's algorithm, "
        "shared-memory ones), not a ring's N-1. At N = 2 recursive doubling's all-reduce is "
        "one exchange of B, the ring's two exchanges of B/2.",
        "The arithmetic: Allreduce and Reduce_scatter_block add the pieces they receive, "
        "which the model does not count.",
        "One machine: the links are copies through shared memory, and the N processes' "
        "copies share the memory's bandwidth; a ring assumes N links that run at once at "
        "full speed.",
        "Python: the ping-pong's α includes mpi4py's cost per call, which a collective pays "
        "once, not once a step.",
    ]
    if processes > cores:
        notes.append(f"Oversubscription: {processes} processes on {cores} cores take turns. A "
                     f"rank that waits polls on its core, which the rank it waits for may "
                     f"need: these times measure the scheduler more than MPI.")
    print("\nwhat the model leaves out:")
    for note in notes:
        print(textwrap.fill(note, 96, initial_indent="  - ", subsequent_indent="    "))


# ------------------------------------------------------------------------------------------


def mpi_library() -> str:
    """``MPICH Version: 5.0.2``, from the library's own first line; with mpi4py's version."""
    from mpi4py import MPI
    first_line = MPI.Get_library_version().splitlines()[0]
    name = " ".join(first_line.split(",")[0].split())
    return f"{name} (mpi4py {importlib.metadata.version('mpi4py')})"


def print_header(comm: Intracomm, quick: bool, asked: int | None) -> None:
    cores = os.cpu_count() or 1
    print(f"MPI benchmark{' (--quick: few sizes)' if quick else ''}: {comm.size} processes, "
          f"{mpi_library()}; {machine_summary()}")
    if asked is not None and asked != comm.size:
        print(f"NOTE: --processes {asked} is for starting the script; it runs on the "
              f"{comm.size} processes its launcher started")
    if comm.size > cores:
        print(f"NOTE: {comm.size} processes on {cores} cores: oversubscribed, the processes "
              f"take turns on the cores")
    if os.getloadavg()[0] > 0.5:
        print("NOTE: the machine is busy (load average above 0.5): a rank that loses its "
              "core stalls every rank waiting for it; the figures are unreliable")


def write_plot(sizes: Sizes, ping_pong: list[float], fit: tuple[float, float],
               rows: list[Row], predicted: list[float], processes: int,
               load_at_start: float) -> None:
    from plotting import write_cost_model_plot  # benchmarks/plotting.py: matplotlib

    points: dict[str, list[tuple[float, float]]] = {}
    for row, model in zip(rows, predicted):
        points.setdefault(row.name, []).append((model, row.measured))
    alpha, beta = fit
    note = (f"{mpi_library()}, {processes} processes; fit: latency α = {alpha * 1e6:.3g} µs, "
            f"bandwidth 1/β = {1 / beta / 1e9:.3g} GB/s")
    write_cost_model_plot(list(sizes.ping_pong), ping_pong, fit, points, "bench_mpi",
                          f"MPI on one machine, {processes} processes: the α-β fit, and "
                          f"stage 4's cost model against MPI's collectives", load_at_start, note)


def measure_and_report(comm: Intracomm, quick: bool, asked: int | None) -> int:
    load_at_start = os.getloadavg()[0]
    if comm.size < 2:
        print("bench_mpi.py needs at least 2 processes (the ping-pong): mpiexec -n 2 or more")
        return 1
    sizes = QUICK if quick else FULL
    if comm.rank == 0:
        print_header(comm, quick, asked)
    ping_pong = measure_ping_pong(comm, sizes)
    rows = measure_collectives(comm, sizes)
    if comm.rank != 0:
        return 0
    alpha, beta = fit_alpha_beta(list(sizes.ping_pong), ping_pong)
    predicted = [predicted_seconds(row, comm.size, alpha, beta) for row in rows]
    print_ping_pong(sizes, ping_pong, alpha, beta)
    print_collectives(rows, predicted, comm.size)
    print_what_the_model_leaves_out(comm.size)
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")
    if quick:
        print("\n--quick: few sizes and short repetitions; the times are not measurements, "
              "no plot written")
    else:
        write_plot(sizes, ping_pong, (alpha, beta), rows, predicted, comm.size, load_at_start)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="few sizes, short repetitions (a smoke test, not a measurement)")
    parser.add_argument("--processes", type=int, default=None,
                        help="how many MPI processes to start (default 2); ignored under a "
                             "launcher of your own, which sets them")
    args = parser.parse_args(argv)
    if not under_mpi_launcher():
        processes = 2 if args.processes is None else args.processes
        if processes < 2:
            parser.error("--processes must be 2 or more: the ping-pong needs two ranks")
        return launch(processes, argv)
    from mpi4py import MPI
    return measure_and_report(MPI.COMM_WORLD, args.quick, args.processes)


if __name__ == "__main__":
    sys.exit(main())
