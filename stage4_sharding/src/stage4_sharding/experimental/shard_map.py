"""``jax.experimental.shard_map``: where ``shard_map`` lived before it became
``jax.shard_map``. Older programs still import it from here; JAX 0.10.2 keeps it, deprecated,
with its old signature (the mesh and the specs positional, ``check_rep`` for ``check_vma``)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from ..mesh import Mesh
from ..shard_map import shard_map as _shard_map

__all__ = ["shard_map"]


def shard_map(f: Callable, mesh: Mesh, in_specs: Any, out_specs: Any,
              check_rep: bool = True) -> Callable:
    """``jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
    check_vma=check_rep)``, with a ``DeprecationWarning`` as in JAX."""
    warnings.warn("jax.experimental.shard_map is deprecated: use jax.shard_map, whose mesh "
                  "and specs are keyword arguments (check_rep is now check_vma).",
                  DeprecationWarning, stacklevel=2)
    return _shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                      check_vma=check_rep)
