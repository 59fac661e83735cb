"""``jax.debug.print`` and ``jax.debug.callback``: printing (or any Python call) that
survives ``jit``.

A plain ``print`` inside a jitted function runs once, while tracing, and sees tracers. A
``debug_print`` equation stays in the program and prints the actual values on every call;
``jax.debug.callback`` is the same equation with a function of the user's in place of the
format string.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Callable
from typing import Any

from stage1_autodiff.core import (
    Array,
    Primitive,
    Tracer,
    asarray,
    impl_rules,
    jvp_rules,
    vjp_rules,
)
from stage1_autodiff.tree_util import tree_flatten, tree_map, tree_unflatten

from .abstract_eval import abstract_eval_rules

# --8<-- [start:debug_print]
debug_print_p = Primitive("debug_print", multiple_results=True)


def debug_print(fmt: str, *args: Any, **kwargs: Any) -> None:
    """Prints ``fmt.format(*args, **kwargs)`` with the values of the arrays, on every call.

    Example:
        >>> import stage2_jit as jax
        >>> @jax.jit
        ... def f(x):
        ...     jax.debug.print("x = {}", x)
        ...     return x + 1
        >>> _ = f(1.0)
        x = 1.0
    """
    leaves, in_tree = tree_flatten((args, kwargs))
    debug_print_p.bind(*leaves, fmt=fmt, in_tree=in_tree)


def debug_print_impl(*values: Any, fmt: str | None, in_tree: Any,
                     callback: Callable[..., Any] | None = None) -> list[Any]:
    args, kwargs = tree_unflatten(in_tree, list(values))
    if callback is not None:  # jax.debug.callback: the values as arrays, as JAX passes them
        args, kwargs = tree_map(Array, (args, kwargs))
        callback(*args, **kwargs)
    else:
        builtins.print(fmt.format(*args, **kwargs))
    return []


impl_rules[debug_print_p] = debug_print_impl
abstract_eval_rules[debug_print_p] = lambda *avals, **params: []
vjp_rules[debug_print_p] = lambda cts, *primals, out, **params: [None] * len(primals)
# Under jvp the primal values are printed, as JAX does.
jvp_rules[debug_print_p] = lambda primals, tangents, **params: (
    debug_print_p.bind(*primals, **params), [])
# --8<-- [end:debug_print]



def debug_callback(callback: Callable[..., Any] | None = None, *args: Any, ordered: bool = False,
                   partitioned: bool = False, **kwargs: Any) -> Any:
    """Calls ``callback(*args, **kwargs)`` with the arrays' values, on every call of a jitted
    function (once per example under ``vmap``), and returns None. Without a ``callback``, a
    decorator. ``ordered`` and ``partitioned`` are accepted: the callbacks here run in program
    order, on whole arrays.

    Example:
        >>> import stage2_jit as jax
        >>> seen = []
        >>> f = jax.jit(lambda x: jax.debug.callback(seen.append, x) or x * 2)
        >>> _ = f(1.0), f(2.0)
        >>> seen
        [Array(1., dtype=float32), Array(2., dtype=float32)]
    """
    del ordered, partitioned
    if callback is None:
        return lambda f: debug_callback(f, *args, **kwargs)
    if not callable(callback):
        raise TypeError(f"jax.debug.callback expects a callable first, got {callback!r}: "
                        f"jax.debug.callback(function, *args, **kwargs).")
    leaves, in_tree = tree_flatten((args, kwargs))
    debug_print_p.bind(*[x if isinstance(x, (Array, Tracer)) else asarray(x) for x in leaves],
                       fmt=None, in_tree=in_tree, callback=callback)
    return None


def debug_log(fmt: str, *args: Any, **kwargs: Any) -> None:
    """``debug_print``'s line, logged instead of printed: at level INFO, to the logger
    ``stage2_jit.debug`` (JAX's is ``jax._src.debugging``), on every call.

    Example:
        >>> import stage2_jit as jax
        >>> f = jax.jit(lambda x: jax.debug.log("x = {}", x) or x + 1)
        >>> f(1.0)  # logs "x = 1.0" at level INFO
        Array(2., dtype=float32, weak_type=True)
    """
    debug_callback(lambda *values, **named: _logger.info(fmt.format(*values, **named)),
                   *args, **kwargs)


_logger = logging.getLogger(__name__)
print = debug_print  # noqa: A001 -- jax.debug.print
callback = debug_callback  # jax.debug.callback
log = debug_log  # jax.debug.log
