"""``jax.scipy.linalg``: Cholesky and triangular solves.

NB: JAX's functions are in ``jax/_src/scipy/linalg.py``.
"""

from __future__ import annotations

__all__: list[str] = []
