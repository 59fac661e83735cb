"""``jax_debug_nans`` and ``jax_debug_infs``: stop at the first operation that makes a nan
(or an inf) instead of letting it spread.

NaN and inf propagate silently through arithmetic, as in JAX, so a nan in a loss is usually
found many operations after the one that made it. With a check on, every operation run on
concrete values (each eager op, each op of ``grad``'s forward and backward passes) looks at its
results and raises ``FloatingPointError`` naming the primitive. A ``jit`` call checks its
outputs and, on a nan, runs the function again without ``jit`` to find the operation (stage 2).

    >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
    >>> with jax.debug_nans(True):
    ...     try:
    ...         jnp.log(-1.0)
    ...     except FloatingPointError as error:
    ...         print(str(error).split(":")[0])
    invalid value (nan) encountered in log

NB: JAX checks in ``jax/_src/dispatch.py`` (``check_special``) and reruns a ``jit`` in
``jax/_src/pjit.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import dtypes
from .config import State, config


class SpecialValueChecks:
    """Which checks are on; ``any`` is what the hot paths read (one attribute per op)."""

    __slots__ = ("nans", "infs", "any")

    def __init__(self) -> None:
        self.nans = self.infs = self.any = False

    def turn(self, kind: str, on: Any) -> None:
        if not isinstance(on, bool):
            raise TypeError(f"jax_debug_{kind}s takes True or False, not {on!r}.")
        setattr(self, kind + "s", on)
        self.any = self.nans or self.infs


CHECKS = SpecialValueChecks()

config.define("jax_debug_nans", False,
              "Raises FloatingPointError at the first operation whose result holds a nan.",
              on_update=lambda on: CHECKS.turn("nan", on))
config.define("jax_debug_infs", False,
              "Raises FloatingPointError at the first operation whose result holds an inf.",
              on_update=lambda on: CHECKS.turn("inf", on))
CHECKS.turn("nan", config.jax_debug_nans)  # (an environment variable may have set them)
CHECKS.turn("inf", config.jax_debug_infs)
debug_nans = State("jax_debug_nans")
"""``jax_debug_nans`` for a block: ``with jax.debug_nans(True): ...``."""
debug_infs = State("jax_debug_infs")
"""``jax_debug_infs`` for a block: ``with jax.debug_infs(True): ...``."""


def special_value_in(values: Sequence[Any]) -> str | None:
    """"nan" or "inf" when one of ``values`` holds one that a check is on for, else None."""
    for value in values:
        value = getattr(value, "_value", value)  # a host Array's NumPy value
        try:
            value = np.asarray(value)  # (a device array comes to the host: this is debugging)
        except Exception:  # noqa: BLE001 -- a token or another non-array result: nothing to see
            continue
        if not dtypes.is_inexact(value.dtype):
            continue
        if CHECKS.nans and np.isnan(value).any():
            return "nan"
        if CHECKS.infs and np.isinf(value).any():
            return "inf"
    return None


_A = {"nan": "a nan", "inf": "an inf"}
rerun_rules: dict[Any, Callable[..., Any]] = {}
"""For a primitive that runs a whole program (stage 2's ``jit``): how to run it again one
operation at a time, ``rule(operands, params)``, so that the operation that made a nan raises."""


def check_results(prim: Any, outs: Sequence[Any], operands: Sequence[Any],
                  params: dict[str, Any]) -> None:
    """Raises ``FloatingPointError`` when ``prim`` made a value a check is on for."""
    kind = special_value_in(outs)
    if kind is None:
        return
    came_in = special_value_in(operands) == kind
    if prim in rerun_rules and not came_in:
        rerun_rules[prim](operands, params)  # raises at the operation inside
        cause = ("Run again one operation at a time, it made none: the compiled program "
                 f"computes differently, or a {kind} is one of its constants.")
    else:
        cause = ("An operand already held one: it came in with the inputs." if came_in else
                 "Its operands held none, so this operation made it.")
    name = f"{prim}({params['name']})" if "name" in params else prim
    raise special_value_error(kind, name, cause)


def special_value_error(kind: str, where: Any, cause: str) -> FloatingPointError:
    """The error for a ``kind`` ("nan" or "inf") that operation ``where`` made."""
    return FloatingPointError(
        f"invalid value ({kind}) encountered in {where}: a result holds {_A[kind]} and "
        f"jax_debug_{kind}s is on. {cause} The traceback shows the line of your code that ran "
        f"it; jax.config.update('jax_debug_{kind}s', False) turns the check off.")
