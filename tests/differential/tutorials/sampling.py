"""Sampling from many distributions with one key split many ways: categorical (Gumbel-max),
permutation, choice without replacement by weights, truncated normal, gamma, beta,
Dirichlet, Poisson, multivariate normal, and a jitted Monte Carlo estimate of each mean."""
import jax
import jax.numpy as jnp


@jax.jit
def draws(key):
    k = jax.random.split(key, 10)
    logits = jnp.log(jnp.array([0.1, 0.2, 0.7]))
    return {
        "categorical": jax.random.categorical(k[0], logits, shape=(200,)),
        "permutation": jax.random.permutation(k[1], 10),
        "choice": jax.random.choice(k[2], 10, (4,), replace=False, p=jnp.arange(1.0, 11.0)),
        "truncated": jax.random.truncated_normal(k[3], -1.0, 2.0, (100,)),
        "gamma": jax.random.gamma(k[4], jnp.array([0.5, 2.0, 5.0]), (50, 3)),
        "beta": jax.random.beta(k[5], 2.0, 3.0, (100,)),
        "dirichlet": jax.random.dirichlet(k[6], jnp.array([1.0, 2.0, 3.0]), (40,)),
        "poisson": jax.random.poisson(k[7], 3.5, (100,)),
        "mvn": jax.random.multivariate_normal(k[8], jnp.zeros(2),
                                              jnp.array([[1.0, 0.5], [0.5, 2.0]]), (60,)),
        "gumbel": jax.random.gumbel(k[9], (5,)),
    }


def main():
    out = draws(jax.random.key(123))
    means = jax.tree.map(lambda a: jnp.mean(a.astype(jnp.float32), axis=0), out)
    counts = jnp.bincount(out["categorical"], length=3)
    reparam = jax.grad(lambda a: jnp.mean(jax.random.gamma(jax.random.key(9), a, (20,))))(2.0)
    return out, means, counts, reparam
