"""Rounding to whole numbers and the gaps between floats: ``rint`` (to the nearest, halves to
even), ``modf`` (a number's fractional and whole parts) and ``spacing`` (the distance to the
next float away from zero).

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.rint(jnp.array([0.5, 1.5, 2.7]))
    Array([0., 2., 3.], dtype=float32)
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from .. import prims as lax
from ..core import get_aval
from .cumulative import round
from .mathematical import copysign
from .more_ufuncs import nextafter
from .promotion import as_value, convert, promote_inexact
from .ufuncs import ceil, floor, where


def rint(x, /):
    """Each element rounded to the nearest whole number, halves to the even one; integers
    and booleans become the default float type.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.rint(jnp.array([-2.5, -1.5, 3]))
        Array([-2., -2.,  3.], dtype=float32)
    """
    x = as_value(x)
    if not dtypes.is_inexact(get_aval(x).dtype):
        return convert(x, dtypes.default_float_dtype())
    return round(x)


def modf(x, /, out: None = None):
    """The fractional and the whole parts of each element, both with its sign.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.modf(jnp.array([2.5, -1.25]))
        (Array([ 0.5 , -0.25], dtype=float32), Array([ 2., -1.], dtype=float32))
    """
    if out is not None:
        raise NotImplementedError("The 'out' argument is not supported: JAX arrays are "
                                  "immutable. Use the returned arrays instead.")
    (x,) = promote_inexact(x)
    whole = where(x >= 0, floor(x), ceil(x))
    return x - whole, whole


def spacing(x, /):
    """The distance from each element to the next float away from zero (toward +inf for
    float16, as NumPy): the size of one unit in the last place there.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.spacing(jnp.array([1.0, -1.0]))
        Array([ 1.1920929e-07, -1.1920929e-07], dtype=float32)
    """
    (x,) = promote_inexact(x)
    dtype = get_aval(as_value(x)).dtype
    if dtypes.is_complex(dtype):
        raise ValueError("jnp.spacing is not defined for complex numbers; take the spacing "
                         "of jnp.real(x) and jnp.imag(x) separately.")
    infinity = lax.full((), np.inf, dtype, get_aval(as_value(x)).weak_type)
    if dtype == np.float16:
        return nextafter(x, infinity) - x
    gap = nextafter(x, copysign(infinity, x)) - x
    return where(gap == 0, copysign(np.finfo(dtype).smallest_subnormal, x), gap)
