"""NumPy's in-place updates, as functions that return the updated array: ``put``,
``put_along_axis``, ``place`` and ``fill_diagonal``. JAX arrays are immutable, so each
must be called with ``inplace=False`` (the default, True, is refused as in JAX); each is one
scatter (``x.at[idx].set(values)``).

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.put(jnp.zeros(4), jnp.array([0, 2]), 5.0, inplace=False)
    Array([5., 0., 5., 0.], dtype=float32)
"""

from __future__ import annotations

from ..core import get_aval
from .index_tricks import diag_indices
from .index_tricks import indices as index_grid  # ``indices`` is an argument's name here
from .promotion import as_value
from .shapes import broadcast_to, ravel, reshape, tile
from .statistics import nonzero, unravel_index
from .ufuncs import clip


def _refuse_inplace(name: str, inplace: bool, error: type[Exception] = ValueError) -> None:
    if inplace:
        raise error(f"jnp.{name} cannot modify an array in place: JAX arrays are immutable. "
                    f"Pass inplace=False to get the updated array back instead.")


def _tiled(values, length: int):
    """The flat ``values`` repeated (and cut) to ``length`` elements."""
    n = get_aval(values).shape[0]
    return tile(values, -(-length // n))[:length] if n != length else values


def put(a, ind, v, mode: str | None = None, *, inplace: bool = True):
    """``a`` with the flat positions ``ind`` set to ``v`` (repeated as needed). ``mode``:
    None drops out-of-range positions, 'clip' clips them, 'wrap' wraps them around.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.put(jnp.arange(6).reshape(2, 3), jnp.array([1, 9]), -1, mode="wrap",
        ...         inplace=False)
        Array([[ 0, -1,  2],
               [-1,  4,  5]], dtype=int32)
    """
    _refuse_inplace("put", inplace)
    a, ind, v = as_value(a), ravel(as_value(ind)), ravel(as_value(v))
    size = get_aval(a).size
    if not size or not get_aval(ind).size or not get_aval(v).size:
        return a
    v = _tiled(v, get_aval(ind).shape[0])
    if mode is None:
        scatter_mode = "drop"
    elif mode in ("clip", "wrap"):
        ind = clip(ind, 0, size - 1) if mode == "clip" else ind % size
        scatter_mode = "promise_in_bounds"
    elif mode == "raise":
        raise NotImplementedError("jnp.put: mode='raise' is not supported (it would need the "
                                  "indices' values); use mode='clip' or mode='wrap'.")
    else:
        raise ValueError(f"jnp.put: mode should be 'wrap' or 'clip' (or None), got {mode!r}.")
    return a.at[unravel_index(ind, get_aval(a).shape)].set(v, mode=scatter_mode)


def put_along_axis(arr, indices, values, axis: int | None, inplace: bool = True, *,
                   mode: str | None = None):
    """``arr`` with ``values`` put at ``indices`` along ``axis`` (of the flattened ``arr``
    if None): the inverse of ``take_along_axis``. ``indices`` has ``arr``'s number of dims,
    and ``values`` broadcasts to its shape.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> x = jnp.array([[10, 30, 20], [60, 40, 50]])
        >>> jnp.put_along_axis(x, jnp.argmax(x, axis=1, keepdims=True), 0, axis=1,
        ...                    inplace=False)
        Array([[10,  0, 20],
               [ 0, 40, 50]], dtype=int32)
    """
    _refuse_inplace("put_along_axis", inplace)
    arr, positions, values = as_value(arr), as_value(indices), as_value(values)
    shape = get_aval(arr).shape
    if axis is None:
        arr, axis = ravel(arr), 0
    if get_aval(arr).ndim != get_aval(positions).ndim:
        raise ValueError(f"put_along_axis: arr and indices must have the same number of "
                         f"dims, got shapes {get_aval(arr).shape} and {get_aval(positions).shape}.")
    values = broadcast_to(values, get_aval(positions).shape)
    grid = list(index_grid(get_aval(arr).shape, sparse=True))
    grid[axis] = positions
    return reshape(arr.at[tuple(grid)].set(values, mode=mode), shape)


def place(arr, mask, vals, *, inplace: bool = True):
    """``arr`` with the elements where ``mask`` is true set to ``vals`` in turn (repeated
    as needed).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> x = jnp.array([1, -2, 3, -4])
        >>> jnp.place(x, x < 0, jnp.array([0, 9]), inplace=False)
        Array([1, 0, 3, 9], dtype=int32)
    """
    arr, mask, vals = as_value(arr), as_value(mask), ravel(as_value(vals))
    _refuse_inplace("place", inplace)
    if get_aval(arr).size != get_aval(mask).size:
        raise ValueError(f"place: arr and mask must be the same size, got shapes "
                         f"{get_aval(arr).shape} and {get_aval(mask).shape}.")
    if not get_aval(vals).size:
        raise ValueError("place: cannot place values from an empty array.")
    size = get_aval(arr).size
    if not size:
        return arr
    positions = nonzero(ravel(mask), size=size, fill_value=size)[0]
    updated = ravel(arr).at[positions].set(_tiled(vals, size), mode="drop")
    return reshape(updated, get_aval(arr).shape)


def fill_diagonal(a, val, wrap: bool = False, *, inplace: bool = True):
    """``a`` with its main diagonal (all indices equal) set to ``val`` (a scalar, or values
    repeated along the diagonal).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.fill_diagonal(jnp.zeros((2, 3), int), 7, inplace=False)
        Array([[7, 0, 0],
               [0, 7, 0]], dtype=int32)
    """
    _refuse_inplace("fill_diagonal", inplace, NotImplementedError)
    if wrap:
        raise NotImplementedError("fill_diagonal: wrap=True is not implemented; use "
                                  "wrap=False.")
    a, val = as_value(a), as_value(val)
    shape = get_aval(a).shape
    if len(shape) < 2:
        raise ValueError(f"fill_diagonal: the array must be at least 2-D, got shape {shape}.")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise ValueError(f"fill_diagonal: all dims must be of equal length, got shape "
                         f"{shape}.")
    n = min(shape)
    values = val if get_aval(val).ndim == 0 else _tiled(ravel(val), n)
    return a.at[diag_indices(n, len(shape))].set(values)
