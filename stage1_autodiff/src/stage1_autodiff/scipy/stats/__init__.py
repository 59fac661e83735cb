"""``jax.scipy.stats``: distributions, each a module of functions as in JAX."""

from . import norm

__all__ = ["norm"]
