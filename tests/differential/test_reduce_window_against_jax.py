"""``lax.reduce_window`` (sum, max and min pooling) against JAX: values, VJPs (the first
maximal tap of a window takes its cotangent, as ``select_and_scatter_add`` gives it), JVPs,
check_grads to order 2, jit == eager, vmap == a loop, sharded == unsharded, and errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jlax = pytest.importorskip("jax.lax")

import stage4_sharding.numpy as jnp  # noqa: E402
from stage1_autodiff.test_util import check_grads  # noqa: E402
from stage4_sharding.sharding import NamedSharding  # noqa: E402
from stage4_sharding.sharding import PartitionSpec as P  # noqa: E402

import stage4_sharding as sj  # noqa: E402
from stage4_sharding import lax  # noqa: E402

rng = np.random.default_rng(0)
MONOIDS = {"sum": ("add", 0.0), "max": ("max", -np.inf), "min": ("min", np.inf)}


def operand(shape, ties: bool) -> np.ndarray:
    """Small integers (many ties in each window) or distinct floats, at least 0.37 apart:
    a numerical derivative of a max or min steps by 1e-3 or so, and two values closer than
    that in a window would make it cross the kink (the data depend on the tests run before,
    since ``rng`` is shared)."""
    if ties:
        return rng.integers(-2, 3, shape).astype(np.float32)
    spread = rng.permutation(int(np.prod(shape))).reshape(shape) * 0.37 - 2.0
    return spread.astype(np.float32)


def pooled(library, monoid, init=None, **params):
    name, identity = MONOIDS[monoid]
    return lambda x: library.reduce_window(x, identity if init is None else init,
                                           getattr(library, name), **params)


GRID = list(itertools.product([(2, 2), (3, 1)], [(1, 1), (2, 2), (2, 3)],
                              ["SAME", "VALID", "SAME_LOWER", ((1, 0), (2, 1))]))


@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "ties"])
@pytest.mark.parametrize("monoid", sorted(MONOIDS))
@pytest.mark.parametrize("window, strides, padding", GRID)
def test_values_vjp_and_jvp_against_jax(window, strides, padding, monoid, ties):
    params = dict(window_dimensions=window, window_strides=strides, padding=padding)
    x = operand((5, 7), ties)
    theirs, ours = pooled(jlax, monoid, **params), pooled(lax, monoid, **params)
    want, pullback = jax.vjp(theirs, x)
    got, our_pullback = sj.vjp(ours, jnp.asarray(x))
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)
    ct = operand(want.shape, False)
    ct_x = np.asarray(our_pullback(jnp.asarray(ct))[0])
    np.testing.assert_allclose(ct_x, np.asarray(pullback(ct)[0]), rtol=1e-5, atol=1e-5)
    t = operand(x.shape, False)
    t_out = np.asarray(sj.jvp(ours, (jnp.asarray(x),), (jnp.asarray(t),))[1])
    if not ties:  # JAX's JVP breaks ties in XLA's reduction order, not as its VJP does
        np.testing.assert_allclose(t_out, np.asarray(jax.jvp(theirs, (x,), (t,))[1]),
                                   rtol=1e-5, atol=1e-5)
    # ours are each other's transposes, ties included: <ct, J t> = <J^T ct, t>
    np.testing.assert_allclose(np.sum(ct * t_out), np.sum(ct_x * t), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("monoid", sorted(MONOIDS))
@pytest.mark.parametrize("params", [
    dict(window_dimensions=(2, 2), window_strides=(1, 1), padding="VALID", base_dilation=(2, 1)),
    dict(window_dimensions=(2, 2), window_strides=(1, 2), padding=((1, 1), (1, 0)),
         base_dilation=(2, 3)),
    dict(window_dimensions=(1, 2, 2, 1), window_strides=(1, 2, 2, 1), padding="VALID"),
], ids=["base dilation", "base dilation and padding", "NHWC pooling"])
def test_dilations_and_4d_pooling(monoid, params):
    shape = (2, 6, 6, 3) if len(params["window_dimensions"]) == 4 else (5, 7)
    x = operand(shape, True)
    theirs, ours = pooled(jlax, monoid, **params), pooled(lax, monoid, **params)
    want, pullback = jax.vjp(theirs, x)
    got, our_pullback = sj.vjp(ours, jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want))
    ct = operand(want.shape, False)
    np.testing.assert_allclose(np.asarray(our_pullback(jnp.asarray(ct))[0]),
                               np.asarray(pullback(ct)[0]), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("monoid", sorted(MONOIDS))
def test_window_dilation_values(monoid):
    """JAX has no max/min VJP with window dilation; ours has (checked numerically below)."""
    params = dict(window_dimensions=(2, 2), window_strides=(1, 2), padding="SAME",
                  window_dilation=(2, 2))
    x = operand((5, 7), False)
    np.testing.assert_allclose(np.asarray(pooled(lax, monoid, **params)(jnp.asarray(x))),
                               np.asarray(pooled(jlax, monoid, **params)(x)), rtol=1e-5)
    check_grads(pooled(lax, monoid, **params), (jnp.asarray(x),), order=2)


@pytest.mark.parametrize("monoid, init", [("sum", 1.5), ("max", 0.0), ("min", 0.5)])
def test_an_init_value_other_than_the_identity(monoid, init):
    params = dict(window_dimensions=(2, 3), window_strides=(2, 1), padding="SAME")
    x = operand((5, 7), False)
    np.testing.assert_allclose(np.asarray(pooled(lax, monoid, init, **params)(jnp.asarray(x))),
                               np.asarray(pooled(jlax, monoid, init, **params)(x)), rtol=1e-5)


def test_integer_operands():
    x = rng.integers(-5, 5, (4, 6)).astype(np.int32)
    for name, init in (("add", 0), ("max", np.iinfo(np.int32).min)):
        want = jlax.reduce_window(x, init, getattr(jlax, name), (2, 2), (1, 1), "SAME")
        got = lax.reduce_window(jnp.asarray(x), init, getattr(lax, name), (2, 2), (1, 1),
                                "SAME")
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("monoid", sorted(MONOIDS))
def test_check_grads_to_order_2(monoid):
    x = jnp.asarray(operand((4, 5), False))
    check_grads(pooled(lax, monoid, window_dimensions=(2, 2), window_strides=(2, 1),
                       padding="SAME"), (x,), order=2)


# ------------------------------------------------------------------------------------------
# jit, vmap, sharding
# ------------------------------------------------------------------------------------------


def pools(x):
    return (lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID"),
            lax.reduce_window(x, 0.0, lax.add, (1, 3, 3, 1), (1, 1, 1, 1), "SAME"),
            lax.reduce_window(x, jnp.inf, lax.min, (1, 2, 1, 1), (1, 1, 1, 1), "SAME"))


X = operand((4, 6, 6, 3), True)


def test_jit_equals_eager_with_its_gradient():
    loss = lambda x: sum((p * p).sum() for p in pools(x))
    x = jnp.asarray(X)
    for eager, jitted in [*zip(pools(x), sj.jit(pools)(x)),
                          (sj.grad(loss)(x), sj.jit(sj.grad(loss))(x))]:
        np.testing.assert_allclose(np.asarray(jitted), np.asarray(eager), rtol=1e-5, atol=1e-5)


def test_vmap_equals_a_loop():
    xs = operand((3, 6, 6, 3), True)
    got = sj.vmap(lambda x: pools(x[None]), in_axes=2)(jnp.asarray(np.moveaxis(xs, 0, 2)))
    for k, g in enumerate(got):
        want = np.stack([np.asarray(pools(jnp.asarray(xs[i][None]))[k]) for i in range(3)])
        np.testing.assert_allclose(np.asarray(g), want, rtol=1e-5, atol=1e-5)


def test_batch_sharded_equals_unsharded():
    mesh = sj.make_mesh((4,), ("data",), devices=sj.devices()[:4])
    x = sj.device_put(jnp.asarray(X), NamedSharding(mesh, P("data")))
    for run in (pools, sj.jit(pools)):
        for got, want in zip(run(x), pools(jnp.asarray(X))):
            assert str(sj.typeof(got)).startswith("float32[4@data,")
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------------------
# Errors
# ------------------------------------------------------------------------------------------


def test_errors_are_of_jaxs_classes():
    x = operand((5, 7), False)
    for args in [(0.0, "add", (2,), (1, 1), "VALID"), (0.0, "add", (2, 2), (1, 1), "FOO"),
                 (0.0, "add", (2, 2), (0, 1), "VALID")]:
        init, name, *rest = args
        with pytest.raises(Exception) as theirs:
            jlax.reduce_window(x, init, getattr(jlax, name), *rest)
        with pytest.raises(theirs.type):
            lax.reduce_window(jnp.asarray(x), init, getattr(lax, name), *rest)


def test_an_unsupported_computation_names_the_supported_ones():
    with pytest.raises(NotImplementedError, match="lax.add, lax.max and lax.min"):
        lax.reduce_window(jnp.ones((3, 3)), 1.0, lax.mul, (2, 2), (1, 1), "VALID")
