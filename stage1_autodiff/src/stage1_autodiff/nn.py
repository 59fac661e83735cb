"""``jax.nn``: activations and the softmax family, written with the numpy module."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import numpy as jnp
from . import primitives as lax
from .autodiff import stop_gradient
from .numpy.promotion import as_value, promote_inexact

Axis = int | Sequence[int] | None


def relu(x: Any) -> Any:
    """max(x, 0). Its derivative at 0 is taken as 0, as JAX does.

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.nn.relu(jax.numpy.array([-1.0, 2.0]))
        Array([0., 2.], dtype=float32)
    """
    x = as_value(x)
    return jnp.where(x > 0, x, jnp.zeros_like(x))


def sigmoid(x: Any) -> Any:
    """1 / (1 + exp(-x)), without overflow for large |x|."""
    (x,) = promote_inexact(x)
    return lax.logistic(x)


def softplus(x: Any) -> Any:
    """log(1 + exp(x)), as x + log1p(exp(-x)) for x > 0 and log1p(exp(x)) otherwise, so
    that exp never overflows. Each branch sees only inputs from its own side (the other
    side gets 0), so an unused branch cannot put NaN into the gradient. The derivative is
    sigmoid(x), 0.5 at 0.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.grad(jax.nn.softplus)(0.0))
        0.5
    """
    (x,) = promote_inexact(x)
    positive = x > 0
    x_pos = jnp.where(positive, x, 0.0)
    x_neg = jnp.where(positive, 0.0, x)
    return jnp.where(positive, x_pos + jnp.log1p(jnp.exp(-x_pos)), jnp.log1p(jnp.exp(x_neg)))


def gelu(x: Any, approximate: bool = True) -> Any:
    """The Gaussian error linear unit; ``approximate=True`` is the tanh form JAX uses.

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.nn.gelu(jax.numpy.array([0.0, 1.0]))
        Array([0.      , 0.841192], dtype=float32)
    """
    (x,) = promote_inexact(x)
    if not approximate:
        raise NotImplementedError("gelu(approximate=False) needs erf, which stage 1 lacks.")
    inner = math.sqrt(2 / math.pi) * (x + 0.044715 * (x * x * x))
    # A strong type even for a Python float, as JAX's (which casts to x's dtype at the end).
    return (0.5 * x * (1 + jnp.tanh(inner))).astype(x.dtype)


def logsumexp(a: Any, axis: Axis = None, keepdims: bool = False) -> Any:
    """log(sum(exp(a))) over ``axis``, shifted by the max so exp never overflows.

    Example:
        >>> import stage1_autodiff as jax
        >>> print(jax.nn.logsumexp(jax.numpy.array([1000.0, 1000.0])))
        1000.6932
    """
    (a,) = promote_inexact(a)
    top = stop_gradient(jnp.max(a, axis, keepdims=True))
    top = jnp.where(jnp.isfinite(top), top, jnp.zeros_like(top))  # all -inf: shift by 0
    total = jnp.sum(jnp.exp(a - top), axis, keepdims=True)
    out = jnp.log(total) + top
    return out if keepdims else jnp.squeeze(out, axis)


def softmax(x: Any, axis: Axis = -1) -> Any:
    """exp(x) normalized to sum to 1 over ``axis``.

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.nn.softmax(jax.numpy.array([0.0, 0.0]))
        Array([0.5, 0.5], dtype=float32)
    """
    (x,) = promote_inexact(x)
    unnormalized = jnp.exp(x - stop_gradient(jnp.max(x, axis, keepdims=True)))
    return unnormalized / jnp.sum(unnormalized, axis, keepdims=True)


def log_softmax(x: Any, axis: Axis = -1) -> Any:
    """x minus its logsumexp over ``axis``: log-probabilities."""
    (x,) = promote_inexact(x)
    shifted = x - stop_gradient(jnp.max(x, axis, keepdims=True))
    return shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis, keepdims=True))


def one_hot(x: Any, num_classes: int, dtype: Any = np.float32, axis: int = -1) -> Any:
    """Integer labels as one-hot vectors along a new ``axis``.

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.nn.one_hot(jax.numpy.array([0, 2]), 3)
        Array([[1., 0., 0.],
               [0., 0., 1.]], dtype=float32)
    """
    x = as_value(x)
    classes = jnp.arange(num_classes)
    out = jnp.expand_dims(x, -1) == classes
    out = jnp.moveaxis(out, -1, axis) if axis != -1 else out
    return out.astype(dtype)
