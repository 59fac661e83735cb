"""Gaussian-process regression: an RBF kernel, Cholesky, cho_solve, the log marginal
likelihood and its gradient in the kernel's length scale."""
import jax
import jax.numpy as jnp
from jax.scipy.linalg import cho_factor, cho_solve


def kernel(a, b, length):
    d = a[:, None] - b[None, :]
    return jnp.exp(-0.5 * (d / length) ** 2)


def log_marginal(length, x, y, noise=0.1):
    k = kernel(x, x, length) + noise * jnp.eye(x.shape[0])
    factor = cho_factor(k, lower=True)
    alpha = cho_solve(factor, y)
    log_det = 2 * jnp.sum(jnp.log(jnp.diag(jnp.linalg.cholesky(k))))
    return -0.5 * y @ alpha - 0.5 * log_det - 0.5 * x.shape[0] * jnp.log(2 * jnp.pi)


def main():
    x = jnp.linspace(0.0, 3.0, 12)
    y = jnp.sin(2.0 * x)
    x_new = jnp.linspace(0.0, 3.0, 5)
    k = kernel(x, x, 0.7) + 0.1 * jnp.eye(12)
    mean = kernel(x_new, x, 0.7) @ cho_solve(cho_factor(k, lower=True), y)
    value, slope = jax.value_and_grad(log_marginal)(0.7, x, y)
    return mean, value, slope, jax.jit(log_marginal)(0.7, x, y)
