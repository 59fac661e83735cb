"""``jax.scipy.special``: special functions, each NumPy-style (promoting integers to floats,
broadcasting) over the primitives of ``lax`` (``special.py``) or a short composition.

Example:
    >>> import stage1_autodiff as jax
    >>> print(jax.scipy.special.logsumexp(jax.numpy.array([0.0, 0.0])))
    0.6931472

``logsumexp`` is ``jax.nn.logsumexp`` (written in ``nn.py``), as in JAX.

NB: JAX's functions are in ``jax/_src/scipy/special.py``; ``logsumexp`` in
``jax/_src/ops/special.py``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import numpy as jnp
from .. import prims as lax
from ..core import get_aval
from ..nn import logsumexp
from ..numpy.promotion import convert, promote_and_broadcast, promote_inexact

__all__ = ["digamma", "entr", "erf", "erfc", "erfinv", "expit", "gammaln", "log_ndtr",
           "logit", "logsumexp", "ndtr", "ndtri", "polygamma", "xlog1py", "xlogy"]

def erf(x: Any) -> Any:
    """The error function, 2/sqrt(pi) times the integral of exp(-t**2) from 0 to x."""
    (x,) = promote_inexact(x)
    return lax.erf(x)


def erfc(x: Any) -> Any:
    """1 - erf(x), without the cancellation for large x."""
    (x,) = promote_inexact(x)
    return lax.erfc(x)


def erfinv(x: Any) -> Any:
    """The inverse of erf on (-1, 1); +-inf at +-1."""
    (x,) = promote_inexact(x)
    return lax.erf_inv(x)


def gammaln(x: Any) -> Any:
    """log|Gamma(x)|; +inf at the poles (0 and the negative integers)."""
    (x,) = promote_inexact(x)
    return lax.lgamma(x)


def digamma(x: Any) -> Any:
    """psi(x), the derivative of gammaln; NaN at the poles."""
    (x,) = promote_inexact(x)
    return lax.digamma(x)


def polygamma(n: Any, x: Any) -> Any:
    """psi^(n)(x), the n-th derivative of digamma; ``n`` must be an integer array or int.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.special.polygamma(1, 1.0))  # pi**2 / 6
        1.644934
    """
    if get_aval(n).dtype.kind not in "iu":
        raise ValueError(f"Argument `n` to polygamma must be of integer type. Got dtype "
                         f"{get_aval(n).dtype}.")
    n, x = promote_and_broadcast("polygamma", n, x, inexact=True, keep_scalars=False)
    return lax.polygamma(n, x)


def expit(x: Any) -> Any:
    """The logistic sigmoid 1 / (1 + exp(-x))."""
    (x,) = promote_inexact(x)
    return lax.logistic(x)


def logit(x: Any) -> Any:
    """log(x / (1 - x)), the inverse of expit."""
    (x,) = promote_inexact(x)
    return jnp.log(x / (1 - x))


def _times_safe_log(x: Any, y: Any, log_y: Any) -> Any:
    """x * log_y, taken as 0 where x is 0 even if log_y is inf or NaN (y = 0, y < 0), but
    NaN for a NaN y, as JAX's. The derivative in x stays log_y where it is finite; in y,
    x / y (NaN only at (0, 0))."""
    zero_times_any = (x == 0) & ~jnp.isfinite(log_y) & ~jnp.isnan(y)
    return x * jnp.where(zero_times_any, jnp.zeros_like(log_y), log_y)


def xlogy(x: Any, y: Any) -> Any:
    """x * log(y), and 0 where x is 0.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.special.xlogy(0.0, 0.0))
        0.0
    """
    x, y = promote_inexact(x, y)
    return _times_safe_log(x, y, jnp.log(y))


def xlog1py(x: Any, y: Any) -> Any:
    """x * log(1 + y), and 0 where x is 0."""
    x, y = promote_inexact(x, y)
    return _times_safe_log(x, y, jnp.log1p(y))


def entr(x: Any) -> Any:
    """-x log x for x > 0, 0 at 0, -inf below 0 (the summand of an entropy)."""
    (x,) = promote_inexact(x)
    return jnp.where(x < 0, -np.inf, -xlogy(x, x))


# ------------------------------------------------------------------------------------------
# The standard normal's CDF and its inverse (jax.scipy.stats.norm builds on these)
# ------------------------------------------------------------------------------------------


def _strong(x: Any) -> Any:
    """ndtr, ndtri and log_ndtr give a strongly typed result even for a Python float, as
    JAX's (whose constants are arrays of the input's dtype)."""
    return convert(x, x.dtype, weak_type=False)


def ndtr(x: Any) -> Any:
    """The standard normal CDF, erfc(-x / sqrt(2)) / 2 (no cancellation in the left tail)."""
    (x,) = promote_inexact(x)
    return _strong(0.5 * lax.erfc(-x * (1 / math.sqrt(2))))


def ndtri(p: Any) -> Any:
    """The inverse of ndtr; -inf at 0, +inf at 1. On the lower half (the upper one by
    symmetry, 1 - p being exact there) a first guess sqrt(2) erfinv(2p - 1), which loses
    precision in the tail where 2p - 1 rounds, then three Newton steps on
    log_ndtr(x) = log(p), a nearly straight line in the tail.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.special.ndtri(0.975))
        1.9599645

    NB: JAX evaluates Cephes' rational approximations instead."""
    (p,) = promote_inexact(p)
    upper = p > 0.5
    q = jnp.where(upper, 1 - p, p)
    solvable = q > 0  # and not NaN
    q = jnp.where(solvable, q, 0.5)
    guess = math.sqrt(2) * lax.erf_inv(2 * q - 1)  # -inf once 2q - 1 rounds to -1:
    x = jnp.where(jnp.isfinite(guess), guess, -jnp.sqrt(-2 * jnp.log(q)))  # then the tail's
    for _ in range(3):
        log_cdf = log_ndtr(x)
        log_pdf = -0.5 * x * x - 0.5 * math.log(2 * math.pi)
        x = x - (log_cdf - jnp.log(q)) * jnp.exp(log_cdf - log_pdf)
    x = jnp.where(solvable, x, jnp.where(p == 0, -np.inf, jnp.where(p == 1, -np.inf, np.nan)))
    return _strong(jnp.where(upper, -x, x))


def log_ndtr(x: Any) -> Any:
    """log(ndtr(x)), accurate in both tails: log1p(-ndtr(-x)) on the right, and on the far
    left (below -20 in float64, -10 in float32, where ndtr underflows) the asymptotic
    series log(phi(x) / -x * (1 - 1/x^2 + 3/x^4 - 15/x^6)).

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.special.log_ndtr(-40.0))
        -804.60846
    """
    (x,) = promote_inexact(x)
    lower = -20.0 if x.dtype == np.float64 else -10.0
    far_left, right = x < lower, x > 6
    x_left = jnp.where(far_left, x, lower)  # each branch sees only inputs of its own side
    x_mid = jnp.where(far_left | right, 0.0, x)
    x_right = jnp.where(right, x, 6.0)
    inv_x2 = 1 / (x_left * x_left)
    series = 1 + inv_x2 * (-1 + inv_x2 * (3 + inv_x2 * -15))
    log_left = (-0.5 * x_left * x_left - jnp.log(-x_left) - 0.5 * math.log(2 * math.pi)
                + jnp.log(series))
    return _strong(jnp.where(far_left, log_left, jnp.where(
        right, jnp.log1p(-ndtr(-x_right)), jnp.log(ndtr(x_mid)))))
