"""Devices and arrays that live on them: ``jax.devices``, ``device_put``, GPU arrays.

Stage 1's arrays are NumPy buffers on the host. Here an array can also live in a CUDA GPU's
memory: a :class:`GpuArray` holds a Numba device array and never copies it to the host unless
asked (``np.asarray(x)``, printing, ``float(x)``...). What runs where follows the data, as in
JAX: ``jit`` of a function given a GPU array runs on the ``cuda`` backend, and its results stay
on the GPU; an eager operation on a GPU array is compiled, once per primitive, parameters and
types, into a one-equation program for the ``cuda`` backend (JAX's ``apply_primitive`` does
the same with XLA), so a chain of eager operations never leaves the device either.

NB: numba-cuda is optional. Nothing here imports it until a GPU is asked for.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
from stage1_autodiff.config import config
from stage1_autodiff.core import (
    CPU_DEVICE,
    Array,
    Device,
    SingleDeviceSharding,
    Tracer,
    asarray,
)
from stage1_autodiff.extension import set_memory_limit, set_placement
from stage1_autodiff.tree_util import (
    broadcast_prefix,
    tree_flatten,
    tree_structure,
    tree_unflatten,
)

from .arrays import GpuArray, PlacedArray
from .buffers import DEVICE_POOL, to_device

GPU_PLATFORM_NAMES = ("gpu", "cuda")


def cuda_unavailable_reason() -> str | None:
    """Why the CUDA backend cannot run here, or None when it can."""
    try:
        from numba import config, cuda
    except ImportError:
        return "numba-cuda is not installed (pip install 'numba-cuda[cu13]')"
    if config.ENABLE_CUDASIM or cuda.is_available():
        return None
    return ("no CUDA GPU was found; to run the CUDA backend without one, set "
            "NUMBA_ENABLE_CUDASIM=1 (Numba's CUDA simulator) before importing numba")


@functools.cache
def gpu_device() -> Device:
    """The CUDA device (the first GPU), or a RuntimeError saying why there is none."""
    reason = cuda_unavailable_reason()
    if reason is not None:
        raise RuntimeError(f"Unable to initialize backend 'cuda': {reason}. The 'cpu' backend "
                           f"is always available: jax.devices('cpu').")
    from numba import config, cuda
    if config.ENABLE_CUDASIM:
        device = Device("gpu", 0, "Numba CUDA simulator")
    else:
        name = cuda.get_current_device().name
        device = Device("gpu", 0, name.decode() if isinstance(name, bytes) else str(name))
        set_memory_limit(device, cuda.current_context().get_memory_info().total)
    DEVICE_POOL.device = device
    return device


def devices(backend: str | None = None) -> list[Device]:
    """The devices of ``backend`` (``"cpu"``, ``"gpu"`` or ``"cuda"``); by default those of
    the default backend (``default_backend()``)."""
    backend = backend or default_backend()
    if backend in GPU_PLATFORM_NAMES:
        return [gpu_device()]
    if backend in ("cpu", "interpreter"):
        return [CPU_DEVICE]
    raise RuntimeError(f"Unknown backend {backend!r}. Available backends: cpu, gpu (also "
                       f"spelled cuda).")


def default_backend() -> str:
    """The platform computations run on by default: ``"gpu"`` when ``jax_default_backend``
    (or the environment variable ``JAX_DEFAULT_BACKEND``) is ``"cuda"``, else ``"cpu"``."""
    return "gpu" if config.jax_default_backend in GPU_PLATFORM_NAMES else "cpu"


def device_put(x: Any, device: Any = None, *, src: Any = None, donate: Any = False,
               may_alias: Any = None) -> Any:
    """Every leaf of the pytree ``x`` as an Array on ``device`` (by default the default
    backend's first device). ``device`` may be a pytree prefix of ``x``, with a device (or an
    array's ``x.sharding``) or None at each leaf. Arrays already there are returned as they
    are, unless ``may_alias=False`` or ``donate=True`` asks for a copy; without a device, an
    array placed on devices already (a GPU or a sharded array) stays where it is, as in JAX.
    ``donate``, ``may_alias`` and ``src`` may be prefixes of ``x`` too; ``src`` is checked and
    unused (every array knows where it is). A donated array is not deleted: JAX's CPU client
    does not delete it either.

    Under a transformation (``jit``, ``grad``, ``vmap``) a value is returned as it is: the
    program's backend holds every value (see "Differences from JAX")."""
    return put_tree(x, device, src, donate, may_alias, _put_leaf, _is_target)


def _put_leaf(leaf: Any, target: Any, copy: bool) -> Any:
    if target is None and isinstance(leaf, PlacedArray) and not copy:
        return leaf
    return _put(leaf, _as_device(target, "device_put"), copy)


def _is_target(x: Any) -> bool:
    return x is None or isinstance(x, (Device, SingleDeviceSharding))


def put_tree(x: Any, device: Any, src: Any, donate: Any, may_alias: Any,
             put_leaf: Callable[[Any, Any, bool], Any], is_target: Callable[[Any], bool]) -> Any:
    """``device_put``'s walk over ``x``: ``put_leaf(leaf, target, copy)`` for each leaf, its
    target and flags taken from the prefixes ``device``, ``donate`` and ``may_alias``."""
    leaves, treedef = tree_flatten(x)
    targets = _per_leaf(device, x, "device", is_target)
    _per_leaf(src, x, "source", is_target)  # checked, as JAX checks it
    donates = _per_leaf(donate, x, "donate", _is_flag)
    aliases = _per_leaf(may_alias, x, "may_alias", _is_flag)
    out = []
    for leaf, target, donated, alias in zip(leaves, targets, donates, aliases):
        if donated and alias:
            raise ValueError("device_put: may_alias and donate cannot be True at the same "
                             "time (a donated array is not aliased, it is given away).")
        out.append(put_leaf(leaf, target, bool(donated) or alias is False))
    return tree_unflatten(treedef, out)


def _is_flag(x: Any) -> bool:
    return x is None or isinstance(x, (bool, np.bool_))


def _per_leaf(prefix: Any, tree: Any, what: str, is_leaf: Callable[[Any], bool]) -> list:
    """The leaves of the prefix ``prefix``, each repeated over the leaves of the subtree of
    ``tree`` it stands for."""
    try:
        return broadcast_prefix(prefix, tree, is_leaf)
    except (ValueError, TypeError) as e:
        raise ValueError(f"device_put {what} specification must be a tree prefix of the "
                         f"corresponding value: got {prefix!r} for {tree_structure(tree)}. "
                         f"{e}") from None


def _as_device(device: Any, fun_name: str) -> Device:
    """The device ``device`` names: a device, or another array's ``x.sharding``; None: the
    default device (``jax.default_device``'s, which may be a platform's name)."""
    if device is None:
        device = config.jax_default_device
        if device is None or isinstance(device, str):
            return devices(device)[0]
    if isinstance(device, SingleDeviceSharding):
        device = device.device
    if not isinstance(device, Device):
        raise ValueError(f"{fun_name} expects a device such as jax.devices('gpu')[0], an "
                         f"array's x.sharding, None, or a pytree of these (a sharding over a "
                         f"mesh from stage 4), got {device!r} of type {type(device).__name__}.")
    return device


def place(x: Any, device: Any, out_sharding: Any) -> Any:
    """The ``device=`` of ``jnp.zeros`` and the other functions that make arrays (stage 1's
    ``extension.place``). There is no mesh before stage 4, so no ``out_sharding``. Under
    ``jit`` the device is checked, and the backend the program runs on holds every array."""
    if out_sharding is not None:
        raise ValueError(f"out_sharding={out_sharding!r} lays an array out over a mesh of "
                         f"devices, which stage 4 adds (import stage4_sharding).")
    device = _as_device(device, "device=")
    return x if isinstance(x, Tracer) else device_put(x, device)


set_placement(place)


def _put(leaf: Any, device: Device, copy: bool = False) -> Any:
    """``leaf`` on ``device``: itself when it is there already and ``copy`` is not asked for.
    A traced value stays a traced value (the program's backend holds it)."""
    if isinstance(leaf, Tracer):
        return leaf
    array = asarray(leaf)
    if device.platform != "cpu" and isinstance(array, GpuArray) and not copy:
        return array
    value = array._concrete_value("device_put")  # a deleted array raises, as in JAX
    if device.platform != "cpu":
        return GpuArray(to_device(value), array.aval, device)
    if type(array) is Array:
        return Array(value.copy(), array.weak_type) if copy else array
    return Array(value, array.weak_type)  # from a device: a new host array
