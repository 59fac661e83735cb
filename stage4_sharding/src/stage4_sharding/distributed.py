"""Several processes, one program: multi-controller SPMD on MPI (``jax.distributed``).

``mpiexec -n 2 python train.py`` starts the same script twice. Each process calls
``jax.distributed.initialize()`` first, and from then on:

- it drives its *local* devices (``jax_num_cpu_devices`` of them, ``JAX_NUM_CPU_DEVICES``
  per process), and ``jax.devices()`` lists every process's, each with its
  ``process_index``;
- a sharded array is global, and each process holds the blocks of its own devices
  (``addressable_shards``);
- every process runs the same per-device program on its devices, and the collectives cross
  process boundaries through MPI (``runtime.py`` asks :func:`complete` and :func:`reduce`
  for the blocks it does not hold).

The processes agree on what runs without talking about it: they run the same program, so
they reach the same collectives in the same order. What breaks that is caught, not waited
for: every exchange starts with a header naming what it is, so processes at different steps
(running different programs, say) get an error instead of a deadlock; every wait has a
timeout (``jax_from_numpy_collective_timeout``); and an exception that ends one process
aborts the job (``MPI_Abort``), since the others would otherwise wait for it forever.

NB: JAX's own multi-controller runtime starts a coordination service (a gRPC server in
process 0, jax/_src/distributed.py, xla/tsl/distributed_runtime/coordination/) through
which the processes find each other and exchange device lists; the collectives then run in
XLA's CPU or GPU collectives (Gloo, MPI or NCCL). Here MPI does both: ``mpiexec``'s process
manager starts and connects the processes, and MPI's collectives move the blocks.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from stage1_autodiff.config import config

config.define("jax_from_numpy_collective_timeout", 300.0,
              "Seconds an exchange between processes waits for the others before the job is "
              "aborted (stage 4 on MPI).")

# What an MPI launcher sets in each process it starts (MPICH's Hydra, Open MPI, PMIx).
_LAUNCHERS = ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK")
# The header of every exchange: what it is, so that processes at different steps notice.
_KINDS = {"program": 1, "blocks": 2, "reduce": 3, "decision": 4, "gather": 5,
          "communicator": 6}


@dataclass
class Processes:
    """The job: MPI's communicator, this process's index, how many there are, and how many
    devices each drives."""

    comm: Any = None
    index: int = 0
    count: int = 1
    local_counts: tuple[int, ...] = ()
    communicators: dict[tuple, Any] = field(default_factory=dict)


STATE = Processes()


def _mpi() -> Any:
    try:
        from mpi4py import MPI
    except ImportError:
        raise ImportError(
            "jax.distributed needs mpi4py and an MPI library: pip install -e "
            "'./stage4_sharding[mpi]' (mpi4py and MPICH), then start the processes with "
            "mpiexec -n 2 python your_script.py.") from None
    return MPI


def launched_by_mpiexec() -> bool:
    """Whether an MPI launcher started this process."""
    return any(name in os.environ for name in _LAUNCHERS)


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, local_device_ids: Any = None,
               cluster_detection_method: str | None = None,
               initialization_timeout: int = 300, **ignored: Any) -> None:
    """Joins this process to the job ``mpiexec`` started: call it first, in every process.

    JAX's arguments are accepted where they mean something here. ``num_processes`` and
    ``process_id``, if given, must be what ``mpiexec`` says; ``local_device_ids`` gives the
    number of local devices; ``coordinator_address`` is not needed (``mpiexec`` connects
    the processes) and is ignored. Outside ``mpiexec``, ``num_processes=1`` makes a job of
    this one process.
    """
    from . import mesh

    if STATE.comm is not None:
        raise RuntimeError("jax.distributed.initialize should only be called once.")
    if mesh.devices_started():
        raise RuntimeError("jax.distributed.initialize() must be called before any JAX "
                           "computations are executed (here: before the first use of "
                           "jax.devices() or of a sharded array).")
    if not launched_by_mpiexec() and num_processes != 1:
        raise ValueError(
            "jax.distributed.initialize(): this process was not started by mpiexec. Here the "
            "processes of a job are MPI's: start them with `mpiexec -n 2 python "
            "your_script.py` (pip install -e './stage4_sharding[mpi]' brings mpiexec), or "
            "pass num_processes=1 for a job of this one process.")
    comm = _mpi().COMM_WORLD
    for name, given, actual in (("num_processes", num_processes, comm.size),
                                ("process_id", process_id, comm.rank)):
        if given is not None and given != actual:
            raise ValueError(f"jax.distributed.initialize({name}={given}), but mpiexec "
                             f"started this process with {name} {actual}.")
    if local_device_ids is not None:
        config.update("jax_num_cpu_devices", len(local_device_ids))
    counts = comm.allgather(int(config.jax_num_cpu_devices))
    STATE.comm, STATE.index, STATE.count = comm, comm.rank, comm.size
    STATE.local_counts, STATE.communicators = tuple(counts), {}
    if comm.size > 1:
        _abort_on_uncaught_exceptions()


def shutdown() -> None:
    """Leaves the job: waits for the other processes, then forgets the communicator (MPI
    itself is finalized when the process exits)."""
    if STATE.comm is not None and STATE.count > 1:
        _wait(STATE.comm.Ibarrier(), "jax.distributed.shutdown()")
    STATE.comm, STATE.index, STATE.count = None, 0, 1
    STATE.local_counts, STATE.communicators = (), {}


def is_initialized() -> bool:
    return STATE.comm is not None


def process_index(backend: str | None = None) -> int:
    """This process's index in the job: 0 to ``process_count() - 1`` (for every backend)."""
    del backend
    return STATE.index


def process_count(backend: str | None = None) -> int:
    """How many processes run the program (for every backend)."""
    del backend
    return STATE.count


def process_indices(backend: str | None = None) -> list[int]:
    """The indices of the processes in the job: 0 to ``process_count() - 1``."""
    return list(range(process_count(backend)))


def multiprocess() -> bool:
    return STATE.count > 1


def _abort_on_uncaught_exceptions() -> None:
    """An exception that ends this process ends the job, with its traceback on stderr."""
    previous = sys.excepthook

    def hook(kind, value, traceback):
        previous(kind, value, traceback)
        sys.stderr.write(f"[process {STATE.index}] the error above ends this process: "
                         f"aborting the job (MPI_Abort), or the other processes would wait "
                         f"for it forever.\n")
        _abort(1)

    sys.excepthook = hook


def _abort(code: int) -> None:
    """Ends the job. What this process wrote goes to mpiexec through a pipe, and an abort
    tears the pipes down: the output is flushed, and given a moment to get through first."""
    sys.stdout.flush()
    sys.stderr.flush()
    time.sleep(0.5)
    STATE.comm.Abort(code)


# ------------------------------------------------------------------------------------------
# Exchanges: every one with a header and a timeout
# ------------------------------------------------------------------------------------------


def _wait(request: Any, what: str) -> None:
    """Waits for a non-blocking MPI call, sleeping a little between checks (on a machine
    with fewer cores than processes, spinning would take the cores the others need); past
    the timeout, the job is aborted with a message."""
    deadline = time.monotonic() + float(config.jax_from_numpy_collective_timeout)
    pause = 0.0
    while not request.Test():
        if time.monotonic() > deadline:
            sys.stderr.write(
                f"[process {STATE.index}] {what} waited "
                f"{float(config.jax_from_numpy_collective_timeout):.0f} s for the other "
                f"processes: one of them failed, hangs, or runs a different program. "
                f"Aborting the job (the limit is jax_from_numpy_collective_timeout).\n")
            _abort(2)
        time.sleep(pause)
        pause = min(2 * pause + 1e-5, 1e-3)


# --8<-- [start:exchange]
def exchange(comm: Any, kind: str, what: str, payload: Any) -> list[Any]:
    """Every process's ``payload`` (any picklable value), in process order, among the
    processes of ``comm``; an error if they are not all making the same kind of exchange
    for the same ``what``."""
    data = np.frombuffer(pickle.dumps(payload, protocol=5), np.uint8)
    label = int.from_bytes(hashlib.sha1(what.encode()).digest()[:6], "little")
    header = np.array([_KINDS[kind], label, data.size], np.int64)
    headers = np.empty((comm.size, 3), np.int64)
    _wait(comm.Iallgather(header, headers), what)
    if len({(int(h[0]), int(h[1])) for h in headers}) > 1:
        names = {v: k for k, v in _KINDS.items()}
        seen = "; ".join(f"process {p}: {names.get(int(h[0]), '?')}"
                         for p, h in enumerate(headers))
        raise RuntimeError(
            f"The processes are not at the same step ({seen}); this one is at {what}. Every "
            f"process of a job must run the same program, with the same shapes and "
            f"shardings, in the same order: look for code that depends on "
            f"jax.process_index().")
    sizes = headers[:, 2]
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    received = np.empty(int(sizes.sum()), np.uint8)
    _wait(comm.Iallgatherv(data, [received, sizes, offsets, _mpi().BYTE]), what)
    return [pickle.loads(received[o:o + s].tobytes()) for o, s in zip(offsets, sizes)]
# --8<-- [end:exchange]


# --8<-- [start:check_same_program]
def check_same_program(text: str) -> None:
    """At a program's first run: the processes compare a hash of it, and stop with an error
    naming them when they run different programs."""
    if not multiprocess():
        return
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    digests = exchange(STATE.comm, "program", "the first run of a program", digest)
    if len(set(digests)) > 1:
        runs = "; ".join(f"process {p} runs program {d}" for p, d in enumerate(digests))
        raise RuntimeError(
            f"The processes run different programs at this call ({runs}). Every process of "
            f"a job must run the same program, with the same shapes and shardings: look for "
            f"code that depends on jax.process_index().")
# --8<-- [end:check_same_program]


def agree(values: dict[int, int], what: str) -> dict[int, int]:
    """Every device's value of a step's decision (a loop's predicate, a branch index),
    from the devices of every process."""
    if not multiprocess():
        return values
    merged: dict[int, int] = {}
    for part in exchange(STATE.comm, "decision", what, values):
        merged.update(part)
    return merged


# ------------------------------------------------------------------------------------------
# Collectives across processes: communicators per group of processes
# ------------------------------------------------------------------------------------------


def _process_sets(groups: list[list[int]], owner: list[int]) -> list[frozenset[int]]:
    """The processes of each group of devices."""
    return [frozenset(owner[i] for i in members) for members in groups]


# --8<-- [start:communicator]
def communicator(groups: list[list[int]], owner: list[int]) -> Any | None:
    """The communicator of this process's groups: the processes that hold their devices (a
    mesh axis's processes), made once per set of groups. None when every group lies within
    one process (nothing crosses processes). Every process calls this at the same
    collective, as MPI's ``Split`` needs."""
    sets = _process_sets(groups, owner)
    key = tuple(sorted(set(sets), key=sorted))
    if key not in STATE.communicators:
        # Everyone first meets where a wait can time out: MPI's Split itself cannot.
        exchange(STATE.comm, "communicator", "making a communicator", None)
        if any(a != b and a & b for a in key for b in key):
            color = 0  # sets that overlap: every process exchanges with all
        else:  # disjoint sets: this process is in one, or none (its devices are not used)
            color = next((n for n, s in enumerate(key) if STATE.index in s), len(key))
        STATE.communicators[key] = STATE.comm.Split(color, STATE.index)
    comm = STATE.communicators[key]
    return None if comm.size == 1 else comm
# --8<-- [end:communicator]


# --8<-- [start:complete]
def complete(groups: list[list[int]], blocks: list[Any], owner: list[int],
             what: str) -> list[Any]:
    """``blocks`` with the other processes' blocks of this process's groups filled in (a
    copy of the list; its missing entries are None)."""
    comm = communicator(groups, owner)
    if comm is None:
        return blocks
    mine = {i: blocks[i] for members in groups for i in members
            if blocks[i] is not None and any(blocks[j] is None for j in members)}
    full = list(blocks)
    for part in exchange(comm, "blocks", what, mine):
        for i, block in part.items():
            if full[i] is None:
                full[i] = block
    return full
# --8<-- [end:complete]


# --8<-- [start:reduce]
def reduce(groups: list[list[int]], blocks: list[Any], owner: list[int],
           combine: Callable[[list[np.ndarray]], np.ndarray], what: str
           ) -> dict[int, np.ndarray]:
    """Each group's total (``combine`` of its blocks), for the groups this process has
    devices in: combined within the process first, then across processes (one partial per
    process and group travels, not every device's block)."""
    partials: dict[int, np.ndarray] = {}
    for g, members in enumerate(groups):
        local = [blocks[i] for i in members if blocks[i] is not None]
        if local:
            partials[g] = combine(local)
    comm = communicator(groups, owner)
    if comm is None:
        return partials
    parts: dict[int, list[np.ndarray]] = {g: [] for g in partials}
    for part in exchange(comm, "reduce", what, partials):  # in process order
        for g, value in part.items():
            if g in parts:
                parts[g].append(value)
    return {g: combine(values) for g, values in parts.items()}
# --8<-- [end:reduce]


def allgather(value: Any, what: str) -> list[Any]:
    """Every process's ``value``, in process order (``process_allgather``)."""
    if not multiprocess():
        return [value]
    return exchange(STATE.comm, "gather", what, value)


def print_environment_info(return_string: bool = False) -> str | None:
    """Stage 2's, with this library's version, its simulated devices and the processes of
    the job.

    Example:
        >>> import stage4_sharding as jax
        >>> print(jax.print_environment_info(return_string=True).splitlines()[0])
        stage4_sharding: 0.1.0
    """
    from stage2_jit.everyday import environment_info

    from .mesh import devices
    return environment_info("stage4_sharding", devices(), process_count(), return_string)
