"""EM for a 1-D Gaussian mixture with logsumexp responsibilities, vmapped over restarts,
and the log-likelihood's gradient through jax.scipy.stats."""
import jax
import jax.numpy as jnp
from jax.scipy.special import logsumexp
from jax.scipy.stats import norm


def em_step(params, x):
    logits, mu, log_sigma = params
    log_w = jax.nn.log_softmax(logits)
    log_p = log_w + norm.logpdf(x[:, None], mu, jnp.exp(log_sigma))
    resp = jnp.exp(log_p - logsumexp(log_p, axis=1, keepdims=True))
    nk = resp.sum(0)
    mu = (resp * x[:, None]).sum(0) / nk
    var = (resp * (x[:, None] - mu) ** 2).sum(0) / nk
    return (jnp.log(nk / x.shape[0]), mu, 0.5 * jnp.log(var)), logsumexp(log_p, axis=1).sum()


def fit(params, x):
    for _ in range(5):
        params, ll = em_step(params, x)
    return params, ll


def main():
    k1, k2, k3 = jax.random.split(jax.random.key(8), 3)
    x = jnp.concatenate([jax.random.normal(k1, (40,)) - 2, 0.5 * jax.random.normal(k2, (40,)) + 1])
    starts = (jnp.zeros((3, 2)), jax.random.normal(k3, (3, 2)), jnp.zeros((3, 2)))
    params, ll = jax.jit(jax.vmap(fit, in_axes=(0, None)))(starts, x)
    grad = jax.grad(lambda p: em_step(p, x)[1])(jax.tree_util.tree_map(lambda a: a[0], starts))
    return params, ll, grad
