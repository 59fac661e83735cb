"""Counting the bits of integers: ``bitwise_count``, the number of ones in the binary form of
each element's absolute value (NumPy's and JAX's population count).

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.bitwise_count(jnp.array([0, 7, -8, 255]))
    Array([0, 3, 1, 8], dtype=uint8)
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import get_aval
from .promotion import as_value, convert
from .ufuncs import abs, astype, bitwise_and, right_shift


def bitwise_count(x, /):
    """The number of one bits in the absolute value of each element of the integers (or
    booleans) ``x``, as uint8.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.bitwise_count(jnp.array([True, False]))
        Array([1, 0], dtype=uint8)
    """
    x = as_value(x)
    dtype = get_aval(x).dtype
    if not (dtypes.is_int(dtype) or dtype == np.bool_):
        raise TypeError(f"bitwise_count: x must be integers or booleans, got {dtype}.")
    if dtype == np.bool_:
        return astype(x, np.uint8)
    # NB: JAX binds one population_count primitive; here each bit is shifted down and
    # masked, so the count is composed of primitives stage 1 already has.
    bits = convert(abs(x), np.dtype(f"uint{dtype.itemsize * 8}"))
    count = bits & 1
    for shift in range(1, dtype.itemsize * 8):
        count = count + bitwise_and(right_shift(bits, shift), 1)
    return astype(count, np.uint8)
