"""``jnp.add`` and thirteen other functions are ``jnp.ufunc`` objects, as in JAX: called,
each is the plain function; its methods (``jnp.add.reduce``, ``jnp.multiply.outer``,
``jnp.add.at``...) take the fast paths a reader would write by hand (``jnp.add.reduce`` is
``jnp.sum``, ``jnp.add.at`` an ``.at[].add``), and the others ``ufunc``'s steps.

The names, ``nin``, ``nout`` and ``identity`` of each are JAX 0.10.2's; inside the library
the plain functions of ``ufuncs.py`` are used, so an operator such as ``x + y`` pays nothing
for the object.

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.multiply.outer(jnp.array([1, 2]), jnp.array([1, 2, 3]))
    Array([[1, 2, 3],
           [2, 4, 6]], dtype=int32)
    >>> jnp.add.at(jnp.zeros(3), jnp.array([0, 0, 2]), 1.0, inplace=False)
    Array([2., 0., 1.], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import cumulative, mathematical, more_ufuncs, reductions, ufuncs
from .promotion import as_value
from .ufunc_objects import ufunc


def _reduction(fn: Callable[..., Any], takes_dtype: bool) -> Callable[..., Any]:
    """``ufunc.reduce``'s arguments passed to the reduction ``fn`` (``jnp.sum``...)."""
    def reduce(a, *, axis, dtype, keepdims, initial, where):
        if takes_dtype:
            return fn(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial,
                      where=where)
        a = as_value(a) if dtype is None else ufuncs.astype(a, dtype)
        if initial is None:
            return fn(a, axis=axis, keepdims=keepdims, where=where)
        return fn(a, axis=axis, keepdims=keepdims, initial=initial, where=where)
    return reduce


def _logical(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``jnp.all`` or ``jnp.any`` as ``reduce`` (no ``initial``: the identity is the answer
    of nothing, and ``initial`` of the other value decides the result)."""
    def reduce(a, *, axis, dtype, keepdims, initial, where):
        out = fn(a, axis=axis, keepdims=keepdims, where=where)
        if initial is not None:
            out = (ufuncs.logical_and if fn is reductions.all else ufuncs.logical_or)(
                out, bool(initial))
        return out if dtype is None else ufuncs.astype(out, dtype)
    return reduce


def _update(method: str) -> Callable[..., Any]:
    """``ufunc.at`` as the ``.at[indices]`` update ``method``."""
    def at(a, indices, b):
        return getattr(as_value(a).at[indices], method)(b)
    return at


def _make(fn: Callable[..., Any], nin: int, identity: Any = None, **methods: Any) -> ufunc:
    return ufunc(fn, nin, 1, name=fn.__name__, identity=identity, call=fn, **methods)


add = _make(ufuncs.add, 2, 0, reduce=_reduction(reductions.sum, True),
            accumulate=cumulative.cumsum, at=_update("add"))
multiply = _make(ufuncs.multiply, 2, 1, reduce=_reduction(reductions.prod, True),
                 accumulate=cumulative.cumprod, at=_update("multiply"))
subtract = _make(ufuncs.subtract, 2)
maximum = _make(ufuncs.maximum, 2, reduce=_reduction(reductions.max, False),
                at=_update("max"))
minimum = _make(ufuncs.minimum, 2, reduce=_reduction(reductions.min, False),
                at=_update("min"))
logical_and = _make(ufuncs.logical_and, 2, True, reduce=_logical(reductions.all))
logical_or = _make(ufuncs.logical_or, 2, False, reduce=_logical(reductions.any))
logical_xor = _make(ufuncs.logical_xor, 2, False)
bitwise_and = _make(ufuncs.bitwise_and, 2, -1)
bitwise_or = _make(ufuncs.bitwise_or, 2, 0)
bitwise_xor = _make(ufuncs.bitwise_xor, 2, 0)
logaddexp = _make(mathematical.logaddexp, 2, -np.inf)
logaddexp2 = _make(more_ufuncs.logaddexp2, 2, -np.inf)
negative = _make(ufuncs.negative, 1)
