"""``jax.scipy.stats.binom``: successes in ``n`` trials of probability ``p``.

Example:
    >>> import stage1_autodiff as jax
    >>> print(jax.scipy.stats.binom.pmf(1, 2, 0.5))
    0.5

NB: JAX's functions are in ``jax/_src/scipy/stats/binom.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as jnp
from ..special import gammaln, xlog1py, xlogy
from ._util import promote_args_inexact

__all__ = ["logpmf", "pmf"]


def logpmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """log C(n, y) + y log(p) + (n - y) log(1 - p) for y = k - loc in [0, n], -inf outside.
    Where the two log terms sum to exactly 0 (p = 0 and y = 0, p = 1 and y = n), and for
    n = y = 0, the result is exactly 0, without gammaln's rounding.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.stats.binom.logpmf(3, 2, 0.5))
        -inf
    """
    k, n, p, loc = promote_args_inexact("binom.logpmf", k, n, p, loc)
    y = k - loc
    log_choose = gammaln(n + 1) - (gammaln(y + 1) + gammaln(n - y + 1))
    log_powers = xlogy(y, p) + xlog1py(n - y, -p)
    certain = ((y == 0) & (n == 0)) | (log_powers == 0)
    log_probs = jnp.where(certain, 0.0, log_choose + log_powers)
    return jnp.where((k >= loc) & (k < loc + n + 1), log_probs, -np.inf)


def pmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """The probability, exp(logpmf)."""
    return jnp.exp(logpmf(k, n, p, loc))
