"""``jax.scipy.interpolate``: ``RegularGridInterpolator``, linear or nearest-neighbour
interpolation of values given on a rectangular grid.

The grid is one increasing 1-D array of points per dim; ``values`` has one axis per grid dim
(and may have more, carried along). For a query point, each dim finds the grid cell it falls
in, ``i = searchsorted(points, x) - 1`` clamped to the first and last cells, and its place in
the cell, ``t = (x - points[i]) / (points[i + 1] - points[i])`` (below 0 or above 1 outside
the grid). "linear" sums the values at the cell's ``2**ndim`` corners, each weighted by the
product of ``1 - t`` or ``t`` per dim; "nearest" takes the corner ``i`` where ``t <= 0.5``,
else ``i + 1``. A query outside the grid in any dim gets ``fill_value``; with
``fill_value=None`` it is extrapolated from the nearest cell instead. Nothing checks that the
points increase or that their lengths match ``values``' axes (as in JAX: it could not under
``jit``); such a grid gives what the formulas give.

The interpolator is a pytree, as JAX's: its children are the grid, the values and the fill
value; the method and ``bounds_error`` are its static data. So it passes through ``jit`` and
the other transformations, and the result differentiates with respect to the values, the
query points, the grid and the fill value.

NB: JAX's is jax/_src/third_party/scipy/interpolate.py, after SciPy's.

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> from stage1_autodiff.scipy.interpolate import RegularGridInterpolator
    >>> grid = (jnp.array([1.0, 2.0, 3.0]), jnp.array([4.0, 5.0, 6.0]))
    >>> values = jnp.array([[10.0, 20.0, 30.0], [40.0, 50.0, 60.0], [70.0, 80.0, 90.0]])
    >>> interpolate = RegularGridInterpolator(grid, values)
    >>> interpolate(jnp.array([[1.5, 4.5], [2.2, 5.8], [0.0, 5.0]]))
    Array([30., 64., nan], dtype=float32)
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from .. import dtypes, tree_util
from .. import numpy as jnp
from ..core import get_aval
from ..numpy.promotion import promote_inexact
from .stats._util import check_arraylike

__all__ = ["RegularGridInterpolator"]

_METHODS = ("linear", "nearest")


def _check_method(method: Any) -> None:
    if method not in _METHODS:
        raise ValueError(f"RegularGridInterpolator: method {method!r} is not one of "
                         f"{', '.join(map(repr, _METHODS))}.")


def _query_points(xi: Any, ndim: int) -> Any:
    """The query points as one array of shape ``(..., ndim)``: a tuple holds one array of
    coordinates per dim (broadcast together, as floats of the default dtype); an array's
    last axis holds each point's coordinates (a 1-D one is a list of points)."""
    if isinstance(xi, tuple) and len(xi) == 1:
        xi = xi[0]
    if isinstance(xi, tuple):
        parts = [jnp.asarray(part) for part in xi]
        shapes = [get_aval(part).shape for part in parts]
        try:
            shape = jnp.broadcast_shapes(*shapes)
        except ValueError:
            raise ValueError(f"RegularGridInterpolator: the query's coordinate arrays have "
                             f"shapes {shapes}, which do not broadcast together.") from None
        default = dtypes.canonicalize_dtype(float)
        return jnp.stack([jnp.broadcast_to(part, shape).astype(default) for part in parts],
                         axis=-1)
    check_arraylike("_ndim_coords_from_arrays", xi)
    xi = jnp.asarray(xi)
    if get_aval(xi).ndim == 1:
        size = get_aval(xi).shape[0]
        if ndim and size % ndim:  # (a TypeError, as JAX's reshape raises here)
            raise TypeError(
                f"RegularGridInterpolator: a 1-D query of {size} coordinates can't be split "
                f"into points of {ndim} dims; pass an array of shape (n, {ndim}).")
        xi = xi.reshape(-1, ndim)
    return xi


class RegularGridInterpolator:
    """Interpolates ``values`` given on a regular grid (``points``: one increasing 1-D array
    per dim of the grid) at query points, by ``method`` "linear" or "nearest".

    Args:
        points: the grid, one 1-D array per leading axis of ``values``.
        values: the values at the grid's points; integers become floats.
        method: "linear" (the default) or "nearest"; a call may choose another.
        bounds_error: must be false: raising for a point outside the grid could not be done
            under ``jit`` (``NotImplementedError``, as JAX's).
        fill_value: the result for a point outside the grid (NaN by default); ``None``
            extrapolates instead.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> from stage1_autodiff.scipy.interpolate import RegularGridInterpolator
        >>> f = RegularGridInterpolator((jnp.array([0.0, 1.0, 2.0]),), jnp.array([0., 10., 0.]),
        ...                             fill_value=None)
        >>> f(jnp.array([0.25, 1.5, 3.0])), f(jnp.array([0.25, 1.5, 3.0]), method="nearest")
        (Array([  2.5,   5. , -10. ], dtype=float32), Array([ 0., 10.,  0.], dtype=float32))
    """

    def __init__(self, points: Any, values: Any, method: str = "linear",
                 bounds_error: bool = False, fill_value: Any = np.nan) -> None:
        _check_method(method)
        self.method = method
        self.bounds_error = bounds_error
        if self.bounds_error:
            raise NotImplementedError(
                "RegularGridInterpolator(bounds_error=True) is not supported, as in JAX: a "
                "check of every point could not stop a jitted program. Leave it False; "
                "fill_value (NaN by default) marks the points outside the grid.")
        check_arraylike("RegularGridInterpolator", values)
        if len(points) > values.ndim:
            raise ValueError(f"RegularGridInterpolator: {len(points)} arrays of grid points "
                             f"for values of {values.ndim} dims; give at most one per dim.")
        values, = promote_inexact(jnp.asarray(values))
        if fill_value is not None:
            check_arraylike("RegularGridInterpolator", fill_value)
            fill_value = jnp.asarray(fill_value)
            if not np.can_cast(get_aval(fill_value).dtype, get_aval(values).dtype,
                               casting="same_kind"):
                raise ValueError(
                    f"RegularGridInterpolator: a fill_value of dtype "
                    f"{get_aval(fill_value).dtype} can't be cast to the values' dtype "
                    f"{get_aval(values).dtype}; pass None or a value of a compatible dtype.")
        self.fill_value = fill_value
        check_arraylike("RegularGridInterpolator", *points)
        self.grid = tuple(jnp.asarray(p) for p in points)
        self.values = values

    def __call__(self, xi: Any, method: str | None = None) -> Any:
        """The interpolated values at the points ``xi`` (an array whose last axis holds each
        point's coordinates, or a tuple of one array per dim), by ``method`` (the
        interpolator's own by default); shape ``xi``'s leading axes, then ``values``' axes
        beyond the grid's."""
        method = self.method if method is None else method
        _check_method(method)
        ndim = len(self.grid)
        xi = _query_points(xi, ndim)
        shape = get_aval(xi).shape
        if shape[-1] != ndim:
            raise ValueError(f"RegularGridInterpolator of {ndim} dims was given points of "
                             f"{shape[-1]} dims (xi of shape {shape}).")
        xi = xi.reshape(-1, shape[-1])
        cells, fractions, outside = self._cells(xi.T)
        if method == "linear":
            result = self._linear(cells, fractions)
        else:
            result = self._nearest(cells, fractions)
        if self.fill_value is not None:
            rank = get_aval(result).ndim
            outside = outside.reshape(get_aval(result).shape[:1] + (1,) * (rank - 1))
            result = jnp.where(outside, self.fill_value, result)
        return result.reshape(shape[:-1] + get_aval(self.values).shape[ndim:])

    def _cells(self, xi: Any) -> tuple[list[Any], list[Any], Any]:
        """Per dim, each point's cell and its place in the cell (0 at the cell's first grid
        point, 1 at its last); and whether each point is outside the grid."""
        cells, fractions = [], []
        outside = jnp.zeros(get_aval(xi).shape[1:], dtype=bool)
        for x, points in zip(xi, self.grid):
            if get_aval(points).ndim != 1:
                raise ValueError(f"RegularGridInterpolator: each array of grid points must "
                                 f"be 1-D, got shape {get_aval(points).shape}.")
            last = get_aval(points).shape[0] - 2
            cell = jnp.searchsorted(points, x) - 1
            cell = jnp.where(cell < 0, 0, cell)
            cell = jnp.where(cell > last, last, cell)
            cells.append(cell)
            fractions.append((x - points[cell]) / (points[cell + 1] - points[cell]))
            outside = outside | (x < points[0]) | (x > points[-1])
        return cells, fractions, outside

    def _linear(self, cells: list[Any], fractions: list[Any]) -> Any:
        """The sum over the cell's corners of the value there times its weight, the product
        over dims of ``1 - t`` (the lower point) or ``t`` (the upper)."""
        trailing = (slice(None),) + (None,) * (get_aval(self.values).ndim - len(cells))
        result = jnp.asarray(0.0)
        for corner in itertools.product(*[(False, True) for _ in cells]):
            weight = jnp.asarray(1.0)
            for upper, t in zip(corner, fractions):
                weight = weight * (t if upper else 1 - t)
            index = tuple(cell + 1 if upper else cell for upper, cell in zip(corner, cells))
            result = result + self.values[index] * weight[trailing]
        return result

    def _nearest(self, cells: list[Any], fractions: list[Any]) -> Any:
        """The value at the corner nearest each point (the lower one at a tie; the upper one
        for a NaN coordinate, as JAX's)."""
        return self.values[tuple(jnp.where(t <= 0.5, cell, cell + 1)
                                 for cell, t in zip(cells, fractions))]


tree_util.register_pytree_node(
    RegularGridInterpolator,
    lambda f: ((f.grid, f.values, f.fill_value), (f.method, f.bounds_error)),
    lambda static, children: RegularGridInterpolator(children[0], children[1], *static,
                                                     children[2]),
)
