"""``jax.example_libraries``: the small optimizer and layer libraries that JAX ships as
examples, and that older tutorials and courses import (``optimizers``, ``stax``)."""

from . import optimizers, stax

__all__ = ["optimizers", "stax"]
