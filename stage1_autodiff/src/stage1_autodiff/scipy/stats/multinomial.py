"""``jax.scipy.stats.multinomial``: the counts ``x`` (last axis) of ``n`` draws among
categories of probabilities ``p``.

Example:
    >>> import stage1_autodiff as jax
    >>> import numpy as np
    >>> print(jax.scipy.stats.multinomial.pmf(np.int32([1, 1]), 2, np.float32([0.5, 0.5])))
    0.5

NB: JAX's functions are in ``jax/_src/scipy/stats/multinomial.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as jnp
from ...numpy.promotion import promote, promote_inexact
from ..special import gammaln, xlogy
from ._util import check_arraylike

__all__ = ["logpmf", "pmf"]


def logpmf(x: Any, n: Any, p: Any) -> Any:
    """log(n!) + sum(x log(p) - log(x!)); -inf unless the counts sum to ``n``.

    Args:
        x: integer counts, shape (..., k).
        n: the integer number of draws.
        p: probabilities, shape (..., k).

    Example:
        >>> import stage1_autodiff as jax
        >>> import numpy as np
        >>> print(jax.scipy.stats.multinomial.logpmf(np.int32([1, 2]), 2, np.float32([.5, .5])))
        -inf

    NB: as in JAX, the sum is over all of ``x`` (not per row) when it is compared with n.
    """
    check_arraylike("multinomial.logpmf", x, n, p)
    (p,) = promote_inexact(p)
    x, n = promote(x, n)
    if x.dtype.kind not in "iu":
        raise ValueError(f"x and n must be of integer type; got x.dtype={x.dtype}, "
                         f"n.dtype={n.dtype}")
    x, n = x.astype(p.dtype), n.astype(p.dtype)
    log_probs = gammaln(n + 1) + jnp.sum(xlogy(x, p) - gammaln(x + 1), axis=-1)
    return jnp.where(jnp.sum(x) == n, log_probs, -np.inf)


def pmf(x: Any, n: Any, p: Any) -> Any:
    """The probability, exp(logpmf)."""
    return jnp.exp(logpmf(x, n, p))
