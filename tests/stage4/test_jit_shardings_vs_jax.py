"""``jit(in_shardings=..., out_shardings=...)`` against JAX 0.10.2 on 8 CPU devices: the
arguments are placed (a committed array laid out otherwise is an error), the results laid out,
each as a sharding or a pytree prefix with ``None`` for "as it comes"; static arguments are not
in ``in_shardings``; keyword arguments are refused with it. JAX code passing either raised
``TypeError`` (an unexpected keyword) here once."""

import numpy as np
import pytest
from eight_jax_devices import jax_with_eight_cpu_devices
from stage4_sharding.sharding import NamedSharding, P

import stage4_sharding as jax

real = jax_with_eight_cpu_devices()

from jax.sharding import NamedSharding as RealNamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as RealP  # noqa: E402

X = np.arange(16.0, dtype=np.float32)


def both(make):
    """``make(lib, sharding_of_spec)`` run with each library: ours, then JAX's."""
    ours_mesh, their_mesh = jax.make_mesh((8,), ("x",)), real.make_mesh((8,), ("x",))
    return (make(jax, lambda *spec: NamedSharding(ours_mesh, P(*spec))),
            make(real, lambda *spec: RealNamedSharding(their_mesh, RealP(*spec))))


def same(got, want):
    for g, w in zip(jax.tree.leaves(got), real.tree.leaves(want)):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
        assert tuple(g.sharding.spec) == tuple(w.sharding.spec)


def test_in_and_out_shardings_place_and_lay_out():
    same(*both(lambda lib, s: lib.jit(lambda a, b: a * b, in_shardings=(s("x"), None),
                                      out_shardings=s())(X, 2.0)))
    same(*both(lambda lib, s: lib.jit(lambda a: lib.numpy.sin(a) * 2, out_shardings=s("x"))(X)))


def test_a_prefix_with_none_and_static_arguments():
    same(*both(lambda lib, s: lib.jit(lambda d: {"a": d["a"] * 2, "b": d["b"]},
                                      out_shardings={"a": s("x"), "b": None})({"a": X, "b": X})))
    same(*both(lambda lib, s: lib.jit(lambda a, n: a * n, static_argnums=1,
                                      in_shardings=(s("x"),))(X, 3)))


def test_gradient_through_a_jit_with_in_shardings():
    """(JAX asks for a mesh context here; the gradient is 2x either way.)"""
    s = NamedSharding(jax.make_mesh((8,), ("x",)), P("x"))
    g = jax.grad(lambda a: jax.jit(lambda b: (b ** 2).sum(), in_shardings=s)(a))(X)
    np.testing.assert_array_equal(np.asarray(g), 2 * X)


@pytest.mark.parametrize("call", [
    # a committed argument laid out otherwise
    lambda lib, s: lib.jit(lambda a: a + 1, in_shardings=s("x"))(lib.device_put(X, s())),
    # not a prefix of the dynamic arguments (the static one is not among them)
    lambda lib, s: lib.jit(lambda a, n: a * n, static_argnums=1,
                           in_shardings=(s("x"), None))(X, 3),
    lambda lib, s: lib.jit(lambda a: a, in_shardings=(s("x"), s()))(X),
    # keyword arguments with in_shardings
    lambda lib, s: lib.jit(lambda a, k=1.0: a * k, in_shardings=s("x"))(X, k=2.0),
], ids=["mismatched argument", "static in the prefix", "too long", "keyword argument"])
def test_errors_are_jaxs(call):
    for lib, mesh, make in ((jax, jax.make_mesh((8,), ("x",)), NamedSharding),
                            (real, real.make_mesh((8,), ("x",)), RealNamedSharding)):
        spec = P if lib is jax else RealP
        with pytest.raises(ValueError):
            call(lib, lambda *names, mesh=mesh, make=make, spec=spec: make(mesh, spec(*names)))
