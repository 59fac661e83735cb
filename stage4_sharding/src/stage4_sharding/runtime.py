"""The SPMD runtime: one per-device program, run on every simulated device of a mesh.

Each device holds its own blocks (an environment of NumPy arrays per device). The program is
cut at its collectives into *segments* of purely local equations; each segment is compiled
once by a stage-2 backend and run on every device in turn. At a collective the devices
exchange blocks: here a NumPy function over the blocks of each group of devices, and an
entry in the communication log with the bytes the cost model says a ring would move.

Segments are made as large as the data dependencies allow: an equation joins the current
segment as soon as its operands exist, so independent collectives (the all-reduces of
several gradients) gather at segment ends instead of splitting the program into slivers.

A loop (or a ``cond``) whose body needs a collective cannot be compiled into a segment: the
devices must meet inside each iteration. The runtime runs such a loop itself, a Python loop
over iterations that runs the body's own segments and collectives (``host_rules``); a loop
without collectives stays one compiled loop in its segment.

NB: on real hardware each device runs the whole compiled program and the collectives are
calls into NCCL or the interconnect's library; XLA schedules them to overlap computation
(xla/service/latency_hiding_scheduler.cc).
"""

from __future__ import annotations

import dataclasses
import functools
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
from stage1_autodiff.core import Device, Primitive, impl_rules
from stage2_jit.buffers import allocating_for
from stage2_jit.callback import io_callback_p
from stage2_jit.control_flow import cond_p, scan_p, while_p
from stage2_jit.debug import debug_print_p
from stage2_jit.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var
from stage2_jit.runtime import compile_jaxpr
from stage3_vmap.collectives import (
    all_gather_p,
    all_to_all_p,
    axis_index_p,
    pmax_p,
    pmin_p,
    ppermute_p,
    psum_p,
    psum_scatter_p,
)

from . import distributed
from .cost_model import CollectiveCost, collective_cost, group_size, note_executed
from .mesh import Mesh
from .partitioner import shard_slice_p

Blocks = list[np.ndarray]  # one value per device, in the mesh's flat order


class MeshGroups:
    """Which devices act together in a collective over some mesh axes: those whose
    coordinates differ only along those axes, ordered by their position along them."""

    def __init__(self, mesh: Mesh) -> None:
        self.mesh = mesh
        self.devices: list[Device] = list(mesh.devices.flat)
        self.coords = [dict(zip(mesh.axis_names, np.unravel_index(i, mesh.devices.shape)))
                       for i in range(mesh.size)]
        self._groups: dict[tuple[str, ...], list[list[int]]] = {}

    def groups(self, names: tuple[str, ...]) -> list[list[int]]:
        if names not in self._groups:
            by_rest: dict[tuple, list[int]] = {}
            for i, coords in enumerate(self.coords):
                rest = tuple(v for k, v in coords.items() if k not in names)
                by_rest.setdefault(rest, []).append(i)
            for members in by_rest.values():
                members.sort(key=lambda i: self.position(i, names))
            self._groups[names] = list(by_rest.values())
        return self._groups[names]

    def position(self, i: int, names: tuple[str, ...]) -> int:
        """Device ``i``'s index along ``names`` (major first)."""
        position = 0
        for name in names:
            position = position * self.mesh.shape[name] + int(self.coords[i][name])
        return position


# ------------------------------------------------------------------------------------------
# The collectives, on blocks
# ------------------------------------------------------------------------------------------

# impl(groups of device indices, blocks, **params) -> blocks
DeviceOp = Callable[..., Blocks]
device_ops: dict[Primitive, DeviceOp] = {}


def _per_group(combine: Callable[[list[np.ndarray]], list[np.ndarray]]) -> DeviceOp:
    def run(groups: list[list[int]], blocks: Blocks) -> Blocks:
        out: Blocks = [None] * len(blocks)  # type: ignore[list-item]
        for members in groups:
            if any(blocks[i] is None for i in members):
                continue  # another process's group (on several processes)
            for i, value in zip(members, combine([blocks[i] for i in members])):
                out[i] = value
        return out
    return run


def _combined(ufunc: np.ufunc, values: list[np.ndarray]) -> np.ndarray:
    total = np.array(values[0])  # a fresh buffer, combined into in place
    for value in values[1:]:
        ufunc(total, value, out=total)
    return total


def _reduce(ufunc: np.ufunc) -> DeviceOp:
    def combine(values):
        return [_combined(ufunc, values)] * len(values)
    return lambda groups, blocks, **params: _per_group(combine)(groups, blocks)


REDUCTIONS = {psum_p: np.add, pmax_p: np.maximum, pmin_p: np.minimum}
for _primitive, _ufunc in REDUCTIONS.items():
    device_ops[_primitive] = _reduce(_ufunc)


def _all_gather(groups, blocks, *, axis, tiled):
    def combine(values):
        whole = np.concatenate(values, axis) if tiled else np.stack(values, axis)
        return [whole] * len(values)
    return _per_group(combine)(groups, blocks)


device_ops[all_gather_p] = _all_gather


def _psum_scatter(groups, blocks, *, scatter_dimension, tiled):
    def combine(values):
        total = _combined(np.add, values)
        if tiled:
            return [np.ascontiguousarray(b) for b in np.split(total, len(values),
                                                              scatter_dimension)]
        return [np.array(np.take(total, j, scatter_dimension), order="C")
                for j in range(len(values))]
    return _per_group(combine)(groups, blocks)


device_ops[psum_scatter_p] = _psum_scatter


def _all_to_all(groups, blocks, *, split_axis, concat_axis, tiled):
    def combine(values):
        n = len(values)
        if tiled:
            pieces = [np.split(v, n, split_axis) for v in values]
            return [np.concatenate([pieces[j][i] for j in range(n)], concat_axis)
                    for i in range(n)]
        return [np.stack([np.take(values[j], i, split_axis) for j in range(n)], concat_axis)
                for i in range(n)]
    return _per_group(combine)(groups, blocks)


device_ops[all_to_all_p] = _all_to_all


def _ppermute(groups, blocks, *, perm):
    def combine(values):
        out = [np.zeros_like(v) for v in values]
        for src, dst in perm:
            out[dst] = values[src]
        return out
    return _per_group(combine)(groups, blocks)


device_ops[ppermute_p] = _ppermute


def _axis_index(mesh_groups: MeshGroups, names: tuple[str, ...]) -> Blocks:
    return [np.int32(mesh_groups.position(i, names)) for i in range(len(mesh_groups.devices))]


def _shard_slice(mesh_groups: MeshGroups, blocks: Blocks, axes) -> Blocks:
    out = []
    mesh = mesh_groups.mesh
    for i, block in enumerate(blocks):
        if block is None:  # another process's device
            out.append(None)
            continue
        index = []
        for size, names in zip(block.shape, axes):
            if not names:
                index.append(slice(None))
                continue
            parts = int(np.prod([mesh.shape[n] for n in names]))
            k = mesh_groups.position(i, tuple(names))
            index.append(slice(k * (size // parts), (k + 1) * (size // parts)))
        out.append(np.array(block[tuple(index)], order="C"))
    return out


# debug_print (and jax.debug.callback) is run once, by the runtime (see its host rule).
DEVICE_PRIMITIVES = {*device_ops, axis_index_p, shard_slice_p, debug_print_p, io_callback_p}


# ------------------------------------------------------------------------------------------
# Scheduling: segments between collectives
# ------------------------------------------------------------------------------------------


class Segment:
    """Local equations, compiled as one stage-2 program per backend."""

    def __init__(self, eqns: list[JaxprEqn], inputs: list[Var], outputs: list[Var]) -> None:
        self.inputs, self.outputs = inputs, outputs
        self.program = ClosedJaxpr(Jaxpr([], inputs, outputs, eqns), [])


def held_programs(eqn: JaxprEqn) -> list[ClosedJaxpr]:
    """The programs a control-flow equation holds: its branches, or its predicate and body."""
    if eqn.primitive is cond_p:
        return list(eqn.params["branches"])
    if eqn.primitive is while_p:
        return [eqn.params["cond_jaxpr"], eqn.params["body_jaxpr"]]
    if eqn.primitive is scan_p:
        return [eqn.params["jaxpr"]]
    return []


def device_ops_in(programs: list[ClosedJaxpr]) -> set[str]:
    """The device operations (collectives, ``shard_slice``, ``axis_index``) that programs
    run, at any depth of control flow."""
    names = set()
    for program in programs:
        for eqn in program.jaxpr.eqns:
            if eqn.primitive in DEVICE_PRIMITIVES:
                names.add(eqn.primitive.name)
            names |= device_ops_in(held_programs(eqn))
    return names


def schedule(jaxpr: Jaxpr) -> list[Segment | JaxprEqn]:
    """The program as steps: segments of local equations, and single steps between them:
    device operations, and control flow whose loop body or branches hold some (the runtime
    runs those one iteration at a time, see ``host_rules``)."""
    ready = set(jaxpr.constvars) | set(jaxpr.invars)
    between = {id(eqn) for eqn in jaxpr.eqns
               if eqn.primitive in DEVICE_PRIMITIVES or device_ops_in(held_programs(eqn))}

    def available(eqn):
        return all(isinstance(a, Literal) or a in ready for a in eqn.invars)

    pending, steps = list(jaxpr.eqns), []
    while pending:
        local, rest = [], []
        for eqn in pending:
            if id(eqn) not in between and available(eqn):
                local.append(eqn)
                ready.update(eqn.outvars)
            else:
                rest.append(eqn)
        device, pending = [], []
        for eqn in rest:
            if id(eqn) in between and available(eqn):
                device.append(eqn)
                ready.update(eqn.outvars)
            else:
                pending.append(eqn)
        if not local and not device:
            raise AssertionError("the per-device program has a dependency cycle")
        steps += ([local] if local else []) + device
    # Each segment's inputs and the outputs something later reads.
    needed = {v for v in jaxpr.outvars if isinstance(v, Var)}
    out: list[Segment | JaxprEqn] = []
    for step in reversed(steps):
        if isinstance(step, list):
            defined = {v for eqn in step for v in eqn.outvars}
            outputs = [v for eqn in step for v in eqn.outvars if v in needed]
            inputs = list(dict.fromkeys(a for eqn in step for a in eqn.invars
                                        if isinstance(a, Var) and a not in defined))
            needed.update(inputs)
            out.append(Segment(step, inputs, outputs))
        else:
            needed.update(a for a in step.invars if isinstance(a, Var))
            out.append(step)
    return out[::-1]


# ------------------------------------------------------------------------------------------
# Running
# ------------------------------------------------------------------------------------------


class SpmdExecutable:
    """A per-device program ready to run on a mesh with one backend."""

    def __init__(self, local: ClosedJaxpr, mesh: Mesh, backend: str) -> None:
        self.local, self.mesh, self.backend = local, mesh, backend
        self.groups = MeshGroups(mesh)
        self.n = len(self.groups.devices)
        # On several processes (distributed.py), each runs the program on its own devices.
        self.owner = [d.process_index for d in self.groups.devices]
        self.mine = [p == distributed.process_index() for p in self.owner]
        distributed.check_same_program(f"{mesh.shape} {backend}\n{local}")
        # id(program) -> (program, its steps, its segments' executables): the top-level
        # program's, and those of the loop bodies and branches the runtime steps through.
        self._scheduled: dict[int, tuple[ClosedJaxpr, list, dict[int, Any]]] = {}
        self.scheduled(local)  # compiled now; the programs inside loops on first use

    def scheduled(self, program: ClosedJaxpr) -> tuple[list[Segment | JaxprEqn], dict]:
        """A program's steps and compiled segments, made on first use (a loop body's once,
        for all of its iterations)."""
        if id(program) not in self._scheduled:
            steps = schedule(program.jaxpr)
            executables = {id(s): compile_jaxpr(s.program, self.backend)
                           for s in steps if isinstance(s, Segment)}
            self._scheduled[id(program)] = (program, steps, executables)
        _, steps, executables = self._scheduled[id(program)]
        return steps, executables

    def __call__(self, args: list[Blocks]) -> list[Blocks]:
        """``args[k][i]``: device i's block of argument k; the results likewise."""
        return self.run(self.local, args)

    def run(self, program: ClosedJaxpr, args: list[Blocks]) -> list[Blocks]:
        """Runs ``program`` (the whole per-device program, or a loop body or branch of it)
        on every device."""
        steps, executables = self.scheduled(program)
        n, jaxpr = self.n, program.jaxpr
        env: dict[Var, Blocks] = {}
        for var, value in zip(jaxpr.constvars, program.consts):
            env[var] = [np.asarray(getattr(value, "_value", value))] * n
        for var, blocks in zip(jaxpr.invars, args):
            env[var] = blocks

        def read(atom) -> Blocks:
            return [np.asarray(atom.val)] * n if isinstance(atom, Literal) else env[atom]

        for step in steps:
            if isinstance(step, Segment):
                run = executables[id(step)]
                inputs = [read(v) for v in step.inputs]
                results = []
                for i, device in enumerate(self.groups.devices):
                    if not self.mine[i]:
                        results.append(None)  # another process's device
                        continue
                    with allocating_for(device):  # the pool counts the outputs for device i
                        results.append(run(*[blocks[i] for blocks in inputs]))
                for k, var in enumerate(step.outputs):
                    env[var] = [None if r is None else np.asarray(r[k]._value)
                                for r in results]
            elif step.primitive in host_rules:
                outs = host_rules[step.primitive](self, [read(a) for a in step.invars],
                                                  **step.params)
                env.update(zip(step.outvars, outs))
            else:
                env[step.outvars[0]] = self.device_op(step, [read(a) for a in step.invars])
        return [read(v) for v in jaxpr.outvars]

    # --8<-- [start:device_op]
    def device_op(self, eqn: JaxprEqn, operands: list[Blocks]) -> Blocks:
        params = dict(eqn.params)
        if eqn.primitive is shard_slice_p:
            return _shard_slice(self.groups, operands[0], params["axes"])
        names = _axis_names(params.pop("axis_name"))
        if eqn.primitive is axis_index_p:
            return _axis_index(self.groups, names)
        cost = eqn_cost(eqn, self.mesh)
        if cost is not None:
            note_executed(cost)
        groups, blocks = self.groups.groups(names), operands[0]
        if distributed.multiprocess():  # the other processes' blocks of this one's groups
            what = f"{eqn.primitive.name} over {', '.join(names)}"
            if eqn.primitive in REDUCTIONS:  # within each process first, then across
                combine = functools.partial(_combined, REDUCTIONS[eqn.primitive])
                totals = distributed.reduce(groups, blocks, self.owner, combine, what)
                out: Blocks = [None] * self.n  # type: ignore[list-item]
                for g, total in totals.items():
                    for i in groups[g]:
                        out[i] = total if self.mine[i] else None
                return out
            blocks = distributed.complete(groups, blocks, self.owner, what)
        out = device_ops[eqn.primitive](groups, blocks, **params)
        return [block if mine else None for block, mine in zip(out, self.mine)]
    # --8<-- [end:device_op]

    def agreed(self, blocks: Blocks, programs: list[ClosedJaxpr], what: str,
               label: Callable[[int], str]) -> int:
        """The one value every device has for a scalar that decides a step (a branch index,
        a loop's predicate); an error if the devices disagree, since a collective inside
        the loop or branch needs every device of its group to get there."""
        known = distributed.agree({i: int(np.asarray(b)) for i, b in enumerate(blocks)
                                   if b is not None}, what)
        values = [known[i] for i in range(len(blocks))]
        if len(set(values)) == 1:
            return values[0]
        where = "; ".join(f"{label(v)} on devices {[i for i, x in enumerate(values) if x == v]}"
                          for v in sorted(set(values)))
        inside = ", ".join(sorted(device_ops_in(programs)))
        raise ValueError(
            f"{what} differs between devices ({where}). Its loop body or branches run "
            f"{inside}, so the runtime steps through them on all devices together, and every "
            f"device must take the same path (a collective waits for every device of its "
            f"group). Make it the same on every device: compute it from replicated values, "
            f"or combine it over the mesh axes first (jax.lax.pmax or jax.lax.psum).")


# ------------------------------------------------------------------------------------------
# Control flow whose programs exchange blocks: run by the runtime, one step at a time
# ------------------------------------------------------------------------------------------

# --8<-- [start:host_rules]
# rule(executable, operands as blocks, **params) -> results as blocks. A loop whose body runs
# a collective cannot be one compiled loop here: the devices meet between segments. So the
# host runs it: each iteration runs the body's own segments and collectives, and every
# collective is logged once per iteration. (Loops without collectives stay compiled.)
HostRule = Callable[..., list[Blocks]]
host_rules: dict[Primitive, HostRule] = {}


def cond_host_rule(ex: SpmdExecutable, operands, *, branches):
    index = ex.agreed(operands[0], list(branches), "cond's choice of branch",
                      lambda v: f"branch {v}")
    return ex.run(branches[index], operands[1:])


host_rules[cond_p] = cond_host_rule


def while_host_rule(ex: SpmdExecutable, operands, *, cond_jaxpr, body_jaxpr, cond_nconsts,
                    body_nconsts):
    cond_consts = operands[:cond_nconsts]
    body_consts = operands[cond_nconsts:cond_nconsts + body_nconsts]
    carry = operands[cond_nconsts + body_nconsts:]
    while ex.agreed(ex.run(cond_jaxpr, [*cond_consts, *carry])[0], [cond_jaxpr, body_jaxpr],
                    "while_loop's predicate", lambda v: str(bool(v))):
        carry = ex.run(body_jaxpr, [*body_consts, *carry])
    return carry


host_rules[while_p] = while_host_rule


def scan_host_rule(ex: SpmdExecutable, operands, *, jaxpr, length, reverse, num_consts,
                   num_carry, **params):
    consts = operands[:num_consts]
    carry = operands[num_consts:num_consts + num_carry]
    xs = operands[num_consts + num_carry:]
    ys = []
    for i in (range(length - 1, -1, -1) if reverse else range(length)):
        x = [[None if block is None else block[i] for block in blocks]
             for blocks in xs]  # each device's slice
        outs = ex.run(jaxpr, [*consts, *carry, *x])
        carry = outs[:num_carry]
        ys.append(outs[num_carry:])
    if reverse:
        ys.reverse()
    stacked = []
    for k, aval in enumerate(jaxpr.out_avals[num_carry:]):
        stacked.append([None if not ex.mine[d] else np.stack([y[k][d] for y in ys]) if ys
                        else np.zeros((0, *aval.shape), aval.dtype) for d in range(ex.n)])
    return [*carry, *stacked]


host_rules[scan_p] = scan_host_rule
# --8<-- [end:host_rules]


def debug_print_host_rule(ex: SpmdExecutable, operands: list[Blocks], *, once: bool = False,
                          **params: Any) -> list:
    """A debug print or callback of the whole program (``once``: the partition rule gave
    every device the whole values) runs once, with device 0's values, by the process that
    has device 0, as XLA runs it on one device. One in a ``shard_map`` body runs on each
    device, with its block, as in JAX."""
    for i in ([0] if once else range(ex.n)):
        if ex.mine[i]:
            impl_rules[debug_print_p](*[blocks[i] for blocks in operands], **params)
    return []


host_rules[debug_print_p] = debug_print_host_rule


def io_callback_host_rule(ex: SpmdExecutable, operands: list[Blocks], *, once: bool = False,
                          **params: Any) -> list:
    """An io_callback of the whole program runs once, with device 0's (whole) values, as a
    print does, and every device gets its results; in a ``shard_map`` body, once per device
    with its block. Results made in one process would have to be sent to the others, which
    is not written: refused there, with a clear error."""
    if once and params["result_avals"] and not all(ex.mine):
        raise NotImplementedError("An io_callback with results in a program over several "
                                  "processes is not supported: its results would have to be "
                                  "sent from the process that calls it. Return nothing from "
                                  "it, or call it in a shard_map body.")
    calls = {i: impl_rules[io_callback_p](*[blocks[i] for blocks in operands], **params)
             for i in ([0] if once else range(ex.n)) if ex.mine[i]}
    outs = [[None] * ex.n for _ in params["result_avals"]]
    for d in range(ex.n):
        if ex.mine[d]:
            for k, out in enumerate(calls[0 if once else d]):
                outs[k][d] = np.array(out._value)
    return outs


host_rules[io_callback_p] = io_callback_host_rule


_executables: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def spmd_executable(local: ClosedJaxpr, mesh: Mesh, backend: str) -> SpmdExecutable:
    """The executable of a per-device program, made once per backend and kept with it."""
    per_backend = _executables.setdefault(local, {})
    if backend not in per_backend:
        per_backend[backend] = SpmdExecutable(local, mesh, backend)
    return per_backend[backend]


def _axis_names(axis_name: Any) -> tuple[str, ...]:
    return axis_name if isinstance(axis_name, tuple) else (axis_name,)


def eqn_cost(eqn: JaxprEqn, mesh: Mesh) -> Any:
    """A collective equation's cost on ``mesh`` (None for one that moves nothing); on
    several processes, with the bytes that cross between them."""
    names = _axis_names(eqn.params["axis_name"])
    params = {k: v for k, v in eqn.params.items() if k != "axis_name"}
    cost = collective_cost(eqn.primitive.name, eqn.invars[0].aval, names,
                           group_size(mesh.shape, names), params)
    if cost is None or not distributed.multiprocess():
        return cost
    share = crossing_share(mesh, names, tuple(params.get("perm", ())))
    return dataclasses.replace(cost, bytes_across_processes=cost.bytes_sent * share)


@functools.cache
def crossing_share(mesh: Mesh, names: tuple[str, ...], perm: tuple) -> float:
    """Of what a device sends in a collective over ``names``, the share that goes to a
    device of another process, averaged over the devices: in a ring, the links between
    neighbours of different processes; in a permutation, the pairs ``perm`` names."""
    groups, crossing, devices = MeshGroups(mesh), 0, 0
    for members in groups.groups(names):
        owner = [groups.devices[i].process_index for i in members]
        links = perm or [(j, (j + 1) % len(members)) for j in range(len(members))]
        crossing += sum(owner[a] != owner[b] for a, b in links)
        devices += len(members)
    return crossing / devices


# --8<-- [start:static_costs]
def static_costs(local: ClosedJaxpr, mesh: Mesh) -> list[CollectiveCost]:
    """The collectives a per-device program runs, with their costs, without running it.
    One inside a loop counts as many times as the loop runs (its ``count``: the product of
    the trip counts of the ``scan``s and ``fori_loop``s around it; None inside a
    ``while_loop``, whose trip count is known only when it runs). Of a ``cond``'s branches,
    the costliest counts (XLA's HloCostAnalysis takes the maximum over branches too)."""
    return _costs(local.jaxpr, mesh, 1)


def _costs(jaxpr: Jaxpr, mesh: Mesh, count: int | None) -> list[CollectiveCost]:
    costs: list[CollectiveCost] = []
    for eqn in jaxpr.eqns:
        if eqn.primitive in device_ops:
            cost = eqn_cost(eqn, mesh)
            costs += [] if cost is None else [dataclasses.replace(cost, count=count)]
        elif eqn.primitive is scan_p:
            times = None if count is None else count * eqn.params["length"]
            costs += _costs(eqn.params["jaxpr"].jaxpr, mesh, times)
        elif eqn.primitive is while_p:
            for program in held_programs(eqn):
                costs += _costs(program.jaxpr, mesh, None)
        elif eqn.primitive is cond_p:
            options = [_costs(b.jaxpr, mesh, count) for b in eqn.params["branches"]]
            costs += max(options, key=lambda cs: sum(c.seconds for c in cs))
    return costs
# --8<-- [end:static_costs]

