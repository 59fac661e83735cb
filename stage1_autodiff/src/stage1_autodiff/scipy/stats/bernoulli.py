"""``jax.scipy.stats.bernoulli``: one trial that succeeds (k = 1) with probability ``p``.

Example:
    >>> import stage1_autodiff as jax
    >>> print(jax.scipy.stats.bernoulli.pmf(1, 0.25))
    0.25

NB: JAX's functions are in ``jax/_src/scipy/stats/bernoulli.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as jnp
from ..special import xlog1py, xlogy
from ._util import promote_args_inexact

__all__ = ["cdf", "logpmf", "pmf", "ppf"]


def logpmf(k: Any, p: Any, loc: Any = 0) -> Any:
    """y log(p) + (1 - y) log(1 - p) for y = k - loc in [0, 1], -inf outside. As JAX's, a y
    between 0 and 1 is not refused (it interpolates).

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.stats.bernoulli.logpmf(2, 0.5))
        -inf
    """
    k, p, loc = promote_args_inexact("bernoulli.logpmf", k, p, loc)
    y = k - loc
    log_probs = xlogy(y, p) + xlog1py(1 - y, -p)
    return jnp.where((y < 0) | (y > 1), -np.inf, log_probs)


def pmf(k: Any, p: Any, loc: Any = 0) -> Any:
    """The probability, exp(logpmf)."""
    return jnp.exp(logpmf(k, p, loc))


def _invalid_p(p: Any) -> Any:
    return jnp.isnan(p) | (p < 0) | (p > 1)


def cdf(k: Any, p: Any) -> Any:
    """P(K <= k): 0 below 0, 1 - p on [0, 1), 1 from 1 on; NaN for a NaN k or a p outside
    [0, 1]."""
    k, p = promote_args_inexact("bernoulli.cdf", k, p)
    zero, one = jnp.zeros_like(k), jnp.ones_like(k)  # of k's weak type, as JAX's constants
    steps = jnp.where(k < 0, zero, jnp.where(k < 1, 1 - p, one))
    return jnp.where(jnp.isnan(k) | _invalid_p(p), np.nan, steps)


def ppf(q: Any, p: Any) -> Any:
    """The smallest k with cdf(k) >= q: 0 for q <= 1 - p, else 1; NaN for q or p outside
    [0, 1]."""
    q, p = promote_args_inexact("bernoulli.ppf", q, p)
    bad = jnp.isnan(q) | (q < 0) | (q > 1) | _invalid_p(p)
    zero, one = jnp.zeros_like(q), jnp.ones_like(q)  # of q's weak type, as JAX's constants
    return jnp.where(bad, np.nan, jnp.where(q <= 1 - p, zero, one))
