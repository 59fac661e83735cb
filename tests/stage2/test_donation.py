"""Donation (``jit(donate_argnums=, donate_argnames=)``): which arguments are deleted, as JAX
decides it, and when an output is written into a donated argument's buffer, which only the
plan and the runtime decide (``fusion.in_place_inputs``, ``CpuExecutable.run_donating``)."""

from __future__ import annotations

import gc
import warnings

import numpy as np
import pytest
import stage2_jit.numpy as jnp
from backend_under_test import cpu_only

import stage2_jit as jax

BIG = (256, 512)  # lent by the pool: the buffers donation can reuse

# Only arrays on the host CPU are donated (the course's "Differences from JAX"): on the CUDA
# backend the arrays here are GpuArrays, which are kept.
pytestmark = cpu_only


def _pooled(shape=BIG, value=1.0):
    """An array whose buffer the runtime owns: a jitted result."""
    return jax.jit(lambda x: x + 0.0)(jnp.full(shape, value))


def _address(x) -> int:
    return np.asarray(x).ctypes.data


def _run_both(fun, donate, *shapes):
    """(ours deleted?, JAX deleted?) per argument, and the warnings each gave."""
    oracle = pytest.importorskip("jax")
    found = []
    for lib, make in ((jax, lambda s: _pooled(s)), (oracle, lambda s: oracle.numpy.ones(s))):
        args = [make(s) for s in shapes]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.jit(fun, donate_argnums=donate)(*args)
        found.append(([a.is_deleted() for a in args],
                      [str(w.message).split("\n")[0] for w in caught
                       if "donated" in str(w.message)]))
    return found


@pytest.mark.parametrize("fun, donate, shapes", [
    (lambda x: x * 2.0, 0, [BIG]),
    (lambda x, y: x * y, (0, 1), [BIG, BIG]),  # one output: the second is not usable
    (lambda x: x.sum(), 0, [BIG]),  # no output of its type
    (lambda x, y: (x + y, x - y), (0, 1), [BIG, BIG]),
    (lambda x, y: x @ y, (0, 1), [(64, 64), (64, 64)]),
], ids=["one", "two for one output", "none usable", "two for two", "matmul"])
def test_which_arguments_are_deleted_and_warned_of_is_jaxs(fun, donate, shapes):
    ours, theirs = _run_both(fun, donate, *shapes)
    assert ours == theirs


def test_a_deleted_array_raises_jaxs_error_and_keeps_its_type():
    x = _pooled()
    jax.jit(lambda x: x * 2.0, donate_argnums=0)(x)
    assert x.is_deleted() and x.shape == BIG and x.dtype == np.float32
    for use in (lambda: x + 1.0, lambda: np.asarray(x), lambda: repr(x), lambda: x[0],
                lambda: jax.jit(lambda a: a)(x), lambda: jax.grad(lambda a: a.sum())(x)):
        with pytest.raises(RuntimeError, match=r"Array has been deleted with "
                                               r"shape=float32\[256,512\]\."):
            use()


def test_donating_the_same_array_twice_in_one_call_is_an_error():
    x = _pooled()
    with pytest.raises(ValueError, match="donated in the same call"):
        jax.jit(lambda a, b: a + b, donate_argnums=0)(x, x)
    assert not x.is_deleted()  # the failed call deleted nothing


def test_an_elementwise_update_is_written_into_the_donated_buffer():
    step = jax.jit(lambda x, g: x - 0.1 * g, donate_argnames="x")
    x, g = _pooled(), _pooled(value=2.0)
    address = _address(x)
    x = step(x=x, g=g)
    assert _address(x) == address
    np.testing.assert_allclose(np.asarray(x), 0.8, rtol=1e-6)
    assert not g.is_deleted()


@pytest.mark.parametrize("name, fun", [
    ("transpose", lambda x: x.T * 2.0),
    ("reversed", lambda x: jnp.flip(x, 0) + 1.0),
    ("read after", lambda x: (x * 2.0, jnp.sum(x, axis=0))),
    ("rows", lambda x: x - jnp.max(x, axis=1, keepdims=True)),
])
def test_an_output_that_reads_elsewhere_is_not_written_in_place(name, fun):
    """Writing these in place would overwrite values the kernel still reads: the runtime
    gives them fresh buffers, and the donated argument is deleted all the same (as in JAX)."""
    square = (256, 256)
    x = jax.jit(lambda x: x + jnp.arange(256, dtype=jnp.float32))(jnp.ones(square))
    expected = jax.tree_util.tree_map(np.asarray, jax.jit(fun)(jnp.asarray(np.asarray(x))))
    address = _address(x)
    result = jax.jit(fun, donate_argnums=0)(x)
    first = jax.tree_util.tree_leaves(result)[0]
    assert x.is_deleted() and _address(first) != address
    for got, want in zip(jax.tree_util.tree_leaves(result), jax.tree_util.tree_leaves(expected)):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def test_a_buffer_something_else_holds_is_not_overwritten():
    x = _pooled(value=3.0)
    held = np.asarray(x)  # a NumPy view of the same memory
    view = x[1:]  # and an eager view
    y = jax.jit(lambda x: x * 2.0, donate_argnums=0)(x)
    assert x.is_deleted() and (held == 3.0).all() and (np.asarray(view) == 3.0).all()
    np.testing.assert_allclose(np.asarray(y), 6.0)


def test_a_training_loop_reuses_two_buffers():
    """Donating the parameters each step: the update is written where they were, so the
    pool's memory does not grow with the steps."""
    step = jax.jit(lambda w, g: w - 0.5 * g, donate_argnums=0)
    w, g = _pooled(), _pooled(value=0.5)
    w = step(w, g)
    gc.collect()
    before = jax.devices()[0].memory_stats()["pool_bytes"]
    addresses = set()
    for _ in range(5):
        w = step(w, g)
        addresses.add(_address(w))
    assert len(addresses) == 1 and jax.devices()[0].memory_stats()["pool_bytes"] == before
    np.testing.assert_allclose(np.asarray(w), 1.0 - 6 * 0.25)


def test_donation_inside_a_transformation_is_ignored():
    f = jax.jit(lambda x: x * 2.0, donate_argnums=0)
    x = _pooled()
    g = jax.grad(lambda x: jnp.sum(f(x)))(x)
    assert not x.is_deleted()
    np.testing.assert_allclose(np.asarray(g), 2.0)


# ------------------------------------------------------------------------------------------
# Scatters in place
# ------------------------------------------------------------------------------------------


def test_a_scatter_into_a_donated_array_updates_it_in_place():
    update = jax.jit(lambda x, i, v: x.at[i].add(v), donate_argnums=0)
    start = np.arange(BIG[0] * BIG[1], dtype=np.float32).reshape(BIG)
    x, i, v = _pooled(BIG, 0.0) + 0.0, jnp.array([3, 7, 7]), jnp.ones(BIG[1])
    x = jax.jit(lambda a, b: a + b)(x, start)
    address = _address(x)
    y = update(x, i, v)
    assert _address(y) == address and x.is_deleted()
    expected = start.copy()
    np.add.at(expected, [3, 7, 7], 1.0)
    np.testing.assert_array_equal(np.asarray(y), expected)


def test_a_scatter_whose_updates_read_its_donated_operand_copies_it():
    update = jax.jit(lambda x, i: x.at[i].set(x[0] * 2.0), donate_argnums=0)
    start = np.arange(BIG[0] * BIG[1], dtype=np.float32).reshape(BIG)
    x = jax.jit(lambda a: a + 0.0)(jnp.asarray(start))
    address = _address(x)
    y = update(x, jnp.array([0, 5]))  # row 0 is read after it is written: not in place
    expected = start.copy()
    expected[[0, 5]] = start[0] * 2.0
    assert _address(y) != address
    np.testing.assert_array_equal(np.asarray(y), expected)


def test_a_scatter_into_a_dead_intermediate_writes_into_it():
    f = jax.jit(lambda x, i: (x @ x).at[i].add(1.0))
    x = np.random.default_rng(0).random((64, 64), dtype=np.float32)
    assert "in place, no copy" in f.lower(x, jnp.array([1, 5, 5])).as_text()
    expected = x @ x
    np.add.at(expected, [1, 5, 5], 1.0)
    np.testing.assert_allclose(np.asarray(f(x, jnp.array([1, 5, 5]))), expected, rtol=1e-5)
    g = jax.jit(lambda x, i: (lambda y: (y.at[i].add(1.0), y))(x @ x))  # y is still needed
    assert "in place, no copy" not in g.lower(x, jnp.array([1])).as_text()
