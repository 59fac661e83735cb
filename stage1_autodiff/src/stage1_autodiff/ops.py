"""``jax.ops``: reductions over segments. ``segment_sum(data, segment_ids, n)`` adds each row
``data[i]`` into row ``segment_ids[i]`` of an ``n``-row result, as a graph network sums the
messages arriving at each node. Each is one scatter (``lax.scatter_add``, ``scatter_max``...)
into an array of the reduction's identity, so a segment nothing lands in keeps it (0 for a sum,
-inf for a max of floats), and each is differentiated by its scatter's rule.

A segment id outside ``[0, num_segments)`` is dropped (``mode`` can say otherwise), negative
ones included: the ids are never wrapped around as NumPy indices are.

Example:
    >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
    >>> jax.ops.segment_sum(jnp.array([1.0, 2.0, 3.0]), jnp.array([0, 2, 0]), 3)
    Array([4., 0., 2.], dtype=float32)

NB: JAX's are in ``jax/_src/ops/scatter.py``, built the same way on its scatters.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from . import dtypes, lax
from .core import get_aval
from .errors import ConcretizationTypeError
from .numpy.promotion import as_value
from .slicing import GatherScatterMode, ScatterDimensionNumbers

__all__ = ["segment_max", "segment_min", "segment_prod", "segment_sum"]


def _segment(name: str, scatter, identity, data: Any, segment_ids: Any,
             num_segments: int | None, mode: Any) -> Any:
    data, ids = as_value(data), as_value(segment_ids)
    shape, ids_aval = get_aval(data).shape, get_aval(ids)
    if not dtypes.is_int(ids_aval.dtype) or ids_aval.ndim != 1:
        raise TypeError(f"{name}: segment_ids must be a 1-D array of integers, got "
                        f"{ids_aval.str_short()}.")
    if not shape or shape[0] != ids_aval.shape[0]:
        raise ValueError(f"{name}: data's leading dim must have one entry per segment id: "
                         f"data has shape {shape}, segment_ids {ids_aval.shape}.")
    num_segments = _num_segments(name, ids, num_segments)
    out = lax.full((num_segments,) + shape[1:], identity(get_aval(data).dtype),
                   get_aval(data).dtype, get_aval(data).weak_type)
    rows = ScatterDimensionNumbers(update_window_dims=tuple(range(1, len(shape))),
                                   inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    mode = GatherScatterMode.FILL_OR_DROP if mode is None else mode
    return scatter(out, lax.expand_dims(ids, (1,)), data, rows, mode=mode)


def _num_segments(name: str, ids: Any, num_segments: int | None) -> int:
    """The number of segments, as given, or one more than the largest id (which needs the
    ids' values: under ``jit``, pass ``num_segments``)."""
    if num_segments is not None:
        return operator.index(num_segments)
    try:
        values = np.asarray(ids._concrete_value(name))
    except ConcretizationTypeError as err:
        raise ConcretizationTypeError(
            f"{name}: num_segments is None, so the number of segments is the largest segment "
            f"id plus one, which a traced function does not know. Pass num_segments (a Python "
            f"int) instead.") from err
    if values.size == 0:
        raise ValueError(f"{name}: num_segments is None and segment_ids is empty: pass "
                         f"num_segments.")
    return int(values.max()) + 1


def segment_sum(data: Any, segment_ids: Any, num_segments: int | None = None,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                bucket_size: int | None = None, mode: Any = None) -> Any:
    """The sum of the rows of ``data`` in each segment (0 for an empty one).
    ``indices_are_sorted``, ``unique_indices`` and ``bucket_size`` are accepted and change
    nothing (JAX's ``bucket_size`` only changes the order of the additions)."""
    del indices_are_sorted, unique_indices, bucket_size
    return _segment("segment_sum", lax.scatter_add, lambda dtype: 0, data, segment_ids,
                    num_segments, mode)


def segment_prod(data: Any, segment_ids: Any, num_segments: int | None = None,
                 indices_are_sorted: bool = False, unique_indices: bool = False,
                 bucket_size: int | None = None, mode: Any = None) -> Any:
    """The product of the rows of ``data`` in each segment (1 for an empty one)."""
    del indices_are_sorted, unique_indices, bucket_size
    return _segment("segment_prod", lax.scatter_mul, lambda dtype: 1, data, segment_ids,
                    num_segments, mode)


def segment_max(data: Any, segment_ids: Any, num_segments: int | None = None,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                bucket_size: int | None = None, mode: Any = None) -> Any:
    """The largest row of ``data`` in each segment, elementwise (-inf for an empty one of
    floats, the smallest integer for integers)."""
    del indices_are_sorted, unique_indices, bucket_size
    return _segment("segment_max", lax.scatter_max, dtypes.lowest, data, segment_ids,
                    num_segments, mode)


def segment_min(data: Any, segment_ids: Any, num_segments: int | None = None,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                bucket_size: int | None = None, mode: Any = None) -> Any:
    """The smallest row of ``data`` in each segment, elementwise (inf for an empty one of
    floats, the largest integer for integers)."""
    del indices_are_sorted, unique_indices, bucket_size
    return _segment("segment_min", lax.scatter_min, dtypes.highest, data, segment_ids,
                    num_segments, mode)
