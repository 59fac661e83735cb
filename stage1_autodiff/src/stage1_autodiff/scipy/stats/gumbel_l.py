"""``jax.scipy.stats.gumbel_l``: the left-skewed Gumbel (minimum extreme value)
distribution, survival function exp(-exp(z)) for z = (x - loc) / scale. NaN wherever
scale <= 0.

Example:
    >>> import stage1_autodiff as jax
    >>> print(jax.scipy.stats.gumbel_l.logsf(0.0))
    -1.0

NB: JAX's functions are in ``jax/_src/scipy/stats/gumbel_l.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as jnp
from ._util import promote_args_inexact

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """-log(scale) + z - exp(z).

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.stats.gumbel_l.logpdf(0.0))
        -1.0
    """
    x, loc, scale = promote_args_inexact("gumbel_l.logpdf", x, loc, scale)
    z = (x - loc) / scale
    return jnp.where(scale > 0, -jnp.log(scale) + (z - jnp.exp(z)), np.nan)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The density, exp(logpdf)."""
    return jnp.exp(logpdf(x, loc, scale))


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log P(X <= x) = log(-expm1(-exp(z))), exact far into the left tail."""
    x, loc, scale = promote_args_inexact("gumbel_l.logcdf", x, loc, scale)
    z = (x - loc) / scale
    return jnp.where(scale > 0, jnp.log(-jnp.expm1(-jnp.exp(z))), np.nan)


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X <= x), exp(logcdf)."""
    return jnp.exp(logcdf(x, loc, scale))


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log P(X > x) = -exp(z)."""
    x, loc, scale = promote_args_inexact("gumbel_l.logsf", x, loc, scale)
    z = (x - loc) / scale
    return jnp.where(scale > 0, -jnp.exp(z), np.nan)


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X > x), exp(logsf)."""
    return jnp.exp(logsf(x, loc, scale))


def ppf(p: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The quantile loc + scale log(-log1p(-p)); NaN outside 0 < p < 1."""
    p, loc, scale = promote_args_inexact("gumbel_l.ppf", p, loc, scale)
    quantile = loc + scale * jnp.log(-jnp.log1p(-p))
    return jnp.where((p > 0) & (p < 1), quantile, np.nan)
