"""``jax.scipy.stats.dirichlet``: the Dirichlet distribution on the simplex, with
concentrations ``alpha``; the components of ``x`` run along its first axis.

Example:
    >>> import stage1_autodiff as jax
    >>> import numpy as np
    >>> print(jax.scipy.stats.dirichlet.pdf(np.float32([0.25, 0.75]), np.float32([1, 1])))
    1.0

NB: JAX's functions are in ``jax/_src/scipy/stats/dirichlet.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import numpy as jnp
from ...numpy.promotion import promote_inexact
from ..special import gammaln, xlogy

__all__ = ["logpdf", "pdf"]


def _on_simplex(x: Any) -> Any:
    """Positive components summing to 1 (within 1e-6, JAX's tolerance), per column."""
    return jnp.all(x > 0, axis=0) & (jnp.abs(jnp.sum(x, axis=0) - 1) < 1e-6)


def logpdf(x: Any, alpha: Any) -> Any:
    """sum((alpha - 1) log x) - log B(alpha), where log B(alpha) =
    sum(gammaln(alpha)) - gammaln(sum(alpha)); -inf off the simplex.

    Args:
        x: shape (k, ...) or (k - 1, ...): a missing last component is 1 minus the others.
        alpha: shape (k,).

    Example:
        >>> import stage1_autodiff as jax
        >>> import numpy as np
        >>> print(jax.scipy.stats.dirichlet.logpdf(np.float32([0.5]), np.float32([2, 2])))
        0.40546513
    """
    x, alpha = promote_inexact(x, alpha)
    if alpha.ndim != 1:
        raise ValueError(f"`alpha` must be one-dimensional; got alpha.shape={alpha.shape}")
    if x.shape[0] not in (alpha.shape[0], alpha.shape[0] - 1):
        raise ValueError("`x` must have either the same number of entries as `alpha` or one "
                         f"entry fewer; got x.shape={x.shape}, alpha.shape={alpha.shape}")
    if x.shape[0] != alpha.shape[0]:
        x = jnp.concatenate([x, 1 - x.sum(0, keepdims=True)], axis=0)
    log_beta = jnp.sum(gammaln(alpha)) - gammaln(jnp.sum(alpha))
    alpha = alpha.reshape(alpha.shape + (1,) * (x.ndim - 1))  # against x's columns
    log_probs = jnp.sum(xlogy(alpha - 1, x), axis=0) - log_beta
    return jnp.where(_on_simplex(x), log_probs, -np.inf)


def pdf(x: Any, alpha: Any) -> Any:
    """The density, exp(logpdf)."""
    return jnp.exp(logpdf(x, alpha))
