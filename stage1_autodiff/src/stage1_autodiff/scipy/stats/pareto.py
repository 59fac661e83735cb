"""``jax.scipy.stats.pareto``: the Pareto distribution of shape ``b``, density
b / y^(b + 1) / scale for y = (x - loc) / scale >= 1.

Example:
    >>> import stage1_autodiff as jax
    >>> print(jax.scipy.stats.pareto.cdf(2.0, 1.0))
    0.5

NB: JAX's functions are in ``jax/_src/scipy/stats/pareto.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as jnp
from ._util import promote_args_inexact

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def logpdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log(b / scale) - (b + 1) log(y), -inf for y < 1.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.stats.pareto.logpdf(0.5, 1.0))
        -inf
    """
    x, b, loc, scale = promote_args_inexact("pareto.logpdf", x, b, loc, scale)
    y = (x - loc) / scale
    log_probs = -(jnp.log(scale / b) + (b + 1) * jnp.log(y))
    return jnp.where(x < loc + scale, -np.inf, log_probs)


def pdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The density, exp(logpdf)."""
    return jnp.exp(logpdf(x, b, loc, scale))


def cdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X <= x) = 1 - y^-b, 0 for y < 1."""
    x, b, loc, scale = promote_args_inexact("pareto.cdf", x, b, loc, scale)
    y = (x - loc) / scale
    return jnp.where(x < loc + scale, 0.0, 1 - y ** -b)


def logcdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log1p(-y^-b), -inf for y < 1."""
    x, b, loc, scale = promote_args_inexact("pareto.logcdf", x, b, loc, scale)
    y = (x - loc) / scale
    return jnp.where(x < loc + scale, -np.inf, jnp.log1p(-(y ** -b)))


def logsf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log P(X > x) = -b log(y), 0 for y < 1."""
    x, b, loc, scale = promote_args_inexact("pareto.logsf", x, b, loc, scale)
    y = (x - loc) / scale
    return jnp.where(x < loc + scale, 0.0, -(b * jnp.log(y)))


def sf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X > x), exp(logsf)."""
    return jnp.exp(logsf(x, b, loc, scale))


def ppf(q: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The quantile loc + scale (1 - q)^(-1/b); NaN for q outside [0, 1]."""
    q, b, loc, scale = promote_args_inexact("pareto.ppf", q, b, loc, scale)
    quantile = loc + scale * (1 - q) ** -(1 / b)
    return jnp.where(jnp.isnan(q) | (q < 0) | (q > 1), np.nan, quantile)
