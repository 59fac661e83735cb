"""``jax.pure_callback``: a Python function called from inside a program, on the host.

The callback is a black box to every transformation: its results' types are declared up
front (``result_shape_dtypes``), so tracing needs only those, and one ``pure_callback``
equation stays in the jaxpr. Each interpreter decides what to do with it:

- eval (eagerly, and every call of a jitted program, which runs on the interpreter backend)
  calls the function with NumPy arrays and checks its results against the declared types;
- ``jvp`` and ``grad`` refuse it: the function's derivative is unknown. Wrap it in
  ``custom_jvp`` or ``custom_vjp`` to give one;
- ``vmap`` (stage 3) follows ``vmap_method``: a loop over the examples, or one call with the
  batch as a leading dim;
- the partitioner (stage 4) gathers sharded operands whole and calls it on the global values.

NB: in JAX this is jax/_src/callback.py (``pure_callback_p``), its batching rule in
jax/_src/ffi.py (``ffi_batching_rule``); XLA compiles the call as a custom call back into
Python, on the host.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from stage1_autodiff.core import Array, Primitive, ShapedArray, impl_rules, jvp_rules, vjp_rules
from stage1_autodiff.tree_util import PyTreeDef, tree_flatten, tree_leaves, tree_unflatten

from stage1_autodiff import dtypes

from .abstract_eval import abstract_eval_rules

# The ways a callback may be batched (stage 3), None for "not at all", as JAX lists them.
VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                "legacy_vectorized", None)


# --8<-- [start:pure_callback]
pure_callback_p = Primitive("pure_callback", multiple_results=True)


@dataclass(frozen=True)
class _FlatCallback:
    """The user's function called with flat arguments, returning flat results: the
    primitive's ``callback`` param. A dataclass, so that two calls of one function with
    arguments of one structure have equal params (one jit cache entry, one CSE class)."""

    callback_func: Callable[..., Any]
    in_tree: PyTreeDef  # the structure of (args, kwargs)

    def __call__(self, *flat_args: Any) -> list[Any]:
        args, kwargs = tree_unflatten(self.in_tree, list(flat_args))
        return tree_leaves(self.callback_func(*args, **kwargs))


def pure_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                  sharding: Any = None, vmap_method: str | None = None,
                  **kwargs: Any) -> Any:
    """Calls ``callback(*args, **kwargs)`` on the host, also from inside ``jit``.

    ``callback`` gets NumPy arrays and must return a pytree of arrays of the shapes and
    dtypes of ``result_shape_dtypes`` (``ShapeDtypeStruct``s, or arrays). It must be pure: a
    transformation may call it more than once, or not at all.

    Example:
        >>> import numpy as np
        >>> import stage2_jit as jax, stage2_jit.numpy as jnp
        >>> @jax.jit
        ... def f(x):
        ...     out = jax.ShapeDtypeStruct(x.shape, x.dtype)
        ...     return jax.pure_callback(np.sinc, out, x) * 2
        >>> f(jnp.zeros(2))
        Array([2., 2.], dtype=float32)
    """
    if vmap_method not in VMAP_METHODS:
        raise ValueError(f"vmap_method must be on of the allowed methods {list(VMAP_METHODS)}, "
                         f"but got: {vmap_method}")
    flat_args, in_tree = tree_flatten((args, kwargs))
    result_leaves, out_tree = tree_flatten(result_shape_dtypes)
    result_avals = tuple(_result_aval(leaf) for leaf in result_leaves)
    outs = pure_callback_p.bind(*flat_args, callback=_FlatCallback(callback, in_tree),
                                result_avals=result_avals, sharding=sharding,
                                vmap_method=vmap_method)
    return tree_unflatten(out_tree, outs)


def _result_aval(leaf: Any) -> ShapedArray:
    """A declared result's type. A 64-bit dtype without x64 would be silently narrowed, so
    it is refused, as JAX does."""
    dtype = np.dtype(leaf.dtype)
    if dtypes.canonicalize_dtype(dtype) != dtype:
        raise ValueError("result_shape_dtypes cannot specify 64-bit types when "
                         "`jax_enable_x64` is disabled")
    return ShapedArray(tuple(leaf.shape), dtype)


def pure_callback_impl(*args: np.ndarray, callback: _FlatCallback,
                       result_avals: tuple[ShapedArray, ...], sharding: Any,
                       vmap_method: str | None) -> list[Array]:
    outs = callback(*args)
    return [Array(value, weak_type=False) for value in _checked(outs, result_avals)]


impl_rules[pure_callback_p] = pure_callback_impl
abstract_eval_rules[pure_callback_p] = lambda *avals, result_avals, **params: list(result_avals)
# --8<-- [end:pure_callback]


# --8<-- [start:checked]
def _checked(outs: Sequence[Any], result_avals: Sequence[ShapedArray]) -> list[np.ndarray]:
    """The callback's results as arrays of the declared types. A Python number is taken at
    the default width (``1.0`` is float32 without x64), as a float64 array is; any other
    difference of shape or dtype is an error, since the program was traced with the
    declared types."""
    if len(outs) != len(result_avals):
        raise RuntimeError(
            f"Mismatched number of outputs from callback. Expected: {len(result_avals)}, "
            f"Actual: {len(outs)}. The callback must return a pytree with the structure of "
            f"result_shape_dtypes.")
    values = []
    for i, (out, aval) in enumerate(zip(outs, result_avals)):
        value = np.asarray(out)
        value = value.astype(dtypes.canonicalize_dtype(value.dtype), copy=False)
        if value.shape != aval.shape:
            raise RuntimeError(
                f"Incorrect output shape for return value #{i}: Expected: {aval.shape}, "
                f"Actual: {value.shape}. Return arrays of the shapes declared in "
                f"result_shape_dtypes.")
        if value.dtype != aval.dtype:
            raise RuntimeError(
                f"Incorrect output dtype for return value #{i}: Expected: {aval.dtype}, "
                f"Actual: {value.dtype}. Convert the result (np.asarray(r, dtype)) or "
                f"declare its dtype in result_shape_dtypes.")
        values.append(value)
    return values
# --8<-- [end:checked]


# --8<-- [start:pure_callback_jvp]
# The callback's derivative is unknown. JAX raises when it meets the callback in forward
# mode; stage 1's grad meets it when its tape is run backwards.
_NOT_DIFFERENTIABLE = ("Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use "
                       "callbacks while taking gradients.")


def pure_callback_jvp(primals, tangents, **params):
    raise ValueError(_NOT_DIFFERENTIABLE)


jvp_rules[pure_callback_p] = pure_callback_jvp


def pure_callback_vjp(cts, *primals, out, **params):
    raise ValueError(_NOT_DIFFERENTIABLE)


vjp_rules[pure_callback_p] = pure_callback_vjp
# --8<-- [end:pure_callback_jvp]

