"""``jax.scipy.stats.betabinom``: a binomial count whose success probability is itself
Beta(a, b) distributed.

Example:
    >>> import stage1_autodiff as jax
    >>> print(jax.scipy.stats.betabinom.pmf(1, 2, 1.0, 1.0))
    0.33333334

NB: JAX's functions are in ``jax/_src/scipy/stats/betabinom.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as jnp
from ..special import betaln
from ._util import promote_args_inexact

__all__ = ["logpmf", "pmf"]


def logpmf(k: Any, n: Any, a: Any, b: Any, loc: Any = 0) -> Any:
    """log C(n, y) + log B(y + a, n - y + b) - log B(a, b) for y = floor(k) - loc, with
    log C(n, y) = -log(n + 1) - log B(n - y + 1, y + 1). -inf for y outside [-loc, n] (as
    JAX's) or y + a <= 0; NaN for n < 0, a <= 0 or b <= 0.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.stats.betabinom.logpmf(3, 2, 1.0, 1.0))
        -inf
    """
    k, n, a, b, loc = promote_args_inexact("betabinom.logpmf", k, n, a, b, loc)
    y = jnp.floor(k) - loc
    log_choose = -(jnp.log1p(n) + betaln(n - y + 1, y + 1))
    log_probs = log_choose + (betaln(y + a, n - y + b) - betaln(a, b))
    log_probs = jnp.where((y == 0) & (n == 0), 0.0, log_probs)
    outside = (y < -loc) | (y > n) | (y + a <= 0)
    log_probs = jnp.where(outside, -np.inf, log_probs)
    return jnp.where((n < 0) | (a <= 0) | (b <= 0), np.nan, log_probs)


def pmf(k: Any, n: Any, a: Any, b: Any, loc: Any = 0) -> Any:
    """The probability, exp(logpmf)."""
    return jnp.exp(logpmf(k, n, a, b, loc))
