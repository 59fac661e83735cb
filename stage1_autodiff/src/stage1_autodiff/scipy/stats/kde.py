"""``jax.scipy.stats.gaussian_kde``: a kernel density estimate, a weighted sum of normal
densities centred on the data points, all with one covariance (the data's covariance times
a bandwidth factor squared).

Example:
    >>> import stage1_autodiff as jax
    >>> import numpy as np
    >>> kde = jax.scipy.stats.gaussian_kde(np.float32([-1.0, 0.0, 1.0]))
    >>> print(kde.integrate_box_1d(-np.inf, np.inf))
    1.0

NB: JAX's class is in ``jax/_src/scipy/stats/kde.py``; it maps its kernel over points with
vmap, where we broadcast (points x data x dimensions).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ... import numpy as jnp
from ... import random
from ...numpy.promotion import promote_inexact
from ...tree_util import register_pytree_node
from .. import linalg, special
from ._util import check_arraylike

__all__ = ["gaussian_kde"]


def _bandwidth_factor(kde: gaussian_kde, bw_method: Any) -> Any:
    """Scott's rule n_eff^(-1/(d+4)), Silverman's, a given scalar, or a callable's answer."""
    d = kde.d
    if bw_method is None or (isinstance(bw_method, str) and bw_method == "scott"):
        return jnp.power(kde.neff, -1.0 / (d + 4))
    if isinstance(bw_method, str) and bw_method == "silverman":
        return jnp.power(kde.neff * (d + 2) / 4.0, -1.0 / (d + 4))
    if jnp.isscalar(bw_method) and not isinstance(bw_method, str):
        return bw_method
    if callable(bw_method):
        return bw_method(kde)
    raise ValueError("`bw_method` should be 'scott', 'silverman', a scalar, or a callable.")


class gaussian_kde:  # noqa: N801 (JAX's and SciPy's name)
    """A Gaussian kernel density estimate of ``dataset``, shape (d, n) (or (n,) for d = 1),
    with optional ``weights`` (normalized to sum to 1). A pytree: its arrays are leaves, so
    it passes through jit and grad.

    Example:
        >>> import stage1_autodiff as jax
        >>> import numpy as np
        >>> kde = jax.scipy.stats.gaussian_kde(np.float32([0.0, 2.0]), bw_method=1.0)
        >>> print(kde.pdf(np.float32([1.0])))
        [0.21969567]
    """

    neff: Any
    dataset: Any
    weights: Any
    covariance: Any
    inv_cov: Any

    def __init__(self, dataset: Any, bw_method: str | float | Callable | None = None,
                 weights: Any = None) -> None:
        check_arraylike("gaussian_kde", dataset)
        dataset = jnp.atleast_2d(dataset)
        if jnp.iscomplexobj(dataset):
            raise NotImplementedError("gaussian_kde does not support complex data")
        if not dataset.size > 1:
            raise ValueError("`dataset` input should have multiple elements.")
        n = dataset.shape[1]
        if weights is None:
            (dataset,) = promote_inexact(dataset)
            weights = jnp.full(n, 1.0 / n, dtype=dataset.dtype)
        else:
            check_arraylike("gaussian_kde", weights)
            dataset, weights = promote_inexact(dataset, weights)
            weights = jnp.atleast_1d(weights)
            weights = weights / jnp.sum(weights)
            if weights.ndim != 1:
                raise ValueError("`weights` input should be one-dimensional.")
            if len(weights) != n:
                raise ValueError("`weights` input should be of length n")
        self.dataset, self.weights = dataset, weights
        self.neff = 1 / jnp.sum(weights ** 2)
        factor = _bandwidth_factor(self, bw_method)
        data_cov = jnp.atleast_2d(jnp.cov(dataset, rowvar=True, bias=False, aweights=weights))
        self.covariance = data_cov * factor ** 2
        self.inv_cov = jnp.linalg.inv(data_cov) / factor ** 2

    @property
    def d(self) -> int:
        """The number of dimensions."""
        return self.dataset.shape[0]

    @property
    def n(self) -> int:
        """The number of data points."""
        return self.dataset.shape[1]

    def _reshape_points(self, points: Any) -> Any:
        """Points as (d, m); a single point may come as (d,) or (1, d)."""
        if jnp.iscomplexobj(points):
            raise NotImplementedError("gaussian_kde does not support complex coordinates")
        points = jnp.atleast_2d(points)
        d, m = points.shape
        if d != self.d:
            if d == 1 and m == self.d:
                return jnp.reshape(points, (self.d, 1))
            raise ValueError(f"points have dimension {d}, dataset has dimension {self.d}")
        return points

    def _log_kernels(self, points: Any) -> Any:
        """log(w_j N(x_i; data_j, covariance)), shape (m, n), in coordinates whitened by the
        Cholesky factor of inv_cov, where the covariance is the identity."""
        points, dataset, weights, precision = promote_inexact(
            self._reshape_points(points), self.dataset, self.weights, self.inv_cov)
        whitening = jnp.linalg.cholesky(precision)
        data = jnp.dot(dataset.T, whitening)
        xi = jnp.dot(points.T, whitening)
        log_norm = (jnp.sum(jnp.log(jnp.diag(whitening)))
                    - 0.5 * self.d * math.log(2 * math.pi))
        squared = jnp.sum(jnp.square(data[None, :, :] - xi[:, None, :]), axis=-1)
        return jnp.log(weights)[None, :] + (log_norm - 0.5 * squared)

    def evaluate(self, points: Any) -> Any:
        """The density at ``points`` (d, m), shape (m,)."""
        check_arraylike("evaluate", points)
        return jnp.sum(jnp.exp(self._log_kernels(points)), axis=1)

    def __call__(self, points: Any) -> Any:
        return self.evaluate(points)

    def pdf(self, x: Any) -> Any:
        """The density, ``evaluate``."""
        return self.evaluate(x)

    def logpdf(self, x: Any) -> Any:
        """The log density, a logsumexp over the data's kernels."""
        check_arraylike("logpdf", x)
        return special.logsumexp(self._log_kernels(x), axis=1)

    def _convolved_mass(self, chol: Any, dataset: Any, weights: Any, mean: Any) -> Any:
        """sum_j w_j N(mean; data_j, C), with C = L L^T and L its Cholesky factor."""
        norm = 1.0 / (math.sqrt(2 * math.pi) ** self.d * jnp.prod(jnp.diag(chol[0])))
        diff = dataset - mean[:, None]
        mahalanobis = jnp.sum(diff * linalg.cho_solve(chol, diff), axis=0)
        return norm * jnp.sum(jnp.exp(-0.5 * mahalanobis) * weights)

    def integrate_gaussian(self, mean: Any, cov: Any) -> Any:
        """The integral of the estimate times a normal density N(mean, cov)."""
        mean = jnp.atleast_1d(jnp.squeeze(mean))
        cov = jnp.atleast_2d(cov)
        if mean.shape != (self.d,):
            raise ValueError(f"mean does not have dimension {self.d}")
        if cov.shape != (self.d, self.d):
            raise ValueError(f"covariance does not have dimension {self.d}")
        chol = linalg.cho_factor(self.covariance + cov)
        return self._convolved_mass(chol, self.dataset, self.weights, mean)

    def integrate_box_1d(self, low: Any, high: Any) -> Any:
        """The mass between the scalars ``low`` and ``high`` (one-dimensional data only)."""
        if self.d != 1:
            raise ValueError("integrate_box_1d() only handles 1D pdfs")
        if np.ndim(low) != 0 or np.ndim(high) != 0:
            raise ValueError("the limits of integration in integrate_box_1d must be scalars")
        sigma = jnp.squeeze(jnp.sqrt(self.covariance))
        low = jnp.squeeze((low - self.dataset) / sigma)
        high = jnp.squeeze((high - self.dataset) / sigma)
        return jnp.sum(self.weights * (special.ndtr(high) - special.ndtr(low)))

    def integrate_kde(self, other: gaussian_kde) -> Any:
        """The integral of the product of two estimates of the same dimension."""
        if other.d != self.d:
            raise ValueError("KDEs are not the same dimensionality")
        chol = linalg.cho_factor(self.covariance + other.covariance)
        small, large = (self, other) if self.n < other.n else (other, self)
        masses = [self._convolved_mass(chol, large.dataset, large.weights, small.dataset[:, j])
                  for j in range(small.n)]
        return jnp.sum(jnp.stack(masses) * small.weights)

    def resample(self, key: Any, shape: tuple[int, ...] = ()) -> Any:
        """Draws of shape (d, *shape): a data point chosen by weight, plus normal noise."""
        ind_key, eps_key = random.split(key)
        ind = random.choice(ind_key, self.n, shape=shape, p=self.weights)
        zero = jnp.zeros(self.d, self.covariance.dtype)
        eps = random.multivariate_normal(eps_key, zero, self.covariance, shape=shape,
                                         dtype=self.dataset.dtype).T
        return self.dataset[:, ind] + eps

    def integrate_box(self, low_bounds: Any, high_bounds: Any, maxpts: Any = None) -> Any:
        """Refused, as in JAX: only ``integrate_box_1d`` is supported."""
        raise NotImplementedError("only 1D box integrations are supported; use "
                                  "`integrate_box_1d`")

    def set_bandwidth(self, bw_method: Any = None) -> None:
        """Refused, as in JAX: the estimate is immutable."""
        raise NotImplementedError("dynamically changing the bandwidth method is not supported")


_FIELDS = ("neff", "dataset", "weights", "covariance", "inv_cov")


def _kde_flatten(kde: gaussian_kde) -> tuple[tuple, None]:
    return tuple(getattr(kde, name) for name in _FIELDS), None


def _kde_unflatten(aux_data: None, children: Any) -> gaussian_kde:
    kde = gaussian_kde.__new__(gaussian_kde)
    for name, value in zip(_FIELDS, children, strict=True):
        setattr(kde, name, value)
    return kde


register_pytree_node(gaussian_kde, _kde_flatten, _kde_unflatten)
