"""Pytrees a training library leans on: NamedTuple parameters, optional (None) entries
that every transformation passes over, a dict keyed by tuples, a class registered with
register_pytree_with_keys so that paths name its fields, flatten_with_path and keystr for
parameter names, tree.map with is_leaf to treat a whole layer as one leaf, tree.transpose
of per-step records into per-field lists, a tree_util.Partial passed through jit, and
in_axes given as a tree prefix to vmap, all under jit, grad and vmap."""
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.tree_util import GetAttrKey, Partial


class Dense(NamedTuple):
    w: jax.Array
    b: jax.Array | None


class Residual:
    """A block whose children are named in paths (``.inner``, ``.gain``); its name is static."""

    def __init__(self, inner, gain, name):
        self.inner, self.gain, self.name = inner, gain, name

    def __call__(self, x):
        return x + self.gain * jnp.tanh(x @ self.inner.w + (0 if self.inner.b is None
                                                               else self.inner.b))


jax.tree_util.register_pytree_with_keys(
    Residual,
    lambda r: (((GetAttrKey("inner"), r.inner), (GetAttrKey("gain"), r.gain)), r.name),
    lambda name, children: Residual(*children, name),
)


def init(key):
    k1, k2, k3 = jax.random.split(key, 3)
    return {
        ("encoder", 0): Dense(jax.random.normal(k1, (3, 4)) / 2, jnp.zeros(4)),
        ("encoder", 1): Residual(Dense(jax.random.normal(k2, (4, 4)) / 2, None),
                                 jnp.array(0.5), "res"),
        ("head", 0): Dense(jax.random.normal(k3, (4, 1)) / 2, None),
    }


def apply(params, x):
    first = params[("encoder", 0)]
    x = jax.nn.relu(x @ first.w + first.b)
    x = params[("encoder", 1)](x)
    return (x @ params[("head", 0)].w)[..., 0]


@jax.jit
def sgd(params, x, y, schedule):
    loss, grads = jax.value_and_grad(lambda p: jnp.mean((apply(p, x) - y) ** 2))(params)
    lr = schedule(0.3)
    return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss, grads


def main():
    params = init(jax.random.key(12))
    x = jax.random.normal(jax.random.key(13), (6, 3))
    y = jnp.sin(x.sum(1))
    schedule = Partial(jnp.multiply, 0.5)  # a function that is a pytree: passes through jit

    records = []
    for _ in range(3):
        params, loss, grads = sgd(params, x, y, schedule)
        records.append({"loss": loss, "gain": params[("encoder", 1)].gain})
    per_field = jax.tree.transpose(jax.tree.structure([0] * len(records)),
                                   jax.tree.structure({"loss": 0, "gain": 0}), records)
    stacked = jax.tree.map(jnp.stack, per_field, is_leaf=lambda v: isinstance(v, list))

    flat, _ = jax.tree.flatten_with_path(params)
    names = [jax.tree_util.keystr(path) for path, _ in flat]
    sizes = jax.tree.leaves(jax.tree.map(jnp.size, params))
    per_layer = jax.tree.map(lambda v: sum(jnp.sum(a) for a in jax.tree.leaves(v)),
                             params, is_leaf=lambda v: isinstance(v, (Dense, Residual)))
    with_none = jax.tree.leaves(params, is_leaf=lambda v: v is None)
    grad_structure = jax.tree.structure(grads) == jax.tree.structure(params)

    layer = params[("head", 0)]
    batched_w = jnp.stack([layer.w, 2 * layer.w, -layer.w])
    per_model = jax.vmap(lambda d, x: x @ d.w, in_axes=(Dense(0, None), None))(
        Dense(batched_w, None), jnp.ones((2, 4)))
    squared = jax.tree_util.tree_map_with_path(
        lambda path, v: v ** 2 if path[-1] == GetAttrKey("gain") else v, params)
    return (stacked, names, sizes, per_layer, len(with_none), sum(v is None for v in with_none),
            grad_structure, per_model, squared[("encoder", 1)].gain, params[("encoder", 1)].name,
            jax.tree.reduce(jnp.add, jax.tree.map(jnp.sum, grads)),
            str(jax.tree.structure({"a": (1, None), "b": [2, 3]})),
            str(jax.tree.structure(Dense(1, None))))
