"""Sharded arrays: ``device_put(x, P(...))``, ``x.sharding``, ``typeof(x)`` and
``visualize_array_sharding``.

A ``ShardedArray`` holds one NumPy block per device of its sharding's mesh (replicated dims
repeat a block on several devices): the simulated devices' memories. Its global value is only
assembled when asked for (``np.asarray``, printing).

An eager operation on sharded arrays gets its result's sharding from the primitive's sharding
rule (``sharding_rules.py``), which raises for an ambiguous or impossible layout. NB: the
values themselves are still computed on the assembled global arrays and then split; the
partitioner, which runs one program per device with the collectives the rules imply, is the
next step of issue 6.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
from stage1_autodiff.core import (
    Array,
    Device,
    Primitive,
    ShapedArray,
    asarray,
    track_device_memory,
)
from stage1_autodiff.tree_util import tree_map
from stage2_jit.devices import PlacedArray

from .mesh import devices
from .sharding import NamedSharding, P, PartitionSpec, as_sharding, type_string
from .sharding_rules import sharding_rules, spec_of


class ShardedArray(PlacedArray):
    """An Array split over the devices of a mesh, one block per device."""

    __slots__ = ("_shards", "_sharding")

    def __init__(self, shards: dict[Device, np.ndarray], aval: ShapedArray,
                 sharding: NamedSharding) -> None:
        super().__init__(aval)
        self._shards = shards
        self._sharding = sharding
        # Each device owns its block: counted while the array lives.
        sizes = [(device, block.nbytes) for device, block in shards.items()]
        for device, nbytes in sizes:
            track_device_memory(device, nbytes)
        weakref.finalize(self, _release, sizes)

    def _fetch(self) -> np.ndarray:  # the global array, assembled from the blocks
        out = np.empty(self._aval.shape, self._aval.dtype)
        for device, index in self._sharding.devices_indices_map(self._aval.shape).items():
            out[index] = self._shards[device]
        return out

    @property
    def sharding(self) -> NamedSharding: return self._sharding

    @property
    def device(self) -> Device:
        raise ValueError("device is only defined for an array on one device; this one is "
                         "sharded: use .devices() or .sharding.")

    def devices(self) -> set[Device]:
        return set(self._shards)

    @property
    def addressable_shards(self) -> list[tuple[Device, np.ndarray]]:
        return list(self._shards.items())

    @classmethod
    def apply_primitive(cls, prim: Primitive, arrays: list[Array],
                        params: dict[str, Any]) -> list[Array]:
        """The result's sharding from the primitive's sharding rule (an error names the op,
        its operands' types and the fix); the values computed whole (NB: see the module's
        note), then split as the rule says."""
        mesh = _common_mesh(prim, arrays)
        avals = [a.aval for a in arrays]
        specs = [spec_of(a.sharding.spec if isinstance(a, ShardedArray) else P(), a.ndim)
                 for a in arrays]
        rule = sharding_rules.get(prim)
        if rule is None:
            raise NotImplementedError(f"{prim.name} has no sharding rule yet: reshard its "
                                      f"operands to plain arrays (np.asarray) to run it.")
        out_specs = rule(avals, specs, **params)
        plain = [Array(a._value, a.weak_type) for a in arrays]
        outs = prim.bind(*plain, **params)
        outs = list(outs) if prim.multiple_results else [outs]
        return [shard(out, NamedSharding(mesh, P(*(axes or None for axes in spec))))
                for out, spec in zip(outs, out_specs)]


def _common_mesh(prim: Primitive, arrays: list[Array]) -> Any:
    meshes = {a.sharding.mesh for a in arrays if isinstance(a, ShardedArray)}
    if len(meshes) > 1:
        raise ValueError(f"{prim.name} got arrays sharded over different meshes {meshes}: "
                         f"device_put them onto one mesh first.")
    return meshes.pop()


def _release(sizes: list[tuple[Device, int]]) -> None:
    for device, nbytes in sizes:
        track_device_memory(device, -nbytes)


def reshard(x: Any, sharding: Any) -> ShardedArray:
    """``x`` with another sharding (a ``NamedSharding`` or a spec on the current mesh): the
    blocks each device needs, moved to it.

    NB: eager only for now; under ``jit`` it will be a primitive whose partition rule
    inserts the collectives (all-gather, all-to-all) the move needs."""
    return shard(x, as_sharding(sharding, "reshard"))


def shard(x: Any, sharding: NamedSharding) -> ShardedArray:
    """``x`` split into the blocks ``sharding`` gives each device (a copy per device)."""
    array = asarray(x)
    sharding.check(array.shape)
    value = np.asarray(array._value)
    blocks = {device: np.ascontiguousarray(value[index])
              for device, index in sharding.devices_indices_map(array.shape).items()}
    return ShardedArray(blocks, array.aval, sharding)


def device_put(x: Any, device: Any = None) -> Any:
    """Every leaf of ``x`` placed by ``device``: a device, a ``NamedSharding``, or a bare
    ``PartitionSpec`` (on the mesh ``set_mesh`` set).

    Example:
        >>> import numpy as np, stage4_sharding as jax
        >>> from stage4_sharding.sharding import NamedSharding, P
        >>> mesh = jax.make_mesh((8,), ("data",))
        >>> x = jax.device_put(np.zeros((8, 4), np.float32), NamedSharding(mesh, P("data")))
        >>> print(jax.typeof(x))
        float32[8@data,4]
    """
    if isinstance(device, (NamedSharding, PartitionSpec)):
        sharding = as_sharding(device)
        return tree_map(lambda leaf: shard(leaf, sharding), x)
    from stage2_jit.devices import device_put as stage2_device_put
    if device is not None and isinstance(device, Device) and device.platform == "cpu":
        if device not in devices():
            raise ValueError(f"{device} is not one of this process's devices {devices()}.")
        return tree_map(lambda leaf: Array(asarray(leaf)._value, asarray(leaf).weak_type), x)
    return stage2_device_put(x, device)


class TypeOf:
    """What ``typeof`` returns: an array's type with its sharding, printed as JAX prints it
    (``float32[8@data,4]``)."""

    def __init__(self, aval: ShapedArray, spec: PartitionSpec) -> None:
        self.aval, self.spec = aval, spec
        self.shape, self.dtype = aval.shape, aval.dtype

    def __str__(self) -> str:
        return type_string(self.aval.shape, self.aval.dtype.name, self.spec)

    def __repr__(self) -> str:
        return f"ShapedArray({self})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, TypeOf) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))


def typeof(x: Any) -> TypeOf:
    """The type of ``x`` with its sharding: ``float32[8@data,4]``, ``f32`` dims split over
    mesh axes marked ``@axis`` (``@(x,y)`` for several)."""
    array = x if isinstance(x, Array) else asarray(x)
    spec = x.sharding.spec if isinstance(x, ShardedArray) else PartitionSpec()
    return TypeOf(array.aval, spec)


def visualize_array_sharding(x: ShardedArray) -> str:
    """A grid of ``x``'s blocks (a 1-D or 2-D array), each labelled with the devices that hold
    it; printed, and returned."""
    if not isinstance(x, ShardedArray):
        text = f"one block of shape {x.shape}, on {sorted(x.devices(), key=lambda d: d.id)}"
        print(text)
        return text
    if x.ndim not in (1, 2):
        raise ValueError(f"visualize_array_sharding draws 1-D and 2-D arrays, got shape {x.shape}.")
    shape = x.shape if x.ndim == 2 else (1,) + x.shape
    sharding = x.sharding
    rows = sharding.num_shards(0) if x.ndim == 2 else 1
    cols = sharding.num_shards(x.ndim - 1)
    block = (shape[0] // rows, shape[1] // cols)
    holders: dict[tuple[int, int], list[int]] = {}
    for device, index in sharding.devices_indices_map(x.shape).items():
        index = index if x.ndim == 2 else (slice(0, 1),) + index
        key = (index[0].start // block[0], index[1].start // block[1])
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
