"""A linear recurrence h_t = a_t h_{t-1} + b_t by associative_scan, checked against scan,
with its gradient, cumulative reductions and a sorted top-k."""
import jax
import jax.numpy as jnp
from jax import lax


def combine(left, right):
    a1, b1 = left
    a2, b2 = right
    return a1 * a2, a2 * b1 + b2


def parallel(a, b):
    return lax.associative_scan(combine, (a, b))[1]


def sequential(a, b):
    def step(h, ab):
        h = ab[0] * h + ab[1]
        return h, h
    return lax.scan(step, 0.0, (a, b))[1]


def main():
    k1, k2 = jax.random.split(jax.random.key(21))
    a = jax.random.uniform(k1, (16,), minval=0.5, maxval=1.0)
    b = jax.random.normal(k2, (16,))
    par, seq = jax.jit(parallel)(a, b), sequential(a, b)
    g = jax.grad(lambda a: parallel(a, b).sum())(a)
    values, idx = lax.top_k(par, 4)
    return par, seq, g, values, idx, jnp.cumprod(a), lax.cummax(b), jnp.sort(b)[::-1]
