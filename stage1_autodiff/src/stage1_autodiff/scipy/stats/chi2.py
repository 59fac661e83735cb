"""``jax.scipy.stats.chi2``: the chi-squared distribution with ``df`` degrees of freedom
(a gamma distribution of shape df / 2 and scale 2).

Example:
    >>> import stage1_autodiff as jax
    >>> print(jax.scipy.stats.chi2.pdf(2.0, 2.0))
    0.18393971

NB: JAX's functions are in ``jax/_src/scipy/stats/chi2.py``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import lax
from ... import numpy as jnp
from ..special import gammainc, gammaincc, gammaln
from ._util import promote_args_inexact

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]


def logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """(df/2 - 1) log(y) - y/2 - log Gamma(df/2) - df/2 log(2) - log(scale) for
    y = (x - loc) / scale, -inf for x < loc.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.stats.chi2.logpdf(-1.0, 2.0))
        -inf
    """
    x, df, loc, scale = promote_args_inexact("chi2.logpdf", x, df, loc, scale)
    y = (x - loc) / scale
    half_df = df / 2
    log_norm = -(gammaln(half_df) + math.log(2) * df / 2) - jnp.log(scale)
    log_probs = log_norm + ((half_df - 1) * jnp.log(y) - y / 2)
    return jnp.where(x < loc, -np.inf, log_probs)


def pdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The density, exp(logpdf)."""
    return jnp.exp(logpdf(x, df, loc, scale))


def _half_y(x: Any, loc: Any, scale: Any) -> Any:
    """(x - loc) / (2 scale) clamped to [0, inf): chi2(df) is gamma(df / 2) of scale 2."""
    return lax.clamp(0.0, (x - loc) / (scale * 2), np.inf)


def cdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X <= x) = P(df / 2, y / 2), the regularized lower incomplete gamma function.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.stats.chi2.cdf(2.0, 2.0))  # 1 - 1/e
        0.63212055
    """
    x, df, loc, scale = promote_args_inexact("chi2.cdf", x, df, loc, scale)
    return gammainc(df / 2, _half_y(x, loc, scale))


def logcdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log(cdf)."""
    return jnp.log(cdf(x, df, loc, scale))


def sf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X > x) = Q(df / 2, y / 2), the upper incomplete gamma function."""
    x, df, loc, scale = promote_args_inexact("chi2.sf", x, df, loc, scale)
    return gammaincc(df / 2, _half_y(x, loc, scale))


def logsf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log(sf)."""
    return jnp.log(sf(x, df, loc, scale))
