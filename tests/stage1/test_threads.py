"""BLAS gets the cores other processes leave (``stage1_autodiff/threads.py``); stage 2's
kernels ask the same coordinator (``tests/stage2/test_blas_threads.py``)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import stage1_autodiff.numpy as jnp

import stage1_autodiff as jax
from stage1_autodiff import threads


@pytest.mark.parametrize("cores, others, expected", [
    (2, 0.0, 2), (2, 0.3, 2), (2, 0.7, 1), (2, 1.0, 1), (2, 5.0, 1),
    (8, 0.0, 8), (8, 2.2, 6), (8, 7.9, 1), (1, 0.0, 1),
])
def test_blas_gets_the_cores_other_processes_leave(cores, others, expected):
    assert threads.blas_threads(cores, others) == expected


class _Clock:
    """Stands in for the machine: a time, and the CPU seconds used by all and by us."""

    def __init__(self) -> None:
        self.now, self.busy, self.own = 100.0, 0.0, 0.0

    def step(self, seconds: float, others: float, own: float) -> None:
        self.now += seconds
        self.busy += (others + own) * seconds
        self.own += own * seconds


@pytest.fixture
def machine(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(threads.time, "monotonic", lambda: clock.now)
    monkeypatch.setattr(threads, "_cpu_seconds", lambda: (clock.busy, clock.own))
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    coordinator = threads.Coordinator()
    coordinator.cores = 2
    coordinator.threads = 2
    limits: list[int] = []
    monkeypatch.setattr(coordinator, "set_threads",
                        lambda n: (limits.append(n), setattr(coordinator, "threads", n)))
    return clock, coordinator, limits


def test_a_busy_machine_gets_one_blas_thread_and_a_quiet_one_all(machine):
    clock, coordinator, limits = machine
    coordinator.coordinate()  # as soon as it was made: too soon to tell
    clock.step(0.5, others=1.0, own=1.0)  # another process keeps a core busy
    coordinator.coordinate()
    clock.step(0.1, others=0.0, own=2.0)
    coordinator.coordinate()  # too soon to look again
    clock.step(0.5, others=0.0, own=2.0)  # it has gone
    coordinator.coordinate()
    assert limits == [1, 2]


def test_the_first_product_is_decided_from_the_look_taken_when_it_was_made(machine):
    """The coordinator looks at the machine when it is made (at import), so the first
    product under load already runs on the cores left; a look sooner than ``MIN_WINDOW``
    after the last one waits (``/proc/stat`` counts in 10 ms ticks)."""
    clock, coordinator, limits = machine
    clock.step(threads.MIN_WINDOW / 2, others=1.0, own=1.0)
    coordinator.coordinate()
    assert limits == []
    clock.step(threads.MIN_WINDOW, others=1.0, own=1.0)
    coordinator.coordinate()
    assert limits == [1]


def test_a_users_own_setting_is_left_alone(machine, monkeypatch):
    clock, coordinator, limits = machine
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    for _ in range(3):
        clock.step(0.5, others=1.5, own=0.5)
        coordinator.coordinate()
    assert limits == []


def test_the_option_turns_it_off(machine):
    clock, coordinator, limits = machine
    jax.config.update("jax_from_numpy_coordinate_threads", False)
    try:
        for _ in range(3):
            clock.step(0.5, others=1.5, own=0.5)
            coordinator.coordinate()
    finally:
        jax.config.update("jax_from_numpy_coordinate_threads", True)
    assert limits == []


def test_set_threads_limits_the_blas_libraries():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    jnp.ones((2, 2)) @ jnp.ones((2, 2))  # BLAS loaded
    coordinator = threads.Coordinator()
    before = {i["filepath"]: i["num_threads"] for i in threadpoolctl.threadpool_info()
              if i["user_api"] == "blas"}
    try:
        coordinator.threads = -1  # so that any count is a change
        coordinator.set_threads(1)
        now = [i["num_threads"] for i in threadpoolctl.threadpool_info()
               if i["user_api"] == "blas"]
        assert now and all(n == 1 for n in now)
    finally:
        for info in threadpoolctl.threadpool_info():
            if info["filepath"] in before:
                threadpoolctl.threadpool_limits(before[info["filepath"]], user_api="blas")


def test_a_blas_library_loaded_later_gets_the_same_thread_count(monkeypatch):
    limits: list[int] = []
    monkeypatch.setattr(threads, "_limit_blas", limits.append)
    coordinator = threads.Coordinator()
    coordinator.cores = 2
    coordinator.libraries_loaded()  # all BLAS threads: nothing to do
    coordinator.set_threads(1)
    coordinator.set_threads(1)  # no change, no look at the libraries
    coordinator.libraries_loaded()
    assert limits == [1, 1]


def test_without_threadpoolctl_nothing_changes(monkeypatch):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    jnp.ones((2, 2)) @ jnp.ones((2, 2))  # BLAS loaded
    before = [i["num_threads"] for i in threadpoolctl.threadpool_info()]
    with monkeypatch.context() as m:
        m.setitem(sys.modules, "threadpoolctl", None)  # an import of it fails
        threads._limit_blas(before[0] + 1)  # and the call does nothing
    assert [i["num_threads"] for i in threadpoolctl.threadpool_info()] == before


def test_an_eager_matrix_product_asks_the_coordinator(monkeypatch):
    asked: list[int] = []
    monkeypatch.setattr(threads.COORDINATOR, "coordinate", lambda: asked.append(1))
    x = jnp.ones((8, 8), np.float32)
    jnp.tanh(x @ x)
    assert len(asked) == 1
    jax.grad(lambda a: jnp.sum(a @ a))(x)  # the product, and one per cotangent
    assert len(asked) == 4
    asked.clear()
    jax.lax.conv(jnp.ones((1, 1, 4, 4)), jnp.ones((1, 1, 2, 2)), (1, 1), "VALID")
    assert asked
    asked.clear()
    jnp.tanh(x) * 2.0
    assert not asked  # no product, nothing to coordinate
