"""``jax.scipy.fft``: the discrete cosine transform (type 2, SciPy's default) and its inverse,
in one dimension and in several, on ``jnp.fft``.

The DCT-II of ``x`` (length N) is ``y[k] = 2 sum_n x[n] cos(pi k (2n + 1) / (2N))``. It is one
FFT of the same length: reorder ``x`` as its even entries, then its odd ones backwards (``v``),
and ``y[k] = 2 Re(exp(-i pi k / 2N) FFT(v)[k])``. The inverse runs the steps backwards: since
``v`` is real, ``FFT(v)[k]`` is ``exp(i pi k / 2N) (y[k] - i y[N - k]) / 2`` (with
``y[N] = 0``), one inverse FFT gives ``v``, and undoing the reordering gives ``x``. With
``norm="ortho"`` the transform is orthonormal: ``y[0]`` is scaled by ``sqrt(1 / 4N)`` and the
others by ``sqrt(1 / 2N)``. As JAX's, only type 2 is provided, and complex input is
transformed in its real and imaginary parts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import dtypes
from .. import numpy as jnp
from .. import prims as lax
from ..core import get_aval
from ..lax_composed import pad
from ..numpy.promotion import canonicalize_axis, promote_inexact

__all__ = ["dct", "dctn", "idct", "idctn"]


def _check(name: str, type: int, norm: str | None) -> None:  # noqa: A002 -- SciPy's name
    if type != 2:
        raise NotImplementedError(f"jax.scipy.fft.{name}: only the DCT of type 2 is "
                                  f"implemented (got type={type}).")
    if norm not in (None, "backward", "ortho"):
        raise ValueError(f"jax.scipy.fft.{name}: norm={norm!r} is not implemented; use None "
                         f"(or 'backward') or 'ortho'.")


def _resized(x: Any, n: int | None, axis: int) -> Any:
    """``x`` cut or padded with zeros to length ``n`` along ``axis``."""
    if n is None:
        return x
    if n < 1:
        raise ValueError(f"Invalid number of DCT data points ({n}) specified.")
    pads = [(0, n - get_aval(x).shape[axis] if a == axis else 0, 0)
            for a in range(get_aval(x).ndim)]
    return pad(x, lax.full((), 0, get_aval(x).dtype), pads)  # (a negative pad cuts)


def _ortho_scale(n: int, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    scale = np.full(n, math.sqrt(1 / (2 * n)))
    scale[0] = math.sqrt(1 / (4 * n))
    return scale.astype(dtype).reshape(shape)


def _twiddle(n: int, sign: int, dtype: np.dtype) -> np.ndarray:
    return np.exp(sign * 1j * np.pi * np.arange(n) / (2 * n)).astype(dtype)


def _on_parts(fun: Any, x: Any, *args: Any) -> Any:
    """``fun`` of a complex array: of its real and imaginary parts."""
    return lax.complex(fun(jnp.real(x), *args), fun(jnp.imag(x), *args))


def _even_then_odd_reversed(n: int) -> np.ndarray:
    """The reordering ``v`` of the module docstring: even indices, then odd ones backwards."""
    return np.concatenate([np.arange(0, n, 2), np.arange(1, n, 2)[::-1]])


def _dct_last(x: Any, ortho: bool) -> Any:
    """The DCT-II along the last axis of a real float array."""
    n = get_aval(x).shape[-1]
    spectrum = jnp.fft.fft(x[..., _even_then_odd_reversed(n)], axis=-1)
    y = 2 * jnp.real(spectrum * _twiddle(n, -1, get_aval(spectrum).dtype))
    return y * _ortho_scale(n, get_aval(y).dtype, (n,)) if ortho else y


def _idct_last(y: Any, ortho: bool) -> Any:
    """The inverse of ``_dct_last``."""
    n = get_aval(y).shape[-1]
    if ortho:
        y = y / _ortho_scale(n, get_aval(y).dtype, (n,))
    mirrored = jnp.concatenate([jnp.zeros_like(y[..., :1]), y[..., :0:-1]], axis=-1)
    spectrum = lax.complex(y, -mirrored) * _twiddle(n, 1, dtypes.complex_dtype(get_aval(y).dtype))
    v = jnp.real(jnp.fft.ifft(spectrum / 2, axis=-1))
    return v[..., np.argsort(_even_then_odd_reversed(n))]


def _along(fun: Any, x: Any, n: int | None, axis: int, norm: str | None) -> Any:
    (x,) = promote_inexact(x)
    if dtypes.is_complex(get_aval(x).dtype):
        return _on_parts(lambda part: _along(fun, part, n, axis, norm), x)
    axis = canonicalize_axis(axis, get_aval(x).ndim)
    x = jnp.moveaxis(_resized(x, n, axis), axis, -1)
    return jnp.moveaxis(fun(x, norm == "ortho"), -1, axis)


def dct(x: Any, type: int = 2, n: int | None = None, axis: int = -1,  # noqa: A002
        norm: str | None = None) -> Any:
    """The discrete cosine transform of type 2 along ``axis`` (``n``: cut or zero-padded
    to that length first), as ``scipy.fft.dct``.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> from stage1_autodiff.scipy.fft import dct
        >>> print(dct(jnp.array([1.0, 2.0, 3.0, 4.0])))
        [20.         -6.308644    0.         -0.44834155]
    """
    _check("dct", type, norm)
    return _along(_dct_last, x, n, axis, norm)


def idct(x: Any, type: int = 2, n: int | None = None, axis: int = -1,  # noqa: A002
         norm: str | None = None) -> Any:
    """The inverse of ``dct`` along ``axis``, as ``scipy.fft.idct``."""
    _check("idct", type, norm)
    return _along(_idct_last, x, n, axis, norm)


def _axes_and_sizes(x: Any, s: Sequence[int] | int | None, axes: Sequence[int] | None
                    ) -> list[tuple[int, int | None]]:
    ndim = get_aval(jnp.asarray(x)).ndim
    sizes = None if s is None else [s] if isinstance(s, int) else list(s)
    if sizes is not None and len(sizes) > ndim:
        raise ValueError(f"s must have at most x.ndim ({ndim}) elements, got {len(sizes)}.")
    if axes is None:
        axes = range(ndim - len(sizes), ndim) if sizes is not None else range(ndim)
    axes = [canonicalize_axis(a, ndim) for a in axes]
    if sizes is not None and len(sizes) != len(axes):
        raise ValueError(f"s and axes must have the same length, got {len(sizes)} sizes "
                         f"and {len(axes)} axes.")
    return list(zip(axes, sizes if sizes is not None else [None] * len(axes)))


def dctn(x: Any, type: int = 2, s: Sequence[int] | None = None,  # noqa: A002
         axes: Sequence[int] | None = None, norm: str | None = None) -> Any:
    """The DCT of type 2 over several axes (all by default), one after the other: the
    transform is separable. ``s``: the lengths to cut or pad those axes to."""
    _check("dctn", type, norm)
    for axis, n in _axes_and_sizes(x, s, axes):
        x = _along(_dct_last, x, n, axis, norm)
    return jnp.asarray(x)


def idctn(x: Any, type: int = 2, s: Sequence[int] | None = None,  # noqa: A002
          axes: Sequence[int] | None = None, norm: str | None = None) -> Any:
    """The inverse of ``dctn``."""
    _check("idctn", type, norm)
    for axis, n in _axes_and_sizes(x, s, axes):
        x = _along(_idct_last, x, n, axis, norm)
    return jnp.asarray(x)
