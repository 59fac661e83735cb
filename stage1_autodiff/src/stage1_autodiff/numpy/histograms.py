"""Histograms of samples with several coordinates: ``histogramdd`` counts points in the
cells of a grid of bins (one set of edges per dim), ``histogram2d`` of two coordinate
arrays. Each point's cell is found per dim with ``searchsorted``, the cells numbered with
``ravel_multi_index`` and counted with ``bincount``.

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> counts, x_edges, y_edges = jnp.histogram2d(jnp.array([0.0, 0.2, 0.9]),
    ...                                            jnp.array([0.0, 0.8, 0.9]), bins=2)
    >>> counts
    Array([[1, 1],
           [0, 1]], dtype=int32)
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core import get_aval
from .arrangement import diff
from .index_tricks import ix_, ravel_multi_index
from .promotion import as_value, promote_inexact
from .shapes import reshape
from .statistics import bincount, histogram_bin_edges, searchsorted
from .ufuncs import astype, where


def _check_ranges(range_: Any, count: int, dims: int) -> None:
    if range_ is not None and (len(range_) != dims or builtins.any(
            r is not None and np.shape(r)[0] != 2 for r in range_)):
        raise ValueError(f"histogramdd: for a sample of shape {(count, dims)}, range must be "
                         f"a sequence of {dims} pairs or Nones; got {range_!r}.")


def _bins_per_dim(bins: Any, dims: int) -> list[Any]:
    try:
        per_dim = list(bins)
    except TypeError:
        return [bins] * dims
    if len(per_dim) != dims:
        raise ValueError(f"histogramdd: there should be bins for each of the {dims} dims, "
                         f"got {len(per_dim)}.")
    return per_dim


def histogramdd(sample, bins: Any = 10, range: Sequence[Any] | None = None,  # noqa: A002
                weights: Any = None, density: bool | None = None):
    """Counts (or summed ``weights``) of the points of ``sample`` (N points by D coordinates)
    in a grid of bins: ``bins`` is a count or edges, one for all dims or one per dim;
    ``range`` one (low, high) or None per dim. With ``density``, divided by the total and
    the cells' volumes. Returns the counts and a list of the edges.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> counts, edges = jnp.histogramdd(jnp.array([[0.0, 1.0], [1.0, 0.0]]), bins=2)
        >>> counts
        Array([[0, 1],
               [1, 0]], dtype=int32)
    """
    if weights is None:
        (sample,) = promote_inexact(sample)
    else:
        if np.shape(weights) != np.shape(sample)[:1]:
            raise ValueError("histogramdd: there should be one weight for each sample.")
        sample, weights = promote_inexact(sample, weights)
    sample = as_value(sample)
    count, dims = get_aval(sample).shape
    _check_ranges(range, count, dims)
    cells, edges = [], []
    for d, bins_d in enumerate(_bins_per_dim(bins, dims)):
        column = sample[:, d]
        edges_d = histogram_bin_edges(column, bins_d, None if range is None else range[d],
                                      weights)
        cell = searchsorted(edges_d, column, side="right")
        cells.append(where(column == edges_d[-1], cell - 1, cell))  # the last edge is in
        edges.append(edges_d)
    shape = tuple(get_aval(e).shape[0] + 1 for e in edges)  # a cell before and after each
    flat = ravel_multi_index(tuple(cells), shape, mode="clip")
    hist = reshape(bincount(flat, weights, length=math.prod(shape)), shape)
    hist = hist[(slice(1, -1),) * dims]
    if density:
        hist = astype(hist, get_aval(sample).dtype)
        hist = hist / hist.sum()
        for widths in ix_(*(diff(e) for e in edges)):
            hist = hist / widths
    return hist, edges


def histogram2d(x, y, bins: Any = 10, range: Sequence[Any] | None = None,  # noqa: A002
                weights: Any = None, density: bool | None = None):
    """The 2-D histogram of the points (``x``, ``y``) (see :func:`histogramdd`): the counts,
    the x edges and the y edges."""
    try:
        n = len(bins)
    except TypeError:
        n = 1
    if n not in (1, 2):  # one array of edges for both dims
        bins = [as_value(bins), as_value(bins)]
    hist, edges = histogramdd(as_value([x, y]).T, bins, range, weights, density)
    return hist, edges[0], edges[1]
