"""``jax.experimental``: here, ``io_callback`` (a Python function called for its effect)."""

from .callback import io_callback  # noqa: F401
