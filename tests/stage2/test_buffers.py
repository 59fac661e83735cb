"""The buffer pool (``stage2_jit/buffers.py``): the memory of dead arrays is lent again, never
the memory of a live one, and ``Device.memory_stats`` counts what is lent and kept."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest
import stage2_jit.numpy as jnp
from backend_under_test import cpu_only
from hypothesis import given
from hypothesis import strategies as st
from stage1_autodiff.core import Device
from stage2_jit.buffers import POOL, POOL_MIN, Pool, allocating_for, lent, size_class

import stage2_jit as jax

BIG = (256, 256)  # 256 KiB of float32: lent by the pool


@given(st.integers(1, 1 << 40))
def test_a_size_class_holds_the_size_and_wastes_at_most_a_quarter(nbytes):
    size = size_class(nbytes)
    assert nbytes <= size and (size - nbytes) * 4 <= size
    assert size_class(size) == size  # a class is its own class


def test_small_buffers_come_from_numpy_and_large_ones_from_the_pool():
    pool = Pool()
    small = pool.empty((POOL_MIN // 4 - 1,), np.float32)
    large = pool.empty((POOL_MIN // 4,), np.float32)
    assert not lent(small) and lent(large) and lent(large.reshape(-1, 2)[1:])
    assert large.flags.c_contiguous and large.flags.writeable and large.dtype == np.float32


def _stats(device: Device) -> dict[str, int]:
    gc.collect()
    return device.memory_stats()


def test_the_memory_of_a_dead_buffer_is_lent_again_and_counted():
    device, pool = Device("cpu", 97), Pool()  # a device of its own: counts start at 0
    first = pool.empty(BIG, np.float32, device)
    address = first.ctypes.data
    stats = _stats(device)
    assert stats["bytes_in_use"] == stats["pool_bytes"] == size_class(first.nbytes)
    del first
    stats = _stats(device)
    assert stats["bytes_in_use"] == 0 and stats["pool_bytes"] == size_class(BIG[0] * BIG[1] * 4)
    second = pool.empty(BIG, np.int32, device)  # same size class: the same memory
    assert second.ctypes.data == address
    stats = _stats(device)
    assert stats["num_allocs"] == 2 and stats["peak_pool_bytes"] == stats["pool_bytes"]
    assert stats["largest_alloc_size"] == stats["bytes_in_use"] == second.nbytes
    assert stats["bytes_limit"] > 0


def test_a_live_view_keeps_its_memory_from_being_lent():
    pool = Pool()
    first = pool.empty(BIG, np.float32)
    first[:] = 7.0
    view = first[10:20, ::3]
    del first
    gc.collect()
    second = pool.empty(BIG, np.float32)
    second[:] = -1.0
    assert not np.shares_memory(view, second)
    assert (view == 7.0).all()


def test_idle_memory_beyond_the_limit_is_freed():
    device, pool = Device("cpu", 98), Pool()
    limit = jax.config.jax_from_numpy_pool_idle_bytes
    jax.config.update("jax_from_numpy_pool_idle_bytes", 0)  # keep nothing
    try:
        x = pool.empty(BIG, np.float32, device)
        del x
        assert _stats(device)["pool_bytes"] == 0 and pool.idle == 0
    finally:
        jax.config.update("jax_from_numpy_pool_idle_bytes", limit)


def test_release_idle_frees_what_the_pool_keeps():
    device, pool = Device("cpu", 99), Pool()
    x, y = pool.empty(BIG, np.float32, device), pool.empty((512, 512), np.float32, device)
    kept = size_class(x.nbytes) + size_class(y.nbytes)
    del x, y
    gc.collect()
    assert pool.release_idle() == kept and _stats(device)["pool_bytes"] == 0


@cpu_only
def test_a_jitted_program_takes_its_result_and_scratch_from_the_pool():
    f = jax.jit(lambda x: jnp.tanh(x @ x) + jnp.sum(x @ x, axis=0))  # x @ x is scratch
    x = jnp.ones(BIG)
    f(x)  # compiled, and its buffers are back in the pool
    gc.collect()
    before = jax.devices()[0].memory_stats()
    y = f(x)
    assert lent(np.asarray(y))
    after = jax.devices()[0].memory_stats()
    assert after["bytes_in_use"] - before["bytes_in_use"] == size_class(4 * 256 * 256)  # y
    assert after["pool_bytes"] == before["pool_bytes"]  # the last call's memory, reused
    assert after["num_allocs"] - before["num_allocs"] == 2  # the result and the scratch


def test_allocating_for_attributes_buffers_to_a_device():
    device = Device("cpu", 96)
    with allocating_for(device):
        x = POOL.empty(BIG, np.float32)
    assert _stats(device)["bytes_in_use"] == x.nbytes
    del x
    assert _stats(device)["bytes_in_use"] == 0


@cpu_only
def test_threads_calling_one_program_get_their_own_buffers():
    f = jax.jit(lambda x: x * 2.0 + 1.0)
    results: dict[int, np.ndarray] = {}
    wrong: list[int] = []

    def work(k: int) -> None:
        for _ in range(20):
            results[k] = np.asarray(f(jnp.full(BIG, float(k))))
            if not (results[k] == 2.0 * k + 1.0).all():
                wrong.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []
    for k, value in results.items():
        assert (value == 2.0 * k + 1.0).all()


@pytest.mark.parametrize("bad", [(-1, 4), (2.5,)])
def test_a_bad_shape_is_numpys_error(bad):
    with pytest.raises((ValueError, TypeError)):
        Pool().empty(bad, np.float32)
