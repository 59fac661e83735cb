"""``jax.scipy.stats.gennorm``: the generalized normal distribution of shape ``beta``,
density beta / (2 Gamma(1 / beta)) exp(-|x|^beta) (beta = 2: a normal, 1: a Laplace).

Example:
    >>> import stage1_autodiff as jax
    >>> print(jax.scipy.stats.gennorm.pdf(0.0, 1.0))
    0.5

NB: JAX's functions are in ``jax/_src/scipy/stats/gennorm.py``.
"""

from __future__ import annotations

from typing import Any

from ... import numpy as jnp
from ..special import gammainc, gammaln
from ._util import promote_args_inexact

__all__ = ["cdf", "logpdf", "pdf"]


def logpdf(x: Any, beta: Any) -> Any:
    """log(beta / 2) - gammaln(1 / beta) - |x|^beta.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.stats.gennorm.logpdf(1.0, 2.0))
        -1.5723649
    """
    x, beta = promote_args_inexact("gennorm.logpdf", x, beta)
    return jnp.log(0.5 * beta) - gammaln(1 / beta) - jnp.abs(x) ** beta


def pdf(x: Any, beta: Any) -> Any:
    """The density, exp(logpdf)."""
    return jnp.exp(logpdf(x, beta))


def cdf(x: Any, beta: Any) -> Any:
    """P(X <= x) = (1 + sign(x) P(1 / beta, |x|^beta)) / 2, with P the regularized lower
    incomplete gamma function.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.stats.gennorm.cdf(0.0, 2.0))
        0.5
    """
    x, beta = promote_args_inexact("gennorm.cdf", x, beta)
    return 0.5 * (1 + jnp.sign(x) * gammainc(1 / beta, jnp.abs(x) ** beta))
