"""``jax.nn.initializers``: functions ``init(key, shape, dtype)`` that draw a layer's starting
weights, and the factories that make them (``normal(stddev)``, ``glorot_uniform()``, ...).

Every initializer is a few calls of ``jax.random``, whose bits are JAX's, so the same key
gives JAX's weights. The variance-scaling family (glorot, lecun, he) picks a distribution's
width from the weight's fans: fan in is the size of the input axis times the receptive field
(the product of the dims that are neither input, output nor batch), fan out likewise.

NB: JAX's are in jax/_src/nn/initializers.py. ``out_sharding`` lays the weights out over a
mesh: stage 1 has no devices and refuses it; stage 4's ``nn_initializers.py`` takes it.

Example:
    >>> import stage1_autodiff as jax
    >>> init = jax.nn.initializers.glorot_uniform()
    >>> init(jax.random.key(0), (3, 2)).shape
    (3, 2)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from . import dtypes, random
from . import numpy as jnp

Axes = int | Sequence[int]

__all__ = ["Initializer", "constant", "delta_orthogonal", "glorot_normal", "glorot_uniform",
           "he_normal", "he_uniform", "kaiming_normal", "kaiming_uniform", "lecun_normal",
           "lecun_uniform", "normal", "ones", "orthogonal", "truncated_normal", "uniform",
           "variance_scaling", "xavier_normal", "xavier_uniform", "zeros"]


@runtime_checkable
class Initializer(Protocol):
    """What every initializer is: ``init(key, shape, dtype=None, out_sharding=None)``, the
    weights of ``shape`` drawn with ``key`` (``isinstance(f, Initializer)`` checks only that
    ``f`` is callable, as for any runtime-checkable Protocol)."""

    def __call__(self, key: Any, shape: Sequence[int], dtype: Any = None,
                 out_sharding: Any = None) -> Any:
        raise NotImplementedError


def _dtype_and_layout(dtype: Any, out_sharding: Any, name: str) -> Any:
    """The default float type for a missing ``dtype``; ``out_sharding`` refused (stage 1)."""
    if out_sharding is not None:
        raise NotImplementedError(
            f"nn.initializers.{name}: out_sharding needs devices and meshes, which stage 1 "
            f"does not have; stage 4's jax.nn.initializers take it.")
    return dtypes.default_float_dtype() if dtype is None else dtype


def zeros(key: Any, shape: Sequence[int], dtype: Any = None, out_sharding: Any = None) -> Any:
    """An initializer: zeros (the key is ignored).

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.nn.initializers.zeros(jax.random.key(0), (2,))
        Array([0., 0.], dtype=float32)
    """
    return jnp.zeros(shape, _dtype_and_layout(dtype, out_sharding, "zeros"))


def ones(key: Any, shape: Sequence[int], dtype: Any = None, out_sharding: Any = None) -> Any:
    """An initializer: ones (the key is ignored)."""
    return jnp.ones(shape, _dtype_and_layout(dtype, out_sharding, "ones"))


def constant(value: Any, dtype: Any = None) -> Initializer:
    """An initializer that fills with ``value``.

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.nn.initializers.constant(-7)(jax.random.key(0), (2,))
        Array([-7., -7.], dtype=float32)
    """
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype, out_sharding: Any = None) -> Any:
        return jnp.full(shape, value, _dtype_and_layout(dtype, out_sharding, "constant"))
    return init


def uniform(scale: Any = 1e-2, dtype: Any = None) -> Initializer:
    """An initializer drawing uniformly from [0, ``scale``).

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.nn.initializers.uniform(10.0)(jax.random.key(0), (2,))
        Array([9.47667 , 9.785799], dtype=float32)
    """
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype, out_sharding: Any = None) -> Any:
        dtype = _dtype_and_layout(dtype, out_sharding, "uniform")
        return random.uniform(key, shape, dtype) * jnp.array(scale, dtype)
    return init


def normal(stddev: Any = 1e-2, dtype: Any = None) -> Initializer:
    """An initializer drawing from a normal of mean 0 and standard deviation ``stddev``.

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.nn.initializers.normal(1.0)(jax.random.key(0), (2,))
        Array([1.6226422, 2.0252647], dtype=float32)
    """
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype, out_sharding: Any = None) -> Any:
        dtype = _dtype_and_layout(dtype, out_sharding, "normal")
        return random.normal(key, shape, dtype) * jnp.array(stddev, dtype)
    return init


def truncated_normal(stddev: Any = 1e-2, dtype: Any = None, lower: Any = -2.0,
                     upper: Any = 2.0) -> Initializer:
    """An initializer drawing from a normal truncated to (``lower``, ``upper``), then
    multiplied by ``stddev`` (so the bounds are in standard deviations)."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype, out_sharding: Any = None) -> Any:
        dtype = _dtype_and_layout(dtype, out_sharding, "truncated_normal")
        return random.truncated_normal(key, lower, upper, shape, dtype) * jnp.array(stddev,
                                                                                    dtype)
    return init


def _size(shape: tuple[int, ...], axes: Axes) -> int:
    return shape[axes] if isinstance(axes, int) else math.prod(shape[a] for a in axes)


def _fans(shape: tuple[int, ...], in_axis: Axes, out_axis: Axes,
          batch_axis: Axes) -> tuple[float, float]:
    """(fan in, fan out): the input and output sizes, each times the receptive field."""
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(f"Can't compute input and output sizes of a {len(shape)}-dimensional "
                         f"weights tensor with default in_axis. Must be at least 2D or specify "
                         f"in_axis explicitly.")
    in_size, out_size = _size(shape, in_axis), _size(shape, out_axis)
    receptive_field = math.prod(shape) / in_size / out_size / _size(shape, batch_axis)
    return in_size * receptive_field, out_size * receptive_field


def _denominator(mode: str, fan_in: float, fan_out: float) -> float:
    if mode == "fan_in":
        return fan_in
    if mode == "fan_out":
        return fan_out
    if mode == "fan_avg":
        return (fan_in + fan_out) / 2
    if mode == "fan_geo_avg":
        return (fan_in * fan_out) ** 0.5
    raise ValueError(f"invalid mode for variance scaling initializer: {mode}")


def _complex_uniform(key: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """Uniform on the disc of radius sqrt(2) (variance 1): r = sqrt(2u), a uniform angle."""
    key_r, key_theta = random.split(key)
    real = dtypes.real_dtype(dtype)
    r = jnp.sqrt(2 * random.uniform(key_r, shape, real)).astype(dtype)
    theta = 2 * np.pi * random.uniform(key_theta, shape, real).astype(dtype)
    return r * jnp.exp(1j * theta)


def _complex_truncated_normal(key: Any, upper: float, shape: tuple[int, ...],
                              dtype: np.dtype) -> Any:
    """A complex normal with |z| < ``upper``: the radius by the inverse CDF of its
    (Rayleigh) law, truncated, and a uniform angle."""
    key_r, key_theta = random.split(key)
    real = dtypes.real_dtype(dtype)
    t = (1 - jnp.exp(jnp.array(-(upper ** 2), dtype))) * random.uniform(
        key_r, shape, real).astype(dtype)
    r = jnp.sqrt(-jnp.log(1 - t))
    theta = 2 * np.pi * random.uniform(key_theta, shape, real).astype(dtype)
    return r * jnp.exp(1j * theta)


def _scaled_draw(key: Any, shape: tuple[int, ...], dtype: np.dtype, variance: Any,
                 distribution: str) -> Any:
    """A draw of ``distribution`` with the given variance."""
    real = dtypes.is_float(dtype)
    if distribution == "truncated_normal":
        # The standard deviation of a standard normal truncated to (-2, 2) (complex: |z| < 2)
        spread = .87962566103423978 if real else .95311164380491208
        stddev = jnp.sqrt(variance) / jnp.array(spread, dtype)
        if real:
            return random.truncated_normal(key, -2, 2, shape, dtype) * stddev
        return _complex_truncated_normal(key, 2, shape, dtype) * stddev
    if distribution == "normal":
        return random.normal(key, shape, dtype) * jnp.sqrt(variance)
    if distribution == "uniform":
        if real:
            return random.uniform(key, shape, dtype, -1) * jnp.sqrt(3 * variance)
        return _complex_uniform(key, shape, dtype) * jnp.sqrt(variance)
    raise ValueError(f"invalid distribution for variance scaling initializer: {distribution}")


def variance_scaling(scale: Any, mode: str, distribution: str, in_axis: Axes = -2,
                     out_axis: Axes = -1, batch_axis: Axes = (), dtype: Any = None
                     ) -> Initializer:
    """An initializer whose draws have variance ``scale / n``, n by ``mode`` from the fans:
    ``"fan_in"``, ``"fan_out"``, ``"fan_avg"`` (their mean) or ``"fan_geo_avg"`` (geometric
    mean). ``distribution`` is ``"truncated_normal"`` (within 2 standard deviations),
    ``"normal"`` or ``"uniform"``; complex dtypes draw complex values of that variance.

    Example:
        >>> import stage1_autodiff as jax
        >>> init = jax.nn.initializers.variance_scaling(2.0, "fan_in", "normal")
        >>> w = init(jax.random.key(0), (1000, 10))
        >>> print(round(float(w.std()) * 1000 ** 0.5, 1))  # sqrt(2)
        1.4
    """
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype, out_sharding: Any = None) -> Any:
        shape = tuple(shape)
        dtype = np.dtype(_dtype_and_layout(dtype, out_sharding, "variance_scaling"))
        fan_in, fan_out = _fans(shape, in_axis, out_axis, batch_axis)
        variance = jnp.array(scale / _denominator(mode, fan_in, fan_out), dtype=dtype)
        return _scaled_draw(key, shape, dtype, variance, distribution)
    return init


def glorot_uniform(in_axis: Axes = -2, out_axis: Axes = -1, batch_axis: Axes = (),
                   dtype: Any = None) -> Initializer:
    """Glorot and Bengio's: uniform, variance 2 / (fan in + fan out)."""
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, batch_axis, dtype)


def glorot_normal(in_axis: Axes = -2, out_axis: Axes = -1, batch_axis: Axes = (),
                  dtype: Any = None) -> Initializer:
    """Glorot and Bengio's: truncated normal, variance 2 / (fan in + fan out)."""
    return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis, batch_axis,
                            dtype)


def lecun_uniform(in_axis: Axes = -2, out_axis: Axes = -1, batch_axis: Axes = (),
                  dtype: Any = None) -> Initializer:
    """LeCun's: uniform, variance 1 / fan in."""
    return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def lecun_normal(in_axis: Axes = -2, out_axis: Axes = -1, batch_axis: Axes = (),
                 dtype: Any = None) -> Initializer:
    """LeCun's: truncated normal, variance 1 / fan in."""
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis,
                            dtype)


def he_uniform(in_axis: Axes = -2, out_axis: Axes = -1, batch_axis: Axes = (),
               dtype: Any = None) -> Initializer:
    """He et al.'s, for relu layers: uniform, variance 2 / fan in."""
    return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def he_normal(in_axis: Axes = -2, out_axis: Axes = -1, batch_axis: Axes = (),
              dtype: Any = None) -> Initializer:
    """He et al.'s, for relu layers: truncated normal, variance 2 / fan in."""
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis,
                            dtype)


xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal


def orthogonal(scale: Any = 1.0, column_axis: int = -1, dtype: Any = None) -> Initializer:
    """An initializer of (semi-)orthogonal matrices times ``scale``: the weight, as a matrix
    of ``shape[column_axis]`` columns and the other dims' product of rows, has orthonormal
    rows or columns (whichever are fewer).

    Example:
        >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
        >>> w = jax.nn.initializers.orthogonal()(jax.random.key(0), (3, 3))
        >>> bool(jnp.allclose(w @ w.T, jnp.eye(3), atol=1e-6))
        True
    """
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype, out_sharding: Any = None) -> Any:
        dtype = _dtype_and_layout(dtype, out_sharding, "orthogonal")
        shape = tuple(shape)
        if len(shape) < 2:
            raise ValueError("orthogonal initializer requires at least a 2D shape")
        if 0 in shape:
            return jnp.zeros(shape, dtype)
        n_cols = shape[column_axis]
        q = random.orthogonal(key, math.prod(shape) // n_cols, (), dtype, n_cols)
        rows = tuple(np.delete(shape, column_axis))
        q = jnp.moveaxis(jnp.reshape(q, rows + (n_cols,)), -1, column_axis)
        return jnp.array(scale, dtype) * q
    return init


def delta_orthogonal(scale: Any = 1.0, column_axis: int = -1, dtype: Any = None
                     ) -> Initializer:
    """An initializer for 1-, 2- or 3-D convolution kernels (shape (*window, in, out)): zero
    but at the window's centre, which holds an orthogonal in x out matrix (Xiao et al.,
    2018), so the convolution starts as an orthogonal map of the channels."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype, out_sharding: Any = None) -> Any:
        dtype = _dtype_and_layout(dtype, out_sharding, "delta_orthogonal")
        shape = tuple(shape)
        if len(shape) not in (3, 4, 5):
            raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
        if shape[-1] < shape[-2]:
            raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
        matrix = orthogonal(scale, column_axis, dtype)(key, shape[-2:])
        centre = tuple((k - 1) // 2 for k in shape[:-2])
        return jnp.zeros(shape, dtype).at[centre].set(matrix)
    return init
