"""``jax.experimental.io_callback`` against JAX 0.10.2 on 8 CPU devices: a Python function
called for its effect, exactly once per call of a program, even when its result is unused,
never merged with an identical call, once per iteration of a loop, once per example under
``vmap`` (refused when ordered), once for a sharded ``jit`` and once per device in a
``shard_map`` body; no derivative. It was missing (an ImportError)."""

import numpy as np
import pytest

import stage4_sharding as ours

real = pytest.importorskip("jax")
from jax.experimental import io_callback as real_io_callback  # noqa: E402
from stage4_sharding.experimental import io_callback as ours_io_callback  # noqa: E402

F32 = np.float32


def _programs(lib, jnp, io_callback, log):
    def record(x):
        log.append(np.asarray(x).tolist())
        return np.asarray(x, F32) * 2

    def scalar(x):
        return io_callback(record, lib.ShapeDtypeStruct((), jnp.float32), x)

    def vector(x, n=3):
        return io_callback(record, lib.ShapeDtypeStruct((n,), jnp.float32), x)

    def used_and_unused(x):
        y = vector(x)
        vector(x + 1)  # the result is unused: called all the same
        return y + 1

    def twice(x):
        return vector(x) + vector(x)  # identical calls: both happen

    def loop(x):
        return lib.lax.fori_loop(0, 3, lambda i, c: c + scalar(c), x)

    mesh = lib.make_mesh((8,), ("x",))
    split = lib.NamedSharding(mesh, lib.P("x"))

    def per_device(block):
        io_callback(lambda b: log.append(np.asarray(b).tolist()), None, block)
        return block

    return {
        "eager": lambda: vector(jnp.arange(3.0)),
        "jit, one result unused": lambda: lib.jit(used_and_unused)(jnp.ones(3)),
        "jit, two identical calls": lambda: lib.jit(twice)(jnp.ones(3)),
        "jit, called twice": lambda: [lib.jit(used_and_unused)(jnp.ones(3)) for _ in range(2)],
        "a loop": lambda: lib.jit(loop)(jnp.float32(1.0)),
        "vmap": lambda: lib.vmap(scalar)(jnp.arange(3.0)),
        "no result": lambda: lib.jit(lambda x: io_callback(
            lambda v: log.append(float(v)), None, x) or x)(jnp.float32(2.0)),
        "sharded jit": lambda: lib.jit(lambda v: vector(v, 8))(
            lib.device_put(jnp.arange(8.0), split)),
        "shard_map body": lambda: lib.shard_map(per_device, mesh=mesh, in_specs=lib.P("x"),
                                                out_specs=lib.P("x"))(
            lib.device_put(jnp.arange(8.0), split)),
    }


@pytest.mark.parametrize("name", list(_programs(ours, ours.numpy, ours_io_callback, [])))
def test_io_callback_is_called_as_jax_calls_it(name):
    ours_log, real_log = [], []
    got = _programs(ours, ours.numpy, ours_io_callback, ours_log)[name]()
    expected = _programs(real, real.numpy, real_io_callback, real_log)[name]()
    real.block_until_ready(expected)  # JAX runs the program, and so the callback, async
    real.effects_barrier()
    assert sorted(map(str, ours_log)) == sorted(map(str, real_log))
    if name != "shard_map body":  # (its devices may call in any order)
        assert ours_log == real_log
    for a, b in zip(ours.tree.leaves(got), real.tree.leaves(expected)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("lib,io_callback", [(ours, ours_io_callback),
                                             (real, real_io_callback)], ids=["ours", "jax"])
def test_ordered_vmap_and_derivatives_are_refused(lib, io_callback):
    def f(x, ordered=False):
        return io_callback(lambda v: np.asarray(v, F32), lib.ShapeDtypeStruct((), np.float32),
                           x, ordered=ordered)

    with pytest.raises(ValueError, match="vmap"):
        lib.vmap(lambda x: f(x, ordered=True))(np.arange(3.0, dtype=F32))
    with pytest.raises(ValueError, match="JVP"):
        lib.grad(f)(1.0)


def test_results_of_the_wrong_type_are_refused():
    with pytest.raises(RuntimeError, match="shape"):
        ours_io_callback(lambda: np.ones(2, F32), ours.ShapeDtypeStruct((3,), np.float32))
