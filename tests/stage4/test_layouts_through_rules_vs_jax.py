"""Layouts through the rules that build masks and bases of their own, against JAX 0.10.2 on
8 CPU devices: a NumPy predicate selecting among split cases (JAX's uncommitted arrays take
the cases' layout), the forward-mode rule of max over split arrays, and jacfwd's basis,
which is laid out as the input. Each raised a ShardingTypeError here once, or came
back replicated where JAX's result is split."""

import numpy as np
import pytest
from eight_jax_devices import jax_with_eight_cpu_devices

import stage4_sharding as jax

real = jax_with_eight_cpu_devices()

RNG = np.random.default_rng(0)
PRED = np.arange(64).reshape(8, 8) % 3 == 0

# Each case: the function of a split input, and that input's shape.
CASES = {
    "select_n, a NumPy predicate": (lambda lib, x: lib.lax.select_n(PRED, x, x * 2), (8, 8)),
    "where, a NumPy predicate": (lambda lib, x: lib.numpy.where(PRED, x, x * 2), (8, 8)),
    "select_n, a NumPy case": (lambda lib, x: lib.lax.select_n(
        x > 0, x, np.ones((8, 8), np.float32)), (8, 8)),
    "jvp of max": (lambda lib, x: lib.jvp(
        lambda a: lib.numpy.amax(a, axis=1), (x,), (x,))[1], (8, 8, 8)),
    "jacfwd of max": (lambda lib, x: lib.jacfwd(
        lambda a: lib.numpy.amax(a, axis=1))(x), (8, 8, 2)),
    "jacfwd of a product": (lambda lib, x: lib.jacfwd(lambda a: a * a[::-1])(x), (8, 8)),
}


def _run(lib, case: str, dim: int, jitted: bool):
    P = lib.sharding.PartitionSpec
    fun, shape = CASES[case]
    with lib.set_mesh(lib.make_mesh((8,), ("d",))):
        x = lib.device_put(RNG_INPUTS[shape], P(*[None] * dim, "d"))
        f = lambda x: fun(lib, x)  # noqa: E731
        out = lib.jit(f)(x) if jitted else f(x)
        return np.asarray(out), str(lib.typeof(out))


RNG_INPUTS = {shape: RNG.standard_normal(shape).astype(np.float32)
              for shape in {shape for _, shape in CASES.values()}}


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("case", list(CASES))
def test_a_rules_own_masks_take_the_operands_layout_as_in_jax(case, dim, jitted):
    (ours, our_type), (theirs, their_type) = (_run(lib, case, dim, jitted)
                                              for lib in (jax, real))
    assert our_type == their_type
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dim", [0, 1])
def test_the_jvp_of_prod_over_a_split_array_is_the_unsplit_ones(dim: int):
    """JAX refuses it (its rule slices the split dims, a documented difference); ours."""
    x = RNG_INPUTS[(8, 8, 8)]
    prod = lambda a: jax.numpy.prod(a, axis=1)  # noqa: E731
    expected = np.asarray(jax.jvp(prod, (x,), (x,))[1])
    with jax.set_mesh(jax.make_mesh((8,), ("d",))):
        split = jax.device_put(x, jax.sharding.PartitionSpec(*[None] * dim, "d"))
        got = jax.jvp(prod, (split,), (split,))[1]
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-5)
    assert str(jax.typeof(got)) == ("float32[8@d,8]" if dim == 0 else "float32[8,8]")


def _second_derivative_of_a_multiplying_update(lib):
    np_, P = lib.numpy, lib.sharding.PartitionSpec

    def loss(x):
        rows = np_.take(x, np.array([-2, -1, 0]), axis=0)
        return np_.sum(np_.sin(rows.at[-2].mul(np_.sum(rows))))

    def grad_norm(x):
        return np_.sum(lib.grad(loss)(x) ** 2)

    with lib.set_mesh(lib.make_mesh((8,), ("d",))):
        x = lib.device_put(RNG_INPUTS[(8, 8)] / 4, P(None, "d"))
        out = lib.grad(grad_norm)(x)
        return np.asarray(out), str(lib.typeof(out))


def test_the_second_derivative_of_a_multiplying_update_equals_jax():
    """select_n's VJP lays its predicate out as the cotangent: the rule of .at[].mul selects
    with masks made from gathers, and differentiating it again met them laid out otherwise."""
    (ours, our_type), (theirs, their_type) = (_second_derivative_of_a_multiplying_update(lib)
                                              for lib in (jax, real))
    assert our_type == their_type
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)
