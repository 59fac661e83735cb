"""Helpers for a job of several processes (``jax.experimental.multihost_utils``).

NB: JAX's are in jax/experimental/multihost_utils.py, built on a jitted all-gather over a
mesh of every process's devices; here they are MPI exchanges (``distributed.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from stage1_autodiff.tree_util import tree_map

from .. import distributed
from ..arrays import ShardedArray, assemble


def process_allgather(in_tree: Any, tiled: bool = False) -> Any:
    """Every leaf gathered from all processes, as NumPy arrays. A global array that this
    process does not hold whole becomes the whole global array (with ``tiled=True``, as
    JAX requires); any other leaf (this process's own value) is stacked with the other
    processes' along a new first axis, or concatenated along the first axis with
    ``tiled=True`` (a scalar is always stacked).

    Example:
        >>> import numpy as np
        >>> from stage4_sharding.experimental import multihost_utils
        >>> multihost_utils.process_allgather(np.arange(3)).shape  # one process here
        (1, 3)
    """
    def gather(leaf: Any) -> np.ndarray:
        if isinstance(leaf, ShardedArray) and not leaf.is_fully_addressable:
            if not tiled:
                raise ValueError("Gathering global non-fully-addressable arrays only "
                                 "supports tiled=True")
            shards: dict = {}
            for part in distributed.allgather(dict(leaf._shards), "process_allgather"):
                shards.update(part)
            return assemble(shards, leaf.sharding, leaf.aval)
        value = np.asarray(leaf)
        if value.ndim == 0 or not tiled:
            value = value[None]
        return np.concatenate(distributed.allgather(value, "process_allgather"))
    return tree_map(gather, in_tree)


def sync_global_devices(name: str) -> None:
    """Waits until every process has reached this call (with the same ``name``)."""
    distributed.allgather(name, f"sync_global_devices({name!r})")
