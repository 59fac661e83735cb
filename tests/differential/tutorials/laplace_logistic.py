"""Bayesian logistic regression with a Laplace approximation: the MAP found by Newton steps
with jax.hessian in lax.fori_loop, the posterior covariance through jnp.linalg.cholesky
and jax.scipy.linalg.cho_solve, the log evidence from the log-determinant, and the
probit-approximated predictive for a grid of inputs by vmap, compared with Monte Carlo."""
import jax
import jax.numpy as jnp
from jax import lax
from jax.scipy.linalg import cho_solve, solve_triangular

PRIOR_VAR = 2.0


def features(x):
    return jnp.concatenate([jnp.ones(x.shape[:-1] + (1,)), x], axis=-1)


def log_joint(w, phi, y):
    logits = phi @ w
    loglik = jnp.sum(y * jax.nn.log_sigmoid(logits) + (1 - y) * jax.nn.log_sigmoid(-logits))
    return loglik - 0.5 * jnp.sum(w ** 2) / PRIOR_VAR


def newton_map(phi, y, steps=8):
    f = lambda w: -log_joint(w, phi, y)
    def body(_, w):
        g = jax.grad(f)(w)
        h = jax.hessian(f)(w)
        chol = jnp.linalg.cholesky(h)
        return w - cho_solve((chol, True), g)
    return lax.fori_loop(0, steps, body, jnp.zeros(phi.shape[1]))


@jax.jit
def laplace(phi, y):
    w_map = newton_map(phi, y)
    h = jax.hessian(lambda w: -log_joint(w, phi, y))(w_map)
    chol = jnp.linalg.cholesky(h)
    cov = cho_solve((chol, True), jnp.eye(h.shape[0]))
    logdet_h = 2.0 * jnp.sum(jnp.log(jnp.diag(chol)))
    d = w_map.shape[0]
    log_evidence = (log_joint(w_map, phi, y) - 0.5 * logdet_h + 0.5 * d * jnp.log(2 * jnp.pi)
                    - 0.5 * d * jnp.log(2 * jnp.pi * PRIOR_VAR))
    return w_map, cov, chol, log_evidence


def predictive(x, w_map, cov):
    phi = features(x)
    mean = phi @ w_map
    var = phi @ cov @ phi
    return jax.nn.sigmoid(mean / jnp.sqrt(1.0 + jnp.pi * var / 8.0))


def main():
    k1, k2, k3 = jax.random.split(jax.random.key(31), 3)
    x = jax.random.normal(k1, (40, 2))
    true_w = jnp.array([-0.5, 2.0, -1.0])
    y = jax.random.bernoulli(k2, jax.nn.sigmoid(features(x) @ true_w)).astype(jnp.float32)
    phi = features(x)
    w_map, cov, chol, log_evidence = laplace(phi, y)
    grad_at_map = jax.grad(log_joint)(w_map, phi, y)
    grid = jnp.stack(jnp.meshgrid(jnp.linspace(-2, 2, 3), jnp.linspace(-2, 2, 3)), -1)
    probs = jax.vmap(jax.vmap(predictive, in_axes=(0, None, None)),
                     in_axes=(0, None, None))(grid, w_map, cov)
    z = jax.random.normal(k3, (2000, 3))
    samples = w_map + z @ chol_inv_t(chol)
    mc = jnp.mean(jax.nn.sigmoid(features(grid.reshape(-1, 2)) @ samples.T), axis=1)
    return {"w_map": w_map, "cov": cov, "log_evidence": log_evidence,
            "grad_at_map_small": jnp.max(jnp.abs(grad_at_map)) < 1e-3,
            "probit": probs, "mc": mc.reshape(3, 3), "std": jnp.sqrt(jnp.diag(cov))}


def chol_inv_t(chol):
    """A matrix B with B^T B = H^{-1}: samples z @ B have covariance H^{-1}."""
    return solve_triangular(chol, jnp.eye(chol.shape[0]), lower=True)
