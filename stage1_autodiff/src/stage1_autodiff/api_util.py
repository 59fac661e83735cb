"""Checks of the arguments the transformations are given, shared by every stage.

``grad``, ``vjp`` and ``jvp`` (stage 1's ``autodiff.py``), ``jit`` (stage 2), ``vmap`` and
the Jacobians (stage 3) and ``shard_map`` (stage 4) check their function and their argument
numbers and names with these helpers, so each mistake raises the class JAX raises (a
``TypeError`` for a value that is not a function, a ``ValueError`` for an argument number out
of range) with one wording.

NB: in JAX these live in jax/_src/api_util.py (``check_callable``, ``_validate_argnums``,
``_validate_argnames``, ``_ensure_index_tuple``).
"""

from __future__ import annotations

import inspect
import operator
from collections.abc import Callable, Sequence
from typing import Any

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_BY_KEYWORD = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def check_callable(fun: Any) -> None:
    """Raises ``TypeError`` unless ``fun`` can be transformed: a callable that is not a
    generator function (its body would run only when the generator is iterated).

    Example:
        >>> check_callable(3)
        Traceback (most recent call last):
        ...
        TypeError: Expected a callable value, got 3
    """
    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {fun!r}")
    if inspect.isgeneratorfunction(fun):
        raise TypeError(f"Expected a function, got a generator function {fun!r}: its body "
                        f"runs only when the generator is iterated, so it cannot be traced.")


def ensure_index_tuple(argnums: int | Sequence[int], option: str = "argnums") -> tuple[int, ...]:
    """``argnums`` as a tuple of Python ints: an int (NumPy's too) or a sequence of them.

    Example:
        >>> ensure_index_tuple(1), ensure_index_tuple([0, 2])
        ((1,), (0, 2))
    """
    if is_single_index(argnums):
        return (operator.index(argnums),)
    try:
        return tuple(operator.index(n) for n in argnums)
    except TypeError:
        raise TypeError(f"{option} must be an int or a sequence of ints, got "
                        f"{argnums!r}.") from None


def is_single_index(argnums: Any) -> bool:
    """Whether ``argnums`` is one number (so ``grad`` returns one gradient, not a tuple)."""
    try:
        operator.index(argnums)
    except TypeError:
        return False
    return True


def normalize_argnums(nums: Sequence[int], num_args: int, name: str,
                      option: str = "argnums") -> tuple[int, ...]:
    """``nums`` made non-negative for a call with ``num_args`` positional arguments; a
    number out of range (``-num_args <= n < num_args`` fails), or none at all, raises
    ``ValueError``.

    Example:
        >>> normalize_argnums((0, -1), 3, "jacfwd")
        (0, 2)
    """
    if not nums:
        raise ValueError(f"{name}: {option}=() names no argument: give at least one "
                         f"argument number.")
    for n in nums:
        if not -num_args <= n < num_args:
            raise ValueError(
                f"{name}: {option} contains {n}, which is out of range for a call with "
                f"{num_args} positional argument(s): an argument number must be at least "
                f"{-num_args} and below {num_args}.")
    return tuple(n % num_args for n in nums)


def check_enough_positional(nums: Sequence[int], num_args: int, name: str) -> None:
    """``grad``'s check: differentiating with respect to argument ``n`` needs at least
    ``n + 1`` positional arguments in the call (a ``TypeError``, as for a missing argument
    of a Python function)."""
    largest = max(nums, default=-1)  # no number at all is normalize_argnums's error
    if largest >= num_args:
        raise TypeError(
            f"{name} differentiates with respect to argument {largest} (argnums="
            f"{nums[0] if len(nums) == 1 else tuple(nums)}), which needs at least "
            f"{largest + 1} positional argument(s), but the function was called with "
            f"{num_args}. Pass the arguments to differentiate by position, not by keyword.")


def check_static_argnums(fun: Callable, signature: inspect.Signature | None,
                         nums: Sequence[int], option: str) -> None:
    """``jit``'s check that ``static_argnums`` or ``donate_argnums`` name positional
    arguments of ``fun``: a ``ValueError`` at ``jit()``. Skipped, as in JAX, for a function
    with ``*args`` (any number can be passed) or a signature Python cannot inspect."""
    if signature is None or not nums or _has_kind(signature, inspect.Parameter.VAR_POSITIONAL):
        return
    positional = [n for n, p in signature.parameters.items() if p.kind in _POSITIONAL]
    if all(-len(positional) <= n < len(positional) for n in nums):
        return
    takes = (f"takes {len(positional)} positional argument(s) ({', '.join(positional)}): "
             f"use numbers from {-len(positional)} to {len(positional) - 1}"
             if positional else "takes no positional argument")
    raise ValueError(
        f"jit of {_name(fun)}: {option}={tuple(nums)} names an argument the function does "
        f"not have. It {takes}, or name a keyword-only argument in "
        f"{option.replace('nums', 'names')}.")


def check_static_argnames(fun: Callable, signature: inspect.Signature | None,
                          names: Sequence[str], option: str) -> None:
    """``jit``'s check that ``static_argnames`` or ``donate_argnames`` name arguments that
    can be passed by keyword: a ``ValueError`` at ``jit()``."""
    if signature is None or not names:
        return
    params = signature.parameters
    positional_only = [n for n in names if n in params and params[n].kind not in _BY_KEYWORD]
    if positional_only:
        raise ValueError(
            f"jit of {_name(fun)}: {option} names {positional_only}, which cannot be passed "
            f"by keyword (positional-only or *args). Use "
            f"{option.replace('names', 'nums')} for them instead.")
    if _has_kind(signature, inspect.Parameter.VAR_KEYWORD):
        return  # any other name can arrive through **kwargs
    unknown = [n for n in names if n not in params]
    if unknown:
        raise ValueError(
            f"jit of {_name(fun)}: {option} names {unknown}, which the function does not "
            f"take; its arguments are {list(params)}.")


def check_no_intersection(static: set, donated: set, what: str) -> None:
    """An argument cannot be both static (part of the cache key) and donated (a buffer the
    call may reuse): a ``ValueError`` at ``jit()``."""
    both = static & donated
    if both:
        raise ValueError(f"jit: the arguments {sorted(both, key=str)} are both static and "
                         f"donated ({what}). A static argument is a Python value, not a "
                         f"buffer: take it out of the donated ones.")


def _has_kind(signature: inspect.Signature, kind: inspect._ParameterKind) -> bool:
    return any(p.kind == kind for p in signature.parameters.values())


def _name(fun: Callable) -> str:
    return getattr(fun, "__qualname__", None) or getattr(fun, "__name__", None) or repr(fun)
