"""``jax.scipy.integrate``: ``trapezoid``, the same function as ``jnp.trapezoid``."""

from ..numpy.signals import trapezoid

__all__ = ["trapezoid"]
