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

from ... import numpy as jnp
from ..special import gammaln
from ._util import promote_args_inexact

__all__ = ["logpdf", "pdf"]


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
