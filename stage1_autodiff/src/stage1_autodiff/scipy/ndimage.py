"""``jax.scipy.ndimage``: ``map_coordinates``, the input's values at fractional coordinates,
by nearest-neighbour (``order=0``) or linear (``order=1``) interpolation.

Along each dim a coordinate ``c`` picks its neighbours: for order 0 the index ``round(c)``
(halves away from zero) with weight 1, for order 1 ``floor(c)`` with weight ``1 - f`` and
``floor(c) + 1`` with weight ``f``, where ``f = c - floor(c)``. The result is the sum, over
every combination of one neighbour per dim (2**ndim of them for order 1), of the product of
their weights times the input's element there. An index outside the input is moved inside by
``mode``: ``"nearest"`` clamps it, ``"wrap"`` takes it modulo the size (SciPy's
``"grid-wrap"``), ``"mirror"`` reflects it about the edge elements (``-1 -> 1``),
``"reflect"`` about the edges between elements (``-1 -> 0``), and ``"constant"`` (SciPy's
``"grid-constant"``) leaves it outside and reads ``cval`` there instead. An integer input's
result is rounded (halves away from zero) to its dtype; the result always has the input's
dtype. Made of floors, gathers, selects, products and sums, it differentiates with respect
to the input and the coordinates (order 0's coordinates get zero) as those do.

As in JAX, ``order``, ``mode`` and ``cval`` are static: a ``cval`` that cannot be hashed (an
array, a traced value) is refused with JAX's ``ValueError``.

NB: JAX's is jax/_src/scipy/ndimage.py.

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> from stage1_autodiff.scipy import ndimage
    >>> image = jnp.arange(12.0).reshape(3, 4)
    >>> ndimage.map_coordinates(image, [jnp.array([0.5, 1.5]), jnp.array([1.5, 2.5])], order=1)
    Array([3.5, 8.5], dtype=float32)
    >>> ndimage.map_coordinates(jnp.arange(4.0), [jnp.array([-1.0, 4.5])], 1, mode="mirror")
    Array([1. , 1.5], dtype=float32)
"""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import dtypes, lax
from .. import numpy as jnp
from ..core import get_aval

__all__ = ["map_coordinates"]


def _mirror(index: Any, size: int) -> Any:
    """Reflection about the edge elements: period ``2 * (size - 1)``, ``-1 -> 1``,
    ``size -> size - 2``; a single element is read wherever the index falls."""
    if size == 1:
        return jnp.zeros_like(index)
    period = 2 * (size - 1)
    folded = index % period
    return jnp.where(folded >= size, period - folded, folded)


def _reflect(index: Any, size: int) -> Any:
    """Reflection about the edges between elements: period ``2 * size``, ``-1 -> 0``,
    ``size -> size - 1``."""
    period = 2 * size
    folded = index % period
    return jnp.where(folded >= size, period - 1 - folded, folded)


# Each mode's map from an index (any integer) to the one read; "constant" reads a clamped
# index where the element is inside and ``cval`` elsewhere.
_INDEX_MAPS: dict[str, Callable[[Any, int], Any]] = {
    "constant": lambda index, size: jnp.clip(index, 0, size - 1),
    "nearest": lambda index, size: jnp.clip(index, 0, size - 1),
    "wrap": lambda index, size: index % size,
    "mirror": _mirror,
    "reflect": _reflect,
}


def _is_integer(x: Any) -> bool:
    return dtypes.is_int(get_aval(x).dtype)


def _neighbours(coordinate: Any, order: int) -> list[tuple[Any, Any]]:
    """``(index, weight)`` for each neighbour of the coordinates along one dim. The weights
    keep the coordinates' dtype (integer coordinates give integer weights)."""
    if order == 0:
        index = coordinate if _is_integer(coordinate) else lax.round(coordinate)
        return [(index.astype(np.int32), get_aval(coordinate).dtype.type(1))]
    lower = jnp.floor(coordinate)
    upper_weight = coordinate - lower
    index = lower.astype(np.int32)
    return [(index, 1 - upper_weight), (index + 1, upper_weight)]


def _static(value: Any) -> None:
    """JAX's check of a static argument: it must hash."""
    try:
        hash(value)
    except TypeError as error:
        raise ValueError(
            f"map_coordinates: order, mode and cval are static arguments, which must be "
            f"hashable (as in JAX), but got {type(value).__name__} {value!r} ({error}). Pass "
            f"a Python number for cval and a string for mode.") from None


def _shapes_broadcast(shapes: Sequence[tuple[int, ...]]) -> None:
    try:
        jnp.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(f"map_coordinates: the coordinate arrays have shapes {list(shapes)}, "
                         f"which do not broadcast together.") from None


def map_coordinates(input: Any, coordinates: Sequence[Any], order: int,  # noqa: A002
                    mode: str = "constant", cval: Any = 0.0) -> Any:
    """The input's values at ``coordinates`` (one array per dim of ``input``, broadcast
    together), interpolated with ``order`` 0 (nearest) or 1 (linear); indices outside the
    input are handled by ``mode`` ("constant", "nearest", "wrap", "mirror", "reflect"), with
    ``cval`` read outside for "constant". The result has the input's dtype and the
    coordinates' (broadcast) shape.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> from stage1_autodiff.scipy.ndimage import map_coordinates
        >>> map_coordinates(jnp.array([10, 20, 30]), [jnp.array([0.25, 0.5, 2.5])], order=1)
        Array([13, 15, 15], dtype=int32)
    """
    for value in (order, mode, cval):
        _static(value)
    image = jnp.asarray(input)
    coordinates = [jnp.asarray(c) for c in coordinates]
    if cval is None:
        raise ValueError("map_coordinates: cval=None is not a value to read outside the "
                         "input; pass a number (0.0 by default).")
    cval = jnp.asarray(cval, get_aval(image).dtype)
    shape = get_aval(image).shape
    if len(coordinates) != len(shape):
        raise ValueError(f"map_coordinates needs one coordinate array per dim of the input: "
                         f"got {len(coordinates)} for an input of {len(shape)} dims.")
    index_map = _INDEX_MAPS.get(mode) if isinstance(mode, str) else None
    if index_map is None:
        raise NotImplementedError(
            f"map_coordinates: mode {mode!r} is not supported; the modes are "
            f"{', '.join(map(repr, _INDEX_MAPS))}, as in JAX.")
    if order not in (0, 1):
        raise NotImplementedError(
            f"map_coordinates: order {order!r} is not supported, only 0 (nearest) and 1 "
            f"(linear), as in JAX; for spline orders, use scipy.ndimage on NumPy arrays.")
    if not shape:  # no dims, no neighbours to sum (JAX fails with a TypeError too)
        raise TypeError("map_coordinates needs an input with at least one dim, got a "
                        "scalar.")
    if 0 in shape:  # nothing to read (JAX's gather of one element refuses it: a TypeError)
        raise TypeError(f"map_coordinates can't read an input with an empty dim (shape "
                        f"{shape}): it has no element to interpolate.")
    _shapes_broadcast([get_aval(c).shape for c in coordinates])

    # per dim: (index read, inside the input?, weight) for each neighbour
    per_dim = []
    for coordinate, size in zip(coordinates, shape):
        nodes = []
        for index, weight in _neighbours(coordinate, order):
            inside = (index >= 0) & (index < size) if mode == "constant" else None
            nodes.append((index_map(index, size), inside, weight))
        per_dim.append(nodes)

    terms = []
    for corner in itertools.product(*per_dim):
        indices, insides, weights = zip(*corner)
        value = image[indices]
        if mode == "constant":
            value = jnp.where(functools.reduce(operator.and_, insides), value, cval)
        terms.append(functools.reduce(operator.mul, weights) * value)
    result = functools.reduce(operator.add, terms)
    if _is_integer(image) and not _is_integer(result):
        result = lax.round(result)
    return result.astype(get_aval(image).dtype)
