"""``jax.scipy.stats.geom``: the number of trials up to the first success,
P(k) = (1 - p)^(k - 1) p for k >= 1.

Example:
    >>> import stage1_autodiff as jax
    >>> print(jax.scipy.stats.geom.pmf(2, 0.5))
    0.25

NB: JAX's functions are in ``jax/_src/scipy/stats/geom.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as jnp
from ..special import xlog1py
from ._util import promote_args_inexact

__all__ = ["logpmf", "pmf"]


def logpmf(k: Any, p: Any, loc: Any = 0) -> Any:
    """(y - 1) log(1 - p) + log(p) for y = k - loc > 0, -inf for y <= 0.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.stats.geom.logpmf(0, 0.5))
        -inf
    """
    k, p, loc = promote_args_inexact("geom.logpmf", k, p, loc)
    y = k - loc
    return jnp.where(y <= 0, -np.inf, xlog1py(y - 1, -p) + jnp.log(p))


def pmf(k: Any, p: Any, loc: Any = 0) -> Any:
    """The probability, exp(logpmf)."""
    return jnp.exp(logpmf(k, p, loc))
