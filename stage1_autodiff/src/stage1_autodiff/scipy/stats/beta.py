"""``jax.scipy.stats.beta``: the beta distribution on [loc, loc + scale], density
y^(a - 1) (1 - y)^(b - 1) / B(a, b) / scale.

Example:
    >>> import stage1_autodiff as jax
    >>> print(jax.scipy.stats.beta.pdf(0.5, 2.0, 2.0))
    1.5

NB: JAX's functions are in ``jax/_src/scipy/stats/beta.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as jnp
from ..special import xlog1py, xlogy
from ._util import log_beta, promote_args_inexact

__all__ = ["logpdf", "pdf"]


def logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """(a - 1) log(y) + (b - 1) log(1 - y) - log B(a, b) - log(scale) for
    y = (x - loc) / scale; -inf outside [loc, loc + scale]; NaN for a, b or scale <= 0.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.stats.beta.logpdf(2.0, 2.0, 2.0))
        -inf
    """
    x, a, b, loc, scale = promote_args_inexact("beta.logpdf", x, a, b, loc, scale)
    y = (x - loc) / scale
    log_powers = xlogy(a - 1, y) + xlog1py(b - 1, -y)
    log_probs = (log_powers - log_beta(a, b)) - jnp.log(scale)
    log_probs = jnp.where((x > loc + scale) | (x < loc), -np.inf, log_probs)
    return jnp.where((a <= 0) | (b <= 0) | (scale <= 0), np.nan, log_probs)


def pdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The density, exp(logpdf)."""
    return jnp.exp(logpdf(x, a, b, loc, scale))
