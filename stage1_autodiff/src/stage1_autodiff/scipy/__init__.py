"""``jax.scipy``: the parts of SciPy's API that JAX provides, on this library's primitives."""

from . import fft, integrate, linalg, signal, special, stats

__all__ = ["fft", "integrate", "linalg", "signal", "special", "stats"]
