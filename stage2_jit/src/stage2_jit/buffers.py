"""Buffers: where the memory of the runtime's arrays comes from, and where it goes back to.

A fused kernel reads its operands once and writes its result once. For a 100 MB result that
is about 7 ms of memory traffic on this machine, and memory fresh from the operating system
costs as much again: every 4 KiB page faults the first time it is written. NumPy's own
``x * x + x * 2.0`` pays that on each of its four passes. So the runtime allocates every
output and scratch buffer itself, outside the kernel, and a kernel only writes into what it is
given (``runtime.CpuExecutable``).

The memory comes from a pool that lends the memory of arrays that have died again, as
PyTorch's caching allocator and XLA's BFC allocator do:

- Buffers under ``POOL_MIN`` bytes come from ``np.empty``: reusing small memory at once is
  what malloc does well already, and its price (about 0.1 µs) is the smallest there is.
- A larger buffer is rounded up to a size class (four per power of two, so at most a quarter
  of it goes unused) and taken from that class's free list, or, when the list is empty, newly
  mapped from the operating system (:func:`fresh_pages`: in 4 KiB pages, not huge ones).
- A lent buffer is an array whose ``base`` is a :class:`Lease`. Every view of the array keeps
  the lease alive, so the memory goes back to its free list only when the last view dies:
  no array ever sees its memory reused while it lives.
- The pool keeps at most ``jax_from_numpy_pool_idle_bytes`` of idle memory; a buffer that
  would go beyond it is freed.

``Device.memory_stats()`` reports what the pool lends (``bytes_in_use``) and holds
(``pool_bytes``) for each device, with JAX's key names.

NB: XLA's CPU client allocates with the system allocator (``xla/pjrt/cpu``); its GPU client
uses the BFC allocator (``xla/tsl/framework/bfc_allocator.cc``), and PyTorch's CUDA caching
allocator (``c10/cuda/CUDACachingAllocator.cpp``) keeps freed blocks for reuse as this pool
does.
"""

from __future__ import annotations

import functools
import math
import mmap
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from stage1_autodiff.config import config
from stage1_autodiff.core import CPU_DEVICE, Device
from stage1_autodiff.extension import track_device_memory, track_pool_memory

POOL_MIN = 1 << 16  # bytes: smaller buffers come straight from np.empty

config.define("jax_from_numpy_pool_idle_bytes", 2**30,
              "How many bytes of dead arrays' memory the buffer pool keeps for reuse (0: none).")


def size_class(nbytes: int) -> int:
    """``nbytes`` rounded up to the next of 4, 5, 6 or 7 times a power of two."""
    step = 1 << max((nbytes - 1).bit_length() - 3, 0)
    return -(-nbytes // step) * step


# --8<-- [start:pool]
class Lease:
    """One lent buffer: the ``base`` of the array made from it (NumPy's array interface), so
    that it lives exactly as long as some view of that array does."""

    __slots__ = ("pool", "raw", "device", "__array_interface__")

    def __init__(self, pool: Pool, raw: tuple[np.ndarray, int], device: Device,
                 shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.pool, self.raw, self.device = pool, raw, device
        self.__array_interface__ = {"shape": shape, "typestr": dtype.str, "version": 3,
                                    "data": (raw[1], False)}

    def __del__(self) -> None:
        try:
            self.pool.give_back(self.raw, self.device)
        except Exception:  # NB: at interpreter exit the module may be half torn down
            pass


class Pool:
    """Free lists of idle buffers by size class, shared by every device of the host."""

    def __init__(self) -> None:
        self.free: dict[int, list[tuple[tuple[Any, int], Device]]] = {}
        self.idle = 0  # bytes in the free lists
        self.lock = threading.RLock()  # NB: reentrant: a lease may die while it is held

    minimum = POOL_MIN  # bytes: smaller buffers are not pooled (``_unpooled``)

    def empty(self, shape: Sequence[int], dtype: Any, device: Device | None = None) -> Any:
        """An uninitialised C-contiguous array of ``shape`` and ``dtype`` for ``device``."""
        dtype, shape = np.dtype(dtype), tuple(shape)
        nbytes = int(math.prod(shape)) * dtype.itemsize
        if nbytes < self.minimum:
            return self._unpooled(shape, dtype)
        device = device or self._device()
        return self._lend(self._take(size_class(max(nbytes, 1)), device), device, shape, dtype)

    # How a host pool gets, lends and names its memory; a device pool says otherwise.
    def _unpooled(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        return np.empty(shape, dtype)

    def _device(self) -> Device:
        return allocating_device()

    def _new_block(self, size: int) -> tuple[Any, int]:
        block = fresh_pages(size)
        return block, block.__array_interface__["data"][0]

    def _lend(self, raw: tuple[Any, int], device: Device, shape: tuple[int, ...],
              dtype: np.dtype) -> Any:
        return np.asarray(Lease(self, raw, device, shape, dtype))

    def _take(self, size: int, device: Device) -> tuple[Any, int]:
        with self.lock:
            free = self.free.get(size)
            if free:
                raw, owner = free.pop()
                self.idle -= size
                if owner != device:  # the pool's memory moves to the device it now serves
                    track_pool_memory(owner, -size)
                    track_pool_memory(device, size)
            else:
                raw = self._new_block(size)
                track_pool_memory(device, size)
            track_device_memory(device, size)
        return raw

    def give_back(self, raw: tuple[Any, int], device: Device) -> None:
        size = raw[0].size
        with self.lock:
            track_device_memory(device, -size)
            if self.idle + size <= config.jax_from_numpy_pool_idle_bytes:
                self.free.setdefault(size, []).append((raw, device))
                self.idle += size
            else:
                track_pool_memory(device, -size)

    # --8<-- [end:pool]

    def release_idle(self) -> int:
        """Frees every idle buffer; returns how many bytes that was."""
        with self.lock:
            freed, self.idle = self.idle, 0
            for entries in self.free.values():
                for raw, owner in entries:
                    track_pool_memory(owner, -raw[0].size)
            self.free.clear()
        return freed


POOL = Pool()


# --8<-- [start:fresh_pages]
def fresh_pages(size: int) -> np.ndarray:
    """``size`` bytes of new memory, mapped from the operating system in 4 KiB pages.

    The pool lends its blocks again and again, so what a block's pages cost is their first
    touch. Huge pages (what ``np.empty`` asks for, for 4 MiB or more) make that touch cheaper
    on a bare machine, but in a virtual machine whose host takes back the guest's free memory,
    a fresh 2 MiB page can take milliseconds to fault in: a new 100 MB result often took 0.1
    to 0.6 s to write, in 4 KiB pages 22 to 26 ms. Once touched, huge pages can run a
    memory-bound kernel up to a third faster (fewer page walks): the price of avoiding that
    worst case (``course/stage2/buffers.md`` has the measurements)."""
    if not hasattr(mmap, "MADV_NOHUGEPAGE"):  # not Linux: the system allocator's choice
        return np.empty(size, np.uint8)
    memory = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    memory.madvise(mmap.MADV_NOHUGEPAGE)
    return np.frombuffer(memory, np.uint8)  # which keeps ``memory`` mapped while it lives
# --8<-- [end:fresh_pages]


# --8<-- [start:device_pool]
class DevicePool(Pool):
    """The GPU's caching allocator: the same free lists, of device memory. Every buffer is
    pooled (``cudaMalloc`` takes tens of microseconds and synchronises the device). A lent
    buffer is a device array over a memory pointer of its own, which gives its block back
    when it dies; views of the array keep that pointer alive, as a ``Lease`` does on the host.

    A block is lent again as soon as its array dies, while kernels that use it may still be
    queued. That is safe because every kernel and copy here runs on Numba's default stream,
    in order: whatever is queued with the new array runs after them. (PyTorch's allocator
    keeps blocks per stream for the same reason.)"""

    minimum = 0
    device: Device | None = None  # the GPU, set by ``devices.gpu_device`` when it finds it

    def _device(self) -> Device:
        if self.device is None:
            raise RuntimeError("No GPU was found yet: call jax.devices('gpu') first.")
        return self.device

    def _new_block(self, size: int) -> tuple[Any, int]:
        from numba import config, cuda
        if config.ENABLE_CUDASIM:  # the simulator's device memory is host memory
            return super()._new_block(size)
        return cuda.device_array(size, np.uint8), 0

    def _lend(self, raw: tuple[Any, int], device: Device, shape: tuple[int, ...],
              dtype: np.dtype) -> Any:
        from numba import config
        if config.ENABLE_CUDASIM:
            from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
            return FakeCUDAArray(super()._lend(raw, device, shape, dtype))
        from numba.cuda.cudadrv.devicearray import DeviceNDArray
        from numba.cuda.cudadrv.driver import MemoryPointer
        block = raw[0].gpu_data
        memory = MemoryPointer(block.context, block.device_pointer,
                               math.prod(shape) * dtype.itemsize,
                               finalizer=functools.partial(self.give_back, raw, device))
        return DeviceNDArray(shape, c_strides(shape, dtype.itemsize), dtype, gpu_data=memory)
# --8<-- [end:device_pool]


def c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """The strides of a C-contiguous array of ``shape``."""
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


DEVICE_POOL = DevicePool()


def device_empty(shape: Sequence[int], dtype: Any) -> Any:
    """An uninitialised device array from the GPU's pool."""
    return DEVICE_POOL.empty(shape, dtype)


def to_device(x: Any) -> Any:
    """A device buffer for ``x``: itself when it is one already, else a copy of the host array
    in a buffer from the GPU's pool (a 0-d array as shape (1,), as kernels store scalars)."""
    if hasattr(x, "copy_to_host"):  # a device array (the simulator's has no CUDA interface)
        return x
    x = np.ascontiguousarray(x)
    buffer = DEVICE_POOL.empty(x.shape or (1,), x.dtype)
    if x.size:
        buffer.copy_to_device(x.reshape(buffer.shape))
    return buffer
_allocating = threading.local()


def allocating_device() -> Device:
    """The device the buffers allocated now are for: the host CPU unless a caller said
    otherwise (stage 4 runs each simulated device's program under ``allocating_for``)."""
    return getattr(_allocating, "device", CPU_DEVICE)


@contextmanager
def allocating_for(device: Device) -> Iterator[None]:
    """Attributes the buffers allocated in this block (on this thread) to ``device``."""
    before = allocating_device()
    _allocating.device = device
    try:
        yield
    finally:
        _allocating.device = before


def lent(array: np.ndarray) -> bool:
    """Whether ``array``'s memory was lent by the pool (and so is counted by it)."""
    base = array.base
    while isinstance(base, np.ndarray):
        base = base.base
    return isinstance(base, Lease)
