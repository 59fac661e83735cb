"""``jax.scipy.signal``: N-dimensional convolution and correlation, directly (one
``conv_general_dilated``, the kernel flipped) or through the FFT; and the spectral analysis
of ``spectral.py`` (``stft``, ``istft``, ``welch``, ``csd``, ``detrend``).

A full convolution of sizes ``n`` and ``k`` has ``n + k - 1`` elements per dim; "same" keeps
the ``n`` in the middle (from ``(k - 1) // 2``), as SciPy does, and "valid" the ``n - k + 1``
that need no padding (the operands swapped when the second is the larger in every dim).
Integers compute in float32. A correlation is the convolution with the second operand flipped
and conjugated. Complex operands take four real convolutions.

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> from stage1_autodiff.scipy import signal
    >>> signal.convolve(jnp.array([1.0, 2.0, 3.0]), jnp.array([0.0, 1.0, 0.5]))
    Array([0. , 1. , 2.5, 4. , 1.5], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import dtypes
from .. import numpy as jnp
from ..convolution import conv_general_dilated
from ..core import get_aval
from ..numpy.promotion import promote_inexact
from .spectral import csd, detrend, istft, stft, welch

__all__ = ["convolve", "convolve2d", "correlate", "correlate2d", "csd", "detrend",
           "fftconvolve", "istft", "stft", "welch"]


def _operands(name: str, in1: Any, in2: Any, mode: str) -> tuple[Any, Any]:
    in1, in2 = promote_inexact(in1, in2)
    if get_aval(in1).ndim != get_aval(in2).ndim:
        raise ValueError(f"{name}: in1 and in2 should have the same dimensionality, got "
                         f"{get_aval(in1).shape} and {get_aval(in2).shape}.")
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"{name}: mode must be 'full', 'same' or 'valid', got {mode!r}.")
    return in1, in2


def _swap_for_valid(name: str, in1: Any, in2: Any, mode: str) -> tuple[Any, Any]:
    n, k = get_aval(in1).shape, get_aval(in2).shape
    if mode != "valid" or all(a >= b for a, b in zip(n, k)):
        return in1, in2
    if all(b >= a for a, b in zip(n, k)):
        return in2, in1
    raise ValueError(f"{name}: in mode 'valid' one operand must be at least as large as the "
                     f"other in every dimension, got {n} and {k}.")


def _cut(full: Any, n: Sequence[int], k: Sequence[int], mode: str,
         axes: Sequence[int]) -> Any:
    """The part of a full convolution along ``axes`` that ``mode`` keeps."""
    index = [slice(None)] * get_aval(full).ndim
    for axis, a, b in zip(axes, n, k):
        if mode == "same":
            index[axis] = slice((b - 1) // 2, (b - 1) // 2 + a)
        elif mode == "valid":
            index[axis] = slice(b - 1, a)
    return full[tuple(index)]


def _real_convolution(x: Any, y: Any, precision: Any) -> Any:
    """The full convolution of two real arrays of one rank: a correlation with ``y``
    flipped, each operand seen as one image of one feature."""
    ndim = get_aval(x).ndim
    padding = [(b - 1, b - 1) for b in get_aval(y).shape]
    out = conv_general_dilated(x[None, None], jnp.flip(y)[None, None], (1,) * ndim, padding,
                               precision=precision)
    return out[0, 0]


def _full_convolution(x: Any, y: Any, precision: Any) -> Any:
    if not dtypes.is_complex(get_aval(x).dtype):
        return _real_convolution(x, y, precision)
    real = _real_convolution(x.real, y.real, precision) - _real_convolution(x.imag, y.imag,
                                                                           precision)
    imag = _real_convolution(x.real, y.imag, precision) + _real_convolution(x.imag, y.real,
                                                                           precision)
    return jnp.asarray(real + 1j * imag, get_aval(x).dtype)


def convolve(in1: Any, in2: Any, mode: str = "full", method: str = "auto",
             precision: Any = None) -> Any:
    """The N-dimensional convolution of ``in1`` and ``in2`` (of one rank), "full", "same"
    or "valid". ``method`` "fft" takes the FFT; "auto" and "direct" a convolution."""
    in1, in2 = _operands("convolve", in1, in2, mode)
    if method == "fft":
        return fftconvolve(in1, in2, mode)
    if method not in ("auto", "direct"):
        raise ValueError(f"convolve: method must be 'auto', 'direct' or 'fft', got {method!r}.")
    in1, in2 = _swap_for_valid("convolve", in1, in2, mode)
    n, k = get_aval(in1).shape, get_aval(in2).shape
    return _cut(_full_convolution(in1, in2, precision), n, k, mode, range(len(n)))


def correlate(in1: Any, in2: Any, mode: str = "full", method: str = "auto",
              precision: Any = None) -> Any:
    """The N-dimensional cross-correlation: ``convolve`` with ``in2`` flipped and
    conjugated."""
    in1, in2 = _operands("correlate", in1, in2, mode)
    return convolve(in1, jnp.flip(jnp.conj(in2)), mode, method, precision)


def _check_2d(name: str, in1: Any, in2: Any, boundary: str, fillvalue: Any) -> None:
    if jnp.ndim(in1) != 2 or jnp.ndim(in2) != 2:
        raise ValueError(f"{name}() only supports 2-dimensional inputs.")
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError(f"{name}() only supports boundary='fill', fillvalue=0 (as "
                                  f"JAX's); pad the input with jnp.pad for other boundaries.")


def convolve2d(in1: Any, in2: Any, mode: str = "full", boundary: str = "fill",
               fillvalue: Any = 0, precision: Any = None) -> Any:
    """The 2-D convolution (``convolve`` of two matrices, zeros beyond the edges)."""
    _check_2d("convolve2d", in1, in2, boundary, fillvalue)
    return convolve(in1, in2, mode, precision=precision)


def correlate2d(in1: Any, in2: Any, mode: str = "full", boundary: str = "fill",
                fillvalue: Any = 0, precision: Any = None) -> Any:
    """The 2-D cross-correlation (``correlate`` of two matrices). Its "same" keeps the
    middle of the full correlation from ``k // 2``, as SciPy's ``correlate2d`` does (one
    later than ``correlate``'s for an even size ``k``)."""
    _check_2d("correlate2d", in1, in2, boundary, fillvalue)
    if mode != "same":
        return correlate(in1, in2, mode, precision=precision)
    full = correlate(in1, in2, "full", precision=precision)
    (n0, n1), (k0, k1) = jnp.shape(in1), jnp.shape(in2)
    return full[k0 // 2:k0 // 2 + n0, k1 // 2:k1 // 2 + n1]


def fftconvolve(in1: Any, in2: Any, mode: str = "full",
                axes: Sequence[int] | None = None) -> Any:
    """The convolution along ``axes`` (all by default) through the FFT: the product of the
    operands' transforms, each padded to ``n + k - 1``; the other dims broadcast."""
    in1, in2 = _operands("fftconvolve", in1, in2, mode)
    ndim = get_aval(in1).ndim
    axes = list(range(ndim)) if axes is None else [a % ndim for a in axes]
    if mode == "valid":
        in1, in2 = _swap_for_valid("fftconvolve", *(
            jnp.moveaxis(x, axes, range(len(axes))) for x in (in1, in2)), mode)
        in1, in2 = (jnp.moveaxis(x, range(len(axes)), axes) for x in (in1, in2))
    n = [get_aval(in1).shape[a] for a in axes]
    k = [get_aval(in2).shape[a] for a in axes]
    sizes = [a + b - 1 for a, b in zip(n, k)]
    if dtypes.is_complex(get_aval(in1).dtype):
        full = jnp.fft.ifftn(jnp.fft.fftn(in1, sizes, axes) * jnp.fft.fftn(in2, sizes, axes),
                             sizes, axes)
    else:
        full = jnp.fft.irfftn(jnp.fft.rfftn(in1, sizes, axes) * jnp.fft.rfftn(in2, sizes, axes),
                              sizes, axes)
    return _cut(full.astype(get_aval(in1).dtype), n, k, mode, axes)
