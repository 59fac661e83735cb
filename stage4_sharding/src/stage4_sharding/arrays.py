"""Sharded arrays: ``device_put(x, P(...))``, ``x.sharding``, ``typeof(x)`` and
``visualize_array_sharding``.

A ``ShardedArray`` holds one NumPy block per device of its sharding's mesh (replicated dims
repeat a block on several devices): the simulated devices' memories. Its global value is only
assembled when asked for (``np.asarray``, printing).

Operations on sharded arrays, eager or jitted, run through the partitioner
(``partitioner.py``) and the SPMD runtime (``runtime.py``): each device computes its blocks,
and the devices exchange blocks in collectives where the layouts require.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np
from stage1_autodiff.config import config
from stage1_autodiff.core import (
    Array,
    Device,
    Primitive,
    ShapedArray,
    Shard,
    SingleDeviceSharding,
    Tracer,
    asarray,
)
from stage1_autodiff.extension import set_placement, track_device_memory
from stage2_jit.arrays import PlacedArray
from stage2_jit.buffers import lent
from stage2_jit.jaxpr import ClosedJaxpr
from stage2_jit.jit import jit_p
from stage2_jit.runtime import BACKEND_COMPILERS
from stage2_jit.tracing import trace_to_jaxpr

from . import distributed
from .mesh import NO_MESH, Mesh, devices, get_mesh
from .named_sharding import NamedSharding, P, PartitionSpec, as_sharding, type_string
from .partitioner import is_sharded, partition
from .runtime import spmd_executable
from .sharded_types import ShardingInTypes, mesh_of
from .sharding_rules import Spec, spec_of


class ShardedArray(PlacedArray):
    """An Array split over the devices of a mesh, one block per device."""

    __slots__ = ("_shards", "_sharding", "_release")

    def __init__(self, shards: dict[Device, np.ndarray], aval: ShapedArray,
                 sharding: NamedSharding) -> None:
        super().__init__(aval)
        self._aval = self._aval._replace(sharding=sharding)
        self._shards = shards
        self._sharding = sharding
        # Each device owns its block: counted while the array lives (by stage 2's pool,
        # when the block's memory is from there).
        sizes = [(device, block.nbytes) for device, block in shards.items() if not lent(block)]
        for device, nbytes in sizes:
            track_device_memory(device, nbytes)
        self._release = weakref.finalize(self, _release, sizes)

    def _let_go(self) -> None:
        self._shards = self._host  # the blocks die (or go back to the pool) ...
        self._release()  # ... and each device stops counting them, once

    def _fetch(self) -> np.ndarray:
        """The global array, assembled from the blocks; where several devices hold a copy
        of a block, the first device's (they are equal unless shard_map's replication
        check was turned off)."""
        indices = self._sharding.devices_indices_map(self._aval.shape).items()
        held = {_key(index) for device, index in indices if device in self._shards}
        if len(held) < len({_key(index) for _, index in indices}):  # JAX's condition too
            raise RuntimeError(
                "Fetching value for `jax.Array` that spans non-addressable (non process "
                "local) devices is not possible. You can use "
                "`jax.experimental.multihost_utils.process_allgather` to print the global "
                "array or use `.addressable_shards` method of jax.Array to inspect the "
                "addressable (process local) shards.")
        return assemble(self._shards, self._sharding, self._aval)

    @property
    def is_fully_addressable(self) -> bool:
        """Whether this process holds every block (always, on one process)."""
        return len(self._shards) == self._sharding.mesh.devices.size

    @property
    def sharding(self) -> NamedSharding: return self._sharding

    @property
    def device(self) -> Device:
        raise ValueError("device is only defined for an array on one device; this one is "
                         "sharded: use .devices() or .sharding.")

    def devices(self) -> set[Device]:
        return set(self._shards)

    @property
    def addressable_shards(self) -> list[Shard]:
        """The blocks this process holds, each with its device, its index into the global
        array and which copy of that block it is (the first device holding it has 0)."""
        if self.is_deleted():
            self._concrete_value("x.addressable_shards")  # raises JAX's error
        copies: dict[tuple, int] = {}
        shards = []
        for device, index in self._sharding.devices_indices_map(self._aval.shape).items():
            replica = copies[_key(index)] = copies.get(_key(index), -1) + 1
            if device in self._shards:
                block = Array(self._shards[device], self.weak_type)
                shards.append(Shard(device, index, replica, block))
        return shards

    def addressable_data(self, index: int) -> Array:
        """The block this process holds on its ``index``-th device, as an array (on device 0:
        see "Differences from JAX"); of a replicated array, the whole array whatever
        ``index``, as JAX answers."""
        blocks = list(self._shards.values())
        return Array(blocks[0 if self.is_fully_replicated else index], self.weak_type)

    @classmethod
    def apply_primitive(cls, prim: Primitive, arrays: list[Array],
                        params: dict[str, Any]) -> list[Array]:
        """An eager operation on sharded arrays runs as a program of one equation, through
        the partitioner and on every device, as a jitted program does (a jitted call binds
        ``jit_p``, whose program runs as it is)."""
        if prim is jit_p:
            return run_program(params["jaxpr"], arrays, params["backend"])
        return run_primitive(prim, arrays, params)


def assemble(shards: dict[Device, np.ndarray], sharding: NamedSharding,
             aval: ShapedArray) -> np.ndarray:
    """The global array from ``shards``, which hold every distinct block (a replicated
    one once is enough)."""
    out = np.empty(aval.shape, aval.dtype)
    placed = set()
    for device, index in sharding.devices_indices_map(aval.shape).items():
        if _key(index) not in placed and device in shards:
            placed.add(_key(index))
            out[index] = shards[device]
    return out


def _key(index: tuple[slice, ...]) -> tuple:
    return tuple((s.start, s.stop) for s in index)


def _release(sizes: list[tuple[Device, int]]) -> None:
    for device, nbytes in sizes:
        track_device_memory(device, -nbytes)


# --8<-- [start:run_program]
def run_program(program: ClosedJaxpr, arrays: list[Any], backend: str) -> list[ShardedArray]:
    """Runs a program over sharded values: partitioned for its mesh, then run on every device
    with ``backend`` compiling the local segments. Arguments are used block by block; a
    plain array is on every device."""
    mesh = mesh_of([*program.in_avals, *program.out_avals], "a program", any_types=True)
    assert mesh is not None, "run_program is for programs over sharded arrays"
    lowered = partition(program, mesh)
    executable = spmd_executable(lowered.local, mesh, backend)
    device_list = executable.groups.devices
    args = [blocks_of(a, spec, mesh, device_list) for a, spec in zip(arrays, lowered.in_specs)]
    outs = executable(args)
    results = []
    for blocks, aval in zip(outs, program.out_avals):
        sharding = aval.sharding or NamedSharding(mesh, P())
        results.append(ShardedArray({d: b for d, b in zip(device_list, blocks)
                                     if b is not None}, aval, sharding))
    return results
# --8<-- [end:run_program]


def blocks_of(x: Any, spec: Spec, mesh: Mesh, device_list: list[Device]) -> list[np.ndarray]:
    """Each device's block of ``x`` under ``spec``: the blocks a sharded array already holds,
    or slices of a plain one (the same array on every device when not split)."""
    if isinstance(x, ShardedArray) and x.sharding.mesh == mesh and \
            spec_of(x.sharding.spec, x.ndim) == tuple(spec):
        return [x._shards.get(d) for d in device_list]  # None: another process's device
    value = np.asarray(x._value if isinstance(x, Array) else x)
    if not any(spec):
        return [value] * len(device_list)
    sharding = NamedSharding(mesh, P(*(axes or None for axes in spec)))
    index = sharding.devices_indices_map(value.shape)
    here = distributed.process_index()
    return [np.array(value[index[d]], order="C") if d.process_index == here else None
            for d in device_list]


_one_equation: dict[Any, ClosedJaxpr] = {}


def run_primitive(prim: Primitive, arrays: list[Array], params: dict[str, Any]) -> list[Array]:
    """An eager operation on sharded arrays: its one-equation program (traced once per
    primitive, parameters and operand types), run through the partitioner."""
    avals = [a.aval for a in arrays]
    try:
        key: Any = (prim, tuple(sorted(params.items())), tuple(avals))
        hash(key)
    except TypeError:
        key = None
    program = _one_equation.get(key) if key is not None else None
    if program is None:
        def one(*xs):
            outs = prim.bind(*xs, **params)
            return list(outs) if prim.multiple_results else [outs]
        ShardingInTypes.eager.active = True
        try:
            jaxpr, consts = trace_to_jaxpr(one, avals)
        finally:
            ShardingInTypes.eager.active = False
        program = ClosedJaxpr(jaxpr, consts)
        if key is not None:
            _one_equation[key] = program
    return run_program(program, arrays, "interpreter")
NamedSharding.executor = run_primitive


def _sharding_aware(compile_for_backend: Any, backend: str) -> Any:
    """Stage 2's compiler for ``backend``, sending programs over sharded types to the
    partitioner (a jitted function whose arguments are plain but which reshards inside)."""
    def compile_program(program: ClosedJaxpr) -> Any:
        if not is_sharded(program):
            return compile_for_backend(program)
        return lambda *values: run_program(program, list(values), backend)
    return compile_program


for _name, _compiler in list(BACKEND_COMPILERS.items()):
    BACKEND_COMPILERS[_name] = _sharding_aware(_compiler, _name)


def shard(x: Any, sharding: NamedSharding) -> ShardedArray:
    """``x`` split into the blocks ``sharding`` gives each device (a copy per device)."""
    array = asarray(x)
    sharding.check(array.shape)
    value = np.asarray(array._value)
    here = distributed.process_index()  # on several processes, each keeps its own blocks
    blocks = {device: np.array(value[index], order="C")
              for device, index in sharding.devices_indices_map(array.shape).items()
              if device.process_index == here}
    return ShardedArray(blocks, array.aval, sharding)


def make_array_from_callback(shape: tuple[int, ...], sharding: NamedSharding,
                             data_callback: Any) -> ShardedArray:
    """A global array of ``shape``, each of this process's blocks
    ``data_callback(index)``: the block's index (a tuple of slices) into the global array.

    Example:
        >>> import numpy as np, stage4_sharding as jax
        >>> from stage4_sharding.sharding import NamedSharding, P
        >>> mesh = jax.make_mesh((8,), ("data",))
        >>> whole = np.arange(16.0, dtype=np.float32).reshape(8, 2)
        >>> x = jax.make_array_from_callback((8, 2), NamedSharding(mesh, P("data")),
        ...                                  lambda index: whole[index])
        >>> print(jax.typeof(x), float(x.sum()))
        float32[8@data,2] 120.0
    """
    shape = tuple(shape)
    sharding.check(shape)
    here = distributed.process_index()
    blocks = {device: np.ascontiguousarray(asarray(data_callback(index))._value)
              for device, index in sharding.devices_indices_map(shape).items()
              if device.process_index == here}
    dtype = next(iter(blocks.values())).dtype
    return ShardedArray(blocks, ShapedArray(shape, dtype), sharding)


def make_array_from_single_device_arrays(shape: tuple[int, ...], sharding: NamedSharding,
                                         arrays: Sequence[Array], *, dtype: Any = None
                                         ) -> ShardedArray:
    """A global array of ``shape`` from its blocks, one array per device of ``sharding`` that
    this process holds, in the order of ``sharding.addressable_devices_indices_map(shape)``
    (``x.addressable_shards``' order, so ``[s.data for s in x.addressable_shards]`` makes
    ``x`` again). The blocks are used as they are, not copied.

    Example:
        >>> import numpy as np, stage4_sharding as jax, stage4_sharding.numpy as jnp
        >>> from stage4_sharding.sharding import NamedSharding, P
        >>> sharding = NamedSharding(jax.make_mesh((8,), ("data",)), P("data"))
        >>> blocks = [jnp.full((2,), float(i)) for i in range(8)]
        >>> x = jax.make_array_from_single_device_arrays((16,), sharding, blocks)
        >>> print(jax.typeof(x), np.asarray(x)[:5])
        float32[16@data] [0. 0. 1. 1. 2.]
    """
    shape, arrays = tuple(shape), list(arrays)
    sharding.check(shape)
    here = distributed.process_index()
    mine = [(device, index) for device, index in sharding.devices_indices_map(shape).items()
            if device.process_index == here]
    if len(arrays) != len(mine):
        raise ValueError(f"make_array_from_single_device_arrays: expected {len(mine)} "
                         f"per-device arrays (this process holds {len(mine)} devices of the "
                         f"sharding, in the order of sharding.addressable_devices_indices_map"
                         f"), but got {len(arrays)}.")
    blocks = {device: _single_block(array, index, shape)
              for (device, index), array in zip(mine, arrays)}
    found = {block.dtype for block in blocks.values()}
    if len(found) > 1 or dtype is not None and found != {np.dtype(dtype)}:
        raise ValueError(f"make_array_from_single_device_arrays: the blocks must all have "
                         f"one dtype{f', the dtype= given ({np.dtype(dtype)})' if dtype else ''}"
                         f", but they have {sorted(d.name for d in found)}.")
    return ShardedArray(blocks, ShapedArray(shape, found.pop()), sharding)


def _single_block(array: Any, index: tuple[slice, ...], shape: tuple[int, ...]) -> np.ndarray:
    """One block of ``make_array_from_single_device_arrays``, checked: a concrete array on
    one device, of the shape the sharding gives its device."""
    if isinstance(array, Tracer):
        raise ValueError("make_array_from_single_device_arrays takes concrete arrays, but got "
                         "a traced value: call it outside jit and the other transformations.")
    if not isinstance(array, Array):
        raise TypeError(f"make_array_from_single_device_arrays takes jax arrays, got "
                        f"{type(array).__name__}: put each block with jax.device_put first.")
    if isinstance(array, ShardedArray) and len(array.addressable_shards) > 1:
        raise ValueError(f"make_array_from_single_device_arrays takes arrays of one block "
                         f"each; an argument has {len(array.addressable_shards)} blocks.")
    want = tuple(len(range(*s.indices(n))) for s, n in zip(index, shape))
    if array.shape != want:
        raise ValueError(f"make_array_from_single_device_arrays: a block of {shape} has shape "
                         f"{want} under this sharding, but an argument has shape "
                         f"{array.shape}.")
    return np.ascontiguousarray(array._concrete_value("make_array_from_single_device_arrays"))


def make_array_from_process_local_data(sharding: NamedSharding, local_data: Any,
                                       global_shape: tuple[int, ...] | None = None
                                       ) -> ShardedArray:
    """A global array from each process's part of it: ``local_data`` is the part this
    process's devices hold (a slab of the global array: every row of a batch split over
    the processes, say). Without ``global_shape``, each dim is the local one times the
    number of process-level parts along it."""
    local_data = np.asarray(local_data)
    if global_shape is None:
        global_shape = tuple(n * _process_parts(sharding, local_data.shape, d)
                             for d, n in enumerate(local_data.shape))
    start, stop = process_block(sharding, tuple(global_shape))
    if tuple(b - a for a, b in zip(start, stop)) != local_data.shape:
        raise ValueError(
            f"make_array_from_process_local_data: process {distributed.process_index()}'s "
            f"devices hold {tuple(b - a for a, b in zip(start, stop))} of the global shape "
            f"{tuple(global_shape)} under {sharding.spec}, but its local data has shape "
            f"{local_data.shape}.")
    return make_array_from_callback(global_shape, sharding, lambda index: local_data[
        within(index, start, global_shape)])


def process_block(sharding: NamedSharding, shape: tuple[int, ...]
                  ) -> tuple[list[int], list[int]]:
    """Where this process's devices' blocks lie in an array of ``shape``: the first and
    past-the-last index along each dim."""
    here = distributed.process_index()
    mine = [index for d, index in sharding.devices_indices_map(shape).items()
            if d.process_index == here]
    start = [min(index[d].start or 0 for index in mine) for d in range(len(shape))]
    stop = [max(index[d].stop if index[d].stop is not None else shape[d] for index in mine)
            for d in range(len(shape))]
    return start, stop


def within(index: tuple[slice, ...], start: Sequence[int], shape: tuple[int, ...]
           ) -> tuple[slice, ...]:
    """A block's ``index`` into the global array, as an index into the part from ``start``."""
    return tuple(slice((s.start or 0) - a, (s.stop if s.stop is not None else n) - a)
                 for s, a, n in zip(index, start, shape))


def _process_parts(sharding: NamedSharding, shape: tuple[int, ...], dim: int) -> int:
    """Into how many parts the processes divide ``dim``: the distinct blocks along it,
    over the distinct blocks one process holds (counted on a shape every split divides)."""
    indices = sharding.devices_indices_map((sharding.mesh.devices.size,) * len(shape))
    starts = {index[dim].start for index in indices.values()}
    here = distributed.process_index()
    mine = {index[dim].start for d, index in indices.items() if d.process_index == here}
    return len(starts) // len(mine)


def device_put(x: Any, device: Any = None, *, src: Any = None, donate: Any = False,
               may_alias: Any = None) -> Any:
    """Every leaf of ``x`` placed by ``device``: a device, a ``NamedSharding``, a bare
    ``PartitionSpec`` (on the mesh ``set_mesh`` set), None, or a pytree prefix of ``x`` with
    these at its leaves. An array already laid out as asked is returned as it is, unless
    ``may_alias=False`` or ``donate=True`` asks for a copy (stage 2's ``device_put`` says
    more).

    Example:
        >>> import numpy as np, stage4_sharding as jax
        >>> from stage4_sharding.sharding import NamedSharding, P
        >>> mesh = jax.make_mesh((8,), ("data",))
        >>> x = jax.device_put(np.zeros((8, 4), np.float32), NamedSharding(mesh, P("data")))
        >>> print(jax.typeof(x))
        float32[8@data,4]
    """
    from stage2_jit.devices import put_tree
    return put_tree(x, device, src, donate, may_alias, _put_leaf, _is_target)


def _is_target(x: Any) -> bool:
    return x is None or isinstance(x, (Device, SingleDeviceSharding, NamedSharding,
                                       PartitionSpec))


def _put_leaf(leaf: Any, target: Any, copy: bool) -> Any:
    """One leaf of ``device_put``."""
    from stage2_jit.devices import device_put as stage2_device_put
    if isinstance(target, (NamedSharding, PartitionSpec)):
        from .reshard import lay_out  # traced values and sharded arrays: a reshard
        sharding = as_sharding(target)
        if not copy and isinstance(leaf, ShardedArray) and leaf.sharding == sharding:
            return leaf
        return lay_out(leaf, sharding)
    if isinstance(target, SingleDeviceSharding):  # another array's ``x.sharding``
        target = target.device
    if isinstance(target, Device) and target.platform == "cpu":
        if target not in devices():
            raise ValueError(f"{target} is not one of this process's devices {devices()}.")
        return leaf if isinstance(leaf, Tracer) else _host_copy(leaf, copy)
    return stage2_device_put(leaf, target, may_alias=False if copy else None)


def _host_copy(leaf: Any, copy: bool = False) -> Array:
    """``leaf`` as a new host array, with a buffer of its own when ``copy`` (a deleted one
    raises, as in JAX)."""
    array = asarray(leaf)
    value = array._concrete_value("device_put")
    return Array(value.copy() if copy and type(array) is Array else value, array.weak_type)


def place(x: Any, device: Any, out_sharding: Any) -> Any:
    """The ``device=`` and ``out_sharding=`` of ``jnp.zeros`` and the other functions that
    make arrays (stage 1's ``extension.place``): a sharding lays ``x`` out as
    ``device_put`` does; under ``jit`` a device is checked, and the program's devices hold
    every array."""
    shardings = (NamedSharding, PartitionSpec)
    if out_sharding is not None and not isinstance(out_sharding, shardings):
        raise TypeError(f"out_sharding= takes a NamedSharding or a PartitionSpec, got "
                        f"{out_sharding!r}. For a device, pass device= instead.")
    target = device if out_sharding is None else out_sharding
    if target is None:  # jax.default_device's device: a device, or a platform's name
        target = config.jax_default_device
        target = devices(target)[0] if isinstance(target, str) else target
    if not isinstance(target, (*shardings, Device, SingleDeviceSharding)):
        raise TypeError(f"device= takes a device (jax.devices()[0]) or a sharding, got "
                        f"{target!r} of type {type(target).__name__}.")
    if isinstance(x, Tracer) and not isinstance(target, shardings):
        return x
    if out_sharding is not None:  # typed one entry per dim, as JAX's out_sharding= is
        target = as_sharding(out_sharding, "out_sharding").padded(np.ndim(x))
    return device_put(x, target)


set_placement(place)


class TypeOf:
    """What ``typeof`` returns: an array's type with its sharding, printed as JAX prints it
    (``float32[8@data,4]``; a weakly typed one with a ``~``: ``~float32[]``)."""

    def __init__(self, aval: ShapedArray, spec: PartitionSpec) -> None:
        self.aval, self.spec = aval, spec
        self.shape, self.dtype, self.weak_type = aval.shape, aval.dtype, aval.weak_type
        self.ndim, self.size = len(aval.shape), int(np.prod(aval.shape, dtype=int))

    @property
    def sharding(self) -> NamedSharding:
        """The sharding, as in JAX's type, one spec entry per dim. An array put on no mesh
        is on the one ``set_mesh`` installed (JAX puts it there), or else on an empty one
        (``sharding.mesh.empty``), and not split."""
        sharding = self.aval.sharding
        mesh = sharding.mesh if sharding is not None else get_mesh() or NO_MESH
        spec = list(self.spec) + [None] * (self.ndim - len(self.spec))
        return NamedSharding(mesh, PartitionSpec(*spec))

    def __str__(self) -> str:
        weak = "~" if self.weak_type else ""
        return weak + type_string(self.aval.shape, self.aval.dtype.name, self.spec)

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({type_string(self.shape, self.dtype.name, self.spec)}{weak})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, TypeOf) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))


def typeof(x: Any) -> TypeOf:
    """The type of ``x`` with its sharding: ``float32[8@data,4]``, dims split over mesh axes
    marked ``@axis`` (``@(x,y)`` for several). Inside ``jit`` too: a traced value's type
    carries its sharding."""
    aval = x.aval if isinstance(x, (Array, Tracer)) else asarray(x).aval
    spec = aval.sharding.spec if aval.sharding is not None else PartitionSpec()
    return TypeOf(aval, spec)


def visualize_array_sharding(x: Any, **options: Any) -> str:
    """A grid of ``x``'s blocks (a 1-D or 2-D array), each labelled with the devices that hold
    it; printed, and returned. ``options`` (``use_color``, ``scale``, ``min_width``,
    ``max_width``, ``color_map``) are accepted: the grid is plain text."""
    return visualize_sharding(x.shape, x.sharding, **options)


def visualize_sharding(shape: tuple[int, ...], sharding: Any, **options: Any) -> str:
    """``visualize_array_sharding`` of an array of ``shape`` laid out by ``sharding``."""
    del options
    shape = tuple(shape)
    if not isinstance(sharding, NamedSharding):  # one device holds it whole
        text = f"one block of shape {shape}, on {sorted(sharding.device_set, key=lambda d: d.id)}"
        print(text)
        return text
    if len(shape) not in (1, 2):
        raise ValueError(f"visualize_array_sharding draws 1-D and 2-D arrays, got shape {shape}.")
    ndim, global_shape = len(shape), shape
    shape = shape if ndim == 2 else (1,) + shape
    rows = sharding.num_shards(0) if ndim == 2 else 1
    cols = sharding.num_shards(ndim - 1)
    block = (shape[0] // rows, shape[1] // cols)
    holders: dict[tuple[int, int], list[int]] = {}
    for device, index in sharding.devices_indices_map(global_shape).items():
        index = index if ndim == 2 else (slice(0, 1),) + index
        key = ((index[0].start or 0) // block[0], (index[1].start or 0) // block[1])
        holders.setdefault(key, []).append(device.id)
    labels = {key: "CPU " + ",".join(str(i) for i in sorted(ids)) for key, ids in holders.items()}
    width = max(len(label) for label in labels.values()) + 2
    line = "+" + "+".join("-" * width for _ in range(cols)) + "+"
    out = [line]
    for r in range(rows):
        out.append("|" + "|".join(labels[(r, c)].center(width) for c in range(cols)) + "|")
        out.append(line)
    text = "\n".join(out)
    print(text)
    return text
