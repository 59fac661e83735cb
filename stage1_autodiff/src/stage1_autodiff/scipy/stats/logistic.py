"""``jax.scipy.stats.logistic``: the logistic distribution, whose CDF is the sigmoid
expit((x - loc) / scale).

Example:
    >>> import stage1_autodiff as jax
    >>> print(jax.scipy.stats.logistic.cdf(0.0))
    0.5

NB: JAX's functions are in ``jax/_src/scipy/stats/logistic.py``.
"""

from __future__ import annotations

from typing import Any

from ... import numpy as jnp
from ..special import expit, logit
from ._util import promote_args_inexact

__all__ = ["cdf", "isf", "logpdf", "pdf", "ppf", "sf"]


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log of e^-z / (1 + e^-z)^2 / scale for z = (x - loc) / scale, written as
    -2 logaddexp(z/2, -z/2) - log(scale): symmetric, and no overflow for large |z|.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.stats.logistic.logpdf(0.0))
        -1.3862944
    """
    x, loc, scale = promote_args_inexact("logistic.logpdf", x, loc, scale)
    half_z = (x - loc) / scale / 2
    return -2 * jnp.logaddexp(half_z, -half_z) - jnp.log(scale)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The density, exp(logpdf)."""
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X <= x) = expit((x - loc) / scale)."""
    x, loc, scale = promote_args_inexact("logistic.cdf", x, loc, scale)
    return expit((x - loc) / scale)


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X > x) = expit(-(x - loc) / scale), exact in the right tail."""
    x, loc, scale = promote_args_inexact("logistic.sf", x, loc, scale)
    return expit(-((x - loc) / scale))


def ppf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The quantile loc + scale * logit(q) (JAX names the argument ``x``)."""
    x, loc, scale = promote_args_inexact("logistic.ppf", x, loc, scale)
    return logit(x) * scale + loc


def isf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The inverse of sf, loc - scale * logit(q)."""
    x, loc, scale = promote_args_inexact("logistic.isf", x, loc, scale)
    return -logit(x) * scale + loc
