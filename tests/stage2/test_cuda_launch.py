"""The CUDA backend's trimmed launch path (stage2_jit/cuda_launch.py), without a GPU: a fake
dispatcher stands in for Numba's, and the launch it would make is recorded. On a GPU,
benchmarks/bench_stage2_gpu.py checks the results of launches made this way against NumPy."""

import ctypes

import numpy as np
import pytest
from numba import from_dtype
from numba.core import types

from stage2_jit import cuda_launch


class FakeDeviceArray:
    """What the trimmed path reads of a Numba device array."""

    def __init__(self, shape, dtype, address):
        host = np.empty(shape, dtype)
        self.shape, self.strides, self.dtype = host.shape, host.strides, host.dtype
        self.ndim, self.size = host.ndim, host.size
        self.device_ctypes_pointer = ctypes.c_void_p(address)


class FakeDispatcher:
    """Compiles on its first launch for the types of the arguments, as Numba's does."""
    __module__ = "kernels"

    def __init__(self):
        self.overloads, self.launches = {}, []

    def configure(self):
        pass

    def __getitem__(self, launch):
        def run(*args):
            self.launches.append((launch, args))
            kinds = tuple(types.Array(from_dtype(a.dtype), a.ndim, "C") for a in args)
            compiled = type("Compiled", (), {"argument_types": kinds})()
            handle = type("Function", (), {"kernel": "handle"})()
            compiled._codelibrary = type("Library", (), {"get_cufunc": lambda _: handle})()
            self.overloads.setdefault(kinds, compiled)
        return run


@pytest.fixture
def launched(monkeypatch):
    calls = []
    monkeypatch.setattr(cuda_launch, "_core_launch",
                        lambda config, kernel, flat: calls.append((config, kernel, flat)))
    monkeypatch.setattr(cuda_launch.FastKernel, "_config", lambda self, grid, block: (grid, block))
    return calls


def test_the_first_launch_compiles_through_numba_and_later_ones_skip_it(launched):
    dispatcher = FakeDispatcher()
    kernel = cuda_launch.FastKernel(dispatcher)
    dims = FakeDeviceArray((2,), np.int64, 1000)
    x = FakeDeviceArray((3, 4), np.float32, 2000)
    kernel[2, 256](dims, x)
    assert len(dispatcher.launches) == 1 and not launched
    kernel[(2, 1, 1), (16, 16)](dims, x)
    assert len(dispatcher.launches) == 1
    # Numba's flat form of each array: meminfo, parent, size, itemsize, data, shape, strides
    assert launched == [(((2, 1, 1), (16, 16)), "handle",
                         [0, 0, 2, 8, 1000, 2, 8, 0, 0, 12, 4, 2000, 3, 4, 16, 4])]


@pytest.mark.parametrize("other", [
    FakeDeviceArray((3, 4), np.float64, 2000),  # another dtype
    FakeDeviceArray((12,), np.float32, 2000),  # another number of dims
    np.ones((3, 4), np.float32),  # a host array: Numba copies it
])
def test_arguments_of_other_types_go_through_numba(launched, other):
    dispatcher = FakeDispatcher()
    kernel = cuda_launch.FastKernel(dispatcher)
    x = FakeDeviceArray((3, 4), np.float32, 2000)
    kernel[1, 256](x)
    kernel[1, 256](other)
    assert len(dispatcher.launches) == 2 and not launched


def test_a_kernel_with_several_compiled_versions_always_goes_through_numba(launched):
    dispatcher = FakeDispatcher()
    kernel = cuda_launch.FastKernel(dispatcher)
    dispatcher[1, 1](FakeDeviceArray((3,), np.float64, 8))  # compiled for float64 already
    kernel[1, 256](FakeDeviceArray((3,), np.float32, 8))
    kernel[1, 256](FakeDeviceArray((3,), np.float32, 8))
    assert len(dispatcher.launches) == 3 and not launched
