"""vmap as a model uses it: in_axes given as a dict, out_axes=1, axis_size with no mapped
input, nested vmap for pairwise kernels, a batch norm that averages over the batch by
psum with axis_name, and per-example gradients of a pytree model."""
import jax
import jax.numpy as jnp
from jax import lax


def batch_norm(x):
    mean = lax.pmean(x, "batch")
    var = lax.pmean((x - mean) ** 2, "batch")
    return (x - mean) / jnp.sqrt(var + 1e-5)


def model(params, x):
    return jnp.tanh(x @ params["w"] + params["b"]).sum()


def main():
    k1, k2 = jax.random.split(jax.random.key(17))
    xs = jax.random.normal(k1, (6, 3))
    params = {"w": jax.random.normal(k2, (3, 2)), "b": jnp.ones(2)}
    normed = jax.vmap(batch_norm, axis_name="batch")(xs)
    per_example = jax.vmap(jax.grad(model), in_axes=({"w": None, "b": None}, 0))(params, xs)
    rbf = jax.vmap(jax.vmap(lambda a, b: jnp.exp(-jnp.sum((a - b) ** 2)), (None, 0)),
                   (0, None))(xs, xs)
    transposed = jax.vmap(lambda x: x * 2, in_axes=0, out_axes=1)(xs)
    constant = jax.vmap(lambda: jnp.arange(3.0), axis_size=4)()
    scaled = jax.vmap(lambda p, x: model(p, x), in_axes=({"w": 2, "b": None}, None))(
        {"w": jnp.stack([params["w"], 2 * params["w"]], axis=2), "b": params["b"]}, xs[0])
    return normed, per_example, rbf, transposed, constant, scaled
