"""``jax.custom_batching``: a function with a batching rule of its own.

``custom_vmap(f)`` is ``f``, except under ``vmap``: there ``f.def_vmap``'s rule is called
once for the whole batch, with the axis size, which arguments are batched (a pytree of bools
per argument) and the arguments, batched ones with the batch at axis 0; it returns the
outputs and which of them are batched. A rule is how a library says "for a batch, call this
other routine" (a batched solver, a loop when batching would cost too much memory):
``sequential_vmap(f)`` is the latter, ``f`` once per example under ``lax.map``.

The rule applies where ``vmap`` is the innermost transformation at the call: ``jit(vmap(f))``
and ``grad(vmap(f))`` use it. Under any other transformation the function is called, so
``vmap(jit(f))`` and ``vmap(jvp(f))`` batch ``f``'s operations one by one, and ``grad(f)``
differentiates them (see "Differences from JAX").

NB: JAX's is jax/_src/custom_batching.py, a ``custom_vmap_call`` primitive that every
interpreter passes along (its jaxpr keeps the rule), with a JVP that batches the rule's JVP.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from stage1_autodiff.core import find_top_trace
from stage1_autodiff.tree_util import tree_flatten, tree_leaves, tree_map, tree_unflatten

from stage1_autodiff import numpy as jnp
from stage2_jit import lax as lax2

from .batching import BatchTrace, BatchTracer, moveaxis, not_mapped

__all__ = ["custom_vmap", "sequential_vmap"]


class custom_vmap:  # noqa: N801 -- JAX's name, used as a decorator
    """``fun`` with the batching rule ``def_vmap`` gives it.

    Example:
        >>> import stage3_vmap as jax, stage3_vmap.numpy as jnp
        >>> @jax.custom_batching.custom_vmap
        ... def norm(x):
        ...     return jnp.sqrt(jnp.sum(x * x))
        >>> @norm.def_vmap
        ... def norm_rule(axis_size, in_batched, xs):
        ...     return jnp.linalg.norm(xs, axis=1), in_batched[0]
        >>> jax.vmap(norm)(jnp.array([[3.0, 4.0], [6.0, 8.0]]))
        Array([ 5., 10.], dtype=float32)
    """

    def __init__(self, fun: Callable) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.vmap_rule: Callable | None = None

    def def_vmap(self, vmap_rule: Callable) -> Callable:
        """Sets the rule: ``vmap_rule(axis_size, in_batched, *args) -> (out, out_batched)``,
        ``out_batched`` a pytree of bools shaped as ``out``. Returns the rule."""
        self.vmap_rule = vmap_rule
        return vmap_rule

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:  # the rule takes positional arguments: bind the keywords to their places
            args = inspect.signature(self.fun).bind(*args, **kwargs).args
        leaves, in_tree = tree_flatten(args)
        trace = find_top_trace(leaves)
        if not isinstance(trace, BatchTrace) or not any(
                _batched_here(x, trace) for x in leaves):
            return self.fun(*args)
        if self.vmap_rule is None:
            raise AttributeError(f"vmap of the custom_vmap function {self.__name__}, which has "
                                 f"no batching rule: give it one with @{self.__name__}."
                                 f"def_vmap, or call the function outside vmap.")
        return self._apply_rule(trace, leaves, in_tree)

    def _apply_rule(self, trace: BatchTrace, leaves: list[Any], in_tree: Any) -> Any:
        """The rule on the batch: arguments unwrapped (batch at axis 0), results wrapped."""
        flags = [_batched_here(x, trace) for x in leaves]
        vals = [moveaxis(x.val, x.batch_dim, 0) if batched else
                x.val if isinstance(x, BatchTracer) and x._trace.main is trace.main else x
                for x, batched in zip(leaves, flags)]
        size = trace.axis_data.size
        out, out_batched = self.vmap_rule(size, list(tree_unflatten(in_tree, flags)),
                                          *tree_unflatten(in_tree, vals))
        out_leaves, out_tree = tree_flatten(out)
        batched_leaves, batched_tree = tree_flatten(out_batched)
        if batched_tree != out_tree:
            raise ValueError(f"The batching rule of {self.__name__} returned outputs "
                             f"structured as {out_tree} but says which are batched as "
                             f"{batched_tree}: out_batched must have the outputs' structure.")
        return tree_unflatten(out_tree, [
            _wrapped(trace, x, batched, size, self.__name__)
            for x, batched in zip(out_leaves, batched_leaves)])


def _batched_here(x: Any, trace: BatchTrace) -> bool:
    return (isinstance(x, BatchTracer) and x._trace.main is trace.main
            and x.batch_dim is not not_mapped)


def _wrapped(trace: BatchTrace, x: Any, batched: bool, size: int, name: str) -> BatchTracer:
    """An output of the rule as a value of the batch: batched ones must lead with it."""
    x = jnp.asarray(x)
    if not batched:
        return BatchTracer(trace, x, not_mapped)
    if not x.shape or x.shape[0] != size:
        raise ValueError(f"The batching rule of {name} says an output of shape {x.shape} is "
                         f"batched, but a batched output must have the batch, of size "
                         f"{size}, as its leading axis.")
    return BatchTracer(trace, x, 0)


def sequential_vmap(f: Callable) -> custom_vmap:
    """``f``, batched by a loop: under ``vmap`` it runs once per example (``lax.map``), for
    a function whose batched form would cost more than the loop.

    Example:
        >>> import stage3_vmap as jax, stage3_vmap.numpy as jnp
        >>> jax.vmap(jax.custom_batching.sequential_vmap(jnp.sin))(jnp.zeros(2))
        Array([0., 0.], dtype=float32)
    """
    f = custom_vmap(f)

    @f.def_vmap
    def rule(axis_size: int, in_batched: list[Any], *args: Any) -> tuple[Any, Any]:
        leaves, tree = tree_flatten(args)
        flags = tree_leaves(in_batched)
        batched = [x for x, b in zip(leaves, flags) if b]

        def one(xs: list[Any]) -> Any:
            examples = iter(xs)
            return f.fun(*tree_unflatten(tree, [next(examples) if b else x
                                                for x, b in zip(leaves, flags)]))

        out = lax2.map(one, batched)
        return out, tree_map(lambda _: True, out)
    return f
