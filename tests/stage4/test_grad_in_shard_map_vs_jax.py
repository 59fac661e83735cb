"""Derivatives taken inside a ``shard_map`` body, against JAX 0.10.2 on 8 CPU devices. JAX
types each value of a body with the mesh axes it varies along: the gradient of a replicated
value used with a varying one is summed over the devices (the transpose of JAX's implicit
``pvary``), and a ``psum``'s transpose moves nothing. Ours gave the local gradient (and
refused ``out_specs=P()`` for it), and the transpose of ``psum`` summed again: a data
parallel loss ``pmean(local)`` differentiated in the body came out 8 times too large."""


import numpy as np
import pytest
from eight_jax_devices import jax_with_eight_cpu_devices

import stage4_sharding as ours

real = jax_with_eight_cpu_devices()


def _cases(jax):
    P, jnp, lax = jax.sharding.PartitionSpec, jax.numpy, jax.lax
    mesh = jax.make_mesh((8,), ("d",))

    def body(f, out=P("d"), check=True):
        return jax.jit(jax.shard_map(f, mesh=mesh, in_specs=(P(), P("d")), out_specs=out,
                                     check_vma=check))

    def fsdp_step(w, x):  # gather the weights, gradient, scatter back its sum
        full = lax.all_gather(w, "d", tiled=True)
        return lax.psum_scatter(jax.grad(lambda f: jnp.sum(f * x[:, 0]))(full), "d",
                                tiled=True)
    return {
        "grad of a replicated input": body(
            lambda b, x: jax.grad(lambda b: jnp.sum(x * b))(b), P()),
        "grad of pmean of a loss": body(
            lambda b, x: jax.grad(lambda b: lax.pmean(jnp.sum(x * b * b), "d"))(b), P()),
        "grad of psum wrt a varying value": body(
            lambda b, x: jax.grad(lambda x: jnp.sum(lax.psum(x, "d")))(x)),
        "grad of pmean wrt a varying value": body(
            lambda b, x: jax.grad(lambda x: jnp.sum(lax.pmean(x * x, "d")))(x)),
        "a replicated term added": body(
            lambda b, x: jax.grad(lambda b: jnp.sum(jnp.sin(x * b) + b))(b), P()),
        "replicated only": body(lambda b, x: jax.grad(lambda b: jnp.sum(b * b))(b), P()),
        "psum of a product": body(
            lambda b, x: jax.grad(lambda b: jnp.sum(lax.psum(b * x, "d")))(b), P()),
        "vjp in the body": body(
            lambda b, x: jax.vjp(lambda b: x * b, b)[1](jnp.ones_like(x))[0], P()),
        "jvp in the body": body(
            lambda b, x: jax.jvp(lambda b: x * b, (b,), (jnp.ones_like(b),))[1]),
        "where": body(
            lambda b, x: jax.grad(lambda b: jnp.sum(jnp.where(x > 3, b, 2 * b)))(b), P()),
        "through a jitted function": body(
            lambda b, x: jax.grad(lambda b: jnp.sum(jax.jit(lambda u, v: u * v)(x, b)))(b),
            P()),
        "all_gather then psum_scatter": jax.jit(jax.shard_map(
            fsdp_step, mesh=mesh, in_specs=(P("d"), P("d")), out_specs=P("d"))),
        "no check: the local gradient": body(
            lambda b, x: jax.grad(lambda b: jnp.sum(x * b))(b), P("d"), check=False),
    }, mesh


@pytest.mark.parametrize("name", list(_cases(ours)[0]))
def test_derivatives_in_a_body_agree_with_jax(name):
    results = []
    for jax in (real, ours):
        cases, mesh = _cases(jax)
        split = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("d"))
        x = jax.device_put(jax.numpy.arange(8.0).reshape(8, 1), split)
        first = (jax.device_put(jax.numpy.ones(8), split) if name.startswith("all_gather")
                 else jax.numpy.full((1,), 2.0))
        results.append(np.asarray(cases[name](first, x)))
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6)
    assert results[1].shape == results[0].shape


def _nested_cases(jax):
    """On a 4 x 2 mesh: two axes, and the transformations a body may hold around grad."""
    P, jnp, lax = jax.sharding.PartitionSpec, jax.numpy, jax.lax
    mesh = jax.make_mesh((4, 2), ("a", "b"), axis_types=(jax.sharding.AxisType.Auto,) * 2)

    def body(f, ins, out):
        return jax.jit(jax.shard_map(f, mesh=mesh, in_specs=ins, out_specs=out))
    both = (P(), P("a"))
    return {
        "pmean over one axis of two": body(lambda w, x: jax.grad(
            lambda w: lax.pmean(jnp.sum(jnp.tanh(x @ w)), "a"))(w), both, P()),
        "split over both axes": body(lambda w, x: jax.grad(
            lambda w: lax.psum(jnp.sum(x @ w), ("a", "b")))(w), (P(), P(("a", "b"))), P()),
        "weights split over the other axis": body(lambda w, x: jax.grad(
            lambda w: jnp.sum(x[:, :2] * w))(w), (P("b"), P("a")), P("b")),
        "ppermute": body(lambda w, x: jax.grad(lambda w: jnp.sum(lax.ppermute(
            x @ w, "a", [(i, (i + 1) % 4) for i in range(4)]) ** 2))(w), both, P()),
        "vmap of grad": body(lambda w, x: jax.vmap(jax.grad(
            lambda w, xi: jnp.sum(xi * w)), (None, 0))(w, x), both, P("a")),
        "hessian": body(lambda w, x: jax.hessian(
            lambda w: lax.pmean(jnp.sum((x @ w) ** 3), "a"))(w), both, P()),
        "a jit holding a psum": body(lambda w, x: jax.grad(lambda w: jax.jit(
            lambda w: lax.psum(jnp.sum(x @ w), "a"))(w))(w), both, P()),
        "a checkpoint holding a psum": body(lambda w, x: jax.grad(lambda w: jax.checkpoint(
            lambda w: lax.psum(jnp.sum(jnp.sin(x @ w)), "a"))(w))(w), both, P()),
        "value_and_grad": body(lambda w, x: jax.value_and_grad(
            lambda w: lax.pmean(jnp.mean((x @ w) ** 2), "a"))(w), both, (P(), P())),
    }


@pytest.mark.parametrize("name", list(_nested_cases(ours)))
def test_nested_derivatives_in_a_body_agree_with_jax(name):
    x = np.arange(32.0, dtype=np.float32).reshape(8, 4) / 10
    results = []
    for jax in (real, ours):
        w = np.linspace(-1, 1, 2 if "other axis" in name else 4, dtype=np.float32)
        results.append(jax.tree.leaves(_nested_cases(jax)[name](w, x)))
    for mine, theirs in zip(results[1], results[0]):
        np.testing.assert_allclose(np.asarray(mine), np.asarray(theirs), rtol=1e-5, atol=1e-6)


def _loop_losses(jax):
    jnp, lax = jax.numpy, jax.lax
    perm = [(i, (i + 1) % 4) for i in range(4)]

    def varying_zero():
        return lax.pcast(jnp.float32(0.0), "a", to="varying")
    return {
        "fori_loop holding a ppermute": lambda w, x: lax.fori_loop(
            0, 2, lambda i, c: c + jnp.sum(lax.ppermute(x, "a", perm) @ w), varying_zero()),
        "fori_loop of local work": lambda w, x: lax.fori_loop(
            0, 2, lambda i, c: c + jnp.sum(jnp.sin(x @ w)), varying_zero()),
        "cond of local work": lambda w, x: jnp.sum(lax.cond(
            True, lambda w: jnp.sin(x @ w), lambda w: x @ w, w)),
    }


def _in_body(jax, loss):
    P = jax.sharding.PartitionSpec
    mesh = jax.make_mesh((4,), ("a",), axis_types=(jax.sharding.AxisType.Auto,))
    return jax.jit(jax.shard_map(lambda w, x: jax.grad(loss)(w, x)[None], mesh=mesh,
                                 in_specs=(P(), P("a")), out_specs=P("a")))


@pytest.mark.parametrize("name", list(_loop_losses(ours)))
def test_loops_and_branches_in_a_body_agree_with_jax(name):
    """A replicated value used with varying ones inside a loop or a branch: the sum is
    made where the loop's operand meets its varying results (a sum commutes with the
    loop's linear backward pass)."""
    x = np.arange(16.0, dtype=np.float32).reshape(8, 2) / 10
    w = np.array([0.5, -1.0], np.float32)
    results = [np.asarray(_in_body(jax, _loop_losses(jax)[name])(w, x)) for jax in (real, ours)]
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5)
