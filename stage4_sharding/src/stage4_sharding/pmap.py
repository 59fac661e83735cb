"""``jax.pmap``: a function mapped over an axis of its arguments, one slice per device.

``pmap(f, axis_name="i")(x)`` runs ``f`` on ``x[0]`` on the first device, ``x[1]`` on the
second, and so on, as one SPMD program; collectives name the axis (``lax.psum(v, "i")``). It is
``vmap`` with the batch spread over devices, and it is written as JAX 0.10.2 writes it: a
``jit`` of a ``shard_map`` over a one-axis mesh of the first ``n`` devices. Each device's block
has a leading dim of 1, squeezed before ``f`` sees it and put back on its results, so the
result has the mapped axis in front, split over the devices.

    >>> import stage4_sharding as jax, stage4_sharding.numpy as jnp
    >>> jax.pmap(lambda v: v + jax.lax.psum(v, "i"), axis_name="i")(jnp.arange(4.0))
    Array([6., 7., 8., 9.], dtype=float32)

NB: JAX builds the same program in ``jax/_src/pmap.py`` (with ``jax_pmap_shmap_merge``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from stage1_autodiff.api_util import check_callable, ensure_index_tuple
from stage1_autodiff.core import get_aval
from stage1_autodiff.tree_util import broadcast_prefix, tree_flatten, tree_unflatten

from stage1_autodiff import lax
from stage1_autodiff import numpy as jnp

from .jit import jit
from .mesh import AxisType, Mesh
from .mesh import devices as all_devices
from .named_sharding import PartitionSpec
from .shard_map import shard_map

DEFAULT_AXIS_NAME = "_internal_pmap_axis_name"  # JAX's name for an axis the caller left unnamed


def pmap(fun: Callable, axis_name: Any = None, *, in_axes: Any = 0, out_axes: Any = 0,
         static_broadcasted_argnums: int | Sequence[int] = (), devices: Any = None,
         backend: str | None = None, axis_size: int | None = None,
         donate_argnums: int | Sequence[int] = ()) -> Callable:
    """``fun`` mapped over axis ``in_axes`` of its arguments, one slice per device (see the
    module docstring). ``in_axes`` / ``out_axes`` are as ``vmap``'s; arguments named by
    ``static_broadcasted_argnums`` are passed whole, as Python values; ``devices`` picks the
    devices (by default the first ``n`` of ``jax.devices()``). ``donate_argnums`` is accepted
    and donates nothing, as on JAX's CPU devices; ``axis_size`` is accepted and unused (the
    mapped arguments give the size)."""
    check_callable(fun)
    if backend not in (None, "cpu"):
        raise ValueError(f"pmap backend={backend!r}: stage 4's devices are CPU devices; pass "
                         f"backend='cpu' or leave it out.")
    del donate_argnums, axis_size
    static_nums = ensure_index_tuple(static_broadcasted_argnums)
    name = DEFAULT_AXIS_NAME if axis_name is None else axis_name
    programs: dict[Any, Callable] = {}

    @functools.wraps(fun)
    def pmapped(*args: Any, **kwargs: Any) -> Any:
        static = {i % len(args): args[i] for i in static_nums if -len(args) <= i < len(args)}
        dynamic = tuple(a for i, a in enumerate(args) if i not in static)
        leaves, in_tree = tree_flatten((dynamic, kwargs))
        axes = _flat_in_axes(in_axes, dynamic, kwargs, leaves)
        size = _mapped_size(leaves, axes, fun)
        key = (in_tree, tuple(axes), size, tuple(sorted(static.items())))
        if key not in programs:
            place = _devices_for(size, devices)
            program = _program(fun, name, place, in_tree, axes, static, out_axes)
            programs[key] = program
        return programs[key](*leaves)

    return pmapped


def _flat_in_axes(in_axes: Any, dynamic: tuple, kwargs: dict, leaves: list) -> list[Any]:
    """One axis (an int >= 0, or None) per argument leaf; keyword arguments are mapped over
    their axis 0, as in JAX."""
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if isinstance(in_axes, tuple) and len(in_axes) != len(dynamic):
        raise ValueError(f"pmap in_axes has {len(in_axes)} entries but the function was given "
                         f"{len(dynamic)} mapped positional arguments: give one per argument "
                         f"(static_broadcasted_argnums are not counted), or one for all.")
    try:
        axes = broadcast_prefix(in_axes, dynamic, is_leaf=lambda x: x is None)
    except ValueError as error:
        raise ValueError(f"pmap in_axes {in_axes!r} is not a prefix of the arguments' "
                         f"structure: {error}") from None
    axes += [0] * (len(leaves) - len(axes))
    out = []
    for leaf, axis in zip(leaves, axes):
        if axis is not None and type(axis) is not int:
            raise TypeError(f"pmap in_axes must be ints or None, got {axis!r}.")
        ndim = get_aval(leaf).ndim
        if axis is not None and not -ndim <= axis < ndim:
            raise ValueError(f"pmap in_axes {axis} is out of range for an argument of rank "
                             f"{ndim}: a mapped argument needs the axis it is mapped over.")
        out.append(None if axis is None else axis % ndim)
    return out


def _mapped_size(leaves: list, axes: list, fun: Callable) -> int:
    sizes = {get_aval(leaf).shape[axis] for leaf, axis in zip(leaves, axes) if axis is not None}
    if len(sizes) > 1:
        raise ValueError(f"pmap got inconsistent sizes for the mapped axes of "
                         f"{getattr(fun, '__name__', 'fun')}'s arguments: {sorted(sizes)}. "
                         f"Every mapped argument must have the same size along its in_axes.")
    if not sizes:
        raise ValueError("pmap maps no argument (every in_axes is None): map at least one "
                         "over the devices, with in_axes=0 or an axis of its own.")
    return sizes.pop()


def _devices_for(size: int, devices: Any) -> list:
    place = list(devices) if devices is not None else all_devices()
    if size > len(place):
        raise ValueError(f"pmap maps an axis of size {size}, one slice per device, but there "
                         f"are {len(place)} devices. Reshape the data to (devices, "
                         f"per-device, ...) and pmap over the first axis, or vmap inside.")
    return place[:size]


# --8<-- [start:pmap_program]
def _program(fun: Callable, name: Any, place: list, in_tree: Any, axes: list,
             static: dict[int, Any], out_axes: Any) -> Callable:
    """The jitted SPMD program for one kind of call: a ``shard_map`` over the devices."""
    mesh = Mesh(np.array(place, dtype=object), (name,), (AxisType.Auto,))  # as JAX's

    def per_device(*blocks: Any) -> Any:
        slices = [b if axis is None else lax.squeeze(b, (0,)) for b, axis in zip(blocks, axes)]
        dynamic, kwargs = tree_unflatten(in_tree, slices)
        args, rest = [], iter(dynamic)
        for i in range(len(dynamic) + len(static)):
            args.append(static[i] if i in static else next(rest))
        out = fun(*args, **kwargs)
        out_leaves, out_tree = tree_flatten(out)
        where = _flat_out_axes(out_axes, out)
        return tree_unflatten(out_tree, [y if axis is None else lax.expand_dims(y, (0,))
                                         for y, axis in zip(out_leaves, where)])

    def whole(*leaves: Any) -> Any:
        front = [x if axis in (None, 0) else jnp.moveaxis(x, axis, 0)
                 for x, axis in zip(leaves, axes)]
        specs = tuple(PartitionSpec() if axis is None else PartitionSpec(name) for axis in axes)
        out = shard_map(per_device, mesh=mesh, in_specs=specs, check_vma=False,
                        out_specs=_out_specs(out_axes, name))(*front)
        out_leaves, out_tree = tree_flatten(out)
        moved = [y if axis in (None, 0) else jnp.moveaxis(y, 0, axis)
                 for y, axis in zip(out_leaves, _flat_out_axes(out_axes, out))]
        return tree_unflatten(out_tree, moved)

    return jit(whole)
# --8<-- [end:pmap_program]


def _flat_out_axes(out_axes: Any, out: Any) -> list[Any]:
    try:
        return broadcast_prefix(out_axes, out, is_leaf=lambda x: x is None)
    except ValueError as error:
        raise ValueError(f"pmap out_axes {out_axes!r} is not a prefix of the function's "
                         f"outputs: {error}") from None


def _out_specs(out_axes: Any, name: Any) -> Any:
    """``out_axes`` as shard_map's ``out_specs``: a mapped output is split over the axis, an
    unmapped one (None) is whole on every device."""
    if out_axes is None:
        return PartitionSpec()
    if type(out_axes) is int:
        return PartitionSpec(name)
    leaves, tree = tree_flatten(out_axes, is_leaf=lambda x: x is None)
    return tree_unflatten(tree, [PartitionSpec() if a is None else PartitionSpec(name)
                                 for a in leaves])
