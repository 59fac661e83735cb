"""``jax.scipy.stats.t``: Student's t distribution with ``df`` degrees of freedom.

Example:
    >>> import stage1_autodiff as jax
    >>> print(jax.scipy.stats.t.pdf(0.0, 1.0))  # the Cauchy density at 0
    0.31830993

NB: JAX's functions are in ``jax/_src/scipy/stats/t.py``.
"""

from __future__ import annotations

import math
from typing import Any

from ... import numpy as jnp
from ..special import gammaln
from ._util import promote_args_inexact

__all__ = ["logpdf", "pdf"]


def logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log Gamma((df + 1) / 2) - log Gamma(df / 2) - log(pi df scale^2) / 2
    - (df + 1) / 2 * log1p(z^2 / df) for z = (x - loc) / scale.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.stats.t.logpdf(0.0, 1.0))
        -1.1447299
    """
    x, df, loc, scale = promote_args_inexact("t.logpdf", x, df, loc, scale)
    z = (x - loc) / scale
    half_df = df / 2
    log_norm = gammaln(half_df) + jnp.log(scale * scale * math.pi * df) / 2
    log_norm = log_norm - gammaln(half_df + 0.5)
    return -(log_norm + (half_df + 0.5) * jnp.log1p(z * z / df))


def pdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The density, exp(logpdf)."""
    return jnp.exp(logpdf(x, df, loc, scale))
