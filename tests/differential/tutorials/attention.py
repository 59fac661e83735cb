"""Causal self-attention: a jnp.tril mask, softmax over keys, its gradient under jit."""
import jax
import jax.numpy as jnp


def attention(q, k, v):
    t = q.shape[0]
    scores = q @ k.T / jnp.sqrt(q.shape[-1])
    mask = jnp.tril(jnp.ones((t, t), dtype=bool))
    scores = jnp.where(mask, scores, -jnp.inf)
    return jax.nn.softmax(scores, axis=-1) @ v


def main():
    kq, kk, kv = jax.random.split(jax.random.key(1), 3)
    q = jax.random.normal(kq, (6, 4))
    k = jax.random.normal(kk, (6, 4))
    v = jax.random.normal(kv, (6, 4))
    out = jax.jit(attention)(q, k, v)
    grads = jax.jit(jax.grad(lambda q, k, v: jnp.sum(attention(q, k, v) ** 2),
                             argnums=(0, 1, 2)))(q, k, v)
    return out, grads
