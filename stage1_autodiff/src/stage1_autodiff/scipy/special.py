"""``jax.scipy.special``: special functions.

NB: JAX's functions are in ``jax/_src/scipy/special.py``.
"""

from __future__ import annotations

__all__: list[str] = []
