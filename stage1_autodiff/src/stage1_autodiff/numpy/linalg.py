"""``jax.numpy.linalg``: linear algebra on the primitives of ``stage1_autodiff.linalg``.

NB: JAX's functions are in ``jax/_src/numpy/linalg.py``, on the primitives of
``jax/_src/lax/linalg.py``.
"""

from __future__ import annotations

__all__: list[str] = []
