"""``jax.nn``: activations and the softmax family, written with the numpy module."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import dtypes
from . import nn_initializers as initializers  # noqa: F401 (jax.nn.initializers)
from . import numpy as jnp
from . import prims as lax
from .autodiff import stop_gradient
from .numpy.promotion import as_value, promote_inexact

Axis = int | Sequence[int] | None


def relu(x: Any) -> Any:
    """max(x, 0). Its derivative passes only where x > 0, as JAX's custom JVP says: it is 0 at
    0 and at a NaN (whose value stays NaN).

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.nn.relu(jax.numpy.array([-1.0, 2.0]))
        Array([0., 2.], dtype=float32)
    """
    x = as_value(x)
    return jnp.where(x > 0, x, stop_gradient(jnp.where(x != x, x, jnp.zeros_like(x))))


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
    """The Gaussian error linear unit, x * P(Z <= x) for a standard normal Z;
    ``approximate=True`` (the default, as in JAX) is the tanh form, ``False`` the exact one
    with erf.

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.nn.gelu(jax.numpy.array([0.0, 1.0]))
        Array([0.      , 0.841192], dtype=float32)
    """
    (x,) = promote_inexact(x)
    if not approximate:  # x * P(Z <= x) for a standard normal Z
        return (x * (lax.erf(x * (1 / math.sqrt(2))) + 1) / 2).astype(x.dtype)
    inner = math.sqrt(2 / math.pi) * (x + 0.044715 * (x * x * x))
    # A strong type even for a Python float, as JAX's (which casts to x's dtype at the end).
    return (0.5 * x * (1 + jnp.tanh(inner))).astype(x.dtype)


def logsumexp(a: Any, axis: Axis = None, b: Any = None, keepdims: bool = False,
              return_sign: bool = False, where: Any = None) -> Any:
    """log(sum(b * exp(a))) over ``axis``, shifted by the max so that exp never overflows.

    A term whose weight ``b`` is 0, or that ``where`` leaves out, counts as exp(-inf) = 0. A
    negative sum has no real log: NaN, unless ``return_sign``, which returns log|sum| and
    the sum's sign. An all -inf slice gives -inf (the shift is then 0, not -inf).

    Example:
        >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
        >>> out, sign = jax.scipy.special.logsumexp(jnp.array([0.0, 0.0]),
        ...                                         b=jnp.array([1.0, -2.0]), return_sign=True)
        >>> print(out, sign)
        0.0 -1.0
    """
    if b is None:
        (a,) = promote_inexact(a)
    else:
        a, b = promote_inexact(a, b)
        a = jnp.where(b != 0, a, -np.inf)
    if where is not None:
        a = jnp.where(where, a, -np.inf)
    complex_ = dtypes.is_complex(jnp.result_type(a))  # shifted by the real parts' max
    top = stop_gradient(jnp.max(jnp.real(a), axis, keepdims=True, initial=-np.inf))
    top = jnp.where(jnp.isfinite(top), top, jnp.zeros_like(top))  # all -inf, inf or NaN
    terms = jnp.exp(a - top)
    total = jnp.sum(terms if b is None else terms * b, axis, keepdims=True)
    sign = jnp.sign(total)
    out = jnp.log(total if complex_ and not return_sign else jnp.abs(total)) + top
    if not keepdims:
        out, sign = jnp.squeeze(out, axis), jnp.squeeze(sign, axis)
    if return_sign:
        return out, sign
    return out if b is None or complex_ else jnp.where(sign < 0, np.nan, out)


def softmax(x: Any, axis: Axis = -1, where: Any = None) -> Any:
    """exp(x) normalized to sum to 1 over ``axis``; with ``where``, over the elements where it
    is true (the others are 0).

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.nn.softmax(jax.numpy.array([0.0, 0.0]))
        Array([0.5, 0.5], dtype=float32)
    """
    (x,) = promote_inexact(x)
    if where is not None:
        unnormalized = jnp.exp(_shifted(x, axis, where))
        total = jnp.sum(unnormalized, axis, keepdims=True, where=where)
        return jnp.where(where, unnormalized / total, 0)
    unnormalized = jnp.exp(x - stop_gradient(jnp.max(x, axis, keepdims=True)))
    return unnormalized / jnp.sum(unnormalized, axis, keepdims=True)


def _shifted(x: Any, axis: Axis, where: Any) -> Any:
    """x less its largest kept element, -inf where ``where`` is false."""
    top = stop_gradient(jnp.max(x, axis, keepdims=True, where=where, initial=-np.inf))
    return jnp.where(where, x, -np.inf) - top


def log_softmax(x: Any, axis: Axis = -1, where: Any = None) -> Any:
    """x minus its logsumexp over ``axis``: log-probabilities (-inf where ``where``, if given,
    is false)."""
    (x,) = promote_inexact(x)
    if where is not None:
        shifted = _shifted(x, axis, where)
        total = jnp.sum(jnp.exp(shifted), axis, keepdims=True, where=where)
        return jnp.where(where, shifted - jnp.log(total), -np.inf)
    shifted = x - stop_gradient(jnp.max(x, axis, keepdims=True))
    return shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis, keepdims=True))


def one_hot(x: Any, num_classes: int, dtype: Any = None, axis: int = -1) -> Any:
    """Integer labels as one-hot vectors along a new ``axis``, of the default float type
    unless ``dtype`` says otherwise (float64 with x64, as in JAX).

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
    return out.astype(dtypes.default_float_dtype() if dtype is None else dtype)


# ------------------------------------------------------------------------------------------
# More activations, each a composition. NB: JAX's are in jax/_src/nn/functions.py, several
# with a custom JVP (relu6) that the where-compositions here reproduce.
# ------------------------------------------------------------------------------------------


def silu(x: Any) -> Any:
    """x * sigmoid(x), also called swish.

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.nn.silu(jax.numpy.array([0.0, 1.0]))
        Array([0.       , 0.7310586], dtype=float32)
    """
    x = as_value(x)
    if not dtypes.is_inexact(x.dtype):  # as JAX's, which applies lax.logistic
        raise TypeError(f"logistic does not accept dtype {x.dtype}. Accepted dtypes are "
                        f"subtypes of floating, complexfloating.")
    return x * sigmoid(x)


swish = silu


def log_sigmoid(x: Any) -> Any:
    """log(sigmoid(x)) = -softplus(-x), without overflow."""
    (x,) = promote_inexact(x)
    return -softplus(-x)


def soft_sign(x: Any) -> Any:
    """x / (|x| + 1)."""
    (x,) = promote_inexact(x)
    return x / (jnp.abs(x) + 1)


def elu(x: Any, alpha: Any = 1.0) -> Any:
    """x for x > 0, else alpha * (exp(x) - 1). The exp branch sees only x <= 0, so a large
    x cannot put inf (and then NaN) into the gradient."""
    x = as_value(x)  # an integer x gives a weak float, as JAX's
    positive = x > 0
    return jnp.where(positive, x, alpha * jnp.expm1(jnp.where(positive, 0.0, x)))


def celu(x: Any, alpha: Any = 1.0) -> Any:
    """max(x, 0) + alpha * (exp(min(x, 0) / alpha) - 1): elu made continuously
    differentiable in x for every alpha."""
    x = as_value(x)
    return jnp.maximum(x, 0.0) + alpha * jnp.expm1(jnp.minimum(x, 0.0) / alpha)


def selu(x: Any) -> Any:
    """The self-normalizing elu: scale * elu(x, alpha) with Klambauer et al.'s constants."""
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    return scale * elu(x, alpha)


def leaky_relu(x: Any, negative_slope: Any = 1e-2) -> Any:
    """x for x >= 0, else negative_slope * x; the slope at 0 is 1, as in JAX.

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.nn.leaky_relu(jax.numpy.array([-2.0, 3.0]))
        Array([-0.02,  3.  ], dtype=float32)
    """
    x = as_value(x)  # (an integer x stays one: promoted with the slope, as JAX)
    return jnp.where(x >= 0, x, negative_slope * x)


def relu6(x: Any) -> Any:
    """min(max(x, 0), 6). Its derivative is 0 at both kinks, as JAX's custom JVP says: the
    slope passes only strictly inside (0, 6)."""
    x = as_value(x)
    clipped = jnp.minimum(jnp.maximum(x, 0), 6.0)  # a weak float for an integer x, as JAX's
    return jnp.where((x > 0) & (x < 6), x, stop_gradient(clipped))


def hard_sigmoid(x: Any) -> Any:
    """relu6(x + 3) / 6, a piecewise-linear sigmoid."""
    return relu6(as_value(x) + 3.0) / 6.0


def hard_silu(x: Any) -> Any:
    """x * hard_sigmoid(x), also called hard_swish."""
    x = as_value(x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def hard_tanh(x: Any) -> Any:
    """x clipped to [-1, 1]; the slope at +-1 is 1, as in JAX (x is chosen there)."""
    x = as_value(x)
    return jnp.where(x > 1, 1, jnp.where(x < -1, -1, x))


def glu(x: Any, axis: int = -1) -> Any:
    """The gated linear unit: the first half of ``axis`` times the sigmoid of the second."""
    x = as_value(x)
    if x.shape[axis] % 2:
        raise ValueError(f"glu: axis size must be divisible by 2, got {x.shape[axis]} for "
                         f"an array of shape {x.shape} along axis {axis}.")
    x1, x2 = jnp.split(x, 2, axis)
    return x1 * sigmoid(x2)


def standardize(x: Any, axis: Axis = -1, mean: Any = None, variance: Any = None,
                epsilon: Any = 1e-5, where: Any = None, algorithm: str = "fast") -> Any:
    """(x - mean) / sqrt(variance + epsilon) over ``axis``: zero mean and unit variance.
    ``algorithm="fast"`` takes the variance as mean(x**2) - mean**2 (clipped at 0), as
    JAX's default; ``"stable"`` as mean((x - mean)**2). ``where`` masks the elements the
    statistics use.

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.nn.standardize(jax.numpy.array([1.0, 3.0]))
        Array([-0.999995,  0.999995], dtype=float32)
    """
    def masked_mean(x: Any, axis: Axis, where: Any) -> Any:
        if where is None:
            return jnp.mean(x, axis, keepdims=True)
        where = jnp.broadcast_to(where, x.shape)
        total = jnp.sum(jnp.where(where, x, 0), axis, keepdims=True)
        return total / jnp.sum(where, axis, keepdims=True).astype(x.dtype)

    if algorithm not in ("fast", "stable"):
        raise ValueError(f"Unknown algorithm '{algorithm}'. Expected 'fast' or 'stable'.")
    (x,) = promote_inexact(x)
    if mean is None:
        mean = masked_mean(x, axis, where)
    if variance is None:
        if algorithm == "stable":
            variance = masked_mean(jnp.square(x - mean), axis, where)
        else:
            variance = jnp.clip(masked_mean(jnp.square(x), axis, where) - jnp.square(mean), 0)
    return (x - mean) * lax.rsqrt(variance + epsilon)




# ------------------------------------------------------------------------------------------
# The rest of jax.nn's activations, each a composition.
# ------------------------------------------------------------------------------------------

tanh = jnp.tanh  # jax.nn.tanh is jax.numpy.tanh itself


def identity(x: Any) -> Any:
    """``x`` unchanged, as an array (a Python scalar becomes a weakly typed one).

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.nn.identity(jax.numpy.array([-1.0, 2.0]))
        Array([-1.,  2.], dtype=float32)
    """
    return as_value(x)


def mish(x: Any) -> Any:
    """x * tanh(softplus(x)), a smooth relu-like activation (Misra, 2019).

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.nn.mish(jax.numpy.array([0.0, 1.0]))
        Array([0.       , 0.8650984], dtype=float32)
    """
    x = as_value(x)
    return x * jnp.tanh(softplus(x))


def squareplus(x: Any, b: Any = 4) -> Any:
    """(x + sqrt(x**2 + b)) / 2, an algebraic softplus (``b`` sets how smooth the bend is).

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.nn.squareplus(jax.numpy.array([0.0, 1.5]))
        Array([1., 2.], dtype=float32)
    """
    x, b = as_value(x), as_value(b)
    return (x + jnp.sqrt(jnp.square(x) + b)) / 2


def sparse_plus(x: Any) -> Any:
    """0 for x <= -1, (x + 1)**2 / 4 between, x for x >= 1: a softplus that is exactly 0
    and exactly linear outside [-1, 1] (its derivative is ``sparse_sigmoid``).

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.nn.sparse_plus(jax.numpy.array([-2.0, 0.0, 2.0]))
        Array([0.  , 0.25, 2.  ], dtype=float32)
    """
    x = as_value(x)
    return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


def sparse_sigmoid(x: Any) -> Any:
    """0 for x <= -1, (x + 1) / 2 between, 1 for x >= 1: a sigmoid that saturates exactly.

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.nn.sparse_sigmoid(jax.numpy.array([-2.0, 0.0, 2.0]))
        Array([0. , 0.5, 1. ], dtype=float32)
    """
    return 0.5 * jnp.clip(as_value(x) + 1.0, 0.0, 2.0)


def log1mexp(x: Any) -> Any:
    """log(1 - exp(-x)) for x >= 0, accurately: as log(-expm1(-x)) below log 2, where exp(-x)
    is near 1, and log1p(-exp(-x)) above, where it is small (Maechler, 2012). Each branch
    sees only inputs from its own side, so the unused one cannot put NaN into the gradient,
    which is 1 / expm1(x) (JAX's custom JVP).

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.nn.log1mexp(jax.numpy.array([1e-4, 10.0]))
        Array([-9.2103901e+00, -4.5400953e-05], dtype=float32)
    """
    (x,) = promote_inexact(x)
    small = x < math.log(2.0)
    x_small = jnp.where(small, x, 1.0)
    x_large = jnp.where(small, 1.0, x)
    return jnp.where(small, jnp.log(-jnp.expm1(-x_small)), jnp.log1p(-jnp.exp(-x_large)))


def logmeanexp(x: Any, axis: Axis = None, where: Any = None, keepdims: bool = False) -> Any:
    """log(mean(exp(x))) over ``axis``: ``logsumexp`` minus the log of the count of terms
    (those ``where`` keeps).

    Example:
        >>> import stage1_autodiff as jax
        >>> jax.nn.logmeanexp(jax.numpy.array([0.0, 0.0, 0.0]))
        Array(0., dtype=float32)
    """
    total = logsumexp(x, axis=axis, keepdims=keepdims, where=where)
    dtype = jnp.result_type(total)
    if where is None:
        shape = jnp.shape(x)
        axes = range(len(shape)) if axis is None else np.atleast_1d(axis)
        count = jnp.asarray(math.prod(shape[a] for a in axes), dtype=dtype)
    else:
        count = jnp.sum(jnp.broadcast_to(where, jnp.shape(x)), axis=axis, dtype=dtype,
                        keepdims=keepdims)
    return total - jnp.log(count)


# Last: attention.py builds on softmax and logsumexp above.
from .attention import dot_product_attention  # noqa: E402, F401
