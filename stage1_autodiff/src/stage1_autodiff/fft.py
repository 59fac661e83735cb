"""The discrete Fourier transform as one primitive, ``fft``, over the trailing dims of its
operand (as many as ``fft_lengths`` has), in one of four kinds (``fft_type``):

- ``FFT``: complex to complex, ``X[k] = sum_n x[n] exp(-2 pi i k n / N)``;
- ``IFFT``: its inverse, with the ``1/N`` (as NumPy's ``ifft``);
- ``RFFT``: real to complex, keeping the ``N//2 + 1`` frequencies a real signal does not
  repeat (the rest are their conjugates);
- ``IRFFT``: its inverse, complex ``N//2 + 1`` to real ``N`` (``fft_lengths`` names ``N``).

The transform is linear, so its JVP is itself on the tangent, and its VJP is its transpose.
The matrix of the DFT is symmetric, so the transpose of ``FFT`` is ``FFT`` and of ``IFFT`` is
``IFFT``. The real kinds are not square: the transpose of ``RFFT`` pads the cotangent with
the dropped frequencies as zeros and takes the real part of their ``FFT``; the transpose of
``IRFFT`` is the conjugate of an ``RFFT`` whose frequencies that stand for two (a conjugate
pair) count twice.

NB: JAX's primitive is ``fft_p`` in ``jax/_src/lax/fft.py``, with these transposes
(``_rfft_transpose``, ``_irfft_transpose``); XLA runs it with DUCC's FFT on the CPU and
cuFFT on the GPU. We run NumPy's pocketfft, which computes in double precision.

Example:
    >>> from stage1_autodiff import lax
    >>> import numpy as np
    >>> lax.fft(np.array([1.0, 0.0, 0.0, 0.0], np.float32), "fft", (4,))
    Array([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j], dtype=complex64)
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

import numpy as np

from . import dtypes
from .complex_numbers import conj, real
from .core import (
    Array,
    Primitive,
    get_aval,
    impl_rules,
    jvp_rules,
    vjp_rules,
    weak_when_operands_weak,
)
from .primitives import broadcast_in_dim, convert_element_type, full, mul, pad

__all__ = ["FftType", "fft", "fft_p"]


class FftType(enum.IntEnum):
    """The four kinds of transform; a jaxpr prints them as their numbers, as JAX's do."""

    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3


fft_p = Primitive("fft")
weak_when_operands_weak.add(fft_p)  # the result is as weak as the operand, whatever its dtype


def fft(x, fft_type: FftType | str, fft_lengths: Sequence[int]):
    """``lax.fft``: the transform of ``x``'s last ``len(fft_lengths)`` dims. A real operand
    of FFT or IFFT becomes complex first, and an integer one of RFFT a float.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> fft(jnp.arange(4.0), FftType.RFFT, (4,))
        Array([ 6.+0.j, -2.+2.j, -2.+0.j], dtype=complex64)
    """
    fft_type = _fft_type(fft_type)
    dtype = get_aval(x).dtype
    if fft_type is FftType.RFFT:
        if dtypes.is_complex(dtype):
            raise ValueError("lax.fft of type RFFT takes a real operand, got complex "
                             f"{dtype}. Use FFT for a complex signal.")
        if not dtypes.is_float(dtype):
            x = convert_element_type(x, dtypes.default_float_dtype())
    elif not dtypes.is_complex(dtype):
        x = convert_element_type(x, dtypes.complex_dtype(dtype))
    return fft_p.bind(x, fft_type=fft_type, fft_lengths=tuple(int(n) for n in fft_lengths))


def _fft_type(fft_type: FftType | str) -> FftType:
    if isinstance(fft_type, str):
        try:
            return FftType[fft_type.upper()]
        except KeyError:
            raise ValueError(f"Unknown FFT type {fft_type!r}: expected 'fft', 'ifft', "
                             f"'rfft' or 'irfft' (or a jax.lax.FftType).") from None
    return FftType(fft_type)


def fft_impl(x, *, fft_type, fft_lengths):
    axes = tuple(range(x.ndim - len(fft_lengths), x.ndim))
    if fft_type == FftType.FFT:
        out = np.fft.fftn(x, axes=axes)
    elif fft_type == FftType.IFFT:
        out = np.fft.ifftn(x, axes=axes)
    elif fft_type == FftType.RFFT:
        out = np.fft.rfftn(x, axes=axes)
    else:
        out = np.fft.irfftn(x, s=fft_lengths, axes=axes)
    # pocketfft computes in double precision: store in the operand's precision.
    wanted = dtypes.real_dtype(x.dtype) if fft_type == FftType.IRFFT else (
        dtypes.complex_dtype(x.dtype))
    return out.astype(wanted)
impl_rules[fft_p] = fft_impl


def fft_vjp(ct, x, *, out, fft_type, fft_lengths):
    if fft_type == FftType.RFFT:
        return [_rfft_transpose(ct, fft_lengths)]
    if fft_type == FftType.IRFFT:
        return [_irfft_transpose(ct, fft_lengths)]
    return [fft_p.bind(ct, fft_type=fft_type, fft_lengths=fft_lengths)]
vjp_rules[fft_p] = fft_vjp


def fft_jvp(primals, tangents, *, fft_type, fft_lengths):
    (x,), (x_dot,) = primals, tangents
    params = dict(fft_type=fft_type, fft_lengths=fft_lengths)
    return fft_p.bind(x, **params), fft_p.bind(x_dot, **params)
jvp_rules[fft_p] = fft_jvp


def _rfft_transpose(ct, fft_lengths):
    """RFFT is the FFT of the real signal made complex, with the last ``n - (n//2 + 1)``
    frequencies dropped: transposed, those come back as zeros, then the FFT (its own
    transpose), then the real part (the transpose of making a real signal complex)."""
    aval = get_aval(ct)
    dropped = fft_lengths[-1] - aval.shape[-1]
    config = [(0, 0, 0)] * (aval.ndim - 1) + [(0, dropped, 0)]
    padded = pad(ct, full((), 0, aval.dtype), config)
    return real(fft_p.bind(padded, fft_type=FftType.FFT, fft_lengths=fft_lengths))


def _irfft_transpose(ct, fft_lengths):
    """IRFFT reads each frequency but the first (and the middle one, for an even length) as
    standing for itself and its conjugate twin: its transpose is the conjugate of the RFFT
    of the cotangent with those frequencies doubled, and IRFFT's ``1/N`` kept."""
    x = fft_p.bind(ct, fft_type=FftType.RFFT, fft_lengths=fft_lengths)
    n, odd = get_aval(x).shape[-1], fft_lengths[-1] % 2
    weights = np.full(n, 2.0)
    weights[0] = 1.0
    if not odd:
        weights[-1] = 1.0
    weights /= np.prod(fft_lengths)
    aval = get_aval(x)
    scale = broadcast_in_dim(Array(weights.astype(aval.dtype)), aval.shape, (aval.ndim - 1,))
    # IRFFT is linear over the reals only (it reads a frequency and its conjugate twin as
    # one), so its transpose in JAX's convention carries a conjugate.
    return conj(mul(x, scale))
