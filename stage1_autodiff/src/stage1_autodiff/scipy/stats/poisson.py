"""``jax.scipy.stats.poisson``: counts with mean ``mu``, P(k) = mu^k e^-mu / k!.

Example:
    >>> import stage1_autodiff as jax
    >>> print(jax.scipy.stats.poisson.pmf(0, 2.0))
    0.13533528

NB: JAX's functions are in ``jax/_src/scipy/stats/poisson.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as jnp
from ..special import entr, gammaincc, gammaln, xlogy
from ._util import promote_args_inexact

__all__ = ["cdf", "entropy", "logpmf", "pmf"]


def logpmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """y log(mu) - log(y!) - mu for y = k - loc; -inf for y < 0 or a k that is not whole.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.stats.poisson.logpmf(1.5, 2.0))
        -inf
    """
    k, mu, loc = promote_args_inexact("poisson.logpmf", k, mu, loc)
    y = k - loc
    log_probs = xlogy(y, mu) - gammaln(y + 1) - mu
    return jnp.where((y < 0) | (jnp.round(k) != k), -np.inf, log_probs)


def pmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """The probability, exp(logpmf)."""
    return jnp.exp(logpmf(k, mu, loc))


def cdf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """P(K <= k) = Q(floor(y) + 1, mu), the regularized upper incomplete gamma function, for
    y = k - loc; 0 for y < 0.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.stats.poisson.cdf(1, 1.0))  # 2 / e
        0.7357589
    """
    k, mu, loc = promote_args_inexact("poisson.cdf", k, mu, loc)
    y = k - loc
    return jnp.where(y < 0, jnp.zeros_like(y), gammaincc(jnp.floor(1 + y), mu))


_TERMS = 250  # enough for mu < 100: the mass beyond mu + 10 sqrt(mu) + 20 is negligible


def entropy(mu: Any, loc: Any = 0) -> Any:
    """-sum_k P(k) log P(k), in nats (``loc`` only shifts the distribution, so it changes
    nothing but the result's shape). For mu < 100 the sum runs over k below mu + 20
    (mu < 10) or mu + 10 sqrt(mu) + 20; from 100 on the asymptotic
    log(2 pi e mu) / 2 - 1 / (12 mu); 0 at mu = 0.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.stats.poisson.entropy(1.0))
        1.3048421
    """
    mu, loc = promote_args_inexact("poisson.entropy", mu, loc)
    shape = jnp.broadcast_shapes(mu.shape, loc.shape)
    flat_mu = jnp.ravel(mu)
    k = jnp.arange(_TERMS, dtype=mu.dtype)[:, None]
    bound = jnp.where(flat_mu < 10, flat_mu + 20, flat_mu + 10 * jnp.sqrt(flat_mu) + 20)
    terms = jnp.where(k < jnp.ceil(bound)[None, :], pmf(k, flat_mu), 0.0)
    summed = jnp.sum(entr(terms), axis=0)
    asymptotic = 0.5 * jnp.log(2 * np.pi * np.e * flat_mu) - 1.0 / (12 * flat_mu)
    result = jnp.where(flat_mu < 100, summed, asymptotic)
    result = jnp.where(flat_mu == 0, jnp.zeros_like(flat_mu), result)
    return jnp.broadcast_to(jnp.reshape(result, mu.shape), shape)
