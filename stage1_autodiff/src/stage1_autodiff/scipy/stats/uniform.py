"""``jax.scipy.stats.uniform``: the uniform distribution on ``[loc, loc + scale]``.

Example:
    >>> import stage1_autodiff as jax
    >>> print(jax.scipy.stats.uniform.pdf(0.5, loc=0.0, scale=2.0))
    0.5

NB: JAX's functions are in ``jax/_src/scipy/stats/uniform.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as jnp
from ...numpy.promotion import convert
from ._util import promote_args_inexact

__all__ = ["cdf", "logpdf", "pdf", "ppf"]


def _outside(x: Any, loc: Any, scale: Any) -> Any:
    return (x < loc) | (x > loc + scale)


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """-log(scale) on the interval, -inf outside it.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.stats.uniform.logpdf(2.0))
        -inf
    """
    x, loc, scale = promote_args_inexact("uniform.logpdf", x, loc, scale)
    return jnp.where(_outside(x, loc, scale), -np.inf, -jnp.log(scale))


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The density, exp(logpdf)."""
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P(X <= x): 0 left of the interval, 1 right of it, (x - loc) / scale on it, and 0 where
    no comparison holds (a NaN anywhere), as JAX's ``select`` with 0 as its default. Strongly
    typed even for Python floats, as JAX's (its 0 and 1 are arrays of x's dtype)."""
    x, loc, scale = promote_args_inexact("uniform.cdf", x, loc, scale)
    inside = (x >= loc) & (x <= loc + scale)
    ramp = jnp.where(inside, (x - loc) / scale, jnp.where(x > loc + scale, 1.0, 0.0))
    return convert(ramp, ramp.dtype, weak_type=False)


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The quantile loc + scale * q; NaN for q outside [0, 1]."""
    q, loc, scale = promote_args_inexact("uniform.ppf", q, loc, scale)
    bad = jnp.isnan(q) | (q < 0) | (q > 1)
    return jnp.where(bad, np.nan, loc + scale * q)
