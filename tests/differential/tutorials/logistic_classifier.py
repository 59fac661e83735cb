"""A logistic-regression classifier: log_sigmoid, a PRNG-drawn dataset, jit(grad)."""
import jax
import jax.numpy as jnp


def main():
    kx, kw = jax.random.split(jax.random.key(0))
    x = jax.random.normal(kx, (128, 3))
    labels = (x @ jnp.array([1.0, -2.0, 0.5]) > 0).astype(jnp.float32)
    w = 0.01 * jax.random.normal(kw, (3,))

    def loss(w):
        logits = x @ w
        return -jnp.mean(labels * jax.nn.log_sigmoid(logits)
                         + (1 - labels) * jax.nn.log_sigmoid(-logits))

    update = jax.jit(lambda w: w - 1.0 * jax.grad(loss)(w))
    for _ in range(30):
        w = update(w)
    accuracy = jnp.mean((x @ w > 0) == (labels > 0))
    return w, loss(w), accuracy
