"""The communication cost model: what each collective sends and receives per device, and
how long that takes on a ring.

Devices in a group of N (the devices that differ only along the collective's mesh axes) pass
blocks around a ring, each link carrying ``bandwidth`` bytes per second after a fixed
``latency`` per step. With B the bytes of each device's operand:

- all-reduce (``psum``, ``pmax``, ``pmin``), a reduce-scatter then an all-gather:
  2 (N-1)/N · B sent (and received) per device, in 2 (N-1) (latency + B/(N · bandwidth));
- all-gather, N-1 steps of one block: (N-1) · B, in (N-1) (latency + B/bandwidth);
- reduce-scatter (``psum_scatter``), N-1 steps of one piece: (N-1)/N · B, in
  (N-1) (latency + B/(N · bandwidth));
- all-to-all, a piece to each other device: (N-1)/N · B, in (N-1) (latency + B/(N · bandwidth));
- collective permute (``ppermute``), one send: B, in latency + B/bandwidth.

These are the bandwidth-optimal algorithms: no all-reduce can send less than 2 (N-1)/N · B
per device. ``axis_index`` and ``shard_slice`` read the device's position and move nothing.

NB: XLA estimates collective costs in xla/service/gpu/model/ (for instance
gpu_collective_performance_model.cc), with per-link bandwidths of the real interconnect.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from stage1_autodiff.config import config
from stage1_autodiff.core import ShapedArray

config.define("jax_collective_latency", 5e-6,
              "Seconds per step of a collective in stage 4's cost model.")
config.define("jax_link_bandwidth", 50e9,
              "Bytes per second over one link between devices in stage 4's cost model.")

KINDS = {"psum": "all-reduce", "pmax": "all-reduce", "pmin": "all-reduce",
         "all_gather": "all-gather", "psum_scatter": "reduce-scatter",
         "all_to_all": "all-to-all", "ppermute": "collective-permute"}


@dataclass(frozen=True)
class CollectiveCost:
    """One collective, as the cost model sees it (bytes per device, each time it runs)."""
    primitive: str
    kind: str
    axes: tuple[str, ...]
    group_size: int
    operand: ShapedArray  # one device's block
    bytes_sent: float
    bytes_received: float
    seconds: float
    # How many times one call runs it: 1, or the trip counts of the loops around it; None
    # inside a while_loop, whose trip count is known only when it runs.
    count: int | None = 1
    # Of bytes_sent, what crosses from one process to another (on several processes: the
    # ring's links between devices of different processes; an average over the devices).
    bytes_across_processes: float = 0.0

    def __str__(self) -> str:
        return (f"{self.kind:<18} {self.primitive:<13} {','.join(self.axes):<8} "
                f"{self.group_size:>5}  {self.operand.str_short():<18} "
                f"{_bytes(self.bytes_sent):>10} {self.seconds * 1e6:>10.1f}")


# --8<-- [start:collective_cost]
def collective_cost(primitive: str, operand: ShapedArray, axes: tuple[str, ...],
                    group_size: int, params: dict[str, Any]) -> CollectiveCost | None:
    """The bytes each device sends and receives, and the time, for one collective over a
    group of ``group_size`` devices; None for an operation that moves nothing."""
    # --8<-- [start:task4_3]
    kind = KINDS.get(primitive)
    if kind is None:
        return None
    n = group_size
    size = float(operand.size * operand.dtype.itemsize)
    latency, bandwidth = float(config.jax_collective_latency), float(config.jax_link_bandwidth)
    if n == 1:
        sent, seconds = 0.0, 0.0
    elif kind == "all-reduce":
        sent = 2 * (n - 1) / n * size
        seconds = 2 * (n - 1) * (latency + size / n / bandwidth)
    elif kind == "all-gather":
        sent = (n - 1) * size
        seconds = (n - 1) * (latency + size / bandwidth)
    elif kind in ("reduce-scatter", "all-to-all"):
        sent = (n - 1) / n * size
        seconds = (n - 1) * (latency + size / n / bandwidth)
    else:  # collective-permute: every device sends its block once (at most)
        sent = size
        seconds = latency + size / bandwidth
    return CollectiveCost(primitive, kind, axes, n, operand, sent, sent, seconds)
    # --8<-- [end:task4_3]
# --8<-- [end:collective_cost]


def group_size(mesh_shape: dict[str, int], axis_name: Any) -> int:
    names = axis_name if isinstance(axis_name, tuple) else (axis_name,)
    return math.prod(mesh_shape[name] for name in names)


# ------------------------------------------------------------------------------------------
# What ran: a log of the collectives executed
# ------------------------------------------------------------------------------------------

_logs: list[list[CollectiveCost]] = []


@contextmanager
def record_collectives() -> Iterator[list[CollectiveCost]]:
    """Collects every collective the runtime executes inside the block.

    Example:
        >>> import numpy as np, stage4_sharding as jax
        >>> from stage4_sharding.sharding import NamedSharding, P
        >>> mesh = jax.make_mesh((8,), ("data",))
        >>> x = jax.device_put(np.ones((8, 4), np.float32), NamedSharding(mesh, P("data")))
        >>> with jax.record_collectives() as log:
        ...     total = x.sum()
        >>> [(c.kind, c.bytes_sent) for c in log]
        [('all-reduce', 7.0)]
    """
    log: list[CollectiveCost] = []
    _logs.append(log)
    try:
        yield log
    finally:
        _logs.remove(log)


def note_executed(cost: CollectiveCost) -> None:
    for log in _logs:
        log.append(cost)


def totals(costs: list[CollectiveCost]) -> dict[str, float]:
    """Per call and per device: how many collectives run, the bytes they send and receive,
    their estimated seconds (each counted ``count`` times). Those inside a while_loop are
    summed apart, per iteration of the loop, when there are any."""
    known = [c for c in costs if c.count is not None]
    result = {
        "collectives": float(sum(c.count for c in known)),
        "bytes sent": sum((c.bytes_sent * c.count for c in known), 0.0),
        "bytes received": sum((c.bytes_received * c.count for c in known), 0.0),
        "communication seconds": sum((c.seconds * c.count for c in known), 0.0),
    }
    across = sum((c.bytes_across_processes * c.count for c in known), 0.0)
    if across:
        result["bytes sent across processes"] = across
    per_iteration = [c for c in costs if c.count is None]
    if per_iteration:
        result["collectives per while_loop iteration"] = float(len(per_iteration))
        result["bytes sent per while_loop iteration"] = sum(
            (c.bytes_sent for c in per_iteration), 0.0)
    return result


def report(costs: list[CollectiveCost]) -> str:
    """A table of collectives with their bytes per device and estimated times, each time
    they run; with a column of how many times one call runs them when that is not once
    (inside a loop: its trip count, ``?`` for a while_loop's)."""
    header = (f"{'collective':<18} {'primitive':<13} {'axes':<8} {'group':>5}  "
              f"{'block':<18} {'sent/dev':>10} {'time (us)':>10}")
    rows = list(map(str, costs))
    if any(c.bytes_across_processes for c in costs):
        header += f" {'across':>10}"
        rows = [f"{row} {_bytes(c.bytes_across_processes):>10}" for row, c in zip(rows, costs)]
    if any(c.count != 1 for c in costs):
        header += f" {'runs':>5}"
        rows = [f"{row} {'?' if c.count is None else c.count:>5}" for row, c in zip(rows, costs)]
    lines = [header, "-" * len(header), *rows]
    total = totals(costs)
    lines.append(f"{total['collectives']:.0f} collectives, {_bytes(total['bytes sent'])} sent "
                 f"per device, {total['communication seconds'] * 1e6:.1f} us estimated "
                 f"(latency {float(config.jax_collective_latency) * 1e6:g} us, link "
                 f"{float(config.jax_link_bandwidth) / 1e9:g} GB/s)")
    if "bytes sent across processes" in total:
        lines.append(f"of which {_bytes(total['bytes sent across processes'])} per device "
                     f"cross from one process to another (column 'across')")
    if "collectives per while_loop iteration" in total:
        lines.append(f"not counted above (runs ?): "
                     f"{total['collectives per while_loop iteration']:.0f} per iteration of a "
                     f"while_loop, {_bytes(total['bytes sent per while_loop iteration'])} sent "
                     f"per device each time; a while_loop's trip count is known only when it "
                     f"runs")
    return "\n".join(lines)


def _bytes(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n:.0f} B"
