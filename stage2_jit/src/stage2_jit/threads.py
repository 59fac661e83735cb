"""Threads: how many cores the BLAS library inside the kernels may take.

A generated kernel runs its loops on Numba's threads and its matrix products on OpenBLAS's
(``np.dot`` in the kernel calls SciPy's BLAS). Each pool starts a thread per core. On a quiet
machine that is right. When another process keeps a core busy, OpenBLAS's threads, which
wait for one another at the end of every product, end up taking turns with it on the cores
that are left: measured on 2 cores with one busy process beside it
(``benchmarks/bench_threads.py``), the MLP step took 11.2 ms with two BLAS threads and 9.2 ms
with one, where a quiet machine gives 5.6 ms and 9.0 ms.

So the runtime watches how much CPU time *other* processes take (Linux's ``/proc/stat``, less
this process's own time), at most every ``INTERVAL`` seconds, and gives BLAS the cores they
leave: all of them on a quiet machine, fewer on a busy one, never fewer than one. threadpoolctl
(the well-kept library for exactly this) sets OpenBLAS's thread count. A user who set
``OPENBLAS_NUM_THREADS`` keeps their setting, and ``jax_from_numpy_coordinate_threads`` turns
it off.

NB: XLA's CPU client runs its own thread pool (Eigen's) for both its loops and its matrix
products, so the question does not arise there: one pool sizes all the work.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from stage1_autodiff.config import config

INTERVAL = 0.25  # seconds between two looks at the machine's load

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
        self.sample: tuple[float, float, float] | None = None  # (time, busy, own) seconds
        self.threads = self.cores
        self.blas: Any = None  # threadpoolctl's controller of the BLAS libraries
        self.lock = threading.Lock()

    def coordinate(self) -> None:
        """Called before a kernel with matrix products runs; cheap when it is not time."""
        now = time.monotonic()
        if now < self.next or not self.lock.acquire(blocking=False):
            return
        try:
            self.next = now + INTERVAL
            if not config.jax_from_numpy_coordinate_threads or "OPENBLAS_NUM_THREADS" in \
                    os.environ or self.cores == 1:
                return
            sample = (now, *_cpu_seconds())
            if self.sample is not None and sample[0] > self.sample[0]:
                elapsed = sample[0] - self.sample[0]
                others = ((sample[1] - self.sample[1]) - (sample[2] - self.sample[2])) / elapsed
                self.set_threads(blas_threads(self.cores, others))
            self.sample = sample
        finally:
            self.lock.release()

    def set_threads(self, n: int) -> None:
        if n == self.threads:
            return
        if self.blas is None:
            from threadpoolctl import ThreadpoolController
            self.blas = ThreadpoolController().select(user_api="blas")
        self.blas.limit(limits=n)
        self.threads = n


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
