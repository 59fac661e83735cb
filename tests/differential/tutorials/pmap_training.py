"""Data-parallel training as the pmap tutorials write it: the batch reshaped to
(devices, per-device, ...), the parameters replicated by stacking one copy per device,
a step under jax.pmap whose gradients and loss are averaged with lax.pmean over the named
axis, a learning rate passed through static_broadcasted_argnums, a global batch statistic
by psum, each device's rank by axis_index, all_gather of per-device losses, and an
evaluation pmap with in_axes=None for the shared parameters and out_axes=None for a
result every device agrees on."""
from functools import partial

import jax
import jax.numpy as jnp
from jax import lax


def init(key):
    k1, k2 = jax.random.split(key)
    return {"w1": jax.random.normal(k1, (3, 16)) * 0.5, "b1": jnp.zeros(16),
            "w2": jax.random.normal(k2, (16,)) * 0.25, "b2": jnp.zeros(())}


def predict(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


def loss_fn(params, x, y):
    return jnp.mean((predict(params, x) - y) ** 2)


@partial(jax.pmap, axis_name="devices", static_broadcasted_argnums=(3,))
def train_step(params, x, y, lr):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    grads = lax.pmean(grads, "devices")
    params = jax.tree.map(lambda p, g: p - lr * g, params, grads)
    count = lax.psum(x.shape[0], "devices")
    rank = lax.axis_index("devices")
    every_loss = lax.all_gather(loss, "devices")
    return params, lax.pmean(loss, "devices"), count, rank, every_loss


@partial(jax.pmap, axis_name="devices", in_axes=(None, 0, 0), out_axes=None)
def evaluate(params, x, y):
    err = jnp.sum((predict(params, x) - y) ** 2)
    return lax.psum(err, "devices") / lax.psum(y.size, "devices")


def main():
    n = jax.local_device_count()
    kx, kp = jax.random.split(jax.random.key(17))
    x = jax.random.normal(kx, (n * 8, 3))
    y = jnp.sin(x[:, 0]) + 0.5 * x[:, 1] * x[:, 2]
    xb, yb = x.reshape(n, 8, 3), y.reshape(n, 8)
    params = init(kp)
    replicated = jax.tree.map(lambda a: jnp.stack([a] * n), params)
    losses = []
    for _ in range(6):
        replicated, loss, count, rank, every = train_step(replicated, xb, yb, 0.1)
        losses.append(loss[0])
    single = jax.tree.map(lambda a: a[0], replicated)
    agree = jax.tree.map(lambda a: jnp.max(jnp.abs(a - a[0])), replicated)
    score = evaluate(single, xb, yb)
    return (losses, single, agree, count, rank, every, score, loss_fn(single, x, y),
            [list(a.shape) for a in jax.tree.leaves(replicated)], str(loss.sharding.spec))
