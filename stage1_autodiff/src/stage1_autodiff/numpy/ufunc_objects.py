"""NumPy's ufunc objects: a scalar function of ``nin`` inputs made elementwise, with the
methods ``reduce``, ``accumulate``, ``at``, ``reduceat`` and ``outer`` (``frompyfunc`` makes
one). Each method calls the function elementwise, step by step along the axis.

NB: ``jnp.add`` and thirteen other functions are ufunc objects made here with fast paths for
some methods (``jax_ufuncs.py``; JAX's are in jax/_src/numpy/ufunc_api.py). The steps here,
for the other methods, are Python loops where JAX uses ``fori_loop`` and ``scan``.

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> add = jnp.frompyfunc(lambda x, y: x + y, nin=2, nout=1, identity=0)
    >>> add.accumulate(jnp.array([1, 2, 3, 4]))
    Array([ 1,  3,  6, 10], dtype=int32)
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import prims as lax
from ..core import get_aval
from .functional import vectorize
from .indexing import take
from .promotion import as_value, broadcast_shapes, canonicalize_axis
from .shapes import broadcast_to, concatenate, expand_dims, moveaxis, ravel, reshape, stack
from .ufuncs import astype
from .ufuncs import where as where_  # ``where`` is also reduce's mask argument


class ufunc:  # noqa: N801 -- NumPy's and JAX's name
    """A function of ``nin`` scalars (returning ``nout`` values) applied elementwise, with
    NumPy's ufunc methods; ``identity`` is the value a reduction of nothing gives."""

    def __init__(self, func: Callable[..., Any], /, nin: int, nout: int, *,
                 name: str | None = None, nargs: int | None = None, identity: Any = None,
                 call: Callable[..., Any] | None = None, reduce: Callable[..., Any] | None = None,
                 accumulate: Callable[..., Any] | None = None,
                 at: Callable[..., Any] | None = None,
                 reduceat: Callable[..., Any] | None = None) -> None:
        self.__doc__ = func.__doc__
        self.__name__ = name or func.__name__
        self._func, self.nin, self.nout = func, operator.index(nin), operator.index(nout)
        self.nargs, self.identity = operator.index(nargs or nin), identity
        self._custom = {"call": call, "reduce": reduce, "accumulate": accumulate, "at": at,
                        "reduceat": reduceat}

    def _key(self) -> tuple:
        return (self._func, self.__name__, self.identity, self.nin, self.nout, self.nargs)

    def __hash__(self) -> int:
        return hash(self._key())

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ufunc) and self._key() == other._key()

    def __repr__(self) -> str:
        return f"<jnp.ufunc '{self.__name__}'>"

    def __call__(self, *args: Any, out: None = None, where: None = None) -> Any:
        if out is not None or where is not None:
            raise NotImplementedError(f"{self}: the out and where arguments are not "
                                      f"supported; JAX arrays are immutable.")
        return (self._custom["call"] or vectorize(self._func))(*args)

    def _check_binary(self, method: str) -> None:
        if self.nin != 2:
            raise ValueError(f"{method} only supported for binary ufuncs")
        if self.nout != 1:
            raise ValueError(f"{method} only supported for functions returning a single value")

    def _result_dtype(self, *args: Any) -> np.dtype:
        """The dtype the function gives for arguments of these arrays' dtypes (it is called
        on ones)."""
        ones = [lax.full((), 1, get_aval(a).dtype, get_aval(a).weak_type) for a in args]
        return get_aval(as_value(self._func(*ones))).dtype

    def reduce(self, a, axis: int | None = 0, dtype: Any = None, out: None = None,
               keepdims: bool = False, initial: Any = None, where: Any = None):
        """The function applied cumulatively along ``axis`` (all axes if None), from
        ``initial`` (default: the identity, else the first element); where ``where`` is
        False, an element is skipped."""
        self._check_binary("reduce")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduce()")
        if where is not None:
            if self.identity is None and initial is None:
                raise ValueError(f"reduction operation {self.__name__!r} does not have an "
                                 f"identity, so to use a where mask pass initial.")
            if get_aval(as_value(where)).dtype != np.bool_:
                raise ValueError("reduce: where must be booleans.")
        custom = self._custom["reduce"] or self._reduce_by_steps
        return custom(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial,
                      where=where)

    def _reduce_by_steps(self, a, axis: int | None = 0, dtype: Any = None,
                         keepdims: bool = False, initial: Any = None, where: Any = None):
        a = as_value(a)
        initial = self.identity if initial is None else initial
        dtype = self._result_dtype(a, a) if dtype is None else np.dtype(dtype)
        if where is not None:
            where = broadcast_to(where, get_aval(a).shape)
        if isinstance(axis, tuple):
            raise NotImplementedError("ufunc.reduce over a tuple of axes is not supported; "
                                      "reduce one axis at a time.")
        shape = get_aval(a).shape
        if axis is None:
            kept = (1,) * len(shape) if keepdims else ()
            a, where, axis = ravel(a), None if where is None else ravel(where), 0
        else:
            axis = canonicalize_axis(axis, len(shape), f"{self.__name__}.reduce")
            kept = shape[:axis] + ((1,) if keepdims else ()) + shape[axis + 1:]
        a = moveaxis(a, axis, 0)
        where = None if where is None else moveaxis(where, axis, 0)
        if get_aval(a).shape[0] == 0:
            if initial is None:
                raise ValueError(f"zero-size array to reduction operation {self.__name__} "
                                 f"which has no identity")
            return lax.full(kept, initial, dtype)
        start = 1 if initial is None else 0
        value = broadcast_to(astype(a[0] if initial is None else initial, dtype),
                             get_aval(a).shape[1:])
        for i in range(start, get_aval(a).shape[0]):
            step = self(value, astype(a[i], dtype))
            value = step if where is None else where_(where[i], step, value)
        return reshape(value, kept) if keepdims else value

    def accumulate(self, a, axis: int = 0, dtype: Any = None, out: None = None):
        """The running results of the function along ``axis``: the first element, then the
        function of the last result and the next element, and so on."""
        self._check_binary("accumulate")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.accumulate()")
        custom = self._custom["accumulate"]
        if custom is not None:
            return custom(a, axis=axis, dtype=dtype)
        a = as_value(a)
        dtype = self._result_dtype(a, a) if dtype is None else np.dtype(dtype)
        if axis is None or isinstance(axis, tuple):
            raise ValueError("accumulate does not allow multiple axes")
        axis = canonicalize_axis(axis, get_aval(a).ndim, f"{self.__name__}.accumulate")
        if get_aval(a).size == 0:
            return lax.full(get_aval(a).shape, 0, dtype)
        a = moveaxis(a, axis, 0)
        results = [astype(a[0], dtype)]
        for i in range(1, get_aval(a).shape[0]):
            results.append(self(results[-1], astype(a[i], dtype)))
        return moveaxis(stack(results), 0, axis)

    def at(self, a, indices: Any, b: Any = None, /, *, inplace: bool = True):
        """``a`` with the function applied at ``indices`` (with ``b``'s values as its second
        argument), once per occurrence of a repeated index; ``inplace=False`` is required."""
        if inplace:
            raise NotImplementedError("ufunc.at cannot update an array in place: JAX arrays "
                                      "are immutable. Pass inplace=False to get the updated "
                                      "array back.")
        custom = self._custom["at"]
        if custom is not None:
            return custom(a, indices) if b is None else custom(a, indices, b)
        return self._at_by_steps(a, indices, *(() if b is None else (b,)))

    def _at_by_steps(self, a, indices: Any, *args: Any):
        a = as_value(a)
        args = tuple(as_value(x) for x in args)
        dtype = self._result_dtype(a, *args)
        a, args = astype(a, dtype), tuple(astype(x, dtype) for x in args)
        if isinstance(indices, list):
            raise TypeError("ufunc.at: a list is not an index; use a tuple of indices, or "
                            "jnp.array(list) for an array index.")
        indices = indices if isinstance(indices, tuple) else (indices,)
        if not indices:
            return a
        shapes = [np.shape(i) for i in indices if not isinstance(i, slice)]
        shape = broadcast_shapes(*shapes) if shapes else ()
        if not shape:  # one place: a single update
            return a.at[indices].set(self(a.at[indices].get(), *args))
        count = int(np.prod(shape))
        args = tuple(reshape(broadcast_to(x, shape + get_aval(x).shape[len(shape):]),
                             (count,) + get_aval(x).shape[len(shape):]) for x in args)
        flat = [i if isinstance(i, slice) else ravel(broadcast_to(i, shape)) for i in indices]
        for k in range(count):  # one at a time, so that a repeated index is updated again
            place = tuple(i if isinstance(i, slice) else i[k] for i in flat)
            a = a.at[place].set(self(a.at[place].get(), *(x[k] for x in args)))
        return a

    def reduceat(self, a, indices: Any, axis: int = 0, dtype: Any = None, out: None = None):
        """Reductions of the segments of ``a`` along ``axis`` that start at each of the
        increasing ``indices`` (each segment up to the next index)."""
        self._check_binary("reduceat")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduceat()")
        custom = self._custom["reduceat"]
        if custom is not None:
            return custom(a, indices, axis=axis, dtype=dtype)
        a, indices = as_value(a), as_value(indices)
        if get_aval(a).ndim == 0:
            raise ValueError(f"reduceat: a must have 1 or more dims, got shape "
                             f"{get_aval(a).shape}.")
        if get_aval(indices).ndim != 1:
            raise ValueError(f"reduceat: indices must be 1-D, got shape "
                             f"{get_aval(indices).shape}.")
        if axis is None or isinstance(axis, (tuple, list)):
            raise ValueError("reduceat requires a single integer axis.")
        axis = canonicalize_axis(axis, get_aval(a).ndim, f"{self.__name__}.reduceat")
        out = take(a, indices, axis=axis)
        n = get_aval(a).shape[axis]
        others = tuple(d for d in range(get_aval(out).ndim) if d != axis)
        bounds = expand_dims(concatenate([indices, as_value([n])]), others)
        starts = take(bounds, as_value(list(range(get_aval(indices).shape[0]))), axis=axis)
        ends = take(bounds, as_value(list(range(1, get_aval(indices).shape[0] + 1))), axis=axis)
        for i in range(n):
            inside = (i > starts) & (i < ends)
            out = where_(inside, self(out, take(a, as_value([i]), axis=axis)), out)
        return astype(out, get_aval(a).dtype if dtype is None else dtype)

    def outer(self, A, B, /):
        """The function of every pair of an element of ``A`` and one of ``B``: shape
        ``A.shape + B.shape``."""
        self._check_binary("outer")
        A, B = as_value(A), as_value(B)
        shape_a, shape_b = get_aval(A).shape, get_aval(B).shape
        result = self(ravel(A)[:, None], ravel(B)[None, :])
        return reshape(result, shape_a + shape_b)


def frompyfunc(func: Callable[..., Any], /, nin: int, nout: int, *,
               identity: Any = None) -> ufunc:
    """A :class:`ufunc` of the scalar function ``func`` of ``nin`` inputs and ``nout``
    outputs.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> mul = jnp.frompyfunc(lambda x, y: x * y, nin=2, nout=1, identity=1)
        >>> mul.outer(jnp.array([1, 2]), jnp.array([1, 2, 3]))
        Array([[1, 2, 3],
               [2, 4, 6]], dtype=int32)
    """
    return ufunc(func, nin, nout, identity=identity)
