"""``jax.scipy.stats.cauchy``: the Cauchy distribution, density
1 / (pi scale (1 + z^2)) for z = (x - loc) / scale.

Example:
    >>> import stage1_autodiff as jax
    >>> print(jax.scipy.stats.cauchy.cdf(1.0))
    0.75

NB: JAX's functions are in ``jax/_src/scipy/stats/cauchy.py``.
"""

from __future__ import annotations

import math
from typing import Any

from ... import numpy as jnp
from ._util import promote_args_inexact

__all__ = ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """-log(pi scale) - log1p(z^2).

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.stats.cauchy.pdf(0.0))
        0.31830987
    """
    x, loc, scale = promote_args_inexact("cauchy.logpdf", x, loc, scale)
    z = (x - loc) / scale
    return -(jnp.log(math.pi * scale) + jnp.log1p(z * z))


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The density, exp(logpdf)."""
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X <= x) = 1/2 + arctan(z) / pi."""
    x, loc, scale = promote_args_inexact("cauchy.cdf", x, loc, scale)
    return 0.5 + jnp.arctan((x - loc) / scale) * (1 / math.pi)


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log(cdf)."""
    return jnp.log(cdf(x, loc, scale))


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X > x), the cdf of the mirrored distribution at -x."""
    x, loc, scale = promote_args_inexact("cauchy.sf", x, loc, scale)
    return cdf(-x, -loc, scale)


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log(sf)."""
    x, loc, scale = promote_args_inexact("cauchy.logsf", x, loc, scale)
    return logcdf(-x, -loc, scale)


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The quantile loc + scale * tan(pi (q - 1/2))."""
    q, loc, scale = promote_args_inexact("cauchy.ppf", q, loc, scale)
    return jnp.tan(math.pi * q - math.pi / 2) * scale + loc


def isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The inverse of sf, loc + scale * tan(pi (1/2 - q))."""
    q, loc, scale = promote_args_inexact("cauchy.isf", q, loc, scale)
    return jnp.tan(math.pi / 2 - math.pi * q) * scale + loc
