"""Helpers for a job of several processes (``jax.experimental.multihost_utils``).

NB: JAX's are in jax/experimental/multihost_utils.py, built on a jitted all-gather over a
mesh of every process's devices; here they are MPI exchanges (``distributed.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from stage1_autodiff.core import Tracer
from stage1_autodiff.tree_util import (
    broadcast_prefix,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_unflatten,
)

from .. import distributed
from ..arrays import (
    ShardedArray,
    assemble,
    device_put,
    make_array_from_callback,
    make_array_from_process_local_data,
    process_block,
    within,
)
from ..mesh import Mesh
from ..named_sharding import NamedSharding, PartitionSpec


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
    """Waits until every process has reached this call, and checks that each called it with
    the same ``name`` (an ``AssertionError`` on every process otherwise)."""
    names = distributed.allgather(name, "sync_global_devices")  # (the names are checked here)
    if len(set(names)) > 1:
        raise AssertionError(f"sync_global_devices name mismatch: the processes called it "
                             f"with the names {names}, in process order.")


def broadcast_one_to_all(in_tree: Any, is_source: bool | None = None) -> Any:
    """Every leaf as the source process has it (process 0, unless ``is_source`` says which
    processes send), as NumPy arrays on every process. Where several processes send, their
    values add up, as in JAX; where none does, the result is zeros.

    Example:
        >>> import numpy as np
        >>> from stage4_sharding.experimental import multihost_utils
        >>> multihost_utils.broadcast_one_to_all({"step": np.int32(3)})  # one process here
        {'step': array(3, dtype=int32)}
    """
    if distributed.process_count() == 1:
        return tree_map(np.asarray, in_tree)
    sends = distributed.process_index() == 0 if is_source is None else bool(is_source)

    def broadcast(leaf: Any) -> np.ndarray:
        value = np.asarray(leaf)
        parts = distributed.allgather((value.shape, value.dtype, value if sends else None),
                                      "broadcast_one_to_all")
        if len({(shape, dtype) for shape, dtype, _ in parts}) > 1:
            raise ValueError(f"broadcast_one_to_all needs a leaf of one shape and dtype on "
                             f"every process, got {[(s, d.name) for s, d, _ in parts]}.")
        sent = [part for _, _, part in parts if part is not None]
        return np.sum(sent, axis=0, dtype=value.dtype) if sent else np.zeros_like(value)
    return tree_map(broadcast, in_tree)


def assert_equal(in_tree: Any, fail_message: str = "") -> None:
    """Checks that every process holds the same values (and shapes) in ``in_tree``; an
    ``AssertionError`` with ``fail_message`` on every process otherwise. A global array is
    one array on all processes, and always passes."""
    leaves = [np.asarray(leaf) for leaf in tree_leaves(in_tree)
              if not (isinstance(leaf, ShardedArray) and not leaf.is_fully_addressable)]
    every = distributed.allgather(leaves, "assert_equal")
    differ = [i for i, theirs in enumerate(every)
              if len(theirs) != len(leaves) or not all(
                  a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
                  for a, b in zip(theirs, leaves))]
    if differ:
        raise AssertionError(f"{fail_message}. The processes {differ} hold other values than "
                             f"process {distributed.process_index()}: {leaves}.")


def host_local_array_to_global_array(local_inputs: Any, global_mesh: Mesh, pspecs: Any
                                     ) -> Any:
    """Each leaf, this process's part of a global array laid out as its ``PartitionSpec``
    says on ``global_mesh``, as that global array (``make_array_from_process_local_data``):
    a dim split over the processes is as many times longer. ``pspecs`` is a prefix of the
    tree; a global array passes as it is. (Eager only: under ``jit`` the program's inputs
    are global already.)"""
    def to_global(leaf: Any, spec: Any) -> Any:
        if isinstance(leaf, ShardedArray) and not leaf.is_fully_addressable:
            return leaf
        sharding = NamedSharding(global_mesh, _spec(spec, "host_local_array_to_global_array"))
        return make_array_from_process_local_data(sharding, np.asarray(leaf))
    return _per_leaf(to_global, local_inputs, pspecs, "host_local_array_to_global_array")


def global_array_to_host_local_array(global_inputs: Any, global_mesh: Mesh, pspecs: Any
                                     ) -> Any:
    """The inverse: each global array's part on this process's devices, laid out as its
    ``PartitionSpec`` says on the local mesh (``global_mesh.local_mesh``). An array that this
    process holds whole passes as it is."""
    def to_local(leaf: Any, spec: Any) -> Any:
        if not isinstance(leaf, ShardedArray) or leaf.is_fully_addressable:
            return leaf
        spec = _spec(spec, "global_array_to_host_local_array")
        leaf = device_put(leaf, NamedSharding(global_mesh, spec))  # (as it is, if it is)
        start, stop = process_block(leaf.sharding, leaf.shape)
        part = np.empty([b - a for a, b in zip(start, stop)], leaf.dtype)
        indices = leaf.sharding.devices_indices_map(leaf.shape)
        for device, block in leaf._shards.items():
            part[within(indices[device], start, leaf.shape)] = block
        local = NamedSharding(global_mesh.local_mesh, spec)
        return make_array_from_callback(part.shape, local, lambda index: part[index])
    return _per_leaf(to_local, global_inputs, pspecs, "global_array_to_host_local_array")


def _spec(spec: Any, fun_name: str) -> PartitionSpec:
    if not isinstance(spec, PartitionSpec):
        raise ValueError(f"{fun_name} takes a PartitionSpec for each leaf, got {spec!r}; for "
                         f"a replicated value, pass PartitionSpec().")
    return spec


def _per_leaf(fun: Any, tree: Any, pspecs: Any, fun_name: str) -> Any:
    leaves, treedef = tree_flatten(tree)
    if any(isinstance(leaf, Tracer) for leaf in leaves):
        raise TypeError(f"{fun_name} moves arrays between this process "
                        f"and the job, which a traced program cannot do here: call it outside "
                        f"jit (and the other transformations), on the arrays going into or "
                        f"coming out of the jitted step.")
    specs = broadcast_prefix(pspecs, tree, lambda x: x is None or isinstance(x, PartitionSpec))
    return tree_unflatten(treedef, [fun(leaf, spec) for leaf, spec in zip(leaves, specs)])
