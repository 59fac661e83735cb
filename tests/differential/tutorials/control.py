"""Control flow a simulation uses: lax.switch over regimes, lax.map over a batch, jnp.select
and jnp.piecewise, lax.cond with operands, and grad through all of them under jit."""
import jax
import jax.numpy as jnp
from jax import lax


def regime(x):
    return lax.switch(jnp.clip(jnp.floor(x).astype(jnp.int32), 0, 2),
                      [jnp.sin, jnp.cos, lambda v: v ** 2], x)


def shaped(x):
    a = jnp.select([x < -1, x > 1], [-(x ** 2), x ** 3], default=x)
    b = jnp.piecewise(x, [x < 0, x >= 0], [lambda v: jnp.exp(v), lambda v: 1 + v])
    return a + b


def simulate(x):
    ys = lax.map(lambda v: regime(v) + shaped(v), x)
    return lax.cond(ys.sum() > 0, lambda y: y * 2, lambda y: -y, ys)


def main():
    x = jnp.linspace(-2.5, 2.9, 12)
    y = jax.jit(simulate)(x)
    g = jax.jit(jax.grad(lambda x: simulate(x).sum()))(x)
    per = jax.vmap(jax.grad(lambda v: regime(v) + shaped(v)))(x)
    return y, g, per
