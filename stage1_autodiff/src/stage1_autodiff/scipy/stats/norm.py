"""``jax.scipy.stats.norm``: the normal distribution with mean ``loc`` and standard deviation
``scale``, written with ``jax.scipy.special``'s ndtr, log_ndtr and ndtri.

Example:
    >>> import stage1_autodiff as jax
    >>> print(jax.scipy.stats.norm.cdf(1.96))
    0.9750021

NB: JAX's functions are in ``jax/_src/scipy/stats/norm.py``.
"""

from __future__ import annotations

import math
from typing import Any

from ... import numpy as jnp
from ...numpy.promotion import promote_inexact
from .. import special

__all__ = ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def _standardized(x: Any, loc: Any, scale: Any) -> Any:
    x, loc, scale = promote_inexact(x, loc, scale)
    return (x - loc) / scale


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log of the density: -((x - loc) / scale)**2 / 2 - log(scale) - log(2 pi) / 2."""
    x, loc, scale = promote_inexact(x, loc, scale)
    z = (x - loc) / scale
    return -0.5 * (z * z) - (jnp.log(scale) + 0.5 * math.log(2 * math.pi))


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The density, exp(logpdf)."""
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X <= x)."""
    return special.ndtr(_standardized(x, loc, scale))


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log P(X <= x), accurate far into the left tail."""
    return special.log_ndtr(_standardized(x, loc, scale))


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The survival function P(X > x) = cdf(-x) for the standardized x."""
    return special.ndtr(-_standardized(x, loc, scale))


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log P(X > x)."""
    return special.log_ndtr(-_standardized(x, loc, scale))


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The quantile function, the inverse of cdf: loc + scale * ndtri(q).

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.stats.norm.ppf(0.5, loc=3.0))
        3.0
    """
    q, loc, scale = promote_inexact(q, loc, scale)
    return special.ndtri(q) * scale + loc


def isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The inverse of sf: loc - scale * ndtri(q).
    NB: JAX takes ppf(1 - q), which loses the precision of a small q in float32 (1 - q
    rounds); ndtri(q) keeps it, so far in the tail the two differ (ours is the closer)."""
    q, loc, scale = promote_inexact(q, loc, scale)
    return loc - special.ndtri(q) * scale
