"""Least squares four ways (lstsq, pinv, QR, normal equations by cho_solve), the SVD's
singular values, slogdet, matrix_power, solve_triangular, and gradients through lstsq."""
import jax
import jax.numpy as jnp
from jax.scipy.linalg import cho_factor, cho_solve, solve_triangular


def main():
    k1, k2 = jax.random.split(jax.random.key(31))
    a = jax.random.normal(k1, (9, 4))
    b = jax.random.normal(k2, (9,))
    x1 = jnp.linalg.lstsq(a, b)[0]
    x2 = jnp.linalg.pinv(a) @ b
    q, r = jnp.linalg.qr(a)
    x3 = solve_triangular(r, q.T @ b)
    x4 = cho_solve(cho_factor(a.T @ a), a.T @ b)
    s = jnp.linalg.svd(a, compute_uv=False)
    sign, logdet = jnp.linalg.slogdet(a.T @ a)
    m = jnp.linalg.matrix_power(a.T @ a / 9, 3)
    g = jax.grad(lambda a: jnp.sum(jnp.linalg.lstsq(a, b)[0] ** 2))(a)
    gs = jax.jit(jax.grad(lambda a: jnp.linalg.svd(a, compute_uv=False).sum()))(a)
    return x1, x2, x3, x4, s, sign, logdet, m, g, gs
