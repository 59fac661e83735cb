"""``jax.example_libraries.stax``: neural-network layers as pairs of pure functions.

A layer is ``(init_fun, apply_fun)``:

- ``init_fun(rng, input_shape)`` returns ``(output_shape, params)``: the shape its output will
  have and freshly drawn parameters (a pytree, ``()`` for a layer without any);
- ``apply_fun(params, inputs, **kwargs)`` computes the output; a layer that draws random
  numbers (``Dropout``) takes its key as ``rng=``.

Layers combine with ``serial`` (one after the other) and ``parallel`` (side by side, with
``FanOut`` and ``FanInSum``/``FanInConcat`` to split and join), and the result is a layer
again. Names of layer constructors are capitalized (``Dense``, ``Relu``); the plain functions
they wrap keep their ``jax.nn`` names.

Example:
    >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
    >>> from stage1_autodiff.example_libraries import stax
    >>> init_fun, apply_fun = stax.serial(stax.Dense(16), stax.Relu, stax.Dense(3))
    >>> out_shape, params = init_fun(jax.random.key(0), (-1, 4))
    >>> out_shape, apply_fun(params, jnp.ones((2, 4))).shape
    ((-1, 3), (2, 3))
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

from .. import lax, random
from .. import numpy as jnp
from ..nn import (
    elu,
    gelu,
    leaky_relu,
    log_softmax,
    relu,
    selu,
    sigmoid,
    softmax,
    softplus,
    standardize,
)
from ..nn_initializers import glorot_normal, normal, ones, zeros

Layer = tuple[Callable[..., Any], Callable[..., Any]]

glorot, randn, logsoftmax = glorot_normal, normal, log_softmax  # older names, still imported

__all__ = ["AvgPool", "BatchNorm", "Conv", "Conv1DTranspose", "ConvTranspose", "Dense",
           "Dropout", "Elu", "Exp", "FanInConcat", "FanInSum", "FanOut", "Flatten", "Gelu",
           "GeneralConv", "GeneralConvTranspose", "Identity", "LeakyRelu", "LogSoftmax",
           "MaxPool", "Relu", "Selu", "Sigmoid", "Softmax", "Softplus", "SumPool", "Tanh",
           "elementwise", "elu", "gelu", "glorot", "glorot_normal", "leaky_relu",
           "log_softmax", "logsoftmax", "normal", "ones", "parallel", "randn", "relu", "selu",
           "serial", "shape_dependent", "sigmoid", "softmax", "softplus", "standardize",
           "zeros"]


# The default initializers, made once (each constructor call would make the same).
_GLOROT, _NORMAL, _SMALL_NORMAL = glorot_normal(), normal(), normal(1e-6)


def Dense(out_dim: int, W_init: Callable = _GLOROT, b_init: Callable = _NORMAL  # noqa: N802, N803
          ) -> Layer:
    """A fully connected layer, ``inputs @ W + b``, on the last axis of its input."""
    def init_fun(rng, input_shape):
        k1, k2 = random.split(rng)
        params = W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,))
        return tuple(input_shape[:-1]) + (out_dim,), params

    def apply_fun(params, inputs, **kwargs):
        W, b = params  # noqa: N806
        return jnp.dot(inputs, W) + b

    return init_fun, apply_fun


def _kernel_and_bias(dimension_numbers, out_chan: int, filter_shape, input_shape):
    """The kernel's shape (the rhs layout's letters filled in) and the bias's, which
    broadcasts along the output's feature dim."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    window = iter(filter_shape)
    kernel = [out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I"
              else next(window) for c in rhs_spec]
    return kernel, [out_chan if c == "C" else 1 for c in out_spec]


def _conv_layer(shape_of: Callable, apply: Callable) -> Callable[..., Layer]:
    """A constructor of convolution layers: ``shape_of`` gives the output shape, ``apply``
    runs the convolution (without the bias)."""
    def make(dimension_numbers, out_chan: int, filter_shape, strides=None, padding="VALID",
             W_init: Callable | None = None, b_init: Callable = _SMALL_NORMAL) -> Layer:  # noqa: N803
        rhs_spec = dimension_numbers[1]
        strides = tuple(strides or (1,) * len(filter_shape))
        W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))  # noqa: N806

        def init_fun(rng, input_shape):
            kernel, bias = _kernel_and_bias(dimension_numbers, out_chan, filter_shape,
                                            input_shape)
            k1, k2 = random.split(rng)
            out = shape_of(input_shape, kernel, strides, padding, dimension_numbers)
            return out, (W_init(k1, kernel), b_init(k2, bias))

        def apply_fun(params, inputs, **kwargs):
            W, b = params  # noqa: N806
            return apply(inputs, W, strides, padding, dimension_numbers) + b

        return init_fun, apply_fun
    return make


GeneralConv = _conv_layer(
    lax.conv_general_shape_tuple,
    lambda x, w, strides, padding, dn: lax.conv_general_dilated(
        x, w, strides, padding, (1,) * len(strides), (1,) * len(strides), dimension_numbers=dn))
GeneralConv.__name__ = GeneralConv.__qualname__ = "GeneralConv"
GeneralConv.__doc__ = """A convolution layer in the layout ``dimension_numbers`` (``(lhs,
rhs, out)`` strings), ``out_chan`` output features, a window of ``filter_shape``."""
GeneralConvTranspose = _conv_layer(
    lax.conv_transpose_shape_tuple,
    lambda x, w, strides, padding, dn: lax.conv_transpose(x, w, strides, padding,
                                                          dimension_numbers=dn))
GeneralConvTranspose.__name__ = GeneralConvTranspose.__qualname__ = "GeneralConvTranspose"
GeneralConvTranspose.__doc__ = """A transposed convolution layer (``lax.conv_transpose``), in
the layout ``dimension_numbers``."""
Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))
Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))


def BatchNorm(axis=(0, 1, 2), epsilon: float = 1e-5, center: bool = True, scale: bool = True,  # noqa: N802
              beta_init: Callable = zeros, gamma_init: Callable = ones) -> Layer:
    """Normalizes over ``axis`` (by default batch and space of ``NHWC``) to mean 0 and
    variance 1, then scales by ``gamma`` and shifts by ``beta``, learned per remaining
    position. (The statistics are the batch's own; no running averages are kept.)"""
    axis = (axis,) if jnp.isscalar(axis) else tuple(axis)

    def init_fun(rng, input_shape):
        shape = tuple(n for d, n in enumerate(input_shape) if d not in axis)
        k1, k2 = random.split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        spread = tuple(None if d in axis else slice(None) for d in range(jnp.ndim(x)))
        z = standardize(x, axis, epsilon=epsilon)
        z = gamma[spread] * z if scale else z
        return z + beta[spread] if center else z

    return init_fun, apply_fun


def elementwise(fun: Callable, **fun_kwargs: Any) -> Layer:
    """A layer without parameters applying ``fun(inputs, **fun_kwargs)``."""
    return (lambda rng, input_shape: (input_shape, ()),
            lambda params, inputs, **kwargs: fun(inputs, **fun_kwargs))


Tanh = elementwise(jnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


def _pooling(reducer: Callable, init_value: float, average: bool = False
             ) -> Callable[..., Layer]:
    """A constructor of pooling layers: ``reducer`` over each window, starting from
    ``init_value``; an average divides by the number of inputs each window covered."""
    def make(window_shape, strides=None, padding: str = "VALID", spec: str | None = None
             ) -> Layer:
        space_strides = tuple(strides or (1,) * len(window_shape))
        batch_and_feature = (0, len(window_shape) + 1) if spec is None else \
            (spec.index("N"), spec.index("C"))
        window, steps = list(window_shape), list(space_strides)
        for d in sorted(batch_and_feature):  # windows of 1 along the batch and features
            window.insert(d, 1)
            steps.insert(d, 1)

        def init_fun(rng, input_shape):
            pads = lax.padtype_to_pads(input_shape, window, steps, padding)
            return lax.reduce_window_shape_tuple(input_shape, window, steps, pads), ()

        def apply_fun(params, inputs, **kwargs):
            out = lax.reduce_window(inputs, init_value, reducer, tuple(window), tuple(steps),
                                    padding)
            if not average:
                return out
            space = [n for d, n in enumerate(inputs.shape) if d not in batch_and_feature]
            counts = lax.reduce_window(jnp.ones(space, inputs.dtype), 0., lax.add,
                                       tuple(window_shape), space_strides, padding)
            return out / jnp.expand_dims(counts, sorted(batch_and_feature))

        return init_fun, apply_fun
    return make


MaxPool = _pooling(lax.max, -jnp.inf)
SumPool = _pooling(lax.add, 0.)
AvgPool = _pooling(lax.add, 0., average=True)


def _flatten() -> Layer:
    return (lambda rng, input_shape: ((input_shape[0], math.prod(input_shape[1:])), ()),
            lambda params, inputs, **kwargs: jnp.reshape(inputs, (inputs.shape[0], -1)))


Flatten = _flatten()  # a layer, not a constructor: every dim but the first into one
Identity = (lambda rng, input_shape: (input_shape, ()),
            lambda params, inputs, **kwargs: inputs)


def FanOut(num: int) -> Layer:  # noqa: N802
    """``num`` copies of the input, for a ``parallel`` layer that follows."""
    return (lambda rng, input_shape: ([input_shape] * num, ()),
            lambda params, inputs, **kwargs: [inputs] * num)


FanInSum = (lambda rng, input_shape: (input_shape[0], ()),
            lambda params, inputs, **kwargs: sum(inputs))


def FanInConcat(axis: int = -1) -> Layer:  # noqa: N802
    """The inputs of a ``parallel`` layer joined along ``axis``."""
    def init_fun(rng, input_shape):
        first = tuple(input_shape[0])
        d = axis % len(first)
        joined = sum(shape[d] for shape in input_shape)
        return first[:d] + (joined,) + first[d + 1:], ()

    return init_fun, lambda params, inputs, **kwargs: jnp.concatenate(inputs, axis)


def Dropout(rate: float, mode: str = "train") -> Layer:  # noqa: N802
    """In ``'train'`` mode, keeps each input with probability ``rate`` (JAX's choice: the
    argument is the keep rate) and scales the kept ones by ``1 / rate``; in any other mode,
    passes the input through. ``apply_fun`` needs its key as ``rng=`` in both modes, as JAX's
    does."""
    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get("rng")
        if rng is None:
            raise ValueError("Dropout's apply_fun needs a PRNG key: call it as "
                             "apply_fun(params, inputs, rng=key), with key from "
                             "jax.random.key (serial passes one to each layer when it gets "
                             "one).")
        if mode != "train":
            return inputs
        keep = random.bernoulli(rng, rate, inputs.shape)
        return jnp.where(keep, inputs / rate, 0)

    return (lambda rng, input_shape: (input_shape, ())), apply_fun


def _keys(rng: Any, count: int) -> Any:
    return random.split(rng, count) if rng is not None else (None,) * count


def _unzipped(combinator: str, layers: tuple[Layer, ...]) -> tuple[tuple, tuple]:
    if not layers:
        raise ValueError(f"stax.{combinator} needs at least one layer, an (init_fun, "
                         f"apply_fun) pair; got none.")
    return tuple(zip(*layers))


def serial(*layers: Layer) -> Layer:
    """The layers one after the other: each one's output is the next one's input. A key
    passed as ``rng=`` is split, one part per layer."""
    init_funs, apply_funs = _unzipped("serial", layers)

    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, layer_params = init(layer_rng, input_shape)
            params.append(layer_params)
        return input_shape, params

    def apply_fun(params, inputs, **kwargs):
        for apply, layer_params, rng in zip(apply_funs, params,
                                            _keys(kwargs.pop("rng", None), len(layers))):
            inputs = apply(layer_params, inputs, rng=rng, **kwargs)
        return inputs

    return init_fun, apply_fun


def parallel(*layers: Layer) -> Layer:
    """The layers side by side: the i-th takes the i-th of a sequence of inputs (from
    ``FanOut``), and the outputs come back as a list."""
    init_funs, apply_funs = _unzipped("parallel", layers)

    def init_fun(rng, input_shape):
        made = [init(key, shape) for init, key, shape
                in zip(init_funs, random.split(rng, len(layers)), input_shape)]
        return tuple(zip(*made))

    def apply_fun(params, inputs, **kwargs):
        keys = _keys(kwargs.pop("rng", None), len(layers))
        return [apply(p, x, rng=key, **kwargs)
                for apply, p, x, key in zip(apply_funs, params, inputs, keys)]

    return init_fun, apply_fun


def shape_dependent(make_layer: Callable[[Any], Layer]) -> Layer:
    """A layer made only once the input shape is known: ``make_layer(shape)`` gives it."""
    return (lambda rng, input_shape: make_layer(input_shape)[0](rng, input_shape),
            lambda params, inputs, **kwargs: make_layer(inputs.shape)[1](params, inputs,
                                                                         **kwargs))
