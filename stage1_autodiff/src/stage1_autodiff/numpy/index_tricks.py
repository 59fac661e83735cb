"""Arrays of indices, and objects that build them from slice syntax: ``indices``, ``ix_``,
the indices of diagonals and triangles, ``mgrid``/``ogrid`` (``jnp.mgrid[0:3, 0:2]``), and
NumPy's ``s_`` and ``index_exp`` (which make index tuples for later use); flat indices of
coordinates (``ravel_multi_index``), ``mask_indices``; and ``r_``/``c_``, which join arrays,
scalars and slices along an axis (``jnp.r_[1:3, 5, x]``).

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.mgrid[0:2, 0:3]
    Array([[[0, 0, 0],
            [1, 1, 1]],
    <BLANKLINE>
           [[0, 1, 2],
            [0, 1, 2]]], dtype=int32)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from .. import dtypes
from .. import prims as lax
from ..core import get_aval
from .arrangement import meshgrid, tril_indices, triu_indices
from .concrete import concrete_value, static_int
from .creation import arange, array, linspace, ones
from .promotion import as_value, promote
from .shapes import concatenate, expand_dims, reshape, stack, transpose
from .statistics import nonzero
from .ufuncs import clip

# NumPy's own: they only turn slice syntax into tuples of slices, as JAX's do.
s_ = np.s_
index_exp = np.index_exp


def indices(dimensions: Sequence[int], dtype: Any = None, sparse: bool = False):
    """A grid of indices: for each dim, an array holding the index along it. Stacked into
    one array (dims first), or with ``sparse`` a tuple of arrays of size 1 but along their
    own dim.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> rows, cols = jnp.indices((2, 3))
        >>> cols
        Array([[0, 1, 2],
               [0, 1, 2]], dtype=int32)
    """
    dtype = dtypes.check_and_canonicalize_user_dtype(int if dtype is None else dtype,
                                                     "indices")
    shape = tuple(static_int(d, "indices: each of dimensions") for d in dimensions)
    grids = []
    for k, size in enumerate(shape):
        grid_shape = (1,) * k + (size,) + (1,) * (len(shape) - k - 1) if sparse else shape
        grids.append(lax.broadcast_in_dim(lax.iota(dtype, (size,)), grid_shape, (k,)))
    if sparse:
        return tuple(grids)
    return stack(grids) if grids else array([], dtype=dtype)


def ix_(*args: Any) -> tuple[Any, ...]:
    """Open-mesh index arrays from 1-D sequences: the k-th has its values along dim k and
    size 1 along the others, so ``x[jnp.ix_(rows, cols)]`` picks a sub-grid.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> x = jnp.arange(12).reshape(3, 4)
        >>> x[jnp.ix_(jnp.array([0, 2]), jnp.array([1, 3]))]
        Array([[ 1,  3],
               [ 9, 11]], dtype=int32)
    """
    grids = []
    for k, a in enumerate(as_value(a) for a in args):
        aval = get_aval(a)
        if aval.ndim != 1:
            raise ValueError(f"ix_: each argument must be 1-D, argument {k} has shape "
                             f"{aval.shape}.")
        if aval.dtype == np.bool_:
            raise NotImplementedError("ix_: boolean arguments are not implemented; pass "
                                      "jnp.nonzero(mask)[0] instead.")
        shape = [1] * len(args)
        shape[k] = aval.shape[0]
        if aval.size == 0:  # an empty sequence indexes as integers, as in NumPy
            grids.append(lax.full(tuple(shape), 0, dtypes.canonicalize_dtype(np.intp)))
        else:
            grids.append(lax.broadcast_in_dim(a, tuple(shape), (k,)))
    return tuple(grids)


def diag_indices(n: int, ndim: int = 2) -> tuple[Any, ...]:
    """The indices of the main diagonal of an ``ndim``-dimensional array of side ``n``: the
    same ``arange(n)`` for every dim.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.diag_indices(3)
        (Array([0, 1, 2], dtype=int32), Array([0, 1, 2], dtype=int32))
    """
    n, ndim = static_int(n, "diag_indices: n"), static_int(ndim, "diag_indices: ndim")
    for name, value in (("n", n), ("ndim", ndim)):
        if value < 0:
            raise ValueError(f"diag_indices: {name} must be nonnegative, got {value}.")
    return (lax.iota(dtypes.default_int_dtype(), (n,)),) * ndim


def diag_indices_from(arr) -> tuple[Any, ...]:
    """The indices of the main diagonal of ``arr``, which must have equal dims (2 or more)."""
    shape = np.shape(arr)
    if len(shape) < 2:
        raise ValueError(f"diag_indices_from: the array must be at least 2-D, got shape "
                         f"{shape}.")
    if len(set(shape)) != 1:
        raise ValueError(f"diag_indices_from: all dims of the array must be of equal "
                         f"length, got shape {shape}.")
    return diag_indices(shape[0], len(shape))


def _matrix_shape(name: str, arr: Any) -> tuple[int, ...]:
    shape = tuple(arr.shape) if hasattr(arr, "shape") else np.shape(arr)
    if len(shape) != 2:
        raise ValueError(f"{name}: only 2-D arrays are accepted, got shape {shape}.")
    return shape


def tril_indices_from(arr, k: int = 0) -> tuple[Any, Any]:
    """The indices of ``arr``'s lower triangle, at and below the ``k``-th diagonal."""
    n, m = _matrix_shape("tril_indices_from", arr)
    return tril_indices(n, k=k, m=m)


def triu_indices_from(arr, k: int = 0) -> tuple[Any, Any]:
    """The indices of ``arr``'s upper triangle, at and above the ``k``-th diagonal."""
    n, m = _matrix_shape("triu_indices_from", arr)
    return triu_indices(n, k=k, m=m)


# ------------------------------------------------------------------------------------------
# Grids from slice syntax
# ------------------------------------------------------------------------------------------


def _grid_from_slice(s: slice, name: str):
    """``arange(start, stop, step)``, or with an imaginary step ``5j`` ``linspace`` of 5
    points including ``stop``."""
    start, stop, step = (_slice_part(part, name) for part in (s.start, s.stop, s.step))
    start, step = start or 0, step or 1
    if np.iscomplex(step):
        return linspace(start, stop, int(abs(step)))
    return arange(start, stop, step)


def _slice_part(part: Any, name: str) -> Any:
    """A slice's start, stop or step as a Python number (an array's must be concrete)."""
    if part is None or isinstance(part, (int, float, complex, np.generic)):
        return part
    return concrete_value(part, f"jnp.{name}: a slice's start, stop and step",
                          "Use jnp.arange or jnp.linspace of traced ends with a static number "
                          "of points instead.").item()


def _grids(key: slice | tuple[slice, ...], name: str) -> list[Any]:
    return [as_value(g) for g in promote(*(_grid_from_slice(k, name) for k in key))]


class _Mgrid:
    """``jnp.mgrid[...]``: a dense grid, one stacked array."""

    def __getitem__(self, key: slice | tuple[slice, ...]):
        if isinstance(key, slice):
            return _grid_from_slice(key, "mgrid")
        grids = _grids(key, "mgrid")
        if not grids:
            return arange(0)
        return stack(meshgrid(*grids, indexing="ij"))


class _Ogrid:
    """``jnp.ogrid[...]``: an open grid, a list of arrays that broadcast together."""

    def __getitem__(self, key: slice | tuple[slice, ...]):
        if isinstance(key, slice):
            return _grid_from_slice(key, "ogrid")
        return meshgrid(*_grids(key, "ogrid"), indexing="ij", sparse=True)


mgrid = _Mgrid()
ogrid = _Ogrid()


def ravel_multi_index(multi_index: Sequence[Any], dims: Sequence[int], mode: str = "raise",
                      order: str = "C", *, dtype: Any = None):
    """The flat indices, in an array of shape ``dims``, of the coordinates ``multi_index``
    (one integer array per dim). ``mode`` says what a coordinate out of range does: 'raise'
    (only outside a transformation), 'wrap', 'clip' or 'ignore'; ``order`` is 'C' (the last
    dim varies fastest) or 'F'.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.ravel_multi_index((jnp.array([0, 1]), jnp.array([2, 0])), (2, 3))
        Array([2, 3], dtype=int32)
    """
    if len(multi_index) != len(dims):
        raise ValueError(f"ravel_multi_index: {len(multi_index)} index arrays for "
                         f"{len(dims)} dims.")
    dims = tuple(static_int(d, "ravel_multi_index: each of dims") for d in dims)
    coordinates = [as_value(i) for i in multi_index]
    dtype = _flat_index_dtype(coordinates, dims, dtype)
    coordinates = [_in_range(i, n, mode) for i, n in zip(coordinates, dims)]
    if order not in ("C", "F"):
        raise ValueError(f"ravel_multi_index: order must be 'C' or 'F', got {order!r}.")
    sizes = dims[::-1] if order == "C" else dims
    strides = np.cumprod((1,) + sizes[:-1])
    strides = strides[::-1] if order == "C" else strides
    result = as_value(0, dtype)
    for index, stride in zip(coordinates, strides):
        result = result + as_value(index, dtype) * int(stride)
    return result


def _flat_index_dtype(coordinates: list[Any], dims: tuple[int, ...], dtype: Any) -> np.dtype:
    dtype = dtypes.promote_types((dtypes.default_int_dtype(), True),
                                 *((c.dtype, c.weak_type) for c in coordinates))[0] \
        if dtype is None else dtypes.check_and_canonicalize_user_dtype(dtype,
                                                                       "ravel_multi_index")
    if not dtypes.is_int(dtype):
        raise ValueError(f"ravel_multi_index: dtype={dtype} is not an integer type.")
    if int(np.prod(dims)) - 1 > np.iinfo(dtype).max:
        raise ValueError(f"ravel_multi_index: dtype={dtype} is too small for the flat "
                         f"indices of dims={dims}; pass a wider dtype.")
    for c in coordinates:
        if not dtypes.is_int(c.dtype):
            raise TypeError(f"ravel_multi_index: only integer indices are allowed, got "
                            f"{c.dtype}.")
    return dtype


def _in_range(index: Any, n: int, mode: str) -> Any:
    """``index`` checked, wrapped or clipped into ``[0, n)`` as ``mode`` says."""
    if mode == "raise":
        values = concrete_value(index, "ravel_multi_index with mode='raise'",
                                "Use mode='wrap' or mode='clip' under jit.")
        if np.any((values < 0) | (values >= n)):
            raise ValueError(f"ravel_multi_index: an index is out of range for a dim of "
                             f"size {n}.")
        return index
    if mode == "clip":
        return clip(index, 0, n - 1)
    if mode == "wrap":
        return index % n
    if mode == "ignore":
        return index
    raise ValueError(f"ravel_multi_index: mode must be 'raise', 'wrap', 'clip' or 'ignore', "
                     f"got {mode!r}.")


def mask_indices(n: int, mask_func: Any, k: int = 0, *, size: int | None = None):
    """The indices where ``mask_func(ones((n, n)), k)`` is nonzero (e.g. ``jnp.triu``): a
    pair of arrays, of length ``size`` if given.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.mask_indices(2, jnp.triu)
        (Array([0, 0, 1], dtype=int32), Array([0, 1, 1], dtype=int32))
    """
    rows, cols = nonzero(mask_func(ones((n, n)), k), size=size)
    return rows, cols


# ------------------------------------------------------------------------------------------
# Concatenation from slice syntax: r_ and c_
# ------------------------------------------------------------------------------------------


class _Directive(NamedTuple):
    """How ``r_``/``c_`` join their items: along ``axis``, each made at least ``ndmin``-D
    with its own dims placed by ``trans1d``; ``matrix`` adds a dim to a 1-D result."""

    axis: int
    ndmin: int
    trans1d: int
    matrix: int


def _read_directive(text: str, default: _Directive) -> _Directive:
    """A leading string item: 'r' or 'c' (a row or column matrix), or 'axis,ndmin,trans1d'."""
    if text in ("r", "c"):
        return default._replace(matrix=0 if text == "r" else 1)
    parts = text.split(",")[:3]
    try:
        numbers = [int(p) for p in parts]
    except ValueError as error:
        raise ValueError(f"could not understand directive {text!r}: expected 'r', 'c' or up "
                         f"to three ints 'axis,ndmin,trans1d'.") from error
    return _Directive(*numbers, *default[len(numbers):3], default.matrix)


def _placed(item: Any, directive: _Directive, name: str):
    """One item: a slice as a 1-D grid, anything else as an array; made ``ndmin``-D with
    its own dims where ``trans1d`` says."""
    if isinstance(item, slice):
        value, own_ndim = _grid_from_slice(item, name), 0
    elif isinstance(item, str):
        raise ValueError(f"jnp.{name}: a string directive must be the first item.")
    else:
        value = array(item)
        own_ndim = get_aval(value).ndim
    shape = get_aval(value).shape
    value = reshape(value, (1,) * (directive.ndmin - len(shape)) + shape)
    if directive.trans1d != -1 and directive.ndmin > own_ndim:
        ndmin = directive.ndmin
        shifts = ndmin - abs(ndmin + directive.trans1d + 1) % ndmin
        order = tuple(range(ndmin))
        value = transpose(value, order[shifts:] + order[:shifts])
    return value


class _AxisConcat:
    """``jnp.r_[...]`` and ``jnp.c_[...]``: items (arrays, scalars, slices as grids) joined
    along an axis, after an optional directive string."""

    def __init__(self, name: str, default: _Directive) -> None:
        self.name, self.default = name, default

    def __getitem__(self, key: Any):
        items = key if isinstance(key, tuple) else (key,)
        directive = self.default
        if items and isinstance(items[0], str):
            directive, items = _read_directive(items[0], self.default), items[1:]
        joined = concatenate([_placed(item, directive, self.name) for item in items],
                             axis=directive.axis)
        if directive.matrix != -1 and get_aval(joined).ndim == 1:
            joined = expand_dims(joined, directive.matrix)
        return joined

    def __len__(self) -> int:
        return 0


r_ = _AxisConcat("r_", _Directive(axis=0, ndmin=1, trans1d=-1, matrix=-1))
c_ = _AxisConcat("c_", _Directive(axis=-1, ndmin=2, trans1d=0, matrix=-1))
