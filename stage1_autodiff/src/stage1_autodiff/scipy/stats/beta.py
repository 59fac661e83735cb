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

from ... import lax
from ... import numpy as jnp
from ..special import betainc, betaln, xlog1py, xlogy
from ._util import promote_args_inexact

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]


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
    log_probs = (log_powers - betaln(a, b)) - jnp.log(scale)
    log_probs = jnp.where((x > loc + scale) | (x < loc), -np.inf, log_probs)
    return jnp.where((a <= 0) | (b <= 0) | (scale <= 0), np.nan, log_probs)


def pdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The density, exp(logpdf)."""
    return jnp.exp(logpdf(x, a, b, loc, scale))


def _unit_y(x: Any, loc: Any, scale: Any) -> Any:
    """(x - loc) / scale clamped to [0, 1]."""
    return lax.clamp(0.0, (x - loc) / scale, 1.0)


def cdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X <= x) = I_y(a, b), the regularized incomplete beta function.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.stats.beta.cdf(0.5, 2.0, 2.0))
        0.5
    """
    x, a, b, loc, scale = promote_args_inexact("beta.cdf", x, a, b, loc, scale)
    return betainc(a, b, _unit_y(x, loc, scale))


def logcdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log(cdf)."""
    return jnp.log(cdf(x, a, b, loc, scale))


def sf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X > x) = I_{1 - y}(b, a), by the symmetry of the beta distribution."""
    x, a, b, loc, scale = promote_args_inexact("beta.sf", x, a, b, loc, scale)
    return betainc(b, a, 1 - _unit_y(x, loc, scale))


def logsf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log(sf)."""
    return jnp.log(sf(x, a, b, loc, scale))
