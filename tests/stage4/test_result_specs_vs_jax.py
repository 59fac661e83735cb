"""The spec a result's sharding carries, against JAX 0.10.2 on 8 CPU devices. JAX gives every
result of an operation one spec entry per dim (``jnp.sin`` of ``P("x")`` is
``P("x", None)``), and also the results of ``jit``, ``cond`` and loops; only ``device_put``,
``jit``'s ``out_shardings`` and an eager ``shard_map``'s ``out_specs`` keep the spec as
written. Here a unary operation (whose abstract evaluation passes its operand's type through)
and a jitted identity kept ``P("x",)``, so the same program printed other specs than JAX's."""

import numpy as np
import pytest
from eight_jax_devices import jax_with_eight_cpu_devices

import stage4_sharding as ours

real = jax_with_eight_cpu_devices()

X = np.arange(64, dtype=np.float32).reshape(8, 8) / 10

CASES = {
    "device_put": lambda lib, x, mesh, P: x,
    "sin": lambda lib, x, mesh, P: lib.numpy.sin(x),
    "abs": lambda lib, x, mesh, P: lib.numpy.abs(x),
    "x + 1": lambda lib, x, mesh, P: x + 1,
    "jit of sin": lambda lib, x, mesh, P: lib.jit(lib.numpy.sin)(x),
    "jit of the identity": lambda lib, x, mesh, P: lib.jit(lambda v: v)(x),
    "jit with out_shardings": lambda lib, x, mesh, P: lib.jit(
        lambda v: v * 2, out_shardings=lib.sharding.NamedSharding(mesh, P("x")))(x),
    "vmap of sin": lambda lib, x, mesh, P: lib.vmap(lib.numpy.sin)(x),
    "vmap of jit": lambda lib, x, mesh, P: lib.vmap(lib.jit(lib.numpy.sin))(x),
    "vmap over dim 1": lambda lib, x, mesh, P: lib.vmap(lib.numpy.sin, 1, 1)(x),
    "cond": lambda lib, x, mesh, P: lib.lax.cond(True, lib.numpy.sin, lib.numpy.cos, x),
    "fori_loop": lambda lib, x, mesh, P: lib.lax.fori_loop(0, 2, lambda i, c: lib.numpy.sin(c),
                                                           x),
    "reshard": lambda lib, x, mesh, P: lib.sharding.reshard(
        x, lib.sharding.NamedSharding(mesh, P("x"))),
    "grad under jit": lambda lib, x, mesh, P: lib.jit(lib.grad(
        lambda v: lib.numpy.sin(v).sum()))(x),
    "eager shard_map": lambda lib, x, mesh, P: lib.shard_map(
        lambda b: b * 2, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(x),
    "shard_map under jit": lambda lib, x, mesh, P: lib.jit(lib.shard_map(
        lambda b: b * 2, mesh=mesh, in_specs=P("x"), out_specs=P("x")))(x),
}


def _spec(lib, case: str):
    P = lib.sharding.PartitionSpec
    mesh = lib.make_mesh((4, 2), ("x", "y"))
    x = lib.device_put(X, lib.sharding.NamedSharding(mesh, P("x")))
    with lib.set_mesh(mesh):
        out = CASES[case](lib, x, mesh, P)
    return tuple(out.sharding.spec), np.asarray(out)


@pytest.mark.parametrize("case", list(CASES))
def test_result_spec_as_jax(case):
    (spec, value), (expected_spec, expected) = _spec(ours, case), _spec(real, case)
    assert spec == expected_spec
    np.testing.assert_allclose(value, expected, rtol=1e-6)
