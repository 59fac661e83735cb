"""``jax.scipy.stats.wrapcauchy``: the wrapped Cauchy distribution on [0, 2 pi], with shape
0 < c < 1, density (1 - c^2) / (2 pi (1 + c^2 - 2 c cos x)).

Example:
    >>> import stage1_autodiff as jax
    >>> print(jax.scipy.stats.wrapcauchy.pdf(3.0, 0.0))  # c = 0 is refused: NaN
    nan

NB: JAX's functions are in ``jax/_src/scipy/stats/wrapcauchy.py``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import numpy as jnp
from ._util import promote_args_inexact

__all__ = ["logpdf", "pdf"]


def logpdf(x: Any, c: Any) -> Any:
    """log(1 - c^2) - log(2 pi) - log(1 + c^2 - 2 c cos x) for x in [0, 2 pi] (-inf
    outside); NaN unless 0 < c < 1.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.stats.wrapcauchy.logpdf(0.0, 0.5))
        -0.7392647
    """
    x, c = promote_args_inexact("wrapcauchy.logpdf", x, c)
    log_density = (jnp.log(1 - c * c) - math.log(2 * math.pi)
                   - jnp.log(1 + c * c - 2 * c * jnp.cos(x)))
    on_circle = jnp.where((x >= 0) & (x <= 2 * np.pi), log_density, -np.inf)
    return jnp.where((c > 0) & (c < 1), on_circle, np.nan)


def pdf(x: Any, c: Any) -> Any:
    """The density, exp(logpdf)."""
    return jnp.exp(logpdf(x, c))
