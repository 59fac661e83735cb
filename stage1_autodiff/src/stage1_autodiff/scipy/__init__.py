"""``jax.scipy``: the parts of SciPy's API that JAX provides, on this library's primitives."""

from . import linalg, special, stats

__all__ = ["linalg", "special", "stats"]
