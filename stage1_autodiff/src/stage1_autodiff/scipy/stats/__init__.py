"""``jax.scipy.stats``: distributions, each a module of functions as in JAX, and three
statistics of a sample (``mode``, ``rankdata``, ``sem``)."""

from . import (
    bernoulli,
    beta,
    betabinom,
    binom,
    cauchy,
    chi2,
    dirichlet,
    expon,
    gamma,
    gennorm,
    geom,
    gumbel_l,
    gumbel_r,
    laplace,
    logistic,
    multinomial,
    multivariate_normal,
    nbinom,
    norm,
    pareto,
    poisson,
    t,
    truncnorm,
    uniform,
    vonmises,
    wrapcauchy,
)
from .descriptive import mode, rankdata, sem
from .kde import gaussian_kde

DISTRIBUTIONS = ["bernoulli", "beta", "betabinom", "binom", "cauchy", "chi2", "dirichlet",
                 "expon", "gamma", "gennorm", "geom", "gumbel_l", "gumbel_r", "laplace",
                 "logistic", "multinomial", "multivariate_normal", "nbinom", "norm", "pareto",
                 "poisson", "t", "truncnorm", "uniform", "vonmises", "wrapcauchy"]

__all__ = [*DISTRIBUTIONS, "gaussian_kde", "mode", "rankdata", "sem"]
