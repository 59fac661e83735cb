"""Partition specs and named shardings: which dims of an array are split over which mesh axes.

``P("data", None)`` splits dim 0 over the mesh axis ``data`` and keeps dim 1 whole;
``P(("x", "y"))`` splits dim 0 over both axes, ``x`` major. A ``NamedSharding(mesh, spec)``
says which block of the array each device of the mesh holds: along a dim split over axes of
sizes ``n1, n2, ...``, a device holds block ``i1 * n2 + i2 ...`` of ``n1 * n2 * ...`` equal
blocks, where ``i`` are its coordinates in the mesh; along mesh axes a spec does not name, the
blocks repeat (replication).

``typeof`` writes the sharding into the type, as JAX does: ``float32[8@data,4]``.

The public names are in ``sharding.py`` (``jax.sharding``); this module holds the value
types alone, and imports nothing that runs a program.

NB: in JAX these are jax/_src/partition_spec.py and jax/_src/named_sharding.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

from .mesh import Mesh, get_mesh


class PartitionSpec(tuple):
    """One entry per array dim: a mesh axis name, a tuple of names, or None (not split).
    Dims beyond the spec's length are not split.

    Example:
        >>> from stage4_sharding.sharding import PartitionSpec as P
        >>> P("data", None)
        P('data', None)
    """

    def __new__(cls, *entries: Any) -> PartitionSpec:
        for entry in entries:
            names = entry if isinstance(entry, tuple) else (entry,)
            if not all(n is None or isinstance(n, str) for n in names):
                raise TypeError(f"A PartitionSpec entry is a mesh axis name, a tuple of names "
                                f"or None; got {entry!r}.")
        return super().__new__(cls, entries)

    def __repr__(self) -> str:
        return f"P{tuple(self)!r}"  # as JAX writes it: P('data',), P(None, 'model')

    def axes_of(self, dim: int) -> tuple[str, ...]:
        """The mesh axes ``dim`` is split over, major first (none for an unsplit dim)."""
        if dim >= len(self) or self[dim] is None:
            return ()
        return self[dim] if isinstance(self[dim], tuple) else (self[dim],)

    def transposed(self, perm: tuple[int, ...]) -> PartitionSpec:
        """The spec of ``transpose(x, perm)`` for an ``x`` laid out by this one."""
        return PartitionSpec(*(self[d] if d < len(self) else None for d in perm))

    def inserted(self, dim: int, entry: Any = None) -> PartitionSpec:
        """The spec with a new dim at ``dim`` (a batch dim ``vmap`` adds), split as ``entry``
        says (by default not split)."""
        entries = list(self) + [None] * max(0, dim - len(self))
        entries.insert(dim, entry)
        return PartitionSpec(*entries)

    def apply_primitive(self, prim: Any, arrays: list[Any], params: dict[str, Any]) -> Any:
        """An eager ``prim`` asked for a result laid out by this bare spec: on the mesh
        ``set_mesh`` set (a ValueError without one, as in JAX)."""
        sharding = as_sharding(self, f"{prim.name}'s out_sharding")
        return sharding.apply_primitive(prim, arrays, dict(params, out_sharding=sharding))


P = PartitionSpec


class NamedSharding:
    """An array's layout over a mesh: ``spec`` names the mesh axes each dim is split over.

    Example:
        >>> import stage4_sharding as jax
        >>> from stage4_sharding.sharding import NamedSharding, P
        >>> s = NamedSharding(jax.make_mesh((4, 2), ("x", "y")), P("x", None))
        >>> s.shard_shape((8, 6))
        (2, 6)
    """

    # How an eager primitive asked for a result of this sharding runs on the mesh: arrays.py,
    # which can run programs there, registers it (``run_primitive``).
    executor: ClassVar[Callable[..., Any] | None] = None

    def __init__(self, mesh: Mesh, spec: PartitionSpec) -> None:
        if not isinstance(mesh, Mesh):
            raise TypeError(f"NamedSharding needs a Mesh, got {type(mesh).__name__}.")
        spec = spec if isinstance(spec, PartitionSpec) else PartitionSpec(*spec)
        used = [name for dim in range(len(spec)) for name in spec.axes_of(dim)]
        for name in used:
            if name not in mesh.axis_names:
                raise ValueError(f"PartitionSpec {spec} names the axis {name!r}, which the "
                                 f"mesh does not have (its axes: {mesh.axis_names}).")
        if len(set(used)) != len(used):
            raise ValueError(f"PartitionSpec {spec} uses a mesh axis more than once: each "
                             f"mesh axis can split at most one dim.")
        self.mesh = mesh
        self.spec = spec

    def __repr__(self) -> str:
        return f"NamedSharding(mesh={self.mesh}, spec={self.spec!r})"  # the short mesh, as JAX

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, NamedSharding) and self.mesh == other.mesh
                and _normalized(self.spec) == _normalized(other.spec))

    def __hash__(self) -> int:
        return hash((self.mesh, _normalized(self.spec)))

    def dim_strings(self, shape: tuple[int, ...]) -> list[str]:
        """Each dim as a type shows it: ``8@data``, ``128@(x,y)`` or just ``4``."""
        return type_string(shape, "", self.spec)[1:-1].split(",") if shape else []

    def padded(self, ndim: int) -> NamedSharding:
        """The sharding with one spec entry per dim of an ``ndim``-dim array: how JAX types
        the result of ``reshard`` and of ``out_sharding=`` (``P()`` becomes
        ``P(None, None)``), where ``device_put`` keeps the spec as given."""
        if len(self.spec) >= ndim:
            return self
        missing = [None] * (ndim - len(self.spec))
        return NamedSharding(self.mesh, PartitionSpec(*self.spec, *missing))

    def transposed(self, perm: tuple[int, ...]) -> NamedSharding:
        """The sharding of ``transpose(x, perm)`` for an ``x`` laid out by this one."""
        return NamedSharding(self.mesh, self.spec.transposed(perm))

    def without_dim(self, dim: int) -> NamedSharding:
        """The sharding of one slice along ``dim`` (a scan's step), which must not be split."""
        entries = list(self.spec)
        return NamedSharding(self.mesh, PartitionSpec(*(entries[:dim] + entries[dim + 1:])))

    def inserted(self, dim: int, entry: Any = None) -> NamedSharding:
        """The sharding with a new dim at ``dim`` (a batch dim ``vmap`` adds), split as
        ``entry`` says (by default not split)."""
        return NamedSharding(self.mesh, self.spec.inserted(dim, entry))

    def with_spec(self, spec: Any) -> NamedSharding:
        """The same mesh, another spec."""
        return NamedSharding(self.mesh, spec)

    @property
    def is_fully_replicated(self) -> bool:
        """Whether every device holds the whole array (no dim is split)."""
        return not any(self.spec.axes_of(d) for d in range(len(self.spec)))

    memory_kind = "device"
    device_set = property(lambda self: set(self.mesh.devices.flat))
    num_devices = property(lambda self: self.mesh.size)
    addressable_devices = property(lambda self: set(self.mesh.local_devices))
    is_fully_addressable = property(lambda self: not self.mesh.is_multi_process)

    def addressable_devices_indices_map(self, shape: tuple[int, ...]
                                        ) -> dict[Any, tuple[slice, ...]]:
        """``devices_indices_map`` for the devices this process drives."""
        local = self.addressable_devices
        return {d: index for d, index in self.devices_indices_map(shape).items() if d in local}

    def is_equivalent_to(self, other: Any, ndim: int) -> bool:
        """Whether ``other`` puts the same blocks of an array of ``ndim`` dims on the same
        devices (a spec written another way, or one device's sharding, may)."""
        shape = (self.mesh.size,) * ndim  # divisible by any split

        def blocks(sharding: Any) -> dict[Any, tuple]:
            return {d: tuple(s.indices(n)[:2] for s, n in zip(index, shape))
                    for d, index in sharding.devices_indices_map(shape).items()}
        return blocks(self) == blocks(other)

    def apply_primitive(self, prim: Any, arrays: list[Any], params: dict[str, Any]) -> Any:
        """Runs an eager ``prim`` asked for a result of this sharding (``out_sharding``) on
        the mesh's devices, though no operand is on them yet, through the executor arrays.py
        registers (``NamedSharding.executor``): a value type imports no executor."""
        return NamedSharding.executor(prim, arrays, params)

    def num_shards(self, dim: int) -> int:
        return math.prod(self.mesh.shape[name] for name in self.spec.axes_of(dim))

    def check(self, shape: tuple[int, ...], what: str = "an array") -> None:
        """Raises unless the spec fits ``shape``: no more entries than dims, and every split
        dim divisible by the product of its mesh axes' sizes."""
        if len(self.spec) > len(shape):
            raise ValueError(f"PartitionSpec {self.spec} has {len(self.spec)} entries, but "
                             f"{what} of shape {shape} has only {len(shape)} dims.")
        for dim, size in enumerate(shape):
            parts = self.num_shards(dim)
            if size % parts:
                axes = self.spec.axes_of(dim)
                raise ValueError(
                    f"One of {what}'s dims is not divisible by the mesh axes it is sharded "
                    f"over: dim {dim} of shape {shape} has size {size}, sharded over "
                    f"{axes} of size {parts}. Use a size divisible by {parts}, or a "
                    f"PartitionSpec that leaves dim {dim} unsharded.")

    def shard_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The shape of each device's block."""
        self.check(shape)
        return tuple(size // self.num_shards(dim) for dim, size in enumerate(shape))

    def devices_indices_map(self, shape: tuple[int, ...]) -> dict[Any, tuple[slice, ...]]:
        """Each device's block of an array of ``shape``, as slices; a dim no mesh axis
        splits is ``slice(None)``, the whole dim, as JAX writes it."""
        block = self.shard_shape(shape)
        names = self.mesh.axis_names
        result = {}
        for coords, device in _grid_items(self.mesh):
            where = dict(zip(names, coords))
            index = []
            for dim, size in enumerate(block):
                if self.num_shards(dim) == 1:  # not split, or over axes of size 1
                    index.append(slice(None))
                    continue
                position = 0
                for name in self.spec.axes_of(dim):
                    position = position * self.mesh.shape[name] + where[name]
                index.append(slice(position * size, (position + 1) * size))
            result[device] = tuple(index)
        return result


def _grid_items(mesh: Mesh):
    import numpy as np
    for coords in np.ndindex(*mesh.devices.shape):
        yield coords, mesh.devices[coords]


def _normalized(spec: PartitionSpec) -> tuple:
    """The spec without trailing Nones, one-name tuples as names: equal specs compare equal."""
    entries = [e[0] if isinstance(e, tuple) and len(e) == 1 else e for e in spec]
    while entries and entries[-1] is None:
        entries.pop()
    return tuple(entries)


def as_sharding(sharding: Any, what: str = "device_put") -> NamedSharding:
    """A NamedSharding from a sharding or a bare spec (then on the mesh ``set_mesh`` set)."""
    if isinstance(sharding, NamedSharding):
        return sharding
    if isinstance(sharding, PartitionSpec):
        mesh = get_mesh()
        if mesh is None:
            raise ValueError(f"{what} was given a bare PartitionSpec {sharding}, but no mesh is "
                             f"set. Call jax.sharding.set_mesh(mesh) first, or pass "
                             f"NamedSharding(mesh, spec).")
        return NamedSharding(mesh, sharding)
    raise TypeError(f"{what} expects a NamedSharding or a PartitionSpec, got "
                    f"{type(sharding).__name__}.")


def type_string(shape: tuple[int, ...], dtype_name: str, spec: PartitionSpec) -> str:
    """``float32[8@data,4]``: each dim's size, ``@`` the mesh axes it is split over."""
    dims = []
    for dim, size in enumerate(shape):
        axes = spec.axes_of(dim)
        if not axes:
            dims.append(str(size))
        elif len(axes) == 1:
            dims.append(f"{size}@{axes[0]}")
        else:
            dims.append(f"{size}@({','.join(axes)})")
    return f"{dtype_name}[{','.join(dims)}]"
