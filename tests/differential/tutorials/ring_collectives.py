"""Collectives built from point-to-point sends: a ring all-reduce (reduce-scatter then
all-gather, n - 1 ppermute steps each, in lax.fori_loop with the chunk picked by
axis_index) checked against lax.psum, and ring attention, where each device keeps its block
of queries while the key/value blocks travel round the ring and an online softmax folds
them in; its output and its gradient in the queries agree with ordinary attention."""
from functools import partial

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def ring_all_reduce(x, axis, n):
    """x: this device's vector, n * c long; returns the sum of every device's x."""
    me = lax.axis_index(axis)
    chunks = x.reshape(n, -1)
    to_next = [(i, (i + 1) % n) for i in range(n)]

    def reduce_scatter(s, chunks):
        sent = lax.ppermute(chunks[(me - s) % n], axis, to_next)
        return chunks.at[(me - s - 1) % n].add(sent)

    def all_gather(s, chunks):
        sent = lax.ppermute(chunks[(me + 1 - s) % n], axis, to_next)
        return chunks.at[(me - s) % n].set(sent)

    chunks = lax.fori_loop(0, n - 1, reduce_scatter, chunks)
    chunks = lax.fori_loop(0, n - 1, all_gather, chunks)
    return chunks.reshape(-1)


def ring_attention(q, k, v, axis, n):
    """q, k, v: this device's (block, d) rows of the sequence."""
    scale = 1.0 / jnp.sqrt(q.shape[-1])
    to_next = [(i, (i + 1) % n) for i in range(n)]

    def step(_, carry):
        m, denom, acc, k, v = carry
        s = (q @ k.T) * scale
        m_new = jnp.maximum(m, s.max(axis=1))
        correction = jnp.exp(m - m_new)
        p = jnp.exp(s - m_new[:, None])
        denom = denom * correction + p.sum(axis=1)
        acc = acc * correction[:, None] + p @ v
        k, v = lax.ppermute((k, v), axis, to_next)
        return m_new, denom, acc, k, v

    m0 = jnp.full(q.shape[:1], -jnp.inf) + 0 * q[:, 0]  # varying, like the blocks
    init = (m0, jnp.zeros_like(m0), jnp.zeros_like(q), k, v)
    _, denom, acc, _, _ = lax.fori_loop(0, n, step, init)
    return acc / denom[:, None]


def attention(q, k, v):
    s = (q @ k.T) / jnp.sqrt(q.shape[-1])
    return jax.nn.softmax(s, axis=-1) @ v


def main():
    mesh = jax.make_mesh((8,), ("ring",))
    n = mesh.shape["ring"]
    kx, kq, kk, kv = jax.random.split(jax.random.key(21), 4)
    split = NamedSharding(mesh, P("ring"))

    x = jax.device_put(jax.random.normal(kx, (n, 4 * n)), split)

    @jax.jit
    @partial(jax.shard_map, mesh=mesh, in_specs=P("ring"), out_specs=(P("ring"), P("ring")))
    def all_reduce(x):
        block = x[0]
        return ring_all_reduce(block, "ring", n)[None], lax.psum(block, "ring")[None]

    ring_sum, psum_sum = all_reduce(x)

    q = jax.random.normal(kq, (32, 8))
    k = jax.random.normal(kk, (32, 8))
    v = jax.random.normal(kv, (32, 8))
    qs, ks, vs = (jax.device_put(a, split) for a in (q, k, v))

    @jax.jit
    @partial(jax.shard_map, mesh=mesh, in_specs=P("ring"), out_specs=P("ring"))
    def sharded_attention(q, k, v):
        return ring_attention(q, k, v, "ring", n)

    out = sharded_attention(qs, ks, vs)
    dense = attention(q, k, v)

    def sin_loss(f, k, v):
        return lambda q: jnp.sum(jnp.sin(f(q, k, v)))

    grad_ring = jax.jit(jax.grad(sin_loss(sharded_attention, ks, vs)))(qs)
    grad_dense = jax.grad(sin_loss(attention, k, v))(q)
    return (ring_sum, psum_sum, jnp.max(jnp.abs(ring_sum - psum_sum)), out, dense, grad_ring,
            grad_dense, str(out.sharding.spec), str(jax.typeof(grad_ring)))
