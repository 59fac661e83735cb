"""Values a function needs while it runs, not only while it is traced: a result's shape, a
count, a check of the values. They are known eagerly and under ``grad`` (the primal's value),
as in JAX (``core.concrete_or_error``), and not under ``jit`` or ``vmap``, where asking for
one raises a ``ConcretizationTypeError`` that says what to pass instead. A value taken this
way is a constant: no gradient flows back through it.

Example:
    >>> import stage1_autodiff.numpy as jnp
    >>> from stage1_autodiff.numpy.concrete import static_int
    >>> static_int(jnp.array(3), "the number of sections")
    3
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..core import get_aval
from ..errors import ConcretizationTypeError
from .promotion import as_value, convert


def concrete_value(x: Any, what: str, instead: str) -> np.ndarray:
    """``x``'s values as a NumPy array; under ``jit`` or ``vmap`` an error that names
    ``what`` needs them and what to do ``instead``."""
    try:
        return np.asarray(as_value(x)._concrete_value(what))
    except ConcretizationTypeError:
        raise ConcretizationTypeError(f"{what} needs concrete values, but got a traced array "
                                      f"(under jit or vmap). {instead}") from None


def static_int(x: Any, what: str) -> int:
    """``x`` as a Python int: ``what`` gives a shape or a count, so it cannot be traced."""
    if isinstance(x, (int, np.integer)):
        return operator.index(x)
    value = concrete_value(x, what, f"Pass {what} as a Python int (a static argument under "
                                    f"jit).")
    return operator.index(value.item() if value.ndim == 0 else value)


def concrete_array(x: Any, what: str, instead: str) -> Any:
    """``x``'s value as a constant array of its type: as JAX's ``concrete_or_error``, it
    leaves the trace, so no gradient flows back through it."""
    x = as_value(x)
    aval = get_aval(x)
    value = concrete_value(x, what, instead)
    return convert(as_value(value, aval.dtype), aval.dtype, aval.weak_type)

