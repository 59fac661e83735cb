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
from typing import Any

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
from stage1_autodiff.tree_util import tree_map

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


def device_put(x: Any, device: Device | None = None) -> Any:
    """Every leaf of the pytree ``x`` as an Array on ``device`` (by default the default
    backend's first device). Arrays already there are returned as they are; so, without a
    ``device``, is an array placed on devices already (a GPU or a sharded array), as in JAX."""
    if device is None:
        target = devices()[0]
        return tree_map(lambda leaf: leaf if isinstance(leaf, PlacedArray) else
                        _put(leaf, target), x)
    device = _as_device(device, "device_put")
    return tree_map(lambda leaf: _put(leaf, device), x)


def _as_device(device: Any, fun_name: str) -> Device:
    """The device ``device`` names: a device, or another array's ``x.sharding``."""
    if device is None:
        return devices()[0]
    if isinstance(device, SingleDeviceSharding):
        device = device.device
    if not isinstance(device, Device):
        raise TypeError(f"{fun_name} expects a device such as jax.devices('gpu')[0], got "
                        f"{device!r} of type {type(device).__name__}.")
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


def _put(leaf: Any, device: Device) -> Array:
    array = asarray(leaf)
    if device.platform == "cpu":
        value = array._concrete_value("device_put")  # a deleted array raises, as in JAX
        return array if type(array) is Array else Array(value, array.weak_type)
    if isinstance(array, GpuArray):
        return array
    return GpuArray(to_device(array._concrete_value("device_put")), array.aval, device)
