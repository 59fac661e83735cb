"""A Monte Carlo estimate with explicit keys: fold_in per round, uniform draws, and the
reparameterized gradient of an expectation (the same bits as JAX, so the same estimate)."""
import jax
import jax.numpy as jnp


def main():
    key = jax.random.key(2024)
    inside = []
    for r in range(4):
        u = jax.random.uniform(jax.random.fold_in(key, r), (2, 500))
        inside.append(jnp.mean(jnp.sum(u ** 2, axis=0) < 1.0))
    pi = 4 * jnp.mean(jnp.stack(inside))

    eps = jax.random.normal(jax.random.key(9), (1000,))
    expectation = lambda mu, sigma: jnp.mean(jnp.sin(mu + sigma * eps))  # noqa: E731
    return pi, jax.grad(expectation, argnums=(0, 1))(0.3, 1.2)
