"""``lax.Precision``: how exactly a matrix product or a convolution is computed where the
hardware has faster, narrower arithmetic (a TPU's bfloat16 passes, a GPU's TensorFloat-32).

Our products are NumPy's, SciPy's BLAS and the kernels' loops, which compute in the operands'
type (or a wider ``preferred_element_type``) whatever the precision, as XLA does on a CPU. So
``precision=`` is checked, as JAX checks it, and then changes nothing; the course's
"Differences from JAX" page says so, and that a jaxpr does not show it.

Example:
    >>> from stage1_autodiff.precision import Precision, canonicalize_precision
    >>> Precision("highest")
    <Precision.HIGHEST: 2>
    >>> canonicalize_precision(("high", "default"))
    (<Precision.HIGH: 1>, <Precision.DEFAULT: 0>)
"""

from __future__ import annotations

import enum
from typing import Any

# Each level's other names: the algorithm a TPU or GPU would run for it.
_ALIASES = {"default": "DEFAULT", "bfloat16": "DEFAULT", "fastest": "DEFAULT",
            "high": "HIGH", "bfloat16_3x": "HIGH", "tensorfloat32": "HIGH",
            "highest": "HIGHEST", "float32": "HIGHEST"}


class Precision(enum.Enum):
    """A product's precision: ``DEFAULT`` (one bfloat16 pass on a TPU), ``HIGH`` (three
    passes, or TensorFloat-32) or ``HIGHEST`` (float32). Also made from a name:
    ``Precision("highest")``."""

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value: object) -> Precision | None:
        name = _ALIASES.get(value.lower()) if isinstance(value, str) else None
        return None if name is None else cls[name]

    def __str__(self) -> str:
        return self.name


def canonicalize_precision(precision: Any) -> tuple[Precision, Precision] | None:
    """``precision`` as a pair (one per operand) of :class:`Precision`, or None: None, a
    name, a ``Precision``, or a pair of names or ``Precision``s. Anything else is a
    ValueError."""
    if precision is None:
        return None
    if isinstance(precision, (tuple, list)) and len(precision) == 2:
        return (_one(precision[0], precision), _one(precision[1], precision))
    one = _one(precision, precision)
    return (one, one)


def _one(value: Any, whole: Any) -> Precision:
    try:
        return Precision(value)
    except (ValueError, TypeError):
        raise ValueError(
            f"precision={whole!r} is not a precision. Pass None, a lax.Precision (DEFAULT, "
            f"HIGH or HIGHEST), one of the names {sorted(_ALIASES)}, or a pair of these (one "
            f"per operand).") from None
