"""Entropic optimal transport by Sinkhorn iterations in log space (while_loop until the
marginals match), its gradient by implicit unrolling with fori_loop, and a vmapped batch."""
import jax
import jax.numpy as jnp
from jax import lax
from jax.scipy.special import logsumexp


def sinkhorn(cost, a, b, eps=0.1, iters=60):
    log_a, log_b = jnp.log(a), jnp.log(b)
    def body(_, fg):
        f, g = fg
        f = eps * (log_a - logsumexp((g[None, :] - cost) / eps, axis=1))
        g = eps * (log_b - logsumexp((f[:, None] - cost) / eps, axis=0))
        return f, g
    f, g = lax.fori_loop(0, iters, body, (jnp.zeros_like(a), jnp.zeros_like(b)))
    plan = jnp.exp((f[:, None] + g[None, :] - cost) / eps)
    return jnp.sum(plan * cost), plan


def until_converged(cost, a, b, eps=0.1):
    log_a, log_b = jnp.log(a), jnp.log(b)
    def cond(state):
        _, _, err, i = state
        return (err > 1e-4) & (i < 500)
    def body(state):
        f, g, _, i = state
        f = eps * (log_a - logsumexp((g[None, :] - cost) / eps, axis=1))
        g = eps * (log_b - logsumexp((f[:, None] - cost) / eps, axis=0))
        plan = jnp.exp((f[:, None] + g[None, :] - cost) / eps)
        return f, g, jnp.abs(plan.sum(1) - a).max(), i + 1
    init = (jnp.zeros_like(a), jnp.zeros_like(b), jnp.inf, 0)
    return lax.while_loop(cond, body, init)[3]


def main():
    kx, ky = jax.random.split(jax.random.key(2))
    x, y = jax.random.normal(kx, (5, 2)), jax.random.normal(ky, (6, 2)) + 1.0
    cost = jnp.sum((x[:, None] - y[None]) ** 2, -1)
    a, b = jnp.full(5, 1 / 5), jnp.full(6, 1 / 6)
    value, plan = jax.jit(sinkhorn)(cost, a, b)
    dx = jax.grad(lambda x: sinkhorn(jnp.sum((x[:, None] - y[None]) ** 2, -1), a, b)[0])(x)
    batch = jax.vmap(lambda s: sinkhorn(cost * s, a, b)[0])(jnp.array([0.5, 1.0, 2.0]))
    return value, plan, dx, batch, until_converged(cost, a, b)
