"""``jax.lax``: stage 1's primitive wrappers, plus structured control flow (``cond``,
``switch``, ``while_loop``, ``fori_loop``, ``scan``, ``map``), which needs jaxprs."""

from __future__ import annotations

# Private names: stages 3 and 4 take this module with ``import *``, which must not export them.
from collections.abc import Callable as _Callable
from typing import Any as _Any

from stage1_autodiff.lax import *  # noqa: F403

from .control_flow import cond, fori_loop, scan, switch, while_loop  # noqa: F401


# --8<-- [start:map]
def map(f: _Callable[[_Any], _Any], xs: _Any) -> _Any:
    """``f`` applied to each slice of ``xs`` along its leading dim, the results stacked: what
    ``jnp.stack([f(x) for x in xs])`` gives, but as one loop, a ``scan`` whose carry is empty.
    ``xs`` and the results may be pytrees.

    Example:
        >>> import stage2_jit as jax, stage2_jit.numpy as jnp
        >>> jax.lax.map(lambda x: x * x, jnp.arange(4.0))
        Array([0., 1., 4., 9.], dtype=float32)
    """
    # --8<-- [start:task2_10]
    def body(carry, x):
        return carry, f(x)

    _, ys = scan(body, (), xs)
    return ys
    # --8<-- [end:task2_10]
# --8<-- [end:map]
