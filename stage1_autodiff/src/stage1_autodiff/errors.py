"""``jax.errors``: the exceptions a transformation raises, with JAX's names and bases.

The classes sit where JAX puts them in Python's hierarchy, so an ``except`` clause written
for JAX catches the same errors here: every ``Tracer...Error`` is a ``TypeError``, a
``TracerBoolConversionError`` is also a ``ConcretizationTypeError``, and a traced boolean
index raises an ``IndexError``.

Example:
    >>> import stage1_autodiff as jax
    >>> issubclass(jax.errors.TracerBoolConversionError, jax.errors.ConcretizationTypeError)
    True
    >>> issubclass(jax.errors.NonConcreteBooleanIndexError, IndexError)
    True

NB: in JAX these live in jax/_src/errors.py, and each takes the tracer it is about and
appends a link to its documentation page. Ours take a finished message: the tracer's
interpreter writes it (``tracing.py`` names the jitted arguments a value depends on).
"""

from __future__ import annotations

__all__ = [
    "ConcretizationTypeError",
    "JAXIndexError",
    "JAXTypeError",
    "NonConcreteBooleanIndexError",
    "TracerArrayConversionError",
    "TracerBoolConversionError",
    "TracerIntegerConversionError",
    "UnexpectedTracerError",
]


class JAXTypeError(TypeError):
    """The base of the errors about values a transformation cannot use as asked."""


class JAXIndexError(IndexError):
    """The base of the indexing errors a transformation raises."""


class ConcretizationTypeError(JAXTypeError):
    """A concrete Python value was needed from an abstract (traced) array: ``float(x)``,
    ``x.tolist()``, a shape or a bound computed from an argument under ``jit``."""


class TracerBoolConversionError(ConcretizationTypeError):
    """``bool(x)`` of a traced array: a Python ``if``, ``while``, ``and``/``or`` or ``not``
    on a value known only when the compiled function runs."""


class TracerIntegerConversionError(JAXTypeError):
    """``operator.index(x)`` of a traced integer array: ``range(x)``, ``a_list[x]``,
    ``hex(x)``, a shape given as a traced value."""


class TracerArrayConversionError(JAXTypeError):
    """``np.asarray(x)`` (or a NumPy function) on a traced array: the NumPy result would
    leave the transformation, which then could not see what is done with it."""


class UnexpectedTracerError(JAXTypeError):
    """A tracer was used outside the transformation that made it (stored in a global or a
    closure, or returned through a side channel)."""


class NonConcreteBooleanIndexError(JAXIndexError):
    """A traced boolean mask used as an index: the result's shape would depend on the
    mask's values, which are not known while tracing."""
