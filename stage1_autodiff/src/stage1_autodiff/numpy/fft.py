"""``jax.numpy.fft``: discrete Fourier transforms, NumPy's API on the one ``fft`` primitive
(``stage1_autodiff/fft.py``).

Every function is one path (``_fft_core``): the chosen axes move to the end (the primitive
transforms trailing dims), each is cropped or zero-padded to the requested length ``s`` (or
``n``), the primitive runs, ``norm`` scales the result, and the axes move back. So the
transforms are differentiable, jittable and batchable because the primitive is, and
``fftshift`` and ``fftfreq`` are plain array code.

``norm`` is ``"backward"`` (the default: no scaling forward, ``1/N`` back), ``"ortho"``
(``1/sqrt(N)`` both ways) or ``"forward"`` (``1/N`` forward, none back).

NB: JAX's functions are in ``jax/_src/numpy/fft.py`` (``_fft_core``), on the ``fft``
primitive of ``jax/_src/lax/fft.py``.

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> jnp.fft.rfft(jnp.array([1.0, 2.0, 1.0, 0.0]))
    Array([4.+0.j, 0.-2.j, 0.+0.j], dtype=complex64)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .. import dtypes
from .. import prims as lax
from ..core import get_aval
from ..fft import FftType
from ..fft import fft as lax_fft
from .arrangement import roll
from .creation import arange
from .padding import pad
from .promotion import as_value, canonicalize_axes
from .shapes import moveaxis

__all__ = ["fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifft2", "ifftn",
           "ifftshift", "ihfft", "irfft", "irfft2", "irfftn", "rfft", "rfft2", "rfftfreq",
           "rfftn"]

_NORMS = ("backward", "ortho", "forward")


def _fft_core(name: str, fft_type: FftType, a: Any, s: Sequence[int] | None,
              axes: Sequence[int] | None, norm: str | None) -> Any:
    """The transform of ``a`` over ``axes`` with lengths ``s``, as every function here."""
    arr = as_value(a)
    ndim = get_aval(arr).ndim
    s, axes = _lengths_and_axes(name, s, axes, ndim)
    if not axes:
        raise ValueError(f"jax.numpy.fft.{name}: no axes to transform (the array has "
                         f"{ndim} dims).")
    trailing = tuple(range(ndim - len(axes), ndim))
    arr = moveaxis(arr, axes, trailing)
    shape = get_aval(arr).shape
    if s is None:
        s = [shape[d] for d in trailing]
        if fft_type == FftType.IRFFT:
            s[-1] = 2 * (s[-1] - 1)
    else:
        arr = _cropped_or_padded(arr, s, fft_type)
    if any(n < 1 for n in s):
        raise ValueError(f"jax.numpy.fft.{name}: transform lengths must be at least 1, got "
                         f"{tuple(s)}. (An inverse real transform of a length-1 axis needs "
                         f"an explicit n.)")
    out = lax_fft(arr, fft_type, tuple(s))
    out = _normalized(out, name, math.prod(s), norm)
    return moveaxis(out, trailing, axes)


def _lengths_and_axes(name: str, s, axes, ndim: int) -> tuple[list[int] | None, tuple]:
    if s is not None:
        s = [int(n) for n in s]
        if any(n < 0 for n in s):
            raise ValueError(f"jax.numpy.fft.{name}: shape should be a non-negative tuple, "
                             f"got s={tuple(s)}.")
        if axes is not None and len(s) != len(axes):
            raise ValueError(f"jax.numpy.fft.{name}: shape and axes have different lengths "
                             f"(s={tuple(s)}, axes={tuple(axes)}).")
    if axes is None:
        axes = range(ndim) if s is None else range(ndim - len(s), ndim)
    axes = tuple(axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"jax.numpy.fft.{name} does not support repeated axes. Got axes "
                         f"{axes}.")
    return s, canonicalize_axes(axes, ndim, f"jax.numpy.fft.{name}")


def _cropped_or_padded(arr: Any, s: Sequence[int], fft_type: FftType) -> Any:
    """The trailing dims of ``arr`` cut or zero-padded to the lengths ``s`` (the last to
    ``s[-1] // 2 + 1`` frequencies, for IRFFT)."""
    shape = list(get_aval(arr).shape)
    target = shape[:len(shape) - len(s)] + list(s)
    if fft_type == FftType.IRFFT:
        target[-1] = target[-1] // 2 + 1
    if any(t < n for t, n in zip(target, shape)):
        arr = lax.slice(arr, [0] * len(shape), [min(t, n) for t, n in zip(target, shape)])
    if any(t > n for t, n in zip(target, shape)):
        arr = pad(arr, [(0, max(t - n, 0)) for t, n in zip(target, shape)])
    return arr


def _normalized(out: Any, name: str, size: int, norm: str | None) -> Any:
    if norm is None or norm == "backward":
        return out
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm!r}; should be "backward", "ortho" or '
                         f'"forward".')
    inverse = name.startswith("i")
    if norm == "ortho":
        scale = math.sqrt(size) if inverse else 1 / math.sqrt(size)
    else:
        scale = size if inverse else 1 / size
    return out * scale


def fft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The 1-D discrete Fourier transform along ``axis``, of length ``n`` (the input cropped
    or zero-padded to it)."""
    return _fft_core("fft", FftType.FFT, a, None if n is None else [n], [axis], norm)


def ifft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The inverse of :func:`fft`."""
    return _fft_core("ifft", FftType.IFFT, a, None if n is None else [n], [axis], norm)


def rfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The FFT of a real signal: the ``n // 2 + 1`` non-negative frequencies."""
    return _fft_core("rfft", FftType.RFFT, a, None if n is None else [n], [axis], norm)


def irfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The inverse of :func:`rfft`: a real signal of length ``n`` (by default
    ``2 * (m - 1)`` for ``m`` frequencies)."""
    return _fft_core("irfft", FftType.IRFFT, a, None if n is None else [n], [axis], norm)


def _swapped(norm: str | None) -> str:
    """The norm of the transform run the other way: what scaled the forward one now scales
    the inverse one."""
    if norm is not None and norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm!r}; should be "backward", "ortho" or '
                         f'"forward".')
    return {"forward": "backward", "ortho": "ortho"}.get(norm, "forward")


def hfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The FFT of a signal whose spectrum is Hermitian-symmetric, given its first half: ``n``
    real values (by default ``2 * (m - 1)``). It is :func:`irfft` of the conjugate, with
    the forward transform's scaling."""
    return irfft(lax.conj(as_value(a)), n, axis, _swapped(norm))


def ihfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The inverse of :func:`hfft`: the first half (``n // 2 + 1`` values) of a real signal's
    Hermitian-symmetric inverse transform."""
    return lax.conj(rfft(a, n, axis, _swapped(norm)))


def fftn(a, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
         norm: str | None = None):
    """The N-D transform over ``axes`` (all, or the last ``len(s)``)."""
    return _fft_core("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None):
    """The inverse of :func:`fftn`."""
    return _fft_core("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None):
    """The N-D transform of a real signal; the last axis keeps ``s[-1] // 2 + 1``."""
    return _fft_core("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
           norm: str | None = None):
    """The inverse of :func:`rfftn`."""
    return _fft_core("irfftn", FftType.IRFFT, a, s, axes, norm)


def fft2(a, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
         norm: str | None = None):
    """:func:`fftn` over the last two axes."""
    return _fft_core("fft2", FftType.FFT, a, s, axes, norm)


def ifft2(a, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
          norm: str | None = None):
    """:func:`ifftn` over the last two axes."""
    return _fft_core("ifft2", FftType.IFFT, a, s, axes, norm)


def rfft2(a, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
          norm: str | None = None):
    """:func:`rfftn` over the last two axes."""
    return _fft_core("rfft2", FftType.RFFT, a, s, axes, norm)


def irfft2(a, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
           norm: str | None = None):
    """:func:`irfftn` over the last two axes."""
    return _fft_core("irfft2", FftType.IRFFT, a, s, axes, norm)


def fftfreq(n: int, d: float = 1.0, *, dtype: Any = None, device: Any = None):
    """The sample frequencies of an ``n``-point FFT, in cycles per unit of the spacing ``d``:
    ``[0, 1, ..., n//2 - 1 (or (n-1)//2), -(n//2), ..., -1] / (d n)``."""
    del device
    dtype = dtypes.default_float_dtype() if dtype is None else dtype
    k = arange(n) - n * (arange(n) >= (n + 1) // 2)
    return (k / (d * n)).astype(dtype)


def rfftfreq(n: int, d: float = 1.0, *, dtype: Any = None, device: Any = None):
    """The sample frequencies of an ``n``-point RFFT: ``[0, 1, ..., n//2] / (d n)``."""
    del device
    dtype = dtypes.default_float_dtype() if dtype is None else dtype
    return (arange(n // 2 + 1) / (d * n)).astype(dtype)


def fftshift(x, axes: int | Sequence[int] | None = None):
    """The zero frequency moved to the middle: each axis rolled by half its length."""
    return _shift(x, axes, lambda n: n // 2)


def ifftshift(x, axes: int | Sequence[int] | None = None):
    """The inverse of :func:`fftshift` (they differ for odd lengths)."""
    return _shift(x, axes, lambda n: -(n // 2))


def _shift(x, axes, amount) -> Any:
    x = as_value(x)
    shape = get_aval(x).shape
    axes = canonicalize_axes(axes, len(shape), "fftshift")
    if not axes:
        return x
    return roll(x, [amount(shape[a]) for a in axes], axes)

