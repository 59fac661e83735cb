"""``out_sharding=`` given as a bare PartitionSpec, on operands that are not sharded, against
JAX 0.10.2 on 8 CPU devices: under ``set_mesh`` the spec names the mesh's axes, eagerly and
under ``jit``; without a mesh it is a ValueError. The spec was once ignored here (the result
came back unsharded, silently) unless an operand was already sharded, and ``einsum`` did not
take ``out_sharding`` at all."""

import numpy as np
import pytest
from eight_jax_devices import jax_with_eight_cpu_devices

import stage4_sharding as jax

real = jax_with_eight_cpu_devices()

A = np.arange(32.0, dtype=np.float32).reshape(8, 4) / 10
B = np.arange(24.0, dtype=np.float32).reshape(4, 6) / 10
C = np.arange(12.0, dtype=np.float32).reshape(6, 2) / 10

CASES = {
    "matmul": lambda lib, P: lib.numpy.matmul(A, B, out_sharding=P("data", None)),
    "dot": lambda lib, P: lib.numpy.dot(A, B, out_sharding=P(None, "model")),
    "dot_general": lambda lib, P: lib.lax.dot_general(
        A, B, (((1,), (0,)), ((), ())), out_sharding=P("data", "model")),
    "broadcast_in_dim": lambda lib, P: lib.lax.broadcast_in_dim(
        A, (2, 8, 4), (1, 2), out_sharding=P(None, "data", "model")),
    "einsum": lambda lib, P: lib.numpy.einsum("ij,jk->ik", A, B, out_sharding=P("data")),
    "einsum, the result transposed": lambda lib, P: lib.numpy.einsum(
        "ij,jk->ki", A, B, out_sharding=P("model", "data")),
    "einsum of three": lambda lib, P: lib.numpy.einsum(
        "ij,jk,kl->li", A, B, C, out_sharding=P("model", "data")),
    "einsum of one": lambda lib, P: lib.numpy.einsum("ij->ji", A, out_sharding=P(None, "data")),
    "zeros": lambda lib, P: lib.numpy.zeros((8, 4), out_sharding=P("data")),
    "reshape": lambda lib, P: lib.numpy.reshape(A, (4, 8), out_sharding=P("data", "model")),
    "lax.reshape": lambda lib, P: lib.lax.reshape(A, (2, 16), out_sharding=P(None, "data")),
    "Array.reshape": lambda lib, P: lib.numpy.asarray(A).reshape(32, out_sharding=P("data")),
}


def _laid_out(lib, case: str, jitted: bool):
    P = lib.sharding.PartitionSpec
    with lib.set_mesh(lib.make_mesh((4, 2), ("data", "model"))):
        out = lib.jit(lambda: CASES[case](lib, P))() if jitted else CASES[case](lib, P)
        return np.asarray(out), str(lib.typeof(out))


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("case", list(CASES))
def test_a_bare_spec_lays_the_result_out_on_the_mesh_as_in_jax(case: str, jitted: bool):
    (ours, our_type), (theirs, their_type) = _laid_out(jax, case, jitted), _laid_out(
        real, case, jitted)
    assert our_type == their_type
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


@pytest.mark.parametrize("case", ["matmul", "dot_general", "einsum"])
def test_a_bare_spec_without_a_mesh_is_a_value_error_as_in_jax(case: str):
    for lib in (jax, real):
        with pytest.raises(ValueError, match="PartitionSpec"):
            CASES[case](lib, lib.sharding.PartitionSpec)


def _single_device_sharding(lib):
    x = lib.numpy.ones((3, 4))
    s = x.sharding
    moved = lib.device_put(x, s)  # JAX code passes one array's sharding to place another
    return (repr(s), s.device_set, s.is_fully_replicated, s.is_fully_addressable,
            s.num_devices, s.shard_shape((3, 4)), s.devices_indices_map((3, 4)), s.memory_kind,
            s == lib.sharding.SingleDeviceSharding(lib.devices()[0]), moved.sharding == s)


def test_an_array_on_one_device_has_a_single_device_sharding_as_in_jax():
    ours, theirs = _single_device_sharding(jax), _single_device_sharding(real)
    assert ours[0] == theirs[0]
    assert [{d.id for d in ours[1]}] == [{d.id for d in theirs[1]}]
    assert ours[2:5] + ours[7:] == theirs[2:5] + theirs[7:]
    assert ours[5] == theirs[5]
    assert [(d.id, i) for d, i in ours[6].items()] == [(d.id, i) for d, i in theirs[6].items()]


def _both_free_dims_split(lib, out_spec, jitted: bool):
    """``a @ b.T`` with the rows of both split over one axis: the product's two dims both
    come from split free dims, so one operand must be gathered (each device's rows times its
    own rows are only the diagonal blocks). The result's layout is asked for, as it must be."""
    P = lib.sharding.PartitionSpec
    with lib.set_mesh(lib.make_mesh((4, 2), ("x", "y"))):
        a, b = (lib.device_put(v, P("y", None)) for v in (A, A[::-1] * 2))
        f = lambda a, b: lib.lax.dot_general(  # noqa: E731
            a, b, (((1,), (1,)), ((), ())), out_sharding=P(*out_spec))
        out = lib.jit(f)(a, b) if jitted else f(a, b)
        grad = lib.grad(lambda a: lib.numpy.sum(lib.numpy.sin(lib.numpy.tanh(a @ a))))(
            lib.device_put(A[:4], P("y", None)))
        return np.asarray(out), str(lib.typeof(out)), np.asarray(grad), str(lib.typeof(grad))


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("out_spec", [("y", None), (None, "y"), (None, None)])
def test_a_product_of_two_free_dims_split_alike_equals_jax(out_spec, jitted: bool):
    ours, theirs = (_both_free_dims_split(lib, out_spec, jitted) for lib in (jax, real))
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-5, atol=1e-5)
    assert (ours[1], ours[3]) == (theirs[1], theirs[3])


V = np.arange(16.0, dtype=np.float32).reshape(2, 8)

# A reshape of a split operand that no rule places: out_sharding says where the splits go.
# Our reshape had no out_sharding (a TypeError), so JAX code that passed one failed here.
SPLIT_RESHAPES = {
    "method": lambda L, P, y: y.reshape(4, 4, out_sharding=P("x")),
    "jnp": lambda L, P, y: L.numpy.reshape(y, (4, 4), out_sharding=P(None, "x")),
    "lax, both dims": lambda L, P, y: L.lax.reshape(y, (4, 4), out_sharding=P("y", "x")),
    "jit": lambda L, P, y: L.jit(lambda a: a.reshape(4, 4, out_sharding=P("x")))(y),
    "the same shape": lambda L, P, y: L.numpy.reshape(y, (2, 8), out_sharding=P(None, "y")),
    "column-major": lambda L, P, y: L.numpy.reshape(y, (4, 4), order="F",
                                                   out_sharding=P("x")),
    "grad": lambda L, P, y: L.grad(lambda a: (L.numpy.sin(
        a.reshape(4, 4, out_sharding=P("x"))) ** 2).sum())(y),
    "jvp": lambda L, P, y: L.jvp(lambda a: a.reshape(4, 4, out_sharding=P("x")), (y,), (y,))[1],
    "vmap": lambda L, P, y: L.vmap(lambda a: a.reshape(2, 4, out_sharding=P("y")))(
        L.device_put(np.stack([V[0]] * 4), P("x"))),
    "without": lambda L, P, y: y.reshape(4, 4),  # both refuse
}


def _split_reshape(lib, case: str):
    P = lib.sharding.PartitionSpec
    with lib.set_mesh(lib.make_mesh((4, 2), ("x", "y"))):
        y = lib.device_put(V, P(None, "x"))
        try:
            out = SPLIT_RESHAPES[case](lib, P, y)
        except Exception as e:  # noqa: BLE001 -- a refusal is a result to compare
            return type(e).__name__
        return str(lib.typeof(out)), np.asarray(out).round(5).tolist()


@pytest.mark.parametrize("case", list(SPLIT_RESHAPES))
def test_a_reshape_of_a_split_operand_takes_out_sharding_as_in_jax(case: str):
    assert _split_reshape(jax, case) == _split_reshape(real, case)
