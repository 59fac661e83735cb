"""What every distribution does first: refuse lists as JAX does, then promote its arguments
to one inexact dtype (Python scalars stay weakly typed).

NB: JAX's is ``promote_args_inexact`` in ``jax/_src/numpy/util.py``."""

from __future__ import annotations

from typing import Any

from ...numpy.promotion import promote_inexact


def check_arraylike(fun_name: str, *args: Any) -> None:
    """A list or tuple is ambiguous (an array? a pytree?), so JAX refuses it; so do we."""
    for position, arg in enumerate(args):
        if isinstance(arg, (list, tuple, str)) or arg is None:
            raise TypeError(f"{fun_name} requires ndarray or scalar arguments, got "
                            f"{type(arg)} at position {position}.")


def promote_args_inexact(fun_name: str, *args: Any) -> list[Any]:
    """The arguments as arrays of one float (or complex) dtype, after ``check_arraylike``."""
    check_arraylike(fun_name, *args)
    return promote_inexact(*args)

