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
    return _bind_callback(pure_callback_p, callback, result_shape_dtypes, args, kwargs,
                          sharding=sharding, vmap_method=vmap_method)


def _bind_callback(prim: Primitive, callback: Callable[..., Any], result_shape_dtypes: Any,
                   args: tuple, kwargs: dict, **params: Any) -> Any:
    """Binds a callback primitive (pure or io) on the flat arguments, with the declared
    results' types; the results come back in ``result_shape_dtypes``' structure."""
    flat_args, in_tree = tree_flatten((args, kwargs))
    result_leaves, out_tree = tree_flatten(result_shape_dtypes)
    result_avals = tuple(_result_aval(leaf) for leaf in result_leaves)
    outs = prim.bind(*flat_args, callback=_FlatCallback(callback, in_tree),
                     result_avals=result_avals, **params)
    return tree_unflatten(out_tree, outs)


def _result_aval(leaf: Any) -> ShapedArray:
    """A declared result's type. A 64-bit dtype without x64 would be silently narrowed, so
    it is refused, as JAX does."""
    dtype = np.dtype(leaf.dtype)
    if dtypes.canonicalize_dtype(dtype) != dtype:
        raise ValueError("result_shape_dtypes cannot specify 64-bit types when "
                         "`jax_enable_x64` is disabled")
    return ShapedArray(tuple(leaf.shape), dtype)


def callback_impl(*args: np.ndarray, callback: _FlatCallback,
                  result_avals: tuple[ShapedArray, ...], **params: Any) -> list[Array]:
    """Calls the function with NumPy arrays; its results, checked, as strong arrays."""
    outs = callback(*args)
    return [Array(value, weak_type=False) for value in _checked(outs, result_avals)]


impl_rules[pure_callback_p] = callback_impl
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



# --8<-- [start:io_callback]
io_callback_p = Primitive("io_callback", multiple_results=True)


def io_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                sharding: Any = None, ordered: bool = False, **kwargs: Any) -> Any:
    """Calls ``callback(*args, **kwargs)`` on the host for its effect (writing a file,
    logging a metric), also from inside ``jit``; ``result_shape_dtypes`` declares its results
    as for ``pure_callback`` (None: it returns None). Unlike a pure callback, it is called
    exactly once per call of the program, even when its results are unused, and never merged
    with an identical one. ``vmap`` calls it once per example, in order; ``ordered=True``
    refuses ``vmap``, as in JAX. It has no derivative.

    Example:
        >>> import numpy as np
        >>> import stage2_jit as jax, stage2_jit.numpy as jnp
        >>> from stage2_jit.experimental import io_callback
        >>> seen = []
        >>> @jax.jit
        ... def f(x):
        ...     io_callback(lambda v: seen.append(float(v)), None, x)  # result unused
        ...     return x + 1
        >>> print(f(1.0), f(2.0), seen)
        2.0 3.0 [1.0, 2.0]
    """
    return _bind_callback(io_callback_p, callback, result_shape_dtypes, args, kwargs,
                          sharding=sharding, ordered=bool(ordered))


def _io_no_derivative(*args, **params):
    raise ValueError("IO callbacks do not support JVP: the function's derivative is unknown, "
                     "and an effect has none. Call it on values that are not differentiated "
                     "(lax.stop_gradient), or use pure_callback in a custom_jvp.")


impl_rules[io_callback_p] = callback_impl
abstract_eval_rules[io_callback_p] = abstract_eval_rules[pure_callback_p]
jvp_rules[io_callback_p] = vjp_rules[io_callback_p] = _io_no_derivative
# --8<-- [end:io_callback]
