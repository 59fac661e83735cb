"""``jax.scipy.stats.gumbel_r``: the right-skewed Gumbel (maximum extreme value)
distribution, CDF exp(-exp(-z)) for z = (x - loc) / scale. NaN wherever scale <= 0.

Example:
    >>> import stage1_autodiff as jax
    >>> print(jax.scipy.stats.gumbel_r.logcdf(0.0))
    -1.0

NB: JAX's functions are in ``jax/_src/scipy/stats/gumbel_r.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as jnp
from ._util import promote_args_inexact

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """-log(scale) - z - exp(-z).

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.stats.gumbel_r.logpdf(0.0))
        -1.0
    """
    x, loc, scale = promote_args_inexact("gumbel_r.logpdf", x, loc, scale)
    z = (x - loc) / scale
    return jnp.where(scale > 0, -jnp.log(scale) - (z + jnp.exp(-z)), np.nan)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The density, exp(logpdf)."""
    return jnp.exp(logpdf(x, loc, scale))


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log P(X <= x) = -exp(-z)."""
    x, loc, scale = promote_args_inexact("gumbel_r.logcdf", x, loc, scale)
    z = (x - loc) / scale
    return jnp.where(scale > 0, -jnp.exp(-z), np.nan)


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X <= x), exp(logcdf)."""
    return jnp.exp(logcdf(x, loc, scale))


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X > x) = 1 - exp(-exp(-z)) (JAX's form: it rounds to 0 for z past ~17 in float32;
    -expm1 would keep it)."""
    x, loc, scale = promote_args_inexact("gumbel_r.sf", x, loc, scale)
    z = (x - loc) / scale
    return jnp.where(scale > 0, 1 - jnp.exp(-jnp.exp(-z)), np.nan)


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log P(X > x) = log(1 - exp(-exp(-z))): log(-expm1(-t)) for small t = exp(-z),
    log1p(-exp(-t)) for large, so neither rounds away."""
    x, loc, scale = promote_args_inexact("gumbel_r.logsf", x, loc, scale)
    t = jnp.exp((loc - x) / scale)
    small = t < np.log(2)
    log_sf = jnp.where(small, jnp.log(-jnp.expm1(-t)), jnp.log1p(-jnp.exp(-t)))
    return jnp.where(scale > 0, log_sf, np.nan)


def ppf(p: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The quantile loc - scale log(-log(p)); NaN outside 0 < p < 1."""
    p, loc, scale = promote_args_inexact("gumbel_r.ppf", p, loc, scale)
    quantile = loc - scale * jnp.log(-jnp.log(p))
    return jnp.where((p > 0) & (p < 1), quantile, np.nan)
