"""Data-parallel training over 8 devices: the batch sharded along a mesh axis, parameters
replicated, the jitted step's gradient reduced across devices by the partitioner."""
import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def main():
    mesh = jax.make_mesh((8,), ("data",))
    kx, kw = jax.random.split(jax.random.key(11))
    x = jax.device_put(jax.random.normal(kx, (64, 6)), NamedSharding(mesh, P("data")))
    y = jax.device_put(jnp.cos(jnp.arange(64.0)), NamedSharding(mesh, P("data")))
    w = jax.device_put(0.1 * jax.random.normal(kw, (6,)), NamedSharding(mesh, P()))

    def loss(w, x, y):
        return jnp.mean((jnp.tanh(x @ w) - y) ** 2)

    step = jax.jit(lambda w, x, y: w - 0.5 * jax.grad(loss)(w, x, y))
    for _ in range(10):
        w = step(w, x, y)
    return w, loss(w, x, y)
