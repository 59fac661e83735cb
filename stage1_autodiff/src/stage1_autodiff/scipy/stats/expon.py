"""``jax.scipy.stats.expon``: the exponential distribution, density exp(-(x - loc) / scale) /
scale for x >= loc.

Example:
    >>> import stage1_autodiff as jax
    >>> print(jax.scipy.stats.expon.cdf(1.0))
    0.63212055

NB: JAX's functions are in ``jax/_src/scipy/stats/expon.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as jnp
from ._util import promote_args_inexact

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """-(x - loc) / scale - log(scale) for x >= loc, -inf below.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.stats.expon.logpdf(-1.0))
        -inf
    """
    x, loc, scale = promote_args_inexact("expon.logpdf", x, loc, scale)
    return jnp.where(x < loc, -np.inf, -((x - loc) / scale + jnp.log(scale)))


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The density, exp(logpdf)."""
    return jnp.exp(logpdf(x, loc, scale))


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log P(X > x) = -(x - loc) / scale, and 0 below loc."""
    x, loc, scale = promote_args_inexact("expon.logsf", x, loc, scale)
    log_survival = (loc - x) / scale
    return jnp.where(x < loc, jnp.zeros_like(log_survival), log_survival)


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X > x), exp(logsf)."""
    return jnp.exp(logsf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X <= x) = -expm1(-(x - loc) / scale), exact for small x; 0 below loc."""
    x, loc, scale = promote_args_inexact("expon.cdf", x, loc, scale)
    log_survival = (loc - x) / scale
    return jnp.where(x < loc, jnp.zeros_like(log_survival), -jnp.expm1(log_survival))


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log P(X <= x) = log1p(-sf)."""
    return jnp.log1p(-sf(x, loc, scale))


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The quantile loc - scale * log1p(-q); NaN for q outside [0, 1]."""
    q, loc, scale = promote_args_inexact("expon.ppf", q, loc, scale)
    bad = jnp.isnan(q) | (q < 0) | (q > 1)
    return jnp.where(bad, np.nan, loc - scale * jnp.log1p(-q))
