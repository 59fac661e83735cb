"""``jax.scipy.stats.norm``: the normal distribution.

NB: JAX's functions are in ``jax/_src/scipy/stats/norm.py``.
"""

from __future__ import annotations

__all__: list[str] = []
