"""The real-GPU lending path of the caching allocator (``DevicePool._lend``), without a GPU: a
fake block stands in for device memory, since no driver call is made to build a device array
over memory that is already there.

Run in its own process, with numba-cuda installed and the simulator off (as the PTX check):
    pip install -e "./stage2_jit[cuda]"
    python -m pytest tests/stage2_cuda/test_device_pool_lending.py
Numba's own (older) ``numba.cuda`` lacks the driver binding used here, so without numba-cuda,
or under the simulator, it is skipped.
"""

import gc
import importlib.util

import numpy as np
import pytest

if importlib.util.find_spec("numba_cuda") is None:
    pytest.skip("numba-cuda is not installed: pip install -e './stage2_jit[cuda]'",
                allow_module_level=True)
from numba import config  # noqa: E402

if config.ENABLE_CUDASIM:
    pytest.skip("the simulator's device arrays are host arrays: run without "
                "NUMBA_ENABLE_CUDASIM=1", allow_module_level=True)

from numba.cuda.cudadrv import driver  # noqa: E402
from stage1_autodiff.core import Device  # noqa: E402
from stage2_jit.buffers import DevicePool, size_class  # noqa: E402


class Block:
    """What ``cuda.device_array(size, np.uint8)`` gives, as far as the pool uses it."""

    def __init__(self, size):
        self.gpu_data = driver.MemoryPointer(None, driver.binding.CUdeviceptr(1 << 20), size)
        self.size = size


def test_the_device_pool_lends_a_memory_pointer_that_gives_its_block_back_when_it_dies():
    pool, device = DevicePool(), Device("gpu", 0, "a fake GPU")
    pool._new_block = lambda size: (Block(size), 0)
    array = pool.empty((3, 5), np.float32, device)
    assert array.shape == (3, 5) and array.strides == (20, 4) and array.dtype == np.float32
    view = array.gpu_data.view(20)  # what a slice of the array holds: the lease's pointer
    assert view.owner is array.gpu_data
    del array
    gc.collect()
    assert pool.idle == 0  # the view keeps the block lent
    del view
    gc.collect()
    assert pool.idle == size_class(60) and device.memory_stats()["bytes_in_use"] == 0
