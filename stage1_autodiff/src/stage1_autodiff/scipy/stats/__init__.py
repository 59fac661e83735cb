"""``jax.scipy.stats``: distributions, each a module of functions as in JAX."""

from . import (
    bernoulli,
    beta,
    betabinom,
    binom,
    cauchy,
    chi2,
    expon,
    gamma,
    geom,
    gumbel_l,
    gumbel_r,
    laplace,
    logistic,
    nbinom,
    norm,
    pareto,
    poisson,
    t,
    uniform,
)

__all__ = ["bernoulli", "beta", "betabinom", "binom", "cauchy", "chi2", "expon", "gamma",
           "geom", "gumbel_l", "gumbel_r", "laplace", "logistic", "nbinom", "norm", "pareto",
           "poisson", "t", "uniform"]
