"""Threads: how many cores the BLAS library may take for a matrix product.

Matrix products run on OpenBLAS's threads: stage 1's eager ``dot_general`` through NumPy's
``matmul``, stage 2's kernels through ``np.dot`` inside Numba (which calls SciPy's BLAS),
beside Numba's own threads for the kernel's loops. OpenBLAS starts a thread per core. On a
quiet machine that is right. When another process keeps a core busy, OpenBLAS's threads,
which wait for one another at the end of every product, end up taking turns with it on the
cores that are left: measured on 2 cores with one busy process beside it
(``benchmarks/bench_threads.py``), the jitted MLP step took 11.2 ms with two BLAS threads and
9.2 ms with one, where a quiet machine gives 5.6 ms and 9.0 ms; the eager step of stage 1
took 18.3 ms with two and 10.1 ms with one (8.2 and 10.3 ms quiet).

So the runtime watches how much CPU time *other* processes take (Linux's ``/proc/stat``, less
this process's own time), at most every ``INTERVAL`` seconds, and gives BLAS the cores they
leave: all of them on a quiet machine, fewer on a busy one, never fewer than one. threadpoolctl
(the well-kept library for exactly this, which comes with stage 2: stage 1 needs only NumPy)
sets OpenBLAS's thread count. A user who set
``OPENBLAS_NUM_THREADS`` keeps their setting, and ``jax_from_numpy_coordinate_threads`` turns
it off. One coordinator serves the whole process: stage 1 asks it before each eager matrix
product, stage 2 before each kernel that makes one.

NB: XLA's CPU client runs its own thread pool (Eigen's) for both its loops and its matrix
products, so the question does not arise there: one pool sizes all the work.
"""

from __future__ import annotations

import os
import threading
import time

from .config import config

INTERVAL = 0.25  # seconds between two looks at the machine's load
MIN_WINDOW = 0.1  # the shortest time over which a look measures the others' CPU time

config.define("jax_from_numpy_coordinate_threads", True,
              "Gives BLAS inside the kernels the cores other processes leave free.")


# --8<-- [start:blas_threads]
def blas_threads(cores: int, others: float) -> int:
    """How many BLAS threads to run when other processes keep ``others`` cores busy."""
    return max(1, min(cores, cores - int(others + 0.5)))
# --8<-- [end:blas_threads]


class Coordinator:
    """Samples the machine's load now and then and sets BLAS's threads to match."""

    def __init__(self) -> None:
        self.cores = os.cpu_count() or 1
        self.next = 0.0  # when to look again
        # (time, busy, own) seconds. The first look is taken now, at import, so that the
        # first matrix product already has a decision to go by: with none before it, a short
        # run under load (a benchmark's first half second) kept every thread.
        self.sample: tuple[float, float, float] | None = (time.monotonic(), *_cpu_seconds())
        self.threads = self.cores
        self.lock = threading.Lock()

    def coordinate(self) -> None:
        """Called before a matrix product or a kernel with one; cheap when it is not time
        (0.1 µs)."""
        now = time.monotonic()
        if now < self.next or not self.lock.acquire(blocking=False):
            return
        try:
            self.next = now + INTERVAL
            if not config.jax_from_numpy_coordinate_threads or "OPENBLAS_NUM_THREADS" in \
                    os.environ or self.cores == 1:
                return
            sample = (now, *_cpu_seconds())
            elapsed = sample[0] - self.sample[0] if self.sample is not None else 0.0
            if elapsed < MIN_WINDOW:  # /proc/stat counts in 10 ms ticks: too short to tell
                self.next = now + MIN_WINDOW - elapsed
                return
            others = ((sample[1] - self.sample[1]) - (sample[2] - self.sample[2])) / elapsed
            self.set_threads(blas_threads(self.cores, others))
            self.sample = sample
        finally:
            self.lock.release()

    def set_threads(self, n: int) -> None:
        if n != self.threads:
            _limit_blas(n)
            self.threads = n

    def libraries_loaded(self) -> None:
        """Called after loading code that brings a BLAS library of its own (stage 2 loads
        SciPy's): it gets the thread count the others have."""
        if self.threads != self.cores:
            _limit_blas(self.threads)


def _limit_blas(n: int) -> None:
    """Sets every loaded BLAS library to ``n`` threads, through threadpoolctl. Its look at
    the loaded libraries takes about 1 ms, so it is done only when the count changes. Stage 1
    needs only NumPy: without threadpoolctl (which stage 2 brings) nothing changes."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return
    ThreadpoolController().select(user_api="blas").limit(limits=n)


def _cpu_seconds() -> tuple[float, float]:
    """(CPU seconds every process has used, those this process has), since boot."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(v) for v in stat.readline().split()[1:]]
    except (OSError, ValueError):  # not Linux: no way to tell, so nothing changes
        return 0.0, 0.0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle and waiting for I/O
    own = os.times()
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK"), own.user + own.system


COORDINATOR = Coordinator()
