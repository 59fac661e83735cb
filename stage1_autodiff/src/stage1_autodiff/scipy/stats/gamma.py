"""``jax.scipy.stats.gamma``: the gamma distribution of shape ``a``, density
y^(a - 1) e^-y / Gamma(a) / scale for y = (x - loc) / scale >= 0.

Example:
    >>> import stage1_autodiff as jax
    >>> print(jax.scipy.stats.gamma.pdf(1.0, 1.0))  # the exponential density
    0.36787942

NB: JAX's functions are in ``jax/_src/scipy/stats/gamma.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import lax
from ... import numpy as jnp
from ..special import gammainc, gammaincc, gammaln, xlogy
from ._util import promote_args_inexact

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]


def logpdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """(a - 1) log(y) - y - log Gamma(a) - log(scale), -inf for x < loc. Below loc the
    formula sees y = 1, so that its gradient stays finite there.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.stats.gamma.logpdf(-1.0, 2.0))
        -inf
    """
    x, a, loc, scale = promote_args_inexact("gamma.logpdf", x, a, loc, scale)
    inside = x >= loc
    y = jnp.where(inside, (x - loc) / scale, 1.0)
    log_probs = (xlogy(a - 1, y) - y) - (gammaln(a) + jnp.log(scale))
    return jnp.where(inside, log_probs, -np.inf)


def pdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The density, exp(logpdf)."""
    return jnp.exp(logpdf(x, a, loc, scale))


def cdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X <= x) = P(a, y), the regularized lower incomplete gamma function, at y clamped
    to [0, inf).

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.stats.gamma.cdf(1.0, 1.0))  # 1 - 1/e
        0.63212055
    """
    x, a, loc, scale = promote_args_inexact("gamma.cdf", x, a, loc, scale)
    return gammainc(a, lax.clamp(0.0, (x - loc) / scale, np.inf))


def logcdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log(cdf)."""
    return jnp.log(cdf(x, a, loc, scale))


def sf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X > x) = Q(a, y), the upper incomplete gamma function; 1 below loc."""
    x, a, loc, scale = promote_args_inexact("gamma.sf", x, a, loc, scale)
    y = (x - loc) / scale
    return jnp.where(y < 0, 1, gammaincc(a, y))


def logsf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log(sf)."""
    return jnp.log(sf(x, a, loc, scale))
