"""Functions that apply a function over an array: ``vectorize`` (over broadcast elements, or
sub-arrays named by a signature), ``apply_along_axis``, ``apply_over_axes``,
``fromfunction`` and ``piecewise``.

NB: JAX builds these on ``jax.vmap``, which stage 1 does not have. Here the function is
called once per element (or sub-array) in a Python loop and the results are stacked: the
same values and gradients, as ``vmap`` is defined to give, but one call per element, and
under ``jit`` one traced copy per element. JAX: jax/_src/numpy/vectorize.py.

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> norms = jnp.vectorize(lambda v: jnp.sqrt(v @ v), signature="(n)->()")
    >>> norms(jnp.array([[3.0, 4.0], [6.0, 8.0]]))
    Array([ 5., 10.], dtype=float32)
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import dtypes
from .. import prims as lax
from ..core import get_aval
from ..errors import ConcretizationTypeError
from .concrete import static_int
from .creation import arange, zeros_like
from .cumulative import cumsum
from .promotion import as_value, broadcast_shapes, canonicalize_axis
from .reductions import argmax
from .shapes import broadcast_to, concatenate, expand_dims, moveaxis, ravel, reshape, stack
from .ufuncs import astype, where

CoreDims = tuple[str, ...]


def _map_over(func: Callable, args: Sequence[Any], batch_shape: tuple[int, ...]):
    """``func`` of each batch element of ``args`` (all with ``batch_shape`` in front), the
    results stacked into arrays with ``batch_shape`` in front (a tuple of results: each)."""
    if 0 in batch_shape:
        return _empty_results(func, args, batch_shape)
    results = [func(*(a[index] for a in args)) for index in np.ndindex(*batch_shape)]
    if not batch_shape:
        return results[0]
    if isinstance(results[0], tuple):
        return tuple(_stacked([r[k] for r in results], batch_shape)
                     for k in range(len(results[0])))
    return _stacked(results, batch_shape)


def _empty_results(func: Callable, args: Sequence[Any], batch_shape: tuple[int, ...]):
    """The results over an empty batch: ``func`` is called once on zeros of one element's
    shape (JAX's vmap traces it instead) to learn their shapes and dtypes."""
    samples = [lax.full(get_aval(a).shape[len(batch_shape):], 0, get_aval(a).dtype)
               for a in args]
    result = func(*samples)
    outputs = result if isinstance(result, tuple) else (result,)
    empties = tuple(lax.full(batch_shape + get_aval(r).shape, 0, get_aval(r).dtype,
                             get_aval(r).weak_type) for r in (as_value(o) for o in outputs))
    return empties if isinstance(result, tuple) else empties[0]


def _stacked(results: list[Any], batch_shape: tuple[int, ...]):
    stacked = stack([as_value(r) for r in results])
    return reshape(stacked, batch_shape + get_aval(stacked).shape[1:])


# ------------------------------------------------------------------------------------------
# vectorize
# ------------------------------------------------------------------------------------------

_ARGUMENT = r"\(\w*(?:,\w+)*\)"
_SIGNATURE = re.compile(rf"^{_ARGUMENT}(?:,{_ARGUMENT})*->{_ARGUMENT}(?:,{_ARGUMENT})*$")


def _parse_signature(signature: str) -> tuple[list[CoreDims], list[CoreDims]]:
    """``"(m,n),(n)->(m)"`` as the core dims of the inputs and of the outputs."""
    compact = signature.replace(" ", "")
    if not _SIGNATURE.match(compact):
        raise ValueError(f"vectorize: not a valid gufunc signature: {signature!r} (e.g. "
                         f"'(m,n),(n)->(m)').")
    inputs, outputs = compact.split("->")
    parse = lambda part: [tuple(filter(None, group.split(",")))  # noqa: E731
                          for group in re.findall(r"\(([^()]*)\)", part)]
    return parse(inputs), parse(outputs)


def _core_sizes(args: Sequence[Any], core_dims: list[CoreDims]) -> dict[str, int]:
    """The size of each named core dim, checked to agree across the inputs."""
    if len(args) != len(core_dims):
        raise TypeError(f"vectorize: wrong number of positional arguments: the signature "
                        f"has {len(core_dims)}, got {len(args)}.")
    sizes: dict[str, int] = {}
    for arg, dims in zip(args, core_dims):
        shape = get_aval(arg).shape
        if len(shape) < len(dims):
            raise ValueError(f"vectorize: an input with shape {shape} has fewer dims than "
                             f"its core dims {dims}.")
        for name, size in zip(dims, shape[len(shape) - len(dims):]):
            if sizes.setdefault(name, size) != size:
                raise ValueError(f"vectorize: inconsistent size for core dim {name!r}: "
                                 f"{sizes[name]} vs {size}.")
    return sizes


def _checked_outputs(result: Any, sizes: dict[str, int], out_dims: list[CoreDims]) -> None:
    outputs = result if isinstance(result, tuple) else (result,)
    if len(out_dims) != len(outputs) or (len(out_dims) > 1) != isinstance(result, tuple):
        raise TypeError(f"vectorize: the function returned {len(outputs)} outputs, the "
                        f"signature promises {len(out_dims)}.")
    for output, dims in zip(outputs, out_dims):
        shape = get_aval(as_value(output)).shape
        if len(shape) != len(dims) or any(sizes.setdefault(d, n) != n
                                          for d, n in zip(dims, shape)):
            raise ValueError(f"vectorize: an output has shape {shape}, the signature says "
                             f"core dims {dims} (of sizes {sizes}).")


def _split_excluded(excluded: frozenset, args: tuple, kwargs: dict) -> tuple[list, list, dict]:
    """The positional arguments to map over, those passed as they are (position, value),
    and the keyword arguments passed as they are."""
    fixed = [(i, a) for i, a in enumerate(args) if i in excluded or a is None]
    mapped = [a for i, a in enumerate(args) if i not in excluded and a is not None]
    return mapped, fixed, kwargs


def vectorize(pyfunc: Callable, *, excluded: frozenset = frozenset(),
              signature: str | None = None) -> Callable:
    """``pyfunc`` applied elementwise over broadcast arguments, or with ``signature`` (a
    gufunc signature, ``"(m,n),(n)->(m)"``) over their leading dims with the named core dims
    passed whole. Positions (and keywords) in ``excluded`` are passed as they are.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.vectorize(lambda x, y: x if x > y else y)(jnp.array([1, 5]), 3)
        Array([3, 5], dtype=int32)
    """
    if any(not isinstance(e, (str, int)) for e in excluded):
        raise TypeError(f"vectorize can only exclude int or str arguments, got "
                        f"excluded={excluded!r}.")
    if any(isinstance(e, int) and e < 0 for e in excluded):
        raise ValueError(f"vectorize: excluded={excluded!r} contains negative numbers.")

    @functools.wraps(pyfunc)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        mapped, fixed, kwargs = _split_excluded(excluded, args, kwargs)
        mapped = [as_value(a) for a in mapped]
        in_dims, out_dims = (_parse_signature(signature) if signature is not None
                             else ([()] * len(mapped), None))
        sizes = _core_sizes(mapped, in_dims)
        batch = broadcast_shapes(*(get_aval(a).shape[:get_aval(a).ndim - len(d)]
                                   for a, d in zip(mapped, in_dims)))
        mapped = [broadcast_to(a, batch + get_aval(a).shape[get_aval(a).ndim - len(d):])
                  for a, d in zip(mapped, in_dims)]

        def call(*values: Any) -> Any:
            full = list(values)
            for i, value in fixed:
                full.insert(i, value)
            result = pyfunc(*full, **kwargs)
            if out_dims is not None:
                _checked_outputs(result, sizes, out_dims)
            return result

        return _map_over(call, mapped, batch)

    return wrapped


# ------------------------------------------------------------------------------------------
# Applying along and over axes
# ------------------------------------------------------------------------------------------


def apply_along_axis(func1d: Callable, axis: int, arr, *args: Any, **kwargs: Any):
    """``func1d`` of each 1-D slice of ``arr`` along ``axis``; its result's dims take the
    place of ``axis``.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.apply_along_axis(jnp.sum, 1, jnp.array([[1, 2], [3, 4]]))
        Array([3, 7], dtype=int32)
    """
    arr = as_value(arr)
    ndim = get_aval(arr).ndim
    axis = canonicalize_axis(axis, ndim, "apply_along_axis")
    rows = moveaxis(arr, axis, -1)
    batch = get_aval(rows).shape[:-1]
    out = _map_over(lambda row: func1d(row, *args, **kwargs), [rows], batch)
    out_ndim = get_aval(out).ndim - len(batch)
    after = tuple(range(axis, len(batch)))
    return moveaxis(out, after, tuple(range(axis + out_ndim, axis + out_ndim + len(after))))


def apply_over_axes(func: Callable, a, axes: Sequence[int]):
    """``func(a, axis)`` for each of ``axes`` in turn, each result fed to the next; a
    result with one dim fewer gets it back (size 1), as a reduction with keepdims.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.apply_over_axes(jnp.sum, jnp.ones((2, 3, 4)), [0, 2])
        Array([[[8.],
                [8.],
                [8.]]], dtype=float32)
    """
    a = as_value(a)
    for axis in axes:
        b = as_value(func(a, axis))
        if get_aval(b).ndim == get_aval(a).ndim - 1:
            b = expand_dims(b, axis)
        elif get_aval(b).ndim != get_aval(a).ndim:
            raise ValueError(f"apply_over_axes: the function returned shape "
                             f"{get_aval(b).shape} for an input of shape {get_aval(a).shape}"
                             f"; it must keep the dims, or drop only the axis.")
        a = b
    return a


def fromfunction(function: Callable, shape: Any, *, dtype: Any = float, **kwargs: Any):
    """An array of ``shape`` whose element at ``(i, j, ...)`` is ``function(i, j, ...)``,
    the indices given as scalars of ``dtype``.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.fromfunction(lambda i, j: i + 10 * j, (2, 3), dtype=int)
        Array([[ 0, 10, 20],
               [ 1, 11, 21]], dtype=int32)
    """
    dims = shape if isinstance(shape, (tuple, list)) else (shape,)
    shape = tuple(static_int(d, "fromfunction's shape") for d in dims)
    dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "fromfunction")
    grids = [broadcast_to(reshape(arange(n, dtype=dtype), (1,) * k + (n,)
                                  + (1,) * (len(shape) - k - 1)), shape)
             for k, n in enumerate(shape)]
    return _map_over(lambda *index: function(*index, **kwargs), grids, shape)


def piecewise(x, condlist: Any, funclist: list[Any], *args: Any, **kw: Any):
    """``x`` with each element mapped by the function (or constant) of the last condition
    in ``condlist`` that holds there; an extra last entry of ``funclist`` is the default
    (else 0). The functions are called per element, and the result has ``x``'s dtype.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> x = jnp.array([-2.0, 0.5, 3.0])
        >>> jnp.piecewise(x, [x < 0, x > 1], [lambda v: -v, lambda v: v * 10, 0.0])
        Array([ 2.,  0., 30.], dtype=float32)
    """
    x = as_value(x)
    conditions = as_value(condlist, bool)
    n_conditions, n_functions = len(condlist), len(funclist)
    if n_functions == n_conditions + 1:
        funclist = [funclist[-1], *funclist[:-1]]
    elif n_functions == n_conditions:
        funclist = [0, *funclist]
    else:
        raise ValueError(f"piecewise: with {n_conditions} condition(s), {n_conditions} or "
                         f"{n_conditions + 1} functions are expected, got {n_functions}.")
    # which function each element takes: 0 (the default) or one past the last true condition
    chosen = argmax(cumsum(concatenate([zeros_like(conditions[:1]), conditions]), axis=0),
                    axis=0)
    pieces = [_piece(f, get_aval(x).dtype, args, kw) for f in funclist]
    try:
        choices = chosen._concrete_value("piecewise")
    except ConcretizationTypeError:  # under jit or vmap: every piece, the chosen kept
        return _every_piece_selected(x, chosen, pieces)
    # Eagerly and under grad, each element is given to its own piece only, as JAX's
    # lax.switch does: another piece's NaN (sqrt of a negative) cannot reach the gradient.
    flat = ravel(x)
    values = [pieces[k](flat[i]) for i, k in enumerate(np.ravel(choices))]
    return reshape(stack(values), get_aval(x).shape) if values else x


def _piece(f: Any, dtype: np.dtype, args: tuple, kw: dict) -> Callable:
    """A piece of ``piecewise`` as a function of a scalar, returning ``dtype``."""
    if callable(f):
        return lambda v: astype(f(v, *args, **kw), dtype)
    return lambda v: astype(f, dtype)


def _every_piece_selected(x, chosen, pieces: list[Callable]):
    """Each piece of every element, and the chosen one kept (so a piece is computed where it
    is not chosen too, as in JAX when its switch is batched)."""
    result = lax.full(get_aval(x).shape, 0, get_aval(x).dtype)
    for k, piece in enumerate(pieces):
        result = where(chosen == k, vectorize(piece)(x), result)
    return result
