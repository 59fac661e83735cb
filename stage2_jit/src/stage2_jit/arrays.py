"""Arrays whose data is not one host NumPy buffer: :class:`PlacedArray`, and :class:`GpuArray`,
an array in a CUDA GPU's memory.

These are value types: they hold buffers and know their device, and nothing here compiles or
runs a program. How an eager primitive runs on them is a hook that the executing module
registers (``GpuArray.executor``, set by jit.py), so no value type imports its executor.

NB: in JAX the array type is ``jax/_src/array.py:ArrayImpl`` over PjRt buffers, and an eager
primitive goes through ``jax/_src/dispatch.py:apply_primitive``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
from stage1_autodiff.core import Array, DeletedBuffer, Device, Primitive, ShapedArray


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

    def __reduce__(self) -> tuple:
        """Pickled as its value: unpickled, it is a host array (as JAX's, on one device)."""
        return Array, (self._concrete_value("pickle"), self.weak_type)

    @property
    def shape(self) -> tuple[int, ...]: return self._aval.shape

    @property
    def dtype(self) -> np.dtype: return self._aval.dtype

    @property
    def aval(self) -> ShapedArray: return self._aval

    committed = property(lambda self: True)  # put on its devices by device_put or a program

    def delete(self) -> None:
        """Lets go of the array's memory now (its GPU buffer, or every device's block); any
        later use of its values raises JAX's error, as a donated array's does."""
        if not self.is_deleted():
            self._host = DeletedBuffer(self._aval.shape, self._aval.dtype)
            self._let_go()

    def is_deleted(self) -> bool:
        return type(self._host) is DeletedBuffer

    def _let_go(self) -> None:
        """Drops the device memory, leaving the ``DeletedBuffer`` in its place."""
        raise NotImplementedError


# --8<-- [start:gpu_array]
class GpuArray(PlacedArray):
    """An Array whose buffer is in GPU memory: a Numba device array of the array's shape
    (shape ``(1,)`` for a 0-d array, as the generated kernels store scalars)."""

    __slots__ = ("_buffer", "_device")

    # How an eager primitive runs on GPU arrays: compiled for the ``cuda`` backend. jit.py,
    # which can compile, registers it (``run_eagerly_on_gpu``), so the value type imports no
    # executor.
    executor: ClassVar[Callable[[Primitive, list[Array], dict[str, Any]], list[Array]] | None]
    executor = None

    def __init__(self, buffer: Any, aval: ShapedArray, device: Device) -> None:
        super().__init__(aval)
        self._buffer = buffer
        self._device = device

    def _fetch(self) -> np.ndarray:
        return self._buffer.copy_to_host().reshape(self._aval.shape)

    def _let_go(self) -> None:
        self._buffer = self._host  # the device memory goes back to the caching allocator

    @property
    def device(self) -> Device: return self._device

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
        """Runs on the GPU, through the executor registered by jit.py."""
        if cls.executor is None:
            raise RuntimeError("No executor for GPU arrays: import stage2_jit (its jit module "
                               "registers one).")
        return cls.executor(prim, arrays, params)
# --8<-- [end:gpu_array]
