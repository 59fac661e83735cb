"""``jax.scipy.stats.nbinom``: failures before the ``n``-th success in trials of probability
``p``, P(k) = C(k + n - 1, k) p^n (1 - p)^k.

Example:
    >>> import stage1_autodiff as jax
    >>> print(jax.scipy.stats.nbinom.pmf(0, 2, 0.5))
    0.25

NB: JAX's functions are in ``jax/_src/scipy/stats/nbinom.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as jnp
from ..special import gammaln, xlogy
from ._util import promote_args_inexact

__all__ = ["logpmf", "pmf"]


def logpmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """log Gamma(y + n) - log Gamma(n) - log(y!) + n log(p) + y log(1 - p) for y = k - loc,
    -inf below loc.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.stats.nbinom.logpmf(-1, 2, 0.5))
        -inf
    """
    k, n, p, loc = promote_args_inexact("nbinom.logpmf", k, n, p, loc)
    y = k - loc
    log_choose = gammaln(y + n) - gammaln(n) - gammaln(y + 1)
    log_probs = log_choose + (xlogy(n, p) + xlogy(y, 1 - p))
    return jnp.where(k < loc, -np.inf, log_probs)


def pmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """The probability, exp(logpmf)."""
    return jnp.exp(logpmf(k, n, p, loc))
