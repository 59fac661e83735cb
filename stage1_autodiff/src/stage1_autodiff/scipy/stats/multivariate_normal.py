"""``jax.scipy.stats.multivariate_normal``: the normal distribution in n dimensions with mean
``mean`` and covariance ``cov`` (a matrix, a scalar times the identity, or, for a scalar
mean, a variance).

Example:
    >>> import stage1_autodiff as jax
    >>> import numpy as np
    >>> print(jax.scipy.stats.multivariate_normal.logpdf(np.zeros(2), np.zeros(2), np.eye(2)))
    -1.837877

NB: JAX's functions are in ``jax/_src/scipy/stats/multivariate_normal.py``.
"""

from __future__ import annotations

import math
from typing import Any

from ... import numpy as jnp
from ...numpy.promotion import promote_inexact
from ..linalg import solve_triangular

__all__ = ["logpdf", "pdf"]


def _whiten(cholesky_factor: Any, diff: Any) -> Any:
    """L^-1 (x - mean), so that its squared norm is the Mahalanobis distance."""
    return solve_triangular(cholesky_factor, diff, lower=True)


def logpdf(x: Any, mean: Any, cov: Any, allow_singular: None = None) -> Any:
    """-|L^-1 (x - mean)|^2 / 2 - n log(2 pi) / 2 - sum(log(diag(L))) for cov = L L^T, over
    the last axis of ``x`` and ``mean``, batched over the others (and over a batch of
    covariance matrices).

    Args:
        x: points, shape (..., n) (or any shape for a scalar mean).
        mean: the mean, shape (..., n), or a scalar for the one-dimensional distribution.
        cov: (..., n, n) matrices, or a scalar: cov times the identity.
        allow_singular: must be None; JAX 0.10.2 raises NotImplementedError otherwise,
            and so do we.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.stats.multivariate_normal.logpdf(1.0, 0.0, 1.0))
        -1.4189385

    NB: a singular ``cov`` gives NaN (the Cholesky factorization fails), as in JAX.
    """
    if allow_singular is not None:
        raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf")
    x, mean, cov = promote_inexact(x, mean, cov)
    if mean.ndim == 0:
        return -0.5 * jnp.square(x - mean) / cov - 0.5 * (math.log(2 * math.pi) + jnp.log(cov))
    n = mean.shape[-1]
    diff = x - mean
    if cov.ndim == 0:
        squared = jnp.einsum("...i,...i->...", diff, diff) / cov
        return -0.5 * squared - n / 2 * (math.log(2 * math.pi) + jnp.log(cov))
    if cov.ndim < 2 or cov.shape[-2:] != (n, n):
        raise ValueError("multivariate_normal.logpdf got incompatible shapes")
    factor = jnp.linalg.cholesky(cov)
    y = jnp.vectorize(_whiten, signature="(n,n),(n)->(n)")(factor, diff)
    log_det_half = jnp.log(jnp.diagonal(factor, axis1=-2, axis2=-1)).sum(-1)
    return -0.5 * jnp.einsum("...i,...i->...", y, y) - n / 2 * math.log(2 * math.pi) - log_det_half


def pdf(x: Any, mean: Any, cov: Any) -> Any:
    """The density, exp(logpdf)."""
    return jnp.exp(logpdf(x, mean, cov))
