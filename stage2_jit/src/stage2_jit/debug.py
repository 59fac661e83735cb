"""``jax.debug.print``: printing that survives ``jit``.

A plain ``print`` inside a jitted function runs once, while tracing, and sees tracers. A
``debug_print`` equation stays in the program and prints the actual values on every call.
"""

from __future__ import annotations

import builtins
from typing import Any

from stage1_autodiff.core import Primitive, impl_rules, jvp_rules, vjp_rules
from stage1_autodiff.tree_util import tree_flatten, tree_unflatten

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


def debug_print_impl(*values: Any, fmt: str, in_tree: Any) -> list[Any]:
    args, kwargs = tree_unflatten(in_tree, list(values))
    builtins.print(fmt.format(*args, **kwargs))
    return []


impl_rules[debug_print_p] = debug_print_impl
abstract_eval_rules[debug_print_p] = lambda *avals, fmt, in_tree: []
vjp_rules[debug_print_p] = lambda cts, *primals, out, fmt, in_tree: [None] * len(primals)
# Under jvp the primal values are printed, as JAX does.
jvp_rules[debug_print_p] = lambda primals, tangents, **params: (
    debug_print_p.bind(*primals, **params), [])
# --8<-- [end:debug_print]

print = debug_print  # noqa: A001 -- jax.debug.print
