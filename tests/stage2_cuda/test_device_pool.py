"""The GPU's caching allocator (``buffers.DevicePool``) under Numba's CUDA simulator: the
runtime's device arrays come from the pool, a dead result's memory is lent to the next call,
a live one's never, and the GPU device's ``memory_stats`` counts them.

Run in its own process, with numba-cuda installed:
    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/stage2_cuda
"""

import gc

import numpy as np
import pytest

pytest.importorskip("numba.cuda")
from numba import config  # noqa: E402

if not config.ENABLE_CUDASIM:
    pytest.skip("set NUMBA_ENABLE_CUDASIM=1 to run the CUDA backend tests",
                allow_module_level=True)

from stage2_jit.buffers import DEVICE_POOL, lent  # noqa: E402

import stage2_jit as jax  # noqa: E402

X = np.arange(12, dtype=np.float32).reshape(3, 4)


def _address(gpu_array) -> int:
    return gpu_array._buffer._ary.__array_interface__["data"][0]  # the simulator's memory


def _stats() -> dict[str, int]:
    gc.collect()
    return jax.devices("gpu")[0].memory_stats()


def test_a_dead_result_lends_its_memory_to_the_next_call_and_a_live_one_does_not():
    f = jax.jit(lambda x: x * 2.0 + 1.0, backend="cuda")
    x = jax.device_put(X, jax.devices("gpu")[0])
    first = f(x)
    assert lent(first._buffer._ary)  # from the pool, not from the driver
    kept = _address(first)
    second = f(x)
    assert _address(second) != kept  # ``first`` lives: its memory is not lent
    del first
    gc.collect()
    third = f(x)
    assert _address(third) == kept
    np.testing.assert_array_equal(np.asarray(third), X * 2.0 + 1.0)
    np.testing.assert_array_equal(np.asarray(second), X * 2.0 + 1.0)


def test_a_view_keeps_the_memory_of_a_dead_result():
    f = jax.jit(lambda x: x + 1.0, backend="cuda")
    result = f(X)
    row = result._buffer[1]  # a device view, as a scan's ``row`` makes
    kept = _address(result)
    del result
    gc.collect()
    again = f(X + 10.0)
    assert _address(again) != kept
    np.testing.assert_array_equal(row.copy_to_host(), X[1] + 1.0)


def test_memory_stats_of_the_gpu_count_what_lives_and_calls_in_a_loop_reuse_the_pool():
    f = jax.jit(lambda x: (x * x).sum(axis=1), backend="cuda")
    x = jax.device_put(np.ones((64, 64), np.float32), jax.devices("gpu")[0])
    f(x)
    before = _stats()
    results = [f(x) for _ in range(3)]
    during = _stats()
    assert during["bytes_in_use"] >= before["bytes_in_use"] + 3 * 64 * 4
    del results
    for _ in range(20):
        f(x)
    after = _stats()
    assert after["bytes_in_use"] == before["bytes_in_use"]
    assert after["pool_bytes"] <= during["pool_bytes"]  # steady state: nothing new
    assert set(after) >= {"bytes_in_use", "peak_bytes_in_use", "pool_bytes", "bytes_limit"}


def test_host_arguments_are_copied_into_pool_buffers():
    buffer = jax.device_put(X, jax.devices("gpu")[0])._buffer
    assert lent(buffer._ary) and buffer.shape == X.shape
    np.testing.assert_array_equal(buffer.copy_to_host(), X)
    empty = DEVICE_POOL.empty((0, 3), np.float32)
    assert empty.shape == (0, 3)
