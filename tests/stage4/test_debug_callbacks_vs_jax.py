"""``jax.debug.callback`` (missing before) and how often a debug print or callback runs in a
sharded program, against JAX 0.10.2 on 8 CPU devices: once in ``jit`` over split arrays (it
printed once per device here), once per device in a ``shard_map`` body, once per example under
``vmap``, once per iteration in a loop."""

import numpy as np
import pytest
from eight_jax_devices import jax_with_eight_cpu_devices

import stage4_sharding as jax

real = jax_with_eight_cpu_devices()


def _calls(lib):
    """What each program passes to its callbacks, in order."""
    seen = []

    def note(*args, **kwargs):
        seen.append((tuple(np.asarray(a).tolist() for a in args),
                     {k: np.asarray(v).tolist() for k, v in kwargs.items()},
                     all(isinstance(a, lib.Array) for a in (*args, *kwargs.values()))))

    mesh = lib.make_mesh((8,), ("x",))
    P = lib.sharding.PartitionSpec
    split = lib.device_put(np.arange(8.0, dtype=np.float32),
                           lib.sharding.NamedSharding(mesh, P("x")))
    lib.jit(lambda a: lib.debug.callback(note, a.sum(), scale=a * 2))(split)
    lib.jit(lambda a: lib.debug.callback(note, a))(split)
    lib.shard_map(lambda a: (lib.debug.callback(note, a), a)[1], mesh=mesh, in_specs=P("x"),
                  out_specs=P("x"))(split)
    lib.jit(lambda a: lib.lax.fori_loop(0, 2, lambda i, c: (lib.debug.callback(note, i),
                                                           c * 2)[1], a))(split)
    lib.vmap(lambda a: lib.debug.callback(note, a))(np.arange(2.0, dtype=np.float32))
    lib.debug.callback(note, 1, y=2.0)
    assert lib.grad(lambda v: (lib.debug.callback(note, v), v * 2.0)[1])(1.0) == 2.0
    lib.debug.callback(note)  # no arguments
    real.effects_barrier()
    return seen


def test_callbacks_run_as_often_and_with_what_jax_s_do():
    assert _calls(jax) == _calls(real)


def test_debug_print_in_a_sharded_jit_prints_once(capsys):
    mesh = jax.make_mesh((8,), ("x",))
    split = jax.device_put(np.arange(8.0, dtype=np.float32),
                           jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("x")))
    jax.jit(lambda a: jax.debug.print("total {}", a.sum()))(split)
    assert capsys.readouterr().out == "total 28.0\n"


@pytest.mark.parametrize("lib", [jax, real], ids=["ours", "jax"])
def test_a_callback_that_is_not_callable_is_a_type_error(lib):
    with pytest.raises(TypeError):
        lib.jit(lambda a: lib.debug.callback(3, a))(1.0)


def _inspected(lib):
    """The specs (with trailing unsplit dims dropped) that inspect_array_sharding reports."""
    mesh = lib.make_mesh((8,), ("x",))
    P = lib.sharding.PartitionSpec
    split = lib.device_put(np.arange(16.0, dtype=np.float32).reshape(8, 2),
                           lib.sharding.NamedSharding(mesh, P("x")))
    seen = []

    def note(sharding):
        spec = tuple(sharding.spec)
        while spec and spec[-1] is None:
            spec = spec[:-1]
        seen.append(spec)

    f = lib.jit(lambda a: lib.debug.inspect_array_sharding({"p": a * 2, "q": a.sum(0)},
                                                           callback=note))
    f(split)
    f(split)  # compiled once: not called again
    lib.debug.inspect_array_sharding(split, callback=note)
    return seen


def test_inspect_array_sharding_reports_what_jax_s_does():
    assert _inspected(jax) == _inspected(real)


def test_visualize_sharding_draws_a_layout_without_an_array(capsys):
    mesh = jax.make_mesh((4, 2), ("x", "y"))
    split = jax.device_put(np.zeros((8, 4), np.float32), jax.sharding.NamedSharding(
        mesh, jax.sharding.PartitionSpec("x", "y")))
    drawn = jax.debug.visualize_array_sharding(split, use_color=False)
    assert jax.debug.visualize_sharding((8, 4), split.sharding) == drawn
    assert drawn.count("CPU") == 8
    capsys.readouterr()
