"""Hamiltonian Monte Carlo on a correlated Gaussian: leapfrog steps in fori_loop, a
Metropolis test with lax.cond, chains run with vmap, the sampler under jit and scan."""
import jax
import jax.numpy as jnp
from jax import lax

COV = jnp.array([[1.0, 0.8], [0.8, 1.0]])
PREC = jnp.linalg.inv(COV)


def log_prob(x):
    return -0.5 * x @ PREC @ x


def leapfrog(x, p, eps, n):
    grad = jax.grad(log_prob)
    def body(_, state):
        x, p = state
        p = p + 0.5 * eps * grad(x)
        x = x + eps * p
        p = p + 0.5 * eps * grad(x)
        return x, p
    return lax.fori_loop(0, n, body, (x, p))


def hmc_step(x, key):
    kp, ku = jax.random.split(key)
    p0 = jax.random.normal(kp, x.shape)
    x1, p1 = leapfrog(x, p0, 0.2, 5)
    log_accept = (log_prob(x1) - 0.5 * p1 @ p1) - (log_prob(x) - 0.5 * p0 @ p0)
    accept = jnp.log(jax.random.uniform(ku)) < log_accept
    new = lax.cond(accept, lambda: x1, lambda: x)
    return new, (new, accept)


@jax.jit
def chain(x0, key):
    _, (xs, accepted) = lax.scan(hmc_step, x0, jax.random.split(key, 30))
    return xs, accepted.mean()


def main():
    keys = jax.random.split(jax.random.key(3), 4)
    x0 = jnp.zeros((4, 2))
    xs, rate = jax.vmap(chain)(x0, keys)
    return xs, rate, jnp.cov(xs.reshape(-1, 2).T)
