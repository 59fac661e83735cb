"""Custom derivative rules a library defines: a custom_vjp gradient clip with a
nondiff argument, a numerically stable log1pexp by custom_jvp with defjvps, a
straight-through estimator by stop_gradient, all under jit, vmap and second derivatives."""
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def clip_gradient(x, bound):
    return x


def _clip_fwd(x, bound):
    return x, None


def _clip_bwd(bound, _, g):
    return (jnp.clip(g, -bound, bound),)


clip_gradient.defvjp(_clip_fwd, _clip_bwd)


@jax.custom_jvp
def log1pexp(x):
    return jnp.log1p(jnp.exp(x))


log1pexp.defjvps(lambda t, ans, x: t * jax.nn.sigmoid(x))


def straight_through_round(x):
    return x + jax.lax.stop_gradient(jnp.round(x) - x)


def main():
    x = jnp.array([-30.0, -1.0, 0.5, 3.0, 100.0])
    g_clip = jax.jit(jax.grad(lambda x: jnp.sum(clip_gradient(x, 0.5) ** 3)))(x)
    g_soft = jax.vmap(jax.grad(log1pexp))(x)
    gg_soft = jax.vmap(jax.grad(jax.grad(log1pexp)))(x)
    g_st = jax.grad(lambda x: jnp.sum(straight_through_round(x) ** 2))(x)
    return g_clip, log1pexp(x), g_soft, gg_soft, g_st, straight_through_round(x)
