"""A two-layer MLP on three classes: softmax cross-entropy, one_hot, tree_map SGD."""
import jax
import jax.numpy as jnp


def init(key, sizes):
    keys = jax.random.split(key, len(sizes) - 1)
    return [(jax.random.normal(k, (m, n)) / jnp.sqrt(m), jnp.zeros(n))
            for k, m, n in zip(keys, sizes[:-1], sizes[1:])]


def predict(params, x):
    for w, b in params[:-1]:
        x = jax.nn.relu(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def main():
    key = jax.random.key(42)
    kx, kp = jax.random.split(key)
    x = jax.random.normal(kx, (96, 4))
    labels = jnp.argmax(x[:, :3], axis=1)
    params = init(kp, [4, 16, 3])

    def loss(params):
        logp = jax.nn.log_softmax(predict(params, x))
        return -jnp.mean(jnp.sum(logp * jax.nn.one_hot(labels, 3), axis=-1))

    @jax.jit
    def step(params):
        grads = jax.grad(loss)(params)
        return jax.tree.map(lambda p, g: p - 0.5 * g, params, grads)

    for _ in range(25):
        params = step(params)
    return params, loss(params)
