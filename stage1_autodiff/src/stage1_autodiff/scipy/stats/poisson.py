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
from ..special import gammaincc, gammaln, xlogy
from ._util import promote_args_inexact

__all__ = ["cdf", "logpmf", "pmf"]


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
