"""``jax.lax``: stage 1's primitive wrappers, plus structured control flow (``cond``,
``switch``, ``while_loop``, ``fori_loop``, ``scan``, ``map``), which needs jaxprs."""

from __future__ import annotations

import sys as _sys

# Private names: stages 3 and 4 take this module with ``import *``, which must not export them.
from collections.abc import Callable as _Callable
from typing import Any as _Any

from stage1_autodiff.lax import *  # noqa: F403

from .control_flow import (  # noqa: F401
    cond,
    cond_p,
    fori_loop,
    scan,
    scan_p,
    switch,
    while_loop,
    while_p,
)
from .solves import custom_linear_solve, custom_root  # noqa: F401


# --8<-- [start:map]
def map(f: _Callable[[_Any], _Any], xs: _Any, *, batch_size: int | None = None) -> _Any:
    """``f`` applied to each slice of ``xs`` along its leading dim, the results stacked: what
    ``jnp.stack([f(x) for x in xs])`` gives, but as one loop, a ``scan`` whose carry is empty.
    ``xs`` and the results may be pytrees. With ``batch_size``, each step takes that many
    slices (see :func:`_map_batched`).

    Example:
        >>> import stage2_jit as jax, stage2_jit.numpy as jnp
        >>> jax.lax.map(lambda x: x * x, jnp.arange(4.0))
        Array([0., 1., 4., 9.], dtype=float32)
    """
    if batch_size is not None:
        return _map_batched(f, xs, batch_size)
    # --8<-- [start:task2_10]
    def body(carry, x):
        return carry, f(x)

    _, ys = scan(body, (), xs)
    return ys
    # --8<-- [end:task2_10]
# --8<-- [end:map]


def _map_batched(f: _Callable[[_Any], _Any], xs: _Any, batch_size: int) -> _Any:
    """``map`` taking ``batch_size`` slices a step (fewer steps, each holding more at once);
    the slices left over are a last, shorter step. Values are ``map``'s.

    NB: JAX's vmaps ``f`` over each batch; stage 2 has no vmap yet, so a step applies ``f``
    to its slices one by one, unrolled in the step's program."""
    from stage1_autodiff.tree_util import tree_leaves, tree_map

    from stage1_autodiff import numpy as _jnp

    if int(batch_size) != batch_size or batch_size < 1:
        raise ValueError(f"lax.map: batch_size must be a positive int, got {batch_size!r}.")
    n = tree_leaves(xs)[0].shape[0]
    whole = n - n % batch_size

    def step(carry, batch):
        count = tree_leaves(batch)[0].shape[0]
        ys = [f(tree_map(lambda b, k=k: b[k], batch)) for k in range(count)]
        return carry, tree_map(lambda *y: _jnp.stack(y), *ys)

    def unbatch(y):
        return y.reshape((-1,) + y.shape[2:])
    parts = []
    if whole:
        batches = tree_map(lambda x: x[:whole].reshape((whole // batch_size, batch_size)
                                                       + x.shape[1:]), xs)
        parts.append(tree_map(unbatch, scan(step, (), batches)[1]))
    if whole < n:
        parts.append(step((), tree_map(lambda x: x[whole:], xs))[1])
    return parts[0] if len(parts) == 1 else tree_map(
        lambda *p: _jnp.concatenate(p), *parts)

_sys.modules[f"{__name__}.linalg"] = linalg  # noqa: F405 (``import <stage>.lax.linalg``)
