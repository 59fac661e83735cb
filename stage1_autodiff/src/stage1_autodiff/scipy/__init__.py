"""``jax.scipy``: the parts of SciPy's API that JAX provides, on this library's primitives."""

from . import linalg, signal, special, stats

__all__ = ["linalg", "signal", "special", "stats"]
