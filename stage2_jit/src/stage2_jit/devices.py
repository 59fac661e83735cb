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

import numpy as np
from stage1_autodiff.config import config
from stage1_autodiff.core import CPU_DEVICE, Array, Device, Primitive, ShapedArray, asarray
from stage1_autodiff.tree_util import tree_map

GPU_PLATFORM_NAMES = ("gpu", "cuda")


@functools.cache
def gpu_device() -> Device:
    """The CUDA device (the first GPU), or a RuntimeError saying why there is none."""
    from .codegen_cuda import cuda_unavailable_reason
    reason = cuda_unavailable_reason()
    if reason is not None:
        raise RuntimeError(f"Unable to initialize backend 'cuda': {reason}. The 'cpu' backend "
                           f"is always available: jax.devices('cpu').")
    from numba import config, cuda
    if config.ENABLE_CUDASIM:
        return Device("gpu", 0, "Numba CUDA simulator")
    name = cuda.get_current_device().name
    return Device("gpu", 0, name.decode() if isinstance(name, bytes) else str(name))


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
    backend's first device). Arrays already there are returned as they are."""
    if device is None:
        device = devices()[0]
    if not isinstance(device, Device):
        raise TypeError(f"device_put expects a device such as jax.devices('gpu')[0], got "
                        f"{device!r} of type {type(device).__name__}.")
    return tree_map(lambda leaf: _put(leaf, device), x)


def _put(leaf: Any, device: Device) -> Array:
    array = asarray(leaf)
    if device.platform == "cpu":
        return array if type(array) is Array else Array(array._value, array.weak_type)
    if isinstance(array, GpuArray):
        return array
    from numba import cuda
    host = np.ascontiguousarray(array._value).reshape(array.shape or (1,))
    return GpuArray(cuda.to_device(host), array.aval)


class PlacedArray(Array):
    """An Array whose data is not one host NumPy buffer (a GPU buffer here; per-device blocks
    in stage 4). It keeps its type, and makes the host copy that NumPy code and printing see
    on first need (``_fetch``), then keeps it: arrays are immutable, so it never goes stale.
    Eager primitives on it run where its data lives (``apply_primitive``)."""

    __slots__ = ("_aval", "_host")

    def __init__(self, aval: ShapedArray) -> None:
        self._aval = ShapedArray(aval.shape, aval.dtype, aval.weak_type)
        self.weak_type = aval.weak_type
        self._host: np.ndarray | None = None

    @property
    def _value(self) -> np.ndarray:
        if self._host is None:
            self._host = self._fetch()
        return self._host

    def _fetch(self) -> np.ndarray:
        raise NotImplementedError

    @property
    def shape(self) -> tuple[int, ...]: return self._aval.shape

    @property
    def dtype(self) -> np.dtype: return self._aval.dtype

    @property
    def aval(self) -> ShapedArray: return self._aval


# --8<-- [start:gpu_array]
class GpuArray(PlacedArray):
    """An Array whose buffer is in GPU memory: a Numba device array of the array's shape
    (shape ``(1,)`` for a 0-d array, as the generated kernels store scalars)."""

    __slots__ = ("_buffer",)

    def __init__(self, buffer: Any, aval: ShapedArray) -> None:
        super().__init__(aval)
        self._buffer = buffer

    def _fetch(self) -> np.ndarray:
        return self._buffer.copy_to_host().reshape(self._aval.shape)

    @property
    def device(self) -> Device: return gpu_device()

    def block_until_ready(self) -> GpuArray:
        """Waits until the kernels queued so far (on Numba's default stream) have finished."""
        from numba import cuda
        cuda.synchronize()
        return self

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """The buffer, for CuPy, PyTorch or Numba to use without a copy."""
        interface = dict(self._buffer.__cuda_array_interface__)
        if not self.shape:
            interface.update(shape=(), strides=None)
        return interface

    @classmethod
    def apply_primitive(cls, prim: Primitive, arrays: list[Array],
                        params: dict[str, Any]) -> list[Array]:
        """A jitted program runs on the backend it names (``cuda`` unless the caller asked
        for another); any other primitive runs as a one-equation program on the GPU."""
        from .jit import compile_jaxpr, jit_p, values_for
        if prim is jit_p:
            backend = params["backend"]
            return compile_jaxpr(params["jaxpr"], backend)(*values_for(backend, arrays))
        return _run_on_gpu(prim, arrays, params)
# --8<-- [end:gpu_array]


# --8<-- [start:on_gpu]
@functools.cache
def _on_gpu(prim: Primitive, params: tuple) -> Any:
    """``prim`` with these parameters as a jitted function on the ``cuda`` backend: one per
    (primitive, parameters); ``jit`` then keeps one program per argument types."""
    from .jit import jit
    kwargs = {k: _thawed(v) for k, v in params}

    def apply(*args):
        out = prim.bind(*args, **kwargs)
        return list(out) if prim.multiple_results else [out]

    jitted = jit(apply, backend="cuda")
    jitted.__name__ = prim.name
    return jitted


def _run_on_gpu(prim: Primitive, arrays: list[Array], params: dict[str, Any]) -> list[Array]:
    try:
        key = _frozen(params)
        hash(key)
    except TypeError:  # a parameter that cannot key a cache: run on the host, then put back
        host = [Array(a._value, a.weak_type) for a in arrays]
        outs = prim.bind(*host, **params)
        return device_put(list(outs) if prim.multiple_results else [outs], gpu_device())
    return _on_gpu(prim, key)(*arrays)
# --8<-- [end:on_gpu]


def _frozen(params: dict[str, Any]) -> tuple:
    """The parameters as a hashable key: lists become tagged tuples."""
    def freeze(value: Any) -> Any:
        if isinstance(value, list):
            return ("__list__", tuple(freeze(v) for v in value))
        if isinstance(value, tuple):
            return tuple(freeze(v) for v in value)
        return value
    return tuple(sorted((k, freeze(v)) for k, v in params.items()))


def _thawed(value: Any) -> Any:
    if isinstance(value, tuple) and value[:1] == ("__list__",):
        return [_thawed(v) for v in value[1]]
    if isinstance(value, tuple):
        return tuple(_thawed(v) for v in value)
    return value
