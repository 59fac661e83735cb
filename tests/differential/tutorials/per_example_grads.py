"""Per-example gradients: vmap of grad with in_axes=(None, 0, 0), their norms clipped as in
DP-SGD, under jit."""
import jax
import jax.numpy as jnp


def loss(w, x, y):
    return (jnp.tanh(x @ w) - y) ** 2


def main():
    kx, kw = jax.random.split(jax.random.key(7))
    x = jax.random.normal(kx, (16, 5))
    y = jnp.sin(jnp.arange(16.0))
    w = jax.random.normal(kw, (5,))
    per_example = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))(w, x, y)
    norms = jnp.linalg.norm(per_example, axis=1)
    clipped = per_example / jnp.maximum(1.0, norms / 0.5)[:, None]
    return per_example, clipped.mean(axis=0)
