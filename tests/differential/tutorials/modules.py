"""A flax-like module system on pytrees: a dataclass registered with register_dataclass, a
class with register_pytree_node_class, params flattened by ravel_pytree, tree_map_with_path
for weight decay on kernels only, jax.tree.* helpers."""
import dataclasses
from functools import partial

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree


@partial(jax.tree_util.register_dataclass, data_fields=["kernel", "bias"],
         meta_fields=["activation"])
@dataclasses.dataclass
class Dense:
    kernel: jax.Array
    bias: jax.Array
    activation: str = "tanh"

    def __call__(self, x):
        y = x @ self.kernel + self.bias
        return jnp.tanh(y) if self.activation == "tanh" else y


@jax.tree_util.register_pytree_node_class
class Sequential:
    def __init__(self, layers):
        self.layers = layers

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def tree_flatten(self):
        return (self.layers,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


def init(key):
    k1, k2 = jax.random.split(key)
    return Sequential([
        Dense(jax.random.normal(k1, (3, 8)) * 0.5, jnp.zeros(8)),
        Dense(jax.random.normal(k2, (8, 2)) * 0.5, jnp.zeros(2), "linear"),
    ])


def decay(path, leaf):
    name = jax.tree_util.keystr(path)
    return 1e-2 * leaf if name.endswith(".kernel") else jnp.zeros_like(leaf)


@jax.jit
def step(model, x, y):
    loss, grads = jax.value_and_grad(lambda m: jnp.mean((m(x) - y) ** 2))(model)
    grads = jax.tree.map(jnp.add, grads, jax.tree_util.tree_map_with_path(decay, model))
    return jax.tree.map(lambda p, g: p - 0.1 * g, model, grads), loss


def main():
    model = init(jax.random.key(0))
    x = jax.random.normal(jax.random.key(1), (10, 3))
    y = jnp.stack([x.sum(1), x[:, 0] * x[:, 1]], axis=1)
    losses = []
    for _ in range(3):
        model, loss = step(model, x, y)
        losses.append(loss)
    flat, unravel = ravel_pytree(model)
    rebuilt = unravel(flat * 2)
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(model)[0]]
    return (losses, flat, jax.tree.leaves(rebuilt), jax.tree.structure(model).num_leaves,
            " ".join(paths), str(jax.tree.map(jnp.shape, model).layers[0].kernel))
