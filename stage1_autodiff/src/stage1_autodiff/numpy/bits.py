"""The bits of integers: ``bitwise_count``, the number of ones in the binary form of each
element's absolute value (NumPy's and JAX's population count); ``packbits`` and
``unpackbits``, between arrays of bits and bytes (uint8); ``view``, an array's bytes read as
another dtype (``x.view(dtype)``).

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.bitwise_count(jnp.array([0, 7, -8, 255]))
    Array([0, 3, 1, 8], dtype=uint8)
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from .. import prims as lax
from ..core import get_aval
from ..lax_composed import bitcast_convert_type, population_count
from .creation import arange
from .padding import pad
from .promotion import as_value
from .reductions import sum
from .shapes import ravel, reshape, stack, swapaxes
from .ufuncs import abs, astype, bitwise_and, left_shift, not_equal, right_shift


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
    return astype(population_count(abs(x)), np.uint8)  # of |x|, as NumPy and JAX count


def _check_bitorder(bitorder: str) -> None:
    if bitorder not in ("little", "big"):
        raise ValueError(f"bitorder must be 'little' or 'big', got {bitorder!r}.")


def packbits(a, axis: int | None = None, bitorder: str = "big"):
    """Whether each element of ``a`` is nonzero, as bits packed eight to a uint8 along
    ``axis`` (of the flattened ``a`` if None), the first bit the highest (``'big'``) or
    lowest (``'little'``); the last byte is padded with zeros.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.packbits(jnp.array([1, 0, 1, 1, 0, 0, 0, 0, 1]))
        Array([176, 128], dtype=uint8)
    """
    a = as_value(a)
    if not (dtypes.is_int(get_aval(a).dtype) or get_aval(a).dtype == np.bool_):
        raise TypeError(f"packbits: expected integers or booleans, got {get_aval(a).dtype}.")
    _check_bitorder(bitorder)
    bits = astype(a != 0, np.uint8)
    if axis is None:
        bits, axis = ravel(bits), 0
    bits = swapaxes(bits, axis, -1)
    padding = -get_aval(bits).shape[-1] % 8
    if padding:
        bits = pad(bits, [(0, 0)] * (get_aval(bits).ndim - 1) + [(0, padding)])
    shape = get_aval(bits).shape
    bytes_ = reshape(bits, shape[:-1] + (shape[-1] // 8, 8))
    shifts = arange(8, dtype=np.uint8)
    shifts = shifts[::-1] if bitorder == "big" else shifts
    packed = astype(sum(left_shift(bytes_, shifts), axis=-1), np.uint8)
    return swapaxes(packed, axis, -1)


def unpackbits(a, axis: int | None = None, count: int | None = None, bitorder: str = "big"):
    """The bits of each uint8 of ``a``, eight elements (0 or 1) each along ``axis`` (of the
    flattened ``a`` if None), the highest bit first (``'big'``) or the lowest; ``count``
    keeps that many (or pads with zeros to it).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.unpackbits(jnp.array([5], dtype=jnp.uint8), count=4, bitorder="little")
        Array([1, 0, 1, 0], dtype=uint8)
    """
    a = as_value(a)
    if get_aval(a).dtype != np.uint8:
        raise TypeError(f"unpackbits: expected uint8, got {get_aval(a).dtype}.")
    _check_bitorder(bitorder)
    if axis is None:
        a, axis = ravel(a), 0
    a = swapaxes(a, axis, -1)
    shifts = arange(8, dtype=np.uint8)
    shifts = shifts[::-1] if bitorder == "big" else shifts
    bits = astype(bitwise_and(right_shift(a[..., None], shifts), 1) > 0, np.uint8)
    bits = reshape(bits, get_aval(bits).shape[:-2] + (-1,))
    if count is not None:
        have = get_aval(bits).shape[-1]
        bits = pad(bits, [(0, 0)] * (get_aval(bits).ndim - 1) + [(0, count - have)]) \
            if count > have else bits[..., :count]
    return swapaxes(bits, axis, -1)


def view(x, dtype=None, type=None):  # noqa: A002 -- NumPy's name
    """``x``'s bytes read as ``dtype``, as NumPy's ``view`` of a C-contiguous array: the last
    dim grows or shrinks by the ratio of the widths. A bool is its byte, nonzero as True; a
    complex number its real and imaginary parts side by side.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> jnp.array([1.0], jnp.float32).view(jnp.uint16)
        Array([    0, 16256], dtype=uint16)
    """
    if type is not None:
        raise NotImplementedError("x.view(dtype, type=...) is not supported: arrays here have "
                                  "one type. Pass only the dtype.")
    x = as_value(x)
    if dtype is None:
        return x
    new = dtypes.check_and_canonicalize_user_dtype(dtype, "view")
    old = get_aval(x).dtype
    if old == new:
        return x
    if new == np.bool_:
        return not_equal(view(x, np.uint8), 0)
    if old == np.bool_:
        return view(astype(x, np.uint8), new)
    if old.kind == "c":  # the parts side by side, in the float of half the width
        parts = stack([lax.real(x), lax.imag(x)], axis=-1)
        return view(reshape(parts, (*get_aval(x).shape[:-1], -1)), new)
    if new.kind == "c":
        pairs = view(x, np.dtype(f"float{4 * new.itemsize}"))
        pairs = reshape(pairs, (*get_aval(pairs).shape[:-1], -1, 2))
        return lax.complex(pairs[..., 0], pairs[..., 1])
    return _view_words(x, old, new)


def _view_words(x, old: np.dtype, new: np.dtype):
    shape = get_aval(x).shape
    if old.itemsize >= new.itemsize:  # each element's pieces join the last dim
        out = bitcast_convert_type(x, new)
        return out if old.itemsize == new.itemsize else reshape(out, (*shape[:-1], -1))
    ratio = new.itemsize // old.itemsize
    if not shape or shape[-1] % ratio:
        raise ValueError(f"x.view({new}) of an array of {old} and shape {shape}: its last dim "
                         f"must hold a whole number of {new} values ({ratio} elements each).")
    grouped = reshape(x, (*shape[:-1], shape[-1] // ratio, ratio))
    return bitcast_convert_type(grouped, new)
