"""``jax.scipy``: the parts of SciPy's API that JAX provides, on this library's primitives."""

from . import fft, integrate, interpolate, linalg, ndimage, optimize, signal, special, stats

__all__ = ["fft", "integrate", "interpolate", "linalg", "ndimage", "optimize", "signal",
           "special", "stats"]
