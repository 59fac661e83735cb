"""A moving average by cumulative sums, and windows read with dynamic_slice inside fori_loop."""
import jax
import jax.numpy as jnp
from jax import lax


def moving_average(x, width):
    c = jnp.cumsum(jnp.concatenate([jnp.zeros(1), x]))
    return (c[width:] - c[:-width]) / width


def window_maxima(x, width):
    def body(i, out):
        window = lax.dynamic_slice(x, (i,), (width,))
        return out.at[i].set(jnp.max(window))
    return lax.fori_loop(0, x.shape[0] - width + 1, body, jnp.zeros(x.shape[0] - width + 1))


def main():
    x = jnp.sin(jnp.linspace(0.0, 6.0, 20)) + 0.1 * jnp.arange(20.0)
    slope = jax.grad(lambda x: jnp.sum(moving_average(x, 4) ** 2))(x)
    return (jax.jit(moving_average, static_argnums=1)(x, 4),
            jax.jit(window_maxima, static_argnums=1)(x, 3), slope)
