"""``jax.image``: resizing and the scale-and-translate it is made of.

Each resized dim is one contraction: the output's samples are weighted sums of the input's,
with a matrix of weights from the method's kernel (a triangle for "linear", Keys' cubic with
a = -0.5 for "cubic", a windowed sinc for "lanczos3" and "lanczos5"). Sample ``j`` of the
output sits at input coordinate ``(j + 0.5) / scale - translation / scale - 0.5``. When
shrinking, ``antialias`` widens the kernel by ``1 / scale`` so that every input contributes;
each column of weights sums to 1, and a sample that falls outside the input gets none.
"nearest" takes the input element the sample falls in instead. Being products and sums, the
results differentiate, batch and partition as those do.

NB: JAX's is jax/_src/image/scale.py.

Example:
    >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
    >>> jax.image.resize(jnp.array([0.0, 1.0, 2.0]), (6,), "linear")
    Array([0.  , 0.25, 0.75, 1.25, 1.75, 2.  ], dtype=float32)
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import dtypes
from . import numpy as jnp
from .core import get_aval
from .numpy.promotion import as_value

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]


class ResizeMethod(enum.Enum):
    """The resize methods, by JAX's names."""

    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4

    @staticmethod
    def from_string(name: str) -> ResizeMethod:
        methods = {"nearest": ResizeMethod.NEAREST, "linear": ResizeMethod.LINEAR,
                   "bilinear": ResizeMethod.LINEAR, "trilinear": ResizeMethod.LINEAR,
                   "triangle": ResizeMethod.LINEAR, "lanczos3": ResizeMethod.LANCZOS3,
                   "lanczos5": ResizeMethod.LANCZOS5, "cubic": ResizeMethod.CUBIC,
                   "bicubic": ResizeMethod.CUBIC, "tricubic": ResizeMethod.CUBIC}
        if name == "area":
            raise NotImplementedError('Resize method "area" is not implemented here; the '
                                      f"methods are {', '.join(methods)}.")
        if name not in methods:
            raise ValueError(f'Unknown resize method "{name}"')
        return methods[name]


def _triangle(x: Any) -> Any:
    return jnp.maximum(0.0, 1.0 - x)


def _keys_cubic(x: Any) -> Any:
    """Keys' cubic convolution kernel with a = -0.5 (Catmull-Rom), of |x|."""
    near = ((1.5 * x - 2.5) * x) * x + 1.0
    far = ((-0.5 * x + 2.5) * x - 4.0) * x + 2.0
    return jnp.where(x >= 1.0, jnp.where(x >= 2.0, 0.0, far), near)


def _lanczos(radius: int):
    def kernel(x: Any) -> Any:
        return jnp.where(x < radius, jnp.sinc(x) * jnp.sinc(x / radius), 0.0)
    return kernel


_KERNELS = {ResizeMethod.LINEAR: _triangle, ResizeMethod.CUBIC: _keys_cubic,
            ResizeMethod.LANCZOS3: _lanczos(3), ResizeMethod.LANCZOS5: _lanczos(5)}


def _weights(in_size: int, out_size: int, scale: Any, translation: Any, kernel,
             antialias: bool, dtype: np.dtype) -> Any:
    """The (in_size, out_size) matrix whose column ``j`` weighs the inputs of sample ``j``."""
    inverse = 1.0 / jnp.asarray(scale, dtype)
    widening = jnp.maximum(inverse, 1.0) if antialias else 1.0
    samples = (jnp.arange(out_size, dtype=dtype) + 0.5) * inverse \
        - jnp.asarray(translation, dtype) * inverse - 0.5
    distance = jnp.abs(samples[None, :] - jnp.arange(in_size, dtype=dtype)[:, None]) / widening
    weights = kernel(distance)
    total = jnp.sum(weights, axis=0, keepdims=True)
    tiny = 1000.0 * float(np.finfo(np.float32).eps)
    weights = jnp.where(jnp.abs(total) > tiny, weights / jnp.where(total != 0, total, 1), 0.0)
    inside = (samples >= -0.5) & (samples <= in_size - 0.5)
    return jnp.where(inside[None, :], weights, 0.0).astype(dtype)


def scale_and_translate(image: Any, shape: Sequence[int], spatial_dims: Sequence[int],
                        scale: Any, translation: Any, method: str | ResizeMethod,
                        antialias: bool = True, precision: Any = None) -> Any:
    """``image`` resampled along ``spatial_dims`` to ``shape``: the output's sample ``j`` of
    a dim is at input coordinate ``(j + 0.5 - translation) / scale - 0.5`` (one scale and
    translation per spatial dim). "nearest" is not a method here, as in JAX."""
    image = as_value(image)
    method = ResizeMethod.from_string(method) if isinstance(method, str) else method
    if method is ResizeMethod.NEAREST:
        raise ValueError("scale_and_translate does not take 'nearest'; use resize.")
    shape = tuple(int(n) for n in shape)
    _check_shape(image, shape)
    dtype = dtypes.inexact_dtype(get_aval(image).dtype)
    out = image.astype(dtype)
    scales, translations = jnp.asarray(scale, dtype), jnp.asarray(translation, dtype)
    for k, dim in enumerate(spatial_dims):
        in_size = get_aval(out).shape[dim]
        weights = _weights(in_size, shape[dim], scales[k], translations[k], _KERNELS[method],
                           antialias, dtype)
        out = jnp.moveaxis(jnp.tensordot(out, weights, axes=((dim,), (0,)),
                                         precision=precision), -1, dim)
    return out


def resize(image: Any, shape: Sequence[int], method: str | ResizeMethod,
           antialias: bool = True, precision: Any = None) -> Any:
    """``image`` resized to ``shape`` (one size per dim: every dim whose size changes is
    resampled) by ``method``: "nearest", "linear", "cubic", "lanczos3" or "lanczos5" (and
    JAX's other names for them). The result is a float unless "nearest" keeps the dtype."""
    image = as_value(image)
    shape = tuple(int(n) for n in shape)
    _check_shape(image, shape)
    method = ResizeMethod.from_string(method) if isinstance(method, str) else method
    if method is ResizeMethod.NEAREST:
        return _nearest(image, shape)
    changed = [d for d, (a, b) in enumerate(zip(get_aval(image).shape, shape)) if a != b]
    if not changed:
        return image.astype(dtypes.inexact_dtype(get_aval(image).dtype))
    in_shape = get_aval(image).shape
    scale = [shape[d] / in_shape[d] for d in changed]
    return scale_and_translate(image, shape, changed, scale, [0.0] * len(changed), method,
                               antialias, precision)


def _nearest(image: Any, shape: tuple[int, ...]) -> Any:
    """Each output element takes the input element its sample falls in."""
    for dim, (n, m) in enumerate(zip(get_aval(image).shape, shape)):
        if n != m:
            index = np.floor((np.arange(m) + 0.5) * n / m).astype(np.int32)
            image = jnp.take(image, np.minimum(index, n - 1), axis=dim)
    return image


def _check_shape(image: Any, shape: tuple[int, ...]) -> None:
    in_shape = get_aval(image).shape
    if len(shape) != len(in_shape):
        raise ValueError(f"shape must have length equal to the number of dimensions of x; "
                         f" {shape} vs {in_shape}")
