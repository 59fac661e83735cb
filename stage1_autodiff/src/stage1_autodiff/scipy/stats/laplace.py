"""``jax.scipy.stats.laplace``: the Laplace (double exponential) distribution, density
exp(-|x - loc| / scale) / (2 scale).

Example:
    >>> import stage1_autodiff as jax
    >>> print(jax.scipy.stats.laplace.cdf(0.0))
    0.5

NB: JAX's functions are in ``jax/_src/scipy/stats/laplace.py``.
"""

from __future__ import annotations

from typing import Any

from ... import numpy as jnp
from ._util import promote_args_inexact

__all__ = ["cdf", "logpdf", "pdf"]


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """-|x - loc| / scale - log(2 scale).

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.stats.laplace.logpdf(1.0))
        -1.6931472
    """
    x, loc, scale = promote_args_inexact("laplace.logpdf", x, loc, scale)
    return -(jnp.abs(x - loc) / scale + jnp.log(2 * scale))


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The density, exp(logpdf)."""
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X <= x): exp(z) / 2 for the standardized z <= 0, 1 - exp(-z) / 2 above."""
    x, loc, scale = promote_args_inexact("laplace.cdf", x, loc, scale)
    z = (x - loc) / scale
    return jnp.where(z <= 0, 0.5 * jnp.exp(z), 1 - 0.5 * jnp.exp(-z))
