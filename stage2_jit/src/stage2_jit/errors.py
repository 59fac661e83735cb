"""``jax.errors``: stage 1's, and the error of a jaxpr that does not type-check.

Example:
    >>> import stage2_jit as jax
    >>> issubclass(jax.errors.JaxprTypeError, TypeError)
    True
"""

from stage1_autodiff.errors import *  # noqa: F403


class JaxprTypeError(TypeError):
    """A jaxpr is malformed: a variable used before it is defined, or an equation whose
    output types are not what its primitive's abstract-eval rule gives
    (``tracing.typecheck_jaxpr``)."""
