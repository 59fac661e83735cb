"""``jax.numpy.fft``: discrete Fourier transforms.

NB: JAX's functions are in ``jax/_src/numpy/fft.py``, on the ``fft`` primitive of
``jax/_src/lax/fft.py``.
"""

from __future__ import annotations

__all__: list[str] = []
