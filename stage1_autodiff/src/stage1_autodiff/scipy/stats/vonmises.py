"""``jax.scipy.stats.vonmises``: the von Mises distribution on the circle, centred on 0 with
concentration ``kappa``: density exp(kappa cos x) / (2 pi I0(kappa)).

Example:
    >>> import stage1_autodiff as jax
    >>> print(jax.scipy.stats.vonmises.pdf(0.0, 1e-6))  # nearly uniform: 1 / (2 pi)
    0.15915512

NB: JAX's functions are in ``jax/_src/scipy/stats/vonmises.py``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import numpy as jnp
from ..special import i0e
from ._util import promote_args_inexact

__all__ = ["logpdf", "pdf"]


def logpdf(x: Any, kappa: Any) -> Any:
    """kappa (cos x - 1) - log(2 pi i0e(kappa)), where i0e(kappa) = exp(-kappa) I0(kappa)
    keeps exp(kappa) from overflowing; NaN unless kappa > 0.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.scipy.stats.vonmises.logpdf(3.0, 0.0))
        nan
    """
    x, kappa = promote_args_inexact("vonmises.logpdf", x, kappa)
    log_density = kappa * (jnp.cos(x) - 1) - jnp.log(2 * math.pi * i0e(kappa))
    return jnp.where(kappa > 0, log_density, np.nan)


def pdf(x: Any, kappa: Any) -> Any:
    """The density, exp(logpdf)."""
    return jnp.exp(logpdf(x, kappa))
