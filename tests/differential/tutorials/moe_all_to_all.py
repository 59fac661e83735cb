"""A mixture-of-experts layer with expert parallelism: one expert per device, a top-1
softmax router, a fixed capacity per expert (tokens past it are dropped, placed by a
cumsum), the tokens dispatched to their experts with lax.all_to_all and the results sent
back with a second all_to_all, combined with the router's gate. The layer is checked
against a dense computation of the same routing, and the loss of a model that calls the
shard_map'd layer is differentiated under jit from outside, router weights included."""
from functools import partial

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

D, HIDDEN, CAPACITY = 4, 8, 3


def route(x, router):
    """Per token: its expert, its gate, and its dispatch mask of shape (tokens, experts,
    capacity), zero for a token dropped because its expert is full."""
    probs = jax.nn.softmax(x @ router, axis=-1)
    expert = jnp.argmax(probs, axis=-1)
    gate = jnp.max(probs, axis=-1)
    onehot = jax.nn.one_hot(expert, router.shape[1], dtype=jnp.int32)
    position = jnp.cumsum(onehot, axis=0) * onehot - 1
    mask = onehot[:, :, None] * jax.nn.one_hot(position, CAPACITY, dtype=jnp.int32)
    return expert, gate, mask.astype(x.dtype)


def ffn(w1, w2, x):
    return jax.nn.relu(x @ w1) @ w2


def main():
    mesh = jax.make_mesh((8,), ("expert",))
    n = mesh.shape["expert"]
    keys = jax.random.split(jax.random.key(8), 5)
    params = {
        "router": jax.random.normal(keys[0], (D, n)),
        "w1": jax.random.normal(keys[1], (n, D, HIDDEN)) / 2,
        "w2": jax.random.normal(keys[2], (n, HIDDEN, D)) / 3,
    }
    tokens = jax.random.normal(keys[3], (n * 8, D))
    target = jnp.tanh(jax.random.normal(keys[4], (n * 8, D)))
    specs = {"router": P(), "w1": P("expert"), "w2": P("expert")}
    placed = jax.tree.map(lambda a, s: jax.device_put(a, NamedSharding(mesh, s)), params, specs)
    placed_tokens = jax.device_put(tokens, NamedSharding(mesh, P("expert")))

    @partial(jax.shard_map, mesh=mesh, in_specs=(specs, P("expert")),
             out_specs=(P("expert"), P()))
    def moe(params, x):
        _, gate, mask = route(x, params["router"])
        dispatched = jnp.einsum("tec,td->ecd", mask, x)  # (experts, capacity, d)
        received = lax.all_to_all(dispatched, "expert", 0, 0, tiled=True)
        out = ffn(params["w1"][0], params["w2"][0], received)  # this device's expert
        returned = lax.all_to_all(out, "expert", 0, 0, tiled=True)
        y = jnp.einsum("tec,ecd->td", mask * gate[:, None, None], returned)
        load = lax.psum(mask.sum(axis=(0, 2)), "expert")  # tokens kept per expert
        return y, load

    def dense(params, x):
        def per_device(x):
            expert, gate, mask = route(x, params["router"])
            kept = mask.sum(axis=(1, 2))
            outs = jax.vmap(ffn, in_axes=(0, 0, None))(params["w1"], params["w2"], x)
            chosen = jnp.take_along_axis(outs, expert[None, :, None], axis=0)[0]
            return chosen * (gate * kept)[:, None]
        return jax.vmap(per_device)(x.reshape(n, -1, D)).reshape(-1, D)

    def loss(params, x):
        y, _ = moe(params, x)
        return jnp.mean((y - target) ** 2)

    y, load = jax.jit(moe)(placed, placed_tokens)
    reference = jax.jit(dense)(params, tokens)  # on one device, unsharded
    value, grads = jax.jit(jax.value_and_grad(loss))(placed, placed_tokens)
    dense_grads = jax.grad(lambda p, x: jnp.mean((dense(p, x) - target) ** 2))(params, tokens)
    types = {k: str(jax.typeof(g)) for k, g in grads.items()}
    return y, reference, load, value, grads, dense_grads, types, str(jax.typeof(y))
