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

from ... import numpy as jnp
from ..special import gammaln, xlogy
from ._util import promote_args_inexact

__all__ = ["logpdf", "pdf"]


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
