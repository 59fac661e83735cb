"""Questions about types and shapes rather than values: is it complex, what kind of dtype is
it, can one dtype be cast to another, what shape do shapes broadcast to.

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.isdtype(jnp.float32, "real floating")
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import dtypes
from ..core import Array, Tracer
from .mathematical import imag
from .promotion import broadcast_shapes as _broadcast_shapes

# NumPy's own: it knows every dtype we have (bfloat16 through ml_dtypes), as JAX uses it.
can_cast = np.can_cast


def iscomplexobj(x: Any) -> bool:
    """Whether ``x`` has a complex type (a complex number, or an array of a complex dtype),
    whatever its values.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.iscomplexobj(jnp.array([1.0, 2.0])), jnp.iscomplexobj(1 + 0j)
        (False, True)
    """
    if isinstance(x, (complex, np.complexfloating)):
        return True
    if x is None or isinstance(x, (bool, int, float, str, np.generic)):
        return False
    dtype = x.dtype if isinstance(x, (Array, Tracer)) or hasattr(x, "dtype") \
        else np.asarray(x).dtype
    return bool(np.issubdtype(dtype, np.complexfloating))


def isrealobj(x: Any) -> bool:
    """Whether ``x`` does not have a complex type (see :func:`iscomplexobj`)."""
    return not iscomplexobj(x)


def iscomplex(x):
    """Elementwise, whether the imaginary part is not zero.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.iscomplex(jnp.array([1 + 1j, 2 + 0j]))
        Array([ True, False], dtype=bool)
    """
    return imag(x) != 0


def isreal(x):
    """Elementwise, whether the imaginary part is zero (always, for real dtypes)."""
    return imag(x) == 0


def _kind_of(dtype: np.dtype) -> set[str]:
    """The array API's kinds ``dtype`` belongs to."""
    if dtype == np.bool_:
        return {"bool"}
    if dtypes.is_int(dtype):
        signed = "signed integer" if dtype.kind == "i" else "unsigned integer"
        return {signed, "integral", "numeric"}
    if dtypes.is_complex(dtype):
        return {"complex floating", "numeric"}
    if dtypes.is_float(dtype):
        return {"real floating", "numeric"}
    return set()


_KINDS = ("bool", "signed integer", "unsigned integer", "integral", "real floating",
          "complex floating", "numeric")


def isdtype(dtype: Any, kind: str | Any | tuple[str | Any, ...]) -> bool:
    """Whether ``dtype`` is of ``kind``: one of the array API's names ('bool', 'signed
    integer', 'unsigned integer', 'integral', 'real floating', 'complex floating',
    'numeric'), a dtype (then it must be that one), or a tuple of these (any of them).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.isdtype(jnp.int32, ("bool", "integral"))
        True
    """
    the_dtype = np.dtype(dtype)
    for one in kind if isinstance(kind, tuple) else (kind,):
        if isinstance(one, str) and one in _KINDS:
            if one in _kind_of(the_dtype):
                return True
            continue
        try:
            wanted = np.dtype(one)
        except TypeError as error:
            if isinstance(one, str):
                raise ValueError(f"isdtype: unrecognized kind {one!r}; expected one of "
                                 f"{list(_KINDS)}, or a dtype.") from error
            raise TypeError(f"isdtype: kind must be a dtype, a kind's name or a tuple of "
                            f"these; got {one!r}.") from error
        if the_dtype == wanted:
            return True
    return False


def broadcast_shapes(*shapes: Sequence[int] | int) -> tuple[int, ...]:
    """The shape that arrays of ``shapes`` broadcast to (an int is a 1-D shape).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.broadcast_shapes((3, 1), (4,), 4)
        (3, 4)
    """
    listed = [(s,) if np.ndim(s) == 0 else tuple(s) for s in shapes]
    return _broadcast_shapes(*listed) if listed else ()
