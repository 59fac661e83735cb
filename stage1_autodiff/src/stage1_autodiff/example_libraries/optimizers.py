"""``jax.example_libraries.optimizers``: gradient-descent optimizers as triples of functions.

An optimizer here is three pure functions, so that a training step can be jitted, batched or
differentiated like any other code:

- ``init_fun(params)`` makes the optimizer's state from a pytree of parameters;
- ``update_fun(step, grads, state)`` takes one step and returns the new state;
- ``get_params(state)`` gives the parameters back, in the pytree they came in.

Each optimizer is written for one array (its state for that array is a few arrays: momentum,
running averages); the :func:`optimizer` decorator lifts it to a pytree of parameters,
keeping one such state per leaf. The state is an :class:`OptimizerState`, itself a pytree,
so it can be a ``jit`` argument, a ``scan`` carry or a checkpoint.

Example:
    >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
    >>> from stage1_autodiff.example_libraries import optimizers
    >>> opt_init, opt_update, get_params = optimizers.sgd(0.1)
    >>> state = opt_init({"w": jnp.array(1.0)})
    >>> grads = jax.grad(lambda p: p["w"] ** 2)(get_params(state))
    >>> print(get_params(opt_update(0, grads, state))["w"])
    0.8
"""

from __future__ import annotations

import functools
from collections import namedtuple
from collections.abc import Callable
from typing import Any, NamedTuple

from .. import numpy as jnp
from ..tree_util import register_pytree_node, tree_flatten, tree_map, tree_unflatten

__all__ = ["JoinPoint", "Optimizer", "OptimizerState", "adagrad", "adam", "adamax",
           "clip_grads", "constant", "exponential_decay", "inverse_time_decay", "l2_norm",
           "make_schedule", "momentum", "nesterov", "optimizer", "pack_optimizer_state",
           "piecewise_constant", "polynomial_decay", "rmsprop", "rmsprop_momentum", "sgd",
           "sm3", "unpack_optimizer_state"]

Schedule = Callable[[Any], Any]  # the step number to a step size

# The state of a lifted optimizer: per parameter leaf, the leaves of that leaf's own state
# (``packed_state``), with the two tree structures that put them back together. Only the
# arrays are children; the structures ride along as the node's static data.
OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
register_pytree_node(
    OptimizerState,
    lambda state: ((state.packed_state,), (state.tree_def, state.subtree_defs)),
    lambda static, children: OptimizerState(children[0], *static))


class Optimizer(NamedTuple):
    """The triple an optimizer constructor returns."""
    init_fn: Callable[[Any], Any]
    update_fn: Callable[[Any, Any, Any], Any]
    params_fn: Callable[[Any], Any]


def _flatten_each(trees: list[Any]) -> tuple[tuple[list[Any], ...], tuple[Any, ...]]:
    """The leaves and the structure of each tree, as two tuples."""
    flat = [tree_flatten(tree) for tree in trees]
    return tuple(leaves for leaves, _ in flat), tuple(treedef for _, treedef in flat)


def optimizer(make: Callable[..., tuple[Callable, Callable, Callable]]) -> Callable[..., Optimizer]:
    """Lifts a constructor of ``(init, update, get_params)`` written for single arrays to one
    whose functions take pytrees of parameters: each leaf gets a state of its own."""

    @functools.wraps(make)
    def make_for_trees(*args: Any, **kwargs: Any) -> Optimizer:
        init, update, get_params = make(*args, **kwargs)

        @functools.wraps(init)
        def init_fn(params: Any) -> OptimizerState:
            leaves, treedef = tree_flatten(params)
            packed, subtrees = _flatten_each([init(leaf) for leaf in leaves])
            return OptimizerState(packed, treedef, subtrees)

        @functools.wraps(update)
        def update_fn(step: Any, grads: Any, state: OptimizerState) -> OptimizerState:
            packed, treedef, subtrees = state
            grad_leaves, grad_treedef = tree_flatten(grads)
            if grad_treedef != treedef:
                raise TypeError(f"optimizer update: the gradients' tree {grad_treedef} is not "
                                f"the parameters' tree {treedef} that the state was made "
                                f"from. Pass grad(loss)(get_params(state)), in that structure.")
            states = [tree_unflatten(sub, leaves) for sub, leaves in zip(subtrees, packed)]
            new_packed, new_subtrees = _flatten_each(
                [update(step, g, s) for g, s in zip(grad_leaves, states)])
            if new_subtrees != subtrees:
                raise TypeError(f"optimizer update: the update function returned states of "
                                f"structure {new_subtrees}, not {subtrees} as it was given.")
            return OptimizerState(new_packed, treedef, subtrees)

        @functools.wraps(get_params)
        def params_fn(state: OptimizerState) -> Any:
            packed, treedef, subtrees = state
            return tree_unflatten(treedef, [get_params(tree_unflatten(sub, leaves))
                                            for sub, leaves in zip(subtrees, packed)])

        return Optimizer(init_fn, update_fn, params_fn)

    return make_for_trees

# ------------------------------------------------------------------------------------------
# The optimizers, each for one array
# ------------------------------------------------------------------------------------------


def _params_first(state: tuple[Any, ...]) -> Any:
    return state[0]


@optimizer
def sgd(step_size: float | Schedule) -> Optimizer:
    """Stochastic gradient descent: ``x - step_size(i) * g``. ``step_size`` is a number or a
    schedule (a function of the step number)."""
    schedule = make_schedule(step_size)
    return Optimizer(lambda x: x, lambda i, g, x: x - schedule(i) * g, lambda x: x)


@optimizer
def momentum(step_size: float | Schedule, mass: float) -> tuple[Callable, Callable, Callable]:
    """Gradient descent with momentum: the velocity ``mass * v + g`` is the step's direction."""
    schedule = make_schedule(step_size)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - schedule(i) * velocity, velocity

    return lambda x: (x, jnp.zeros_like(x)), update, _params_first


@optimizer
def nesterov(step_size: float | Schedule, mass: float) -> tuple[Callable, Callable, Callable]:
    """Nesterov's momentum: the step looks ahead, along ``mass * v + g`` with the new ``v``."""
    schedule = make_schedule(step_size)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - schedule(i) * (mass * velocity + g), velocity

    return lambda x: (x, jnp.zeros_like(x)), update, _params_first


@optimizer
def adagrad(step_size: float | Schedule, momentum: float = 0.9
            ) -> tuple[Callable, Callable, Callable]:
    """Adagrad (Duchi et al., 2011): each coordinate's step divided by the root of its summed
    squared gradients, with momentum on the result."""
    schedule = make_schedule(step_size)

    def update(i, g, state):
        x, sum_sq, m = state
        sum_sq = sum_sq + jnp.square(g)
        scale = jnp.where(sum_sq > 0, 1. / jnp.sqrt(sum_sq), 0.0)
        m = (1. - momentum) * (g * scale) + momentum * m
        return x - schedule(i) * m, sum_sq, m

    return lambda x: (x, jnp.zeros_like(x), jnp.zeros_like(x)), update, _params_first


@optimizer
def rmsprop(step_size: float | Schedule, gamma: float = 0.9, eps: float = 1e-8
            ) -> tuple[Callable, Callable, Callable]:
    """RMSProp: the step divided by the root of a running average of squared gradients
    (``gamma`` its decay)."""
    schedule = make_schedule(step_size)

    def update(i, g, state):
        x, mean_sq = state
        mean_sq = mean_sq * gamma + jnp.square(g) * (1. - gamma)
        return x - schedule(i) * g / jnp.sqrt(mean_sq + eps), mean_sq

    return lambda x: (x, jnp.zeros_like(x)), update, _params_first


@optimizer
def rmsprop_momentum(step_size: float | Schedule, gamma: float = 0.9, eps: float = 1e-8,
                     momentum: float = 0.9) -> tuple[Callable, Callable, Callable]:
    """RMSProp whose scaled steps accumulate in a momentum term."""
    schedule = make_schedule(step_size)

    def update(i, g, state):
        x, mean_sq, mom = state
        mean_sq = mean_sq * gamma + jnp.square(g) * (1. - gamma)
        mom = momentum * mom + schedule(i) * g / jnp.sqrt(mean_sq + eps)
        return x - mom, mean_sq, mom

    return lambda x: (x, jnp.zeros_like(x), jnp.zeros_like(x)), update, _params_first


def _bias_correction(beta: float, like: Any, i: Any) -> Any:
    """``1 - beta ** (i + 1)`` in the moments' dtype: a running average that started at zero
    is too small by this factor after ``i + 1`` steps."""
    return 1 - jnp.asarray(beta, like.dtype) ** (i + 1)


@optimizer
def adam(step_size: float | Schedule, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8
         ) -> tuple[Callable, Callable, Callable]:
    """Adam (Kingma and Ba, 2015): running averages of the gradient (decay ``b1``) and of its
    square (``b2``), corrected for starting at zero; the step is their ratio."""
    schedule = make_schedule(step_size)

    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * jnp.square(g) + b2 * v
        m_hat = m / _bias_correction(b1, m, i)
        v_hat = v / _bias_correction(b2, m, i)
        return x - schedule(i) * m_hat / (jnp.sqrt(v_hat) + eps), m, v

    return lambda x: (x, jnp.zeros_like(x), jnp.zeros_like(x)), update, _params_first


@optimizer
def adamax(step_size: float | Schedule, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8
           ) -> tuple[Callable, Callable, Callable]:
    """AdaMax: Adam with the running root-mean-square replaced by a decaying maximum of
    ``|g|`` (the infinity norm)."""
    schedule = make_schedule(step_size)

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = jnp.maximum(b2 * u, jnp.abs(g))
        return x - (schedule(i) / _bias_correction(b1, m, i)) * m / (u + eps), m, u

    return lambda x: (x, jnp.zeros_like(x), jnp.zeros_like(x)), update, _params_first


@optimizer
def sm3(step_size: float | Schedule, momentum: float = 0.9
        ) -> tuple[Callable, Callable, Callable]:
    """SM3 (Anil et al., 2019): Adagrad whose accumulator costs one vector per axis instead of
    a whole array. A coordinate's accumulator is the least of its row's, column's, ... ones;
    after the step each axis keeps the largest accumulator along it."""
    schedule = make_schedule(step_size)

    def init(x0):
        x = jnp.atleast_1d(x0)
        per_axis = [jnp.zeros(n, dtype=x.dtype) for n in x.shape]
        return x, jnp.zeros_like(x), per_axis, jnp.shape(x0)

    def along(axis, ndim, v):  # v, of one axis's length, shaped to broadcast along that axis
        return jnp.reshape(v, [-1 if d == axis else 1 for d in range(ndim)])

    def update(i, g, state):
        x, m, per_axis, shape = state
        accum = functools.reduce(jnp.minimum, [along(axis, x.ndim, v)
                                               for axis, v in enumerate(per_axis)])
        accum = accum + jnp.square(g)
        scale = jnp.where(accum > 0, 1. / jnp.sqrt(accum), 0)
        m = (1. - momentum) * (g * scale) + momentum * m
        others = [tuple(d for d in range(x.ndim) if d != axis) for axis in range(x.ndim)]
        return x - schedule(i) * m, m, [accum.max(axes) for axes in others], shape

    def get_params(state):
        x, _, _, shape = state
        return x.reshape(shape)

    return init, update, get_params

# ------------------------------------------------------------------------------------------
# Step-size schedules: functions of the step number
# ------------------------------------------------------------------------------------------


def constant(step_size: Any) -> Schedule:
    """The same step size at every step."""
    return lambda i: step_size


def exponential_decay(step_size: Any, decay_steps: Any, decay_rate: Any) -> Schedule:
    """``step_size * decay_rate ** (i / decay_steps)``."""
    return lambda i: step_size * decay_rate ** (i / decay_steps)


def inverse_time_decay(step_size: Any, decay_steps: Any, decay_rate: Any,
                       staircase: bool = False) -> Schedule:
    """``step_size / (1 + decay_rate * i / decay_steps)``; with ``staircase``, ``i /
    decay_steps`` rounded down, so the size changes every ``decay_steps`` steps."""
    if staircase:
        return lambda i: step_size / (1 + decay_rate * jnp.floor(i / decay_steps))
    return lambda i: step_size / (1 + decay_rate * i / decay_steps)


def polynomial_decay(step_size: Any, decay_steps: Any, final_step_size: Any,
                     power: float = 1.0) -> Schedule:
    """From ``step_size`` to ``final_step_size`` over ``decay_steps`` steps along
    ``(1 - i / decay_steps) ** power``, then constant."""
    def schedule(i):
        left = (1 - jnp.minimum(i, decay_steps) / decay_steps) ** power
        return left * (step_size - final_step_size) + final_step_size
    return schedule


def piecewise_constant(boundaries: Any, values: Any) -> Schedule:
    """``values[k]`` for the steps past ``k`` of the ``boundaries`` (one fewer than the
    values): ``values[0]`` up to and including step ``boundaries[0]``."""
    boundaries, values = jnp.array(boundaries), jnp.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError(f"piecewise_constant: boundaries and values must be sequences, got "
                         f"arrays of shapes {boundaries.shape} and {values.shape}.")
    if boundaries.shape[0] != values.shape[0] - 1:
        raise ValueError(f"piecewise_constant: there must be one boundary fewer than values, "
                         f"got {boundaries.shape[0]} boundaries and {values.shape[0]} values.")
    return lambda i: values[jnp.sum(i > boundaries)]


def make_schedule(scalar_or_schedule: Any) -> Schedule:
    """A schedule as it is, or a number as a constant schedule."""
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if jnp.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(f"A step size must be a number or a schedule (a function of the step "
                    f"number), got {type(scalar_or_schedule).__name__} of shape "
                    f"{jnp.shape(scalar_or_schedule)}.")

# ------------------------------------------------------------------------------------------
# Utilities
# ------------------------------------------------------------------------------------------


def l2_norm(tree: Any) -> Any:
    """The Euclidean norm of all the leaves of ``tree`` taken together."""
    return jnp.sqrt(sum(jnp.vdot(leaf, leaf) for leaf in tree_flatten(tree)[0]))


def clip_grads(grad_tree: Any, max_norm: Any) -> Any:
    """``grad_tree`` scaled down to norm ``max_norm`` when its norm is larger."""
    norm = l2_norm(grad_tree)
    return tree_map(lambda g: jnp.where(norm < max_norm, g, g * (max_norm / norm)), grad_tree)


class JoinPoint:
    """A leaf of the parameters' tree that holds that parameter's optimizer state (a tree of
    its own): what :func:`unpack_optimizer_state` puts at each leaf."""

    def __init__(self, subtree: Any) -> None:
        self.subtree = subtree

    def __iter__(self):  # so that code walking containers of arrays can look inside
        yield self.subtree


def unpack_optimizer_state(opt_state: OptimizerState) -> Any:
    """The state as the parameters' tree with a :class:`JoinPoint` at each leaf: plain
    containers (lists, dicts, tuples) that a checkpoint library can store."""
    packed, treedef, subtrees = opt_state
    return tree_unflatten(treedef, [JoinPoint(tree_unflatten(sub, leaves))
                                    for sub, leaves in zip(subtrees, packed)])


def pack_optimizer_state(marked_pytree: Any) -> OptimizerState:
    """The inverse of :func:`unpack_optimizer_state`."""
    points, treedef = tree_flatten(marked_pytree)
    strays = [type(p).__name__ for p in points if not isinstance(p, JoinPoint)]
    if strays:
        raise TypeError(f"pack_optimizer_state takes what unpack_optimizer_state returns, a "
                        f"tree whose leaves are all JoinPoints; found {', '.join(strays)}.")
    packed, subtrees = _flatten_each([p.subtree for p in points])
    return OptimizerState(packed, treedef, subtrees)
