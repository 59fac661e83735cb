"""Data and tensor parallel layer with shard_map on a 2x2 mesh of CPU devices: psum of the
loss over both axes, axis_index, ppermute in a ring, then a jitted gradient of the same
layer on a sharded input."""
from functools import partial

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def main():
    mesh = jax.make_mesh((2, 2), ("data", "model"), devices=jax.devices()[:4])
    x = jnp.arange(32.0).reshape(8, 4) / 10
    w = jnp.arange(24.0).reshape(4, 6) / 20

    @jax.jit
    @partial(jax.shard_map, mesh=mesh, in_specs=(P("data", None), P(None, "model")),
             out_specs=(P(), P("data", "model"), P("data")))
    def step(x, w):
        h = jnp.tanh(x @ w)  # each device: its rows, its hidden columns
        loss = jax.lax.psum(jnp.sum(h ** 2), ("data", "model"))
        column = h * (1 + jax.lax.axis_index("model"))
        ring = jax.lax.ppermute(x, "data", perm=[(0, 1), (1, 0)])
        return loss, column, ring.sum(1)

    xs = jax.device_put(x, NamedSharding(mesh, P("data", None)))
    ws = jax.device_put(w, NamedSharding(mesh, P(None, "model")))
    loss, h, mixed = step(xs, ws)
    grad = jax.jit(jax.grad(lambda x: jnp.sum(jnp.tanh(x @ w) ** 2)))(xs)
    return loss, h, mixed, grad, str(h.sharding.spec), str(grad.sharding.spec)
