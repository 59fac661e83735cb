"""``jax.scipy.stats.truncnorm``: the normal distribution restricted to [a, b], the bounds
counted in standard deviations from ``loc``. Results are strongly typed (they come from
log_ndtr, as JAX's); NaN wherever a >= b.

Example:
    >>> import stage1_autodiff as jax
    >>> print(jax.scipy.stats.truncnorm.cdf(0.0, -1.0, 1.0))
    0.5000001

NB: JAX's functions are in ``jax/_src/scipy/stats/truncnorm.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as jnp
from .. import special
from . import norm
from ._util import promote_args_inexact

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]


def _log_sub_exp(log_x: Any, log_y: Any) -> Any:
    """log(exp(log_x) - exp(log_y)) for log_x >= log_y, without leaving log space."""
    return log_x + jnp.log1p(-jnp.exp(log_y - log_x))


def _log_mass(a: Any, b: Any) -> Any:
    """log P(a <= Z <= b) for a standard normal Z. In a tail (both bounds on one side of 0)
    the difference of two log_ndtr, taken in the left tail by symmetry, keeps precision;
    across 0, log1p of the two small tails left out."""
    a, b = jnp.broadcast_arrays(a, b)
    right_tail = a > 0
    central = ~((b <= 0) | right_tail)
    a_left = jnp.where(right_tail, -b, a)
    b_left = jnp.where(right_tail, -a, b)
    in_tail = _log_sub_exp(special.log_ndtr(b_left), special.log_ndtr(a_left))
    across = jnp.log1p(-special.ndtr(a) - special.ndtr(-b))
    return jnp.where(central, across, in_tail)


def logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The normal's logpdf minus log P(a <= Z <= b); -inf outside [a, b].

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.stats.truncnorm.logpdf(0.0, 0.0, 100.0))
        -0.22579134
    """
    x, a, b, loc, scale = promote_args_inexact("truncnorm.logpdf", x, a, b, loc, scale)
    log_density = norm.logpdf(x, loc, scale) - _log_mass(a, b)
    z = (x - loc) / scale
    log_density = jnp.where((z < a) | (z > b), -np.inf, log_density)
    return jnp.where(a >= b, np.nan, log_density)


def pdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The density, exp(logpdf)."""
    return jnp.exp(logpdf(x, a, b, loc, scale))


def logcdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log(mass(a, z) / mass(a, b)) for z = (x - loc) / scale; near 1 (past log 0.9) taken as
    log1p(-mass(z, b) / mass(a, b)), which keeps the small complement. 0 from b on, -inf
    up to a."""
    x, a, b, loc, scale = promote_args_inexact("truncnorm.logcdf", x, a, b, loc, scale)
    x, a, b = jnp.broadcast_arrays(x, a, b)
    z = (x - loc) / scale
    log_total = _log_mass(a, b)
    log_below = _log_mass(a, z) - log_total
    log_above = _log_mass(z, b) - log_total
    result = jnp.where(z > a, log_below, 0.0)
    result = jnp.where(log_below > -0.1, jnp.log1p(-jnp.exp(log_above)), result)
    result = jnp.where(z <= a, -np.inf, result)
    result = jnp.where(z >= b, 0.0, result)
    return jnp.where(a >= b, np.nan, result)


def cdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X <= x), exp(logcdf)."""
    return jnp.exp(logcdf(x, a, b, loc, scale))


def logsf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log P(X > x), the logcdf of the mirrored distribution at -x."""
    x, a, b, loc, scale = promote_args_inexact("truncnorm.logsf", x, a, b, loc, scale)
    return logcdf(-x, -b, -a, -loc, scale)


def sf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X > x), exp(logsf)."""
    return jnp.exp(logsf(x, a, b, loc, scale))
