"""``jax.stages``: the ahead-of-time stages of a ``jit`` call, by JAX's names: the jitted
function (``Wrapped``), then ``Traced``, ``Lowered`` and ``Compiled``."""

from .jit import Compiled, Lowered, Traced
from .jit import Jitted as Wrapped

__all__ = ["Compiled", "Lowered", "Traced", "Wrapped"]
