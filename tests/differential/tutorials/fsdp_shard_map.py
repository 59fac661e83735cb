"""Fully sharded data parallelism written by hand with shard_map: every parameter is split
by rows over the "data" axis, each layer gathers its full weight with all_gather just
before use, the local gradient is reduced and re-split with psum_scatter, the loss is
averaged with pmean, and the update touches only the local shard. The same step done by
differentiating through all_gather (whose transpose is a reduce-scatter) agrees, and so
does a plain unsharded gradient."""
from functools import partial

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

SIZES = [8, 16, 16, 4]


def init(key):
    keys = jax.random.split(key, len(SIZES) - 1)
    return [{"w": jax.random.normal(k, (m, n)) / jnp.sqrt(m), "b": jnp.zeros((n,))}
            for k, m, n in zip(keys, SIZES[:-1], SIZES[1:])]


def forward(params, x):
    for i, layer in enumerate(params):
        x = x @ layer["w"] + layer["b"]
        if i < len(params) - 1:
            x = jax.nn.relu(x)
    return x


def loss(params, x, y):
    return jnp.mean((forward(params, x) - y) ** 2)


def gather(shard):
    return lax.all_gather(shard, "data", axis=0, tiled=True)


def main():
    mesh = jax.make_mesh((8,), ("data",))
    n = mesh.shape["data"]
    kp, kx = jax.random.split(jax.random.key(5))
    params = init(kp)
    x = jax.random.normal(kx, (32, SIZES[0]))
    y = jnp.stack([x[:, 0] * x[:, 1], jnp.sin(x[:, 2]), x[:, 3], x.sum(1) / 4], axis=1)

    # the weights are split by rows (8 / 16 / 16 rows over 8 devices); biases replicated
    specs = [{"w": P("data", None), "b": P()} for _ in params]
    put = partial(jax.tree.map, lambda a, s: jax.device_put(a, NamedSharding(mesh, s)))
    sharded = put(params, specs)
    xs = jax.device_put(x, NamedSharding(mesh, P("data")))
    ys = jax.device_put(y, NamedSharding(mesh, P("data")))

    @jax.jit
    @partial(jax.shard_map, mesh=mesh, in_specs=(specs, P("data"), P("data")),
             out_specs=(specs, P(), specs))
    def manual_step(shards, x, y):
        full = [{"w": gather(layer["w"]), "b": layer["b"]} for layer in shards]
        value, grads = jax.value_and_grad(loss)(full, x, y)
        # the bias is replicated (invariant over "data"), so its gradient comes back
        # already summed over the devices; the gathered weight's is still per device
        grads = [{"w": lax.psum_scatter(g["w"], "data", scatter_dimension=0, tiled=True) / n,
                  "b": g["b"] / n} for g in grads]
        new = jax.tree.map(lambda p, g: p - 0.1 * g, shards, grads)
        return new, lax.pmean(value, "data"), grads

    @jax.jit
    @partial(jax.shard_map, mesh=mesh, in_specs=(specs, P("data"), P("data")),
             out_specs=(P(), specs))
    def autodiff_grads(shards, x, y):
        def sharded_loss(shards):
            full = [{"w": gather(layer["w"]), "b": layer["b"]} for layer in shards]
            return lax.pmean(loss(full, x, y), "data")
        return jax.value_and_grad(sharded_loss)(shards)

    value_ad, grads_ad = autodiff_grads(sharded, xs, ys)
    reference = jax.jit(jax.grad(loss))(params, x, y)
    losses = []
    state = sharded
    for _ in range(5):
        state, value, grads = manual_step(state, xs, ys)
        losses.append(value)
    first_grads = manual_step(sharded, xs, ys)[2]
    spec_strings = [str(layer["w"].sharding.spec) for layer in state]
    shard_shapes = [layer["w"].addressable_shards[0].data.shape for layer in state]
    return (losses, value_ad, grads_ad, first_grads, reference, state, spec_strings,
            [list(s) for s in shard_shapes])
