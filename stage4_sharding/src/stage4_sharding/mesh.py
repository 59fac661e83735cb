"""Simulated devices and meshes: ``jax.devices()``, ``make_mesh``, ``Mesh``, ``AxisType`` and
``set_mesh``.

Stage 4 runs SPMD programs on N devices that all live in this process: each is a
``Device("cpu", i)`` that owns its own buffers (one NumPy array per shard). N is
``jax_num_cpu_devices`` (8 unless the environment variable ``JAX_NUM_CPU_DEVICES`` or
``jax.config.update`` says otherwise), fixed once devices are first asked for, as JAX fixes
its CPU device count when the backend starts.

A mesh arranges devices in a named grid, ``make_mesh((4, 2), ("data", "model"))``: a
partition spec then says which array dims are split over which mesh axes.

NB: in JAX these are jax/_src/mesh.py (``Mesh``, ``AxisType``, ``AbstractMesh``) and
jax/_src/sharding_impls.py; ``set_mesh`` is in jax/_src/mesh.py too.
"""

from __future__ import annotations

import enum
import math
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
from stage1_autodiff.config import config
from stage1_autodiff.core import Device

from . import distributed

config.define("jax_num_cpu_devices", 8,
              "How many simulated CPU devices stage 4 has; set it before the first use.")

_started: list[Device] = []  # the devices, once first asked for


def devices(backend: str | None = None) -> list[Device]:
    """The simulated CPU devices: ``jax_num_cpu_devices`` of them, ids 0 to N - 1.

    Example:
        >>> import stage4_sharding as jax
        >>> jax.devices()[:2]
        [CpuDevice(id=0), CpuDevice(id=1)]
    """
    if backend not in (None, "cpu"):
        from stage2_jit.devices import devices as stage2_devices
        return stage2_devices(backend)
    if not _started:
        count = int(config.jax_num_cpu_devices)
        if count < 1:
            raise ValueError(f"jax_num_cpu_devices must be at least 1, got {count}.")
        # Every process's devices, numbered in process order (distributed.py); one process:
        # device 0 is the host's.
        counts = distributed.STATE.local_counts or (count,)
        _started.extend(Device("cpu", sum(counts[:p]) + i, process_index=p)
                        for p, n in enumerate(counts) for i in range(n))
    elif (local := sum(d.process_index == distributed.process_index() for d in _started)) \
            != config.jax_num_cpu_devices:
        raise RuntimeError(
            f"jax_num_cpu_devices was changed to {config.jax_num_cpu_devices} after the "
            f"{local} devices were created. Set it before the first use of devices "
            f"(jax.config.update at the top of the program, or JAX_NUM_CPU_DEVICES).")
    return list(_started)


def devices_started() -> bool:
    return bool(_started)


def device_count(backend: str | None = None) -> int:
    return len(devices(backend))


def local_devices(process_index: int | None = None, backend: str | None = None,
                  host_id: int | None = None) -> list[Device]:
    """The devices process ``process_index`` drives (by default this one's): all of them
    in a job of one process."""
    index = distributed.process_index() if process_index is None else process_index
    return [d for d in devices(backend) if d.process_index == index]


def local_device_count(backend: str | None = None) -> int:
    return len(local_devices(backend=backend))


class AxisType(enum.Enum):
    """How the type system treats a mesh axis. ``Explicit``: shardings are part of an
    array's type and every op says what its result's is (errors when ambiguous).
    ``Auto``: the compiler chooses. ``Manual``: inside ``shard_map``, the program sees one
    device's shard."""
    Explicit = "explicit"
    Auto = "auto"
    Manual = "manual"


class AbstractMesh:
    """A mesh's shape, axis names and axis types, without devices: what a program's types
    refer to.

    Example:
        >>> from stage4_sharding.sharding import AbstractMesh, AxisType
        >>> AbstractMesh((4, 2), ("x", "y"), (AxisType.Explicit, AxisType.Auto))
        AbstractMesh('x': 4, 'y': 2, axis_types=(Explicit, Auto))
    """

    def __init__(self, axis_sizes: Sequence[int], axis_names: Sequence[str],
                 axis_types: Sequence[AxisType] | None = None, *,
                 device_kind: str | None = None) -> None:
        self.axis_sizes = tuple(int(n) for n in axis_sizes)
        self.axis_names = tuple(axis_names)
        if len(self.axis_sizes) != len(self.axis_names):
            raise ValueError(f"AbstractMesh: {len(self.axis_sizes)} axis sizes "
                             f"{self.axis_sizes} for {len(self.axis_names)} axis names "
                             f"{self.axis_names}; give one size per name.")
        self.axis_types = (tuple(axis_types) if axis_types is not None
                           else (AxisType.Auto,) * len(self.axis_names))
        self.device_kind = device_kind  # known when made from a mesh of devices

    shape = property(lambda self: dict(zip(self.axis_names, self.axis_sizes)))
    size = property(lambda self: math.prod(self.axis_sizes))
    empty = property(lambda self: not self.axis_names)
    explicit_axes = property(lambda self: self._of_type(AxisType.Explicit))
    auto_axes = property(lambda self: self._of_type(AxisType.Auto))
    manual_axes = property(lambda self: self._of_type(AxisType.Manual))

    def _of_type(self, kind: AxisType) -> tuple[str, ...]:
        return tuple(n for n, t in zip(self.axis_names, self.axis_types) if t is kind)

    def __repr__(self) -> str:
        types = ", ".join(t.name for t in self.axis_types) + ("," if len(self.axis_types) == 1
                                                              else "")
        axes = ", ".join(f"{n!r}: {s}" for n, s in self.shape.items()) if self.axis_names \
            else "()"
        kind = (f", device_kind={self.device_kind}, num_cores=None, platform=cpu"
                if self.device_kind else "")
        return f"AbstractMesh({axes}, axis_types=({types}){kind})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, AbstractMesh) and (
            self.axis_sizes, self.axis_names, self.axis_types) == (
            other.axis_sizes, other.axis_names, other.axis_types)

    def __hash__(self) -> int:
        return hash((self.axis_sizes, self.axis_names, self.axis_types))


def get_abstract_mesh() -> AbstractMesh:
    """The abstract mesh of the current mesh (``set_mesh``'s, as ``auto_axes`` and
    ``explicit_axes`` switch its types), or an empty one when no mesh is set."""
    mesh = get_mesh()
    return mesh.abstract_mesh if mesh is not None else AbstractMesh((), ())


class Mesh:
    """Devices arranged in a grid with named axes, each ``Auto`` unless ``axis_types`` says
    otherwise, as JAX's constructor (``make_mesh`` makes ``Explicit`` axes by default, as
    JAX's does).

    Example:
        >>> import stage4_sharding as jax
        >>> mesh = jax.make_mesh((4, 2), ("data", "model"))
        >>> mesh.shape
        {'data': 4, 'model': 2}
    """

    def __init__(self, devices: Any, axis_names: Sequence[str],
                 axis_types: Sequence[AxisType] | None = None) -> None:
        grid = np.asarray(devices, dtype=object)
        names = tuple(axis_names)
        if grid.ndim != len(names):
            raise ValueError(f"A mesh of shape {grid.shape} needs {grid.ndim} axis names, got "
                             f"{len(names)}: {names}.")
        if len(set(names)) != len(names):
            raise ValueError(f"Mesh axis names must be distinct, got {names}.")
        # Auto unless told, as JAX's constructor (make_mesh makes Explicit axes, as JAX's)
        types = tuple(axis_types) if axis_types is not None else (AxisType.Auto,) * len(names)
        if len(types) != len(names):
            raise ValueError(f"Mesh axis_types {types} do not match the axis names {names}.")
        self.devices = grid
        self.axis_names = names
        self.axis_types = types

    @property
    def shape(self) -> dict[str, int]:
        return dict(zip(self.axis_names, self.devices.shape))

    @property
    def size(self) -> int:
        return int(self.devices.size)

    @property
    def axis_sizes(self) -> tuple[int, ...]:
        return tuple(self.devices.shape)

    @property
    def shape_tuple(self) -> tuple[tuple[str, int], ...]:
        return tuple(self.shape.items())

    @property
    def device_ids(self) -> np.ndarray:
        """The ids of the devices, in the grid's layout."""
        return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

    @property
    def local_devices(self) -> list[Device]:
        """The devices of the mesh that this process drives."""
        here = distributed.process_index()
        return [d for d in self.devices.flat if d.process_index == here]

    @property
    def local_mesh(self) -> Mesh:
        """The part of the grid that this process drives, with the same axis names: the
        smallest block of the grid that holds its devices, which must hold no other's."""
        here = distributed.process_index()
        where = np.argwhere(np.vectorize(lambda d: d.process_index == here,
                                         otypes=[bool])(self.devices))
        block = tuple(slice(lo, hi + 1) for lo, hi in zip(where.min(0), where.max(0)))
        local = self.devices[block]
        if any(d.process_index != here for d in local.flat):
            raise ValueError(f"Process {here}'s devices are not a block of the mesh's grid "
                             f"{self.device_ids.tolist()}: it has no local mesh. Lay the "
                             f"devices out process by process (jax.make_mesh does).")
        return Mesh(local, self.axis_names)  # (Auto axes, as JAX's local mesh has)

    @property
    def is_multi_process(self) -> bool:
        return len({d.process_index for d in self.devices.flat}) > 1

    def _axes_of_type(self, kind: AxisType) -> tuple[str, ...]:
        return tuple(n for n, t in zip(self.axis_names, self.axis_types) if t == kind)

    explicit_axes = property(lambda self: self._axes_of_type(AxisType.Explicit))
    auto_axes = property(lambda self: self._axes_of_type(AxisType.Auto))
    manual_axes = property(lambda self: self._axes_of_type(AxisType.Manual))

    @property
    def empty(self) -> bool:
        """Whether the mesh has no axes: ``NO_MESH``, that of an array not put on one."""
        return not self.axis_names

    # Both forms write axis names with repr (JAX's repr does; its short form puts them bare
    # between quotes): a name with a quote or a newline stays one readable token, and cannot
    # end a line of a report or a comment line of generated source.
    def __repr__(self) -> str:
        return (f"Mesh(axis_sizes={self.devices.shape!r}, axis_names={self.axis_names!r}, "
                f"axis_types={_types_text(self.axis_types)})")

    def __str__(self) -> str:
        axes = ", ".join(f"{n!r}: {s}" for n, s in self.shape.items())
        return f"Mesh({axes}, axis_types={_types_text(self.axis_types)})"

    def __eq__(self, other: Any) -> bool:
        return self.same_grid(other) and self.axis_types == other.axis_types

    def same_grid(self, other: Any) -> bool:
        """Whether ``other`` has these devices and axis names, whatever its axis types: an
        array keeps its blocks when ``auto_axes`` moves it to such a mesh."""
        return other is self or (isinstance(other, Mesh) and self.axis_names == other.axis_names
                and self.devices.shape == other.devices.shape
                and all(a == b for a, b in zip(self.devices.flat, other.devices.flat)))

    def with_axis_types(self, types: dict[str, AxisType]) -> Mesh:
        """This grid with the named axes' types replaced."""
        return Mesh(self.devices, self.axis_names,
                    tuple(types.get(n, t) for n, t in zip(self.axis_names, self.axis_types)))

    @property
    def abstract_mesh(self) -> AbstractMesh:
        """The mesh without its devices (``use_abstract_mesh``'s own, for a mesh it made)."""
        return self.__dict__.get("_abstract") or AbstractMesh(
            self.axis_sizes, self.axis_names, self.axis_types, device_kind="cpu")

    def __hash__(self) -> int:
        return hash((self.axis_names, self.axis_types, self.devices.shape,
                     tuple(self.devices.flat)))


NO_MESH = Mesh(np.empty((), dtype=object), ())  # JAX's empty AbstractMesh(())


def _types_text(types: tuple[AxisType, ...]) -> str:
    """``(Explicit,)``: the axis types as JAX prints them, a tuple of bare names."""
    return f"({', '.join(t.name for t in types)}{',' if len(types) == 1 else ''})"


def make_mesh(axis_shapes: Sequence[int], axis_names: Sequence[str],
              axis_types: Sequence[AxisType] | None = None,
              devices: Sequence[Device] | None = None) -> Mesh:
    """A mesh of ``axis_shapes`` over the first ``prod(axis_shapes)`` devices (all of them
    unless ``devices`` is given), every axis Explicit unless ``axis_types`` says otherwise.

    Example:
        >>> import stage4_sharding as jax
        >>> jax.make_mesh((8,), ("data",))
        Mesh(axis_sizes=(8,), axis_names=('data',), axis_types=(Explicit,))
    """
    shape = tuple(int(s) for s in axis_shapes)
    pool = list(devices) if devices is not None else globals()["devices"]()
    if math.prod(shape) > len(pool):
        raise ValueError(f"make_mesh: a mesh of shape {shape} needs {math.prod(shape)} devices, "
                         f"but {len(pool)} are available. Use axis shapes whose product is at "
                         f"most {len(pool)} (with jax_num_cpu_devices, more devices can be "
                         f"simulated).")
    pool = pool[:math.prod(shape)]
    grid = np.empty(len(pool), dtype=object)
    grid[:] = pool
    return Mesh(grid.reshape(shape), axis_names,
                (AxisType.Explicit,) * len(shape) if axis_types is None else axis_types)


class _MeshContext(threading.local):
    def __init__(self) -> None:
        self.mesh: Mesh | None = None


_context = _MeshContext()


def get_mesh() -> Mesh | None:
    """The mesh ``set_mesh`` installed, or None."""
    return _context.mesh


class set_mesh:  # noqa: N801 -- a function in JAX's API, usable as a context manager too
    """Installs ``mesh`` as the current mesh: as a plain call it stays until the next
    ``set_mesh``; as ``with set_mesh(mesh):`` the previous mesh comes back at the end."""

    def __init__(self, mesh: Mesh | None) -> None:
        if mesh is not None and not isinstance(mesh, Mesh):
            raise TypeError(f"set_mesh expects a Mesh (jax.make_mesh(...)), got "
                            f"{type(mesh).__name__}.")
        self.previous = _context.mesh
        _context.mesh = mesh

    def __enter__(self) -> Mesh | None:
        return _context.mesh

    def __exit__(self, *exc: Any) -> None:
        _context.mesh = self.previous
