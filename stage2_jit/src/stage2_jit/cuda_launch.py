"""The CUDA backend's trimmed launch path: a kernel launched again with arguments of the types
it was compiled for skips Numba's dispatcher.

A generated host function launches each kernel as CUDA does, ``kernel[blocks, threads](...)``.
Through Numba's dispatcher that takes about 28 µs of Python on an H200 machine: it types every
argument again, looks up the compiled kernel, converts each array to its flat form and builds
a launch configuration. The GPU runs a 5000 × 5000 elementwise kernel in 70 µs, so a program
of a few kernels waited on its host.

``FastKernel`` wraps a kernel of a loaded module. Its first launch goes through Numba, which
compiles (or loads) the code. After that, if the kernel has one compiled version and every
argument is an array, a launch builds Numba's flat argument list itself (for each array:
meminfo, parent, size, itemsize, data pointer, shape, strides) and calls
``cuda.core.launch`` with a cached configuration, on Numba's default stream (about 8 µs).
Any other call (new argument types, a host array) still goes through Numba.

XLA keeps the same split: a kernel is loaded once (``xla/stream_executor/kernel.h``), and a
launch packs only the buffers' addresses and sizes into its arguments
(``xla/stream_executor/kernel_args.h``).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

_NOT_YET = object()  # before the first launch: not known whether the direct path applies


class _Direct:
    """A compiled kernel's handle for ``cuda.core.launch`` and each argument's (dtype, ndim)."""

    def __init__(self, kernel: Any, arrays: list[tuple[np.dtype, int]]) -> None:
        self.kernel = kernel
        self.arrays = arrays

    @classmethod
    def of(cls, dispatcher: Any) -> _Direct | None:
        """The direct path of ``dispatcher``'s one compiled version, or None."""
        try:
            from numba.core import types
            from numba.np.numpy_support import as_dtype
            if len(dispatcher.overloads) != 1:
                return None
            compiled = next(iter(dispatcher.overloads.values()))
            kinds = compiled.argument_types
            if not all(isinstance(t, types.Array) for t in kinds):
                return None
            handle = compiled._codelibrary.get_cufunc().kernel  # noqa: SLF001 -- numba-cuda 0.30
            return cls(handle, [(as_dtype(t.dtype), t.ndim) for t in kinds])
        except Exception:  # noqa: BLE001 -- another numba-cuda: its own path, always
            return None

    # --8<-- [start:fast_launch]
    def parameters(self, args: tuple) -> list | None:
        """Numba's flat argument list for ``args``, or None if they are not the arrays the
        kernel was compiled for."""
        if len(args) != len(self.arrays):
            return None
        flat: list = []
        for a, (dtype, ndim) in zip(args, self.arrays):
            pointer = getattr(a, "device_ctypes_pointer", None)
            if pointer is None or a.dtype != dtype or a.ndim != ndim:
                return None
            flat += (0, 0, a.size, dtype.itemsize, pointer.value or 0, *a.shape, *a.strides)
        return flat


class FastKernel:
    """A kernel of a generated module, launched as ``kernel[grid, block](*args)``."""

    def __init__(self, dispatcher: Any) -> None:
        self.dispatcher = dispatcher
        self.__module__ = dispatcher.__module__  # kernel_cache counts the module's kernels
        self.direct: Any = _NOT_YET
        self.configs: dict[tuple, Any] = {}

    @property
    def overloads(self) -> dict:
        return self.dispatcher.overloads

    def compile(self, signature: Any) -> Any:
        return self.dispatcher.compile(signature)

    def __getitem__(self, launch: tuple) -> Any:
        grid, block = launch[0], launch[1]
        return lambda *args: self.launch(grid, block, args)

    def launch(self, grid: Any, block: Any, args: tuple) -> None:
        direct = self.direct
        if direct is not _NOT_YET and direct is not None:
            flat = direct.parameters(args)
            if flat is not None:
                _core_launch(self._config(grid, block), direct.kernel, flat)
                return
        self.dispatcher[grid, block](*args)
        if direct is _NOT_YET:
            self.direct = _Direct.of(self.dispatcher)

    # --8<-- [end:fast_launch]

    def _config(self, grid: Any, block: Any) -> Any:
        config = self.configs.get((grid, block))
        if config is None:
            from cuda.core import LaunchConfig
            config = self.configs[grid, block] = LaunchConfig(grid=grid, block=block)
        return config


_core: list = []  # cuda.core's launch and Numba's default stream, once imported


def _core_launch(config: Any, kernel: Any, flat: list) -> None:
    if not _core:
        from cuda.core import Stream, launch
        _core[:] = [launch, Stream.from_handle(0)]  # the stream every kernel here runs on
    launch, stream = _core
    launch(stream, config, kernel, *flat)


def trim_launches(module: ModuleType) -> None:
    """Wraps each kernel ``module`` defines in a ``FastKernel`` (on a GPU; under Numba's
    simulator, whose kernels run as Python, nothing changes)."""
    from numba import config
    if config.ENABLE_CUDASIM:
        return
    for name, value in list(vars(module).items()):
        if hasattr(value, "overloads") and getattr(value, "__module__", None) == module.__name__ \
                and hasattr(value, "configure"):
            setattr(module, name, FastKernel(value))
